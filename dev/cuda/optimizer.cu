// Harness of llmc/adamw.cuh and llmc/global_norm.cuh against the CPU optimizer (llmc/optimizer.c,
// linked): the global gradient norm, then three AdamW steps with update clipping on a small odd
// model (every tensor's RMS and clipping decision, the moments, the fp32 master weights), the
// stochastic rounding of the bf16 weights against llmc/quant.h with the same random bits, and
// identical bits on a rerun. The same three steps without update clipping (the one-pass
// adamw_fused_kernel), also bit for bit against the two passes run with a threshold no tensor
// reaches (the same lr, the same per-element functions). Each of the two also on one ZeRO rank's
// range of the small model (from a third to two thirds of its parameters): its elements against the
// CPU's step of the same range, the rounding bits by their global index, and the elements outside
// left as they were. Timing of one step at GPT-2 d12 (124M parameters), with and without update
// clipping.
// STATUS: ran and passed on an H100 at commit ad0f582 and an H200 at c95ef56 (dev/gpu_report.md).
// --check-small (the small
// model only) also runs in the CPU emulator of dev/emu (build/emu/optimizer, t_46).
#include "check.h"
#include "../../llmc/adamw.cuh"
#include "../../llmc/global_norm.cuh"
#include "../../llmc/optimizer.h"

