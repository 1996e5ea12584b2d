// GPU quantization kernels for the FP8 and int8 matmuls: casts to E4M3/E5M2 with a scale, a fused
// quantize-and-transpose that also produces the amax, amax and scale computation on the device,
// int8 row-wise quantization, and the dequantize-with-bias epilogue of an int8 GEMM.
//
// STATUS: compiled for sm_90 but NOT YET RUN ON A GPU. dev/cuda/quant.cu checks every kernel
// against llmc/quant.h byte for byte, and dev/cuda/matmul_lowp.cu the int8 and FP8 GEMM paths.
//
// Conventions (the same as llmc/quant.h, whose scalar functions the CPU twin uses):
//   - a scale is the multiplier before the cast: q = Q(x * scale); the GEMM dequantizes with
//     1/scale (cuBLASLt's A/B scale pointers hold 1/scale). Scales live in device memory and are
//     read by the kernels through pointers, so neither current nor delayed scaling syncs the host.
//   - amax outputs are max |x| of the unscaled input, combined across blocks with an integer
//     atomicMax on the fp32 bit pattern (valid because |x| >= 0; NaN patterns order above +Inf, so
//     a NaN propagates). The caller zeroes an amax before the kernels that accumulate into it.
//   - FP8 casts use the hardware instruction cvt.rn.satfinite.{e4m3,e5m2}x2.f32 (sm_89+), through
//     __nv_cvt_float_to_fp8; llmc/quant.h is its bit-exact host twin. int8 uses quant.h's
//     int8_from_float itself (rintf is cvt.rni on the GPU: ties to even).
//   - Matrices are row-major. FP8 cuBLASLt on sm_90 takes only the "TN" layout; for out = x @ w^T
//     (x: (M, K), w: (N, K)) that is the natural layout, but the input gradient dx = dout @ w needs
//     w^T (K, N) and an FP8 weight gradient dw = dout^T @ x needs dout^T and x^T: the transposed
//     copies come from quant_transpose_gpu() in the same pass as the row-major ones.
#ifndef LLMC_QUANT_CUH
#define LLMC_QUANT_CUH

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "quant.h"
#include "utils.h"

#define quant_cuda_check(call) quant_cuda_check_at((call), #call, __FILE__, __LINE__)
static inline void quant_cuda_check_at(cudaError_t err, const char *what, const char *file, int line) {
    if (err != cudaSuccess) die("CUDA error at %s:%d: %s: %s", file, line, what, cudaGetErrorString(err));
}

// What a quantizing kernel writes: one byte per element, an FP8 code or an int8 (two's complement).
typedef enum { QUANT_TO_E4M3 = 0, QUANT_TO_E5M2 = 1, QUANT_TO_INT8 = 2 } quant_target;

static inline float quant_target_max(quant_target t) {
    return t == QUANT_TO_E4M3 ? FP8_E4M3_MAX : t == QUANT_TO_E5M2 ? FP8_E5M2_MAX : (float)INT8_QMAX;
}

// ---------------------------------------------------------------------------------------------
// Device helpers

__device__ __forceinline__ float quant_load(float x) { return x; }
__device__ __forceinline__ float quant_load(__nv_bfloat16 x) { return __bfloat162float(x); }

__device__ __forceinline__ uint8_t quant_to_byte(float x, float scale, quant_target t) {
    if (t == QUANT_TO_INT8) return (uint8_t)int8_from_float(x, scale);
    return (uint8_t)__nv_cvt_float_to_fp8(x * scale, __NV_SATFINITE, t == QUANT_TO_E4M3 ? __NV_E4M3 : __NV_E5M2);
}

// Bits of |x|, ordered like the values (and NaN above Inf).
__device__ __forceinline__ unsigned int quant_abs_bits(float x) { return __float_as_uint(x) & 0x7FFFFFFFu; }

// Max of `bits` over the block, into *amax (as bits) with one atomic per block. Every thread of
// the block must call it; blockDim.x * blockDim.y must be a multiple of 32 and at most 1024.
__device__ __forceinline__ void quant_block_amax(float *amax, unsigned int bits) {
    __shared__ unsigned int warp_max[32];
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, nwarps = blockDim.x * blockDim.y / 32;
    bits = __reduce_max_sync(0xFFFFFFFFu, bits);
    if (tid % 32 == 0) warp_max[tid / 32] = bits;
    __syncthreads();
    if (tid < 32) {
        bits = tid < nwarps ? warp_max[tid] : 0u;
        bits = __reduce_max_sync(0xFFFFFFFFu, bits);
        if (tid == 0) atomicMax((unsigned int *)amax, bits);
    }
}

