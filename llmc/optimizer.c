#include "optimizer.h"

#include <math.h>
#include <stdlib.h>

#include "utils.h"

// Reductions are summed over chunks of this many elements, each chunk aligned in the global
// index space, then over chunks in order (inside a chunk the sum is vectorized: a fixed order for
// a given build).
#define REDUCE_CHUNK 8192

double sum_of_squares(const float *x, size_t n) {
    size_t nchunks = (n + REDUCE_CHUNK - 1) / REDUCE_CHUNK;
    double *partial = (double *)malloc_check((nchunks ? nchunks : 1) * sizeof(double));
    #pragma omp parallel for schedule(static)
    for (size_t c = 0; c < nchunks; c++) {
        size_t lo = c * REDUCE_CHUNK, hi = lo + REDUCE_CHUNK < n ? lo + REDUCE_CHUNK : n;
        double s = 0.0;
        #pragma omp simd reduction(+ : s)
        for (size_t i = lo; i < hi; i++) s += (double)x[i] * (double)x[i];
        partial[c] = s;
    }
    double total = 0.0;
    for (size_t c = 0; c < nchunks; c++) total += partial[c];
    free(partial);
    return total;
}

float grad_clip_scale(float grad_clip, double norm) {
    if (grad_clip <= 0.0f || !(norm > grad_clip)) return 1.0f;
    return (float)(grad_clip / norm);
}

int adamw_step(const GPT2Config *cfg, const AdamWConfig *hp, float *params, const float *grads, float *m, float *v,
               size_t begin, size_t end, int t, float lr, float grad_scale, AllReduceSumFn allreduce, void *ctx) {
    const float b1 = hp->beta1, b2 = hp->beta2, eps = hp->eps;
    const float bc1 = 1.0f - powf(b1, (float)t), bc2 = 1.0f - powf(b2, (float)t);
    const int nslots = gpt2_num_slots(cfg);
    double *rms_sum = (double *)calloc_check((size_t)nslots, sizeof(double));

    // Pass 1: moments, and each tensor's sum of g^2 / max(vhat, eps^2) over this range.
    for (int s = 0; s < nslots; s++) {
        ParamSlot slot = gpt2_slot(cfg, s);
        size_t lo = slot.offset > begin ? slot.offset : begin;
        size_t hi = slot.offset + slot.numel < end ? slot.offset + slot.numel : end;
        if (lo >= hi) continue;
        size_t first_chunk = (lo - slot.offset) / REDUCE_CHUNK, last_chunk = (hi - 1 - slot.offset) / REDUCE_CHUNK;
        size_t nchunks = last_chunk - first_chunk + 1;
        double *partial = (double *)malloc_check(nchunks * sizeof(double));
        #pragma omp parallel for schedule(static)
        for (size_t c = 0; c < nchunks; c++) {
            size_t clo = slot.offset + (first_chunk + c) * REDUCE_CHUNK, chi = clo + REDUCE_CHUNK;
            if (clo < lo) clo = lo;
            if (chi > hi) chi = hi;
            double acc = 0.0;
            #pragma omp simd reduction(+ : acc)
            for (size_t i = clo - begin; i < chi - begin; i++) {
                float g = grads[i] * grad_scale;
                m[i] = b1 * m[i] + (1.0f - b1) * g;
                v[i] = b2 * v[i] + (1.0f - b2) * g * g;
                float vhat = v[i] / bc2;
                acc += (double)(g * g) / (double)fmaxf(vhat, eps * eps);
            }
            partial[c] = acc;
        }
        for (size_t c = 0; c < nchunks; c++) rms_sum[s] += partial[c];
        free(partial);
    }
    if (allreduce) allreduce(rms_sum, nslots, ctx);

    // Pass 2: parameters, with each tensor's learning rate divided by max(1, rms / update_clip).
    int clipped = 0;
    for (int s = 0; s < nslots; s++) {
        ParamSlot slot = gpt2_slot(cfg, s);
        float lr_t = lr;
        if (hp->update_clip > 0.0f) {
            float rms = (float)sqrt(rms_sum[s] / (double)slot.numel);
            if (rms > hp->update_clip) {
                lr_t = lr / (rms / hp->update_clip);
                clipped++;
            }
        }
        size_t lo = slot.offset > begin ? slot.offset : begin;
        size_t hi = slot.offset + slot.numel < end ? slot.offset + slot.numel : end;
        if (lo >= hi) continue;
        const float wd = param_tensor_is_decayed(slot.kind) ? hp->weight_decay : 0.0f;
        #pragma omp parallel for schedule(static)
        for (size_t i = lo - begin; i < hi - begin; i++) {
            float mhat = m[i] / bc1, vhat = v[i] / bc2;
            params[i] -= lr_t * (mhat / (sqrtf(vhat) + eps) + wd * params[i]);
        }
    }
    free(rms_sum);
    return clipped;
}
