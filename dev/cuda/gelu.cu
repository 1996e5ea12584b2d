// Harness of llmc/gelu.cuh: GELU forward and backward against train_gpt.c's formulas on the same
// bf16 inputs; the forward and the backward writing FP8 codes of their outputs byte for byte as the
// cast of their bf16 outputs; then timing at the size of GPT-2 d12's MLP (B=8, T=1024, 4C=3072).
// The inputs span [-6, 6]: test_gptcu's tiny model feeds the GELU values so small that a wrong
// constant in the cubic term of the derivative stays inside its gradient tolerances.
// STATUS: ran and passed on an H100 at commit ad0f582 and an H200 at c95ef56 (dev/gpu_report.md).
// --check-small (a small n)
// also runs in the CPU emulator of dev/emu (build/emu/gelu, t_46).
#include <algorithm>

#include "check.h"
#include "../../llmc/gelu.cuh"

// The forward with FP8 codes (gelu_forward_codes, the trainer's FP8 training step with delayed
// scaling) of x (rows, cols), with and without its bf16 output, against gelu_forward's output cast
// by quant_transpose_gpu with the same scale: y, q, qt and amax byte for byte; and the backward's
// codes (gelu_backward_codes) likewise. The outputs are filled with a byte pattern first, so that a
// skipped element shows. With timing, both ways are timed (median of 51).
static void check_codes(const bf16 *d_x, int rows, int cols, bool timing) {
    const size_t n = (size_t)rows * cols;
    bf16 *d_y = device_alloc<bf16>(n), *d_y2 = device_alloc<bf16>(n);
    uint8_t *d_q = device_alloc<uint8_t>(n), *d_qt = device_alloc<uint8_t>(n);
    uint8_t *d_q2 = device_alloc<uint8_t>(n), *d_qt2 = device_alloc<uint8_t>(n);
    float *d_s = device_alloc<float>(3);  // scale, the cast's amax, the fused forward's
    to_device(d_s, std::vector<float>{64.0f, 0.0f, 0.0f});  // GELU of [-6, 6] times 64 reaches 384 < 448
    gelu_forward(d_y, d_x, (int64_t)n, 0);
    quant_transpose_gpu(d_q, d_qt, d_s + 1, (float *)nullptr, d_y, rows, cols, quant_scale_given(d_s), QUANT_TO_E4M3, 0);
    const std::vector<uint8_t> q = to_host(d_q, n), qt = to_host(d_qt, n);
    const std::vector<bf16> y = to_host(d_y, n);
    const float amax = to_host(d_s + 1, 1)[0];
    for (int with_out = 0; with_out < 2; with_out++) {
        cuda_check(cudaMemset(d_q2, 0xA5, n)), cuda_check(cudaMemset(d_qt2, 0x5A, n));
        cuda_check(cudaMemset(d_y2, 0xFF, n * sizeof(bf16))), cuda_check(cudaMemset(d_s + 2, 0, sizeof(float)));
        gelu_forward_codes(with_out ? d_y2 : nullptr, QuantCodesOut{d_q2, d_qt2, d_s, d_s + 2, QUANT_TO_E4M3}, d_x,
                           rows, cols, 0);
        const std::vector<bf16> y2 = to_host(d_y2, n);
        const uint8_t *bytes = reinterpret_cast<const uint8_t *>(y2.data());
        const bool out_ok = with_out ? !memcmp(y2.data(), y.data(), n * sizeof(bf16))
                                     : std::all_of(bytes, bytes + n * sizeof(bf16), [](uint8_t b) { return b == 0xFF; });
        char what[128];
        snprintf(what, sizeof(what), "forward with FP8 codes (%s) %d x %d: the cast's y, q, q^T, amax", with_out ?
                 "bf16 out too" : "codes only", rows, cols);
        expect_true(out_ok && to_host(d_q2, n) == q && to_host(d_qt2, n) == qt && to_host(d_s + 2, 1)[0] == amax, what);
    }
    // The backward: codes (E5M2, the gradient's format), transposed codes, amax and the bias
    // gradient's column sums of d * gelu'(x), against gelu_backward_inplace's bf16 result cast with
    // its column sums; d itself must be left as it was.
    const size_t tiles = (size_t)quant_colsum_rows(rows) * cols;
    const std::vector<bf16> d = floats_to_bf16(random_bf16_values(n, 23, -1, 1));
    bf16 *d_d = device_alloc<bf16>(n), *d_dx = device_alloc<bf16>(n);
    float *d_sum = device_alloc<float>(tiles), *d_sum2 = device_alloc<float>(tiles);
    to_device(d_d, d), to_device(d_dx, d);
    gelu_backward_inplace(d_dx, d_x, (int64_t)n, 0);
    cuda_check(cudaMemset(d_s + 1, 0, sizeof(float)));
    quant_transpose_gpu(d_q, d_qt, d_s + 1, d_sum, d_dx, rows, cols, quant_scale_given(d_s), QUANT_TO_E5M2, 0);
    cuda_check(cudaMemset(d_q2, 0xA5, n)), cuda_check(cudaMemset(d_qt2, 0x5A, n));
    cuda_check(cudaMemset(d_sum2, 0xFF, tiles * sizeof(float))), cuda_check(cudaMemset(d_s + 2, 0, sizeof(float)));
    gelu_backward_codes(QuantCodesOut{d_q2, d_qt2, d_s, d_s + 2, QUANT_TO_E5M2, d_sum2}, d_d, d_x, rows, cols, 0);
    const std::vector<bf16> d_after = to_host(d_d, n);
    char what[128];
    snprintf(what, sizeof(what), "backward with FP8 codes %d x %d: the cast's q, q^T, amax, column sums", rows, cols);
    expect_true(to_host(d_q2, n) == to_host(d_q, n) && to_host(d_qt2, n) == to_host(d_qt, n) &&
                    to_host(d_s + 2, 1)[0] == to_host(d_s + 1, 1)[0] &&
                    !memcmp(to_host(d_sum2, tiles).data(), to_host(d_sum, tiles).data(), tiles * sizeof(float)) &&
                    !memcmp(d_after.data(), d.data(), n * sizeof(bf16)),
                what);
    if (timing) {
        const float split = time_median_ms([&] {
            gelu_backward_inplace(d_dx, d_x, (int64_t)n, 0);
            quant_transpose_gpu(d_q, d_qt, d_s + 1, d_sum, d_dx, rows, cols, quant_scale_given(d_s), QUANT_TO_E5M2,
                                0); }, 5, 51, 0);
        const float one = time_median_ms([&] {
            gelu_backward_codes(QuantCodesOut{d_q, d_qt, d_s, d_s + 2, QUANT_TO_E5M2, d_sum}, d_d, d_x, rows, cols,
                                0); }, 5, 51, 0);
        printf("time %d x %d, backward as FP8 codes (q, q^T, amax, column sums): backward + quantize-and-transpose "
               "%.3f ms, backward writing the codes %.3f ms (%.2fx)\n", rows, cols, split, one, split / one);
    }
    cuda_check(cudaFree(d_d)); cuda_check(cudaFree(d_dx)); cuda_check(cudaFree(d_sum)); cuda_check(cudaFree(d_sum2));
    if (timing) {
        const float split = time_median_ms([&] {
            gelu_forward(d_y, d_x, (int64_t)n, 0);
            quant_transpose_gpu(d_q, d_qt, d_s + 1, (float *)nullptr, d_y, rows, cols, quant_scale_given(d_s),
                                QUANT_TO_E4M3, 0); }, 5, 51, 0);
        const float one = time_median_ms([&] {
            gelu_forward_codes(nullptr, QuantCodesOut{d_q, d_qt, d_s, d_s + 2, QUANT_TO_E4M3}, d_x, rows, cols, 0); },
            5, 51, 0);
        printf("time %d x %d, FP8 codes of the output (q, q^T, amax): forward + quantize-and-transpose %.3f ms, "
               "forward writing the codes %.3f ms (%.2fx)\n", rows, cols, split, one, split / one);
    }
    cuda_check(cudaFree(d_y)); cuda_check(cudaFree(d_y2)); cuda_check(cudaFree(d_q)); cuda_check(cudaFree(d_qt));
    cuda_check(cudaFree(d_q2)); cuda_check(cudaFree(d_qt2)); cuda_check(cudaFree(d_s));
}