// ---------------------------------------------------------------------------------------------
// Kernels

// out[i] = Q(in[i] * scale) for a contiguous tensor; amax (optional) accumulates max |in[i]|.
// One element per thread per grid-stride step: reads of 2 or 4 bytes and writes of 1 byte per
// thread are coalesced across the warp.
template <typename Tin>
__global__ void quant_cast_kernel(uint8_t *out, float *amax, const Tin *in, size_t n, const float *scale,
                                  quant_target target) {
    const float s = *scale;
    unsigned int bits = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float x = quant_load(in[i]);
        out[i] = quant_to_byte(x, s, target);
        bits = max(bits, quant_abs_bits(x));
    }
    if (amax) quant_block_amax(amax, bits);
}

// max |in| over a contiguous tensor, into *amax (zeroed by the caller).
template <typename Tin>
__global__ void quant_amax_kernel(float *amax, const Tin *in, size_t n) {
    unsigned int bits = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        bits = max(bits, quant_abs_bits(quant_load(in[i])));
    quant_block_amax(amax, bits);
}

// scale = quant_scale(amax, qmax, mode) and its inverse (for cuBLASLt's scale pointer), on one thread.
__global__ void quant_scale_kernel(float *scale, float *inv_scale, const float *amax, float qmax,
                                   quant_scale_mode mode) {
    float s = quant_scale(*amax, qmax, mode);
    *scale = s;
    *inv_scale = 1.0f / s;
}

// Fused quantize and transpose of x (rows, cols) row-major:
//   q  (rows, cols) row-major: q[r * cols + c]  = Q(x[r, c] * scale)   (optional, may be NULL)
//   qt (cols, rows) row-major: qt[c * rows + r] = the same byte          (optional, may be NULL)
//   amax (optional) accumulates max |x|.
// Tiling: a block of 32 x 8 threads owns a 32 x 32 tile; each thread handles 4 rows (ty, ty + 8,
// ty + 16, ty + 24) at column tx, so reads and q writes run along rows (coalesced). The bytes go
// through shared memory and come back transposed, so qt writes also run along qt's rows. The +4
// padding staggers the transposed reads across shared-memory banks.
#define QUANT_TILE 32
#define QUANT_TILE_ROWS 8
template <typename Tin>
__global__ void quant_transpose_kernel(uint8_t *q, uint8_t *qt, float *amax, const Tin *x, int rows, int cols,
                                       const float *scale, quant_target target) {
    __shared__ uint8_t tile[QUANT_TILE][QUANT_TILE + 4];
    const float s = *scale;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col0 = blockIdx.x * QUANT_TILE, row0 = blockIdx.y * QUANT_TILE;
    unsigned int bits = 0;
    for (int k = ty; k < QUANT_TILE; k += QUANT_TILE_ROWS) {
        int r = row0 + k, c = col0 + tx;
        if (r < rows && c < cols) {
            float v = quant_load(x[(size_t)r * cols + c]);
            uint8_t b = quant_to_byte(v, s, target);
            if (q) q[(size_t)r * cols + c] = b;
            tile[k][tx] = b;
            bits = max(bits, quant_abs_bits(v));
        }
    }
    if (amax) quant_block_amax(amax, bits);   // contains __syncthreads(), which also publishes the tile
    else __syncthreads();
    if (!qt) return;
    for (int k = ty; k < QUANT_TILE; k += QUANT_TILE_ROWS) {
        int c = col0 + k, r = row0 + tx;      // element (r, c) of x is tile[tx][k]
        if (r < rows && c < cols) qt[(size_t)c * rows + r] = tile[tx][k];
    }
}

// Row-wise int8 of x (rows, cols) row-major: one block per row; the block reduces the row's amax,
// every thread computes the same scale, then quantizes its strided share of the row.
template <typename Tin>
__global__ void int8_quantize_rows_kernel(int8_t *q, float *scales, const Tin *x, int cols, quant_scale_mode mode) {
    __shared__ unsigned int warp_max[32];
    __shared__ float row_scale;
    const Tin *xr = x + (size_t)blockIdx.x * cols;
    int8_t *qr = q + (size_t)blockIdx.x * cols;
    unsigned int bits = 0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) bits = max(bits, quant_abs_bits(quant_load(xr[c])));
    bits = __reduce_max_sync(0xFFFFFFFFu, bits);
    if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = bits;
    __syncthreads();
    if (threadIdx.x < 32) {
        bits = threadIdx.x < blockDim.x / 32 ? warp_max[threadIdx.x] : 0u;
        bits = __reduce_max_sync(0xFFFFFFFFu, bits);
        if (threadIdx.x == 0) {
            row_scale = quant_scale(__uint_as_float(bits), (float)INT8_QMAX, mode);
            scales[blockIdx.x] = row_scale;
        }
    }
    __syncthreads();
    const float s = row_scale;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) qr[c] = int8_from_float(quant_load(xr[c]), s);
}

