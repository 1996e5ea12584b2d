// Harness of llmc/layernorm.cuh (with the chunks and the final column sums of llmc/colsum.cuh it
// uses): LayerNorm forward, fused with the residual add, and backward, against the CPU loops of
// train_gpt.c on the same bf16 inputs; the backward's dw and db first overwriting (filled with
// NaN), then adding, which must double them bit for bit (the same sums again, and x + x is exact);
// the bits of the unfused forward of the stored residual (what recomputation reruns); timing at
// GPT-2 d12 shapes. The shapes: odd N with C not a multiple of 256; more rows than colsum's 256
// chunks (2 rows a chunk) at d48's C; 9 rows a chunk, so that a warp of the backward takes two.
// The forward writing FP8 codes of its output (q, q^T, amax) byte for byte as the cast of its bf16
// output (check_codes; N not a multiple of 8, and a multiple), and its time beside the two kernels.
// STATUS: ran and passed on an H100 at commit ad0f582 and, with the unfused-forward check and the
// overwrite and doubling checks (2026-11-24), on an H200 at c95ef56 (2026-11-27; dev/gpu_report.md),
// before the backward became one kernel and the case of 9 rows a chunk was added (not run since).
#include <algorithm>

#include "check.h"
#include "../../llmc/layernorm.cuh"

// The forward with FP8 codes (layernorm_forward_codes_kernel, what the trainer runs in an FP8
// training step with delayed scaling), fused with the residual and alone, with and without its bf16
// output, against the plain forward's stored bf16 output (d_res, d_out, d_mean, d_rstd: from
// fused_residual_layernorm_forward of d_a + d_b) cast by quant_transpose_gpu with the same scale:
// q, qt and amax byte for byte, and the outputs it shares with the plain forward. Every output is
// filled with a byte pattern first, so that a skipped element shows.
static void check_codes(int N, int C, const bf16 *d_a, const bf16 *d_b, const bf16 *d_w, const bf16 *d_bias,
                        const bf16 *d_res, const bf16 *d_out, const float *d_mean, const float *d_rstd) {
    const size_t NC = (size_t)N * C;
    uint8_t *d_q = device_alloc<uint8_t>(NC), *d_qt = device_alloc<uint8_t>(NC);
    uint8_t *d_q2 = device_alloc<uint8_t>(NC), *d_qt2 = device_alloc<uint8_t>(NC);
    bf16 *d_res2 = device_alloc<bf16>(NC), *d_out2 = device_alloc<bf16>(NC);
    float *d_mean2 = device_alloc<float>(N), *d_rstd2 = device_alloc<float>(N), *d_amax = device_alloc<float>(2);
    float *d_scale = device_alloc<float>(1);
    to_device(d_scale, std::vector<float>{8.0f});  // E4M3 max 448: |y| up to 56 stays unsaturated
    cuda_check(cudaMemset(d_amax, 0, 2 * sizeof(float)));
    quant_transpose_gpu(d_q, d_qt, d_amax, (float *)nullptr, d_out, N, C, quant_scale_given(d_scale), QUANT_TO_E4M3, 0);
    const std::vector<uint8_t> q = to_host(d_q, NC), qt = to_host(d_qt, NC);
    const float amax = to_host(d_amax, 1)[0];
    // bit 0: fused with the residual; bit 1: bf16 out too; bit 2: no amax (the kernel's barrier before
    // the transposed reads of its codes is then its own, not quant_block_amax's)
    for (int variant = 0; variant < 8; variant++) {
        const bool fused = variant & 1, with_out = variant & 2, with_amax = !(variant & 4);
        cuda_check(cudaMemset(d_q2, 0xA5, NC)), cuda_check(cudaMemset(d_qt2, 0x5A, NC));
        cuda_check(cudaMemset(d_res2, 0xFF, NC * sizeof(bf16))), cuda_check(cudaMemset(d_out2, 0xFF, NC * sizeof(bf16)));
        cuda_check(cudaMemset(d_mean2, 0xFF, N * sizeof(float))), cuda_check(cudaMemset(d_rstd2, 0xFF, N * sizeof(float)));
        cuda_check(cudaMemset(d_amax + 1, 0, sizeof(float)));
        const QuantCodesOut codes{d_q2, d_qt2, d_scale, with_amax ? d_amax + 1 : nullptr, QUANT_TO_E4M3};
        if (fused)
            fused_residual_layernorm_forward(d_res2, with_out ? d_out2 : nullptr, d_mean2, d_rstd2, d_a, d_b, d_w,
                                             d_bias, N, C, 0, codes);
        else
            layernorm_forward(with_out ? d_out2 : nullptr, d_mean2, d_rstd2, d_res, d_w, d_bias, N, C, 0, codes);
        bool same = to_host(d_q2, NC) == q && to_host(d_qt2, NC) == qt &&
                    to_host(d_amax + 1, 1)[0] == (with_amax ? amax : 0.0f) &&
                    !memcmp(to_host(d_mean2, N).data(), to_host(d_mean, N).data(), N * sizeof(float)) &&
                    !memcmp(to_host(d_rstd2, N).data(), to_host(d_rstd, N).data(), N * sizeof(float));
        if (fused) same = same && !memcmp(to_host(d_res2, NC).data(), to_host(d_res, NC).data(), NC * sizeof(bf16));
        if (with_out) same = same && !memcmp(to_host(d_out2, NC).data(), to_host(d_out, NC).data(), NC * sizeof(bf16));
        else {  // not written: still the fill
            const std::vector<bf16> untouched = to_host(d_out2, NC);
            const uint8_t *bytes = reinterpret_cast<const uint8_t *>(untouched.data());
            same = same && std::all_of(bytes, bytes + NC * sizeof(bf16), [](uint8_t b) { return b == 0xFF; });
        }
        char what[160];
        snprintf(what, sizeof(what), "forward with FP8 codes (%s, %s%s): the cast's q, q^T, amax N=%d C=%d",
                 fused ? "residual fused" : "alone", with_out ? "bf16 out too" : "codes only",
                 with_amax ? "" : ", no amax", N, C);
        expect_true(same, what);
    }
    cuda_check(cudaFree(d_q)); cuda_check(cudaFree(d_qt)); cuda_check(cudaFree(d_q2)); cuda_check(cudaFree(d_qt2));
    cuda_check(cudaFree(d_res2)); cuda_check(cudaFree(d_out2)); cuda_check(cudaFree(d_mean2));
    cuda_check(cudaFree(d_rstd2)); cuda_check(cudaFree(d_amax)); cuda_check(cudaFree(d_scale));
}

