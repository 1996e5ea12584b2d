// AdamW with StableAdamW update clipping over every parameter tensor at once (multi-tensor: three
// launches per step for the whole model, not per tensor), the math of llmc/optimizer.h:
//   g = grad * grad_scale, m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2, vhat = v / (1 - b2^t)
//   per tensor instance (ParamSlot): rms = sqrt(mean(g^2 / max(vhat, eps^2)))
//   lr_t = lr / max(1, rms / update_clip)                    (update_clip <= 0: lr_t = lr)
//   master -= lr_t (mhat / (sqrt(vhat) + eps) + wd master)
//   param  = bf16(master) with stochastic rounding: the random bits of element i at step t are
//            rng_bits(seed, t, i) (llmc/rng.h), so a resumed run rounds exactly as before.
//
// STATUS: verified on an H100 at commit 7c74e66 (2026-11-23) and on an H200 at c95ef56 (2026-11-27;
// dev/gpu_report.md), the update of one rank's range (ZeRO) included.
//
// Layout: grads, m, v, master fp32 and params bf16, all flat in the layer-major order of
// llmc/model.h, for the range [begin, end) of the flat index space that this rank updates (the
// whole model, or its ZeRO slice as llmc/optimizer.h's adamw_step): every pointer points at
// element `begin`. Work is cut into chunks of ADAMW_CHUNK = 8192 elements aligned to each slot's
// start in the global index space (as the CPU's reduction chunks) and clipped to the range; one
// block of 256 threads per chunk, each thread handling float4s i, i + 256, ... (every slot's size
// and offset, and a ZeRO slice's start, are multiples of 4, so chunks are whole, 16-byte aligned
// float4s).
//   1. adamw_moments_kernel:   m, v, and the chunk's sum of g^2 / max(vhat, eps^2) in double
//   2. adamw_slot_sums_kernel: one thread per slot adds its chunks' sums in order; under ZeRO the
//                              slots' sums are then summed over ranks (the allreduce callback)
//   3. adamw_lr_kernel:        one thread per slot: lr_t from the slot's sum over all its elements
//   4. adamw_params_kernel:    master and the bf16 parameters; the rounding bits of element i use
//                              its global index, so every sharding rounds every weight alike
// Without update clipping (update_clip <= 0: lr_t = lr everywhere) nothing waits for a sum, and
// adamw_fused_kernel does 1 and 4 in one pass: 30 bytes per parameter (read grad, m, v, master;
// write m, v, master, bf16 param) instead of the two passes' 38 (m and v written, then read back).
// The same per-element functions (adamw_moments, adamw_master, adamw_round_params) in both paths,
// so the same bits.
// No float atomics: the bits depend only on the inputs. (The count of clipped tensors is an
// integer atomicAdd, which is order-independent.)
#ifndef LLMC_ADAMW_CUH
#define LLMC_ADAMW_CUH

#include "cuda_common.cuh"
#include "model.h"
#include "optimizer.h"
#include "rng.h"

#define ADAMW_CHUNK 8192
#define ADAMW_BLOCK 256

typedef struct {
    int64_t begin;  // first element, counted from the range's first element
    int len;        // elements, <= ADAMW_CHUNK, a multiple of 4
    int slot;
} AdamWChunk;

typedef struct {
    int first_chunk, nchunks;  // its chunks inside the range (none when it lies outside)
    int64_t numel;             // the whole tensor's elements (the RMS is over all of them)
    float weight_decay;
} AdamWSlot;

typedef struct {
    int nchunks, nslots;
    int64_t begin;        // the range's first element in the flat index space
    AdamWChunk *chunks;   // device tables, built once from the model and the range
    AdamWSlot *slots;
    double *rms_partial;  // nchunks
    double *slot_sum;     // nslots, with a pinned host copy for the sum over ranks
    double *h_slot_sum;
    float *slot_lr;       // nslots
    int *clipped;         // 1
    int *h_clipped;       // pinned host copy
} AdamW;

// m, v of one element from its gradient g (already times grad_scale); returns its term of the
// update-clipping sum, g^2 / max(vhat, eps^2).
__device__ __forceinline__ double adamw_moments(float g, float &m, float &v, float b1, float b2, float bc2, float eps) {
    m = b1 * m + (1.0f - b1) * g;
    v = b2 * v + (1.0f - b2) * g * g;
    const float vhat = v / bc2;
    return (double)(g * g) / (double)fmaxf(vhat, eps * eps);
}

