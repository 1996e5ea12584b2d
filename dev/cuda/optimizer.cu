// Harness of llmc/adamw.cuh and llmc/global_norm.cuh against the CPU optimizer (llmc/optimizer.c,
// linked): the global gradient norm, then three AdamW steps with update clipping on a small odd
// model (every tensor's RMS and clipping decision, the moments, the fp32 master weights), the
// stochastic rounding of the bf16 weights against llmc/quant.h with the same random bits, and
// identical bits on a rerun. Timing of one step at GPT-2 d12 (124M parameters).
// STATUS: ran and passed on an H100 at commit ad0f582 and an H200 at c95ef56 (dev/gpu_report.md).
// --check-small (the small
// model only) also runs in the CPU emulator of dev/emu (build/emu/optimizer, t_46).
#include "check.h"
#include "../../llmc/adamw.cuh"
#include "../../llmc/global_norm.cuh"
#include "../../llmc/optimizer.h"

static void run(const GPT2Config *cfg, bool timing) {
    const size_t P = gpt2_num_params(cfg);
    const AdamWConfig hp = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0.5f};
    std::vector<float> w = random_bf16_values(P, 41, -0.1f, 0.1f), m(P, 0.0f), v(P, 0.0f);
    float *d_grads = device_alloc<float>(P), *d_master = device_alloc<float>(P), *d_m = device_alloc<float>(P),
          *d_v = device_alloc<float>(P);
    bf16 *d_params = device_alloc<bf16>(P);
    double *d_norm = device_alloc<double>(1), *d_scratch = device_alloc<double>(global_norm_chunks(P));
    to_device(d_master, w);
    cuda_check(cudaMemset(d_m, 0, P * sizeof(float)));
    cuda_check(cudaMemset(d_v, 0, P * sizeof(float)));
    AdamW opt;
    adamw_init(&opt, cfg, hp.weight_decay, 0, P);
    const uint64_t seed = 77;
    for (int t = 1; t <= 3; t++) {
        std::vector<float> g = random_bf16_values(P, 100 + t, -1, 1);
        for (size_t i = 0; i < P; i += 7) g[i] *= 10.0f;  // uneven magnitudes: some tensors clip
        to_device(d_grads, g);
        global_sum_squares(d_norm, d_scratch, d_grads, P, 0);
        const double norm = sqrt(to_host(d_norm, 1)[0]), ref_norm = sqrt(sum_of_squares(g.data(), P));
        const float got = (float)norm, ref = (float)ref_norm;
        expect_close("global norm", &got, &ref, 1, 1e-6);  // double sums in another order, compared as fp32
        const float scale = grad_clip_scale(hp.grad_clip, ref_norm);
        const int clipped = adamw_update(&opt, d_master, d_params, d_m, d_v, d_grads, t, 1e-3f, scale, hp.beta1,
                                         hp.beta2, hp.eps, hp.update_clip, seed, 0, NULL, NULL);
        const int ref_clipped = adamw_step(cfg, &hp, w.data(), g.data(), m.data(), v.data(), 0, P, t, 1e-3f, scale, NULL, NULL);
        char what[128];
        snprintf(what, sizeof(what), "step %d: clipped tensors gpu %d cpu %d", t, clipped, ref_clipped);
        expect_true(clipped == ref_clipped, what);
        // The same fp32 formulas; the GPU may contract a*b+c into fma differently: a few ulp.
        snprintf(what, sizeof(what), "step %d: m, v, master", t);
        expect_close(what, to_host(d_m, P).data(), m.data(), P, 1e-6);
        expect_close(what, to_host(d_v, P).data(), v.data(), P, 1e-6);
        const std::vector<float> master = to_host(d_master, P);
        expect_close(what, master.data(), w.data(), P, 1e-6);
        // Stochastic rounding: bit-exact against quant.h given the GPU's own master values.
        const std::vector<bf16> params = to_host(d_params, P);
        size_t mismatches = 0;
        for (size_t i = 0; i < P; i++) {
            uint16_t want = bf16_from_float_stochastic(master[i], (uint32_t)rng_bits(seed, (uint64_t)t, i)), got_bits;
            memcpy(&got_bits, &params[i], 2);
            mismatches += got_bits != want;
        }
        snprintf(what, sizeof(what), "step %d: stochastic rounding bit-exact (%zu mismatches)", t, mismatches);
        expect_true(mismatches == 0, what);
    }
    if (timing) {
        float ms = time_median_ms([&] {
            adamw_update(&opt, d_master, d_params, d_m, d_v, d_grads, 4, 1e-3f, 1.0f, hp.beta1, hp.beta2, hp.eps,
                         hp.update_clip, seed, 0, NULL, NULL);
        }, 3, 21, 0);
        float nm = time_median_ms([&] { global_sum_squares(d_norm, d_scratch, d_grads, P, 0); }, 3, 21, 0);
        printf("time P=%zu: AdamW step %.3f ms (%.0f GB/s), global norm %.3f ms (median of 21)\n", P, ms,
               P * 26.0 / (ms * 1e6), nm);
    }
    adamw_free(&opt);
    cuda_check(cudaFree(d_grads)); cuda_check(cudaFree(d_master)); cuda_check(cudaFree(d_m)); cuda_check(cudaFree(d_v));
    cuda_check(cudaFree(d_params)); cuda_check(cudaFree(d_norm)); cuda_check(cudaFree(d_scratch));
}

// --check-small: the small model's checks only, no d12 and no timing (the CPU emulator of dev/emu,
// t_46).
int main(int argc, char **argv) {
    set_program_name(argv[0]);
    const bool small_only = harness_small_only(argc, argv);
    GPT2Config small = {96, 1001, 1024, 3, 3, 192}, d12;
    run(&small, false);
    if (small_only) return harness_exit("optimizer");
    gpt2_config_from_string("d12", &d12);
    run(&d12, true);
    return harness_exit("optimizer");
}
