// GPU quantization kernels for the FP8 and int8 matmuls: casts to E4M3/E5M2 with a scale, a fused
// quantize-and-transpose that also produces the amax, amax and scale computation on the device,
// int8 row-wise quantization, and the dequantize-with-bias epilogue of an int8 GEMM.
//
// STATUS: verified on an H100 at commit 7c74e66 (2026-11-23) and, with the casts that compute
// their scale from an amax (QuantScale, 2026-11-24), on an H200 at c95ef56 (2026-11-27;
// dev/gpu_report.md). dev/cuda/quant.cu checks every kernel against llmc/quant.h byte for byte,
// and dev/cuda/matmul_lowp.cu the int8 and FP8 GEMM paths. The transpose kernel's column sums
// (2026-11-27) and its loads issued before its conversions (48 registers and 5 CTAs an SM, against
// 40 and 6 before, for two 16-byte loads a thread in flight instead of one; 2026-11-27) have run
// only in the CPU emulator (dev/emu), bit for bit against a host replay; so has its elementwise op
// with a bf16 output (2026-11-28: llmc/gelu.cuh's forward with FP8 codes).
//
// Conventions (the same as llmc/quant.h, whose scalar functions the CPU twin uses):
//   - a scale is the multiplier before the cast: q = Q(x * scale); the GEMM dequantizes with
//     1/scale (cuBLASLt's A/B scale pointers hold 1/scale). Scales live in device memory and are
//     read by the kernels through pointers, so neither current nor delayed scaling syncs the host.
//   - amax outputs are max |x| of the unscaled input, combined across blocks with an integer
//     atomicMax on the fp32 bit pattern (valid because |x| >= 0; NaN patterns order above +Inf, so
//     a NaN propagates). The caller zeroes an amax before the kernels that accumulate into it.
//   - a cast takes its scale as a QuantScale: given (a scale already in device memory), or from
//     an amax that an earlier kernel finished (current scaling), in which case the cast computes
//     the scale itself and stores it with its inverse: no one-thread scale kernel between them.
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

#include "launch.cuh"
#include "quant.h"
#include "utils.h"

#define quant_cuda_check(call) quant_cuda_check_at((call), #call, __FILE__, __LINE__)
static inline void quant_cuda_check_at(cudaError_t err, const char *what, const char *file, int line) {
    if (err != cudaSuccess) die("CUDA error at %s:%d: %s: %s", file, line, what, cudaGetErrorString(err));
}

// What a quantizing kernel writes: one byte per element, an FP8 code or an int8 (two's complement).
typedef enum { QUANT_TO_E4M3 = 0, QUANT_TO_E5M2 = 1, QUANT_TO_INT8 = 2 } quant_target;

static inline QUANT_HOSTDEV float quant_target_max(quant_target t) {
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

// The scale q = Q(x * s) of a cast. Given: s = *scale. From an amax (current scaling):
// s = quant_scale(*amax, qmax of the cast's target, mode), computed by every thread from the amax
// that an earlier kernel finished, and stored with its inverse (the GEMM's dequantization
// multiplier) by thread 0 of block (0, 0) for the kernels that follow. No thread of that cast
// reads *scale, so the store races with nothing.
// kept (given scales only; NULL: none): a device flag that an earlier kernel set to nonzero where
// the cast's outputs already hold its codes (llmc/matmul_lowp.cuh's kept weight codes); every block
// of the cast then returns at once, reading and writing nothing else.
typedef struct {
    float *scale;           // given: read; from an amax: written
    float *inv_scale;       // from an amax: written (1 / scale); given: unused
    const float *amax;      // NULL: the scale is given
    quant_scale_mode mode;  // from an amax: how quant_scale rounds it (power of two or exact)
    const float *kept;      // NULL, or nonzero *kept: the outputs are already written
} QuantScale;

static inline QuantScale quant_scale_given(float *scale, const float *kept = nullptr) {
    return QuantScale{scale, nullptr, nullptr, QUANT_SCALE_POW2, kept};
}
static inline QuantScale quant_scale_of_amax(float *scale, float *inv_scale, const float *amax, quant_scale_mode mode) {
    return QuantScale{scale, inv_scale, amax, mode, nullptr};
}

__device__ __forceinline__ bool quant_outputs_kept(const QuantScale &qs) { return qs.kept && *qs.kept != 0.0f; }

__device__ __forceinline__ float quant_scale_resolve(const QuantScale &qs, quant_target t) {
    if (!qs.amax) return *qs.scale;
    const float s = quant_scale(*qs.amax, quant_target_max(t), qs.mode);
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) *qs.scale = s, *qs.inv_scale = 1.0f / s;
    return s;
}

