// The squared global norm of the fp32 gradient, deterministic (no atomics).
//
// STATUS: verified on an H100 at commit ad0f582 and on an H200 at c95ef56 (2026-11-27; dev/gpu_report.md:
// its harness in dev/cuda/ and test_gptcu pass).
//
// Layout: the flat gradient buffer, n floats (n % 4 == 0, 16-byte aligned). As the CPU's
// sum_of_squares (llmc/optimizer.c), the buffer is cut into chunks of NORM_CHUNK = 8192 elements
// aligned in the global index space; block c sums chunk c in double (thread i reads the float4s
// i, i + 256, ...; then the block reduction of cuda_common.cuh), and one block adds the chunk
// sums in a fixed tree order. The result is sum_i g_i^2 as a double in device memory.
#ifndef LLMC_GLOBAL_NORM_CUH
#define LLMC_GLOBAL_NORM_CUH

#include "cuda_common.cuh"

#define NORM_CHUNK 8192
#define NORM_BLOCK 256

static inline int global_norm_chunks(size_t n) { return ceil_div((int64_t)n, NORM_CHUNK); }

__global__ void __launch_bounds__(NORM_BLOCK) sum_squares_chunks_kernel(double *partial, const float *x, int64_t n) {
    const int64_t base = (int64_t)blockIdx.x * NORM_CHUNK;
    double acc = 0.0;
#pragma unroll
    for (int j = 0; j < NORM_CHUNK / (4 * NORM_BLOCK); j++) {
        const int64_t i = base + 4 * ((int64_t)threadIdx.x + NORM_BLOCK * j);
        if (i < n) {
            const f128 v = load128cs(x + i);
#pragma unroll
            for (int e = 0; e < 4; e++) acc += (double)v[e] * (double)v[e];
        }
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void __launch_bounds__(1024) sum_partials_kernel(double *out, const double *partial, int nchunks) {
    double acc = 0.0;
    for (int c = threadIdx.x; c < nchunks; c += blockDim.x) acc += partial[c];
    acc = block_sum(acc);
    if (threadIdx.x == 0) *out = acc;
}

// *out = sum of squares of x[0..n). scratch: global_norm_chunks(n) doubles.
static inline void global_sum_squares(double *out, double *scratch, const float *x, size_t n, cudaStream_t stream) {
    if (n % 4 != 0) die("global_sum_squares: %zu elements is not a multiple of 4", n);
    const int nchunks = global_norm_chunks(n);
    LLMC_LAUNCH(nchunks, NORM_BLOCK, 0, stream, sum_squares_chunks_kernel)(scratch, x, (int64_t)n);
    kernelCheck();
    LLMC_LAUNCH(1, 1024, 0, stream, sum_partials_kernel)(out, scratch, nchunks);
    kernelCheck();
}

#endif  // LLMC_GLOBAL_NORM_CUH
