// Token + position embedding, forward and a deterministic backward.
//
// STATUS: verified on an H100 at commit ad0f582 and, with dwpe's overwrite mode (2026-11-24), on an
// H200 at c95ef56 (2026-11-27; dev/gpu_report.md: its harness in dev/cuda/ and test_gptcu pass).
//
// Layouts (row-major): inp int (B, T); wte bf16 (Vp, C); wpe bf16 (maxT, C); out bf16 (B, T, C);
// the gradients dwte (Vp, C) and dwpe (maxT, C) are fp32. dwte is accumulated (+=): only the rows
// of tokens in the batch are written, so it cannot be overwritten (in a GPT-2 the tied output head
// writes it first). dwpe is accumulated, or overwritten (=) on a step's first write, where the
// positions T..maxT-1, which had no gradient, get 0. C % 8 == 0.
//
// Backward without atomics: the host, which holds the tokens, sorts the B*T positions by token
// (a stable counting sort, encoder_buckets_build) into buckets, one per distinct token. One block
// per bucket then sums dout over the bucket's positions in position order and adds the sum to
// that token's dwte row, so every row has exactly one writer and a fixed summation order.
// dwpe[t] is the sum over b of dout[b, t], one thread per 8 channels of one t.
#ifndef LLMC_ENCODER_CUH
#define LLMC_ENCODER_CUH

#include "cuda_common.cuh"

// out[b,t,:] = wte[inp[b,t],:] + wpe[t,:]; one thread per 8 channels.
__global__ void encoder_forward_kernel(bf16 *out, const int *inp, const bf16 *wte, const bf16 *wpe, int B, int T,
                                       int C) {
    const int64_t idx = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * 8;  // element of out
    if (idx >= (int64_t)B * T * C) return;
    const int64_t bt = idx / C;
    const int c = (int)(idx % C), t = (int)(bt % T);
    const x128 te = load128(wte + (int64_t)inp[bt] * C + c), pe = load128(wpe + (int64_t)t * C + c);
    x128 o;
#pragma unroll
    for (int k = 0; k < 8; k++) o[k] = to_bf16(__bfloat162float(te[k]) + __bfloat162float(pe[k]));
    store128(out + idx, o);
}

static inline void encoder_forward(bf16 *out, const int *inp, const bf16 *wte, const bf16 *wpe, int B, int T, int C,
                                   cudaStream_t stream) {
    const int block = 256;
    LLMC_LAUNCH(ceil_div((int64_t)B * T * C / 8, block), block, 0, stream, encoder_forward_kernel)(
        out, inp, wte, wpe, B, T, C);
    kernelCheck();
}

// The host-side sort. Packed in one int array so that a single copy uploads it:
//   [0, N)                 positions b*T+t sorted by token, stable (ascending position per token)
//   [N, N + nb + 1)        bucket starts into the first part (bucket k: start[k] .. start[k+1])
//   [2N + 1, 2N + 1 + nb)  the token of each bucket
// so the array holds 3N + 1 ints at most. counts: Vp ints of scratch. Returns nb.
static inline int encoder_buckets_build(int *packed, int *counts, const int *inp, int N, int Vp) {
    memset(counts, 0, (size_t)Vp * sizeof(int));
    for (int i = 0; i < N; i++) counts[inp[i]]++;
    int *start = packed + N, *token = packed + 2 * N + 1;
    int nb = 0, offset = 0;
    for (int v = 0; v < Vp; v++) {
        if (!counts[v]) continue;
        start[nb] = offset;
        token[nb] = v;
        nb++;
        const int c = counts[v];
        counts[v] = offset;  // from here on: the next free slot of token v
        offset += c;
    }
    start[nb] = offset;
    for (int i = 0; i < N; i++) packed[counts[inp[i]]++] = i;
    return nb;
}

// grid (nb, ceil(C / (8 * blockDim.x))): block k owns bucket k; thread owns 8 channels.
__global__ void encoder_backward_wte_kernel(float *dwte, const bf16 *dout, const int *packed, int N, int C) {
    const int k = blockIdx.x;
    const int c = (blockIdx.y * blockDim.x + threadIdx.x) * 8;
    if (c >= C) return;
    const int *order = packed, *start = packed + N, *token = packed + 2 * N + 1;
    float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int p = start[k]; p < start[k + 1]; p++) {
        const x128 d = load128(dout + (int64_t)order[p] * C + c);
#pragma unroll
        for (int j = 0; j < 8; j++) acc[j] += __bfloat162float(d[j]);
    }
    float *row = dwte + (int64_t)token[k] * C + c;
#pragma unroll
    for (int j = 0; j < 8; j += 4) {
        f128 g = load128(row + j);
#pragma unroll
        for (int e = 0; e < 4; e++) g[e] += acc[j + e];
        store128(row + j, g);
    }
}

// One thread per (t, 8 channels) of the first `rows` positions: dwpe[t, c..c+8] += (or =) the sum
// over b of dout[b, t, c..c+8], which is 0 for t >= T.
__global__ void encoder_backward_wpe_kernel(float *dwpe, const bf16 *dout, int B, int T, int rows, int C,
                                            bool accumulate) {
    const int64_t idx = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * 8;  // element of (rows, C)
    if (idx >= (int64_t)rows * C) return;
    float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int b = 0; idx < (int64_t)T * C && b < B; b++) {
        const x128 d = load128(dout + (int64_t)b * T * C + idx);
#pragma unroll
        for (int j = 0; j < 8; j++) acc[j] += __bfloat162float(d[j]);
    }
#pragma unroll
    for (int j = 0; j < 8; j += 4) {
        f128 g = accumulate ? load128(dwpe + idx + j) : f128{};
#pragma unroll
        for (int e = 0; e < 4; e++) g[e] += acc[j + e];
        store128(dwpe + idx + j, g);
    }
}

// d_packed: the device copy of encoder_buckets_build's array; nb its bucket count. accumulate:
// whether dwpe (maxT rows) is added to or overwritten (see the top of this file).
static inline void encoder_backward(float *dwte, float *dwpe, const bf16 *dout, const int *d_packed, int nb, int B,
                                    int T, int maxT, int C, bool accumulate, cudaStream_t stream) {
    const int block = 128, N = B * T;
    if (nb > 0) {
        LLMC_LAUNCH(dim3(nb, ceil_div(C, 8 * block)), block, 0, stream, encoder_backward_wte_kernel)(
            dwte, dout, d_packed, N, C);
        kernelCheck();
    }
    const int rows = accumulate ? T : maxT;  // overwriting also zeroes the positions the batch lacks
    LLMC_LAUNCH(ceil_div((int64_t)rows * C / 8, block), block, 0, stream, encoder_backward_wpe_kernel)(
        dwpe, dout, B, T, rows, C, accumulate);
    kernelCheck();
}

#endif  // LLMC_ENCODER_CUH
