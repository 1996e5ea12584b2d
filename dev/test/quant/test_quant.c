// Unit tests of llmc/quant.h beyond the bit-exact scalar casts (those are fp8_exhaustive.cpp):
// scales, amax, int8 row-wise and tensor-wise quantization, FP8 fake quantization, the CPU
// emulation entry point and bf16 stochastic rounding. Seeded random inputs (llmc/rng.h), a different
// seed per case; every check prints what failed and the run exits 1 if any did.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../llmc/amax_history.h"
#include "../../../llmc/quant.h"
#include "../../../llmc/rng.h"
#include "../../../llmc/utils.h"

static int failures = 0;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "%s:%d: check failed: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                              \
            fputc('\n', stderr);                                       \
            failures++;                                                \
        }                                                              \
    } while (0)

static int is_pow2(float s) {
    int e;
    return s > 0.0f && frexpf(s, &e) == 0.5f;
}

// A (rows, cols) matrix of normals whose rows span magnitudes 10^-4 .. 10^4 (row-wise scales must
// adapt to each), with a few exact zeros and an all-zero row to exercise amax == 0.
static float *random_matrix(size_t rows, size_t cols, uint64_t seed) {
    float *x = malloc_check(rows * cols * sizeof(float));
    for (size_t r = 0; r < rows; r++) {
        float magnitude = powf(10.0f, -4.0f + 8.0f * rng_uniform(seed, 1, r));
        for (size_t c = 0; c < cols; c++) {
            x[r * cols + c] = (float)rng_normal(seed, 2, r * cols + c) * magnitude;
            if (rng_bits(seed, 3, r * cols + c) % 97 == 0) x[r * cols + c] = 0.0f;
        }
    }
    if (rows > 2) memset(x + 2 * cols, 0, cols * sizeof(float));
    return x;
}

static void test_scale(void) {
    const float qmaxes[3] = {FP8_E4M3_MAX, FP8_E5M2_MAX, (float)INT8_QMAX};
    for (int i = 0; i < 20000; i++) {
        float qmax = qmaxes[i % 3];
        // amax log-uniform over 2^-100 .. 2^100, plus exact powers of two and exact qmax multiples
        float amax = ldexpf(1.0f + rng_uniform(11, 0, i), (int)(rng_bits(11, 1, i) % 201) - 100);
        if (i % 7 == 0) amax = ldexpf(1.0f, (int)(rng_bits(11, 2, i) % 201) - 100);
        if (i % 11 == 0) amax = ldexpf(qmax, (int)(rng_bits(11, 3, i) % 41) - 20);
        float s = quant_scale(amax, qmax, QUANT_SCALE_POW2);
        // the largest power of two that keeps amax within the format: (qmax/2, qmax]
        CHECK(is_pow2(s), "pow2 scale %a for amax %a is not a power of two", s, amax);
        CHECK(amax * s <= qmax && amax * s * 2.0f > qmax, "amax %a * scale %a = %a not in (%g/2, %g]", amax, s,
              amax * s, qmax, qmax);
        float e = quant_scale(amax, qmax, QUANT_SCALE_EXACT);
        CHECK(fabsf(amax * e - qmax) <= qmax * 0x1p-22f, "exact scale: amax %a * %a = %a, not %g", amax, e,
              amax * e, qmax);
    }
    CHECK(quant_scale(0.0f, 127.0f, QUANT_SCALE_POW2) == 1.0f, "amax 0 must give scale 1");
    CHECK(isnan(quant_scale(NAN, 448.0f, QUANT_SCALE_POW2)), "a NaN amax must give a NaN scale");
    CHECK(isnan(quant_scale(INFINITY, 448.0f, QUANT_SCALE_EXACT)), "an Inf amax must give a NaN scale");
    CHECK(isnan(quant_scale(1.0f, -1.0f, QUANT_SCALE_POW2)), "a negative qmax must give a NaN scale");
    CHECK(quant_scale(1e-45f, 448.0f, QUANT_SCALE_POW2) == 0x1p126f, "a tiny amax must clamp the scale to 2^126");
    CHECK(quant_scale(1e-45f, 448.0f, QUANT_SCALE_EXACT) == 0x1p126f, "a tiny amax must clamp the scale to 2^126");
    // The low clamp: no caller's qmax reaches it (amax would pass FLT_MAX), so a qmax of 1 does.
    CHECK(quant_scale(0x1p127f, 1.0f, QUANT_SCALE_POW2) == 0x1p-126f, "a huge amax must clamp the scale to 2^-126");
    CHECK(quant_scale(0x1p127f, 1.0f, QUANT_SCALE_EXACT) == 0x1p-126f, "a huge amax must clamp the scale to 2^-126");
}