// The master weight w after the step, from the updated m and v.
__device__ __forceinline__ float adamw_master(float w, float m, float v, float lr_t, float wd, float bc1, float bc2,
                                              float eps) {
    const float mhat = m / bc1, vhat = v / bc2;
    return w - lr_t * (mhat / (sqrtf(vhat) + eps) + wd * w);
}

// The bf16 parameters of 4 master weights at global index i..i+3 (i a multiple of 4), stochastically
// rounded with the bits of step t, as one 8-byte store.
__device__ __forceinline__ void adamw_round_params(bf16 *params, const f128 &w, uint64_t seed, int t, int64_t i) {
    uint16_t bits[4];
#pragma unroll
    for (int e = 0; e < 4; e++)
        bits[e] = bf16_from_float_stochastic(w[e], (uint32_t)rng_bits(seed, (uint64_t)t, (uint64_t)(i + e)));
    uint2 packed;
    packed.x = (uint32_t)bits[0] | (uint32_t)bits[1] << 16;
    packed.y = (uint32_t)bits[2] | (uint32_t)bits[3] << 16;
    *reinterpret_cast<uint2 *>(params) = packed;
}

__global__ void __launch_bounds__(ADAMW_BLOCK)
adamw_moments_kernel(double *rms_partial, float *m, float *v, const float *grads, const AdamWChunk *chunks,
                     float grad_scale, float b1, float b2, float bc2, float eps) {
    const AdamWChunk ch = chunks[blockIdx.x];
    double acc = 0.0;
    for (int k = threadIdx.x * 4; k < ch.len; k += ADAMW_BLOCK * 4) {
        const int64_t i = ch.begin + k;
        const f128 gv = load128cs(grads + i);
        f128 mv = load128(m + i), vv = load128(v + i);
#pragma unroll
        for (int e = 0; e < 4; e++) acc += adamw_moments(gv[e] * grad_scale, mv[e], vv[e], b1, b2, bc2, eps);
        store128(m + i, mv);
        store128(v + i, vv);
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) rms_partial[blockIdx.x] = acc;
}

__global__ void adamw_slot_sums_kernel(double *slot_sum, const double *rms_partial, const AdamWSlot *slots,
                                       int nslots) {
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= nslots) return;
    const AdamWSlot sl = slots[s];
    double sum = 0.0;
    for (int c = sl.first_chunk; c < sl.first_chunk + sl.nchunks; c++) sum += rms_partial[c];
    slot_sum[s] = sum;
}

__global__ void adamw_lr_kernel(float *slot_lr, int *clipped, const double *slot_sum, const AdamWSlot *slots,
                                int nslots, float lr, float update_clip) {
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= nslots) return;
    float lr_t = lr;
    if (update_clip > 0.0f) {
        const float rms = (float)sqrt(slot_sum[s] / (double)slots[s].numel);
        if (rms > update_clip) {
            lr_t = lr / (rms / update_clip);
            atomicAdd(clipped, 1);
        }
    }
    slot_lr[s] = lr_t;
}

__global__ void __launch_bounds__(ADAMW_BLOCK)
adamw_params_kernel(float *master, bf16 *params, const float *m, const float *v, const AdamWChunk *chunks,
                    const AdamWSlot *slots, const float *slot_lr, float bc1, float bc2, float eps, uint64_t seed,
                    int t, int64_t first) {
    const AdamWChunk ch = chunks[blockIdx.x];
    const float lr_t = slot_lr[ch.slot], wd = slots[ch.slot].weight_decay;
    for (int k = threadIdx.x * 4; k < ch.len; k += ADAMW_BLOCK * 4) {
        const int64_t i = ch.begin + k;
        const f128 mv = load128(m + i), vv = load128(v + i);
        f128 w = load128(master + i);
#pragma unroll
        for (int e = 0; e < 4; e++) w[e] = adamw_master(w[e], mv[e], vv[e], lr_t, wd, bc1, bc2, eps);
        store128(master + i, w);
        adamw_round_params(params + i, w, seed, t, first + i);
    }
}

