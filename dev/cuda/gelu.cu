// Harness of llmc/gelu.cuh: GELU forward and backward against train_gpt.c's formulas on the same
// bf16 inputs, then timing at the size of GPT-2 d12's MLP (B=8, T=1024, 4C=3072).
// The inputs span [-6, 6]: test_gptcu's tiny model feeds the GELU values so small that a wrong
// constant in the cubic term of the derivative stays inside its gradient tolerances.
// STATUS: ran and passed on an H100 at commit ad0f582 and an H200 at c95ef56 (dev/gpu_report.md).
// --check-small (a small n)
// also runs in the CPU emulator of dev/emu (build/emu/gelu, t_46).
#include "check.h"
#include "../../llmc/gelu.cuh"

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
