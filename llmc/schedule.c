#include "schedule.h"

#include <math.h>

const char *const lr_schedule_names[NUM_LR_SCHEDULES] = {"cosine", "linear", "constant", "wsd"};

float lr_at_step(const LRScheduleConfig *s, int step) {
    if (step < s->warmup) return s->lr * (float)(step + 1) / (float)s->warmup;
    float lr_min = s->lr * s->final_frac;
    int decay_steps = s->total - s->warmup;
    float p = decay_steps > 1 ? (float)(step - s->warmup) / (float)(decay_steps - 1) : 1.0f;
    if (p > 1.0f) p = 1.0f;
    switch (s->kind) {
    case LR_COSINE: return lr_min + (s->lr - lr_min) * 0.5f * (1.0f + cosf((float)M_PI * p));
    case LR_LINEAR: return s->lr - (s->lr - lr_min) * p;
    case LR_WSD: {
        float decay_start = 1.0f - (float)WSD_DECAY_FRACTION;
        if (p <= decay_start) return s->lr;
        return s->lr - (s->lr - lr_min) * (p - decay_start) / (float)WSD_DECAY_FRACTION;
    }
    default: return s->lr;
    }
}
