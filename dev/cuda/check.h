// What the trainer's kernel harnesses (encoder.cu, layernorm.cu, gelu.cu, classifier.cu,
// optimizer.cu, matmul.cu) share beyond common.h: a tolerance check that prints one line per
// comparison and counts failures, bf16 conversions of host vectors, and the harness's exit.
// Each harness runs its kernels on seeded inputs, compares them with a plain CPU loop of the same
// math (the CPU reference of train_gpt.c, restated), then times them with events (median).
#ifndef DEV_CUDA_CHECK_H
#define DEV_CUDA_CHECK_H

#include "common.h"
#include "../../llmc/quant.h"

static int g_failures = 0;

// max |got - ref| / max(max |ref|, tiny) <= tol, and no NaN.
static inline void expect_close(const char *what, const float *got, const float *ref, size_t n, double tol) {
    double dmax = 0.0, rmax = 1e-30;
    bool finite = true;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)got[i] - ref[i]);
        if (!(d == d)) finite = false;
        dmax = fmax(dmax, d);
        rmax = fmax(rmax, fabs((double)ref[i]));
    }
    const bool ok = finite && dmax / rmax <= tol;
    printf("%s %-40s max rel err %.2e (tol %.0e)\n", ok ? "ok  " : "FAIL", what, dmax / rmax, tol);
    if (!ok) g_failures++;
}

static inline void expect_true(bool ok, const char *what) {
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok) g_failures++;
}

static inline std::vector<float> bf16_to_floats(const std::vector<__nv_bfloat16> &v) {
    std::vector<float> f(v.size());
    for (size_t i = 0; i < v.size(); i++) f[i] = __bfloat162float(v[i]);
    return f;
}

static inline std::vector<__nv_bfloat16> floats_to_bf16(const std::vector<float> &f) {
    std::vector<__nv_bfloat16> v(f.size());
    for (size_t i = 0; i < f.size(); i++) v[i] = __float2bfloat16_rn(f[i]);
    return v;
}

// n values uniform in [lo, hi) from (seed, i), as floats that are exact bf16 numbers, so the
// CPU reference and the kernel see the same inputs.
static inline std::vector<float> random_bf16_values(size_t n, uint64_t seed, float lo, float hi) {
    std::vector<float> f(n);
    for (size_t i = 0; i < n; i++) f[i] = bf16_to_float(bf16_from_float(lo + (hi - lo) * (float)uniform01(seed, i)));
    return f;
}

static inline int harness_exit(const char *name) {
    printf("%s: %d check(s) failed\n", name, g_failures);
    return g_failures ? 1 : 0;
}

#endif  // DEV_CUDA_CHECK_H