// scale: a and b are multiplied by it (a power of two: exact in bf16).
static void run(int N, int C, bool timing, float scale = 1.0f) {
    const size_t NC = (size_t)N * C;
    std::vector<float> a = random_bf16_values(NC, 11, -2, 2), b = random_bf16_values(NC, 12, -1, 1);
    for (size_t i = 0; i < NC; i++) a[i] *= scale, b[i] *= scale;
    const std::vector<float> w = random_bf16_values(C, 13, 0.5f, 1.5f), bias = random_bf16_values(C, 14, -0.5f, 0.5f);
    const std::vector<float> dout = random_bf16_values(NC, 15, -1, 1), dinp0 = random_bf16_values(NC, 16, -1, 1);
    bf16 *d_a = device_alloc<bf16>(NC), *d_b = device_alloc<bf16>(NC), *d_res = device_alloc<bf16>(NC);
    bf16 *d_out = device_alloc<bf16>(NC), *d_w = device_alloc<bf16>(C), *d_bias = device_alloc<bf16>(C);
    bf16 *d_dout = device_alloc<bf16>(NC), *d_dinp = device_alloc<bf16>(NC);
    float *d_mean = device_alloc<float>(N), *d_rstd = device_alloc<float>(N);
    float *d_dw = device_alloc<float>(C), *d_db = device_alloc<float>(C);
    float *d_scratch = device_alloc<float>(colsum_scratch_floats(N, C));
    to_device(d_a, floats_to_bf16(a)); to_device(d_b, floats_to_bf16(b));
    to_device(d_w, floats_to_bf16(w)); to_device(d_bias, floats_to_bf16(bias));
    to_device(d_dout, floats_to_bf16(dout)); to_device(d_dinp, floats_to_bf16(dinp0));

    fused_residual_layernorm_forward(d_res, d_out, d_mean, d_rstd, d_a, d_b, d_w, d_bias, N, C, 0);
    // CPU: the residual rounded to bf16 as the kernel stores it, then train_gpt.c's layernorm.
    std::vector<float> x(NC), out(NC), mean(N), rstd(N);
    for (size_t i = 0; i < NC; i++) x[i] = bf16_to_float(bf16_from_float(a[i] + b[i]));
    for (int r = 0; r < N; r++) {
        const float *xr = &x[(size_t)r * C];
        double m = 0, v = 0;
        for (int c = 0; c < C; c++) m += xr[c];
        m /= C;
        for (int c = 0; c < C; c++) v += (xr[c] - m) * (xr[c] - m);
        v /= C;
        const double s = 1.0 / sqrt(v + 1e-5);
        for (int c = 0; c < C; c++) out[(size_t)r * C + c] = (float)((xr[c] - m) * s * w[c] + bias[c]);
        mean[r] = (float)m;
        rstd[r] = (float)s;
    }
    char what[128];
    snprintf(what, sizeof(what), "fused residual N=%d C=%d", N, C);
    expect_close(what, bf16_to_floats(to_host(d_res, NC)).data(), x.data(), NC, 0.0);  // the same rounding
    snprintf(what, sizeof(what), "forward out N=%d C=%d", N, C);
    expect_close(what, bf16_to_floats(to_host(d_out, NC)).data(), out.data(), NC, 8e-3);  // one bf16 rounding
    snprintf(what, sizeof(what), "forward mean, rstd N=%d C=%d", N, C);
    expect_close(what, to_host(d_mean, N).data(), mean.data(), N, 1e-5);  // fp32 vs double sums
    expect_close(what, to_host(d_rstd, N).data(), rstd.data(), N, 1e-4);

    // Recomputation (train_gpt.cu's gpu_block_forward) reruns a LayerNorm that the forward fused
    // with its residual add as layernorm_forward of the stored residual: it must give the same bits.
    bf16 *d_out2 = device_alloc<bf16>(NC);
    float *d_mean2 = device_alloc<float>(N), *d_rstd2 = device_alloc<float>(N);
    layernorm_forward(d_out2, d_mean2, d_rstd2, d_res, d_w, d_bias, N, C, 0);
    const bool same = !memcmp(to_host(d_out2, NC).data(), to_host(d_out, NC).data(), NC * sizeof(bf16)) &&
                      !memcmp(to_host(d_mean2, N).data(), to_host(d_mean, N).data(), N * sizeof(float)) &&
                      !memcmp(to_host(d_rstd2, N).data(), to_host(d_rstd, N).data(), N * sizeof(float));
    snprintf(what, sizeof(what), "unfused forward of the stored residual: the fused bits N=%d C=%d", N, C);
    expect_true(same, what);
    cuda_check(cudaFree(d_out2)); cuda_check(cudaFree(d_mean2)); cuda_check(cudaFree(d_rstd2));
    check_codes(N, C, d_a, d_b, d_w, d_bias, d_res, d_out, d_mean, d_rstd);

    // Backward from the CPU's statistics (identical inputs), onto a non-zero dinp, overwriting dw, db.
    to_device(d_mean, mean);
    to_device(d_rstd, rstd);
    cuda_check(cudaMemset(d_dw, 0xFF, C * sizeof(float)));
    cuda_check(cudaMemset(d_db, 0xFF, C * sizeof(float)));
    layernorm_backward(d_dinp, d_dw, d_db, d_scratch, d_dout, d_res, d_w, d_mean, d_rstd, N, C, false, 0);
    std::vector<float> dinp = dinp0, dw(C, 0.0f), db(C, 0.0f);
    for (int r = 0; r < N; r++) {
        const float *xr = &x[(size_t)r * C], *d = &dout[(size_t)r * C];
        double gm = 0, gnm = 0;
        for (int c = 0; c < C; c++) {
            const double n = (xr[c] - mean[r]) * rstd[r], g = d[c] * w[c];
            gm += g;
            gnm += g * n;
            dw[c] += (float)(d[c] * n);
            db[c] += d[c];
        }
        gm /= C;
        gnm /= C;
        for (int c = 0; c < C; c++) {
            const double n = (xr[c] - mean[r]) * rstd[r], g = d[c] * w[c];
            dinp[(size_t)r * C + c] += (float)(rstd[r] * (g - gm - n * gnm));
        }
    }
    snprintf(what, sizeof(what), "backward dinp N=%d C=%d", N, C);
    // dinp is stored in bf16 after the add: one rounding of values of order 1.
    expect_close(what, bf16_to_floats(to_host(d_dinp, NC)).data(), dinp.data(), NC, 1e-2);
    const std::vector<float> dw1 = to_host(d_dw, C), db1 = to_host(d_db, C);
    snprintf(what, sizeof(what), "backward dw, db N=%d C=%d", N, C);
    expect_close(what, dw1.data(), dw.data(), C, 1e-4);  // fp32 sums of N terms in another order
    expect_close(what, db1.data(), db.data(), C, 1e-4);
    layernorm_backward(d_dinp, d_dw, d_db, d_scratch, d_dout, d_res, d_w, d_mean, d_rstd, N, C, true, 0);
    std::vector<float> dw2 = dw1, db2 = db1;
    for (int c = 0; c < C; c++) dw2[c] += dw2[c], db2[c] += db2[c];
    expect_true(to_host(d_dw, C) == dw2 && to_host(d_db, C) == db2, "backward dw, db: a second run adds the same bits");

    if (timing) {
        float f = time_median_ms([&] { fused_residual_layernorm_forward(d_res, d_out, d_mean, d_rstd, d_a, d_b, d_w, d_bias, N, C, 0); }, 5, 51, 0);
        float bw = time_median_ms([&] { layernorm_backward(d_dinp, d_dw, d_db, d_scratch, d_dout, d_res, d_w, d_mean, d_rstd, N, C, true, 0); }, 5, 51, 0);
        // bytes: forward a, b read, residual, out written; backward dout, x read, dinp read and written
        printf("time N=%d C=%d: fused forward %.3f ms (%.0f GB/s), backward %.3f ms (%.0f GB/s) (median of 51)\n", N,
               C, f, 4.0 * NC * 2 / (f * 1e6), bw, 4.0 * NC * 2 / (bw * 1e6));
        // FP8 (train_gpt.cu, delayed scaling): the forward writing the next linear's codes, against
        // the forward and then the cast that reads its output back (both: q, q^T and the amax).
        uint8_t *d_q = device_alloc<uint8_t>(NC), *d_qt = device_alloc<uint8_t>(NC);
        float *d_sa = device_alloc<float>(2);
        to_device(d_sa, std::vector<float>{8.0f, 0.0f});
        const QuantCodesOut codes{d_q, d_qt, d_sa, d_sa + 1, QUANT_TO_E4M3};
        const float split = time_median_ms([&] {
            fused_residual_layernorm_forward(d_res, d_out, d_mean, d_rstd, d_a, d_b, d_w, d_bias, N, C, 0);
            quant_transpose_gpu(d_q, d_qt, d_sa + 1, (float *)nullptr, d_out, N, C, quant_scale_given(d_sa),
                                QUANT_TO_E4M3, 0); }, 5, 51, 0);
        const float one = time_median_ms([&] {
            fused_residual_layernorm_forward(d_res, nullptr, d_mean, d_rstd, d_a, d_b, d_w, d_bias, N, C, 0, codes); },
            5, 51, 0);
        printf("time N=%d C=%d, FP8 codes of the output (q, q^T, amax): forward + quantize-and-transpose %.3f ms, "
               "forward writing the codes %.3f ms (%.2fx)\n", N, C, split, one, split / one);
        cuda_check(cudaFree(d_q)); cuda_check(cudaFree(d_qt)); cuda_check(cudaFree(d_sa));
    }
    cuda_check(cudaFree(d_a)); cuda_check(cudaFree(d_b)); cuda_check(cudaFree(d_res)); cuda_check(cudaFree(d_out));
    cuda_check(cudaFree(d_w)); cuda_check(cudaFree(d_bias)); cuda_check(cudaFree(d_dout)); cuda_check(cudaFree(d_dinp));
    cuda_check(cudaFree(d_mean)); cuda_check(cudaFree(d_rstd)); cuda_check(cudaFree(d_dw)); cuda_check(cudaFree(d_db));
    cuda_check(cudaFree(d_scratch));
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    const bool small_only = harness_small_only(argc, argv);
    run(111, 192, false);   // odd N, C not a multiple of 256
    run(257, 1600, false);  // more rows than colsum chunks
    run(2100, 320, false);  // 9 rows a chunk: warp 0 of the backward takes rows 0 and 8 of each
    run(136, 384, false);   // N a multiple of 8: the codes' transposed runs as 8-byte stores
    // Rows of variance about 1.6e-6, below LAYERNORM_EPS = 1e-5: an epsilon other than train_gpt.c's
    // 1e-5 moves rstd (2x for 1e-6); at variance ~1 above it moves rstd by ~5e-6, under the 1e-4
    // tolerance, and test_gptcu's tiny model does not see it either.
    run(111, 192, false, 0x1p-10f);
    if (!small_only) run(8 * 1024, 768, true);
    return harness_exit("layernorm");
}
