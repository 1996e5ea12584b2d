// Seeded, counter-based random numbers: value = f(seed, stream, counter).
// A counter-based generator makes every draw addressable, so a tensor's initialization does not
// depend on the memory layout, the number of threads or the number of ranks, and a generator's
// whole state is two integers (saved in the training state for bit-exact resume).
// The mixing function is splitmix64's finalizer (Steele, Lea, Flood 2014), applied twice.
#ifndef LLMC_RNG_H
#define LLMC_RNG_H

#include <stdint.h>

// The GPU trainer draws its stochastic-rounding bits from the same generator on the device.
#ifdef __CUDACC__
#define RNG_HOSTDEV __host__ __device__
#else
#define RNG_HOSTDEV
#endif

#ifdef __cplusplus
extern "C" {
#endif

static inline RNG_HOSTDEV uint64_t rng_mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// 64 random bits for (seed, stream, counter).
static inline RNG_HOSTDEV uint64_t rng_bits(uint64_t seed, uint64_t stream, uint64_t counter) {
    return rng_mix64(rng_mix64(seed ^ rng_mix64(stream)) ^ counter);
}

// Uniform in [0, 1) with 24 bits, exactly representable in fp32.
static inline RNG_HOSTDEV float rng_uniform(uint64_t seed, uint64_t stream, uint64_t counter) {
    return (float)(rng_bits(seed, stream, counter) >> 40) * (1.0f / 16777216.0f);
}

// Standard normal by Box-Muller on two 53-bit uniforms (computed in double, so the result is
// the same on every compiler that rounds double correctly).
double rng_normal(uint64_t seed, uint64_t stream, uint64_t counter);

// A sequential generator (sampling, data order): its state is (seed, counter).
typedef struct {
    uint64_t seed;
    uint64_t counter;
} Rng;

static inline float rng_next_uniform(Rng *r) { return rng_uniform(r->seed, 0, r->counter++); }

// The index drawn from softmax(logits[0..n)) with the uniform u in [0, 1), by inverse transform
// sampling: the first j whose cumulative sum of exp(logits - max) exceeds u times the total (in
// double), or n - 1 when rounding leaves every partial sum short of it.
int rng_sample_softmax(const float *logits, int n, double u);

#ifdef __cplusplus
}
#endif
#endif
