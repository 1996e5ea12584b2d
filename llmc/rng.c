#include "rng.h"

#include <math.h>

double rng_normal(uint64_t seed, uint64_t stream, uint64_t counter) {
    // u1 in (0, 1] so log(u1) is finite; u2 in [0, 1).
    double u1 = ((double)(rng_bits(seed, stream, 2 * counter) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = (double)(rng_bits(seed, stream, 2 * counter + 1) >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

int rng_sample_softmax(const float *logits, int n, double u) {
    float maxv = -INFINITY;
    for (int j = 0; j < n; j++) maxv = fmaxf(maxv, logits[j]);
    double sum = 0.0;
    for (int j = 0; j < n; j++) sum += exp((double)(logits[j] - maxv));
    const double r = u * sum;
    double acc = 0.0;
    for (int j = 0; j < n; j++) {
        acc += exp((double)(logits[j] - maxv));
        if (acc > r) return j;
    }
    return n - 1;
}
