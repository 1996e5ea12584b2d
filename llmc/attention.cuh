// Fused causal multi-head attention, forward and backward, bf16 in and out, fp32 accumulation,
// written by hand in the FlashAttention-2 manner with mma.sync tensor-core instructions (sm_80+).
// The T x T score matrix never reaches global memory: forward keeps only the per-row
// log-sum-exp, backward recomputes the probabilities tile by tile from it.
//
// The forward, and the backward at head size 64, also exist in wgmma versions for sm_90a
// (attention_forward_wgmma, attention_backward_wgmma; llmc/wgmma.cuh), verified on an H200 at
// c95ef56 (2026-11-27): the harness's checks against fp64, memcheck and racecheck clean, the
// trainer's test_gptcu tiny|d12 wgmma. The wgmma forward is 1.28x the mma.sync one there, its
// backward 0.79x; the trainer uses them under --attention wgmma, and the forward alone (with the
// mma.sync backward) under --attention wgmma-fwd (default mma). A warp-specialized wgmma forward
// (attention_forward_wgmma_ws: FlashAttention-3's, a producer warpgroup and mbarriers; NOT RUN on a
// GPU) runs under --attention wgmma-ws, with the warp-specialized backward below.
//
// STATUS: verified on an H100 at commit 7c74e66 (2026-11-23) and, with the HS 64 defaults set
// from that run (2 forward row tiles, backward capped for 3 CTAs per SM) and without the slower
// fused-dQ variant, on an H200 at c95ef56 (2026-11-27; dev/gpu_report.md): dev/cuda/attention.cu
// checks it against an fp64 CPU reference and for bit-reproducibility (memcheck and racecheck
// clean), and times it: correct, 0.65x the speed of PyTorch's SDPA at T 1024 HS 64 (forward +
// backward, H200). The harness's small cases also pass in the CPU emulator of dev/emu (t_44).
// The backward writing dqkv's FP8 codes instead of dqkv (attention_backward's codes, 2026-11-28)
// has NOT RUN on a GPU: in the emulator the harness gives the cast's bytes (mma.sync and wgmma).
//
// Layouts (all row-major, C = NH * HS):
//   qkv   bf16 (B, T, 3, NH, HS)  the fused qkv matmul output: each token's 3C channels are
//                                 [q | k | v], each split into NH heads of HS contiguous values
//   out   bf16 (B, T, NH, HS)     i.e. (B, T, C), ready for the output projection
//   lse   fp32 (B, NH, T)         natural-log log-sum-exp of each row of scaled scores
//   dqkv  bf16 (B, T, 3, NH, HS)  same layout as qkv; every element is written (no accumulation)
//   delta fp32 (B, NH, T)         backward scratch (attention_backward_scratch_bytes):
//                                 rowsum(dout * out)
// Math, with s = 1/sqrt(HS) and the causal mask j <= i:
//   S = s Q K^T, P = softmax(S), O = P V, lse_i = log sum_j exp(S_ij)
//   dV = P^T dO, dP = dO V^T, delta_i = sum_d dO_id O_id, dS = P * (dP - delta),
//   dQ = s dS K, dK = s dS^T Q
// Tiling: a CTA of 4 warps owns 64 rows (queries in forward and dQ, keys in dK/dV); each warp owns
// 16 of them, which are the M dimension of m16n8k16. The other operand streams through shared
// memory in tiles, double-buffered with cp.async so the next tile loads while this one computes.
// Tiles entirely above the diagonal are never visited; partial tiles (the diagonal, T not a
// multiple of the tile) are masked element by element, and rows >= T are zero-filled on load and
// never stored.
// Determinism: no atomics whose order varies. dK/dV come from one kernel that loops over query
// tiles, dQ from another that loops over key tiles (recomputing P, two extra matmuls), so every sum
// has a fixed order. attention_backward_reduce_dq (the trainer's --attention mma-rdq; NOT RUN on a
// GPU) makes dQ in the dK/dV kernel instead, each key block adding its share as integers in a
// fixed-point format (exact sums, so the order of the adds does not matter; see reduce_dq_tile), as
// do its wgmma versions (attention_backward_wgmma_reduce_dq, and attention_backward_wgmma_ws, whose
// kernel is warp-specialized: a producer warpgroup and mbarriers; NOT RUN on a GPU either).
#ifndef LLMC_ATTENTION_CUH
#define LLMC_ATTENTION_CUH

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <float.h>
#include <limits.h>
#include <string.h>
#include <algorithm>
#include <type_traits>
#include "cuda_common.cuh"
#include "launch.cuh"
#include "quant.cuh"
#include "utils.h"
#include "wgmma.cuh"

// ---------------------------------------------------------------------------------------------
// Error checking and the supported configurations

#define attention_cuda_check(call) attention_cuda_check_at((call), #call, __FILE__, __LINE__)
static inline void attention_cuda_check_at(cudaError_t err, const char *what, const char *file,
                                           int line) {
    if (err != cudaSuccess) die("CUDA error at %s:%d: %s: %s", file, line, what, cudaGetErrorString(err));
}

static inline bool attention_head_size_supported(int HS) { return HS == 64 || HS == 128; }

// The trainer calls this at startup: one clear message instead of a wrong answer later.
static inline void attention_require_supported(int NH, int HS) {
    if (!attention_head_size_supported(HS))
        die("attention: head size %d (C / NH with NH = %d) is not supported; supported head sizes: 64, 128",
            HS, NH);
    int device, major;
    attention_cuda_check(cudaGetDevice(&device));
    attention_cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (major < 8) die("attention: needs a GPU of compute capability 8.0 or newer (bf16 mma.sync), found %d.x", major);
}

// ---------------------------------------------------------------------------------------------
// PTX wrappers: cp.async, ldmatrix, mma.sync m16n8k16 bf16 -> fp32

namespace attention_detail {

constexpr int NWARPS = 4;
constexpr int NTHREADS = 32 * NWARPS;
constexpr int ROWS_PER_CTA = 16 * NWARPS;  // rows of the operand that stays resident (64)
constexpr int SMEM_PAD = 8;                // bf16 of padding per shared-memory row, see below
constexpr float LOG2E = 1.4426950408889634f;

// The (b, h) of this CTA, in a grid of cta_grid() (below): blockIdx.x the head within its group,
// blockIdx.y the block of rows (each kernel puts its block of most work at y 0), blockIdx.z the
// group.
__device__ __forceinline__ int cta_head() { return blockIdx.z * gridDim.x + blockIdx.x; }
__device__ __forceinline__ int grid_heads() { return gridDim.z * gridDim.x; }  // B NH

// Resident CTAs per SM that each kernel asks the register allocator for (__launch_bounds__'s
// second argument). 1 leaves the compiler free (HS 64: 168 registers forward with 1 row tile, 243
// with 2, 232-240 backward); a larger value caps the registers at 65536 / (128 x value) so that
// more CTAs hide more latency, at the price of a few spilled bytes (ptxas -v, HS 64: forward 4
// CTAs, 128 registers, 16 bytes spilled; backward 3 CTAs, 168 registers, 28 bytes spilled in dK/dV
// and 16 in dQ; HS 128 spills hundreds of bytes at any cap, so it stays at 1). The arithmetic is
// the same either way (the results are bit-identical); dev/cuda/attention.cu times both settings
// side by side. Measured on an H100 (2026-11-23, HS 64, B*T 16384, NH 32; dev/gpu_report.md): the
// backward at 3 CTAs is 5% faster than free (1.213 vs 1.278 ms at T 1024, 2.098 vs 2.220 at
// T 2048), so HS 64's backward asks for 3; the forward's gain from 4 CTAs (3%) is smaller than
// from 2 row tiles (forward_row_tiles below, 27%), and the two together are not measured, so it
// stays free.
template <int HS> __host__ __device__ constexpr int forward_min_ctas() { return 1; }
template <int HS> __host__ __device__ constexpr int backward_min_ctas() { return HS == 64 ? 3 : 1; }

// Shared-memory tiles are [rows][HS + 8] bf16. The row stride, 144 B (HS 64) or 272 B (HS 128),
// is an odd multiple of 16 B, so the 8 row addresses of one ldmatrix 8x8 matrix fall in 8
// different 16 B bank groups: conflict-free without a swizzle.
template <int HS> __host__ __device__ constexpr int ld() { return HS + SMEM_PAD; }

// The instructions (the CPU emulator of dev/emu supplies its own versions of these wrappers).
#ifndef LLMC_EMULATE_PTX
__device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

// 16 B global -> shared copy that bypasses L1; when !valid it reads nothing and writes zeros.
__device__ __forceinline__ void cp_async_16(void *dst, const void *src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0));
}
// 4 B global -> shared copy (one float), zeros when !valid: streams lse and delta beside the tiles.
__device__ __forceinline__ void cp_async_4(void *dst, const void *src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(smem_addr(dst)), "l"(src), "r"(valid ? 4 : 0));
}
// (The memory clobbers keep the compiler from moving shared-memory accesses across a commit or a
// wait, whatever barrier happens to follow.)
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int PENDING> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

// A plain store to shared memory whose next reader is the async proxy (a wgmma operand, a bulk
// reduction's source), which sees it once this thread has passed fence.proxy.async and a barrier
// orders it before the read. (The CPU emulator's version also marks the bytes unfenced until then,
// so that a read the writer's fence does not cover fails there.)
template <typename T> __device__ __forceinline__ void store_for_async_proxy(T *dst, T value) { *dst = value; }

// ldmatrix.x4: lanes 8m..8m+7 give the row addresses of 8x8 matrix m; register m of every lane
// receives row lane/4, columns 2(lane%4), 2(lane%4)+1 of matrix m (of its transpose with .trans).
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

// c += a b for a 16x16 bf16 A (row-major fragment), a 16x8 bf16 B (column fragment), fp32 C.
// Fragments, with g = lane/4 and t = lane%4:
//   A: a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..)   [row, k]
//   B: b0 = (2t..2t+1, g), b1 = (2t+8.., g)                                         [k, col]
//   C: c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1)                                [row, col]
__device__ __forceinline__ void mma_16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 2^x as one SFU instruction (ex2.approx.ftz). exp2f() without -use_fast_math wraps the same
// instruction in three FP32 instructions that produce subnormal results (2^x < 2^-126); here those
// would be probabilities too small to change an fp32 sum of terms >= 1 or any product that
// follows, and the FP32 pipe is what the softmax of head size 64 runs short of.
__device__ __forceinline__ float exp2_ftz(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// Integer adds into global memory that return nothing, for the backward's dQ by integer reduction
// (reduce_dq_tile): integer addition is associative, so the sums do not depend on the order in
// which CTAs add. red.global: one value from a register. The bulk reduction (sm_90): the async
// proxy adds `bytes` of shared memory (bytes % 16 == 0, both addresses 16-byte aligned) as u32 to
// global memory; commit closes a group, wait_read<N>() returns when at most N groups still read
// their shared source (then the source may be rewritten, or the CTA exit; the adds complete before
// the grid does). Before sm_90 the issuing thread adds the values one by one instead (the same
// sums, nothing in flight; slow, so the host picks DQ_RED there).
__device__ __forceinline__ void red_add_u32(uint32_t *p, uint32_t v) {
    asm volatile("red.global.add.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void bulk_reduce_add_u32(void *dst, const void *src, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%0], [%1], %2;\n"
                 ::"l"(dst), "r"(smem_addr(src)), "r"(bytes) : "memory");
#else
    for (uint32_t i = 0; i < bytes / 4; i++) red_add_u32((uint32_t *)dst + i, ((const uint32_t *)src)[i]);
#endif
}
__device__ __forceinline__ void bulk_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}
template <int PENDING> __device__ __forceinline__ void bulk_wait_read() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(PENDING) : "memory");
#endif
}

// The barrier of the calling thread's warpgroup alone (named barrier 1 + warpgroup, 128 threads; 0
// is __syncthreads'): it orders the warpgroup's shared-memory accesses as __syncthreads orders the
// CTA's, and the other warpgroups go on.
__device__ __forceinline__ void warpgroup_sync() {
    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + (int)threadIdx.x / 128) : "memory");
}

// Named barrier `id` (1..15) of `count` threads, between groups of threads that play different
// parts: bar.sync waits for the count, bar.arrive adds this thread and goes on. Either orders the
// thread's earlier memory accesses before the barrier's completion, so a producer's stores reach a
// consumer that waits at the same barrier (the pattern of the CUDA programming guide's named
// barriers).
__device__ __forceinline__ void named_barrier_sync(int id, int count) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int count) {
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// mbarriers in shared memory (sm_90 for try_wait): init (one thread, before a __syncthreads) sets the
// arrivals each phase needs; arrive releases this thread's earlier accesses; wait(parity) returns
// once the phase of that parity has completed (acquire), polling try_wait, which itself suspends the
// thread for a while in hardware. A phase that never completes (a fault in a kernel's protocol)
// traps after MBAR_WAIT_LIMIT_NS of waiting, by the clock (a poll count would mean a time that
// depends on how long each try_wait suspends, and on slowdowns such as compute-sanitizer's), so
// that the launch fails with an error instead of hanging until whatever runs it is killed; a
// healthy wait here lasts microseconds. Every caller is a whole warp, and what follows a wait is
// often a .sync.aligned wgmma, which needs the warp converged: the lanes leave the loop on their
// own, so the wait ends with __syncwarp.
__device__ __forceinline__ void mbar_init(uint64_t *bar, int count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(smem_addr(bar))
                 : "memory");
#endif
}
#define MBAR_WAIT_LIMIT_NS 20000000000ull
__device__ __forceinline__ void mbar_wait(uint64_t *bar, int parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint64_t deadline = 0;  // set at the first look at the clock
    for (uint32_t polls = 1;; polls++) {
        uint32_t done;
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(smem_addr(bar)), "r"(parity)
                     : "memory");
        if (done) break;
        if (polls % 4096 == 0) {  // the clock now and then: a healthy wait has ended long before
            const uint64_t now = global_timer_ns();
            if (deadline == 0) deadline = now + MBAR_WAIT_LIMIT_NS;
            else if (now > deadline) __trap();
        }
    }
    __syncwarp();
#endif
}
#endif  // LLMC_EMULATE_PTX

// Two floats rounded to bf16 (nearest even), the first in the low half: one A-fragment register.
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    uint32_t u;
    memcpy(&u, &v, sizeof(u));
    return u;
}

// ---------------------------------------------------------------------------------------------
// Fragment loaders from a shared tile [rows][ld<HS>()] (row-major, contraction index = column
// for the first two, = row for the last).

// A fragment of rows r0..r0+15, columns k0..k0+15: matrices (rows +0/+8) x (cols +0/+8) in the
// order a0..a3, so lane l points at row r0 + l%16, column k0 + 8(l/16).
template <int HS>
__device__ __forceinline__ void load_a(uint32_t a[4], const __nv_bfloat16 *tile, int r0, int k0, int lane) {
    ldmatrix_x4(a, tile + (r0 + (lane & 15)) * ld<HS>() + k0 + (lane >> 4) * 8);
}

// B fragments for X^T where X is stored [n][k]: columns n0..n0+15 of the product (two n8 blocks),
// contraction k0..k0+15. Matrices: (n +0, k +0) (n +0, k +8) (n +8, k +0) (n +8, k +8), so
// b[0], b[1] serve n-block n0 and b[2], b[3] n-block n0+8.
template <int HS>
__device__ __forceinline__ void load_b_rows_are_n(uint32_t b[4], const __nv_bfloat16 *tile, int n0, int k0, int lane) {
    ldmatrix_x4(b, tile + (n0 + (lane & 7) + ((lane >> 4) << 3)) * ld<HS>() + k0 + ((lane >> 3) & 1) * 8);
}

// B fragments for X where X is stored [k][n] (contraction along rows), through .trans. Matrices:
// (k +0, n +0) (k +8, n +0) (k +0, n +8) (k +8, n +8); again b[0..1] for n0, b[2..3] for n0+8.
template <int HS>
__device__ __forceinline__ void load_b_rows_are_k(uint32_t b[4], const __nv_bfloat16 *tile, int k0, int n0, int lane) {
    ldmatrix_x4_trans(b, tile + (k0 + (lane & 7) + ((lane >> 3) & 1) * 8) * ld<HS>() + n0 + (lane >> 4) * 8);
}

// Both products below cover RT row tiles of 16 (acc[r], a[r]) per warp: each B fragment loaded from
// shared memory feeds 2 RT mma instructions, so more row tiles read shared memory less per FLOP.
// The sums run in the same order for every RT (the bits do not depend on it).

// acc[r] (16 x N) += A[r] (16 x K, in registers as K/16 fragments) * X, the contraction over the
// rows of a [K][N] tile (load_b_rows_are_k). Used for P V, P^T dO, dS^T Q, dS K.
template <int HS, int K, int N, int RT>
__device__ __forceinline__ void mma_a_regs_b_rows_k(float (*acc)[N / 8][4], const uint32_t (*a)[K / 16][4],
                                                    const __nv_bfloat16 *tile, int lane) {
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++)
#pragma unroll
        for (int nn = 0; nn < N / 16; nn++) {
            uint32_t b[4];
            load_b_rows_are_k<HS>(b, tile, kk * 16, nn * 16, lane);
#pragma unroll
            for (int r = 0; r < RT; r++) {
                mma_16816(acc[r][2 * nn], a[r][kk], b[0], b[1]);
                mma_16816(acc[r][2 * nn + 1], a[r][kk], b[2], b[3]);
            }
        }
}

// acc[r] (16 x N) = A[r] (16 x HS in registers) * X^T, X a [N][HS] tile (load_b_rows_are_n): scores.
template <int HS, int N, int RT>
__device__ __forceinline__ void mma_scores(float (*acc)[N / 8][4], const uint32_t (*a)[HS / 16][4],
                                           const __nv_bfloat16 *tile, int lane) {
#pragma unroll
    for (int r = 0; r < RT; r++)
#pragma unroll
        for (int i = 0; i < N / 8; i++) acc[r][i][0] = acc[r][i][1] = acc[r][i][2] = acc[r][i][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < HS / 16; kk++)
#pragma unroll
        for (int nn = 0; nn < N / 16; nn++) {
            uint32_t b[4];
            load_b_rows_are_n<HS>(b, tile, nn * 16, kk * 16, lane);
#pragma unroll
            for (int r = 0; r < RT; r++) {
                mma_16816(acc[r][2 * nn], a[r][kk], b[0], b[1]);
                mma_16816(acc[r][2 * nn + 1], a[r][kk], b[2], b[3]);
            }
        }
}

// Accumulator tile (16 x N fp32, C layout) -> A fragments (16 x N bf16): the C layout of n-blocks
// 2k and 2k+1 is exactly the A layout of contraction chunk k.
template <int N>
__device__ __forceinline__ void acc_to_a(uint32_t (*a)[4], const float (*acc)[4]) {
#pragma unroll
    for (int k = 0; k < N / 16; k++) {
        a[k][0] = pack_bf16x2(acc[2 * k][0], acc[2 * k][1]);
        a[k][1] = pack_bf16x2(acc[2 * k][2], acc[2 * k][3]);
        a[k][2] = pack_bf16x2(acc[2 * k + 1][0], acc[2 * k + 1][1]);
        a[k][3] = pack_bf16x2(acc[2 * k + 1][2], acc[2 * k + 1][3]);
    }
}

// Asynchronously copy rows row0..row0+ROWS-1 of one head (HS contiguous bf16 each, rows
// row_stride apart in global memory) into a shared tile; rows >= T become zeros. The tile is
// [ROWS][ld<HS>()] (padded, for ldmatrix) or, with SWIZZLED, wgmma's 128-byte swizzle
// (llmc/wgmma.cuh). THREADS threads share the copy, numbered tid (0..THREADS-1); UNROLL 1 keeps the
// loop (for a thread of few registers), else it is unrolled.
template <int ROWS, int HS, bool SWIZZLED = false, int THREADS = NTHREADS, int UNROLL = ROWS * HS / 8 / THREADS>
__device__ __forceinline__ void load_tile_async(__nv_bfloat16 *tile, const __nv_bfloat16 *head,
                                                int64_t row_stride, int row0, int T, int tid = threadIdx.x) {
    constexpr int CHUNKS_PER_ROW = HS / 8;  // 16 B chunks
    static_assert(ROWS * CHUNKS_PER_ROW % THREADS == 0, "every thread copies the same number of chunks");
#pragma unroll UNROLL
    for (int it = 0; it < ROWS * CHUNKS_PER_ROW / THREADS; it++) {
        const int c = tid + it * THREADS;
        const int r = c / CHUNKS_PER_ROW, col = (c % CHUNKS_PER_ROW) * 8;
        const bool valid = row0 + r < T;
        const __nv_bfloat16 *src = valid ? head + (int64_t)(row0 + r) * row_stride + col : head;
        const int dst = SWIZZLED ? (int)wgmma::sw128_offset(ROWS, r, col) / 2 : r * ld<HS>() + col;
        cp_async_16(tile + dst, src, valid);
    }
}

// Rows row0.. of K and V of one head into two tiles, each laid out as load_tile_async's.
template <int ROWS, int HS, bool SWIZZLED = false, int THREADS = NTHREADS>
__device__ __forceinline__ void load_kv_tiles_async(__nv_bfloat16 *k_tile, __nv_bfloat16 *v_tile, const __nv_bfloat16 *k_head,
                                                    const __nv_bfloat16 *v_head, int64_t row_stride, int row0, int T) {
    load_tile_async<ROWS, HS, SWIZZLED, THREADS>(k_tile, k_head, row_stride, row0, T);
    load_tile_async<ROWS, HS, SWIZZLED, THREADS>(v_tile, v_head, row_stride, row0, T);
}