// Without update clipping: adamw_moments_kernel and adamw_params_kernel in one pass, lr_t = lr.
__global__ void __launch_bounds__(ADAMW_BLOCK)
adamw_fused_kernel(float *master, bf16 *params, float *m, float *v, const float *grads, const AdamWChunk *chunks,
                   const AdamWSlot *slots, float lr, float grad_scale, float b1, float b2, float bc1, float bc2,
                   float eps, uint64_t seed, int t, int64_t first) {
    const AdamWChunk ch = chunks[blockIdx.x];
    const float wd = slots[ch.slot].weight_decay;
    for (int k = threadIdx.x * 4; k < ch.len; k += ADAMW_BLOCK * 4) {
        const int64_t i = ch.begin + k;
        const f128 gv = load128cs(grads + i);
        f128 mv = load128(m + i), vv = load128(v + i), w = load128(master + i);
#pragma unroll
        for (int e = 0; e < 4; e++) {
            adamw_moments(gv[e] * grad_scale, mv[e], vv[e], b1, b2, bc2, eps);  // (its clipping term unused)
            w[e] = adamw_master(w[e], mv[e], vv[e], lr, wd, bc1, bc2, eps);
        }
        store128(m + i, mv);
        store128(v + i, vv);
        store128(master + i, w);
        adamw_round_params(params + i, w, seed, t, first + i);
    }
}

