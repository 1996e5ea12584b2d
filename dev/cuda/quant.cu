// GPU harness for llmc/quant.cuh: every kernel's output against llmc/quant.h byte for byte, then
// timings (median of CUDA-event runs).
//   1. fp32 -> E4M3 / E5M2 cast kernel for all 2^32 fp32 bit patterns (specials included), scale 1
//   2. bf16 -> E4M3 / E5M2 / int8 for all 2^16 bf16 patterns at several scales (powers of two and
//      not), through both variants of the cast (1 and 4 groups of 8 a pass, quant_cast_kernel)
//   2b. the cast and amax kernels' one-element path: lengths not a multiple of 8, pointers not
//      aligned for the 8-element vector path (both variants of the cast)
//   3. fused quantize + transpose + amax, after the device amax kernel, with the scale computed
//      from that amax in the kernel and stored (with its inverse) there, on odd shapes (tiles cut
//      by the edge; rows or columns not a multiple of 8 take the one-element path); and its column
//      sums of each tile row, bit for bit against a host replay of the kernel's order
//   4. row-wise int8 quantization (codes and scales), both scale modes, vector and one-element rows
//   5. the int8 GEMM epilogue (dequantize with bias), replayed on the host in the same fp32 order,
//      vector (columns a multiple of 8) and one-element shapes
//   6. bf16 stochastic rounding (quant.h's function run on the device) against the host
// Exit status 1 if any byte differs.
//
// STATUS: ran and passed on an H100 at commit 7c74e66 (2026-11-23) and, with the scale computed
// inside the cast from an amax (2026-11-24), on an H200 at c95ef56 (2026-11-27; dev/gpu_report.md).
// The cast's variant of 4 groups a pass, its checks and its timing row, and the transpose kernel's
// column sums with their checks and timing row (2026-11-27, after that run) have run only in the
// CPU emulator (the timing rows not even there: they time the GPU).
// Usage: build/cuda/quant            (checks, then timings)
//        build/cuda/quant --check-small  (all but check 1, no timings: for the CPU emulator, t_46)
#include <omp.h>

#include "common.h"
#include "../../llmc/quant.cuh"

static int failures = 0;

// Print one check's outcome; `first` is the index of the first mismatch (if any).
static void report(const char *what, size_t mismatches, size_t total, size_t first) {
    printf("%-58s %s", what, mismatches ? "FAIL" : "ok");
    if (mismatches) printf("  (%zu of %zu differ, first at index %zu)", mismatches, total, first);
    printf("\n");
    failures += mismatches != 0;
}

template <typename T> static size_t count_mismatches(const T *got, const T *want, size_t n, size_t *first) {
    size_t bad = 0, first_bad = SIZE_MAX;
#pragma omp parallel for reduction(+ : bad) reduction(min : first_bad)
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(T)) != 0) {
            bad++;
            if (i < first_bad) first_bad = i;
        }
    *first = first_bad;
    return bad;
}

// The mismatches of two runs' outputs (2n codes) against one expectation; *first: the lower index.
template <typename T>
static size_t count_mismatches_of_runs(const T *got, const T *got_other_run, const T *want, size_t n, size_t *first) {
    size_t other_first;
    const size_t bad = count_mismatches(got, want, n, first) + count_mismatches(got_other_run, want, n, &other_first);
    *first = std::min(*first, other_first);
    return bad;
}

static float *device_scalar(float v) {
    float *d = device_alloc<float>(1);
    cuda_check(cudaMemcpy(d, &v, sizeof v, cudaMemcpyHostToDevice));
    return d;
}

static float host_scalar(const float *d) {
    float v;
    cuda_check(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost));
    return v;
}

// Random bf16 bit patterns of normals times magnitudes spread over 10^-3 .. 10^3 per row.
static std::vector<uint16_t> random_bf16_bits(size_t rows, size_t cols, uint64_t seed) {
    std::vector<uint16_t> v(rows * cols);
    for (size_t r = 0; r < rows; r++) {
        float magnitude = powf(10.0f, -3.0f + 6.0f * (float)uniform01(seed + 1, r));
        for (size_t c = 0; c < cols; c++) v[r * cols + c] = bf16_from_float((float)normal01(seed, r * cols + c) * magnitude);
    }
    return v;
}

