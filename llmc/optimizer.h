// AdamW with decoupled weight decay, global-norm gradient clipping and StableAdamW update
// clipping, on the CPU. The GPU trainer's fused kernel implements the same math.
//
// For step t (from 1), with g the gradient scaled by grad_scale = min(1, grad_clip / ||g||):
//   m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2,  mhat = m / (1 - b1^t),  vhat = v / (1 - b2^t)
//   per tensor instance (each layer's copy separately, see model.h's ParamSlot):
//     rms  = sqrt(mean(g^2 / max(vhat, eps^2)))            (update clipping, when on)
//     lr_t = lr / max(1, rms / update_clip)
//   p -= lr_t (mhat / (sqrt(vhat) + eps) + wd p),   wd = weight_decay for 2-D tensors, else 0
//
// The functions work on a range [begin, end) of the flat parameter buffer so that ZeRO ranks
// update only their slice; every pointer passed points at the slice's first element. Sums are
// taken over fixed chunks of the global index space in double, so they do not depend on the
// number of threads.
#ifndef LLMC_OPTIMIZER_H
#define LLMC_OPTIMIZER_H

#include <stddef.h>

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    float beta1, beta2, eps, weight_decay;
    float grad_clip;    // global-norm clipping threshold; <= 0 turns it off
    float update_clip;  // StableAdamW threshold; <= 0 turns update clipping off
} AdamWConfig;

// Sums the n doubles in buf across ranks in place (ZeRO); NULL for a single process.
typedef void (*AllReduceSumFn)(double *buf, int n, void *ctx);

// Sum of squares of x[0..n), deterministic in the number of threads.
double sum_of_squares(const float *x, size_t n);

// grad_scale for a gradient of global norm `norm`: min(1, grad_clip / norm); 1 when grad_clip <= 0.
float grad_clip_scale(float grad_clip, double norm);

// One AdamW step on the global range [begin, end). Returns how many tensors of the whole model
// had their learning rate reduced by update clipping (the same number on every rank).
int adamw_step(const GPT2Config *cfg, const AdamWConfig *hp, float *params, const float *grads, float *m, float *v,
               size_t begin, size_t end, int t, float lr, float grad_scale, AllReduceSumFn allreduce, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