// Where a kernel that produces a tensor (rows, cols) also writes its codes, in the same pass as its
// own output, instead of a cast reading that output back (llmc/layernorm.cuh's forward, llmc/
// gelu.cuh's forward and backward): q (rows, cols) and/or qt (cols, rows) (NULL: not written),
// Q(x * *scale) with a scale that exists before the tensor does (delayed scaling), amax (NULL:
// none) accumulating max |x| like a cast's, and colsum (NULL: none; only the producers built on
// quant_transpose_kernel write it) its column sums by tile row, as that kernel's.
typedef struct {
    uint8_t *q, *qt;
    float *scale;
    float *amax;
    quant_target target;
    float *colsum;
} QuantCodesOut;

// Bits of |x|, ordered like the values (and NaN above Inf).
__device__ __forceinline__ unsigned int quant_abs_bits(float x) { return __float_as_uint(x) & 0x7FFFFFFFu; }

// Vector access. These kernels are memory-bound: each thread moves 8 consecutive elements with one
// 16-byte load of bf16 (two of fp32) and one 8-byte store of codes, so that enough bytes are in
// flight to reach DRAM bandwidth (one 2-byte load per thread reaches a fraction of it). A tensor
// whose pointers are not aligned for that, or whose length is not a multiple of 8, takes the
// one-element path for the elements that do not fit; the bytes written are the same.
__device__ __forceinline__ void quant_load8(float v[8], const __nv_bfloat16 *p) {
    const uint4 raw = *reinterpret_cast<const uint4 *>(p);
    const __nv_bfloat162 *pairs = reinterpret_cast<const __nv_bfloat162 *>(&raw);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const float2 f = __bfloat1622float2(pairs[k]);
        v[2 * k] = f.x;
        v[2 * k + 1] = f.y;
    }
}
__device__ __forceinline__ void quant_load8(float v[8], const float *p) {
    const float4 a = reinterpret_cast<const float4 *>(p)[0], b = reinterpret_cast<const float4 *>(p)[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
__device__ __forceinline__ void quant_store8(uint8_t *p, const uint8_t b[8]) {
    uint2 w;
    w.x = b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    w.y = b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24;
    *reinterpret_cast<uint2 *>(p) = w;
}
__device__ __forceinline__ bool quant_aligned(const void *p, int bytes) { return (uintptr_t)p % bytes == 0; }

// Groups of 8 elements that a flat kernel handles with vector accesses: all whole groups when the
// input is 16-byte and the output (if any) 8-byte aligned, none otherwise.
__device__ __forceinline__ size_t quant_vector_groups(const void *in, const uint8_t *out, size_t n) {
    return quant_aligned(in, 16) && (out == nullptr || quant_aligned(out, 8)) ? n / 8 : 0;
}

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
// Grid-stride over groups of 8 elements (see quant_load8), then the remainder one by one. GROUPS > 1
// loads that many groups, a grid stride apart, before converting them (more loads in flight per
// thread, on a grid GROUPS times smaller): the same groups and bytes as GROUPS = 1, which the
// trainer uses until dev/cuda/quant's timings (both, side by side) show the other faster.
template <typename Tin, int GROUPS>
__global__ void quant_cast_kernel(uint8_t *__restrict__ out, float *amax, const Tin *__restrict__ in, size_t n,
                                  QuantScale scale, quant_target target) {
    if (quant_outputs_kept(scale)) return;
    const float s = quant_scale_resolve(scale, target);
    const size_t first = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    const size_t groups = quant_vector_groups(in, out, n);
    unsigned int bits = 0;
    for (size_t g0 = first; g0 < groups; g0 += stride * GROUPS) {
        float x[GROUPS][8];
#pragma unroll
        for (int u = 0; u < GROUPS; u++)
            if (g0 + u * stride < groups) quant_load8(x[u], in + 8 * (g0 + u * stride));
#pragma unroll
        for (int u = 0; u < GROUPS; u++)
            if (g0 + u * stride < groups) {
                uint8_t b[8];
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    b[k] = quant_to_byte(x[u][k], s, target);
                    bits = max(bits, quant_abs_bits(x[u][k]));
                }
                quant_store8(out + 8 * (g0 + u * stride), b);
            }
    }
    for (size_t i = 8 * groups + first; i < n; i += stride) {
        const float x = quant_load(in[i]);
        out[i] = quant_to_byte(x, s, target);
        bits = max(bits, quant_abs_bits(x));
    }
    if (amax) quant_block_amax(amax, bits);
}

// max |in| over a contiguous tensor, accumulated into *amax. Same traversal as the cast.
template <typename Tin>
__global__ void quant_amax_kernel(float *amax, const Tin *__restrict__ in, size_t n) {
    const size_t first = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    const size_t groups = quant_vector_groups(in, nullptr, n);
    unsigned int bits = 0;
    for (size_t g = first; g < groups; g += stride) {
        float x[8];
        quant_load8(x, in + 8 * g);
#pragma unroll
        for (int k = 0; k < 8; k++) bits = max(bits, quant_abs_bits(x[k]));
    }
    for (size_t i = 8 * groups + first; i < n; i += stride) bits = max(bits, quant_abs_bits(quant_load(in[i])));
    quant_block_amax(amax, bits);
}

// The elementwise op of quant_transpose_kernel by default: none. An op is v = op(x, x2), with x2 the
// element of the kernel's second input where Op::binary (0 otherwise, and the input not read).
struct QuantIdentity {
    static constexpr bool binary = false;
    __device__ __forceinline__ float operator()(float x, float) const { return x; }
};

// Fused quantize and transpose of v = op(x, x2), x (rows, cols) row-major and x2 (rows, cols) bf16
// the op's second input (Op::binary; else unused) (op: QuantIdentity, v = x, or an elementwise
// function whose results are bf16 values, such as llmc/gelu.cuh's forward and backward):
//   y  (rows, cols) row-major bf16: y[r * cols + c] = v[r, c]          (optional, may be NULL)
//   q  (rows, cols) row-major: q[r * cols + c]  = Q(v[r, c] * scale)   (optional, may be NULL)
//   qt (cols, rows) row-major: qt[c * rows + r] = the same byte          (optional, may be NULL)
//   amax (optional) accumulates max |v|;
//   colsum (optional) (ceil(rows / 64), cols) fp32: colsum[t][c] = the sum of v[r, c] over tile row
//   t's 64 rows (the bias gradient's partial sums, llmc/matmul_lowp.cuh; colsum_finish adds them).
// Tiling: a block of 256 threads owns a 64 x 64 tile. Pass 1 reads it as 64 rows x 8 groups of 8
// columns (two groups per thread, both 16-byte loads along x's rows issued before either is
// converted; q written 8 bytes at a time, y 16) and keeps the codes in shared memory. Pass 2 reads the
// tile back as 64 columns x 8 groups of 8 rows, so that each thread writes 8 consecutive bytes of
// one qt row and a warp covers 4 qt rows
// with 64 contiguous bytes each. Groups cut by the tensor's edge, or in a tensor whose rows
// (pass 1) or columns (pass 2) are not 8-aligned, go one element at a time.
// Shared layout: tile row r holds its 8 column groups in the order g ^ (r / 8) (quant_tile_col).
// In pass 2 a warp reads one byte from each of 8 rows 8 apart (rows 8j, j = 0..7); unswizzled,
// 8 rows 512 B apart would share one bank; swizzled, row 8j's byte sits 8 (g ^ j) bytes into its
// row, so the 8 reads fall in 8 different banks.
// Column sums, in a fixed order (deterministic): thread g of pass 1 holds rows g/8 and g/8 + 32 of
// column group g%8 and adds them in that order; warp w holds rows 4w..4w+3 of each group (lanes
// c, c+8, c+16, c+24), which two shuffles add (lane + (lane ^ 8), then + the pair ^ 16); the
// 8 warps' sums meet in shared memory and one thread per column adds them in warp order.
#define QUANT_TILE 64
#define QUANT_TILE_THREADS 256
__host__ __device__ __forceinline__ int quant_tile_col(int r, int c) { return (((c >> 3) ^ ((r >> 3) & 7)) << 3) | (c & 7); }
template <typename Tin, typename Op>
__global__ void __launch_bounds__(QUANT_TILE_THREADS)
quant_transpose_kernel(__nv_bfloat16 *y, uint8_t *q, uint8_t *qt, float *amax, float *colsum, const Tin *__restrict__ x,
                       const __nv_bfloat16 *__restrict__ x2, int rows, int cols, QuantScale scale,
                       quant_target target, Op op) {
    constexpr int GROUPS = QUANT_TILE * QUANT_TILE / 8;
    __shared__ __align__(8) uint8_t tile[QUANT_TILE][QUANT_TILE];  // swizzled: quant_tile_col
    __shared__ float warp_colsum[QUANT_TILE_THREADS / 32][QUANT_TILE];
    if (quant_outputs_kept(scale)) return;
    const float s = quant_scale_resolve(scale, target);
    const int row0 = blockIdx.y * QUANT_TILE, col0 = blockIdx.x * QUANT_TILE;
    const bool vector_rows = cols % 8 == 0 && quant_aligned(x, 16) && (q == nullptr || quant_aligned(q, 8)) &&
                             (y == nullptr || quant_aligned(y, 16)) && (!Op::binary || quant_aligned(x2, 16));
    unsigned int bits = 0;
    float sum[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};  // this thread's rows of its 8 columns
    // Pass 1: the thread's groups threadIdx.x + 256 u. Their 16-byte loads are all issued before
    // the first is converted, so that they are in flight together (one at a time, a block would
    // wait for memory twice before its barrier).
    constexpr int PER_THREAD = GROUPS / QUANT_TILE_THREADS;
    float v[PER_THREAD][8], v2[Op::binary ? PER_THREAD : 1][8];
#pragma unroll
    for (int u = 0; u < PER_THREAD; u++) {
        const int g = threadIdx.x + u * QUANT_TILE_THREADS, row = row0 + g / 8, col = col0 + g % 8 * 8;
        if (row < rows && vector_rows && col + 8 <= cols) {
            quant_load8(v[u], x + (size_t)row * cols + col);
            if constexpr (Op::binary) quant_load8(v2[u], x2 + (size_t)row * cols + col);
        }
    }
#pragma unroll
    for (int u = 0; u < PER_THREAD; u++) {
        const int g = threadIdx.x + u * QUANT_TILE_THREADS;
        const int r = g / 8, c = g % 8 * 8, row = row0 + r, col = col0 + c;
        if (row >= rows) continue;
        const size_t at = (size_t)row * cols + col;
        uint8_t b[8];
        if (vector_rows && col + 8 <= cols) {
            __align__(16) __nv_bfloat16 out[8];
#pragma unroll
            for (int k = 0; k < 8; k++) {
                const float e = op(v[u][k], Op::binary ? v2[u][k] : 0.0f);
                out[k] = __float2bfloat16_rn(e);
                b[k] = quant_to_byte(e, s, target);
                bits = max(bits, quant_abs_bits(e));
                sum[k] += e;
            }
            if (q) quant_store8(q + at, b);
            if (y) *reinterpret_cast<uint4 *>(y + at) = *reinterpret_cast<const uint4 *>(out);
        } else {
#pragma unroll
            for (int k = 0; k < 8; k++) {
                b[k] = 0;
                if (col + k >= cols) continue;
                const float e = op(quant_load(x[at + k]), Op::binary ? quant_load(x2[at + k]) : 0.0f);
                b[k] = quant_to_byte(e, s, target);
                bits = max(bits, quant_abs_bits(e));
                sum[k] += e;
                if (q) q[at + k] = b[k];
                if (y) y[at + k] = __float2bfloat16_rn(e);
            }
        }
        quant_store8(&tile[r][quant_tile_col(r, c)], b);
    }
    if (colsum) {
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            sum[k] += __shfl_xor_sync(0xFFFFFFFFu, sum[k], 8);
            sum[k] += __shfl_xor_sync(0xFFFFFFFFu, sum[k], 16);
            if (lane < 8) warp_colsum[warp][lane * 8 + k] = sum[k];
        }
    }
    if (amax) quant_block_amax(amax, bits);   // contains __syncthreads(), which also publishes the tile
    else __syncthreads();                     // (and the warps' column sums)
    if (colsum && threadIdx.x < QUANT_TILE && col0 + (int)threadIdx.x < cols) {
        float total = 0.0f;
#pragma unroll
        for (int w = 0; w < QUANT_TILE_THREADS / 32; w++) total += warp_colsum[w][threadIdx.x];
        colsum[(size_t)blockIdx.y * cols + col0 + threadIdx.x] = total;
    }
    if (!qt) return;
    const bool vector_cols = rows % 8 == 0 && quant_aligned(qt, 8);
    for (int g = threadIdx.x; g < GROUPS; g += QUANT_TILE_THREADS) {
        const int c = g / 8, r = g % 8 * 8, col = col0 + c, row = row0 + r;
        if (col >= cols) continue;
        uint8_t b[8];
#pragma unroll
        for (int k = 0; k < 8; k++) b[k] = tile[r + k][quant_tile_col(r + k, c)];
        uint8_t *dst = qt + (size_t)col * rows + row;
        if (vector_cols && row + 8 <= rows) {
            quant_store8(dst, b);
        } else {
#pragma unroll
            for (int k = 0; k < 8; k++)
                if (row + k < rows) dst[k] = b[k];
        }
    }
}

