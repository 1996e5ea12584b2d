// LayerNorm forward (optionally fused with the residual add that precedes it) and backward.
//
// STATUS: verified on an H100 at commit ad0f582 and, with dw and db's overwrite mode (colsum.cuh,
// 2026-11-24), on an H200 at c95ef56 (2026-11-27; dev/gpu_report.md: its harness and test_gptcu pass).
//
// Layouts (row-major, N = B*T rows of C channels, C % 8 == 0): x, out, residual, dout, dinp bf16
// (N, C); mean, rstd fp32 (N); w, b bf16 (C); dw, db fp32 (C).
// One warp per row; lane l handles the 8-channel chunks l, l+32, ... with 128-bit loads. Row
// statistics are fp32, two-pass (mean, then mean of squared deviations) as the CPU reference:
//   y = (x - mean) * rstd * w + b,  rstd = 1 / sqrt(var + 1e-5)
// Backward, with xhat = (x - mean) rstd and g = dout * w:
//   dx = rstd (g - mean(g) - xhat mean(g xhat))   added to dinp (the residual stream's gradient)
//   dw += sum over rows of dout xhat, db += sum of dout   (colsum.cuh: deterministic, no atomics)
#ifndef LLMC_LAYERNORM_CUH
#define LLMC_LAYERNORM_CUH

#include "colsum.cuh"
#include "cuda_common.cuh"

#define LAYERNORM_EPS 1e-5f

// With b != nullptr: residual = bf16(a + b) is written to residual_out and normalized (the
// statistics are of the rounded values, which the backward pass reads back). With b == nullptr:
// a is normalized and residual_out is unused.
__global__ void layernorm_forward_kernel(bf16 *residual_out, bf16 *out, float *mean, float *rstd, const bf16 *a,
                                         const bf16 *b, const bf16 *w, const bf16 *bias, int N, int C) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= N) return;
    const int64_t base = (int64_t)row * C;
    const bf16 *x = b ? residual_out + base : a + base;
    float sum = 0.0f;
    for (int c = lane * 8; c < C; c += 256) {
        x128 xv;
        if (b) {  // fused residual: this thread writes the chunk it will read back below
            const x128 av = load128(a + base + c), bv = load128(b + base + c);
#pragma unroll
            for (int j = 0; j < 8; j++) xv[j] = to_bf16(__bfloat162float(av[j]) + __bfloat162float(bv[j]));
            store128(residual_out + base + c, xv);
        } else {
            xv = load128(x + c);
        }
#pragma unroll
        for (int j = 0; j < 8; j++) sum += __bfloat162float(xv[j]);
    }
    const float m = warp_sum(sum) / C;
    float var = 0.0f;
    for (int c = lane * 8; c < C; c += 256) {
        const x128 xv = load128(x + c);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float d = __bfloat162float(xv[j]) - m;
            var += d * d;
        }
    }
    const float s = 1.0f / sqrtf(warp_sum(var) / C + LAYERNORM_EPS);
    for (int c = lane * 8; c < C; c += 256) {
        const x128 xv = load128(x + c), wv = load128(w + c), bv = load128(bias + c);
        x128 o;
#pragma unroll
        for (int j = 0; j < 8; j++)
            o[j] = to_bf16((__bfloat162float(xv[j]) - m) * s * __bfloat162float(wv[j]) + __bfloat162float(bv[j]));
        store128(out + base + c, o);
    }
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = s;
    }
}

static inline void layernorm_launch(bf16 *residual_out, bf16 *out, float *mean, float *rstd, const bf16 *a,
                                    const bf16 *b, const bf16 *w, const bf16 *bias, int N, int C, cudaStream_t stream) {
    const int block = 256, rows_per_block = block / 32;
    LLMC_LAUNCH(ceil_div(N, rows_per_block), block, 0, stream, layernorm_forward_kernel)(
        residual_out, out, mean, rstd, a, b, w, bias, N, C);
    kernelCheck();
}

// out = LayerNorm(x).
static inline void layernorm_forward(bf16 *out, float *mean, float *rstd, const bf16 *x, const bf16 *w,
                                     const bf16 *bias, int N, int C, cudaStream_t stream) {
    layernorm_launch(nullptr, out, mean, rstd, x, nullptr, w, bias, N, C, stream);
}

// residual = a + b, out = LayerNorm(residual).
static inline void fused_residual_layernorm_forward(bf16 *residual, bf16 *out, float *mean, float *rstd, const bf16 *a,
                                                    const bf16 *b, const bf16 *w, const bf16 *bias, int N, int C,
                                                    cudaStream_t stream) {
    layernorm_launch(residual, out, mean, rstd, a, b, w, bias, N, C, stream);
}

// dinp[row] += dx; one warp per row.
__global__ void layernorm_backward_dx_kernel(bf16 *dinp, const bf16 *dout, const bf16 *x, const bf16 *w,
                                             const float *mean, const float *rstd, int N, int C) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= N) return;
    const int64_t base = (int64_t)row * C;
    const float m = mean[row], s = rstd[row];
    float g_sum = 0.0f, gn_sum = 0.0f;
    for (int c = lane * 8; c < C; c += 256) {
        const x128 dv = load128(dout + base + c), xv = load128(x + base + c), wv = load128(w + c);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float g = __bfloat162float(dv[j]) * __bfloat162float(wv[j]);
            g_sum += g;
            gn_sum += g * (__bfloat162float(xv[j]) - m) * s;
        }
    }
    const float g_mean = warp_sum(g_sum) / C, gn_mean = warp_sum(gn_sum) / C;
    for (int c = lane * 8; c < C; c += 256) {
        const x128 dv = load128(dout + base + c), xv = load128(x + base + c), wv = load128(w + c);
        x128 di = load128(dinp + base + c);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float g = __bfloat162float(dv[j]) * __bfloat162float(wv[j]);
            const float n = (__bfloat162float(xv[j]) - m) * s;
            di[j] = to_bf16(__bfloat162float(di[j]) + s * (g - g_mean - n * gn_mean));
        }
        store128(dinp + base + c, di);
    }
}

// dinp += dx (always accumulated: the residual stream's gradient), dw += ..., db += ... (= without
// accumulate); scratch: colsum_scratch_floats(N, C) floats.
static inline void layernorm_backward(bf16 *dinp, float *dw, float *db, float *scratch, const bf16 *dout, const bf16 *x,
                                      const bf16 *w, const float *mean, const float *rstd, int N, int C,
                                      bool accumulate, cudaStream_t stream) {
    const int block = 256, rows_per_block = block / 32;
    LLMC_LAUNCH(ceil_div(N, rows_per_block), block, 0, stream, layernorm_backward_dx_kernel)(
        dinp, dout, x, w, mean, rstd, N, C);
    kernelCheck();
    layernorm_param_backward(dw, db, scratch, dout, x, mean, rstd, N, C, accumulate, stream);
}

#endif  // LLMC_LAYERNORM_CUH
