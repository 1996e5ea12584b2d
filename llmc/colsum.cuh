// Deterministic column sums over the rows of a (N, OC) bf16 matrix, added (+=) to fp32 or, without
// `accumulate`, written (=) over what the output held (the first write of a step's gradient): the
// bias gradients of the linear layers (db = sum over rows of dout). The LayerNorm backward
// (layernorm.cuh) computes its two sums (dw = sum of dout * xhat, db = sum of dout) in the same
// chunks and order inside its own kernel and finishes them with colsum_finish below.
//
// STATUS: verified on an H100 at commit ad0f582 and, with the overwrite mode (2026-11-24), on an
// H200 at c95ef56 (2026-11-27; dev/gpu_report.md: its harness in dev/cuda/ and test_gptcu pass).
//
// Two passes, no atomics, so the bits do not depend on scheduling:
//   1. grid (ceil(OC / 256), R): block (32, 8) owns 256 columns (8 per lane, one 128-bit load per
//      row) of one chunk of rows; warp w sums rows w, w+8, ... of the chunk; the 8 warp sums are
//      added in warp order and written to partial[r][col] (the LayerNorm backward writes its two
//      sums the same way, as partial[r][k][col], k 0: dw, 1: db).
//   2. colsum_finish: one thread per (k, col) adds the R chunk sums in chunk order and adds the
//      total to out_k (or stores it: 0 + total is total, so both modes give the same bits on a
//      zeroed output). The FP8 gradient cast's tile-row sums (llmc/quant.cuh) finish here too.
// R depends only on N (colsum_chunks), so the summation order is a function of the shape.
#ifndef LLMC_COLSUM_CUH
#define LLMC_COLSUM_CUH

#include "cuda_common.cuh"

#define COLSUM_MAX_CHUNKS 256
#define COLSUM_COLS_PER_BLOCK 256

// Rows per chunk and the number of chunks R <= COLSUM_MAX_CHUNKS for N rows.
static inline int colsum_rows_per_chunk(int N) { return ceil_div(N, COLSUM_MAX_CHUNKS); }
static inline int colsum_chunks(int N) { return ceil_div(N, colsum_rows_per_chunk(N)); }
// Floats of scratch for columns sums of up to OC columns (two sums each).
static inline size_t colsum_scratch_floats(int N, int OC) { return (size_t)colsum_chunks(N) * 2 * OC; }

// Pass 1 for one sum (k = 0): the sum of dout.
__global__ void __launch_bounds__(256) colsum_partial_kernel(float *partial, const bf16 *dout, int N, int OC,
                                                             int rows_per_chunk) {
    __shared__ float s[8][COLSUM_COLS_PER_BLOCK];
    const int lane = threadIdx.x, warp = threadIdx.y;
    const int col = blockIdx.x * COLSUM_COLS_PER_BLOCK + lane * 8;
    const int chunk = blockIdx.y;
    const int r_end = min(N, (chunk + 1) * rows_per_chunk);
    float acc[8];
#pragma unroll
    for (int j = 0; j < 8; j++) acc[j] = 0.0f;
    if (col < OC) {
        for (int r = chunk * rows_per_chunk + warp; r < r_end; r += 8) {
            const x128 d = load128(dout + (int64_t)r * OC + col);
#pragma unroll
            for (int j = 0; j < 8; j++) acc[j] += __bfloat162float(d[j]);
        }
    }
#pragma unroll
    for (int j = 0; j < 8; j++) s[warp][lane * 8 + j] = acc[j];
    __syncthreads();
    const int tid = warp * 32 + lane;  // 0..255: one column of the block each
    const int c = blockIdx.x * COLSUM_COLS_PER_BLOCK + tid;
    if (c >= OC) return;
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < 8; w++) sum += s[w][tid];
    partial[(int64_t)chunk * OC + c] = sum;
}

template <int NSUMS>
__global__ void colsum_finish_kernel(float *out0, float *out1, const float *partial, int R, int OC, bool accumulate) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;  // k * OC + col
    if (idx >= NSUMS * OC) return;
    const int k = idx / OC, c = idx % OC;
    float sum = 0.0f;
    for (int r = 0; r < R; r++) sum += partial[((int64_t)r * NSUMS + k) * OC + c];
    float *out = k == 0 ? out0 : out1;
    out[c] = accumulate ? out[c] + sum : sum;
}

// Pass 2: out0 (and with NSUMS = 2, out1) += the R chunk sums in partial (= without accumulate),
// R = colsum_chunks(N) here; llmc/matmul_lowp.cuh finishes the FP8 gradient cast's tile-row sums.
template <int NSUMS>
static inline void colsum_finish(float *out0, float *out1, const float *partial, int R, int OC, bool accumulate,
                                 cudaStream_t stream) {
    LLMC_LAUNCH(ceil_div(NSUMS * OC, 256), 256, 0, stream, colsum_finish_kernel<NSUMS>)(
        out0, out1, partial, R, OC, accumulate);
    kernelCheck();
}

// dbias (OC) += column sums of dout (N, OC) (= without accumulate). scratch: colsum_scratch_floats(N, OC) floats.
static inline void bias_backward(float *dbias, float *scratch, const bf16 *dout, int N, int OC, bool accumulate,
                                 cudaStream_t stream) {
    if (OC % 8 != 0) die("colsum: %d columns is not a multiple of 8", OC);
    LLMC_LAUNCH(dim3(ceil_div(OC, COLSUM_COLS_PER_BLOCK), colsum_chunks(N)), dim3(32, 8), 0, stream,
                colsum_partial_kernel)(scratch, dout, N, OC, colsum_rows_per_chunk(N));
    kernelCheck();
    colsum_finish<1>(dbias, nullptr, scratch, colsum_chunks(N), OC, accumulate, stream);
}

#endif  // LLMC_COLSUM_CUH