// The codes of a bf16 block that a kernel holds in shared memory (tile, row r at tile + r * ld; its
// first `valid` rows, a multiple of 64): rows row0.. (row0 % 64 == 0) and columns col0..col0+W-1 of
// a (rows, cols) tensor, written as quant_transpose_kernel writes the whole tensor: codes.q,
// codes.qt, and codes.colsum[t][c] for its 64-row tiles t, each column summed in that kernel's
// order (with s_i = (0 + x[i]) + x[i + 32] over the tile's rows i < 32, T_w = (s_4w + s_4w+1) +
// (s_4w+2 + s_4w+3), the sum is (((0 + T_0) + T_1) + ...) + T_7), so that the bias gradient keeps
// its bits. Returns the bits of this thread's max |x| for quant_block_amax, which the caller runs
// once for all its blocks. NTHREADS threads of the CTA call it, after a barrier that published the
// tile; it writes global memory only.
template <int W, int NTHREADS>
__device__ __forceinline__ unsigned int quant_tile_codes(const __nv_bfloat16 *tile, int ld, int valid,
                                                         const QuantCodesOut &codes, int row0, int col0, int rows,
                                                         int cols) {
    static_assert(W % 8 == 0, "8 columns a thread");
    const float s = *codes.scale;
    unsigned int bits = 0;
    for (int g = threadIdx.x; g < valid * (W / 8); g += NTHREADS) {  // q: 8 columns of a row
        const int r = g / (W / 8), c = g % (W / 8) * 8;
        uint8_t b[8];
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const float v = __bfloat162float(tile[r * ld + c + k]);
            b[k] = quant_to_byte(v, s, codes.target);
            bits = max(bits, quant_abs_bits(v));
        }
        quant_store8(codes.q + (size_t)(row0 + r) * cols + col0 + c, b);
    }
    for (int g = threadIdx.x; g < W * (valid / 8); g += NTHREADS) {  // qt: 8 rows of a column
        const int c = g / (valid / 8), r = g % (valid / 8) * 8;
        uint8_t b[8];
#pragma unroll
        for (int k = 0; k < 8; k++) b[k] = quant_to_byte(__bfloat162float(tile[(r + k) * ld + c]), s, codes.target);
        quant_store8(codes.qt + (size_t)(col0 + c) * rows + row0 + r, b);
    }
    for (int g = threadIdx.x; g < (valid / 64) * W; g += NTHREADS) {  // column sums of a 64-row tile
        const int t = g / W, c = g % W;
        const __nv_bfloat16 *x = tile + t * 64 * ld + c;
        float total = 0.0f;
        for (int w = 0; w < 8; w++) {
            float s4[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int r = 4 * w + i;
                s4[i] = 0.0f;
                s4[i] += __bfloat162float(x[r * ld]);
                s4[i] += __bfloat162float(x[(r + 32) * ld]);
            }
            total += (s4[0] + s4[1]) + (s4[2] + s4[3]);
        }
        codes.colsum[(size_t)(row0 / 64 + t) * cols + col0 + c] = total;
    }
    return bits;
}