// The loop of the mma.sync kernels over the streamed tiles first..n_tiles-1, double-buffered:
// the caller issued tile `first` into buffer 0 (its last cp.async group). Each iteration issues
// tile i + 1 into the other buffer (load(i + 1, buf ^ 1)), waits for tile i's copies, and after a
// barrier runs body(i, buf); a second barrier keeps buffer buf until every warp is done with it.
template <typename Load, typename Body>
__device__ __forceinline__ void for_each_streamed_tile(int first, int n_tiles, Load load, Body body) {
    for (int i = first; i < n_tiles; i++) {
        const int buf = (i - first) & 1;
        if (i + 1 < n_tiles) {
            load(i + 1, buf ^ 1);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        body(i, buf);
        __syncthreads();
    }
}

// Write a warp's 16 x HS fp32 accumulator, times `scale`, as bf16 rows of one head; rows >= T
// are skipped. row0 is the warp's first row.
template <int HS>
__device__ __forceinline__ void store_rows(__nv_bfloat16 *head, int64_t row_stride, int row0, int T,
                                           const float (*acc)[4], float scale_lo, float scale_hi, int lane) {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int half = 0; half < 2; half++) {
        const int row = row0 + g + 8 * half;
        if (row >= T) continue;
        const float scale = half ? scale_hi : scale_lo;
        __nv_bfloat16 *dst = head + (int64_t)row * row_stride + 2 * t;
#pragma unroll
        for (int n = 0; n < HS / 8; n++)
            *reinterpret_cast<__nv_bfloat162 *>(dst + 8 * n) =
                __floats2bfloat162_rn(acc[n][2 * half] * scale, acc[n][2 * half + 1] * scale);
    }
}

// ---------------------------------------------------------------------------------------------
// The forward's per-row arithmetic on a warp's 16-row accumulator tiles (C layout: thread holds
// rows g and g + 8, columns 8 n + 2 t + {0, 1}), shared by the mma.sync and the wgmma kernels.

// Scores of keys after the query (causal mask) or at or past T become -inf. k0: the tile's first
// key; row_lo: the query of accumulator elements 0 and 1 (2 and 3: row_lo + 8).
template <int BK>
__device__ __forceinline__ void mask_scores(float (*s)[4], int k0, int row_lo, int T, int t) {
#pragma unroll
    for (int n = 0; n < BK / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int key = k0 + 8 * n + 2 * t + (e & 1), query = row_lo + 8 * (e >> 1);
            if (key > query || key >= T) s[n][e] = -INFINITY;
        }
}

// Online softmax in base 2 over one tile of BK scores per row, for the thread's row g (half 0) or
// g + 8 (half 1): s becomes p = 2^(s log2e - m'), with m' the running max of scaled scores (m,
// base-2 units); the running sum l (this thread's share) is rescaled by the returned
// alpha = 2^(m - m'), and so must the output accumulator be (rescale_output: apart, so that the
// pipelined wgmma forward can rescale once the previous tile's O += P V has landed).
template <int BK>
__device__ __forceinline__ float softmax_scores(float (*s)[4], int half, float m[2], float l[2], float scale_log2) {
    float mx = -INFINITY;
#pragma unroll
    for (int n = 0; n < BK / 8; n++) mx = fmaxf(mx, fmaxf(s[n][2 * half], s[n][2 * half + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the 4 threads of a row
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m[half], mx * scale_log2);
    // A row with no unmasked key yet keeps m = -inf; use 0 so no -inf - -inf appears.
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;
    const float alpha = exp2_ftz(m[half] - m_use);
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < BK / 8; n++)
#pragma unroll
        for (int e = 2 * half; e < 2 * half + 2; e++) {
            s[n][e] = exp2_ftz(fmaf(s[n][e], scale_log2, -m_use));
            sum += s[n][e];
        }
    l[half] = l[half] * alpha + sum;
    m[half] = m_new;
    return alpha;
}
template <int HS> __device__ __forceinline__ void rescale_output(float (*o)[4], int half, float alpha) {
    if (alpha != 1.0f)  // the max did not grow (most tiles after the first few): x 1 is exact
#pragma unroll
        for (int n = 0; n < HS / 8; n++) {
            o[n][2 * half] *= alpha;
            o[n][2 * half + 1] *= alpha;
        }
}
template <int BK, int HS>
__device__ __forceinline__ void online_softmax(float (*s)[4], float (*o)[4], float m[2], float l[2], float scale_log2) {
#pragma unroll
    for (int half = 0; half < 2; half++) rescale_output<HS>(o, half, softmax_scores<BK>(s, half, m, l, scale_log2));
}

// The end of a 16-row tile: the row sums l reduced over the 4 threads of a row, lse written, O / l
// stored as bf16. Every valid row has seen key 0, so l >= 1 there; rows >= T are not stored.
template <int HS>
__device__ __forceinline__ void finish_forward_rows(__nv_bfloat16 *out_head, int C, float *lse_row, int row0, int T,
                                                    const float (*o)[4], const float m[2], float l[2], int lane) {
    const int g = lane >> 2, t = lane & 3;
    float inv_l[2];
#pragma unroll
    for (int half = 0; half < 2; half++) {
        l[half] += __shfl_xor_sync(0xffffffffu, l[half], 1);
        l[half] += __shfl_xor_sync(0xffffffffu, l[half], 2);
        inv_l[half] = 1.0f / l[half];
        const int row = row0 + g + 8 * half;
        if (t == 0 && row < T) lse_row[row] = (m[half] + log2f(l[half])) / LOG2E;
    }
    store_rows<HS>(out_head, C, row0, T, o, inv_l[0], inv_l[1], lane);
}

// ---------------------------------------------------------------------------------------------
// Forward. Grid cta_grid(B * NH, ceil(T / (64 RT))); CTA = 64 RT queries of one (b, h); warp w owns the
// 16 RT queries q0 + 16 RT w .. (RT row tiles of 16, see mma_scores) and keeps their Q fragments,
// the O accumulators (16 x HS fp32 per tile) and the running max m and sum l of the two rows per
// thread and tile (g and g + 8) in registers.
// Shared: Q [64 RT][HS+8], then K and V tiles [64][HS+8], two buffers each.
// Online softmax in base 2: p = 2^(S log2e - m'), with m' = max scaled score seen so far; when
// the max grows by d the running O and l are multiplied by 2^-d.
// RT (row tiles per warp) 1 or 2: every row's arithmetic is the same either way (identical bits);
// 2 reads each K and V fragment once for twice the rows, at twice the accumulator registers
// (HS 64 only: HS 128 would spill). dev/cuda/attention.cu times both; forward_row_tiles() is
// the default: 2 for HS 64, measured 1.37x faster on an H100 (0.348 vs 0.477 ms at T 1024, 0.580
// vs 0.843 at T 2048; B*T 16384, NH 32).

constexpr int FWD_KEYS = 64;

template <int HS> __host__ __device__ constexpr int forward_row_tiles() { return HS == 64 ? 2 : 1; }

template <int HS, int RT> constexpr size_t forward_smem_bytes() {
    return (size_t)(RT * ROWS_PER_CTA + 4 * FWD_KEYS) * ld<HS>() * sizeof(__nv_bfloat16);
}

template <int HS, int MIN_CTAS, int RT>
__global__ void __launch_bounds__(NTHREADS, MIN_CTAS)
attention_forward_kernel(__nv_bfloat16 *__restrict__ out, float *__restrict__ lse,
                         const __nv_bfloat16 *__restrict__ qkv, int T, int NH, float scale) {
    constexpr int BK = FWD_KEYS, LD = ld<HS>(), QROWS = RT * ROWS_PER_CTA;
    LLMC_DYNAMIC_SMEM(smem);
    __nv_bfloat16 *sQ = reinterpret_cast<__nv_bfloat16 *>(smem);
    __nv_bfloat16 *sK = sQ + QROWS * LD;  // [2][BK][LD]
    __nv_bfloat16 *sV = sK + 2 * BK * LD; // [2][BK][LD]

    const int bh = cta_head(), b = bh / NH, h = bh % NH;
    const int q0 = (gridDim.y - 1 - blockIdx.y) * QROWS;  // longest rows first
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int C = NH * HS;
    const int64_t row_stride = 3 * (int64_t)C;
    const __nv_bfloat16 *q_head = qkv + (int64_t)b * T * row_stride + h * HS;
    const __nv_bfloat16 *k_head = q_head + C, *v_head = q_head + 2 * C;
    const float scale_log2 = scale * LOG2E;

    // Key tiles that hold any key <= the last valid query of this CTA; later ones are all masked.
    const int last_query = min(q0 + QROWS, T) - 1;
    const int n_tiles = last_query / BK + 1;

    auto load_kv = [&](int j, int buf) {
        load_kv_tiles_async<BK, HS>(sK + buf * BK * LD, sV + buf * BK * LD, k_head, v_head, row_stride, j * BK, T);
    };
    load_tile_async<QROWS, HS>(sQ, q_head, row_stride, q0, T);
    load_kv(0, 0);
    cp_async_commit();

    uint32_t qf[RT][HS / 16][4];
    float o[RT][HS / 8][4];
#pragma unroll
    for (int r = 0; r < RT; r++)
#pragma unroll
        for (int n = 0; n < HS / 8; n++) o[r][n][0] = o[r][n][1] = o[r][n][2] = o[r][n][3] = 0.0f;
    float m[RT][2], l[RT][2];  // running max of scaled scores (base-2 units) and this thread's share of the sum
#pragma unroll
    for (int r = 0; r < RT; r++) m[r][0] = m[r][1] = -INFINITY, l[r][0] = l[r][1] = 0.0f;
    const int warp_q0 = q0 + 16 * RT * warp;  // the warp's first query; tile r's rows: warp_q0 + 16 r + g (+ 8)

    for_each_streamed_tile(0, n_tiles, load_kv, [&](int j, int buf) {
        if (j == 0) {
#pragma unroll
            for (int r = 0; r < RT; r++)
#pragma unroll
                for (int kk = 0; kk < HS / 16; kk++) load_a<HS>(qf[r][kk], sQ, 16 * (RT * warp + r), 16 * kk, lane);
        }

        float s[RT][BK / 8][4];
        mma_scores<HS, BK, RT>(s, qf, sK + buf * BK * LD, lane);

        const int k0 = j * BK;
#pragma unroll
        for (int r = 0; r < RT; r++) {
            // Causal mask and the end of the sequence: only tiles that reach past the row tile's
            // first query or past T need it.
            if (k0 + BK - 1 > warp_q0 + 16 * r || k0 + BK > T) mask_scores<BK>(s[r], k0, warp_q0 + 16 * r + g, T, t);
            online_softmax<BK, HS>(s[r], o[r], m[r], l[r], scale_log2);
        }

        uint32_t pf[RT][BK / 16][4];
#pragma unroll
        for (int r = 0; r < RT; r++) acc_to_a<BK>(pf[r], s[r]);
        mma_a_regs_b_rows_k<HS, BK, HS, RT>(o, pf, sV + buf * BK * LD, lane);
    });

    __nv_bfloat16 *out_head = out + (int64_t)b * T * C + h * HS;
#pragma unroll
    for (int r = 0; r < RT; r++)
        finish_forward_rows<HS>(out_head, C, lse + (int64_t)bh * T, warp_q0 + 16 * r, T, o[r], m[r], l[r], lane);
}

// ---------------------------------------------------------------------------------------------
// Forward with wgmma (sm_90a; STATUS: verified on an H200 at c95ef56, 2026-11-27; the trainer's
// --attention wgmma). Grid cta_grid(B * NH, ceil(T / (64 WG))); CTA = WG warpgroups of 4 warps (WG 2;
// the variant WG 1 has the same per-row arithmetic, so the same bits). Warpgroup w owns the 64
// queries q0 + 64 w .. (wgmma's M), warp i of it rows 16 i..16 i+15 of those, in the accumulator
// layout of the mma.sync kernel above, so mask_scores, online_softmax and finish_forward_rows
// serve both.
// Per key tile of 64:
//   S = Q K^T    HS/16 x wgmma m64n64k16, Q and K from shared memory (both K-major: HS runs
//                along their rows);
//   softmax      in registers, as above;
//   O += P V     4 x wgmma m64nHSk16, P from registers (the score accumulators packed to bf16,
//                acc_to_a), V from shared memory MN-major (stored [key][HS], the contraction over
//                keys runs down its rows).
// Shared, in wgmma's 128-byte swizzle (llmc/wgmma.cuh), from a 1024-byte boundary: Q [64 WG][HS],
// then K [2][64][HS] and V [2][64][HS], all filled by cp.async. One barrier per tile: after it,
// tile j + 1 loads into the other buffer (last read in iteration j - 1, whose wgmma every
// warpgroup has waited for) while tile j computes.
// Within a k16 step wgmma sums in an order of its own, so the bits may differ from the mma.sync
// kernel's; dev/cuda/attention.cu checks this kernel against fp64 as it checks the default.
// PIPELINED (FlashAttention-3's intra-warpgroup overlap; STATUS: NOT RUN on a GPU, 2026-11-29,
// checked in the CPU emulator): tile j's softmax runs while the tensor cores do tile j - 1's
// O += P V, V loaded a tile behind K so that the two buffers still suffice; the same bits.
// `dev/cuda/attention --wgmma --pipelined` checks its bits and times it beside the default ("pipe
// fwd"), which it becomes if faster.

// The dynamic shared memory from its first 1024-byte boundary, where wgmma's swizzled tiles must
// start (the kernels' smem_bytes() leave room for the shift).
__device__ __forceinline__ unsigned char *swizzle_aligned(unsigned char *smem_raw) {
    return smem_raw + (wgmma::SWIZZLE_ALIGN - smem_addr(smem_raw) % wgmma::SWIZZLE_ALIGN) % wgmma::SWIZZLE_ALIGN;
}

// Makes the tiles this thread copied with cp.async visible to every warpgroup's wgmma: wait for
// its copies, fence them into the async proxy, then the barrier (after which the previous
// iteration's buffers, whose wgmma every warpgroup has waited for, may be refilled).
__device__ __forceinline__ void publish_tiles() {
    cp_async_wait<0>();
    wgmma::fence_proxy_async_shared();
    __syncthreads();
}

// The loop of the forward and dQ kernels over key tiles 0..n_tiles-1 of ROWS keys, K and V
// double-buffered in sK[2], sV[2] (tiles of ROWS x HS): tile 0 was issued by the caller (in the
// last cp.async group); each iteration publishes tile j, issues tile j + 1, then calls
// body(j * ROWS, buf) unless the warpgroup has nothing to do there (active(j * ROWS) false,
// uniform in the warpgroup). Every thread takes every barrier.
template <int ROWS, int HS, int THREADS, typename Active, typename Body>
__device__ __forceinline__ void for_each_kv_tile(int n_tiles, __nv_bfloat16 *sK, __nv_bfloat16 *sV,
                                                 const __nv_bfloat16 *k_head, const __nv_bfloat16 *v_head,
                                                 int64_t row_stride, int T, Active active, Body body) {
    for (int j = 0; j < n_tiles; j++) {
        const int buf = j & 1;
        publish_tiles();
        if (j + 1 < n_tiles) {
            load_kv_tiles_async<ROWS, HS, true, THREADS>(sK + (buf ^ 1) * ROWS * HS, sV + (buf ^ 1) * ROWS * HS,
                                                         k_head, v_head, row_stride, (j + 1) * ROWS, T);
            cp_async_commit();
        }
        if (active(j * ROWS)) body(j * ROWS, buf);
    }
}

// acc (64 x 64) = A B^T over HS: A the 64 rows a_row0.. of a swizzled [a_rows][HS] tile, B the 64
// rows of a swizzled [64][HS] tile, both K-major (HS along their rows). Issues; the caller commits.
template <int HS>
__device__ __forceinline__ void mma_rows_by_rows(float (*acc)[4], uint32_t a_tile, int a_rows, int a_row0, uint32_t b_tile) {
#pragma unroll
    for (int kk = 0; kk < HS / 16; kk++)
        wgmma::mma_ss_n64(acc, wgmma::desc_k_major(a_tile, a_rows, a_row0, kk), wgmma::desc_k_major(b_tile, 64, 0, kk),
                          kk > 0);
}

// acc (64 x HS) += A B: A 64 x K in registers (K / 16 fragments), B the K rows of a swizzled
// [K][HS] tile read MN-major (the contraction runs down its rows). Issues; the caller commits.
template <int HS, int K>
__device__ __forceinline__ void mma_regs_by_tile(float (*acc)[4], const uint32_t (*a)[4], uint32_t b_tile) {
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++) wgmma::mma_rs_mn_major_b<HS>(acc, a[kk], wgmma::desc_mn_major(b_tile, K, kk));
}

// acc (64 x HS) = A B (+ acc if accumulate) over the 64 contraction rows r0.. of two swizzled tiles
// of `rows` rows, both read MN-major: A (64 wide) from a_tile, B (HS wide) from b_tile. Issues; the
// caller commits.
template <int HS>
__device__ __forceinline__ void mma_tiles_mn_major(float (*acc)[4], uint32_t a_tile, uint32_t b_tile, int rows, int r0,
                                                   bool accumulate = false) {
    static_assert(HS == 64, "one instruction shape, m64n64k16");
#pragma unroll
    for (int kk = 0; kk < 4; kk++)
        wgmma::mma_ss_n64<true>(acc, wgmma::desc_mn_major(a_tile, rows, kk, r0), wgmma::desc_mn_major(b_tile, rows, kk, r0),
                                accumulate || kk > 0);
}

// A warp's A fragments (a[k]: 16 rows x N columns, acc_to_a's layout) as rows row0..row0+15 of a
// swizzled [rows][N] bf16 tile (4-byte stores: a warp's 8 rows of one register fall in 8 different
// 16-byte bank groups, its 4 columns pairs in 4 banks of each).
template <int N>
__device__ __forceinline__ void store_a_swizzled(__nv_bfloat16 *tile, int rows, const uint32_t (*a)[4], int row0, int lane) {
    const int g = lane >> 2, t = lane & 3;
    unsigned char *base = reinterpret_cast<unsigned char *>(tile);
#pragma unroll
    for (int k = 0; k < N / 16; k++)
#pragma unroll
        for (int r = 0; r < 4; r++) {  // a[k][r]: row g + 8 (r % 2), columns 16 k + 2 t + 8 (r / 2)
            const uint32_t at = wgmma::sw128_offset(rows, row0 + g + 8 * (r % 2), 16 * k + 2 * t + 8 * (r / 2));
            store_for_async_proxy(reinterpret_cast<uint32_t *>(base + at), a[k][r]);
        }
}

// Iteration j (0..n) of the pipelined wgmma forward over a warpgroup's n >= 1 key tiles of KEYS
// keys (FlashAttention-3's overlap within a warpgroup): j = 0 issues S_0 = Q K_0^T alone; 0 < j < n
// issues S_j and O += P_{j-1} V_{j-1} as two groups, takes S_j's softmax while the second runs,
// and rescales O by alpha_j once it has landed; j = n issues the last P V alone. Then P_j is
// packed into pf, the A operand of the next product. Each case issues and waits for its wgmma
// within one branch: ptxas serializes wgmma issued in a branch and still in flight where the
// branch ends (t_42). The kernel supplies tile_ready(j) (returns once K_j may be read, before the
// fence: the warp-specialized kernel's mbarrier wait), issue_scores(s, j) and issue_product(j)
// (each issues and commits one group), softmax(s, j, alpha) (mask and softmax_scores of both row
// halves) and product_landed(j) (wait_group 0 and whatever else the landing allows).
template <int KEYS, int HS, typename Ready, typename Scores, typename Product, typename Softmax, typename Landed>
__device__ __forceinline__ void pipelined_forward_iteration(int j, int n, float (*o)[4], uint32_t (*pf)[4],
                                                            Ready tile_ready, Scores issue_scores,
                                                            Product issue_product, Softmax softmax,
                                                            Landed product_landed) {
    float s[KEYS / 8][4], alpha[2];
    auto fence = [&] {
        wgmma::hold_registers<KEYS / 8>(s);
        wgmma::hold_registers<HS / 8>(o);  // the last rescale happens before the fence
        wgmma::hold_registers<KEYS / 16>(pf);
        wgmma::fence();
    };
    auto rescale = [&] {
        for (int half = 0; half < 2; half++) rescale_output<HS>(o, half, alpha[half]);
    };
    if (j == 0) {  // S_0 alone
        tile_ready(j);
        fence();
        issue_scores(s, j);
        wgmma::wait<0>();
        softmax(s, j, alpha);
        rescale();
        acc_to_a<KEYS>(pf, s);
    } else if (j < n) {  // S_j beside P_{j-1} V_{j-1}
        tile_ready(j);
        fence();
        issue_scores(s, j);
        issue_product(j);
        wgmma::wait<1>();  // S_j's group is the older
        softmax(s, j, alpha);
        product_landed(j);
        rescale();
        acc_to_a<KEYS>(pf, s);
    } else {  // the last P V alone
        fence();
        issue_product(j);
        product_landed(j);
    }
}

namespace fwd_wgmma {
constexpr int KEYS = 64;
// WG warpgroups per CTA (2 by default; 1 is a variant the harness times): WG * 64 queries share
// each K and V tile that the CTA loads.
constexpr int DEFAULT_WG = 2;
template <int WG> __host__ __device__ constexpr int cta_threads() { return 128 * WG; }
template <int WG> __host__ __device__ constexpr int query_rows() { return 64 * WG; }
template <int HS, int WG> __host__ __device__ constexpr uint32_t q_bytes() { return query_rows<WG>() * HS * 2; }
template <int HS> __host__ __device__ constexpr uint32_t kv_bytes() { return KEYS * HS * 2; }  // one K or V tile
// The tiles, plus room to round the dynamic shared memory's base up to 1024 bytes.
template <int HS, int WG> constexpr size_t smem_bytes() {
    return wgmma::SWIZZLE_ALIGN + q_bytes<HS, WG>() + 4 * kv_bytes<HS>();
}
// Per thread: S 32 and O HS / 2 fp32 accumulators, P 16 registers. HS 64 fits 8 warps per SM at
// 128 registers (2 CTAs of 2 warpgroups, 4 of 1); HS 128 stays free.
template <int HS, int WG> __host__ __device__ constexpr int min_ctas() { return HS == 64 ? 4 / WG : 1; }
}  // namespace fwd_wgmma