static void test_amax(void) {
    size_t n = 100003;   // odd size, above the parallel threshold
    float *x = random_matrix(1, n, 21);
    float serial = 0.0f;
    for (size_t i = 0; i < n; i++) serial = fmaxf(serial, fabsf(x[i]));
    CHECK(quant_amax(x, n) == serial, "amax %a != serial %a", quant_amax(x, n), serial);
    x[n / 3] = -INFINITY;
    CHECK(quant_amax(x, n) == INFINITY, "amax must see -Inf");
    x[n / 2] = -NAN;
    CHECK(isnan(quant_amax(x, n)), "amax must propagate NaN");
    float neg_zero = -0.0f;
    CHECK(quant_amax(&neg_zero, 1) == 0.0f && !signbit(quant_amax(&neg_zero, 1)), "amax(-0) must be +0");
    free(x);
}

static void test_int8_scalar(void) {
    struct { float x, scale; int q; } cases[] = {
        {2.5f, 1.0f, 2},  {3.5f, 1.0f, 4},   {-2.5f, 1.0f, -2}, {-0.5f, 1.0f, 0},     {0.75f, 4.0f, 3},
        {126.5f, 1.0f, 126}, {127.6f, 1.0f, 127}, {-1e9f, 1.0f, -127}, {INFINITY, 1.0f, 127}, {NAN, 1.0f, 0},
        {1.0f, NAN, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(int8_from_float(cases[i].x, cases[i].scale) == cases[i].q, "int8_from_float(%g, %g) = %d, want %d",
              cases[i].x, cases[i].scale, int8_from_float(cases[i].x, cases[i].scale), cases[i].q);
}

// Row-wise and tensor-wise int8 in both scale modes: half-step error bound, exact power-of-two
// dequantization, the row's amax landing in the top half of the int8 range. Each row's amax is
// planted at 3x the row's largest other |value|, in its first, last or a middle column by row, so a
// row amax that misses a column saturates that value in either mode.
static void test_int8_matrices(void) {
    const size_t rows = 37, cols = 301;
    for (int mode = 0; mode < 2; mode++) {
        float *x = random_matrix(rows, cols, 31 + (uint64_t)mode);
        for (size_t r = 0; r < rows; r++) {
            float *xr = x + r * cols, row_max = 0.0f;
            for (size_t c = 0; c < cols; c++) row_max = fmaxf(row_max, fabsf(xr[c]));
            const size_t at = r % 3 == 0 ? 0 : r % 3 == 1 ? cols - 1 : 1 + r * 7 % (cols - 2);
            xr[at] = (r % 2 ? -3.0f : 3.0f) * row_max;  // the all-zero row stays zero
        }
        int8_t *q = malloc_check(rows * cols);
        float *scales = malloc_check(rows * sizeof(float));
        float *deq = malloc_check(rows * cols * sizeof(float));
        int8_quantize_rows(q, scales, x, rows, cols, (quant_scale_mode)mode);
        int8_dequantize_rows(deq, q, scales, rows, cols);
        for (size_t r = 0; r < rows; r++) {
            int max_q = 0;
            for (size_t c = 0; c < cols; c++) {
                size_t i = r * cols + c;
                max_q = abs(q[i]) > max_q ? abs(q[i]) : max_q;
                // |deq - x| <= half a step 1/scale; exact mode adds the fp32 rounding of x*scale and of
                // the dequantization (each under 2^-23 relative of a value below 127.5 steps).
                float bound = 0.5f / scales[r] * (mode == QUANT_SCALE_POW2 ? 1.0f : 1.0f + 0x1p-14f);
                CHECK(fabsf(deq[i] - x[i]) <= bound, "mode %d row %zu: |%a - %a| > %a", mode, r, deq[i], x[i], bound);
                if (mode == QUANT_SCALE_POW2)
                    CHECK(deq[i] * scales[r] == (float)q[i], "pow2 dequantization of row %zu is not exact", r);
            }
            if (r == 2) {
                CHECK(max_q == 0 && scales[r] == 1.0f, "the all-zero row must quantize to 0 with scale 1");
            } else if (mode == QUANT_SCALE_POW2) {
                CHECK(max_q >= 64 && max_q <= 127, "row %zu: amax maps to %d, not in [64, 127]", r, max_q);
            } else {
                CHECK(max_q == 127, "row %zu: exact scale maps amax to %d, not 127", r, max_q);
            }
        }
        // Tensor-wise: one scale from the global amax; the same half-step bound.
        float s = int8_quantize_tensor(q, x, rows * cols, (quant_scale_mode)mode);
        CHECK(s == quant_scale(quant_amax(x, rows * cols), 127.0f, (quant_scale_mode)mode), "tensor scale mismatch");
        int8_dequantize_rows(deq, q, &s, 1, rows * cols);
        for (size_t i = 0; i < rows * cols; i++)
            CHECK(fabsf(deq[i] - x[i]) <= 0.5f / s * (1.0f + 0x1p-14f), "tensor-wise: |%a - %a| > half step", deq[i], x[i]);
        free(x), free(q), free(scales), free(deq);
    }
}

// FP8 with current scaling: relative error within half an ulp of the format (2^-4 for E4M3, 2^-3
// for E5M2) for values that land in the normal range; absolute error within half the smallest
// subnormal step below it; the amax element never saturates; codes round-trip through dequantize.
static void test_fp8_matrices(void) {
    const size_t n = 50000;
    for (int f = 0; f < 2; f++) {
        float *x = random_matrix(1, n, 41 + (uint64_t)f);
        uint8_t *q = malloc_check(n);
        float *deq = malloc_check(n * sizeof(float)), *fake = malloc_check(n * sizeof(float));
        float qmax = f == FP8_E4M3 ? FP8_E4M3_MAX : FP8_E5M2_MAX;
        int mbits = f == FP8_E4M3 ? 3 : 2, bias = f == FP8_E4M3 ? 7 : 15;
        float amax = quant_amax(x, n), s = quant_scale(amax, qmax, QUANT_SCALE_POW2);
        fp8_quantize(q, x, n, s, (fp8_format)f);
        fp8_dequantize(deq, q, n, s, (fp8_format)f);
        fp8_fake_quantize(fake, x, n, s, (fp8_format)f);
        float min_normal = ldexpf(1.0f, 1 - bias), half_sub = ldexpf(1.0f, -bias - mbits);
        for (size_t i = 0; i < n; i++) {
            CHECK(fake[i] == deq[i], "fake quantization differs from quantize + dequantize at %zu", i);
            float y = fabsf(x[i] * s), err = fabsf(deq[i] * s - x[i] * s);
            float bound = y >= min_normal ? ldexpf(y, -mbits - 1) : half_sub;
            CHECK(err <= bound, "%s: x*s = %a dequantized to %a, error %a > %a", f ? "E5M2" : "E4M3", x[i] * s,
                  deq[i] * s, err, bound);
            if (fabsf(x[i]) == amax) CHECK(fabsf(deq[i] * s) <= qmax && y > qmax / 2, "amax lands at %a", deq[i] * s);
        }
        free(x), free(q), free(deq), free(fake);
    }
}

// quant_emulate_operand does per role and precision what the table in quant.h says, in place too,
// in both scale modes.
static void test_emulate_operand(quant_scale_mode mode) {
    const size_t rows = 24, cols = 130, n = rows * cols;
    float *x = random_matrix(rows, cols, 51 + (uint64_t)mode);
    float *out = malloc_check(n * sizeof(float)), *want = malloc_check(n * sizeof(float));
    float *inplace = malloc_check(n * sizeof(float));
    int8_t *q8 = malloc_check(n);
    float *scales = malloc_check(rows * sizeof(float));
    for (int p = 0; p < 4; p++)
        for (int role = 0; role < 3; role++) {
            float s = quant_emulate_operand(out, x, rows, cols, (matmul_precision)p, (quant_operand)role, mode);
            float want_s = 0.0f;
            if (p == MATMUL_FP32) {
                memcpy(want, x, n * sizeof(float));
            } else if (p == MATMUL_BF16) {
                for (size_t i = 0; i < n; i++) want[i] = bf16_to_float(bf16_from_float(x[i]));
            } else if (p == MATMUL_FP8) {
                fp8_format f = role == QUANT_GRADIENT ? FP8_E5M2 : FP8_E4M3;
                want_s = quant_scale(quant_amax(x, n), f == FP8_E5M2 ? FP8_E5M2_MAX : FP8_E4M3_MAX, mode);
                fp8_fake_quantize(want, x, n, want_s, f);
            } else if (role == QUANT_WEIGHT) {
                want_s = int8_quantize_tensor(q8, x, n, mode);
                int8_dequantize_rows(want, q8, &want_s, 1, n);
            } else {
                int8_quantize_rows(q8, scales, x, rows, cols, mode);
                int8_dequantize_rows(want, q8, scales, rows, cols);
            }
            CHECK(s == want_s, "mode %d precision %d role %d: scale %a, want %a", mode, p, role, s, want_s);
            CHECK(memcmp(out, want, n * sizeof(float)) == 0, "mode %d precision %d role %d: output differs", mode, p, role);
            memcpy(inplace, x, n * sizeof(float));
            quant_emulate_operand(inplace, inplace, rows, cols, (matmul_precision)p, (quant_operand)role, mode);
            CHECK(memcmp(inplace, want, n * sizeof(float)) == 0, "precision %d role %d: in place differs", p, role);
            if (p != MATMUL_FP32)
                CHECK(memcmp(out, x, n * sizeof(float)) != 0, "precision %d role %d changed nothing", p, role);
        }
    // A NaN in an operand reaches the emulated operand (so the loss shows it) in every mode.
    x[5 * cols + 7] = NAN;
    for (int p = 1; p < 4; p++)
        for (int role = 0; role < 3; role++) {
            quant_emulate_operand(out, x, rows, cols, (matmul_precision)p, (quant_operand)role, mode);
            int nans = 0;
            for (size_t i = 0; i < n; i++) nans += isnan(out[i]);
            CHECK(nans > 0, "precision %d role %d hid a NaN", p, role);
        }
    free(x), free(out), free(want), free(inplace), free(q8), free(scales);
}

// Stochastic rounding picks one of the two bf16 neighbours, never changes a bf16 value, matches
// truncation for random 0, and is unbiased: the mean of many draws is x within 4 sigma.
static void test_bf16_stochastic(void) {
    for (int i = 0; i < 200; i++) {
        float x = (float)rng_normal(61, 0, i) * ldexpf(1.0f, (int)(rng_bits(61, 1, i) % 40) - 20);
        uint16_t down = (uint16_t)(quant_float_bits(x) >> 16), up = (uint16_t)(down + 1);
        double sum = 0.0;
        const int draws = 4000;
        for (int d = 0; d < draws; d++) {
            uint16_t h = bf16_from_float_stochastic(x, (uint32_t)rng_bits(61, 2 + (uint64_t)i, d));
            CHECK(h == down || h == up, "x = %a rounded to 0x%04x, not a neighbour", x, h);
            sum += bf16_to_float(h);
        }
        double ulp = fabs((double)bf16_to_float(up) - bf16_to_float(down));
        double frac = (double)(quant_float_bits(x) & 0xFFFF) / 65536.0;
        double sigma = ulp * sqrt(frac * (1.0 - frac) / draws);
        CHECK(fabs(sum / draws - x) <= 4.0 * sigma + 1e-12 * fabs(x), "x = %a: mean of draws %a is biased", x, sum / draws);
        CHECK(bf16_from_float_stochastic(x, 0) == down, "random 0 must truncate");
        float exact = bf16_to_float(down);
        CHECK(bf16_from_float_stochastic(exact, 0xFFFFFFFFu) == down, "a bf16 value must stay itself");
    }
    CHECK(bf16_from_float_stochastic(NAN, 12345) == 0x7FFF, "NaN must give 0x7FFF");
    CHECK(bf16_from_float_stochastic(-INFINITY, 0xFFFF) == 0xFF80, "-Inf must stay -Inf");
}

// Delayed scaling's ring (llmc/amax_history.h) against a direct computation: over 40 micro-steps
// of seeded random amaxes for 7 operands and H = 5, the amax a step scales from is its current
// amax at step 0 and the max of the previous min(step, H) recorded amaxes after (the ring starts
// zeroed, so fewer than H recorded steps take the max over what there is); a NaN recorded at one
// step shows in the next H steps' amaxes and then leaves; reset forgets everything.
static void test_amax_history(void) {
    enum { OPS = 7, H = 5, STEPS = 40 };
    AmaxHistory h;
    amax_history_init(&h, OPS, H);
    float recorded[STEPS][OPS];
    Rng rng = {0xa3a5, 0};
    for (int s = 0; s < STEPS; s++) {
        for (int op = 0; op < OPS; op++) {
            float current = (float)(rng_next_uniform(&rng) * 100.0 + 0.01);
            if (s == 17 && op == 3) current = NAN;
            float want = current;
            if (s > 0) {
                want = 0.0f;
                for (int k = s - 1; k >= 0 && k >= s - H; k--)
                    want = isnan(recorded[k][op]) || isnan(want) ? NAN : fmaxf(want, recorded[k][op]);
            }
            float got = amax_history_amax(&h, op, current);
            CHECK((isnan(want) && isnan(got)) || got == want, "step %d operand %d: amax %g, want %g", s, op, got, want);
            amax_history_record(&h, op, current);
            recorded[s][op] = current;
        }
        amax_history_step_done(&h);
    }
    CHECK(h.steps == STEPS, "steps %lld, want %d", (long long)h.steps, STEPS);
    amax_history_reset(&h);
    CHECK(amax_history_amax(&h, 0, 2.5f) == 2.5f, "after reset the current amax must be used");
    // and the amaxes recorded before it (up to 100) are gone from the max of the steps after it
    amax_history_record(&h, 0, 1e-3f);
    amax_history_step_done(&h);
    CHECK(amax_history_amax(&h, 0, 2.5f) == 1e-3f, "after reset and one step the amax is %g, want 0.001",
          amax_history_amax(&h, 0, 2.5f));
    amax_history_free(&h);
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    test_scale();
    test_amax();
    test_int8_scalar();
    test_int8_matrices();
    test_fp8_matrices();
    test_emulate_operand(QUANT_SCALE_POW2);
    test_emulate_operand(QUANT_SCALE_EXACT);
    test_bf16_stochastic();
    test_amax_history();
    if (failures) {
        fprintf(stderr, "test_quant: %d checks FAILED\n", failures);
        return 1;
    }
    printf("test_quant: OK\n");
    return 0;
}
