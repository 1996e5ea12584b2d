// Learning-rate schedules. Steps count from 0; the first `warmup` steps ramp linearly from
// lr/warmup to lr, then the schedule runs over the remaining steps to lr * final_frac:
//   cosine:   lr_min + (lr - lr_min) * (1 + cos(pi * p)) / 2,  p = progress in [0, 1]
//   linear:   lr - (lr - lr_min) * p
//   constant: lr
//   wsd:      warmup-stable-decay: lr until the last WSD_DECAY_FRACTION of the steps, then a
//             linear decay to lr_min over them
#ifndef LLMC_SCHEDULE_H
#define LLMC_SCHEDULE_H

#ifdef __cplusplus
extern "C" {
#endif

enum LRSchedule { LR_COSINE, LR_LINEAR, LR_CONSTANT, LR_WSD, NUM_LR_SCHEDULES };
#define WSD_DECAY_FRACTION 0.2

extern const char *const lr_schedule_names[NUM_LR_SCHEDULES];

typedef struct {
    int kind;           // enum LRSchedule
    float lr;           // peak learning rate
    int warmup;         // warmup steps
    int total;          // total steps
    float final_frac;   // lr at the end = lr * final_frac
} LRScheduleConfig;

float lr_at_step(const LRScheduleConfig *s, int step);

#ifdef __cplusplus
}
#endif
#endif
