// What every kernel file of the GPU trainer shares: error checks that name file:line, the bf16
// type, 128-bit packed loads and stores, and warp/block reductions in a fixed order.
//
// STATUS: verified on an H100 at commit ad0f582 and on an H200 at c95ef56 (2026-11-27; dev/gpu_report.md:
// its harness in dev/cuda/ and test_gptcu pass).
#ifndef LLMC_CUDA_COMMON_CUH
#define LLMC_CUDA_COMMON_CUH

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "launch.cuh"
#include "quant.h"
#include "utils.h"

// ---------------------------------------------------------------------------------------------
// Error checks: one line naming the call and file:line, exit status 1 (die()).

#define cudaCheck(call) cuda_check_or_die((call), #call, __FILE__, __LINE__)
static inline void cuda_check_or_die(cudaError_t err, const char *what, const char *file, int line) {
    if (err != cudaSuccess) die("CUDA error at %s:%d: %s: %s", file, line, what, cudaGetErrorString(err));
}

#define cublasCheck(call) cublas_check_at((call), #call, __FILE__, __LINE__)
static inline void cublas_check_at(cublasStatus_t st, const char *what, const char *file, int line) {
    if (st != CUBLAS_STATUS_SUCCESS) die("cuBLAS error at %s:%d: %s: status %d", file, line, what, (int)st);
}

// After every kernel launch: catches bad launch configurations at the line that made them.
#define kernelCheck() cuda_check_or_die(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

static inline int ceil_div(int64_t a, int64_t b) { return (int)((a + b - 1) / b); }

typedef __nv_bfloat16 bf16;

// ---------------------------------------------------------------------------------------------
// 128-bit packed values: 8 bf16 or 4 fp32 moved with one ld.global.v4 / st.global.v4. The
// pointer must be 16-byte aligned, which every buffer of the trainer is (see train_gpt.cu's
// carve(): 256-byte aligned tensors whose rows are multiples of 64 elements).

template <typename T> struct alignas(16) Packed128 {
    static constexpr int size = 16 / sizeof(T);
    T v[size];
    __device__ __forceinline__ T &operator[](int i) { return v[i]; }
    __device__ __forceinline__ const T &operator[](int i) const { return v[i]; }
};
typedef Packed128<bf16> x128;   // 8 bf16
typedef Packed128<float> f128;  // 4 fp32

template <typename T> __device__ __forceinline__ Packed128<T> load128(const T *p) {
    Packed128<T> r;
    *reinterpret_cast<int4 *>(&r) = *reinterpret_cast<const int4 *>(p);
    return r;
}
// Streaming load: the data is read once, do not keep it in L1 (ld.global.cs).
template <typename T> __device__ __forceinline__ Packed128<T> load128cs(const T *p) {
    Packed128<T> r;
    *reinterpret_cast<int4 *>(&r) = __ldcs(reinterpret_cast<const int4 *>(p));
    return r;
}
template <typename T> __device__ __forceinline__ void store128(T *p, const Packed128<T> &v) {
    *reinterpret_cast<int4 *>(p) = *reinterpret_cast<const int4 *>(&v);
}

// The GPU's nanosecond clock (%globaltimer); the CPU emulator of dev/emu supplies its own.
#ifndef LLMC_EMULATE_PTX
__device__ __forceinline__ uint64_t global_timer_ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#endif

// fp32 -> bf16 round to nearest even, the bits of llmc/quant.h's bf16_from_float (the CPU twin).
__device__ __forceinline__ bf16 to_bf16(float x) { return __float2bfloat16_rn(x); }

// ---------------------------------------------------------------------------------------------
// Reductions. The order of every sum is fixed by the thread layout (butterfly within a warp,
// then warps in index order), so the same inputs give the same bits on every run.

template <typename T> __device__ __forceinline__ T warp_sum(T x) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}
__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
    return x;
}

// Sum over a 1-D block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// Every thread of the block must call it; it synchronizes twice, so it may be called repeatedly.
template <typename T> __device__ T block_sum(T x) {
    __shared__ T partial[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
    x = warp_sum(x);
    __syncthreads();  // a previous call may still be reading partial
    if (lane == 0) partial[warp] = x;
    __syncthreads();
    T total = lane < nwarps ? partial[lane] : (T)0;
    return warp_sum(total);
}

__device__ inline float block_max(float x) {
    __shared__ float partial[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
    x = warp_max(x);
    __syncthreads();
    if (lane == 0) partial[warp] = x;
    __syncthreads();
    float m = lane < nwarps ? partial[lane] : -INFINITY;
    return warp_max(m);
}

#endif  // LLMC_CUDA_COMMON_CUH