template <int HS, int WG, bool PIPELINED>
__global__ void __launch_bounds__(fwd_wgmma::cta_threads<WG>(), fwd_wgmma::min_ctas<HS, WG>())
attention_forward_wgmma_kernel(__nv_bfloat16 *__restrict__ out, float *__restrict__ lse,
                               const __nv_bfloat16 *__restrict__ qkv, int T, int NH, float scale) {
    using namespace fwd_wgmma;
    constexpr int THREADS = cta_threads<WG>(), QROWS = query_rows<WG>();
    constexpr uint32_t QB = q_bytes<HS, WG>(), KVB = kv_bytes<HS>();
    static_assert(QB % wgmma::SWIZZLE_ALIGN == 0 && KVB % wgmma::SWIZZLE_ALIGN == 0, "tiles on 1024-byte boundaries");
    LLMC_DYNAMIC_SMEM(smem_raw);
    unsigned char *smem = swizzle_aligned(smem_raw);
    __nv_bfloat16 *sQ = reinterpret_cast<__nv_bfloat16 *>(smem);
    __nv_bfloat16 *sK = reinterpret_cast<__nv_bfloat16 *>(smem + QB);            // [2] tiles
    __nv_bfloat16 *sV = reinterpret_cast<__nv_bfloat16 *>(smem + QB + 2 * KVB);  // [2] tiles
    const uint32_t q_addr = smem_addr(sQ), k_addr = smem_addr(sK), v_addr = smem_addr(sV);

    const int bh = cta_head(), b = bh / NH, h = bh % NH;
    const int q0 = (gridDim.y - 1 - blockIdx.y) * QROWS;  // longest rows first
    const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane >> 2, t = lane & 3;
    const int C = NH * HS;
    const int64_t row_stride = 3 * (int64_t)C;
    const __nv_bfloat16 *q_head = qkv + (int64_t)b * T * row_stride + h * HS;
    const __nv_bfloat16 *k_head = q_head + C, *v_head = q_head + 2 * C;
    const float scale_log2 = scale * LOG2E;

    const int n_tiles = (min(q0 + QROWS, T) - 1) / KEYS + 1;  // key tiles that any query here sees
    const int wg_q0 = q0 + 64 * wg;
    const int wg_last_query = min(wg_q0 + 63, T - 1);

    load_tile_async<QROWS, HS, true, THREADS>(sQ, q_head, row_stride, q0, T);
    if constexpr (PIPELINED) load_tile_async<KEYS, HS, true, THREADS>(sK, k_head, row_stride, 0, T);  // V_0 a tile later
    else load_kv_tiles_async<KEYS, HS, true, THREADS>(sK, sV, k_head, v_head, row_stride, 0, T);
    cp_async_commit();

    float o[HS / 8][4];
#pragma unroll
    for (int n = 0; n < HS / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    // Causal mask and the end of the sequence, in the tiles that reach past the warpgroup's first
    // query or past T.
    auto mask = [&](float (*s)[4], int k0) {
        if (k0 + KEYS - 1 > wg_q0 || k0 + KEYS > T) mask_scores<KEYS>(s, k0, wg_q0 + 16 * warp + g, T, t);
    };

    if constexpr (PIPELINED) {
        // The warpgroup's key tiles 0..wg_tiles-1: those with a key <= its last query (none where
        // its rows are past T). Iteration j publishes K_j and V_{j-1} (after the barrier every
        // warpgroup is done with K_{j-1} and V_{j-2}, whose buffers take K_{j+1} and V_j now), then
        // runs pipelined_forward_iteration: S_j = Q K_j^T beside O += P_{j-1} V_{j-1}, S_j's
        // softmax while the second runs. The same operations on the same values as the loop below,
        // so the same bits.
        const int wg_tiles = wg_q0 < T ? wg_last_query / KEYS + 1 : 0;
        uint32_t pf[KEYS / 16][4];  // P_{j-1} packed to bf16: the A operand of the product in flight
        auto issue_scores = [&](float (*s)[4], int j) {
            mma_rows_by_rows<HS>(s, q_addr, QROWS, 64 * wg, k_addr + (j & 1) * KVB);
            wgmma::commit();
        };
        auto issue_product = [&](int j) {  // O += P_{j-1} V_{j-1}
            mma_regs_by_tile<HS, KEYS>(o, pf, v_addr + ((j - 1) & 1) * KVB);
            wgmma::commit();
        };
        auto softmax = [&](float (*s)[4], int j, float alpha[2]) {
            wgmma::hold_registers<KEYS / 8>(s);
            mask(s, j * KEYS);
            for (int half = 0; half < 2; half++) alpha[half] = softmax_scores<KEYS>(s, half, m, l, scale_log2);
        };
        auto product_landed = [&](int) {
            wgmma::wait<0>();
            wgmma::hold_registers<HS / 8>(o);
            wgmma::hold_registers<KEYS / 16>(pf);  // P_{j-1}'s registers stay untouched until here
        };
        for (int j = 0; j <= n_tiles; j++) {
            publish_tiles();
            constexpr int TILE_ELEMS = KEYS * HS;
            if (j + 1 < n_tiles)
                load_tile_async<KEYS, HS, true, THREADS>(sK + ((j + 1) & 1) * TILE_ELEMS, k_head, row_stride,
                                                         (j + 1) * KEYS, T);
            if (j < n_tiles)
                load_tile_async<KEYS, HS, true, THREADS>(sV + (j & 1) * TILE_ELEMS, v_head, row_stride, j * KEYS, T);
            cp_async_commit();
            if (wg_tiles > 0 && j <= wg_tiles)
                pipelined_forward_iteration<KEYS, HS>(j, wg_tiles, o, pf, [](int) {}, issue_scores, issue_product,
                                                      softmax, product_landed);
        }
    } else {
        // A warpgroup has nothing to do where all its rows are past T or all the tile's keys come
        // after its queries.
        auto active = [&](int k0) { return wg_q0 < T && k0 <= wg_last_query; };
        auto tile = [&](int k0, int buf) {
            float s[KEYS / 8][4];
            wgmma::hold_registers<KEYS / 8>(s);  // every accumulator wgmma writes is pinned before its fence
            wgmma::fence();
            mma_rows_by_rows<HS>(s, q_addr, QROWS, 64 * wg, k_addr + buf * KVB);
            wgmma::commit();
            wgmma::wait<0>();
            wgmma::hold_registers<KEYS / 8>(s);

            mask(s, k0);
            online_softmax<KEYS, HS>(s, o, m, l, scale_log2);

            uint32_t pf[KEYS / 16][4];
            acc_to_a<KEYS>(pf, s);
            wgmma::hold_registers<HS / 8>(o);  // the rescale and the packing happen before the fence
            wgmma::hold_registers<KEYS / 16>(pf);
            wgmma::fence();
            mma_regs_by_tile<HS, KEYS>(o, pf, v_addr + buf * KVB);
            wgmma::commit();
            wgmma::wait<0>();
            wgmma::hold_registers<HS / 8>(o);
        };
        for_each_kv_tile<KEYS, HS, THREADS>(n_tiles, sK, sV, k_head, v_head, row_stride, T, active, tile);
    }

    finish_forward_rows<HS>(out + (int64_t)b * T * C + h * HS, C, lse + (int64_t)bh * T, wg_q0 + 16 * warp, T, o, m,
                            l, lane);
}

// ---------------------------------------------------------------------------------------------
// The backward kernels' last argument: where they write dqkv's FP8 codes instead of dqkv (CODES;
// attention_backward), or nothing, so that the kernels without codes keep their code.
struct NoCodes {};
template <bool CODES> using CodesArg = typename std::conditional<CODES, QuantCodesOut, NoCodes>::type;

// With CODES, the end of a backward kernel: dqkv's codes of the CTA's rows row0.. (valid of them),
// staged as bf16 rows (row stride ld) that a barrier published: parts first..first + PARTS - 1
// (0 q, 1 k, 2 v) of head h from stage[0..PARTS-1] (quant_tile_codes); then the CTA's amax.
template <int HS, int THREADS, int PARTS>
__device__ __forceinline__ void staged_dqkv_codes(const QuantCodesOut &codes,
                                                  const __nv_bfloat16 *const (&stage)[PARTS], int ld, int valid,
                                                  int row0, int first, int h, int NH, int T) {
    const int C = NH * HS, N = grid_heads() / NH * T;
    unsigned int bits = 0;
#pragma unroll
    for (int p = 0; p < PARTS; p++)
        bits = max(bits, quant_tile_codes<HS, THREADS>(stage[p], ld, valid, codes, row0, (first + p) * C + h * HS, N,
                                                       3 * C));
    quant_block_amax(codes.amax, bits);
}

// Backward, step 1: delta = rowsum(dO * O), one warp per (b, t, h) row, fixed shuffle order.
// With BOUNDS (the backward with dQ by integer reduction, below), also what its fixed-point format
// needs (dq_fixed_shift): ||dO||_1 of the row (not finite where delta is not: a NaN or inf reached
// O, and through P the row's dS, which the integers cannot carry), and the largest |K| and |V| of
// each head, as float bits (non-negative floats order as their bits; NaN's above infinity's) kept
// by atomicMax, whose result does not depend on the order. bounds.head_max must be zero before.
struct DqBounds {
    float *dout_l1;                // (B, NH, T)
    unsigned *head_max;            // (B, NH, 2): max |K|, max |V|
    const __nv_bfloat16 *qkv;
};

template <int HS, bool BOUNDS>
__global__ void __launch_bounds__(NTHREADS)
attention_delta_kernel(float *__restrict__ delta, const __nv_bfloat16 *__restrict__ dout,
                       const __nv_bfloat16 *__restrict__ out, int B, int T, int NH, DqBounds bounds) {
    const int64_t row = (int64_t)blockIdx.x * NWARPS + threadIdx.x / 32;  // (b, t, h) flattened
    const int lane = threadIdx.x % 32;
    if (row >= (int64_t)B * T * NH) return;
    const int h = (int)(row % NH);
    const int64_t bt = row / NH, b = bt / T, tt = bt % T, out_row = (b * NH + h) * T + tt;
    const __nv_bfloat16 *o = out + row * HS, *d = dout + row * HS;
    float sum = 0.0f, l1 = 0.0f;
    unsigned max_k = 0, max_v = 0;
#pragma unroll
    for (int it = 0; it < HS / 64; it++) {  // lane reads the pairs 2 lane + 64 it
        const int i = 2 * lane + 64 * it;
        const float2 of = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(o + i));
        const float2 df = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(d + i));
        sum += of.x * df.x + of.y * df.y;
        if constexpr (BOUNDS) {
            const int C = NH * HS;
            const __nv_bfloat16 *k = bounds.qkv + bt * 3 * C + C + h * HS + i;
            const float2 kf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(k));
            const float2 vf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(k + C));
            l1 += fabsf(df.x) + fabsf(df.y);
            max_k = max(max_k, max(__float_as_uint(fabsf(kf.x)), __float_as_uint(fabsf(kf.y))));
            max_v = max(max_v, max(__float_as_uint(fabsf(vf.x)), __float_as_uint(fabsf(vf.y))));
        }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (lane == 0) delta[out_row] = sum;
    if constexpr (BOUNDS) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) l1 += __shfl_xor_sync(0xffffffffu, l1, off);
        max_k = __reduce_max_sync(0xffffffffu, max_k);
        max_v = __reduce_max_sync(0xffffffffu, max_v);
        if (lane == 0) {
            bounds.dout_l1[out_row] = isfinite(sum) ? l1 : sum;  // NaN or inf O (from Q, K or V): no bound
            atomicMax(&bounds.head_max[2 * (b * NH + h)], max_k);
            atomicMax(&bounds.head_max[2 * (b * NH + h) + 1], max_v);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// dQ by integer reduction (attention_backward_reduce_dq; NOT RUN on a GPU, 2026-11-28): the dK/dV
// kernel also makes each key block's share of dQ, dS K (five matmuls per tile pair instead of the
// seven of the separate dQ kernel, which computes S and dP again), and adds it into an int32
// accumulator (B, NH, T, HS) in fixed point. Integer addition is associative, so the sums do not
// depend on the order in which CTAs add them: deterministic without ordering the CTAs (the fused
// variant measured and removed on 2026-11-23 ordered them with turn counters and a read-add-write
// per tile, 0.73-0.89x). A last kernel (attention_dq_finalize_kernel) turns the integers to bf16.
// Row i's format: x is held as round(x 2^shift_i). Every share a key block adds is at most
//   sum_j |bf16(dS_ij)| |K_jd| <= 2.05 ||dO_i||_1 max|V| max|K|
// (|dS_ij| = P_ij |dP_ij - delta_i| with sum_j P_ij = 1 and |dP_ij|, |delta_i| <= ||dO_i||_1 max|V|,
// max over the head; 2.05 covers the bf16 rounding of dS and O and the fp32 sums), and so is the
// sum of all the shares' magnitudes. With bound = 4 ||dO_i||_1 max|K| max|V| < 2^e and shift 30 - e,
// every partial sum of the integers stays below 2^30 + (shares) < 2^31 (and two's complement adds
// wrap exactly in between anyway), and each share is rounded within 2^-30 of the bound: an error of the
// order of fp32's in summing the share's terms, whose magnitudes add up to a few times less than the
// bound (|dP_ij| is typically far below its bound), and far below dQ's final bf16 rounding. Until
// 2026-11-29 the integers were int64 (shift 62 - e): twice the bytes in the accumulator's memset,
// its reductions and the last kernel, and conversions to 64 bits, slow ones. This needs lse to be
// the forward's of the same qkv (sum_j P_ij = 1); a bound that is not finite (inf or NaN inputs, or
// 2^128 and more) makes the row's dQ NaN.
constexpr int DQ_SHIFT_NONFINITE = INT_MIN;

// 2^k as a float, for -126 <= k <= 127 (exact: a power of two scales without rounding).
__host__ __device__ inline float pow2f(int k) {
    const uint32_t bits = (uint32_t)(k + 127) << 23;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

// shift_i from ||dO_i||_1 and the head's max |K|, max |V| (the delta kernel's bounds); -98..90, so
// that 2^shift and 2^-shift are normal floats (a bound below 2^-60 is taken as 2^-60; one of 2^128
// or more, beyond fp32, is flagged as not finite). The bound is formed in fp64, where the product
// of three floats neither underflows nor overflows (fp32 could underflow in (4 l1) max_k and then
// understate the bound by any factor).
__host__ __device__ inline int dq_fixed_shift(float l1, float max_k, float max_v) {
    const double bound = 4.0 * l1 * max_k * max_v;
    if (!(bound < 0x1p128)) return DQ_SHIFT_NONFINITE;  // also inf and NaN
    uint64_t bits;
    memcpy(&bits, &bound, sizeof(bits));
    const int biased = (int)(bits >> 52);               // bound >= 0 and never subnormal: its biased exponent
    const int e = biased == 0 ? -60 : biased - 1022;    // bound < 2^e
    return 30 - (e < -60 ? -60 : e);
}

// How the dK/dV kernel's dQ is made: by the dQ kernel (DQ_KERNEL), or by integer reduction, each
// thread adding its values with red.global (DQ_RED) or the CTA staging its share in shared memory
// for one bulk reduction (DQ_BULK; the staging costs BQ x HS x 4 bytes of shared memory).
enum DqMode { DQ_KERNEL = 0, DQ_RED = 1, DQ_BULK = 2 };
struct DqReduce {
    uint32_t *acc;            // (B, NH, T, HS) int32 two's complement, zero before the kernel
    const float *dout_l1;     // the delta kernel's bounds
    const unsigned *head_max;
};

// A warp's part of a query tile's dQ share (acc: rows m0 + g (+8) of the tile, columns col0 + 8 n +
// 2 t (+1), NB blocks of 8) in each row's fixed-point format (exact scaling by 2^shift, one rounding
// to an integer), handed in pairs to put(row, col, v0, v1). Odd rows g take the column blocks in the
// other order, so that a half warp's 8-byte stores of a [rows][HS] int32 staging (rows g..g + 3 of
// HS x 4 bytes, a multiple of 128) fall in two sets of banks (a 2-way conflict, not 4-way).
template <int NB, typename Put>
__device__ __forceinline__ void dq_share_fixed(const float (*acc)[4], int m0, int col0, const float *l1_tile,
                                               float max_k, float max_v, int lane, Put put) {
    const int g = lane >> 2, t = lane & 3;
    const bool swap = g & 1;
#pragma unroll
    for (int half = 0; half < 2; half++) {
        const int row = m0 + g + 8 * half;
        const int shift = dq_fixed_shift(l1_tile[row], max_k, max_v);
        const float to_fixed = shift == DQ_SHIFT_NONFINITE ? 0.0f : pow2f(shift);
#pragma unroll
        for (int n = 0; n < NB; n++) {
            const float x0 = swap ? acc[n ^ 1][2 * half] : acc[n][2 * half];
            const float x1 = swap ? acc[n ^ 1][2 * half + 1] : acc[n][2 * half + 1];
            const int col = col0 + 8 * (swap ? n ^ 1 : n) + 2 * t;
            put(row, col, (uint32_t)__float2int_rn(x0 * to_fixed), (uint32_t)__float2int_rn(x1 * to_fixed));
        }
    }
}

// DQ_BULK's staging: a pair of dq_share_fixed's values into sDQ ([rows][HS] int32), which the bulk
// reduction reads.
template <int HS>
__device__ __forceinline__ void stage_dq_pair(uint32_t *sDQ, int row, int col, uint32_t v0, uint32_t v1) {
    store_for_async_proxy(reinterpret_cast<uint2 *>(sDQ + row * HS + col), make_uint2(v0, v1));
}

// DQ_BULK: once every thread has staged its part of the share in sDQ ([rows][HS] int32), one thread
// hands its valid rows to the bulk reduction into acc_tile.
template <int HS>
__device__ __forceinline__ void issue_dq_bulk(uint32_t *acc_tile, const uint32_t *sDQ, int valid) {
    wgmma::fence_proxy_async_shared();  // the bulk reduction reads through the async proxy
    __syncthreads();
    if (threadIdx.x == 0) {
        bulk_reduce_add_u32(acc_tile, sDQ, (uint32_t)valid * HS * 4);
        bulk_commit();
    }
}

// One query tile's dQ share, dS (BQ queries x KROWS keys) K (KROWS x HS), from dS^T staged in
// shared memory [KROWS][BQ + 8] by every warp and the resident K tile, added into acc_tile (the
// tile's first query row of acc; valid rows of it < T). Warp w computes query rows 16 (w % M) ..
// + 15 and HS / (4 / M) of the columns (M = BQ / 16 row tiles; the warps split the columns when
// there are fewer than 4). sDQ: DQ_BULK's staging, [BQ][HS] int32.
template <int HS, int BQ, int KROWS, int DQ>
__device__ __forceinline__ void reduce_dq_tile(const __nv_bfloat16 *sDS, const __nv_bfloat16 *sK,
                                               uint32_t *sDQ, uint32_t *acc_tile, int valid,
                                               const float *l1_tile, float max_k, float max_v, int warp, int lane) {
    constexpr int M = BQ / 16, SPLIT = NWARPS / M, NCOLS = HS / SPLIT, LDS = BQ + SMEM_PAD;
    static_assert(NWARPS % M == 0 && NCOLS % 16 == 0, "the warps split the tile's rows and columns evenly");
    const int m0 = 16 * (warp % M), col0 = NCOLS * (warp / M);
    float acc[NCOLS / 8][4];
#pragma unroll
    for (int n = 0; n < NCOLS / 8; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < KROWS / 16; kk++) {
        // A = dS rows m0.., keys 16 kk..: dS^T's 8x8 blocks transposed (the matrices (m, k) +0/+8
        // in a0..a3's order: lane l points at key 16 kk + l % 8 + 8 (l / 16), query m0 + 8 (l / 8 % 2)).
        uint32_t a[4];
        ldmatrix_x4_trans(a, sDS + (16 * kk + (lane & 7) + ((lane >> 4) << 3)) * LDS + m0 + ((lane >> 3) & 1) * 8);
#pragma unroll
        for (int nn = 0; nn < NCOLS / 16; nn++) {
            uint32_t b[4];
            load_b_rows_are_k<HS>(b, sK, 16 * kk, col0 + 16 * nn, lane);
            mma_16816(acc[2 * nn], a, b[0], b[1]);
            mma_16816(acc[2 * nn + 1], a, b[2], b[3]);
        }
    }
    dq_share_fixed<NCOLS / 8>(acc, m0, col0, l1_tile, max_k, max_v, lane,
                              [&](int row, int col, uint32_t v0, uint32_t v1) {
                                  if constexpr (DQ == DQ_RED) {
                                      if (row < valid) {
                                          red_add_u32(acc_tile + (int64_t)row * HS + col, v0);
                                          red_add_u32(acc_tile + (int64_t)row * HS + col + 1, v1);
                                      }
                                  } else {
                                      stage_dq_pair<HS>(sDQ, row, col, v0, v1);
                                  }
                              });
    if constexpr (DQ == DQ_BULK) issue_dq_bulk<HS>(acc_tile, sDQ, valid);
}

// ---------------------------------------------------------------------------------------------
// Backward, step 2: dK and dV. Grid cta_grid(B * NH, ceil(T / (64 RT))); CTA = 64 RT keys of one (b, h),
// warp w owns keys k0 + 16 RT w .. + 16 RT - 1 (RT row tiles of 16) and their dK, dV accumulators
// (2 x 16 x HS fp32 a tile). Loops over the query tiles that can see these keys (queries >= k0),
// BQ queries at a time (64 for HS 64, 32 for HS 128 to stay within registers). Per tile,
// transposed so that keys are the M dimension:
//   S^T = K Q^T, P^T = 2^(S^T s log2e - lse log2e), dP^T = V dO^T, dS^T = P^T (dP^T - delta),
//   dV += P^T dO, dK += dS^T Q       (dK scaled by s at the end)
// Shared: K, V [64 RT][HS+8] resident; Q, dO [2][BQ][HS+8], lse and delta [2][BQ] streamed, all
// four by cp.async, so no thread stalls on a global load inside the loop.
// RT 2 (with BQ 32, for registers) reads each Q and dO fragment from shared memory once for two
// row tiles of keys, as the dQ kernel's RT 2 below; the same bits (a query tile wholly before a
// key's diagonal adds zeros), and NOT RUN on a GPU either: RT 1 is the default.
// dQ comes from the dQ kernel below, which recomputes S and dP (seven matmuls per tile pair in all).
// A fused-dQ variant (dQ here, the key blocks' shares added in a fixed order through per-tile turn
// counters) was tried and measured slower on an H100, 0.89x at T 1024 HS 64 (2026-11-23): removed.

// Rows of the streamed operand per tile (queries in dK/dV, keys in dQ): 64 for HS 64, 32 for HS 128
// to stay within registers. The sums run over the same 16-row chunks in the same order for any
// tile height, so the bits do not depend on it; dev/cuda/attention.cu also times HS 64 at 32
// (fewer registers per thread, more CTAs per SM).
template <int HS> __host__ __device__ constexpr int bwd_stream_rows() { return HS == 64 ? 64 : 32; }

// Two resident tiles of RT * 64 rows (RT: the kernels' row tiles per warp, below), two
// streamed operands of [2][BS] rows, and the streamed lse and delta ([2][BS] fp32; dK/dV). The
// dK/dV kernel with dQ by integer reduction (DQ) adds ||dO||_1 ([2][BS] fp32), dS^T
// ([64 RT][BS + 8] bf16) and, for DQ_BULK, its staging ([BS][HS] int32).
template <int HS, int BS, int RT = 1> constexpr size_t backward_smem_bytes() {
    return (size_t)(2 * RT * ROWS_PER_CTA + 4 * BS) * ld<HS>() * sizeof(__nv_bfloat16) + (size_t)4 * BS * sizeof(float);
}
template <int HS, int BS, int RT, int DQ> constexpr size_t backward_kv_smem_bytes() {
    constexpr size_t staging = backward_smem_bytes<HS, BS, RT>() + (size_t)2 * BS * sizeof(float) +
                               (size_t)RT * ROWS_PER_CTA * (BS + SMEM_PAD) * sizeof(__nv_bfloat16);
    static_assert(staging % 16 == 0, "the staging is 16-byte aligned");
    return DQ == DQ_KERNEL ? backward_smem_bytes<HS, BS, RT>() : staging + (DQ == DQ_BULK ? (size_t)BS * HS * 4 : 0);
}

// The backward's per-element steps on a warp's accumulator tiles, shared by the mma.sync and wgmma
// kernels (C layout: thread holds rows g, g + 8 and columns 8 n + 2 t + {0, 1}): P from S and lse,
// then dS = P (dP - delta). The mma.sync kernels take both in one pass over the tile; the wgmma
// kernels take P first, while the tensor cores still work on dP, then dS. Each element's arithmetic
// is the same either way (prob_*_element, ds_element).
__device__ __forceinline__ float ds_element(float p, float dp, float delta) { return p * (dp - delta); }

// Keys as rows (dK/dV): element (n, e) of a tile whose p holds S^T of keys key_lo (+8) and the BQ
// queries qt0..; lse_tile is those queries' lse. Its P^T, 0 where masked (key after query, or query
// past T; only tiles with needs_mask test it).
__device__ __forceinline__ float prob_transposed_element(float s, int n, int e, int key_lo, int qt0, int T,
                                                         bool needs_mask, const float *lse_tile, float scale_log2,
                                                         int t) {
    const int qc = 8 * n + 2 * t + (e & 1);  // query within the tile
    const int key = key_lo + 8 * (e >> 1), query = qt0 + qc;
    const bool visible = !needs_mask || (key <= query && query < T);
    return visible ? exp2_ftz(fmaf(s, scale_log2, -(lse_tile[qc] * LOG2E))) : 0.0f;
}
__device__ __forceinline__ float delta_transposed_element(int n, int e, const float *delta_tile, int t) {
    return delta_tile[8 * n + 2 * t + (e & 1)];
}

// p (S^T) becomes P^T and dp (dP^T) becomes dS^T; delta_tile is the queries' delta.
template <int BQ>
__device__ __forceinline__ void probs_and_ds_transposed(float (*p)[4], float (*dp)[4], int key_lo, int qt0, int T,
                                                        bool needs_mask, const float *lse_tile,
                                                        const float *delta_tile, float scale_log2, int t) {
#pragma unroll
    for (int n = 0; n < BQ / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float pe =
                prob_transposed_element(p[n][e], n, e, key_lo, qt0, T, needs_mask, lse_tile, scale_log2, t);
            p[n][e] = pe;
            dp[n][e] = ds_element(pe, dp[n][e], delta_transposed_element(n, e, delta_tile, t));
        }
}

// The same in two steps: p (S^T) becomes P^T ...
template <int BQ>
__device__ __forceinline__ void probs_transposed(float (*p)[4], int key_lo, int qt0, int T, bool needs_mask,
                                                 const float *lse_tile, float scale_log2, int t) {
#pragma unroll
    for (int n = 0; n < BQ / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            p[n][e] = prob_transposed_element(p[n][e], n, e, key_lo, qt0, T, needs_mask, lse_tile, scale_log2, t);
}

// ... then dp (dP^T) becomes dS^T, with p holding P^T.
template <int BQ>
__device__ __forceinline__ void ds_transposed(float (*dp)[4], const float (*p)[4], const float *delta_tile, int t) {
#pragma unroll
    for (int n = 0; n < BQ / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            dp[n][e] = ds_element(p[n][e], dp[n][e], delta_transposed_element(n, e, delta_tile, t));
}

// Queries as rows (dQ): element (n, e) of a tile whose p holds S of queries row_lo (+8) and the BK
// keys kt0..; lse2 is the two rows' lse log2e. Its P, 0 where masked (key after query, or key past T).
__device__ __forceinline__ float prob_rows_element(float s, int n, int e, int row_lo, int kt0, int T, bool needs_mask,
                                                   const float lse2[2], float scale_log2, int t) {
    const int half = e >> 1;
    const int key = kt0 + 8 * n + 2 * t + (e & 1), query = row_lo + 8 * half;
    const bool visible = !needs_mask || (key <= query && key < T);
    return visible ? exp2_ftz(fmaf(s, scale_log2, -lse2[half])) : 0.0f;
}

// dp (dP) becomes dS; dlt is the two rows' delta (P is not kept).
template <int BK>
__device__ __forceinline__ void probs_and_ds_rows(float (*dp)[4], const float (*p)[4], int row_lo, int kt0, int T,
                                                  bool needs_mask, const float lse2[2], const float dlt[2],
                                                  float scale_log2, int t) {
#pragma unroll
    for (int n = 0; n < BK / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float pe = prob_rows_element(p[n][e], n, e, row_lo, kt0, T, needs_mask, lse2, scale_log2, t);
            dp[n][e] = ds_element(pe, dp[n][e], dlt[e >> 1]);  // dS
        }
}

// The same in two steps: p (S) becomes P ...
template <int BK>
__device__ __forceinline__ void probs_rows(float (*p)[4], int row_lo, int kt0, int T, bool needs_mask,
                                           const float lse2[2], float scale_log2, int t) {
#pragma unroll
    for (int n = 0; n < BK / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            p[n][e] = prob_rows_element(p[n][e], n, e, row_lo, kt0, T, needs_mask, lse2, scale_log2, t);
}

// ... then dp (dP) becomes dS, with p holding P.
template <int BK>
__device__ __forceinline__ void ds_rows(float (*dp)[4], const float (*p)[4], const float dlt[2]) {
#pragma unroll
    for (int n = 0; n < BK / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) dp[n][e] = ds_element(p[n][e], dp[n][e], dlt[e >> 1]);
}

// The first query tile (BQ rows) that a key block from key k0 meets: queries < k0 see none of its
// keys. Shared with dev/test/cuda_host/kernel_indexing.cu, which checks it on the host.
__host__ __device__ constexpr int kv_first_query_tile(int k0, int BQ) { return k0 / BQ; }

// A warp's dS^T (A fragments a[k] of 16 keys x N queries, acc_to_a's layout) as rows key0..key0+15
// of a [keys][N + 8] shared tile (row stride an odd multiple of 16 bytes: conflict-free ldmatrix).
template <int N>
__device__ __forceinline__ void store_a_rows(__nv_bfloat16 *tile, const uint32_t (*a)[4], int key0, int lane) {
    constexpr int LDS = N + SMEM_PAD;
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int k = 0; k < N / 16; k++) {
        uint32_t *lo = reinterpret_cast<uint32_t *>(tile + (key0 + g) * LDS + 16 * k + 2 * t);
        uint32_t *hi = reinterpret_cast<uint32_t *>(tile + (key0 + g + 8) * LDS + 16 * k + 2 * t);
        lo[0] = a[k][0], hi[0] = a[k][1], lo[4] = a[k][2], hi[4] = a[k][3];  // columns +8: 4 words on
    }
}

// The dK/dV kernel's last argument: dqkv's FP8 codes (CODES), the dQ accumulator and bounds (DQ),
// or nothing.
template <bool CODES, int DQ>
using KvArg = typename std::conditional<DQ != DQ_KERNEL, DqReduce, CodesArg<CODES>>::type;

template <int HS, int MIN_CTAS, int BS, int RT, bool CODES, int DQ = DQ_KERNEL>
__global__ void __launch_bounds__(NTHREADS, MIN_CTAS)
attention_backward_kv_kernel(__nv_bfloat16 *__restrict__ dqkv, const __nv_bfloat16 *__restrict__ dout,
                             const __nv_bfloat16 *__restrict__ qkv, const float *__restrict__ lse,
                             const float *__restrict__ delta, int T, int NH, float scale, KvArg<CODES, DQ> extra) {
    static_assert(!(CODES && DQ != DQ_KERNEL), "dQ by reduction writes dqkv, not its codes");
    constexpr int BQ = BS, LD = ld<HS>(), KROWS = RT * ROWS_PER_CTA;
    LLMC_DYNAMIC_SMEM(smem);
    __nv_bfloat16 *sK = reinterpret_cast<__nv_bfloat16 *>(smem);
    __nv_bfloat16 *sV = sK + KROWS * LD;
    __nv_bfloat16 *sQ = sV + KROWS * LD;         // [2][BQ][LD]
    __nv_bfloat16 *sdO = sQ + 2 * BQ * LD;       // [2][BQ][LD]
    float *sLse = reinterpret_cast<float *>(sdO + 2 * BQ * LD);  // [2][BQ]
    float *sDelta = sLse + 2 * BQ;                               // [2][BQ]
    float *sL1 = sDelta + 2 * BQ;                                // [2][BQ] (DQ)
    __nv_bfloat16 *sDS = reinterpret_cast<__nv_bfloat16 *>(sL1 + 2 * BQ);                        // [KROWS][BQ+8] (DQ)
    uint32_t *sDQ = reinterpret_cast<uint32_t *>(sDS + KROWS * (BQ + SMEM_PAD));  // [BQ][HS] (DQ_BULK)

    const int bh = cta_head(), b = bh / NH, h = bh % NH;
    const int k0 = blockIdx.y * KROWS;  // the first key blocks see the most queries: first
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int C = NH * HS;
    const int64_t row_stride = 3 * (int64_t)C;
    const __nv_bfloat16 *q_head = qkv + (int64_t)b * T * row_stride + h * HS;
    const __nv_bfloat16 *k_head = q_head + C, *v_head = q_head + 2 * C;
    const __nv_bfloat16 *do_head = dout + (int64_t)b * T * C + h * HS;
    const float *lse_row = lse + (int64_t)bh * T, *delta_row = delta + (int64_t)bh * T;
    const float scale_log2 = scale * LOG2E;

    const int first_tile = kv_first_query_tile(k0, BQ);  // queries < k0 see none of these keys
    const int n_tiles = (T + BQ - 1) / BQ;
    float head_max[2] = {0.0f, 0.0f};  // (DQ) the head's max |K|, max |V|: the delta kernel's bounds
    if constexpr (DQ != DQ_KERNEL)
        head_max[0] = __uint_as_float(extra.head_max[2 * bh]), head_max[1] = __uint_as_float(extra.head_max[2 * bh + 1]);

    // Stage query tile i into buffer buf (rows >= T read as zeros), all by cp.async.
    auto load_query_tile = [&](int i, int buf) {
        load_tile_async<BQ, HS>(sQ + buf * BQ * LD, q_head, row_stride, i * BQ, T);
        load_tile_async<BQ, HS>(sdO + buf * BQ * LD, do_head, C, i * BQ, T);
        for (int r = threadIdx.x; r < BQ; r += NTHREADS) {
            const int q = i * BQ + r;
            const bool valid = q < T;
            cp_async_4(sLse + buf * BQ + r, lse_row + (valid ? q : 0), valid);
            cp_async_4(sDelta + buf * BQ + r, delta_row + (valid ? q : 0), valid);
            if constexpr (DQ != DQ_KERNEL)
                cp_async_4(sL1 + buf * BQ + r, extra.dout_l1 + (int64_t)bh * T + (valid ? q : 0), valid);
        }
    };

    load_kv_tiles_async<KROWS, HS>(sK, sV, k_head, v_head, row_stride, k0, T);
    load_query_tile(first_tile, 0);
    cp_async_commit();

    float dk[RT][HS / 8][4], dv[RT][HS / 8][4];
#pragma unroll
    for (int r = 0; r < RT; r++)
#pragma unroll
        for (int n = 0; n < HS / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) dk[r][n][e] = dv[r][n][e] = 0.0f;
    const int warp_k0 = k0 + 16 * RT * warp;  // the warp's first key; tile r's rows: warp_k0 + 16 r + g (+ 8)

    for_each_streamed_tile(first_tile, n_tiles, load_query_tile, [&](int i, int buf) {
        const __nv_bfloat16 *q_tile = sQ + buf * BQ * LD, *do_tile = sdO + buf * BQ * LD;
        const float *lse_tile = sLse + buf * BQ, *delta_tile = sDelta + buf * BQ;

        uint32_t kf[RT][HS / 16][4], vf[RT][HS / 16][4];
#pragma unroll
        for (int r = 0; r < RT; r++)
#pragma unroll
            for (int kk = 0; kk < HS / 16; kk++) load_a<HS>(kf[r][kk], sK, 16 * (RT * warp + r), 16 * kk, lane);
        float p[RT][BQ / 8][4];
        mma_scores<HS, BQ, RT>(p, kf, q_tile, lane);  // S^T
#pragma unroll
        for (int r = 0; r < RT; r++)
#pragma unroll
            for (int kk = 0; kk < HS / 16; kk++) load_a<HS>(vf[r][kk], sV, 16 * (RT * warp + r), 16 * kk, lane);
        float dp[RT][BQ / 8][4];
        mma_scores<HS, BQ, RT>(dp, vf, do_tile, lane);  // dP^T

        const int qt0 = i * BQ;
        const bool needs_mask = qt0 < k0 + KROWS || qt0 + BQ > T;
#pragma unroll
        for (int r = 0; r < RT; r++)
            probs_and_ds_transposed<BQ>(p[r], dp[r], warp_k0 + 16 * r + g, qt0, T, needs_mask, lse_tile, delta_tile,
                                        scale_log2, t);

        uint32_t af[RT][BQ / 16][4];
#pragma unroll
        for (int r = 0; r < RT; r++) acc_to_a<BQ>(af[r], p[r]);
        mma_a_regs_b_rows_k<HS, BQ, HS, RT>(dv, af, do_tile, lane);
#pragma unroll
        for (int r = 0; r < RT; r++) acc_to_a<BQ>(af[r], dp[r]);
        mma_a_regs_b_rows_k<HS, BQ, HS, RT>(dk, af, q_tile, lane);

        if constexpr (DQ != DQ_KERNEL) {  // this tile's dQ share: dS^T through shared memory
#pragma unroll
            for (int r = 0; r < RT; r++) store_a_rows<BQ>(sDS, af[r], 16 * (RT * warp + r), lane);
            if (DQ == DQ_BULK && threadIdx.x == 0) bulk_wait_read<0>();  // the last share has left sDQ
            __syncthreads();
            reduce_dq_tile<HS, BQ, KROWS, DQ>(sDS, sK, sDQ, extra.acc + ((int64_t)bh * T + qt0) * HS, min(BQ, T - qt0),
                                              sL1 + buf * BQ, head_max[0], head_max[1], warp, lane);
        }
    });
    if (DQ == DQ_BULK && threadIdx.x == 0) bulk_wait_read<0>();  // shared memory stays until the last is read

    if constexpr (CODES) {  // dK and dV as bf16 rows in the K and V tiles (each warp reads only its own)
#pragma unroll
        for (int r = 0; r < RT; r++) {
            store_rows<HS>(sK, LD, 16 * (RT * warp + r), KROWS, dk[r], scale, scale, lane);
            store_rows<HS>(sV, LD, 16 * (RT * warp + r), KROWS, dv[r], 1.0f, 1.0f, lane);
        }
        __syncthreads();
        staged_dqkv_codes<HS, NTHREADS, 2>(extra, {sK, sV}, LD, min(KROWS, T - k0), b * T + k0, 1, h, NH, T);
    } else {
        __nv_bfloat16 *dk_head = dqkv + (int64_t)b * T * row_stride + C + h * HS;
#pragma unroll
        for (int r = 0; r < RT; r++) {
            store_rows<HS>(dk_head, row_stride, warp_k0 + 16 * r, T, dk[r], scale, scale, lane);
            store_rows<HS>(dk_head + C, row_stride, warp_k0 + 16 * r, T, dv[r], 1.0f, 1.0f, lane);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Backward, step 3: dQ. Grid cta_grid(B * NH, ceil(T / (64 RT))); CTA = 64 RT queries of one (b, h), warp
// w owns 16 RT of them (RT row tiles of 16, as the forward's) with their Q and dO fragments and the
// dQ accumulators (16 x HS fp32 a tile) in registers. Loops over the key tiles at or below the
// diagonal, BK keys at a time (64 for HS 64, 32 for HS 128):  S = Q K^T,
// P = 2^(S s log2e - lse log2e), dP = dO V^T, dS = P (dP - delta), dQ += dS K  (scaled by s at the
// end). Shared: Q, dO [64 RT][HS+8] (read once into registers), K, V [2][BK][HS+8] streamed.
// RT 2 (with BK 32, for registers) reads each K and V fragment from shared memory once for two row
// tiles, as the forward's RT 2 does (measured 1.37x faster than RT 1 on an H100); a query's sums run in
// the same order for any RT and BK (a tile wholly past a row's diagonal adds zeros), so the bits
// do not depend on them. RT 2 has NOT RUN on a GPU (2026-11-28; in the CPU emulator the harness
// finds the default's bits and FP8 codes): RT 1 stays the default until a GPU times RT 2 in both
// kernels (dev/cuda/attention.cu's RT2 columns; attention_backward_rt2, the trainer's --attention
// mma-rt2; dQ 255 registers, no spills, 2 CTAs per SM). If it is faster, backward_hs launches
// backward_kv_hs<64, 1, 32, 2> and backward_dq_hs<64, 1, 32, 2> at HS 64 and the mode goes.

template <int HS, int MIN_CTAS, int BS, int RT, bool CODES>
__global__ void __launch_bounds__(NTHREADS, MIN_CTAS)
attention_backward_dq_kernel(__nv_bfloat16 *__restrict__ dqkv, const __nv_bfloat16 *__restrict__ dout,
                             const __nv_bfloat16 *__restrict__ qkv, const float *__restrict__ lse,
                             const float *__restrict__ delta, int T, int NH, float scale, CodesArg<CODES> codes) {
    constexpr int BK = BS, LD = ld<HS>(), QROWS = RT * ROWS_PER_CTA;
    LLMC_DYNAMIC_SMEM(smem);
    __nv_bfloat16 *sQ = reinterpret_cast<__nv_bfloat16 *>(smem);
    __nv_bfloat16 *sdO = sQ + QROWS * LD;
    __nv_bfloat16 *sK = sdO + QROWS * LD;  // [2][BK][LD]
    __nv_bfloat16 *sV = sK + 2 * BK * LD;  // [2][BK][LD]

    const int bh = cta_head(), b = bh / NH, h = bh % NH;
    const int q0 = (gridDim.y - 1 - blockIdx.y) * QROWS;  // longest rows first
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int C = NH * HS;
    const int64_t row_stride = 3 * (int64_t)C;
    const __nv_bfloat16 *q_head = qkv + (int64_t)b * T * row_stride + h * HS;
    const __nv_bfloat16 *k_head = q_head + C, *v_head = q_head + 2 * C;
    const __nv_bfloat16 *do_head = dout + (int64_t)b * T * C + h * HS;
    const float scale_log2 = scale * LOG2E;

    const int last_query = min(q0 + QROWS, T) - 1;
    const int n_tiles = last_query / BK + 1;

    auto load_kv = [&](int j, int buf) {
        load_kv_tiles_async<BK, HS>(sK + buf * BK * LD, sV + buf * BK * LD, k_head, v_head, row_stride, j * BK, T);
    };
    load_tile_async<QROWS, HS>(sQ, q_head, row_stride, q0, T);
    load_tile_async<QROWS, HS>(sdO, do_head, C, q0, T);
    load_kv(0, 0);
    cp_async_commit();

    const int warp_q0 = q0 + 16 * RT * warp;  // the warp's first query; tile r's rows: warp_q0 + 16 r + g (+ 8)
    float lse2[RT][2], dlt[RT][2];           // lse * log2e and delta of each tile's rows g, g + 8
#pragma unroll
    for (int r = 0; r < RT; r++)
#pragma unroll
        for (int half = 0; half < 2; half++) {
            const int row = warp_q0 + 16 * r + g + 8 * half;
            lse2[r][half] = row < T ? lse[(int64_t)bh * T + row] * LOG2E : 0.0f;
            dlt[r][half] = row < T ? delta[(int64_t)bh * T + row] : 0.0f;
        }

    uint32_t qf[RT][HS / 16][4], dof[RT][HS / 16][4];
    float dq[RT][HS / 8][4];
#pragma unroll
    for (int r = 0; r < RT; r++)
#pragma unroll
        for (int n = 0; n < HS / 8; n++) dq[r][n][0] = dq[r][n][1] = dq[r][n][2] = dq[r][n][3] = 0.0f;

    for_each_streamed_tile(0, n_tiles, load_kv, [&](int j, int buf) {
        if (j == 0) {
#pragma unroll
            for (int r = 0; r < RT; r++)
#pragma unroll
                for (int kk = 0; kk < HS / 16; kk++) {
                    load_a<HS>(qf[r][kk], sQ, 16 * (RT * warp + r), 16 * kk, lane);
                    load_a<HS>(dof[r][kk], sdO, 16 * (RT * warp + r), 16 * kk, lane);
                }
        }
        const __nv_bfloat16 *k_tile = sK + buf * BK * LD, *v_tile = sV + buf * BK * LD;

        float p[RT][BK / 8][4], dp[RT][BK / 8][4];
        mma_scores<HS, BK, RT>(p, qf, k_tile, lane);   // S
        mma_scores<HS, BK, RT>(dp, dof, v_tile, lane); // dP

        const int kt0 = j * BK;
#pragma unroll
        for (int r = 0; r < RT; r++) {
            const bool needs_mask = kt0 + BK - 1 > warp_q0 + 16 * r || kt0 + BK > T;
            probs_and_ds_rows<BK>(dp[r], p[r], warp_q0 + 16 * r + g, kt0, T, needs_mask, lse2[r], dlt[r], scale_log2,
                                  t);
        }

        uint32_t af[RT][BK / 16][4];
#pragma unroll
        for (int r = 0; r < RT; r++) acc_to_a<BK>(af[r], dp[r]);
        mma_a_regs_b_rows_k<HS, BK, HS, RT>(dq, af, k_tile, lane);
    });

    if constexpr (CODES) {  // dQ as bf16 rows in the Q tile (read into registers before the loop)
#pragma unroll
        for (int r = 0; r < RT; r++) store_rows<HS>(sQ, LD, 16 * (RT * warp + r), QROWS, dq[r], scale, scale, lane);
        __syncthreads();
        staged_dqkv_codes<HS, NTHREADS, 1>(codes, {sQ}, LD, min(QROWS, T - q0), b * T + q0, 0, h, NH, T);
    } else {
        __nv_bfloat16 *dq_head = dqkv + (int64_t)b * T * row_stride + h * HS;
#pragma unroll
        for (int r = 0; r < RT; r++) store_rows<HS>(dq_head, row_stride, warp_q0 + 16 * r, T, dq[r], scale, scale, lane);
    }
}

// Backward with dQ by integer reduction, last step: dQ = s 2^-shift acc of each row (two exact
// power-of-two scalings around one rounding to fp32, then s and bf16), into dqkv's q part; NaN where
// the row's bound is not finite. One warp per (b, h, t) row of acc.
template <int HS>
__global__ void __launch_bounds__(NTHREADS)
attention_dq_finalize_kernel(__nv_bfloat16 *__restrict__ dqkv, const uint32_t *__restrict__ acc,
                             const float *__restrict__ dout_l1, const unsigned *__restrict__ head_max, int B, int T,
                             int NH, float scale) {
    const int64_t row = (int64_t)blockIdx.x * NWARPS + threadIdx.x / 32;  // (b, h, t) flattened
    const int lane = threadIdx.x % 32;
    if (row >= (int64_t)B * NH * T) return;
    const int64_t bh = row / T, tt = row % T, b = bh / NH, h = bh % NH;
    const int shift =
        dq_fixed_shift(dout_l1[row], __uint_as_float(head_max[2 * bh]), __uint_as_float(head_max[2 * bh + 1]));
    __nv_bfloat16 *dst = dqkv + (b * T + tt) * 3 * NH * HS + h * HS;
#pragma unroll
    for (int p = 0; p < HS / 64; p++) {  // lane reads the pairs 2 lane + 64 p: 8-byte loads side by side
        const int i = 2 * lane + 64 * p;
        const uint2 v = *reinterpret_cast<const uint2 *>(acc + row * HS + i);
        float x0 = __uint_as_float(0x7FC00000u), x1 = x0;  // NaN
        if (shift != DQ_SHIFT_NONFINITE) {
            const float from_fixed = pow2f(-shift);
            x0 = __int2float_rn((int)v.x) * from_fixed * scale;
            x1 = __int2float_rn((int)v.y) * from_fixed * scale;
        }
        *reinterpret_cast<__nv_bfloat162 *>(dst + i) = __floats2bfloat162_rn(x0, x1);
    }
}

// ---------------------------------------------------------------------------------------------
// Backward with wgmma (sm_90a; HS 64 only; STATUS: verified on an H200 at c95ef56; the trainer's
// --attention wgmma). The same two kernels as above, after the same delta kernel, with warpgroups:
// a CTA of WG = 2 warpgroups keeps 128 rows resident (keys in dK/dV, queries in dQ), 64 per
// warpgroup (wgmma's M), and streams 64-row tiles of the other operand, double-buffered by
// cp.async. The variant WG = 1 (64 resident rows, two CTAs per SM) visits the same tiles of each
// warpgroup in the same order: the same bits (with dQ by integer reduction, below, for dK and dV;
// its dQ shares are rounded per 64 keys, not per 128).
//   dK/dV, per query tile:  S^T = K Q^T, dP^T = V dO^T    (K, V, Q, dO all K-major in shared memory)
//                           P^T, dS^T                     (probs_transposed, ds_transposed, in registers)
//                           dV += P^T dO, dK += dS^T Q    (A from registers, dO and Q MN-major)
//   dQ, per key tile:       S = Q K^T, dP = dO V^T; P, dS (probs_rows, ds_rows); dQ += dS K (K MN-major)
// Each product is a wgmma group of its own, waited for only when its result is needed, so that the
// element-wise work on one overlaps the next on the tensor cores: P^T while dP^T runs, dS^T while
// dV += P^T dO runs (dQ: P while dP runs). The same products in the same order as when both
// products of a pair shared one group, so the same bits; NOT RUN on a GPU in this order (2026-11-27;
// the emulator of dev/emu executes each group at its wait_group, so a read before its wait would
// fail the checks).
// Shared, 128-byte swizzled from a 1024-byte boundary: the two resident [64 WG][HS] tiles, then the
// two streamed operands [2][64][HS] each; dK/dV also streams the tile's lse and delta ([2][64] fp32).
// A warpgroup skips a tile (uniformly) when its rows are past T or the causal mask hides all of it.
// dK/dV with dQ by integer reduction (DQ_BULK; attention_backward_wgmma_reduce_dq, NOT RUN on a GPU,
// 2026-11-29): per query tile, each warpgroup also stages its dS^T (bf16, swizzled [64 WG][64]) and
// makes its share of the tile's dQ, dS K over its 64 keys (A = dS and B = K both read MN-major from
// shared memory); the two shares are added in fp32 and turned to reduce_dq_tile's fixed point, and
// one bulk reduction per tile adds them into the accumulator. No dQ
// kernel: five products per tile pair instead of seven. Each group is waited for before a warpgroup
// leaves the branch that skips tiles: with a wgmma still in flight there, ptxas serializes every
// wgmma of the kernel (dev/test/t_42_wgmma_serialization.sh checks that it does not).

namespace bwd_wgmma {
constexpr int TILE = 64;
// WG warpgroups per CTA (2 by default; 1 is a variant the harness times), 64 resident rows each.
// At 190 registers a thread, one CTA of 2 or two of 1 fit an SM.
constexpr int DEFAULT_WG = 2;
template <int WG> __host__ __device__ constexpr int cta_threads() { return 128 * WG; }
template <int WG> __host__ __device__ constexpr int resident_rows() { return 64 * WG; }
template <int HS, int WG> __host__ __device__ constexpr uint32_t resident_bytes() { return resident_rows<WG>() * HS * 2; }
template <int HS> __host__ __device__ constexpr uint32_t tile_bytes() { return TILE * HS * 2; }
template <int HS, int WG> constexpr size_t smem_bytes() {
    return wgmma::SWIZZLE_ALIGN + 2 * resident_bytes<HS, WG>() + 4 * tile_bytes<HS>() + 4 * TILE * sizeof(float);
}
// The dK/dV kernel with dQ by integer reduction adds, after lse and delta, ||dO||_1 ([2][TILE] fp32),
// then from the next 1024-byte boundary the staged dS^T (a swizzled [64 WG][TILE] bf16 tile), the
// share's int32 staging ([TILE][HS]) and, with 2 warpgroups, the rows one hands the other ([TILE][HS
// + 8] fp32).
template <int HS, int WG> __host__ __device__ constexpr uint32_t ds_offset() {
    return 2 * resident_bytes<HS, WG>() + 4 * tile_bytes<HS>() + wgmma::SWIZZLE_ALIGN + 1024;
}
template <int HS, int WG> constexpr size_t reduce_dq_smem_bytes() {
    return wgmma::SWIZZLE_ALIGN + ds_offset<HS, WG>() + resident_rows<WG>() * TILE * 2 + (size_t)TILE * HS * 4 +
           (WG == 2 ? (size_t)TILE * (HS + 8) * 4 : 0);
}

// Both kernels' shared memory: two resident tiles (dK/dV: K, V; dQ: Q, dO), two double-buffered
// streamed operands (dK/dV: Q, dO; dQ: K, V), then dK/dV's lse and delta [2][TILE].
template <int HS, int WG> struct Tiles {
    static constexpr uint32_t RB = resident_bytes<HS, WG>(), TB = tile_bytes<HS>();
    static_assert(RB % wgmma::SWIZZLE_ALIGN == 0 && TB % wgmma::SWIZZLE_ALIGN == 0, "tiles on 1024-byte boundaries");
    __nv_bfloat16 *resident[2], *streamed[2];  // streamed[x] + buf * TB / 2: buffer buf
    uint32_t resident_addr[2], streamed_addr[2];
    float *lse, *delta;                        // + buf * TILE

    __device__ explicit Tiles(unsigned char *smem) {
        for (int x = 0; x < 2; x++) {
            resident[x] = reinterpret_cast<__nv_bfloat16 *>(smem + x * RB);
            streamed[x] = reinterpret_cast<__nv_bfloat16 *>(smem + 2 * RB + x * 2 * TB);
            resident_addr[x] = smem_addr(resident[x]);
            streamed_addr[x] = smem_addr(streamed[x]);
        }
        lse = reinterpret_cast<float *>(smem + 2 * RB + 4 * TB);
        delta = lse + 2 * TILE;
    }
};
}  // namespace bwd_wgmma

// A query tile's steps before dK in the wgmma dK/dV kernels, for warpgroup wg (keys wg_k0.. =
// rows 64 wg.. of the resident K and V tiles of ROWS rows; the tile's Q and dO at qb, dob; its lse
// and delta in lse_tile, delta_tile): S^T and dP^T, P^T while dP^T is on the tensor cores, dV += P^T
// dO issued and left in flight (one group, which the caller waits for), dS^T while it runs, as
// A fragments in dsf. pf receives P^T's A fragments, which the dV product in flight reads: the
// caller keeps it until its wait (the CPU emulator reads them there).
template <int HS, int ROWS>
__device__ __forceinline__ void kv_tile_until_dk(uint32_t (*dsf)[4], uint32_t (*pf)[4], float (*dv)[4], uint32_t k_addr,
                                                 uint32_t v_addr, int wg, uint32_t qb, uint32_t dob, int key_lo,
                                                 int qt0, int wg_k0, int T, const float *lse_tile,
                                                 const float *delta_tile, float scale_log2, int t) {
    using bwd_wgmma::TILE;
    float p[TILE / 8][4], dp[TILE / 8][4];
    wgmma::hold_registers<TILE / 8>(p);
    wgmma::hold_registers<TILE / 8>(dp);
    wgmma::fence();
    mma_rows_by_rows<HS>(p, k_addr, ROWS, 64 * wg, qb);  // S^T
    wgmma::commit();
    mma_rows_by_rows<HS>(dp, v_addr, ROWS, 64 * wg, dob);  // dP^T
    wgmma::commit();
    wgmma::wait<1>();  // S^T
    wgmma::hold_registers<TILE / 8>(p);

    const bool needs_mask = qt0 < wg_k0 + 64 || qt0 + TILE > T;
    probs_transposed<TILE>(p, key_lo, qt0, T, needs_mask, lse_tile, scale_log2, t);
    acc_to_a<TILE>(pf, p);
    wgmma::hold_registers<HS / 8>(dv);
    wgmma::hold_registers<TILE / 16>(pf);
    wgmma::fence();
    mma_regs_by_tile<HS, TILE>(dv, pf, dob);  // dV += P^T dO
    wgmma::commit();
    wgmma::wait<1>();  // dP^T (dV may still run)
    wgmma::hold_registers<TILE / 8>(dp);

    ds_transposed<TILE>(dp, p, delta_tile, t);
    acc_to_a<TILE>(dsf, dp);
}

template <int HS, int WG, bool CODES, int DQ = DQ_KERNEL>
__global__ void __launch_bounds__(bwd_wgmma::cta_threads<WG>(), 2 / WG)
attention_backward_kv_wgmma_kernel(__nv_bfloat16 *__restrict__ dqkv, const __nv_bfloat16 *__restrict__ dout,
                                   const __nv_bfloat16 *__restrict__ qkv, const float *__restrict__ lse,
                                   const float *__restrict__ delta, int T, int NH, float scale, KvArg<CODES, DQ> extra) {
    using namespace bwd_wgmma;
    static_assert(HS == 64, "registers: dK, dV, S^T, dP^T accumulators are 4 x HS / 2 floats per thread");
    static_assert((DQ == DQ_KERNEL || DQ == DQ_BULK) && !(CODES && DQ != DQ_KERNEL) && WG <= 2,
                  "dQ by the dQ kernel, or by bulk reductions (sm_90) of dqkv itself; at most 2 warpgroups");
    constexpr int THREADS = cta_threads<WG>(), ROWS = resident_rows<WG>();
    constexpr uint32_t TB = tile_bytes<HS>();
    LLMC_DYNAMIC_SMEM(smem_raw);
    unsigned char *smem = swizzle_aligned(smem_raw);
    const Tiles<HS, WG> tiles(smem);
    __nv_bfloat16 *sK = tiles.resident[0], *sV = tiles.resident[1], *sQ = tiles.streamed[0], *sdO = tiles.streamed[1];
    float *sLse = tiles.lse, *sDelta = tiles.delta;
    float *sL1 = sDelta + 2 * TILE;                                                              // [2][TILE] (DQ)
    __nv_bfloat16 *sDS = reinterpret_cast<__nv_bfloat16 *>(smem + ds_offset<HS, WG>());          // (DQ)
    uint32_t *sDQ = reinterpret_cast<uint32_t *>(sDS + ROWS * TILE);                             // (DQ)
    constexpr int XLD = HS + 8;  // sX's row stride: a half warp's 8-byte accesses of 4 rows in 32 banks
    float *sX = reinterpret_cast<float *>(sDQ + TILE * HS);                                      // (DQ, WG 2)
    const uint32_t k_addr = tiles.resident_addr[0], v_addr = tiles.resident_addr[1];
    const uint32_t q_addr = tiles.streamed_addr[0], do_addr = tiles.streamed_addr[1];

    const int bh = cta_head(), b = bh / NH, h = bh % NH;
    const int k0 = blockIdx.y * ROWS;  // the first key blocks see the most queries: first
    const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane >> 2, t = lane & 3;
    const int C = NH * HS;
    const int64_t row_stride = 3 * (int64_t)C;
    const __nv_bfloat16 *q_head = qkv + (int64_t)b * T * row_stride + h * HS;
    const __nv_bfloat16 *k_head = q_head + C, *v_head = q_head + 2 * C;
    const __nv_bfloat16 *do_head = dout + (int64_t)b * T * C + h * HS;
    const float *lse_row = lse + (int64_t)bh * T, *delta_row = delta + (int64_t)bh * T;
    const float scale_log2 = scale * LOG2E;
    const int wg_k0 = k0 + 64 * wg;

    const int first_tile = k0 / TILE;  // queries < k0 see none of these keys
    const int n_tiles = (T + TILE - 1) / TILE;
    float head_max[2] = {0.0f, 0.0f};  // (DQ) the head's max |K|, max |V|: the delta kernel's bounds
    if constexpr (DQ != DQ_KERNEL)
        head_max[0] = __uint_as_float(extra.head_max[2 * bh]), head_max[1] = __uint_as_float(extra.head_max[2 * bh + 1]);

    auto load_query_tile = [&](int i, int buf) {
        load_tile_async<TILE, HS, true, THREADS>(sQ + buf * TB / 2, q_head, row_stride, i * TILE, T);
        load_tile_async<TILE, HS, true, THREADS>(sdO + buf * TB / 2, do_head, C, i * TILE, T);
        for (int r = threadIdx.x; r < TILE; r += THREADS) {
            const int q = i * TILE + r;
            const bool valid = q < T;
            cp_async_4(sLse + buf * TILE + r, lse_row + (valid ? q : 0), valid);
            cp_async_4(sDelta + buf * TILE + r, delta_row + (valid ? q : 0), valid);
            if constexpr (DQ != DQ_KERNEL)
                cp_async_4(sL1 + buf * TILE + r, extra.dout_l1 + (int64_t)bh * T + (valid ? q : 0), valid);
        }
    };
    load_tile_async<ROWS, HS, true, THREADS>(sK, k_head, row_stride, k0, T);
    load_tile_async<ROWS, HS, true, THREADS>(sV, v_head, row_stride, k0, T);
    load_query_tile(first_tile, 0);
    cp_async_commit();

    float dk[HS / 8][4], dv[HS / 8][4];
#pragma unroll
    for (int n = 0; n < HS / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk[n][e] = dv[n][e] = 0.0f;
    const int key_lo = wg_k0 + 16 * warp + g;  // key of accumulator rows 0, 1 (2, 3: key_lo + 8)

    for (int i = first_tile; i < n_tiles; i++) {
        const int buf = (i - first_tile) & 1;
        publish_tiles();
        if (i + 1 < n_tiles) {
            load_query_tile(i + 1, buf ^ 1);
            cp_async_commit();
        }
        const int qt0 = i * TILE;
        // Not active: keys past T, or every query before them. The CTA's first warpgroup is active
        // on every tile of the loop (k0 < T, and the loop starts at k0's tile).
        const bool active = wg_k0 < T && qt0 + TILE - 1 >= wg_k0;
        [[maybe_unused]] float dq[HS / 8][4];  // (DQ) the warpgroup's share of the tile's dQ
        if constexpr (DQ != DQ_KERNEL)
            if (threadIdx.x == 0) bulk_wait_read<0>();  // the last share has left sDQ before the
                                                        // barrier ahead of the staging's next writes
        if (active) {
        const uint32_t qb = q_addr + buf * TB, dob = do_addr + buf * TB;

        // Four groups in flight at most two at a time: P^T is computed while dP^T is on the tensor
        // cores, dS^T while dV is.
        uint32_t dsf[TILE / 16][4], pf[TILE / 16][4];
        kv_tile_until_dk<HS, ROWS>(dsf, pf, dv, k_addr, v_addr, wg, qb, dob, key_lo, qt0, wg_k0, T, sLse + buf * TILE,
                                   sDelta + buf * TILE, scale_log2, t);
        if constexpr (DQ != DQ_KERNEL) store_a_swizzled<TILE>(sDS, ROWS, dsf, 64 * wg + 16 * warp, lane);
        wgmma::hold_registers<HS / 8>(dk);
        wgmma::hold_registers<TILE / 16>(dsf);
        wgmma::fence();
        mma_regs_by_tile<HS, TILE>(dk, dsf, qb);  // dK += dS^T Q
        wgmma::commit();
        if constexpr (DQ != DQ_KERNEL) {
            // The warpgroup's share of the tile's dQ from its 64 keys, dS K: A = dS read from the
            // staged dS^T, B = K from the resident tile, both MN-major; issued behind dK as soon
            // as the warpgroup's dS^T is in shared memory.
            wgmma::fence_proxy_async_shared();  // wgmma reads the staged dS^T
            warpgroup_sync();
            wgmma::hold_registers<HS / 8>(dq);
            wgmma::fence();
            mma_tiles_mn_major<HS>(dq, smem_addr(sDS), k_addr, ROWS, 64 * wg);
            wgmma::commit();
        }
        wgmma::wait<0>();  // dV and dK (and the dQ share): the next iteration refills this buffer
        wgmma::hold_registers<HS / 8>(dv);
        wgmma::hold_registers<HS / 8>(dk);
        if constexpr (DQ != DQ_KERNEL) wgmma::hold_registers<HS / 8>(dq);
        }
        if constexpr (DQ != DQ_KERNEL) {
            // The shares of the CTA's warpgroups are summed in fp32 and turned into fixed point in
            // the staging, and one bulk reduction adds the tile's share into acc (integer
            // addition: the same sums in any order).
            const float *l1_tile = sL1 + buf * TILE;
            auto stage = [&](int row, int col, uint32_t v0, uint32_t v1) { stage_dq_pair<HS>(sDQ, row, col, v0, v1); };
            if (!active) {
#pragma unroll
                for (int n = 0; n < HS / 8; n++) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;
            }
            if constexpr (WG == 1) {
                dq_share_fixed<HS / 8>(dq, 16 * warp, 0, l1_tile, head_max[0], head_max[1], lane, stage);
            } else {
                // The two warpgroups' shares added in fp32 (a + b is b + a: the same bits either way),
                // each warpgroup summing half of the rows and turning them to fixed point: half the
                // conversions, and half the bulk reduction's bytes, of converting both shares. Rows 0..31 are
                // warpgroup 0's (its warps 0, 1), rows 32..63 warpgroup 1's (its warps 2, 3); the
                // other warps hand theirs over through sX.
                const bool sums = (warp < 2) == (wg == 0);
#pragma unroll
                for (int n = 0; n < HS / 8; n++)
#pragma unroll
                    for (int half = 0; half < 2; half++) {
                        float2 *at = reinterpret_cast<float2 *>(sX + (16 * warp + g + 8 * half) * XLD + 8 * n + 2 * t);
                        if (!sums) *at = make_float2(dq[n][2 * half], dq[n][2 * half + 1]);
                    }
                __syncthreads();  // the handed-over rows are in sX
                if (sums) {
#pragma unroll
                    for (int n = 0; n < HS / 8; n++)
#pragma unroll
                        for (int half = 0; half < 2; half++) {
                            const float2 other =
                                *reinterpret_cast<const float2 *>(sX + (16 * warp + g + 8 * half) * XLD + 8 * n + 2 * t);
                            dq[n][2 * half] += other.x, dq[n][2 * half + 1] += other.y;
                        }
                    dq_share_fixed<HS / 8>(dq, 16 * warp, 0, l1_tile, head_max[0], head_max[1], lane, stage);
                }
            }
            issue_dq_bulk<HS>(extra.acc + ((int64_t)bh * T + qt0) * HS, sDQ, min(TILE, T - qt0));
        }
    }
    if (DQ != DQ_KERNEL && threadIdx.x == 0) bulk_wait_read<0>();  // shared memory stays until the last is read

    if constexpr (CODES) {  // dK, dV as bf16 rows [ROWS][HS + 8] from the tiles' start, once every
        __syncthreads();    // warpgroup is done with them
        const int valid = min(ROWS, T - k0), LDS = HS + 8;
        __nv_bfloat16 *stage_k = sK, *stage_v = sK + ROWS * LDS;
        store_rows<HS>(stage_k, LDS, 64 * wg + 16 * warp, valid, dk, scale, scale, lane);
        store_rows<HS>(stage_v, LDS, 64 * wg + 16 * warp, valid, dv, 1.0f, 1.0f, lane);
        __syncthreads();
        staged_dqkv_codes<HS, THREADS, 2>(extra, {stage_k, stage_v}, LDS, valid, b * T + k0, 1, h, NH, T);
    } else {
        __nv_bfloat16 *dk_head = dqkv + (int64_t)b * T * row_stride + C + h * HS;
        store_rows<HS>(dk_head, row_stride, wg_k0 + 16 * warp, T, dk, scale, scale, lane);
        store_rows<HS>(dk_head + C, row_stride, wg_k0 + 16 * warp, T, dv, 1.0f, 1.0f, lane);
    }
}

template <int HS, int WG, bool CODES>
__global__ void __launch_bounds__(bwd_wgmma::cta_threads<WG>(), 2 / WG)
attention_backward_dq_wgmma_kernel(__nv_bfloat16 *__restrict__ dqkv, const __nv_bfloat16 *__restrict__ dout,
                                   const __nv_bfloat16 *__restrict__ qkv, const float *__restrict__ lse,
                                   const float *__restrict__ delta, int T, int NH, float scale, CodesArg<CODES> codes) {
    using namespace bwd_wgmma;
    static_assert(HS == 64, "registers: dQ, S, dP accumulators");
    constexpr int THREADS = cta_threads<WG>(), ROWS = resident_rows<WG>();
    constexpr uint32_t TB = tile_bytes<HS>();
    LLMC_DYNAMIC_SMEM(smem_raw);
    const Tiles<HS, WG> tiles(swizzle_aligned(smem_raw));
    __nv_bfloat16 *sQ = tiles.resident[0], *sdO = tiles.resident[1], *sK = tiles.streamed[0], *sV = tiles.streamed[1];
    const uint32_t q_addr = tiles.resident_addr[0], do_addr = tiles.resident_addr[1];
    const uint32_t k_addr = tiles.streamed_addr[0], v_addr = tiles.streamed_addr[1];

    const int bh = cta_head(), b = bh / NH, h = bh % NH;
    const int q0 = (gridDim.y - 1 - blockIdx.y) * ROWS;  // longest rows first
    const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane >> 2, t = lane & 3;
    const int C = NH * HS;
    const int64_t row_stride = 3 * (int64_t)C;
    const __nv_bfloat16 *q_head = qkv + (int64_t)b * T * row_stride + h * HS;
    const __nv_bfloat16 *k_head = q_head + C, *v_head = q_head + 2 * C;
    const __nv_bfloat16 *do_head = dout + (int64_t)b * T * C + h * HS;
    const float scale_log2 = scale * LOG2E;
    const int wg_q0 = q0 + 64 * wg, wg_last_query = min(wg_q0 + 63, T - 1);
    const int n_tiles = (min(q0 + ROWS, T) - 1) / TILE + 1;

    load_tile_async<ROWS, HS, true, THREADS>(sQ, q_head, row_stride, q0, T);
    load_tile_async<ROWS, HS, true, THREADS>(sdO, do_head, C, q0, T);
    load_kv_tiles_async<TILE, HS, true, THREADS>(sK, sV, k_head, v_head, row_stride, 0, T);
    cp_async_commit();

    const int row_lo = wg_q0 + 16 * warp + g;  // query of accumulator rows 0, 1 (2, 3: row_lo + 8)
    float lse2[2], dlt[2];                     // lse * log2e and delta of rows row_lo, row_lo + 8
#pragma unroll
    for (int half = 0; half < 2; half++) {
        const int row = row_lo + 8 * half;
        lse2[half] = row < T ? lse[(int64_t)bh * T + row] * LOG2E : 0.0f;
        dlt[half] = row < T ? delta[(int64_t)bh * T + row] : 0.0f;
    }
    float dq[HS / 8][4];
#pragma unroll
    for (int n = 0; n < HS / 8; n++) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;

    auto active = [&](int kt0) { return wg_q0 < T && kt0 <= wg_last_query; };  // as in the forward
    for_each_kv_tile<TILE, HS, THREADS>(n_tiles, sK, sV, k_head, v_head, row_stride, T, active, [&](int kt0, int buf) {
        const uint32_t kb = k_addr + buf * TB, vb = v_addr + buf * TB;
        // P is computed while dP is on the tensor cores.
        float p[TILE / 8][4], dp[TILE / 8][4];
        wgmma::hold_registers<TILE / 8>(p);
        wgmma::hold_registers<TILE / 8>(dp);
        wgmma::fence();
        mma_rows_by_rows<HS>(p, q_addr, ROWS, 64 * wg, kb);  // S
        wgmma::commit();
        mma_rows_by_rows<HS>(dp, do_addr, ROWS, 64 * wg, vb);  // dP
        wgmma::commit();
        wgmma::wait<1>();  // S
        wgmma::hold_registers<TILE / 8>(p);

        const bool needs_mask = kt0 + TILE - 1 > wg_q0 || kt0 + TILE > T;
        probs_rows<TILE>(p, row_lo, kt0, T, needs_mask, lse2, scale_log2, t);
        wgmma::wait<0>();  // dP
        wgmma::hold_registers<TILE / 8>(dp);
        ds_rows<TILE>(dp, p, dlt);
        uint32_t dsf[TILE / 16][4];
        acc_to_a<TILE>(dsf, dp);
        wgmma::hold_registers<HS / 8>(dq);
        wgmma::hold_registers<TILE / 16>(dsf);
        wgmma::fence();
        mma_regs_by_tile<HS, TILE>(dq, dsf, kb);
        wgmma::commit();
        wgmma::wait<0>();
        wgmma::hold_registers<HS / 8>(dq);
    });

    if constexpr (CODES) {  // dQ as bf16 rows [ROWS][HS + 8] from the tiles' start (see the dK/dV kernel)
        __syncthreads();
        const int valid = min(ROWS, T - q0), LDS = HS + 8;
        store_rows<HS>(sQ, LDS, 64 * wg + 16 * warp, valid, dq, scale, scale, lane);
        __syncthreads();
        staged_dqkv_codes<HS, THREADS, 1>(codes, {sQ}, LDS, valid, b * T + q0, 0, h, NH, T);
    } else {
        __nv_bfloat16 *dq_head = dqkv + (int64_t)b * T * row_stride + h * HS;
        store_rows<HS>(dq_head, row_stride, wg_q0 + 16 * warp, T, dq, scale, scale, lane);
    }
}

// A warp-specialized kernel's producer, publishing its stages one behind (each thread of it, after
// committing the copies of the newest stage): the group before them has landed, is fenced for
// wgmma and published at *oldest, and the newest stage's barrier becomes the oldest.
// publish_last: after the loop, the last group.
__device__ __forceinline__ void publish_previous(uint64_t *&oldest, uint64_t *newest) {
    cp_async_wait<1>();
    wgmma::fence_proxy_async_shared();
    mbar_arrive(oldest);
    oldest = newest;
}
__device__ __forceinline__ void publish_last(uint64_t *oldest) {
    cp_async_wait<0>();
    wgmma::fence_proxy_async_shared();
    mbar_arrive(oldest);
}
// A consumer warp's release of a stage, once each of its lanes is done with it (its wgmma waited
// for, its own loads returned): one arrival for the warp after __syncwarp, which orders the lanes'
// accesses before lane 0's (releasing) arrival, so the stage's barrier counts warps, not threads
// (the backward's: 8 shared-memory arrivals a stage instead of 256). The producers' arrivals stay
// one a thread: each thread's cp.async completes for that thread alone.
__device__ __forceinline__ void release_stage_warp(uint64_t *empty) {
    __syncwarp();
    if (threadIdx.x % 32 == 0) mbar_arrive(empty);
}

// ---------------------------------------------------------------------------------------------
// The wgmma dK/dV kernel with dQ by integer reduction, warp-specialized (attention_backward_wgmma_ws;
// HS 64, sm_90a; NOT RUN on a GPU, 2026-11-29). In the kernels above both warpgroups of a CTA load
// every tile themselves and meet at a CTA-wide barrier per tile, so they run in lockstep: both do
// their softmax and dS at the same moment, and the tensor cores idle then. Here a producer
// warpgroup (the CTA's third) does all the loading and two consumer warpgroups compute, each at
// its own pace, synchronized with the producer by mbarriers and with each other only where dQ
// needs both:
//   producer: K, V (128 keys) once; then query tile i's Q, dO, lse, delta and ||dO||_1 into stage
//             (i - first) % STAGES once both warpgroups have released it (empty[stage], one
//             arrival per consumer warp: 8); a stage is published (copies complete, fenced for
//             wgmma, full[stage], 128 arrivals) once the next tile's copies are issued, so that two
//             tiles are in flight. All 128 threads issue the copies (4 16-byte cp.async a thread
//             for each of Q and dO, and a tile's statistics): one warp alone issued 38 a lane per
//             tile, by an estimate of its issue rate a quarter to a half of a tile's compute time.
//   consumer warpgroup w (keys k0 + 64 w ..): per tile, the wgmma dK/dV kernel's four products in
//             its order (S^T, dP^T; P^T; dV += P^T dO; dS^T; dK += dS^T Q), so dK and dV keep its
//             bits; its dS^T rows (bf16) into the tile's dS^T buffer (two, by tile parity).
//   dQ of tile i: warpgroup i % 2 alone makes it, dS K over all 128 keys (one wgmma chain of 8
//             k16 steps, A = dS and B = K read MN-major), after the other warpgroup has staged its
//             rows (named barrier DS_READY + parity: the other arrives, this one waits); turns it to
//             reduce_dq_tile's fixed point in its own int32 staging and adds it by one bulk
//             reduction. The other warpgroup rewrites the buffer two tiles later, after waiting at
//             tile i + 1's DS_READY, where this one arrives only once its dQ of tile i is done. The
//             dQ work alternates between the warpgroups: 5 products per tile pair on average, as
//             attention_backward_wgmma_reduce_dq, without its fp32 hand-over.
// A warpgroup that the causal mask or T leaves without work on a tile (the second one on the first
// tile) computes nothing there, writes zeros as its dS^T rows and keeps the protocol. Each wgmma
// group is waited for inside the branch that issued it (ptxas serializes wgmma otherwise; t_42).
// 384 threads, 1 CTA per SM: the producer warpgroup gives up registers (setmaxnreg: 24 a
// thread, as FlashAttention-3's producer) so that the consumers have 240 (the launch gives each
// of the 384 threads 168, where the consumers spill; ptxas -v: no spills with the producer's copy
// loops kept rolled). Shared memory from a 1024-byte boundary: K, V [128][HS]; Q, dO
// [STAGES][64][HS] (all swizzled); dS^T [2][128][64] (swizzled); the two warpgroups' dQ stagings
// [2][64][HS] int32; statistics [STAGES][3][64] fp32; mbarriers.
namespace bwd_ws {
constexpr int STAGES = 3, CONSUMERS = 2, THREADS = 128 * (CONSUMERS + 1);
constexpr int PRODUCER_REGISTERS = 24, CONSUMER_REGISTERS = 240;
// setmaxnreg moves registers within what the CTA got at launch (ptxas gives the kernel the launch
// bounds' most, 168; t_42 checks it), not the SM's 64K: an increase past that pool never returns.
static_assert(128 * (PRODUCER_REGISTERS + CONSUMERS * CONSUMER_REGISTERS) <= THREADS * wgmma::launch_registers(THREADS),
              "the registers the CTA launches with");
constexpr int ROWS = 64 * CONSUMERS, TILE = 64;
constexpr int BAR_DS_READY = 8;  // + tile parity; 0 is __syncthreads', 1 + warpgroup warpgroup_sync's
static_assert(BAR_DS_READY > CONSUMERS + 1 && BAR_DS_READY + 1 < 16, "named barriers of their own");
template <int HS> struct Layout {
    static constexpr uint32_t K = 0, V = K + ROWS * HS * 2, Q = V + ROWS * HS * 2, DO = Q + STAGES * TILE * HS * 2,
                              DS = DO + STAGES * TILE * HS * 2, DQ = DS + 2 * ROWS * TILE * 2,
                              STATS = DQ + 2 * TILE * HS * 4, BARRIERS = STATS + STAGES * 3 * TILE * 4,
                              END = BARRIERS + (2 * STAGES + 1) * 8;
    static_assert(V % 1024 == 0 && Q % 1024 == 0 && DO % 1024 == 0 && DS % 1024 == 0 && DQ % 16 == 0 &&
                      BARRIERS % 8 == 0, "swizzled tiles on 1024-byte boundaries, the staging 16-byte aligned");
};
template <int HS> constexpr size_t smem_bytes() { return wgmma::SWIZZLE_ALIGN + Layout<HS>::END; }
}  // namespace bwd_ws

template <int HS>
__global__ void __launch_bounds__(bwd_ws::THREADS, 1)
attention_backward_kv_ws_wgmma_kernel(__nv_bfloat16 *__restrict__ dqkv, const __nv_bfloat16 *__restrict__ dout,
                                      const __nv_bfloat16 *__restrict__ qkv, const float *__restrict__ lse,
                                      const float *__restrict__ delta, int T, int NH, float scale, DqReduce reduce) {
    using namespace bwd_ws;
    using L = Layout<HS>;
    static_assert(HS == 64, "registers and the m64n64 dQ product");
    LLMC_DYNAMIC_SMEM(smem_raw);
    unsigned char *smem = swizzle_aligned(smem_raw);
    __nv_bfloat16 *sK = reinterpret_cast<__nv_bfloat16 *>(smem + L::K), *sV = reinterpret_cast<__nv_bfloat16 *>(smem + L::V);
    __nv_bfloat16 *sQ = reinterpret_cast<__nv_bfloat16 *>(smem + L::Q), *sdO = reinterpret_cast<__nv_bfloat16 *>(smem + L::DO);
    __nv_bfloat16 *sDS = reinterpret_cast<__nv_bfloat16 *>(smem + L::DS);
    float *sStats = reinterpret_cast<float *>(smem + L::STATS);  // [stage][lse, delta, ||dO||_1][TILE]
    uint64_t *full = reinterpret_cast<uint64_t *>(smem + L::BARRIERS), *empty = full + STAGES, *kv_full = empty + STAGES;

    const int bh = cta_head(), b = bh / NH, h = bh % NH;
    const int k0 = blockIdx.y * ROWS;  // the first key blocks see the most queries: first
    const int warp_id = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int C = NH * HS;
    const int64_t row_stride = 3 * (int64_t)C;
    const __nv_bfloat16 *q_head = qkv + (int64_t)b * T * row_stride + h * HS;
    const __nv_bfloat16 *k_head = q_head + C, *v_head = q_head + 2 * C;
    const __nv_bfloat16 *do_head = dout + (int64_t)b * T * C + h * HS;
    const int first_tile = k0 / TILE, n_tiles = (T + TILE - 1) / TILE;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) mbar_init(&full[s], 128), mbar_init(&empty[s], 4 * CONSUMERS);
        mbar_init(kv_full, 128);
    }
    __syncthreads();  // the mbarriers exist before anyone arrives; from here on no CTA-wide barrier

    if (threadIdx.x >= 128 * CONSUMERS) {
        wgmma::lower_registers<PRODUCER_REGISTERS>();
        const int tid = threadIdx.x - 128 * CONSUMERS;
        load_tile_async<ROWS, HS, true, 128, 1>(sK, k_head, row_stride, k0, T, tid);
        load_tile_async<ROWS, HS, true, 128, 1>(sV, v_head, row_stride, k0, T, tid);
        cp_async_commit();
        uint64_t *oldest = kv_full;  // the barrier that publishes the oldest group in flight
        for (int i = first_tile; i < n_tiles; i++) {
            const int j = i - first_tile, stage = j % STAGES;
            if (j >= STAGES) mbar_wait(&empty[stage], (j / STAGES - 1) & 1);  // tile i - STAGES released
            load_tile_async<TILE, HS, true, 128, 1>(sQ + stage * TILE * HS, q_head, row_stride, i * TILE, T, tid);
            load_tile_async<TILE, HS, true, 128, 1>(sdO + stage * TILE * HS, do_head, C, i * TILE, T, tid);
            float *stats = sStats + stage * 3 * TILE;
            for (int r = tid; r < TILE; r += 128) {
                const int q = i * TILE + r;
                const bool valid = q < T;
                const int64_t at = (int64_t)bh * T + (valid ? q : 0);
                cp_async_4(stats + r, lse + at, valid);
                cp_async_4(stats + TILE + r, delta + at, valid);
                cp_async_4(stats + 2 * TILE + r, reduce.dout_l1 + at, valid);
            }
            cp_async_commit();
            publish_previous(oldest, &full[stage]);
        }
        publish_last(oldest);
        return;
    }
    wgmma::raise_registers<CONSUMER_REGISTERS>();

    const int wg = threadIdx.x / 128, warp = warp_id % 4;
    const int g = lane >> 2, t = lane & 3;
    const float scale_log2 = scale * LOG2E;
    const int wg_k0 = k0 + 64 * wg;
    const int key_lo = wg_k0 + 16 * warp + g;  // key of accumulator rows 0, 1 (2, 3: key_lo + 8)
    const float max_k = __uint_as_float(reduce.head_max[2 * bh]), max_v = __uint_as_float(reduce.head_max[2 * bh + 1]);
    const uint32_t k_addr = smem_addr(sK), v_addr = smem_addr(sV);
    uint32_t *sDQ = reinterpret_cast<uint32_t *>(smem + L::DQ) + wg * TILE * HS;  // this warpgroup's
    const bool bulk_thread = threadIdx.x % 128 == 0;  // issues the warpgroup's bulk reductions

    float dk[HS / 8][4], dv[HS / 8][4];
#pragma unroll
    for (int n = 0; n < HS / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk[n][e] = dv[n][e] = 0.0f;
    mbar_wait(kv_full, 0);

    for (int i = first_tile; i < n_tiles; i++) {
        const int j = i - first_tile, stage = j % STAGES, parity = i & 1;
        const int qt0 = i * TILE;
        const uint32_t qb = smem_addr(sQ + stage * TILE * HS), dob = smem_addr(sdO + stage * TILE * HS);
        const float *sLse = sStats + stage * 3 * TILE, *sDelta = sLse + TILE, *sL1 = sLse + 2 * TILE;
        __nv_bfloat16 *ds_tile = sDS + parity * ROWS * TILE;
        const bool makes_dq = wg == parity;
        // Not active: keys past T, or every query before them (the first warpgroup is active on
        // every tile of the loop).
        const bool active = wg_k0 < T && qt0 + TILE - 1 >= wg_k0;
        mbar_wait(&full[stage], (j / STAGES) & 1);

        if (active) {
            uint32_t dsf[TILE / 16][4], pf[TILE / 16][4];
            kv_tile_until_dk<HS, ROWS>(dsf, pf, dv, k_addr, v_addr, wg, qb, dob, key_lo, qt0, wg_k0, T, sLse, sDelta,
                                       scale_log2, t);
            // (before dK's product: the A registers of a wgmma in flight may not even be read)
            store_a_swizzled<TILE>(ds_tile, ROWS, dsf, 64 * wg + 16 * warp, lane);
            wgmma::hold_registers<HS / 8>(dk);
            wgmma::hold_registers<TILE / 16>(dsf);
            wgmma::fence();
            mma_regs_by_tile<HS, TILE>(dk, dsf, qb);  // dK += dS^T Q
            wgmma::commit();
            wgmma::wait<0>();  // dV, dK
            wgmma::hold_registers<HS / 8>(dv);
            wgmma::hold_registers<HS / 8>(dk);
        } else {
            const uint32_t zeros[TILE / 16][4] = {};
            store_a_swizzled<TILE>(ds_tile, ROWS, zeros, 64 * wg + 16 * warp, lane);
        }
        wgmma::fence_proxy_async_shared();  // the dS^T rows are read by wgmma
        if (!makes_dq) {
            named_barrier_arrive(BAR_DS_READY + parity, 256);
        } else {
            named_barrier_sync(BAR_DS_READY + parity, 256);  // both warpgroups' rows are in ds_tile
            float dq[HS / 8][4];
            wgmma::hold_registers<HS / 8>(dq);
            wgmma::fence();
            mma_tiles_mn_major<HS>(dq, smem_addr(ds_tile), k_addr, ROWS, 0);        // keys k0..k0+63
            mma_tiles_mn_major<HS>(dq, smem_addr(ds_tile), k_addr, ROWS, 64, true);  // then k0+64..
            wgmma::commit();
            wgmma::wait<0>();
            wgmma::hold_registers<HS / 8>(dq);
            if (bulk_thread) bulk_wait_read<0>();  // this warpgroup's last share has left sDQ
            warpgroup_sync();
            dq_share_fixed<HS / 8>(dq, 16 * warp, 0, sL1, max_k, max_v, lane, [&](int row, int col, uint32_t v0, uint32_t v1) {
                stage_dq_pair<HS>(sDQ, row, col, v0, v1);
            });
            wgmma::fence_proxy_async_shared();  // the bulk reduction reads through the async proxy
            warpgroup_sync();
            if (bulk_thread) {
                bulk_reduce_add_u32(reduce.acc + ((int64_t)bh * T + qt0) * HS, sDQ, (uint32_t)min(TILE, T - qt0) * HS * 4);
                bulk_commit();
            }
        }
        release_stage_warp(&empty[stage]);  // the warp is done with the stage's Q, dO and statistics
    }
    if (bulk_thread) bulk_wait_read<0>();  // shared memory stays until the last share is read

    __nv_bfloat16 *dk_head = dqkv + (int64_t)b * T * row_stride + C + h * HS;
    store_rows<HS>(dk_head, row_stride, wg_k0 + 16 * warp, T, dk, scale, scale, lane);
    store_rows<HS>(dk_head + C, row_stride, wg_k0 + 16 * warp, T, dv, 1.0f, 1.0f, lane);
}

// ---------------------------------------------------------------------------------------------
// The wgmma forward, warp-specialized (attention_forward_wgmma_ws; HS 64, sm_90a; NOT RUN on a GPU,
// 2026-11-29): FlashAttention-3's forward. A producer warpgroup (the CTA's third) does all the
// loading; two consumer warpgroups of 64 queries each compute at their own pace, synchronized with
// the producer by mbarriers only (no CTA-wide barrier in the loop, where the other wgmma forward
// meets at one per tile):
//   producer: the consumers' Q rows once (q_full); then key tile j's K and V (128 keys) into stage
//             j % STAGES once every consumer has released the tile STAGES before it (empty, one
//             arrival per warp of an active warpgroup); a tile is published (copies complete,
//             fenced for wgmma, full[stage], 128 arrivals) once the next tile's copies are issued,
//             so two are in flight. Publishing one behind needs STAGES >= 3 (tile j is released in the
//             iteration that waits for tile j + 1); tile j - 1 is published about STAGES - 2
//             consumer iterations before it is needed, less the time to issue tile j's copies, so
//             4 stages leave a margin. The whole warpgroup issues the copies (8 16-byte cp.async a
//             thread a tile): one warp alone spent about as long issuing a tile's 64 a lane as the
//             consumers spend computing it (a review's count of its PTX).
//   consumer: the pipelined wgmma forward's loop over 128-key tiles (S_j = Q K_j^T beside
//             O += P_{j-1} V_{j-1}; S_j's softmax while the product runs); it releases tile j - 1
//             once O += P_{j-1} V_{j-1} has landed. The first warpgroup's queries may end a tile
//             before the CTA's last; it leaves that tile alone (the producer never refills its
//             stage, so it need not be released).
// 128 keys a tile (FlashAttention-3's at head size 64): the scores' A operand (Q) is read once for
// 128 columns, and the softmax's row maxima and O's rescale come once per 128 keys; so the online
// softmax's rescaling points differ from the other forwards' (64 keys), and so do the bits (within
// the same bound of fp64). Blocks of 128 queries end at T rounded up to 64: block 0 (started
// first) is the one of most keys, and only the last, the shortest, can have an idle warpgroup
// (one wholly before query 0), which leaves at once.
// 384 threads, 1 CTA per SM, up to 168 registers a thread (ptxas -v, nvcc 13: 157, no spills; S 64,
// O 32 and P 32 of them). Three consumer warpgroups (FlashAttention-3's 192 x 128 tile at head size
// 64) could have 160 each with setmaxnreg, and ptxas spilled 328 bytes there; two need no
// registers from the producer's warpgroup.
// Shared memory from a 1024-byte boundary: Q [2][64][HS], K and V [STAGES][128][HS] (swizzled),
// mbarriers: 145 KiB at HS 64.
namespace fwd_ws {
constexpr int CONSUMERS = 2, THREADS = 128 * (CONSUMERS + 1);
constexpr int ROWS = 64 * CONSUMERS, KEYS = 128, STAGES = 4;
static_assert(STAGES >= 3, "a tile is published once the next is issued, and released while the next is in use");
static_assert(ROWS - 64 < KEYS, "a warpgroup's last tile is the CTA's or the one before, never refilled");
template <int HS> struct Layout {
    static constexpr uint32_t Q = 0, K = Q + ROWS * HS * 2, V = K + STAGES * KEYS * HS * 2,
                              BARRIERS = V + STAGES * KEYS * HS * 2, END = BARRIERS + (2 * STAGES + 1) * 8;
    static_assert(K % 1024 == 0 && V % 1024 == 0 && (KEYS * HS * 2) % 1024 == 0 && BARRIERS % 8 == 0,
                  "swizzled tiles on 1024-byte boundaries");
};
template <int HS> constexpr size_t smem_bytes() { return wgmma::SWIZZLE_ALIGN + Layout<HS>::END; }
// Blocks of ROWS queries, aligned to end at T rounded up to 64 (so that each warpgroup's 64 rows
// are all before query 0 or all from it on).
__host__ __device__ constexpr int padded_rows(int T) { return (T + 63) / 64 * 64; }
__host__ __device__ constexpr int blocks(int T) { return (padded_rows(T) + ROWS - 1) / ROWS; }
}  // namespace fwd_ws

template <int HS>
__global__ void __launch_bounds__(fwd_ws::THREADS, 1)
attention_forward_ws_wgmma_kernel(__nv_bfloat16 *__restrict__ out, float *__restrict__ lse,
                                  const __nv_bfloat16 *__restrict__ qkv, int T, int NH, float scale) {
    using namespace fwd_ws;
    using L = Layout<HS>;
    static_assert(HS == 64, "registers: S, O and P of 128 keys at head size 64");
    constexpr uint32_t Q_TILE = 64 * HS * 2, KV_TILE = KEYS * HS * 2;  // bytes
    LLMC_DYNAMIC_SMEM(smem_raw);
    unsigned char *smem = swizzle_aligned(smem_raw);
    __nv_bfloat16 *sQ = reinterpret_cast<__nv_bfloat16 *>(smem + L::Q);
    __nv_bfloat16 *sK = reinterpret_cast<__nv_bfloat16 *>(smem + L::K), *sV = reinterpret_cast<__nv_bfloat16 *>(smem + L::V);
    uint64_t *full = reinterpret_cast<uint64_t *>(smem + L::BARRIERS), *empty = full + STAGES, *q_full = empty + STAGES;

    const int bh = cta_head(), b = bh / NH, h = bh % NH;
    const int q0 = padded_rows(T) - ROWS * (blockIdx.y + 1);  // block 0: the most keys; < 0 in the last
    const int warp_id = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int C = NH * HS;
    const int64_t row_stride = 3 * (int64_t)C;
    const __nv_bfloat16 *q_head = qkv + (int64_t)b * T * row_stride + h * HS;
    const __nv_bfloat16 *k_head = q_head + C, *v_head = q_head + 2 * C;
    const int n_tiles = (min(q0 + ROWS, T) - 1) / KEYS + 1;  // key tiles that any query here sees
    const int first_active = q0 < 0 ? -q0 / 64 : 0;          // warpgroups before it have no query

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) mbar_init(&full[s], 128), mbar_init(&empty[s], 4 * (CONSUMERS - first_active));
        mbar_init(q_full, 128);
    }
    __syncthreads();  // the mbarriers exist before anyone arrives; from here on no CTA-wide barrier

    if (threadIdx.x >= 128 * CONSUMERS) {
        const int tid = threadIdx.x - 128 * CONSUMERS;
        for (int w = first_active; w < CONSUMERS; w++)
            load_tile_async<64, HS, true, 128>(sQ + w * 64 * HS, q_head, row_stride, q0 + 64 * w, T, tid);
        cp_async_commit();
        uint64_t *oldest = q_full;  // the barrier that publishes the oldest group in flight
        for (int j = 0; j < n_tiles; j++) {
            const int stage = j % STAGES;
            if (j >= STAGES) mbar_wait(&empty[stage], (j / STAGES - 1) & 1);  // tile j - STAGES released
            load_tile_async<KEYS, HS, true, 128>(sK + stage * KEYS * HS, k_head, row_stride, j * KEYS, T, tid);
            load_tile_async<KEYS, HS, true, 128>(sV + stage * KEYS * HS, v_head, row_stride, j * KEYS, T, tid);
            cp_async_commit();
            publish_previous(oldest, &full[stage]);
        }
        publish_last(oldest);
        return;
    }
    const int wg = threadIdx.x / 128, warp = warp_id % 4;
    if (wg < first_active) return;  // rows before query 0 (the last block's): not counted in empty

    const int g = lane >> 2, t = lane & 3;
    const int wg_q0 = q0 + 64 * wg;
    const int wg_tiles = min(wg_q0 + 63, T - 1) / KEYS + 1;  // its key tiles: n_tiles or n_tiles - 1
    const float scale_log2 = scale * LOG2E;
    const uint32_t q_addr = smem_addr(sQ) + wg * Q_TILE, k_addr = smem_addr(sK), v_addr = smem_addr(sV);

    float o[HS / 8][4];
#pragma unroll
    for (int n = 0; n < HS / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    uint32_t pf[KEYS / 16][4];  // P_{j-1} packed to bf16: the A operand of the product in flight
    auto tile_ready = [&](int j) { mbar_wait(&full[j % STAGES], (j / STAGES) & 1); };  // published
    auto issue_scores = [&](float (*s)[4], int j) {
#pragma unroll
        for (int kk = 0; kk < HS / 16; kk++)
            wgmma::mma_ss_n128(s, wgmma::desc_k_major(q_addr, 64, 0, kk),
                               wgmma::desc_k_major(k_addr + (j % STAGES) * KV_TILE, KEYS, 0, kk), kk > 0);
        wgmma::commit();
    };
    auto issue_product = [&](int j) {  // O += P_{j-1} V_{j-1}
        mma_regs_by_tile<HS, KEYS>(o, pf, v_addr + ((j - 1) % STAGES) * KV_TILE);
        wgmma::commit();
    };
    auto softmax = [&](float (*s)[4], int j, float alpha[2]) {
        wgmma::hold_registers<KEYS / 8>(s);
        if (j * KEYS + KEYS - 1 > wg_q0 || j * KEYS + KEYS > T) mask_scores<KEYS>(s, j * KEYS, wg_q0 + 16 * warp + g, T, t);
        for (int half = 0; half < 2; half++) alpha[half] = softmax_scores<KEYS>(s, half, m, l, scale_log2);
    };
    auto product_landed = [&](int j) {  // and tile j - 1 released
        wgmma::wait<0>();
        wgmma::hold_registers<HS / 8>(o);
        wgmma::hold_registers<KEYS / 16>(pf);  // P_{j-1}'s registers stay untouched until here
        release_stage_warp(&empty[(j - 1) % STAGES]);
    };
    mbar_wait(q_full, 0);
    for (int j = 0; j <= wg_tiles; j++)
        pipelined_forward_iteration<KEYS, HS>(j, wg_tiles, o, pf, tile_ready, issue_scores, issue_product, softmax,
                                              product_landed);
    finish_forward_rows<HS>(out + (int64_t)b * T * C + h * HS, C, lse + (int64_t)bh * T, wg_q0 + 16 * warp, T, o, m,
                            l, lane);
}

// Writes 1 where the kernels above were built with wgmma (sm_90a), 0 where they compile to nothing.
__global__ void wgmma_probe_kernel(int *compiled_in) { *compiled_in = wgmma::wgmma_compiled_in(); }

// ---------------------------------------------------------------------------------------------
// Host side

template <typename Kernel>
static inline void launch_config(Kernel kernel, size_t smem_bytes) {
    attention_cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_bytes));
}

// The grid of an attention kernel over BH = B NH heads of `blocks` CTAs each. CTAs start in the
// order of their linear index (x fastest, then y, then z), so the grid (G, blocks, BH / G) runs a
// group of G heads block by block from the one of most work (longest first keeps the SMs busy to
// the group's end), then the next group. Within a group the heads' blocks read the same tiles
// again (K and V in the forward, Q and dO in the backward: 256 KB a head at T 1024, HS 64), which
// then still sit in L2; with every head in one group (the order before 2026-11-29) a head's next
// block came after all the others', by when L2 (50 MB) had long dropped them. G: the largest
// divisor of BH up to about 4 SMs' worth of CTAs per group (a few waves, so that the longest-first
// order still balances), head_group_override where set (the harness's comparison; BH: the old order).
inline int head_group_override = 0;
static inline int multiprocessors() {
    static int sms = 0;  // one device per process, as the trainers run
    if (!sms) {
        int device;
        attention_cuda_check(cudaGetDevice(&device));
        attention_cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    }
    return sms;
}
static inline dim3 cta_grid(int BH, int blocks) {
    int G = head_group_override > 0 ? std::min(head_group_override, BH)
                                    : std::max(1, std::min(BH, (4 * multiprocessors() + blocks - 1) / blocks));
    while (BH % G) G--;
    if (BH / G > 65535) G = BH;  // gridDim.z's limit (a BH with no divisor near the target): the old order
    return dim3(G, blocks, BH / G);
}

// A tensor argument and the alignment its accesses need.
struct TensorArg {
    const void *ptr;
    unsigned alignment;
};

// qkv and dout are read by cp.async in 16 B chunks; the other tensors by bf16 pairs or floats.
// cudaMalloc'd tensors satisfy all of it (rows are C = NH * HS bf16, a multiple of 16 B).
static inline void check_args(const char *fn, int B, int T, int NH, int HS, const TensorArg *args, int n_args) {
    if (!attention_head_size_supported(HS))
        die("%s: head size %d is not supported (supported: 64, 128)", fn, HS);
    if (B < 1 || T < 1 || NH < 1) die("%s: bad shape B=%d T=%d NH=%d", fn, B, T, NH);
    if ((int64_t)B * NH > INT32_MAX || (T + ROWS_PER_CTA - 1) / ROWS_PER_CTA > 65535)
        die("%s: shape B=%d T=%d NH=%d exceeds the launch grid", fn, B, T, NH);
    for (int i = 0; i < n_args; i++)
        if ((uintptr_t)args[i].ptr % args[i].alignment != 0)
            die("%s: tensor argument %d is not %u-byte aligned", fn, i + 1, args[i].alignment);
}

template <int HS, int MIN_CTAS = forward_min_ctas<HS>(), int RT = forward_row_tiles<HS>()>
static inline void forward_hs(__nv_bfloat16 *out, float *lse, const __nv_bfloat16 *qkv, int B, int T, int NH,
                              cudaStream_t stream) {
    const size_t smem = forward_smem_bytes<HS, RT>();
    launch_config(attention_forward_kernel<HS, MIN_CTAS, RT>, smem);
    const dim3 grid = cta_grid(B * NH, (T + RT * ROWS_PER_CTA - 1) / (RT * ROWS_PER_CTA));
    LLMC_LAUNCH(grid, NTHREADS, smem, stream, attention_forward_kernel<HS, MIN_CTAS, RT>)(out, lse, qkv, T, NH, 1.0f / sqrtf((float)HS));
    attention_cuda_check(cudaGetLastError());
}

template <int HS, int WG = fwd_wgmma::DEFAULT_WG, bool PIPELINED = false>
static inline void forward_wgmma_hs(__nv_bfloat16 *out, float *lse, const __nv_bfloat16 *qkv, int B, int T, int NH,
                                    cudaStream_t stream) {
    const size_t smem = fwd_wgmma::smem_bytes<HS, WG>();
    launch_config(attention_forward_wgmma_kernel<HS, WG, PIPELINED>, smem);
    constexpr int QROWS = fwd_wgmma::query_rows<WG>();
    const dim3 grid = cta_grid(B * NH, (T + QROWS - 1) / QROWS);
    LLMC_LAUNCH(grid, fwd_wgmma::cta_threads<WG>(), smem, stream, attention_forward_wgmma_kernel<HS, WG, PIPELINED>)(
        out, lse, qkv, T, NH, 1.0f / sqrtf((float)HS));
    attention_cuda_check(cudaGetLastError());
}

// The warp-specialized wgmma forward (HS 64, sm_90a): a producer warpgroup and two consumer warpgroups.
template <int HS>
static inline void forward_wgmma_ws_hs(__nv_bfloat16 *out, float *lse, const __nv_bfloat16 *qkv, int B, int T, int NH,
                                       cudaStream_t stream) {
    const auto kernel = attention_forward_ws_wgmma_kernel<HS>;
    const size_t smem = fwd_ws::smem_bytes<HS>();
    launch_config(kernel, smem);
    LLMC_LAUNCH(cta_grid(B * NH, fwd_ws::blocks(T)), fwd_ws::THREADS, smem, stream, kernel)(out, lse, qkv, T, NH,
                                                                                             1.0f / sqrtf((float)HS));
    attention_cuda_check(cudaGetLastError());
}

// The backward's first step, delta = rowsum(dO * O) into scratch, for every backward version
// (with BOUNDS, also the bounds of the dQ by integer reduction).
template <int HS, bool BOUNDS = false>
static inline float *backward_delta(void *scratch, const __nv_bfloat16 *dout, const __nv_bfloat16 *out, int B, int T,
                                    int NH, cudaStream_t stream, DqBounds bounds = DqBounds{}) {
    const int64_t rows = (int64_t)B * T * NH;
    float *delta = (float *)scratch;
    LLMC_LAUNCH((unsigned)((rows + NWARPS - 1) / NWARPS), NTHREADS, 0, stream, attention_delta_kernel<HS, BOUNDS>)(
        delta, dout, out, B, T, NH, bounds);
    attention_cuda_check(cudaGetLastError());
    return delta;
}

// The backward's two main kernels, each launched on its own (dev/cuda/attention.cu times them
// apart), after backward_delta: dK and dV, then dQ. Each writes only its own part of dqkv, or
// with codes (codes.q set) of its FP8 codes (attention_backward).
template <typename Kernel, typename KernelCodes>
static inline void launch_backward(Kernel kernel, KernelCodes kernel_codes, dim3 grid, int threads, size_t smem,
                                   __nv_bfloat16 *dqkv, const __nv_bfloat16 *dout, const __nv_bfloat16 *qkv,
                                   const float *lse, const float *delta, int T, int NH, float scale,
                                   const QuantCodesOut &codes, cudaStream_t stream) {
    if (codes.q) {
        launch_config(kernel_codes, smem);
        LLMC_LAUNCH(grid, threads, smem, stream, kernel_codes)(dqkv, dout, qkv, lse, delta, T, NH, scale, codes);
    } else {
        launch_config(kernel, smem);
        LLMC_LAUNCH(grid, threads, smem, stream, kernel)(dqkv, dout, qkv, lse, delta, T, NH, scale, NoCodes{});
    }
    attention_cuda_check(cudaGetLastError());
}
template <int HS, int WG = bwd_wgmma::DEFAULT_WG>
static inline void backward_kv_wgmma_hs(__nv_bfloat16 *dqkv, const __nv_bfloat16 *dout, const __nv_bfloat16 *qkv,
                                        const float *lse, const float *delta, int B, int T, int NH,
                                        cudaStream_t stream, const QuantCodesOut &codes = QuantCodesOut{}) {
    constexpr int ROWS = bwd_wgmma::resident_rows<WG>();
    launch_backward(attention_backward_kv_wgmma_kernel<HS, WG, false>, attention_backward_kv_wgmma_kernel<HS, WG, true>,
                    cta_grid(B * NH, (T + ROWS - 1) / ROWS), bwd_wgmma::cta_threads<WG>(), bwd_wgmma::smem_bytes<HS, WG>(),
                    dqkv, dout, qkv, lse, delta, T, NH, 1.0f / sqrtf((float)HS), codes, stream);
}
template <int HS, int WG = bwd_wgmma::DEFAULT_WG>
static inline void backward_dq_wgmma_hs(__nv_bfloat16 *dqkv, const __nv_bfloat16 *dout, const __nv_bfloat16 *qkv,
                                        const float *lse, const float *delta, int B, int T, int NH,
                                        cudaStream_t stream, const QuantCodesOut &codes = QuantCodesOut{}) {
    constexpr int ROWS = bwd_wgmma::resident_rows<WG>();
    launch_backward(attention_backward_dq_wgmma_kernel<HS, WG, false>, attention_backward_dq_wgmma_kernel<HS, WG, true>,
                    cta_grid(B * NH, (T + ROWS - 1) / ROWS), bwd_wgmma::cta_threads<WG>(), bwd_wgmma::smem_bytes<HS, WG>(),
                    dqkv, dout, qkv, lse, delta, T, NH, 1.0f / sqrtf((float)HS), codes, stream);
}
template <int HS, int MIN_CTAS = backward_min_ctas<HS>(), int BS = bwd_stream_rows<HS>(), int RT = 1>
static inline void backward_kv_hs(__nv_bfloat16 *dqkv, const __nv_bfloat16 *dout, const __nv_bfloat16 *qkv,
                                  const float *lse, const float *delta, int B, int T, int NH,
                                  cudaStream_t stream, const QuantCodesOut &codes = QuantCodesOut{}) {
    constexpr int KROWS = RT * ROWS_PER_CTA;
    launch_backward(attention_backward_kv_kernel<HS, MIN_CTAS, BS, RT, false>,
                    attention_backward_kv_kernel<HS, MIN_CTAS, BS, RT, true>, cta_grid(B * NH, (T + KROWS - 1) / KROWS),
                    NTHREADS, backward_smem_bytes<HS, BS, RT>(), dqkv, dout, qkv, lse, delta, T, NH,
                    1.0f / sqrtf((float)HS), codes, stream);
}
template <int HS, int MIN_CTAS = backward_min_ctas<HS>(), int BS = bwd_stream_rows<HS>(), int RT = 1>
static inline void backward_dq_hs(__nv_bfloat16 *dqkv, const __nv_bfloat16 *dout, const __nv_bfloat16 *qkv,
                                  const float *lse, const float *delta, int B, int T, int NH,
                                  cudaStream_t stream, const QuantCodesOut &codes = QuantCodesOut{}) {
    constexpr int QROWS = RT * ROWS_PER_CTA;
    launch_backward(attention_backward_dq_kernel<HS, MIN_CTAS, BS, RT, false>,
                    attention_backward_dq_kernel<HS, MIN_CTAS, BS, RT, true>, cta_grid(B * NH, (T + QROWS - 1) / QROWS),
                    NTHREADS, backward_smem_bytes<HS, BS, RT>(), dqkv, dout, qkv, lse, delta, T, NH,
                    1.0f / sqrtf((float)HS), codes, stream);
}

template <int HS, int WG = bwd_wgmma::DEFAULT_WG>
static inline void backward_wgmma_hs(__nv_bfloat16 *dqkv, void *scratch, const __nv_bfloat16 *dout,
                                     const __nv_bfloat16 *qkv, const __nv_bfloat16 *out, const float *lse, int B, int T,
                                     int NH, cudaStream_t stream, const QuantCodesOut &codes = QuantCodesOut{}) {
    const float *delta = backward_delta<HS>(scratch, dout, out, B, T, NH, stream);
    backward_kv_wgmma_hs<HS, WG>(dqkv, dout, qkv, lse, delta, B, T, NH, stream, codes);
    backward_dq_wgmma_hs<HS, WG>(dqkv, dout, qkv, lse, delta, B, T, NH, stream, codes);
}

// scratch: attention_backward_scratch_bytes, delta (B, NH, T) fp32.
template <int HS, int MIN_CTAS = backward_min_ctas<HS>(), int BS = bwd_stream_rows<HS>()>
static inline void backward_hs(__nv_bfloat16 *dqkv, void *scratch, const __nv_bfloat16 *dout,
                               const __nv_bfloat16 *qkv, const __nv_bfloat16 *out, const float *lse,
                               int B, int T, int NH, cudaStream_t stream,
                               const QuantCodesOut &codes = QuantCodesOut{}) {
    const float *delta = backward_delta<HS>(scratch, dout, out, B, T, NH, stream);
    backward_kv_hs<HS, MIN_CTAS, BS>(dqkv, dout, qkv, lse, delta, B, T, NH, stream, codes);
    backward_dq_hs<HS, MIN_CTAS, BS>(dqkv, dout, qkv, lse, delta, B, T, NH, stream, codes);
}

// The scratch of the backward with dQ by integer reduction: the int32 accumulator (B, NH, T, HS),
// then delta and ||dO||_1 ((B, NH, T) fp32 each), then the heads' max |K|, |V| ((B, NH, 2) u32).
struct ReduceDqScratch {
    uint32_t *acc;
    float *delta, *dout_l1;
    unsigned *head_max;
};
static inline ReduceDqScratch reduce_dq_scratch(void *scratch, int B, int T, int NH, int HS) {
    const size_t rows = (size_t)B * NH * T;
    unsigned char *p = (unsigned char *)scratch;
    return {(uint32_t *)p, (float *)(p + rows * HS * 4), (float *)(p + rows * HS * 4 + rows * sizeof(float)),
            (unsigned *)(p + rows * HS * 4 + rows * 2 * sizeof(float))};
}

// The steps of every backward with dQ by integer reduction: zero the accumulator and the heads'
// maxima, delta and the bounds, launch_kv(delta, reduce) (a dK/dV kernel that adds the dQ shares),
// then dQ from the integers.
template <int HS, typename LaunchKv>
static inline void reduce_dq_steps(__nv_bfloat16 *dqkv, void *scratch, const __nv_bfloat16 *dout,
                                   const __nv_bfloat16 *qkv, const __nv_bfloat16 *out, int B, int T, int NH,
                                   cudaStream_t stream, LaunchKv launch_kv) {
    const ReduceDqScratch s = reduce_dq_scratch(scratch, B, T, NH, HS);
    const int64_t rows = (int64_t)B * NH * T;
    attention_cuda_check(cudaMemsetAsync(s.head_max, 0, (size_t)B * NH * 2 * sizeof(unsigned), stream));
    attention_cuda_check(cudaMemsetAsync(s.acc, 0, (size_t)rows * HS * 4, stream));
    backward_delta<HS, true>(s.delta, dout, out, B, T, NH, stream, DqBounds{s.dout_l1, s.head_max, qkv});
    launch_kv(s.delta, DqReduce{s.acc, s.dout_l1, s.head_max});
    attention_cuda_check(cudaGetLastError());
    LLMC_LAUNCH((unsigned)((rows + NWARPS - 1) / NWARPS), NTHREADS, 0, stream, attention_dq_finalize_kernel<HS>)(
        dqkv, s.acc, s.dout_l1, s.head_max, B, T, NH, 1.0f / sqrtf((float)HS));
    attention_cuda_check(cudaGetLastError());
}

// The backward with dQ by integer reduction (DQ_RED or DQ_BULK) in the mma.sync dK/dV kernel of RT
// row tiles per warp (32-row streamed tiles at RT 2).
template <int HS, int RT, int DQ, int MIN_CTAS = 1>
static inline void backward_reduce_dq_hs(__nv_bfloat16 *dqkv, void *scratch, const __nv_bfloat16 *dout,
                                         const __nv_bfloat16 *qkv, const __nv_bfloat16 *out, const float *lse, int B,
                                         int T, int NH, cudaStream_t stream) {
    constexpr int BS = RT == 2 ? 32 : bwd_stream_rows<HS>(), KROWS = RT * ROWS_PER_CTA;
    const auto kernel = attention_backward_kv_kernel<HS, MIN_CTAS, BS, RT, false, DQ>;
    reduce_dq_steps<HS>(dqkv, scratch, dout, qkv, out, B, T, NH, stream, [&](const float *delta, DqReduce reduce) {
        const size_t smem = backward_kv_smem_bytes<HS, BS, RT, DQ>();
        launch_config(kernel, smem);
        LLMC_LAUNCH(cta_grid(B * NH, (T + KROWS - 1) / KROWS), NTHREADS, smem, stream, kernel)(
            dqkv, dout, qkv, lse, delta, T, NH, 1.0f / sqrtf((float)HS), reduce);
    });
}

// The same with the wgmma dK/dV kernel of WG warpgroups (HS 64, sm_90a), its shares staged for bulk
// reductions.
template <int HS, int WG = bwd_wgmma::DEFAULT_WG>
static inline void backward_reduce_dq_wgmma_hs(__nv_bfloat16 *dqkv, void *scratch, const __nv_bfloat16 *dout,
                                               const __nv_bfloat16 *qkv, const __nv_bfloat16 *out, const float *lse,
                                               int B, int T, int NH, cudaStream_t stream) {
    constexpr int ROWS = bwd_wgmma::resident_rows<WG>();
    const auto kernel = attention_backward_kv_wgmma_kernel<HS, WG, false, DQ_BULK>;
    reduce_dq_steps<HS>(dqkv, scratch, dout, qkv, out, B, T, NH, stream, [&](const float *delta, DqReduce reduce) {
        const size_t smem = bwd_wgmma::reduce_dq_smem_bytes<HS, WG>();
        launch_config(kernel, smem);
        LLMC_LAUNCH(cta_grid(B * NH, (T + ROWS - 1) / ROWS), bwd_wgmma::cta_threads<WG>(), smem, stream, kernel)(
            dqkv, dout, qkv, lse, delta, T, NH, 1.0f / sqrtf((float)HS), reduce);
    });
}

// The same with the warp-specialized wgmma dK/dV kernel (HS 64, sm_90a): a producer warpgroup and two
// consumer warpgroups that alternate the tiles' dQ.
template <int HS>
static inline void backward_reduce_dq_wgmma_ws_hs(__nv_bfloat16 *dqkv, void *scratch, const __nv_bfloat16 *dout,
                                                  const __nv_bfloat16 *qkv, const __nv_bfloat16 *out, const float *lse,
                                                  int B, int T, int NH, cudaStream_t stream) {
    const auto kernel = attention_backward_kv_ws_wgmma_kernel<HS>;
    // setmaxnreg.inc waits until the CTA's pool has the registers: the launch must give each of the
    // 384 threads enough that the producer's give the consumers theirs, or they wait forever.
    static bool checked = false;
    if (!checked) {
        cudaFuncAttributes attr;
        attention_cuda_check(cudaFuncGetAttributes(&attr, kernel));
        using namespace bwd_ws;
        if (attr.numRegs * THREADS < 128 * (PRODUCER_REGISTERS + CONSUMERS * CONSUMER_REGISTERS))
            die("attention_backward_wgmma_ws: the kernel was built with %d registers a thread, fewer than the "
                "%d x %d + %d x %d its warpgroups take over 384 threads", attr.numRegs, 128 * CONSUMERS,
                CONSUMER_REGISTERS, 128, PRODUCER_REGISTERS);
        checked = true;
    }
    reduce_dq_steps<HS>(dqkv, scratch, dout, qkv, out, B, T, NH, stream, [&](const float *delta, DqReduce reduce) {
        const size_t smem = bwd_ws::smem_bytes<HS>();
        launch_config(kernel, smem);
        LLMC_LAUNCH(cta_grid(B * NH, (T + bwd_ws::ROWS - 1) / bwd_ws::ROWS), bwd_ws::THREADS, smem, stream, kernel)(
            dqkv, dout, qkv, lse, delta, T, NH, 1.0f / sqrtf((float)HS), reduce);
    });
}

// The output gradient's FP8 codes instead of dqkv (llmc/matmul_lowp.cuh's
// lowp_gradient_producer_codes, for the qkv layer's backward): each backward CTA's rows are whole
// 64-row tiles of the (B T, 3 C) gradient, which T % 64 == 0 makes so; every output is required.
static inline void check_codes(const char *fn, int T, const QuantCodesOut &codes) {
    if (!codes.q) return;
    if (T % 64 != 0) die("%s: FP8 codes of dqkv need T %% 64 == 0 (T = %d)", fn, T);
    if (!codes.qt || !codes.amax || !codes.colsum || !codes.scale)
        die("%s: FP8 codes of dqkv are written with their transpose, amax and column sums", fn);
}

}  // namespace attention_detail

// out (B,T,NH,HS) bf16 and lse (B,NH,T) fp32 from qkv (B,T,3,NH,HS) bf16; scale 1/sqrt(HS).
static inline void attention_forward(__nv_bfloat16 *out, float *lse, const __nv_bfloat16 *qkv,
                                     int B, int T, int NH, int HS, cudaStream_t stream) {
    const attention_detail::TensorArg args[] = {{out, 4}, {lse, 4}, {qkv, 16}};
    attention_detail::check_args("attention_forward", B, T, NH, HS, args, 3);
    if (HS == 64) attention_detail::forward_hs<64>(out, lse, qkv, B, T, NH, stream);
    else attention_detail::forward_hs<128>(out, lse, qkv, B, T, NH, stream);
}

// Whether attention_forward_wgmma can run here: a GPU of compute capability 9.0 (sm_90a code runs
// on no other) and this program built for sm_90a (asked of the GPU once, by wgmma_probe_kernel).
static inline bool attention_wgmma_available(void) {
    static int available = -1;
    if (available < 0) {
        int device, major, minor;
        attention_cuda_check(cudaGetDevice(&device));
        attention_cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
        attention_cuda_check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
        available = 0;
        if (major == 9 && minor == 0) {
            int *flag;
            attention_cuda_check(cudaMalloc(&flag, sizeof(int)));
            LLMC_LAUNCH(1, 1, 0, 0, attention_detail::wgmma_probe_kernel)(flag);
            attention_cuda_check(cudaGetLastError());
            attention_cuda_check(cudaMemcpy(&available, flag, sizeof(int), cudaMemcpyDeviceToHost));
            attention_cuda_check(cudaFree(flag));
        }
    }
    return available == 1;
}

// attention_forward through wgmma (sm_90a): same inputs, outputs and contract (verified on an H200,
// see the top of this file). The trainer calls it under --attention wgmma and wgmma-fwd (the latter
// with attention_backward: NOT RUN on a GPU as a pair); dev/cuda/attention.cu checks and times it.
static inline void attention_forward_wgmma(__nv_bfloat16 *out, float *lse, const __nv_bfloat16 *qkv,
                                           int B, int T, int NH, int HS, cudaStream_t stream) {
    const attention_detail::TensorArg args[] = {{out, 4}, {lse, 4}, {qkv, 16}};
    attention_detail::check_args("attention_forward_wgmma", B, T, NH, HS, args, 3);
    if (!attention_wgmma_available())
        die("attention_forward_wgmma: needs a GPU of compute capability 9.0 and a build for sm_90a");
    if (HS == 64) attention_detail::forward_wgmma_hs<64>(out, lse, qkv, B, T, NH, stream);
    else attention_detail::forward_wgmma_hs<128>(out, lse, qkv, B, T, NH, stream);
}

// attention_forward warp-specialized through wgmma (sm_90a), head size 64 (a producer warpgroup, two
// consumer warpgroups, 128-key tiles: attention_forward_ws_wgmma_kernel): same inputs, outputs and
// contract; its out and lse round otherwise than attention_forward_wgmma's (the online softmax
// rescales per 128 keys). The trainer's --attention wgmma-ws, with attention_backward_wgmma_ws.
// NOT RUN on a GPU (2026-11-29).
static inline void attention_forward_wgmma_ws(__nv_bfloat16 *out, float *lse, const __nv_bfloat16 *qkv, int B, int T,
                                              int NH, int HS, cudaStream_t stream) {
    const attention_detail::TensorArg args[] = {{out, 4}, {lse, 4}, {qkv, 16}};
    attention_detail::check_args("attention_forward_wgmma_ws", B, T, NH, HS, args, 3);
    if (HS != 64) die("attention_forward_wgmma_ws: head size %d; only 64 so far", HS);
    if (!attention_wgmma_available())
        die("attention_forward_wgmma_ws: needs a GPU of compute capability 9.0 and a build for sm_90a");
    attention_detail::forward_wgmma_ws_hs<64>(out, lse, qkv, B, T, NH, stream);
}

// attention_backward through wgmma (sm_90a), head size 64 only so far: same inputs, outputs,
// scratch and contract (deterministic; verified on an H200). The trainer calls it only under
// --attention wgmma; dev/cuda/attention.cu checks and times it.
static inline void attention_backward_wgmma(__nv_bfloat16 *dqkv, void *scratch, const __nv_bfloat16 *dout,
                                            const __nv_bfloat16 *qkv, const __nv_bfloat16 *out, const float *lse,
                                            int B, int T, int NH, int HS, cudaStream_t stream,
                                            const QuantCodesOut &codes = QuantCodesOut{}) {
    const attention_detail::TensorArg args[] = {{dqkv, 4}, {scratch, 16}, {dout, 16}, {qkv, 16}, {out, 4}, {lse, 4}};
    attention_detail::check_args("attention_backward_wgmma", B, T, NH, HS, args, 6);
    attention_detail::check_codes("attention_backward_wgmma", T, codes);
    if (HS != 64) die("attention_backward_wgmma: head size %d; only 64 so far", HS);
    if (!attention_wgmma_available())
        die("attention_backward_wgmma: needs a GPU of compute capability 9.0 and a build for sm_90a");
    attention_detail::backward_wgmma_hs<64>(dqkv, scratch, dout, qkv, out, lse, B, T, NH, stream, codes);
}

// Bytes of scratch that attention_backward needs: delta, one float per (b, h, t) row, whatever
// the head size.
static inline size_t attention_backward_scratch_bytes(int B, int T, int NH, int /*HS*/) {
    return (size_t)B * NH * T * sizeof(float);
}

// dqkv (B,T,3,NH,HS) bf16, fully overwritten, from dout (B,T,NH,HS) and the forward's qkv, out
// and lse. scratch: attention_backward_scratch_bytes(B, T, NH, HS) bytes, 16-byte aligned.
// Deterministic: the same inputs give the same bits on every run.
// With codes (codes.q set; T % 64 == 0): instead of dqkv (not written), its FP8 codes as
// quant_transpose_gpu would write them of dqkv with colsum (q, qt, amax, column sums; llmc/quant.cuh),
// each CTA staging its bf16 rows in shared memory (quant_tile_codes). NOT RUN on a GPU (2026-11-28).
static inline void attention_backward(__nv_bfloat16 *dqkv, void *scratch, const __nv_bfloat16 *dout,
                                      const __nv_bfloat16 *qkv, const __nv_bfloat16 *out, const float *lse,
                                      int B, int T, int NH, int HS, cudaStream_t stream,
                                      const QuantCodesOut &codes = QuantCodesOut{}) {
    const attention_detail::TensorArg args[] = {{dqkv, 4}, {scratch, 16}, {dout, 16}, {qkv, 16}, {out, 4}, {lse, 4}};
    attention_detail::check_args("attention_backward", B, T, NH, HS, args, 6);
    attention_detail::check_codes("attention_backward", T, codes);
    if (HS == 64) attention_detail::backward_hs<64>(dqkv, scratch, dout, qkv, out, lse, B, T, NH, stream, codes);
    else attention_detail::backward_hs<128>(dqkv, scratch, dout, qkv, out, lse, B, T, NH, stream, codes);
}

// attention_backward with 2 row tiles of 16 per warp in both of its mma.sync kernels at head size
// 64 (32-row streamed tiles; head size 128: attention_backward itself): the same bits, which
// dev/cuda/attention.cu checks, and each shared-memory operand fragment feeding two tiles, as the
// forward's default does. The trainer's --attention mma-rt2. NOT RUN on a GPU (2026-11-28).
static inline void attention_backward_rt2(__nv_bfloat16 *dqkv, void *scratch, const __nv_bfloat16 *dout,
                                          const __nv_bfloat16 *qkv, const __nv_bfloat16 *out, const float *lse,
                                          int B, int T, int NH, int HS, cudaStream_t stream,
                                          const QuantCodesOut &codes = QuantCodesOut{}) {
    if (HS != 64) return attention_backward(dqkv, scratch, dout, qkv, out, lse, B, T, NH, HS, stream, codes);
    const attention_detail::TensorArg args[] = {{dqkv, 4}, {scratch, 16}, {dout, 16}, {qkv, 16}, {out, 4}, {lse, 4}};
    attention_detail::check_args("attention_backward_rt2", B, T, NH, HS, args, 6);
    attention_detail::check_codes("attention_backward_rt2", T, codes);
    const float *delta = attention_detail::backward_delta<64>(scratch, dout, out, B, T, NH, stream);
    attention_detail::backward_kv_hs<64, 1, 32, 2>(dqkv, dout, qkv, lse, delta, B, T, NH, stream, codes);
    attention_detail::backward_dq_hs<64, 1, 32, 2>(dqkv, dout, qkv, lse, delta, B, T, NH, stream, codes);
}

// Bytes of scratch that attention_backward_reduce_dq and attention_backward_wgmma_reduce_dq need:
// B NH T (4 HS + 8) + 8 B NH.
static inline size_t attention_backward_reduce_dq_scratch_bytes(int B, int T, int NH, int HS) {
    const size_t rows = (size_t)B * NH * T;  // attention_detail::reduce_dq_scratch's layout
    return rows * HS * 4 + rows * 2 * sizeof(float) + (size_t)B * NH * 2 * sizeof(unsigned);
}

// attention_backward with dQ by integer reduction (see reduce_dq_tile): the same contract, except
// its scratch (attention_backward_reduce_dq_scratch_bytes, 16-byte aligned), no FP8 codes (the
// trainer's --attention mma-rdq casts dqkv apart), and dQ's bits, which are its own
// (deterministic, and within the same bound of fp64); dK and dV keep theirs. The dK/dV kernel
// stages each dQ share for one bulk reduction (compute capability 9.0 and later; red.global
// before), with 2 row tiles per warp at head size 64. dev/cuda/attention.cu checks it and times
// it beside the other variants (red.global from registers, RT 1). NOT RUN on a GPU (2026-11-28).
static inline void attention_backward_reduce_dq(__nv_bfloat16 *dqkv, void *scratch, const __nv_bfloat16 *dout,
                                                const __nv_bfloat16 *qkv, const __nv_bfloat16 *out, const float *lse,
                                                int B, int T, int NH, int HS, cudaStream_t stream,
                                                const QuantCodesOut &codes = QuantCodesOut{}) {
    const attention_detail::TensorArg args[] = {{dqkv, 4}, {scratch, 16}, {dout, 16}, {qkv, 16}, {out, 4}, {lse, 4}};
    attention_detail::check_args("attention_backward_reduce_dq", B, T, NH, HS, args, 6);
    if (codes.q) die("attention_backward_reduce_dq: writes dqkv, not its FP8 codes");
    using namespace attention_detail;
    static int major = 0;  // bulk reductions from compute capability 9.0
    if (!major) {
        int device;
        attention_cuda_check(cudaGetDevice(&device));
        attention_cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    }
    if (HS == 64 && major >= 9) backward_reduce_dq_hs<64, 2, DQ_BULK>(dqkv, scratch, dout, qkv, out, lse, B, T, NH, stream);
    else if (HS == 64) backward_reduce_dq_hs<64, 2, DQ_RED>(dqkv, scratch, dout, qkv, out, lse, B, T, NH, stream);
    else if (major >= 9) backward_reduce_dq_hs<128, 1, DQ_BULK>(dqkv, scratch, dout, qkv, out, lse, B, T, NH, stream);
    else backward_reduce_dq_hs<128, 1, DQ_RED>(dqkv, scratch, dout, qkv, out, lse, B, T, NH, stream);
}

// attention_backward_wgmma with dQ by integer reduction (sm_90a, head size 64): the wgmma dK/dV
// kernel also makes each query tile's dQ share (dS K, a sixth wgmma product per tile, from dS^T
// staged in shared memory) and adds it in the fixed point of reduce_dq_tile by bulk reductions; no
// dQ kernel. The contract of attention_backward_reduce_dq (its scratch, no FP8 codes, dQ's own bits;
// dK and dV keep attention_backward_wgmma's). The trainer's --attention wgmma-rdq, with the wgmma
// forward. NOT RUN on a GPU (2026-11-29).
static inline void attention_backward_wgmma_reduce_dq(__nv_bfloat16 *dqkv, void *scratch, const __nv_bfloat16 *dout,
                                                      const __nv_bfloat16 *qkv, const __nv_bfloat16 *out,
                                                      const float *lse, int B, int T, int NH, int HS,
                                                      cudaStream_t stream, const QuantCodesOut &codes = QuantCodesOut{}) {
    const attention_detail::TensorArg args[] = {{dqkv, 4}, {scratch, 16}, {dout, 16}, {qkv, 16}, {out, 4}, {lse, 4}};
    attention_detail::check_args("attention_backward_wgmma_reduce_dq", B, T, NH, HS, args, 6);
    if (codes.q) die("attention_backward_wgmma_reduce_dq: writes dqkv, not its FP8 codes");
    if (HS != 64) die("attention_backward_wgmma_reduce_dq: head size %d; only 64 so far", HS);
    if (!attention_wgmma_available())
        die("attention_backward_wgmma_reduce_dq: needs a GPU of compute capability 9.0 and a build for sm_90a");
    attention_detail::backward_reduce_dq_wgmma_hs<64>(dqkv, scratch, dout, qkv, out, lse, B, T, NH, stream);
}

// The same backward warp-specialized (attention_backward_kv_ws_wgmma_kernel: a producer warpgroup loads,
// two consumer warpgroups compute at their own pace and take turns at the tiles' dQ): the contract
// of attention_backward_wgmma_reduce_dq, dK and dV with attention_backward_wgmma's bits, dQ with its
// own. The trainer's --attention wgmma-ws, with attention_forward_wgmma_ws. NOT RUN on a GPU (2026-11-29).
static inline void attention_backward_wgmma_ws(__nv_bfloat16 *dqkv, void *scratch, const __nv_bfloat16 *dout,
                                               const __nv_bfloat16 *qkv, const __nv_bfloat16 *out, const float *lse,
                                               int B, int T, int NH, int HS, cudaStream_t stream,
                                               const QuantCodesOut &codes = QuantCodesOut{}) {
    const attention_detail::TensorArg args[] = {{dqkv, 4}, {scratch, 16}, {dout, 16}, {qkv, 16}, {out, 4}, {lse, 4}};
    attention_detail::check_args("attention_backward_wgmma_ws", B, T, NH, HS, args, 6);
    if (codes.q) die("attention_backward_wgmma_ws: writes dqkv, not its FP8 codes");
    if (HS != 64) die("attention_backward_wgmma_ws: head size %d; only 64 so far", HS);
    if (!attention_wgmma_available())
        die("attention_backward_wgmma_ws: needs a GPU of compute capability 9.0 and a build for sm_90a");
    attention_detail::backward_reduce_dq_wgmma_ws_hs<64>(dqkv, scratch, dout, qkv, out, lse, B, T, NH, stream);
}

#endif  // LLMC_ATTENTION_CUH