// Epilogue of an int8 GEMM acc = qa @ qb^T (int32, (rows, cols) row-major, exact):
//   out[r, c] = bf16(acc[r, c] * (1 / row_scales[r]) * (1 / *col_scale) + bias[c])
// in this order, each step rounded in fp32 (no FMA contraction, so the CPU can replay it exactly);
// with power-of-two scales the two products are exact and only the bias add and bf16 round.
__global__ void int8_dequantize_bias_kernel(__nv_bfloat16 *out, const int32_t *acc, const float *row_scales,
                                            const float *col_scale, const __nv_bfloat16 *bias, int rows,
                                            int cols) {
    const float inv_col = 1.0f / *col_scale;
    size_t n = (size_t)rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int r = (int)(i / cols), c = (int)(i % cols);
        float v = __fmul_rn(__fmul_rn(__int2float_rn(acc[i]), 1.0f / row_scales[r]), inv_col);
        if (bias) v = __fadd_rn(v, __bfloat162float(bias[c]));
        out[i] = __float2bfloat16_rn(v);
    }
}

// ---------------------------------------------------------------------------------------------
// Launchers (every launch checked; sizes validated with a clear message)

static inline int quant_grid_1d(size_t n, int block) {
    size_t blocks = (n + block - 1) / block;
    return (int)(blocks < 65536 ? (blocks ? blocks : 1) : 65536);   // grid-stride loops cover the rest
}

template <typename Tin>
static inline void quant_cast_gpu(uint8_t *out, float *amax, const Tin *in, size_t n, const float *scale,
                              quant_target target, cudaStream_t stream) {
    quant_cast_kernel<<<quant_grid_1d(n, 256), 256, 0, stream>>>(out, amax, in, n, scale, target);
    quant_cuda_check(cudaGetLastError());
}

// *amax = max |in| (this zeroes it first).
template <typename Tin>
static inline void quant_amax_gpu(float *amax, const Tin *in, size_t n, cudaStream_t stream) {
    quant_cuda_check(cudaMemsetAsync(amax, 0, sizeof(float), stream));
    quant_amax_kernel<<<quant_grid_1d(n, 256), 256, 0, stream>>>(amax, in, n);
    quant_cuda_check(cudaGetLastError());
}

static inline void quant_scale_from_amax_gpu(float *scale, float *inv_scale, const float *amax, quant_target target,
                                         quant_scale_mode mode, cudaStream_t stream) {
    quant_scale_kernel<<<1, 1, 0, stream>>>(scale, inv_scale, amax, quant_target_max(target), mode);
    quant_cuda_check(cudaGetLastError());
}

template <typename Tin>
static inline void quant_transpose_gpu(uint8_t *q, uint8_t *qt, float *amax, const Tin *x, int rows, int cols,
                                   const float *scale, quant_target target, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) die("quant_transpose_gpu: bad shape %d x %d", rows, cols);
    int tiles_y = (rows + QUANT_TILE - 1) / QUANT_TILE;
    if (tiles_y > 65535) die("quant_transpose_gpu: %d rows exceed the grid limit of %d", rows, 65535 * QUANT_TILE);
    dim3 grid((cols + QUANT_TILE - 1) / QUANT_TILE, tiles_y), block(QUANT_TILE, QUANT_TILE_ROWS);
    quant_transpose_kernel<<<grid, block, 0, stream>>>(q, qt, amax, x, rows, cols, scale, target);
    quant_cuda_check(cudaGetLastError());
}

template <typename Tin>
static inline void int8_quantize_rows_gpu(int8_t *q, float *scales, const Tin *x, int rows, int cols,
                                          quant_scale_mode mode, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) die("int8_quantize_rows_gpu: bad shape %d x %d", rows, cols);
    int8_quantize_rows_kernel<<<rows, 256, 0, stream>>>(q, scales, x, cols, mode);
    quant_cuda_check(cudaGetLastError());
}

static inline void int8_dequantize_bias_gpu(__nv_bfloat16 *out, const int32_t *acc, const float *row_scales,
                                            const float *col_scale, const __nv_bfloat16 *bias, int rows, int cols,
                                            cudaStream_t stream) {
    int8_dequantize_bias_kernel<<<quant_grid_1d((size_t)rows * cols, 256), 256, 0, stream>>>(
        out, acc, row_scales, col_scale, bias, rows, cols);
    quant_cuda_check(cudaGetLastError());
}

#endif