// --check-small: 8 * 4099 elements (a partial last block), no timing (the CPU emulator of dev/emu,
// t_46).
int main(int argc, char **argv) {
    set_program_name(argv[0]);
    const bool small_only = harness_small_only(argc, argv);
    const size_t n = small_only ? (size_t)8 * 4099 : (size_t)8 * 1024 * 3072;
    const std::vector<float> x = random_bf16_values(n, 21, -6, 6), d = random_bf16_values(n, 22, -1, 1);
    bf16 *d_x = device_alloc<bf16>(n), *d_y = device_alloc<bf16>(n), *d_d = device_alloc<bf16>(n);
    to_device(d_x, floats_to_bf16(x));
    to_device(d_d, floats_to_bf16(d));
    gelu_forward(d_y, d_x, (int64_t)n, 0);
    gelu_backward_inplace(d_d, d_x, (int64_t)n, 0);
    std::vector<float> y(n), dx(n);
    const float k = 0.7978845608028654f;
    for (size_t i = 0; i < n; i++) {
        const float v = x[i], u = k * (v + 0.044715f * v * v * v), th = tanhf(u);
        y[i] = 0.5f * v * (1.0f + th);
        dx[i] = d[i] * (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * k * (1.0f + 3.0f * 0.044715f * v * v));
    }
    // One bf16 rounding of the result: at most half an ulp, 2^-8 = 3.9e-3 of the value (8 significant
    // bits), so at most 3.9e-3 of the largest |ref|; tanhf on the GPU differs from the CPU's by a few
    // ulp of fp32, far below that.
    expect_close("gelu forward", bf16_to_floats(to_host(d_y, n)).data(), y.data(), n, 4e-3);
    expect_close("gelu backward", bf16_to_floats(to_host(d_d, n)).data(), dx.data(), n, 4e-3);
    // The codes: tiles cut by both edges (4099 rows: 8-aligned columns and qt runs cut at the last
    // tile; 8 x 4099: columns not a multiple of 8, one element at a time), and d12's shape.
    check_codes(d_x, 4099, 8, false);
    check_codes(d_x, 8, 4099, false);
    check_codes(d_x, 136, 200, false);
    if (!small_only) check_codes(d_x, 8 * 1024, 3072, true);
    if (small_only) {
        cuda_check(cudaFree(d_x)); cuda_check(cudaFree(d_y)); cuda_check(cudaFree(d_d));
        return harness_exit("gelu");
    }
    float f = time_median_ms([&] { gelu_forward(d_y, d_x, (int64_t)n, 0); }, 5, 51, 0);
    float b = time_median_ms([&] { gelu_backward_inplace(d_d, d_x, (int64_t)n, 0); }, 5, 51, 0);
    printf("time n=%zu: forward %.3f ms (%.0f GB/s), backward %.3f ms (%.0f GB/s) (median of 51)\n", n, f,
           2.0 * n * 2 / (f * 1e6), b, 3.0 * n * 2 / (b * 1e6));
    cuda_check(cudaFree(d_x)); cuda_check(cudaFree(d_y)); cuda_check(cudaFree(d_d));
    return harness_exit("gelu");
}
