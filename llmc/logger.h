// Training output: main.log in the output directory (one line per event, easy to parse and plot)
//   s:<step> trl:<train loss> lr:<lr> norm:<grad norm>       after every optimizer step
//   s:<step> tel:<val loss>                                    after every validation
//   s:<step> skip:<reason>                                     an update that was skipped
// and the console progress line.
#ifndef LLMC_LOGGER_H
#define LLMC_LOGGER_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    FILE *f;         // NULL when there is no output directory
    char path[4096];
    int write_failed;  // a line could not be written (warned once; the run goes on)
} Logger;

// Opens <dir>/main.log; dir "" means no log file. resume_step >= 0 keeps the earlier run's
// lines up to that step (a run killed mid-way may have logged steps past its checkpoint) and
// appends (when that rewrite fails, on a full disk, it warns and the run writes no log); -1
// starts a new log.
void logger_init(Logger *lg, const char *dir, int resume_step);
void logger_train(Logger *lg, int step, float loss, float lr, float norm);
void logger_val(Logger *lg, int step, float loss);
void logger_skip(Logger *lg, int step, const char *reason);
void logger_close(Logger *lg);

// A duration in seconds, rounded to the second, as "59s", "1m00s" or "1h02m" (hours drop the
// seconds); "?" for a negative, NaN or absurd (> 1e8 s) estimate.
void format_duration(double seconds, char *buf, size_t n);

// "step   12/100 | loss 5.123456 | norm 1.2345 | lr 6.00e-04 | 123.4 ms | 4567 tok/s | MFU 41.2% | ETA 1m23s"
// (the MFU field only when mfu >= 0, as a fraction).
void print_progress(int step, int total_steps, float loss, float norm, float lr, double step_ms, double tokens_per_s,
                    double eta_s, double mfu);

#ifdef __cplusplus
}
#endif
#endif
