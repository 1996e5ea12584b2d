// Spike detection for the loss and the gradient norm: a value is an outlier when its z-score
// against the last OUTLIER_WINDOW accepted values exceeds a threshold. Used by -sl/-sg to skip
// the update of a step whose loss or gradient norm jumped. The window is part of the training
// state so that a resumed run makes the same decisions.
#ifndef LLMC_OUTLIER_H
#define LLMC_OUTLIER_H

#ifdef __cplusplus
extern "C" {
#endif

#define OUTLIER_WINDOW 128
#define OUTLIER_MIN_COUNT 16  // no decisions before this many values are seen

typedef struct {
    double values[OUTLIER_WINDOW];
    int count;  // values seen, saturating at OUTLIER_WINDOW
    int next;   // ring buffer index
} OutlierDetector;

void outlier_init(OutlierDetector *d);
// z-score of x against the window, or 0 while there are fewer than OUTLIER_MIN_COUNT values; over
// a window of one repeated value (no deviation), 0 for that value and infinity for any other.
double outlier_zscore(const OutlierDetector *d, double x);
void outlier_push(OutlierDetector *d, double x);

#ifdef __cplusplus
}
#endif
#endif