// Row-wise int8 of x (rows, cols) row-major: one block per row; the block reduces the row's amax,
// every thread computes the same scale, then quantizes its strided share of the row. Both passes
// go 8 elements at a time over the part of the row whose pointers are aligned for it, and one
// element at a time over the rest.
template <typename Tin>
__global__ void int8_quantize_rows_kernel(int8_t *q, float *scales, const Tin *__restrict__ x, int cols,
                                          quant_scale_mode mode) {
    __shared__ unsigned int warp_max[32];
    __shared__ float row_scale;
    const Tin *xr = x + (size_t)blockIdx.x * cols;
    int8_t *qr = q + (size_t)blockIdx.x * cols;
    const int groups = (int)quant_vector_groups(xr, (const uint8_t *)qr, (size_t)cols);
    unsigned int bits = 0;
    for (int g = threadIdx.x; g < groups; g += blockDim.x) {
        float v[8];
        quant_load8(v, xr + 8 * g);
#pragma unroll
        for (int k = 0; k < 8; k++) bits = max(bits, quant_abs_bits(v[k]));
    }
    for (int c = 8 * groups + threadIdx.x; c < cols; c += blockDim.x) bits = max(bits, quant_abs_bits(quant_load(xr[c])));
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
    for (int g = threadIdx.x; g < groups; g += blockDim.x) {
        float v[8];
        uint8_t b[8];
        quant_load8(v, xr + 8 * g);
#pragma unroll
        for (int k = 0; k < 8; k++) b[k] = (uint8_t)int8_from_float(v[k], s);
        quant_store8((uint8_t *)qr + 8 * g, b);
    }
    for (int c = 8 * groups + threadIdx.x; c < cols; c += blockDim.x) qr[c] = int8_from_float(quant_load(xr[c]), s);
}

