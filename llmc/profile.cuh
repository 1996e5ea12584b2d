// The GPU's timeline for --profile (llmc/profile.h): a CUDA event recorded in the compute stream
// at each mark, so an interval is the device's time from one mark to the next, kernels and idle
// gaps alike, measured as the work runs (no serialization, no replay). The host reads the
// intervals when it takes them, after waiting for the last event: the backends take at the end of
// a step, where the host waits for the device anyway. Events are created as marks need them
// (a step of a 48-layer model marks about two thousand times) and reused from step to step.
//
// STATUS: run in the CPU emulator of dev/emu (t_22) and on an H200 at c95ef56 (2026-11-27,
// dev/gpu_report.md: d12 and d48, bf16 and FP8; the parts add up to the measured step).
#ifndef LLMC_PROFILE_CUH
#define LLMC_PROFILE_CUH

#include <stdlib.h>

#include "cuda_common.cuh"
#include "profile.h"

typedef struct {
    int on, recomputing;   // as WallTimeline's
    int count, capacity;   // marks since the last take (the first is the last take's own)
    cudaEvent_t *events;   // [capacity]
    unsigned char *parts;  // [capacity]: the part that starts at events[i]
} EventTimeline;

static inline void event_timeline_mark(EventTimeline *tl, ProfPart part, cudaStream_t stream) {
    if (!tl->on) return;
    if (tl->count == tl->capacity) {
        const int grown = tl->capacity ? 2 * tl->capacity : 1024;
        tl->events = (cudaEvent_t *)realloc_check(tl->events, (size_t)grown * sizeof(cudaEvent_t));
        tl->parts = (unsigned char *)realloc_check(tl->parts, (size_t)grown);
        for (int i = tl->capacity; i < grown; i++) cudaCheck(cudaEventCreate(&tl->events[i]));
        tl->capacity = grown;
    }
    tl->parts[tl->count] = (unsigned char)prof_part(part, tl->recomputing);
    cudaCheck(cudaEventRecord(tl->events[tl->count++], stream));
}

static inline void event_timeline_start(EventTimeline *tl, int on, cudaStream_t stream) {
    memset(tl, 0, sizeof(*tl));
    tl->on = on;
    event_timeline_mark(tl, PROF_HOST, stream);
}

// Marks PROF_HOST, waits for it, and adds each interval since the last take to ms (NULL: drops
// them); the new mark starts the next intervals.
static inline void event_timeline_take(EventTimeline *tl, double *ms, cudaStream_t stream) {
    if (!tl->on) return;
    event_timeline_mark(tl, PROF_HOST, stream);
    const int last = tl->count - 1;
    cudaCheck(cudaEventSynchronize(tl->events[last]));
    for (int i = 0; i < last && ms; i++) {
        float interval;
        cudaCheck(cudaEventElapsedTime(&interval, tl->events[i], tl->events[i + 1]));
        ms[tl->parts[i]] += interval;
    }
    const cudaEvent_t first = tl->events[0];
    tl->events[0] = tl->events[last], tl->events[last] = first;
    tl->parts[0] = PROF_HOST;
    tl->count = 1;
}

static inline void event_timeline_free(EventTimeline *tl) {
    for (int i = 0; i < tl->capacity; i++) cudaCheck(cudaEventDestroy(tl->events[i]));
    free(tl->events);
    free(tl->parts);
    memset(tl, 0, sizeof(*tl));
}

#endif  // LLMC_PROFILE_CUH
