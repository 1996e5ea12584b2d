#include "profile.h"

#include <stdio.h>
#include <string.h>

#include "utils.h"

const char *const prof_part_names[NUM_PROF_PARTS] = {
    "host (loop, idle)", "encoder", "layernorm", "matmul forward", "matmul backward", "quantize",
    "attention forward", "attention backward", "gelu", "output head", "recompute", "zero comm", "grad norm",
    "optimizer"};

void wall_timeline_start(WallTimeline *tl, int on) {
    memset(tl, 0, sizeof(*tl));
    tl->on = on;
    tl->part = PROF_HOST;
    tl->since = wall_time();
}

void wall_timeline_mark(WallTimeline *tl, ProfPart part) {
    if (!tl->on) return;
    const double now = wall_time();
    tl->ms[tl->part] += (now - tl->since) * 1e3;
    tl->part = prof_part(part, tl->recomputing);
    tl->since = now;
}

void wall_timeline_take(WallTimeline *tl, double *ms) {
    wall_timeline_mark(tl, PROF_HOST);
    for (int p = 0; p < NUM_PROF_PARTS && ms; p++) ms[p] += tl->ms[p];
    memset(tl->ms, 0, sizeof(tl->ms));
}

void prof_print(const double *ms, int steps, double measured_ms) {
    double total = 0.0;
    for (int p = 0; p < NUM_PROF_PARTS; p++) total += ms[p];
    printf("profile: mean over %d steps, ms per step (--profile)\n", steps);
    for (int p = 0; p < NUM_PROF_PARTS; p++)  // every part, 0 where none ran: runs compare line by line
        printf("profile  %-20s %10.3f  %5.1f%%\n", prof_part_names[p], ms[p] / steps, total > 0 ? 100.0 * ms[p] / total : 0.0);
    printf("profile  %-20s %10.3f  (the loop measured %.3f per step)\n", "all parts", total / steps, measured_ms);
}
