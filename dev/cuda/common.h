// Helpers shared by the kernel harnesses in dev/cuda: CUDA error checks that name file:line,
// device buffers, median timing with CUDA events, and seeded random fills (host and device).
// Errors go through die() from llmc/utils.h: one line, exit status 1.
#ifndef DEV_CUDA_COMMON_H
#define DEV_CUDA_COMMON_H

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>
#include "../../llmc/launch.cuh"
#include "../../llmc/utils.h"

#define cuda_check(call) cuda_check_at((call), #call, __FILE__, __LINE__)
static inline void cuda_check_at(cudaError_t err, const char *what, const char *file, int line) {
    if (err != cudaSuccess) die("CUDA error at %s:%d: %s: %s", file, line, what, cudaGetErrorString(err));
}

// ---------------------------------------------------------------------------------------------
// Device buffers

template <typename T> static inline T *device_alloc(size_t count) {
    T *p = nullptr;
    cuda_check(cudaMalloc(&p, count * sizeof(T)));
    return p;
}
template <typename T> static inline void to_device(T *dst, const std::vector<T> &src) {
    cuda_check(cudaMemcpy(dst, src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice));
}
template <typename T> static inline std::vector<T> to_host(const T *src, size_t count) {
    std::vector<T> dst(count);
    cuda_check(cudaMemcpy(dst.data(), src, count * sizeof(T), cudaMemcpyDeviceToHost));
    return dst;
}
// Whether a and b hold the same bytes (bit for bit: NaNs alike, and never memcmp on an empty
// vector's null data()).
template <typename T> static inline bool same_bytes(const std::vector<T> &a, const std::vector<T> &b) {
    return a.size() == b.size() && (a.empty() || !memcmp(a.data(), b.data(), a.size() * sizeof(T)));
}

// ---------------------------------------------------------------------------------------------
// Timing: median over `reps` runs of launch() after `warmup` untimed ones, in milliseconds.
// The median, not the mean, so one preempted run does not move the figure.

template <typename Launch>
static inline float time_median_ms(Launch launch, int warmup, int reps, cudaStream_t stream) {
    cudaEvent_t start, stop;
    cuda_check(cudaEventCreate(&start));
    cuda_check(cudaEventCreate(&stop));
    for (int i = 0; i < warmup; i++) launch();
    std::vector<float> ms(reps);
    for (int i = 0; i < reps; i++) {
        cuda_check(cudaEventRecord(start, stream));
        launch();
        cuda_check(cudaEventRecord(stop, stream));
        cuda_check(cudaEventSynchronize(stop));
        cuda_check(cudaEventElapsedTime(&ms[i], start, stop));
    }
    cuda_check(cudaEventDestroy(start));
    cuda_check(cudaEventDestroy(stop));
    std::sort(ms.begin(), ms.end());
    return reps % 2 ? ms[reps / 2] : 0.5f * (ms[reps / 2 - 1] + ms[reps / 2]);
}

// ---------------------------------------------------------------------------------------------
// Seeded random numbers. splitmix64 (Steele, Lea, Flood 2014): a 64-bit counter through a
// bijective mixer, so element i of a fill depends only on (seed, i), on the host and the device.

static __host__ __device__ inline uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Uniform in [0, 1) from the top 53 bits.
static __host__ __device__ inline double uniform01(uint64_t seed, uint64_t i) {
    return (double)(splitmix64(seed * 0x2545F4914F6CDD1Dull + i) >> 11) * (1.0 / 9007199254740992.0);
}

// Standard normal by Box-Muller from two uniforms drawn at 2i and 2i+1.
static inline double normal01(uint64_t seed, uint64_t i) {
    const double u1 = 1.0 - uniform01(seed, 2 * i), u2 = uniform01(seed, 2 * i + 1);  // u1 in (0, 1]
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

// Host: n values ~ N(0, stddev^2), rounded to bf16.
static inline std::vector<__nv_bfloat16> random_normal_bf16(size_t n, uint64_t seed, float stddev) {
    std::vector<__nv_bfloat16> v(n);
    for (size_t i = 0; i < n; i++) v[i] = __float2bfloat16((float)(stddev * normal01(seed, i)));
    return v;
}

static __global__ void fill_uniform_bf16_kernel(__nv_bfloat16 *dst, size_t n, uint64_t seed, float lo, float hi) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16(lo + (hi - lo) * (float)uniform01(seed, i));
}

// Device: n values uniform in [lo, hi), rounded to bf16 (for benchmark inputs too large to make
// on the host quickly).
static inline void fill_uniform_bf16(__nv_bfloat16 *dst, size_t n, uint64_t seed, float lo, float hi) {
    LLMC_LAUNCH(1024, 256, 0, 0, fill_uniform_bf16_kernel)(dst, n, seed, lo, hi);
    cuda_check(cudaGetLastError());
}

// The arguments of a harness with small cases: none (every case, then the timings) or
// --check-small (the small cases only, without timing: for the CPU emulator of dev/emu, t_46).
static inline bool harness_small_only(int argc, char **argv) {
    if (argc == 1) return false;
    if (argc == 2 && !strcmp(argv[1], "--check-small")) return true;
    fprintf(stderr, "usage: %s [--check-small]\n", argv[0]);
    exit(2);
}

#endif  // DEV_CUDA_COMMON_H
