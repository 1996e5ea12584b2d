// Exhaustive check of llmc/quant.h against NVIDIA's own conversions, which cuda_fp8.h and
// cuda_bf16.h define for the host as well:
//   - every one of the 2^32 fp32 bit patterns: fp8_from_float == __nv_cvt_float_to_fp8(x, __NV_SATFINITE,
//     E4M3 and E5M2), and bf16_from_float == __float2bfloat16_rn (all 2^32, not a sample);
//   - every one of the 256 codes of each format: fp8_to_float == __nv_cvt_fp8_to_halfraw widened to
//     fp32 (bit for bit; NaN codes must give NaN on both sides), and quantizing back gives the code;
//   - the documented special cases (saturation, NaN, Inf, underflow, ties) by value.
// Exits 1 on the first kind of mismatch with the offending inputs; prints the time taken.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "../../../llmc/quant.h"

static const __nv_fp8_interpretation_t nv_format[2] = {__NV_E4M3, __NV_E5M2};
static const char *format_name[2] = {"E4M3", "E5M2"};

static float float_of(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
static uint32_t bits_of(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }

// Mismatches of one conversion over the 2^32 inputs: how many, and the smallest offending input.
struct sweep_result { unsigned long long count; uint32_t first; };

// All 2^32 fp32 patterns, both FP8 formats and bf16, in one pass over the inputs.
static void sweep_all_floats(sweep_result res[3]) {
    unsigned long long count[3] = {0, 0, 0};
    uint32_t first[3] = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
#pragma omp parallel
    {
        unsigned long long my_count[3] = {0, 0, 0};
        uint32_t my_first[3] = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
#pragma omp for schedule(static)
        for (long long i = 0; i < (1LL << 32); i++) {
            uint32_t b = (uint32_t)i;
            float x = float_of(b);
            bool bad[3] = {
                fp8_from_float(x, FP8_E4M3) != __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3),
                fp8_from_float(x, FP8_E5M2) != __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2),
                bf16_from_float(x) != __nv_bfloat16_raw(__float2bfloat16_rn(x)).x,
            };
            for (int k = 0; k < 3; k++)
                if (bad[k]) {
                    my_count[k]++;
                    if (b < my_first[k]) my_first[k] = b;
                }
        }
#pragma omp critical
        for (int k = 0; k < 3; k++) {
            count[k] += my_count[k];
            if (my_first[k] < first[k]) first[k] = my_first[k];
        }
    }
    for (int k = 0; k < 3; k++) res[k] = {count[k], first[k]};
}

static int check_all_codes(void) {
    int failures = 0;
    for (int f = 0; f < 2; f++) {
        for (int c = 0; c < 256; c++) {
            float ours = fp8_to_float((uint8_t)c, (fp8_format)f);
            __half_raw hr = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)c, nv_format[f]);
            float theirs = __half2float(__half(hr));
            bool both_nan = std::isnan(ours) && std::isnan(theirs);
            if (!both_nan && bits_of(ours) != bits_of(theirs)) {
                fprintf(stderr, "%s code 0x%02x: fp8_to_float %a, NVIDIA %a\n", format_name[f], c, ours, theirs);
                failures++;
            }
            if (!std::isnan(ours) && !std::isinf(ours) && fp8_from_float(ours, (fp8_format)f) != c) {
                fprintf(stderr, "%s code 0x%02x: decodes to %a which encodes to 0x%02x\n", format_name[f], c,
                        ours, fp8_from_float(ours, (fp8_format)f));
                failures++;
            }
        }
    }
    return failures;
}