// Builds the chunk and slot tables of the model for the flat range [begin, end) (weight decay
// from hp) and the scratch.
static inline void adamw_init(AdamW *opt, const GPT2Config *cfg, float weight_decay, size_t begin, size_t end) {
    const int nslots = gpt2_num_slots(cfg);
    if (begin % 4 != 0) die("adamw: the range starts at %zu, not a whole float4", begin);
    int nchunks = 0;
    for (int s = 0; s < nslots; s++) nchunks += ceil_div((int64_t)gpt2_slot(cfg, s).numel, ADAMW_CHUNK);
    AdamWChunk *chunks = (AdamWChunk *)malloc_check((size_t)(nchunks ? nchunks : 1) * sizeof(AdamWChunk));
    AdamWSlot *slots = (AdamWSlot *)malloc_check((size_t)nslots * sizeof(AdamWSlot));
    int c = 0;
    for (int s = 0; s < nslots; s++) {
        const ParamSlot ps = gpt2_slot(cfg, s);
        if (ps.numel % 4 != 0 || ps.offset % 4 != 0) die("adamw: tensor %d is not a whole number of float4s", s);
        slots[s] = (AdamWSlot){c, 0, (int64_t)ps.numel, param_tensor_is_decayed(ps.kind) ? weight_decay : 0.0f};
        for (size_t lo = ps.offset; lo < ps.offset + ps.numel; lo += ADAMW_CHUNK) {
            const size_t hi = lo + ADAMW_CHUNK < ps.offset + ps.numel ? lo + ADAMW_CHUNK : ps.offset + ps.numel;
            const size_t clo = lo > begin ? lo : begin, chi = hi < end ? hi : end;
            if (clo >= chi) continue;
            chunks[c++] = (AdamWChunk){(int64_t)(clo - begin), (int)(chi - clo), s};
            slots[s].nchunks++;
        }
    }
    opt->nchunks = c;
    opt->nslots = nslots;
    opt->begin = (int64_t)begin;
    cudaCheck(cudaMalloc(&opt->chunks, (size_t)(c ? c : 1) * sizeof(AdamWChunk)));
    cudaCheck(cudaMalloc(&opt->slots, (size_t)nslots * sizeof(AdamWSlot)));
    cudaCheck(cudaMemcpy(opt->chunks, chunks, (size_t)c * sizeof(AdamWChunk), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(opt->slots, slots, (size_t)nslots * sizeof(AdamWSlot), cudaMemcpyHostToDevice));
    cudaCheck(cudaMalloc(&opt->rms_partial, (size_t)(c ? c : 1) * sizeof(double)));
    cudaCheck(cudaMalloc(&opt->slot_sum, (size_t)nslots * sizeof(double)));
    cudaCheck(cudaMallocHost(&opt->h_slot_sum, (size_t)nslots * sizeof(double)));
    cudaCheck(cudaMalloc(&opt->slot_lr, (size_t)nslots * sizeof(float)));
    cudaCheck(cudaMalloc(&opt->clipped, sizeof(int)));
    cudaCheck(cudaMallocHost(&opt->h_clipped, sizeof(int)));
    free(chunks);
    free(slots);
}

static inline void adamw_free(AdamW *opt) {
    cudaCheck(cudaFree(opt->chunks));
    cudaCheck(cudaFree(opt->slots));
    cudaCheck(cudaFree(opt->rms_partial));
    cudaCheck(cudaFree(opt->slot_sum));
    cudaCheck(cudaFreeHost(opt->h_slot_sum));
    cudaCheck(cudaFree(opt->slot_lr));
    cudaCheck(cudaFree(opt->clipped));
    cudaCheck(cudaFreeHost(opt->h_clipped));
}

// Step t (from 1) on the range of adamw_init; the pointers point at the range's first element.
// allreduce (llmc/optimizer.h; NULL for the whole model on one rank) sums the slots' update-
// clipping sums over the ranks that hold the other parts of the model. Returns how many tensors
// update clipping slowed, the same number on every rank (synchronizes the stream; without update
// clipping, 0 and no synchronization).
static inline int adamw_update(AdamW *opt, float *master, bf16 *params, float *m, float *v, const float *grads, int t,
                               float lr, float grad_scale, float b1, float b2, float eps, float update_clip,
                               uint64_t seed, cudaStream_t stream, AllReduceSumFn allreduce, void *ctx) {
    const float bc1 = 1.0f - powf(b1, (float)t), bc2 = 1.0f - powf(b2, (float)t);
    if (update_clip <= 0.0f) {  // no sums to wait for (the same on every rank: no allreduce either)
        if (opt->nchunks > 0) {
            LLMC_LAUNCH(opt->nchunks, ADAMW_BLOCK, 0, stream, adamw_fused_kernel)(
                master, params, m, v, grads, opt->chunks, opt->slots, lr, grad_scale, b1, b2, bc1, bc2, eps, seed, t,
                opt->begin);
            kernelCheck();
        }
        return 0;
    }
    const int slot_grid = ceil_div(opt->nslots, 128);
    cudaCheck(cudaMemsetAsync(opt->clipped, 0, sizeof(int), stream));
    if (opt->nchunks > 0) {
        LLMC_LAUNCH(opt->nchunks, ADAMW_BLOCK, 0, stream, adamw_moments_kernel)(
            opt->rms_partial, m, v, grads, opt->chunks, grad_scale, b1, b2, bc2, eps);
        kernelCheck();
    }
    LLMC_LAUNCH(slot_grid, 128, 0, stream, adamw_slot_sums_kernel)(
        opt->slot_sum, opt->rms_partial, opt->slots, opt->nslots);
    kernelCheck();
    if (allreduce) {
        const size_t bytes = (size_t)opt->nslots * sizeof(double);
        cudaCheck(cudaMemcpyAsync(opt->h_slot_sum, opt->slot_sum, bytes, cudaMemcpyDeviceToHost, stream));
        cudaCheck(cudaStreamSynchronize(stream));
        allreduce(opt->h_slot_sum, opt->nslots, ctx);
        cudaCheck(cudaMemcpyAsync(opt->slot_sum, opt->h_slot_sum, bytes, cudaMemcpyHostToDevice, stream));
    }
    LLMC_LAUNCH(slot_grid, 128, 0, stream, adamw_lr_kernel)(
        opt->slot_lr, opt->clipped, opt->slot_sum, opt->slots, opt->nslots, lr, update_clip);
    kernelCheck();
    if (opt->nchunks > 0) {
        LLMC_LAUNCH(opt->nchunks, ADAMW_BLOCK, 0, stream, adamw_params_kernel)(
            master, params, m, v, opt->chunks, opt->slots, opt->slot_lr, bc1, bc2, eps, seed, t, opt->begin);
        kernelCheck();
    }
    cudaCheck(cudaMemcpyAsync(opt->h_clipped, opt->clipped, sizeof(int), cudaMemcpyDeviceToHost, stream));
    cudaCheck(cudaStreamSynchronize(stream));
    return *opt->h_clipped;
}

#endif  // LLMC_ADAMW_CUH