// update_clip <= 0: the one-pass kernel, checked also against the two passes (twin state below).
// The step updates the flat range [begin, end) (a ZeRO rank's; every pointer at element begin).
static void run(const GPT2Config *cfg, float update_clip, bool timing, size_t begin, size_t end) {
    const size_t P = gpt2_num_params(cfg), n = end - begin;
    const AdamWConfig hp = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, update_clip};
    const bool fused = update_clip <= 0.0f;
    printf("%s, P = %zu, range [%zu, %zu)\n", fused ? "without update clipping (one pass)" : "update clipping 0.5 (two passes)",
           P, begin, end);
    std::vector<float> w = random_bf16_values(P, 41, -0.1f, 0.1f), m(P, 0.0f), v(P, 0.0f);
    float *d_grads = device_alloc<float>(P), *d_master = device_alloc<float>(P), *d_m = device_alloc<float>(P),
          *d_v = device_alloc<float>(P);
    bf16 *d_params = device_alloc<bf16>(P);
    double *d_norm = device_alloc<double>(1), *d_scratch = device_alloc<double>(global_norm_chunks(P));
    to_device(d_master, w);
    cuda_check(cudaMemset(d_m, 0, P * sizeof(float)));
    cuda_check(cudaMemset(d_v, 0, P * sizeof(float)));
    cuda_check(cudaMemset(d_params, 0, P * sizeof(bf16)));
    AdamW opt;
    adamw_init(&opt, cfg, hp.weight_decay, begin, end);
    const uint64_t seed = 77;
    // The two passes' twin of the one-pass run: the same start, a threshold no RMS reaches.
    float *t_master = nullptr, *t_m = nullptr, *t_v = nullptr;
    bf16 *t_params = nullptr;
    if (fused) {
        t_master = device_alloc<float>(P), t_m = device_alloc<float>(P), t_v = device_alloc<float>(P);
        t_params = device_alloc<bf16>(P);
        to_device(t_master, w);
        cuda_check(cudaMemset(t_params, 0, P * sizeof(bf16)));
        cuda_check(cudaMemset(t_m, 0, P * sizeof(float)));
        cuda_check(cudaMemset(t_v, 0, P * sizeof(float)));
    }
    for (int t = 1; t <= 3; t++) {
        std::vector<float> g = random_bf16_values(P, 100 + t, -1, 1);
        for (size_t i = 0; i < P; i += 7) g[i] *= 10.0f;  // uneven magnitudes: some tensors clip
        to_device(d_grads, g);
        global_sum_squares(d_norm, d_scratch, d_grads, P, 0);
        const double norm = sqrt(to_host(d_norm, 1)[0]), ref_norm = sqrt(sum_of_squares(g.data(), P));
        const float got = (float)norm, ref = (float)ref_norm;
        expect_close("global norm", &got, &ref, 1, 1e-6);  // double sums in another order, compared as fp32
        const float scale = grad_clip_scale(hp.grad_clip, ref_norm);
        const int clipped = adamw_update(&opt, d_master + begin, d_params + begin, d_m + begin, d_v + begin,
                                         d_grads + begin, t, 1e-3f, scale, hp.beta1, hp.beta2, hp.eps, hp.update_clip,
                                         seed, 0, NULL, NULL);
        const int ref_clipped = adamw_step(cfg, &hp, w.data() + begin, g.data() + begin, m.data() + begin,
                                           v.data() + begin, begin, end, t, 1e-3f, scale, NULL, NULL);
        char what[128];
        snprintf(what, sizeof(what), "step %d: clipped tensors gpu %d cpu %d", t, clipped, ref_clipped);
        expect_true(clipped == ref_clipped, what);
        // The same fp32 formulas; the GPU may contract a*b+c into fma differently: a few ulp.
        snprintf(what, sizeof(what), "step %d: m, v, master", t);
        expect_close(what, to_host(d_m, P).data(), m.data(), P, 1e-6);
        expect_close(what, to_host(d_v, P).data(), v.data(), P, 1e-6);
        const std::vector<float> master = to_host(d_master, P);
        expect_close(what, master.data(), w.data(), P, 1e-6);  // (outside the range: the start, unchanged)
        // Stochastic rounding: bit-exact against quant.h given the GPU's own master values, with the
        // bits of each element's global index; outside the range the weights stay as set (zero).
        const std::vector<bf16> params = to_host(d_params, P);
        size_t mismatches = 0;
        for (size_t i = 0; i < P; i++) {
            if (i < begin || i >= end) {
                uint16_t got_bits;
                memcpy(&got_bits, &params[i], 2);
                mismatches += got_bits != 0;
                continue;
            }
            uint16_t want = bf16_from_float_stochastic(master[i], (uint32_t)rng_bits(seed, (uint64_t)t, i)), got_bits;
            memcpy(&got_bits, &params[i], 2);
            mismatches += got_bits != want;
        }
        snprintf(what, sizeof(what), "step %d: stochastic rounding bit-exact (%zu mismatches)", t, mismatches);
        expect_true(mismatches == 0, what);
        if (fused) {
            const int twin_clipped = adamw_update(&opt, t_master + begin, t_params + begin, t_m + begin, t_v + begin,
                                                  d_grads + begin, t, 1e-3f, scale, hp.beta1, hp.beta2, hp.eps,
                                                  INFINITY, seed, 0, NULL, NULL);
            const bool same = twin_clipped == 0 && same_bytes(to_host(t_m, P), to_host(d_m, P)) &&
                              same_bytes(to_host(t_v, P), to_host(d_v, P)) && same_bytes(to_host(t_master, P), master) &&
                              same_bytes(to_host(t_params, P), params);
            snprintf(what, sizeof(what), "step %d: one pass == two passes, m, v, master and bf16 weights bit for bit", t);
            expect_true(same, what);
        }
    }
    if (timing) {
        // Bytes per parameter: two passes read grad, m, v and write m, v (20), then read m, v, master
        // and write master and the bf16 weight (18); one pass reads grad, m, v, master and writes
        // m, v, master and the bf16 weight (30).
        const double bytes = fused ? 30.0 : 38.0;
        float ms = time_median_ms([&] {
            adamw_update(&opt, d_master + begin, d_params + begin, d_m + begin, d_v + begin, d_grads + begin, 4, 1e-3f,
                         1.0f, hp.beta1, hp.beta2, hp.eps, hp.update_clip, seed, 0, NULL, NULL);
        }, 3, 21, 0);
        float nm = time_median_ms([&] { global_sum_squares(d_norm, d_scratch, d_grads, P, 0); }, 3, 21, 0);
        printf("time P=%zu: AdamW step %s %.3f ms (%.0f bytes a parameter: %.0f GB/s), global norm %.3f ms (median "
               "of 21)\n", P, fused ? "without update clipping" : "with update clipping", ms, bytes,
               n * bytes / (ms * 1e6), nm);
    }
    if (fused) {
        cuda_check(cudaFree(t_master)); cuda_check(cudaFree(t_m)); cuda_check(cudaFree(t_v));
        cuda_check(cudaFree(t_params));
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
    const size_t small_params = gpt2_num_params(&small);
    // A rank's range as ZeRO cuts it (multiples of 4), its ends off the chunks' boundaries (a third
    // and two thirds of the way, give or take a few elements).
    const size_t rank_begin = small_params / 3 / 4 * 4 + 4, rank_end = small_params * 2 / 3 / 4 * 4 - 8;
    for (float update_clip : {0.5f, 0.0f}) {
        run(&small, update_clip, false, 0, small_params);
        run(&small, update_clip, false, rank_begin, rank_end);
    }
    if (small_only) return harness_exit("optimizer");
    gpt2_config_from_string("d12", &d12);
    for (float update_clip : {0.5f, 0.0f}) run(&d12, update_clip, true, 0, gpt2_num_params(&d12));
    return harness_exit("optimizer");
}