// The rules stated in quant.h, by value (both our conversion and NVIDIA's must give `code`).
static int check_special_cases(void) {
    struct { float x; fp8_format f; uint8_t code; const char *what; } cases[] = {
        {448.0f, FP8_E4M3, 0x7E, "E4M3 max"},
        {464.0f, FP8_E4M3, 0x7E, "E4M3 midpoint to 480 ties to even (448)"},
        {465.0f, FP8_E4M3, 0x7E, "E4M3 beyond max saturates"},
        {-1e30f, FP8_E4M3, 0xFE, "E4M3 -large saturates to -max"},
        {INFINITY, FP8_E4M3, 0x7E, "E4M3 +Inf saturates"},
        {-INFINITY, FP8_E4M3, 0xFE, "E4M3 -Inf saturates"},
        {NAN, FP8_E4M3, 0x7F, "E4M3 NaN"},
        {-NAN, FP8_E4M3, 0x7F, "E4M3 -NaN loses its sign"},
        {0x1p-10f, FP8_E4M3, 0x00, "E4M3 half the min subnormal ties to zero"},
        {-0x1p-10f, FP8_E4M3, 0x80, "E4M3 underflow keeps the sign"},
        {0x1.000002p-10f, FP8_E4M3, 0x01, "E4M3 just above half the min subnormal"},
        {0x1.9p-9f, FP8_E4M3, 0x02, "E4M3 1.5625 subnormal units rounds to 2"},
        {1.0625f, FP8_E4M3, 0x38, "E4M3 tie 1 + 1/16 rounds to even (1)"},
        {1.1875f, FP8_E4M3, 0x3A, "E4M3 tie 1 + 3/16 rounds to even (1.25)"},
        {57344.0f, FP8_E5M2, 0x7B, "E5M2 max"},
        {61440.0f, FP8_E5M2, 0x7B, "E5M2 midpoint to Inf saturates"},
        {INFINITY, FP8_E5M2, 0x7B, "E5M2 +Inf saturates"},
        {-INFINITY, FP8_E5M2, 0xFB, "E5M2 -Inf saturates"},
        {NAN, FP8_E5M2, 0x7F, "E5M2 NaN"},
        {0x1p-17f, FP8_E5M2, 0x00, "E5M2 half the min subnormal ties to zero"},
        {0x1.8p-17f, FP8_E5M2, 0x01, "E5M2 0.75 subnormal units rounds to 1"},
    };
    int failures = 0;
    for (const auto &c : cases) {
        uint8_t ours = fp8_from_float(c.x, c.f);
        uint8_t theirs = __nv_cvt_float_to_fp8(c.x, __NV_SATFINITE, nv_format[c.f]);
        if (ours != c.code || theirs != c.code) {
            fprintf(stderr, "special case '%s' (%a): expected 0x%02x, ours 0x%02x, NVIDIA 0x%02x\n", c.what, c.x,
                    c.code, ours, theirs);
            failures++;
        }
    }
    return failures;
}

int main(void) {
    double t0 = omp_get_wtime();
    int failures = check_special_cases() + check_all_codes();
    printf("special cases and all 256 codes of each format: %d failures\n", failures);

    sweep_result res[3];
    sweep_all_floats(res);
    const char *sweep_name[3] = {"fp32 -> E4M3", "fp32 -> E5M2", "fp32 -> bf16 (rn)"};
    for (int k = 0; k < 3; k++) {
        printf("%-18s all 2^32 inputs: %llu mismatches\n", sweep_name[k], res[k].count);
        if (res[k].count) {
            float x = float_of(res[k].first);
            unsigned ours = k < 2 ? fp8_from_float(x, (fp8_format)k) : bf16_from_float(x);
            unsigned theirs = k < 2 ? __nv_cvt_float_to_fp8(x, __NV_SATFINITE, nv_format[k])
                                    : __nv_bfloat16_raw(__float2bfloat16_rn(x)).x;
            fprintf(stderr, "%s: first mismatch at bits 0x%08x (%a): ours 0x%x, NVIDIA 0x%x\n", sweep_name[k],
                    res[k].first, x, ours, theirs);
            failures++;
        }
    }
    printf("%d threads, %.1f s\n", omp_get_max_threads(), omp_get_wtime() - t0);
    if (failures) {
        fprintf(stderr, "fp8_exhaustive: FAILED (%d)\n", failures);
        return 1;
    }
    printf("fp8_exhaustive: OK\n");
    return 0;
}
