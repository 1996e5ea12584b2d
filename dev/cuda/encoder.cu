// Harness of llmc/encoder.cuh: token + position embedding forward and its deterministic backward.
// Checks against the CPU loops of train_gpt.c on the same bf16 inputs: the backward first
// overwriting dwpe (filled with NaN; its maxT - T positions the batch lacks must become 0), then
// adding to both gradients, which must double them bit for bit (the same sums again: identical
// bits, and x + x is exact). Then times both at GPT-2 d12 shapes (B=8, T=1024, C=768).
// STATUS: ran and passed on an H100 at commit ad0f582 and, with the overwrite and doubling checks
// (2026-11-24), on an H200 at c95ef56 (2026-11-27; dev/gpu_report.md).
#include "check.h"
#include "../../llmc/encoder.cuh"

static void run(int B, int T, int C, int V, bool timing) {
    const int N = B * T;
    const size_t Vp = (size_t)(V + 127) / 128 * 128;
    const int maxT = T + 3;  // positions T..maxT-1 have no gradient
    std::vector<int> inp(N);
    for (int i = 0; i < N; i++) inp[i] = (i % 3 == 0) ? (int)(splitmix64(i) % 5) : (int)(splitmix64(i) % V);
    const std::vector<float> wte = random_bf16_values(Vp * C, 1, -1, 1), wpe = random_bf16_values((size_t)T * C, 2, -1, 1);
    const std::vector<float> dout = random_bf16_values((size_t)N * C, 3, -1, 1);

    int *d_inp = device_alloc<int>(N), *d_packed = device_alloc<int>(3 * N + 1);
    bf16 *d_wte = device_alloc<bf16>(Vp * C), *d_wpe = device_alloc<bf16>((size_t)T * C);
    bf16 *d_out = device_alloc<bf16>((size_t)N * C), *d_dout = device_alloc<bf16>((size_t)N * C);
    float *d_dwte = device_alloc<float>(Vp * C), *d_dwpe = device_alloc<float>((size_t)maxT * C);
    to_device(d_inp, inp);
    to_device(d_wte, floats_to_bf16(wte));
    to_device(d_wpe, floats_to_bf16(wpe));
    to_device(d_dout, floats_to_bf16(dout));
    std::vector<int> packed(3 * N + 1), counts(Vp);
    const int nb = encoder_buckets_build(packed.data(), counts.data(), inp.data(), N, (int)Vp);
    to_device(d_packed, packed);

    encoder_forward(d_out, d_inp, d_wte, d_wpe, B, T, C, 0);
    std::vector<float> ref((size_t)N * C);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++) ref[(size_t)i * C + c] = wte[(size_t)inp[i] * C + c] + wpe[(size_t)(i % T) * C + c];
    char what[128];
    snprintf(what, sizeof(what), "forward B=%d T=%d C=%d", B, T, C);
    // One bf16 rounding of an exact fp32 sum: relative error <= 2^-9.
    expect_close(what, bf16_to_floats(to_host(d_out, (size_t)N * C)).data(), ref.data(), ref.size(), 4e-3);

    cuda_check(cudaMemset(d_dwte, 0, Vp * C * sizeof(float)));       // dwte always adds
    cuda_check(cudaMemset(d_dwpe, 0xFF, (size_t)maxT * C * sizeof(float)));  // NaN: dwpe is overwritten
    encoder_backward(d_dwte, d_dwpe, d_dout, d_packed, nb, B, T, maxT, C, false, 0);
    std::vector<float> dwte(Vp * C, 0.0f), dwpe((size_t)maxT * C, 0.0f);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++) {
            dwte[(size_t)inp[i] * C + c] += dout[(size_t)i * C + c];
            dwpe[(size_t)(i % T) * C + c] += dout[(size_t)i * C + c];
        }
    const std::vector<float> g1 = to_host(d_dwte, Vp * C), p1 = to_host(d_dwpe, (size_t)maxT * C);
    // fp32 sums of the same bf16 values in the same position order: only fp32 rounding differs.
    snprintf(what, sizeof(what), "backward dwte B=%d T=%d C=%d", B, T, C);
    expect_close(what, g1.data(), dwte.data(), dwte.size(), 1e-5);
    snprintf(what, sizeof(what), "backward dwpe B=%d T=%d C=%d", B, T, C);
    expect_close(what, p1.data(), dwpe.data(), dwpe.size(), 1e-5);
    encoder_backward(d_dwte, d_dwpe, d_dout, d_packed, nb, B, T, maxT, C, true, 0);
    std::vector<float> g2 = g1, p2 = p1;
    for (float &x : g2) x += x;
    for (float &x : p2) x += x;
    expect_true(to_host(d_dwte, Vp * C) == g2, "backward dwte: a second run adds the same bits");
    expect_true(to_host(d_dwpe, (size_t)maxT * C) == p2, "backward dwpe: a second run adds the same bits");

    if (timing) {
        float f = time_median_ms([&] { encoder_forward(d_out, d_inp, d_wte, d_wpe, B, T, C, 0); }, 5, 51, 0);
        float b = time_median_ms([&] { encoder_backward(d_dwte, d_dwpe, d_dout, d_packed, nb, B, T, maxT, C, true, 0); },
                                 5, 51, 0);
        printf("time B=%d T=%d C=%d: forward %.3f ms, backward %.3f ms (median of 51)\n", B, T, C, f, b);
    }
    cuda_check(cudaFree(d_inp)); cuda_check(cudaFree(d_packed)); cuda_check(cudaFree(d_wte)); cuda_check(cudaFree(d_wpe));
    cuda_check(cudaFree(d_out)); cuda_check(cudaFree(d_dout)); cuda_check(cudaFree(d_dwte)); cuda_check(cudaFree(d_dwpe));
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    const bool small_only = harness_small_only(argc, argv);
    run(3, 37, 192, 1001, false);
    run(2, 64, 1600, 300, false);  // C not a multiple of 1024: a partial block of channels
    if (!small_only) run(8, 1024, 768, 50257, true);
    return harness_exit("encoder");
}