// Epilogue of an int8 GEMM acc = qa @ qb^T (int32, (rows, cols) row-major, exact):
//   out[r, c] = bf16(acc[r, c] * (1 / row_scales[r]) * (1 / *col_scale) + bias[c])
// in this order, each step rounded in fp32 (no FMA contraction, so the CPU can replay it exactly);
// with power-of-two scales the two products are exact and only the bias add and bf16 round.
// Grid: y strides over rows, x over groups of 8 columns (two 16-byte loads of acc, one of bias,
// one 16-byte store when cols % 8 == 0 and the pointers are aligned; element by element otherwise).
__global__ void int8_dequantize_bias_kernel(__nv_bfloat16 *__restrict__ out, const int32_t *__restrict__ acc,
                                            const float *row_scales, const float *col_scale,
                                            const __nv_bfloat16 *__restrict__ bias, int rows, int cols) {
    const float inv_col = 1.0f / *col_scale;
    const int groups = (cols + 7) / 8;
    const bool vector = cols % 8 == 0 && quant_aligned(acc, 16) && quant_aligned(out, 16) &&
                        (bias == nullptr || quant_aligned(bias, 16));
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        const float inv_row = 1.0f / row_scales[r];
        for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += gridDim.x * blockDim.x) {
            const int c = 8 * g;
            const size_t at = (size_t)r * cols + c;
            if (vector) {
                const int4 a0 = reinterpret_cast<const int4 *>(acc + at)[0], a1 = reinterpret_cast<const int4 *>(acc + at)[1];
                const int a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
                float bv[8] = {0};
                if (bias) quant_load8(bv, bias + c);
                uint4 packed;
                __nv_bfloat162 *pairs = reinterpret_cast<__nv_bfloat162 *>(&packed);
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    float lo = __fmul_rn(__fmul_rn(__int2float_rn(a[2 * k]), inv_row), inv_col);
                    float hi = __fmul_rn(__fmul_rn(__int2float_rn(a[2 * k + 1]), inv_row), inv_col);
                    if (bias) lo = __fadd_rn(lo, bv[2 * k]), hi = __fadd_rn(hi, bv[2 * k + 1]);
                    pairs[k] = __halves2bfloat162(__float2bfloat16_rn(lo), __float2bfloat16_rn(hi));
                }
                *reinterpret_cast<uint4 *>(out + at) = packed;
            } else {
                for (int k = 0; k < 8 && c + k < cols; k++) {
                    float v = __fmul_rn(__fmul_rn(__int2float_rn(acc[at + k]), inv_row), inv_col);
                    if (bias) v = __fadd_rn(v, __bfloat162float(bias[c + k]));
                    out[at + k] = __float2bfloat16_rn(v);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Launchers (every launch checked; sizes validated with a clear message)

// Blocks for a flat kernel over n elements taken 8 at a time (see quant_load8), at most 65536:
// the grid-stride loops cover the rest.
static inline int quant_grid_1d(size_t n, int block) {
    size_t blocks = ((n + 7) / 8 + block - 1) / block;
    return (int)(blocks < 65536 ? (blocks ? blocks : 1) : 65536);
}

template <int GROUPS = 1, typename Tin>
static inline void quant_cast_gpu(uint8_t *out, float *amax, const Tin *in, size_t n, QuantScale scale,
                                  quant_target target, cudaStream_t stream) {
    LLMC_LAUNCH(quant_grid_1d(n, 256 * GROUPS), 256, 0, stream, quant_cast_kernel<Tin, GROUPS>)(
        out, amax, in, n, scale, target);
    quant_cuda_check(cudaGetLastError());
}

// *amax = max(*amax, max |in|): the caller zeroes *amax first (the trainer zeroes all its amaxes
// in one launch, llmc/matmul_lowp.cuh's lowp_begin_forward).
template <typename Tin>
static inline void quant_amax_gpu(float *amax, const Tin *in, size_t n, cudaStream_t stream) {
    LLMC_LAUNCH(quant_grid_1d(n, 256), 256, 0, stream, quant_amax_kernel<Tin>)(amax, in, n);
    quant_cuda_check(cudaGetLastError());
}

// Rows of the column sums quant_transpose_gpu writes for `rows` rows (one per tile row).
static inline int quant_colsum_rows(int rows) { return (rows + QUANT_TILE - 1) / QUANT_TILE; }

// quant_transpose_kernel with an elementwise op (see there); y (may be NULL): op's output in bf16;
// x2: op's second input (Op::binary; else NULL).
template <typename Tin, typename Op>
static inline void quant_op_transpose_gpu(__nv_bfloat16 *y, uint8_t *q, uint8_t *qt, float *amax, float *colsum,
                                          const Tin *x, const __nv_bfloat16 *x2, int rows, int cols, QuantScale scale,
                                          quant_target target, Op op, cudaStream_t stream) {
    if (Op::binary != (x2 != nullptr))
        die("quant_op_transpose_gpu: the op's second input is %s", x2 ? "unused" : "missing");
    if (rows <= 0 || cols <= 0) die("quant_transpose_gpu: bad shape %d x %d", rows, cols);
    const int tiles_y = quant_colsum_rows(rows);
    if (tiles_y > 65535) die("quant_transpose_gpu: %d rows exceed the grid limit of %d", rows, 65535 * QUANT_TILE);
    dim3 grid((cols + QUANT_TILE - 1) / QUANT_TILE, tiles_y);
    LLMC_LAUNCH(grid, QUANT_TILE_THREADS, 0, stream, quant_transpose_kernel<Tin, Op>)(
        y, q, qt, amax, colsum, x, x2, rows, cols, scale, target, op);
    quant_cuda_check(cudaGetLastError());
}

// colsum (may be NULL): quant_colsum_rows(rows) x cols floats (see quant_transpose_kernel).
template <typename Tin>
static inline void quant_transpose_gpu(uint8_t *q, uint8_t *qt, float *amax, float *colsum, const Tin *x, int rows,
                                       int cols, QuantScale scale, quant_target target, cudaStream_t stream) {
    quant_op_transpose_gpu((__nv_bfloat16 *)nullptr, q, qt, amax, colsum, x, (const __nv_bfloat16 *)nullptr, rows,
                           cols, scale, target, QuantIdentity{}, stream);
}

template <typename Tin>
static inline void int8_quantize_rows_gpu(int8_t *q, float *scales, const Tin *x, int rows, int cols,
                                          quant_scale_mode mode, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) die("int8_quantize_rows_gpu: bad shape %d x %d", rows, cols);
    LLMC_LAUNCH(rows, 256, 0, stream, int8_quantize_rows_kernel<Tin>)(q, scales, x, cols, mode);
    quant_cuda_check(cudaGetLastError());
}

static inline void int8_dequantize_bias_gpu(__nv_bfloat16 *out, const int32_t *acc, const float *row_scales,
                                            const float *col_scale, const __nv_bfloat16 *bias, int rows, int cols,
                                            cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) die("int8_dequantize_bias_gpu: bad shape %d x %d", rows, cols);
    // A thread per group of 8 columns, in blocks no wider than the row (768 columns: 96 threads),
    // so that narrow rows do not leave most of each block idle; y strides over rows.
    const int groups = (cols + 7) / 8, threads = groups < 256 ? (groups + 31) / 32 * 32 : 256;
    const dim3 grid((unsigned)((groups + threads - 1) / threads), rows < 65535 ? rows : 65535);
    LLMC_LAUNCH(grid, threads, 0, stream, int8_dequantize_bias_kernel)(
        out, acc, row_scales, col_scale, bias, rows, cols);
    quant_cuda_check(cudaGetLastError());
}

#endif