static __nv_bfloat16 *to_device_bf16(const std::vector<uint16_t> &bits) {
    __nv_bfloat16 *d = device_alloc<__nv_bfloat16>(bits.size());
    cuda_check(cudaMemcpy(d, bits.data(), bits.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
    return d;
}

static uint8_t host_quantize(float x, float scale, quant_target t) {
    return t == QUANT_TO_INT8 ? (uint8_t)int8_from_float(x, scale) : fp8_from_float(x * scale, (fp8_format)t);
}

static const char *target_name[3] = {"E4M3", "E5M2", "int8"};

__global__ void iota_bits_kernel(float *out, uint32_t base, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = __uint_as_float(base + (uint32_t)i);
}

// 1. All 2^32 fp32 patterns through the cast kernel, in chunks of 2^26.
static void check_all_fp32(void) {
    const size_t chunk = (size_t)1 << 26;
    float *d_in = device_alloc<float>(chunk);
    uint8_t *d_out = device_alloc<uint8_t>(chunk);
    float *d_one = device_scalar(1.0f);
    std::vector<uint8_t> want(chunk);
    for (int t = 0; t < 2; t++) {
        size_t bad = 0, first = SIZE_MAX;
        for (uint64_t base = 0; base < ((uint64_t)1 << 32); base += chunk) {
            LLMC_LAUNCH(1024, 256, 0, 0, iota_bits_kernel)(d_in, (uint32_t)base, chunk);
            cuda_check(cudaGetLastError());
            quant_cast_gpu(d_out, (float *)nullptr, d_in, chunk, quant_scale_given(d_one), (quant_target)t, 0);
            std::vector<uint8_t> got = to_host(d_out, chunk);
#pragma omp parallel for
            for (size_t i = 0; i < chunk; i++)
                want[i] = fp8_from_float(quant_bits_float((uint32_t)(base + i)), (fp8_format)t);
            size_t f;
            size_t b = count_mismatches(got.data(), want.data(), chunk, &f);
            if (b && first == SIZE_MAX) first = base + f;
            bad += b;
        }
        char what[96];
        snprintf(what, sizeof what, "fp32 -> %s cast kernel, all 2^32 inputs", target_name[t]);
        report(what, bad, (size_t)1 << 32, first);
    }
    cuda_check(cudaFree(d_in)), cuda_check(cudaFree(d_out)), cuda_check(cudaFree(d_one));
}

// The bf16 cast in the variant with `groups` groups of 8 a pass (1 or 4; quant_cast_kernel).
static void cast_bf16(int groups, uint8_t *out, float *amax, const __nv_bfloat16 *in, size_t n, QuantScale qs,
                      quant_target target) {
    if (groups == 1) quant_cast_gpu(out, amax, in, n, qs, target, 0);
    else quant_cast_gpu<4>(out, amax, in, n, qs, target, 0);
}

// 2. All 2^16 bf16 patterns at several scales, each target, through both variants of the cast.
static void check_all_bf16(void) {
    const size_t n = 65536;
    std::vector<uint16_t> bits(n);
    for (size_t i = 0; i < n; i++) bits[i] = (uint16_t)i;
    __nv_bfloat16 *d_in = to_device_bf16(bits);
    uint8_t *d_out = device_alloc<uint8_t>(n);
    const float scales[5] = {1.0f, 0x1p-3f, 0x1p5f, 0.7f, 3e-3f};
    for (int t = 0; t < 3; t++)
        for (float s : scales)
            for (int groups : {1, 4}) {
                float *d_s = device_scalar(s);
                cast_bf16(groups, d_out, (float *)nullptr, d_in, n, quant_scale_given(d_s), (quant_target)t);
                std::vector<uint8_t> got = to_host(d_out, n), want(n);
                for (size_t i = 0; i < n; i++) want[i] = host_quantize(bf16_to_float(bits[i]), s, (quant_target)t);
                size_t first, bad = count_mismatches(got.data(), want.data(), n, &first);
                char what[112];
                snprintf(what, sizeof what, "bf16 -> %s cast kernel (%d group%s a pass), all 2^16 inputs, scale %g",
                         target_name[t], groups, groups == 1 ? "" : "s", s);
                report(what, bad, n, first);
                cuda_check(cudaFree(d_s));
            }
    cuda_check(cudaFree(d_in)), cuda_check(cudaFree(d_out));
}

// 2b. Lengths that leave a remainder after the groups of 8, and pointers one element off the
// 16-byte (input) and 8-byte (output) alignment of the vector path: bytes and amax as on the host.
static void check_cast_unaligned(void) {
    const size_t total = 4099;
    std::vector<uint16_t> bits = random_bf16_bits(1, total, 50);
    // The largest magnitude at element total - 1, the last of every case below (and in the scalar
    // tail after the 8-element groups): an amax whose tail loop stops one element short must miss
    // it. Random data puts the maximum there with probability 1/4099.
    float largest = 0.0f;
    for (size_t i = 0; i < total; i++) largest = fmaxf(largest, fabsf(bf16_to_float(bits[i])));
    bits[total - 1] = bf16_from_float(-2.0f * largest);
    __nv_bfloat16 *d_in = to_device_bf16(bits);
    uint8_t *d_out = device_alloc<uint8_t>(total);
    float *d_s = device_scalar(0x1p4f), *d_amax = device_alloc<float>(2);
    const size_t cases[3][2] = {{0, 4099}, {1, 4098}, {3, 4096}};  // (first element, length)
    // The output is filled with one byte and then another before each run: an element the kernel
    // fails to write cannot hold the right code both times, and the bytes outside the range must
    // keep the fill (no stray writes).
    for (auto &cs : cases)
        for (int run = 0; run < 4; run++) {  // both variants of the cast, each onto both fills
            const int groups = run < 2 ? 1 : 4, fill = run % 2 ? 0xFF : 0x00;
            const size_t off = cs[0], n = cs[1];
            std::vector<float> x(n);
            for (size_t i = 0; i < n; i++) x[i] = bf16_to_float(bits[off + i]);
            cuda_check(cudaMemset(d_out, fill, total));
            cuda_check(cudaMemset(d_amax, 0, 2 * sizeof(float)));
            cast_bf16(groups, d_out + off, d_amax + 1, d_in + off, n, quant_scale_given(d_s), QUANT_TO_E4M3);
            quant_amax_gpu(d_amax, d_in + off, n, 0);
            std::vector<uint8_t> got = to_host(d_out, total), want(total, (uint8_t)fill);
            for (size_t i = 0; i < n; i++) want[off + i] = host_quantize(x[i], 0x1p4f, QUANT_TO_E4M3);
            size_t first, bad = count_mismatches(got.data(), want.data(), total, &first);
            const float amax = quant_amax(x.data(), n);
            bad += host_scalar(d_amax) != amax;
            bad += host_scalar(d_amax + 1) != amax;
            char what[112];
            snprintf(what, sizeof what, "bf16 -> E4M3 cast + amax (%d group%s a pass), %zu elements from element %zu, "
                     "fill 0x%02X", groups, groups == 1 ? "" : "s", n, off, fill);
            report(what, bad, total + 2, first);
        }
    cuda_check(cudaFree(d_in)), cuda_check(cudaFree(d_out)), cuda_check(cudaFree(d_s)), cuda_check(cudaFree(d_amax));
}

// The column sums quant_transpose_kernel writes, in its order: per tile row and column, thread
// (warp w, i) adds rows 4w + i and 4w + i + 32 (those < rows), the warp adds its four as
// (i0 + i1) + (i2 + i3), and the 8 warps' sums are added in order.
static std::vector<float> host_tile_colsums(const std::vector<float> &x, int rows, int cols) {
    const int tiles = quant_colsum_rows(rows);
    std::vector<float> out((size_t)tiles * cols);
    for (int t = 0; t < tiles; t++)
        for (int c = 0; c < cols; c++) {
            float total = 0.0f;
            for (int w = 0; w < 8; w++) {
                float s[4];
                for (int i = 0; i < 4; i++) {
                    s[i] = 0.0f;
                    for (int r : {t * 64 + 4 * w + i, t * 64 + 4 * w + i + 32})
                        if (r < rows) s[i] += x[(size_t)r * cols + c];
                }
                total += (s[0] + s[1]) + (s[2] + s[3]);
            }
            out[(size_t)t * cols + c] = total;
        }
    return out;
}

// 3. amax kernel, then the fused quantize + transpose (+ amax, + column sums) on odd shapes, its
// scale computed from that amax (and stored, with its inverse, by the kernel).
static void check_transpose(void) {
    const int shapes[5][2] = {{77, 130}, {1024, 768}, {33, 1}, {1, 1000}, {200, 136}};
    for (int si = 0; si < 5; si++) {
        int rows = shapes[si][0], cols = shapes[si][1];
        size_t n = (size_t)rows * cols;
        for (int t = 0; t < 3; t++) {
            std::vector<uint16_t> bits = random_bf16_bits(rows, cols, 100 + 10 * si + t);
            std::vector<float> x(n);
            for (size_t i = 0; i < n; i++) x[i] = bf16_to_float(bits[i]);
            __nv_bfloat16 *d_x = to_device_bf16(bits);
            float *d_amax = device_alloc<float>(2), *d_scale = device_alloc<float>(2);
            uint8_t *d_q = device_alloc<uint8_t>(n), *d_qt = device_alloc<uint8_t>(n);
            const size_t nsums = (size_t)quant_colsum_rows(rows) * cols;
            float *d_colsum = device_alloc<float>(nsums);
            cuda_check(cudaMemset(d_amax, 0, sizeof(float)));
            quant_amax_gpu(d_amax, d_x, n, 0);
            // Run twice over outputs filled with different bytes: a code not written by the kernel
            // cannot match both times (the second run's results are the ones compared below).
            std::vector<uint8_t> q_first, qt_first;
            std::vector<float> colsum_first;
            for (int fill : {0x00, 0xFF}) {
                cuda_check(cudaMemset(d_q, fill, n)), cuda_check(cudaMemset(d_qt, fill, n));
                cuda_check(cudaMemset(d_colsum, fill, nsums * sizeof(float)));
                cuda_check(cudaMemset(d_amax + 1, 0, sizeof(float)));
                cuda_check(cudaMemset(d_scale, fill, 2 * sizeof(float)));  // the kernel must store both
                // (the first run without an amax: the column sums then meet at the kernel's other barrier)
                quant_transpose_gpu(d_q, d_qt, fill == 0x00 ? nullptr : d_amax + 1, d_colsum, d_x, rows, cols,
                                    quant_scale_of_amax(d_scale, d_scale + 1, d_amax, QUANT_SCALE_POW2), (quant_target)t, 0);
                if (fill == 0x00)
                    q_first = to_host(d_q, n), qt_first = to_host(d_qt, n), colsum_first = to_host(d_colsum, nsums);
            }
            float amax = quant_amax(x.data(), n), scale = quant_scale(amax, quant_target_max((quant_target)t), QUANT_SCALE_POW2);
            std::vector<uint8_t> q = to_host(d_q, n), qt = to_host(d_qt, n), want_q(n), want_qt(n);
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < cols; c++) {
                    uint8_t b = host_quantize(x[(size_t)r * cols + c], scale, (quant_target)t);
                    want_q[(size_t)r * cols + c] = b;
                    want_qt[(size_t)c * rows + r] = b;
                }
            float got_amax = host_scalar(d_amax), got_fused_amax = host_scalar(d_amax + 1);
            float got_scale = host_scalar(d_scale), got_inv = host_scalar(d_scale + 1);
            char what[96];
            snprintf(what, sizeof what, "amax, scale from it in the cast %dx%d %s", rows, cols, target_name[t]);
            bool scalars_ok = got_amax == amax && got_fused_amax == amax && got_scale == scale && got_inv == 1.0f / scale;
            if (!scalars_ok)
                printf("  amax %a / fused %a (want %a), scale %a (want %a), inv %a\n", got_amax, got_fused_amax, amax,
                       got_scale, scale, got_inv);
            report(what, !scalars_ok, 1, 0);
            size_t first, bad = count_mismatches_of_runs(q.data(), q_first.data(), want_q.data(), n, &first);
            snprintf(what, sizeof what, "quantize+transpose %dx%d %s: q", rows, cols, target_name[t]);
            report(what, bad, 2 * n, first);
            bad = count_mismatches_of_runs(qt.data(), qt_first.data(), want_qt.data(), n, &first);
            snprintf(what, sizeof what, "quantize+transpose %dx%d %s: q^T", rows, cols, target_name[t]);
            report(what, bad, 2 * n, first);
            // Compared as bit patterns: a NaN fill left unwritten matches nothing.
            const std::vector<float> colsum = to_host(d_colsum, nsums), want_colsum = host_tile_colsums(x, rows, cols);
            std::vector<uint32_t> got_bits(nsums), first_bits(nsums), want_bits(nsums);
            memcpy(got_bits.data(), colsum.data(), nsums * 4);
            memcpy(first_bits.data(), colsum_first.data(), nsums * 4);
            memcpy(want_bits.data(), want_colsum.data(), nsums * 4);
            bad = count_mismatches_of_runs(got_bits.data(), first_bits.data(), want_bits.data(), nsums, &first);
            snprintf(what, sizeof what, "quantize+transpose %dx%d %s: column sums", rows, cols, target_name[t]);
            report(what, bad, 2 * nsums, first);
            cuda_check(cudaFree(d_x)), cuda_check(cudaFree(d_amax)), cuda_check(cudaFree(d_scale));
            cuda_check(cudaFree(d_q)), cuda_check(cudaFree(d_qt)), cuda_check(cudaFree(d_colsum));
        }
    }
}

// 4. Row-wise int8: codes and per-row scales, both scale modes.
static void check_int8_rows(void) {
    const int rows = 301;
    for (int cols : {1000, 1003})   // rows of whole 8-element groups, and rows that are not
    for (int mode = 0; mode < 2; mode++) {
        const size_t n = (size_t)rows * cols;
        std::vector<uint16_t> bits = random_bf16_bits(rows, cols, 200 + mode + cols);
        std::vector<float> x(n), want_scales(rows);
        for (size_t i = 0; i < n; i++) x[i] = bf16_to_float(bits[i]);
        std::vector<int8_t> want_q(n);
        int8_quantize_rows(want_q.data(), want_scales.data(), x.data(), rows, cols, (quant_scale_mode)mode);
        __nv_bfloat16 *d_x = to_device_bf16(bits);
        int8_t *d_q = device_alloc<int8_t>(n);
        float *d_scales = device_alloc<float>(rows);
        // Twice, over codes filled with 0x00 and then 0xFF (-1): an unwritten code cannot match both.
        cuda_check(cudaMemset(d_q, 0x00, n));
        int8_quantize_rows_gpu(d_q, d_scales, d_x, rows, cols, (quant_scale_mode)mode, 0);
        const std::vector<int8_t> q_first = to_host(d_q, n);
        cuda_check(cudaMemset(d_q, 0xFF, n)), cuda_check(cudaMemset(d_scales, 0xFF, rows * sizeof(float)));
        int8_quantize_rows_gpu(d_q, d_scales, d_x, rows, cols, (quant_scale_mode)mode, 0);
        std::vector<int8_t> q = to_host(d_q, n);
        std::vector<float> scales = to_host(d_scales, rows);
        size_t first, bad = count_mismatches_of_runs(q.data(), q_first.data(), want_q.data(), n, &first);
        char what[96];
        snprintf(what, sizeof what, "int8 rows %dx%d (%s scales): codes", rows, cols, mode ? "exact" : "pow2");
        report(what, bad, 2 * n, first);
        bad = count_mismatches(scales.data(), want_scales.data(), rows, &first);
        snprintf(what, sizeof what, "int8 rows %dx%d (%s scales): scales", rows, cols, mode ? "exact" : "pow2");
        report(what, bad, rows, first);
        cuda_check(cudaFree(d_x)), cuda_check(cudaFree(d_q)), cuda_check(cudaFree(d_scales));
    }
}

// 5. Dequantize-with-bias epilogue: the host replays the kernel's fp32 operations in the same order.
static void check_dequantize_bias(int rows, int cols, bool with_bias) {
    const size_t n = (size_t)rows * cols;
    std::vector<int32_t> acc(n);
    std::vector<float> row_scales(rows);
    std::vector<uint16_t> bias = random_bf16_bits(1, cols, 300);
    for (size_t i = 0; i < n; i++) acc[i] = (int32_t)(splitmix64(301 * 0x100000000ull + i) % 40000001) - 20000000;
    for (int r = 0; r < rows; r++)
        row_scales[r] = r % 2 ? ldexpf(1.0f, (int)(splitmix64(302 + r) % 20) - 10) : 0.37f * (float)(r + 1);
    const float col_scale = 0x1p-7f;
    int32_t *d_acc = device_alloc<int32_t>(n);
    float *d_row = device_alloc<float>(rows), *d_col = device_scalar(col_scale);
    __nv_bfloat16 *d_bias = to_device_bf16(bias), *d_out = device_alloc<__nv_bfloat16>(n);
    to_device(d_acc, acc);
    to_device(d_row, row_scales);
    cuda_check(cudaMemset(d_out, 0xFF, n * sizeof(__nv_bfloat16)));  // NaN: an unwritten element shows
    int8_dequantize_bias_gpu(d_out, d_acc, d_row, d_col, with_bias ? d_bias : nullptr, rows, cols, 0);
    std::vector<__nv_bfloat16> out = to_host(d_out, n);
    std::vector<uint16_t> got(n), want(n);
    for (size_t i = 0; i < n; i++) {
        int r = (int)(i / cols), c = (int)(i % cols);
        volatile float v = (float)acc[i] * (1.0f / row_scales[r]);   // volatile: one rounding per step
        v = v * (1.0f / col_scale);
        if (with_bias) v = v + bf16_to_float(bias[c]);
        want[i] = bf16_from_float(v);
        got[i] = __nv_bfloat16_raw(out[i]).x;
    }
    size_t first, bad = count_mismatches(got.data(), want.data(), n, &first);
    char what[96];
    snprintf(what, sizeof what, "int8 dequantize%s epilogue %dx%d", with_bias ? " + bias" : "", rows, cols);
    report(what, bad, n, first);
    cuda_check(cudaFree(d_acc)), cuda_check(cudaFree(d_row)), cuda_check(cudaFree(d_col));
    cuda_check(cudaFree(d_bias)), cuda_check(cudaFree(d_out));
}

__global__ void stochastic_round_kernel(uint16_t *out, const float *x, const uint32_t *random, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = bf16_from_float_stochastic(x[i], random[i]);
}

// 6. bf16 stochastic rounding on the device equals the host for the same random bits.
static void check_stochastic_rounding(void) {
    const size_t n = 1 << 20;
    std::vector<float> x(n);
    std::vector<uint32_t> random(n);
    for (size_t i = 0; i < n; i++) {
        x[i] = quant_bits_float((uint32_t)splitmix64(400 * 0x100000000ull + i));   // every kind of float
        random[i] = (uint32_t)splitmix64(401 * 0x100000000ull + i);
    }
    float *d_x = device_alloc<float>(n);
    uint32_t *d_r = device_alloc<uint32_t>(n);
    uint16_t *d_out = device_alloc<uint16_t>(n);
    to_device(d_x, x);
    to_device(d_r, random);
    LLMC_LAUNCH(1024, 256, 0, 0, stochastic_round_kernel)(d_out, d_x, d_r, n);
    cuda_check(cudaGetLastError());
    std::vector<uint16_t> got = to_host(d_out, n), want(n);
    for (size_t i = 0; i < n; i++) want[i] = bf16_from_float_stochastic(x[i], random[i]);
    size_t first, bad = count_mismatches(got.data(), want.data(), n, &first);
    report("bf16 stochastic rounding, 2^20 random floats", bad, n, first);
    cuda_check(cudaFree(d_x)), cuda_check(cudaFree(d_r)), cuda_check(cudaFree(d_out));
}

// Timings at the size of d12's largest activation, (B*T, 4C) = (8192, 3072) bf16.
static void time_kernels(void) {
    const int rows = 8192, cols = 3072;
    const size_t n = (size_t)rows * cols;
    __nv_bfloat16 *d_x = device_alloc<__nv_bfloat16>(n);
    fill_uniform_bf16(d_x, n, 500, -3.0f, 3.0f);
    uint8_t *d_q = device_alloc<uint8_t>(n), *d_qt = device_alloc<uint8_t>(n);
    float *d_amax = device_alloc<float>(1), *d_scale = device_scalar(16.0f), *d_scales = device_alloc<float>(rows);
    int32_t *d_acc = device_alloc<int32_t>(n);
    cuda_check(cudaMemset(d_acc, 0, n * sizeof(int32_t)));
    __nv_bfloat16 *d_out = device_alloc<__nv_bfloat16>(n);
    const int warmup = 5, reps = 50;
    float *d_colsum = device_alloc<float>((size_t)quant_colsum_rows(rows) * cols);
    struct { const char *name; double bytes; float ms; } t[7] = {
        {"amax (bf16 in)", 2.0 * n, 0}, {"cast bf16 -> E4M3 + amax", 3.0 * n, 0},
        {"quantize+transpose bf16 -> E4M3, q and q^T + amax", 4.0 * n, 0},
        {"int8 rows (bf16 in, 2 passes over each row)", 3.0 * n, 0},
        {"int8 dequantize + bias (int32 in, bf16 out)", 6.0 * n, 0},
        {"cast bf16 -> E4M3 + amax, 4 groups of 8 a pass", 3.0 * n, 0},
        // the FP8 output gradient's cast: codes and the bias gradient's column sums (llmc/matmul_lowp.cuh)
        {"quantize (tiles) bf16 -> E5M2, q + column sums + amax", 3.0 * n, 0}};
    t[0].ms = time_median_ms([&] { quant_amax_gpu(d_amax, d_x, n, 0); }, warmup, reps, 0);
    t[1].ms = time_median_ms([&] { quant_cast_gpu(d_q, d_amax, d_x, n, quant_scale_given(d_scale), QUANT_TO_E4M3, 0); },
                             warmup, reps, 0);
    t[2].ms = time_median_ms([&] {
        quant_transpose_gpu(d_q, d_qt, d_amax, (float *)nullptr, d_x, rows, cols, quant_scale_given(d_scale),
                            QUANT_TO_E4M3, 0); },
                             warmup, reps, 0);
    t[3].ms = time_median_ms([&] { int8_quantize_rows_gpu((int8_t *)d_q, d_scales, d_x, rows, cols, QUANT_SCALE_POW2, 0); },
                             warmup, reps, 0);
    to_device(d_scales, std::vector<float>(rows, 1.0f));
    t[4].ms = time_median_ms([&] { int8_dequantize_bias_gpu(d_out, d_acc, d_scales, d_scale, d_x, rows, cols, 0); },
                             warmup, reps, 0);
    t[5].ms = time_median_ms([&] { quant_cast_gpu<4>(d_q, d_amax, d_x, n, quant_scale_given(d_scale), QUANT_TO_E4M3, 0); },
                             warmup, reps, 0);
    t[6].ms = time_median_ms([&] {
        quant_transpose_gpu(d_q, (uint8_t *)nullptr, d_amax, d_colsum, d_x, rows, cols, quant_scale_given(d_scale),
                            QUANT_TO_E5M2, 0); },
                             warmup, reps, 0);
    printf("\ntimings, %d x %d, median of %d runs:\n", rows, cols, reps);
    for (auto &k : t) printf("  %-56s %8.3f ms  %7.1f GB/s\n", k.name, k.ms, k.bytes / (k.ms * 1e-3) / 1e9);
    cuda_check(cudaFree(d_x)), cuda_check(cudaFree(d_q)), cuda_check(cudaFree(d_qt)), cuda_check(cudaFree(d_amax));
    cuda_check(cudaFree(d_colsum));
    cuda_check(cudaFree(d_scale)), cuda_check(cudaFree(d_scales)), cuda_check(cudaFree(d_acc)), cuda_check(cudaFree(d_out));
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    const bool small_only = harness_small_only(argc, argv);
    cudaDeviceProp prop;
    cuda_check(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
    if (prop.major * 10 + prop.minor < 89) die("the FP8 cast kernels need sm_89 or newer; this device is sm_%d%d", prop.major, prop.minor);
    if (!small_only) check_all_fp32();
    check_all_bf16();
    check_cast_unaligned();
    check_transpose();
    check_int8_rows();
    check_dequantize_bias(129, 515, true);   // columns not a multiple of 8: the one-element path
    check_dequantize_bias(128, 512, true);   // the vector path
    check_dequantize_bias(128, 512, false);  // no bias (the input gradient's epilogue)
    check_stochastic_rounding();
    cuda_check(cudaDeviceSynchronize());
    if (failures) {
        printf("quant: %d checks FAILED\n", failures);
        return 1;
    }
    printf("quant: all checks passed\n");
    if (!small_only) time_kernels();
    return 0;
}
