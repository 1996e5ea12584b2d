// Harness of llmc/classifier.cuh: the fused softmax + cross-entropy with dlogits in place, against
// train_gpt.c's crossentropy loops (in double) on the same bf16 logits; padded columns must come
// back 0; timing at GPT-2 d12's classifier (N = 8 * 1024 rows, V = 50257, Vp = 50304).
// The padded columns hold random logits, as every other column: a mask that let one into the
// softmax would move the loss far beyond its tolerance (in the trainer they hold small values,
// and test_gptcu's loss tolerance does not see it).
// STATUS: ran and passed on an H100 at commit ad0f582 and an H200 at c95ef56 (dev/gpu_report.md).
// --check-small (N = 37,
// V = 1001 only) also runs in the CPU emulator of dev/emu (build/emu/classifier, t_46).
#include "check.h"
#include "../../llmc/classifier.cuh"

static void run(int N, int V, bool timing) {
    const int Vp = (V + 127) / 128 * 128;
    const size_t n = (size_t)N * Vp;
    const std::vector<float> logits = random_bf16_values(n, 31, -8, 8);
    std::vector<int> targets(N);
    for (int i = 0; i < N; i++) targets[i] = (int)(splitmix64(1000 + i) % V);
    const float dloss = 1.0f / N;
    bf16 *d_logits = device_alloc<bf16>(n);
    float *d_losses = device_alloc<float>(N);
    int *d_targets = device_alloc<int>(N);
    to_device(d_logits, floats_to_bf16(logits));
    to_device(d_targets, targets);
    if (!timing) {  // the CPU reference at the timing shapes would take minutes
        fused_classifier(d_logits, d_losses, d_targets, dloss, N, V, Vp, true, 0);
        std::vector<float> losses(N), dlogits(n);
        for (int i = 0; i < N; i++) {
            const float *l = &logits[(size_t)i * Vp];
            double m = -INFINITY, s = 0;
            for (int j = 0; j < V; j++) m = fmax(m, l[j]);
            for (int j = 0; j < V; j++) s += exp(l[j] - m);
            losses[i] = (float)(log(s) + m - l[targets[i]]);
            for (int j = 0; j < Vp; j++)
                dlogits[(size_t)i * Vp + j] = j < V ? (float)((exp(l[j] - m) / s - (j == targets[i])) * dloss) : 0.0f;
        }
        char what[128];
        snprintf(what, sizeof(what), "losses N=%d V=%d", N, V);
        expect_close(what, to_host(d_losses, N).data(), losses.data(), N, 1e-5);  // fp32 vs double sums
        const std::vector<float> got = bf16_to_floats(to_host(d_logits, n));
        snprintf(what, sizeof(what), "dlogits N=%d V=%d", N, V);
        expect_close(what, got.data(), dlogits.data(), n, 4e-3);  // one bf16 rounding
        bool pad_zero = true;
        for (int i = 0; i < N; i++)
            for (int j = V; j < Vp; j++) pad_zero &= got[(size_t)i * Vp + j] == 0.0f;
        expect_true(pad_zero, "dlogits of the padded vocabulary are 0");
    }
    if (timing) {
        float ms = time_median_ms([&] { fused_classifier(d_logits, d_losses, d_targets, dloss, N, V, Vp, false, 0); }, 3, 21, 0);
        printf("time N=%d V=%d: losses only %.3f ms (%.0f GB/s) (median of 21)\n", N, V, ms, n * 2.0 / (ms * 1e6));
    }
    cuda_check(cudaFree(d_logits)); cuda_check(cudaFree(d_losses)); cuda_check(cudaFree(d_targets));
}

// --check-small: the first case only, no timing (the CPU emulator of dev/emu, t_46).
int main(int argc, char **argv) {
    set_program_name(argv[0]);
    const bool small_only = harness_small_only(argc, argv);
    run(37, 1001, false);
    if (small_only) return harness_exit("classifier");
    run(64, 50257, false);
    run(8 * 1024, 50257, true);  // timing only
    return harness_exit("classifier");
}
