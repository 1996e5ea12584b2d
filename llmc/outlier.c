#include "outlier.h"

#include <math.h>
#include <string.h>

void outlier_init(OutlierDetector *d) { memset(d, 0, sizeof(*d)); }

double outlier_zscore(const OutlierDetector *d, double x) {
    if (d->count < OUTLIER_MIN_COUNT) return 0.0;
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < d->count; i++) mean += d->values[i];
    mean /= d->count;
    for (int i = 0; i < d->count; i++) var += (d->values[i] - mean) * (d->values[i] - mean);
    double sd = sqrt(var / d->count);
    if (sd == 0.0) return x == mean ? 0.0 : INFINITY;
    return (x - mean) / sd;
}

void outlier_push(OutlierDetector *d, double x) {
    d->values[d->next] = x;
    d->next = (d->next + 1) % OUTLIER_WINDOW;
    if (d->count < OUTLIER_WINDOW) d->count++;
}
