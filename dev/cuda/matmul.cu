// Harness of llmc/matmul.cuh (cuBLASLt, bf16 in, fp32 accumulation): the forward with the bias
// epilogue, the input gradient, the fp32 weight gradient accumulated onto existing values and
// the bias gradient (colsum.cuh), against double-precision CPU loops on the same bf16 inputs;
// identical bits on a rerun, and the overwriting first write of a step (beta = 0 onto NaN) giving
// the bits of adding to zeros (small shapes); then TFLOPS at the shapes of GPT-2 d12 (N = 8 * 1024),
// the backward both adding and overwriting (what beta = 0 saves).
// STATUS: ran and passed on an H100 at commit ad0f582 and, with the overwrite check and its timing
// (2026-11-24), on an H200 at c95ef56 (2026-11-27; dev/gpu_report.md).
#include "check.h"
#include "../../llmc/matmul.cuh"

static void run(Matmul *mm, int N, int IC, int OC, bool timing) {
    const std::vector<float> x = random_bf16_values((size_t)N * IC, 51, -1, 1), w = random_bf16_values((size_t)OC * IC, 52, -0.1f, 0.1f);
    const std::vector<float> bias = random_bf16_values(OC, 53, -1, 1), dy = random_bf16_values((size_t)N * OC, 54, -1, 1);
    const std::vector<float> dw0 = random_bf16_values((size_t)OC * IC, 55, -1, 1), db0 = random_bf16_values(OC, 56, -1, 1);
    bf16 *d_x = device_alloc<bf16>((size_t)N * IC), *d_w = device_alloc<bf16>((size_t)OC * IC), *d_b = device_alloc<bf16>(OC);
    bf16 *d_y = device_alloc<bf16>((size_t)N * OC), *d_dy = device_alloc<bf16>((size_t)N * OC), *d_dx = device_alloc<bf16>((size_t)N * IC);
    float *d_dw = device_alloc<float>((size_t)OC * IC), *d_db = device_alloc<float>(OC);
    float *d_scratch = device_alloc<float>(colsum_scratch_floats(N, OC));
    to_device(d_x, floats_to_bf16(x)); to_device(d_w, floats_to_bf16(w)); to_device(d_b, floats_to_bf16(bias));
    to_device(d_dy, floats_to_bf16(dy)); to_device(d_dw, dw0); to_device(d_db, db0);

    if (!timing) {  // the CPU reference at the timing shapes would take minutes
        matmul_forward(mm, d_y, d_x, d_w, d_b, N, IC, OC, 0);
        matmul_backward(mm, d_dx, d_dw, d_db, d_scratch, d_dy, d_x, d_w, N, IC, OC, true, 0);
        std::vector<float> y((size_t)N * OC), dx((size_t)N * IC), dw = dw0, db = db0;
        #pragma omp parallel for
        for (int i = 0; i < N; i++) {
            for (int o = 0; o < OC; o++) {
                double s = bias[o];
                for (int k = 0; k < IC; k++) s += (double)x[(size_t)i * IC + k] * w[(size_t)o * IC + k];
                y[(size_t)i * OC + o] = (float)s;
            }
            for (int k = 0; k < IC; k++) {
                double s = 0;
                for (int o = 0; o < OC; o++) s += (double)dy[(size_t)i * OC + o] * w[(size_t)o * IC + k];
                dx[(size_t)i * IC + k] = (float)s;
            }
        }
        #pragma omp parallel for
        for (int o = 0; o < OC; o++) {
            double sb = 0;
            for (int i = 0; i < N; i++) sb += dy[(size_t)i * OC + o];
            db[o] += (float)sb;
            for (int k = 0; k < IC; k++) {
                double s = 0;
                for (int i = 0; i < N; i++) s += (double)dy[(size_t)i * OC + o] * x[(size_t)i * IC + k];
                dw[(size_t)o * IC + k] += (float)s;
            }
        }
        char what[128];
        // bf16 outputs: one rounding (2^-9) of fp32 sums; fp32 outputs: accumulation order only.
        snprintf(what, sizeof(what), "forward+bias N=%d IC=%d OC=%d", N, IC, OC);
        expect_close(what, bf16_to_floats(to_host(d_y, (size_t)N * OC)).data(), y.data(), y.size(), 8e-3);
        snprintf(what, sizeof(what), "dinp N=%d IC=%d OC=%d", N, IC, OC);
        expect_close(what, bf16_to_floats(to_host(d_dx, (size_t)N * IC)).data(), dx.data(), dx.size(), 8e-3);
        const std::vector<float> dw1 = to_host(d_dw, (size_t)OC * IC), db1 = to_host(d_db, OC);
        snprintf(what, sizeof(what), "dweight += N=%d IC=%d OC=%d", N, IC, OC);
        expect_close(what, dw1.data(), dw.data(), dw.size(), 1e-5);
        snprintf(what, sizeof(what), "dbias += N=%d OC=%d", N, OC);
        expect_close(what, db1.data(), db.data(), db.size(), 1e-5);
        to_device(d_dw, dw0); to_device(d_db, db0);
        matmul_backward(mm, d_dx, d_dw, d_db, d_scratch, d_dy, d_x, d_w, N, IC, OC, true, 0);
        expect_true(to_host(d_dw, (size_t)OC * IC) == dw1 && to_host(d_db, OC) == db1, "dweight, dbias: identical bits on a rerun");
        // A step's first write overwrites (beta = 0: C is not read, so NaN there must not matter) and
        // must give the bits of adding to zeros (acc + 0 = acc): the trainer's gradients are then
        // the bits it had when it zeroed them before the first micro-step.
        cuda_check(cudaMemset(d_dw, 0, (size_t)OC * IC * sizeof(float)));
        cuda_check(cudaMemset(d_db, 0, OC * sizeof(float)));
        matmul_backward(mm, d_dx, d_dw, d_db, d_scratch, d_dy, d_x, d_w, N, IC, OC, true, 0);
        const std::vector<float> dw_zeros = to_host(d_dw, (size_t)OC * IC), db_zeros = to_host(d_db, OC);
        cuda_check(cudaMemset(d_dw, 0xFF, (size_t)OC * IC * sizeof(float)));
        cuda_check(cudaMemset(d_db, 0xFF, OC * sizeof(float)));
        matmul_backward(mm, d_dx, d_dw, d_db, d_scratch, d_dy, d_x, d_w, N, IC, OC, false, 0);
        snprintf(what, sizeof(what), "dweight, dbias overwritten (beta = 0, NaN before): the bits of += onto zeros N=%d", N);
        expect_true(to_host(d_dw, (size_t)OC * IC) == dw_zeros && to_host(d_db, OC) == db_zeros, what);
    }
    if (timing) {
        const double flops = 2.0 * N * IC * OC;
        float f = time_median_ms([&] { matmul_forward(mm, d_y, d_x, d_w, d_b, N, IC, OC, 0); }, 5, 51, 0);
        float b = time_median_ms([&] { matmul_backward(mm, d_dx, d_dw, d_db, d_scratch, d_dy, d_x, d_w, N, IC, OC, true, 0); }, 5, 51, 0);
        float b0 = time_median_ms([&] { matmul_backward(mm, d_dx, d_dw, d_db, d_scratch, d_dy, d_x, d_w, N, IC, OC, false, 0); }, 5, 51, 0);
        printf("time N=%d IC=%d OC=%d: forward %.3f ms (%.0f TFLOPS), backward %.3f ms (%.0f TFLOPS), "
               "backward overwriting dW %.3f ms (median of 51)\n",
               N, IC, OC, f, flops / (f * 1e9), b, 2 * flops / (b * 1e9), b0);
    }
    cuda_check(cudaFree(d_x)); cuda_check(cudaFree(d_w)); cuda_check(cudaFree(d_b)); cuda_check(cudaFree(d_y));
    cuda_check(cudaFree(d_dy)); cuda_check(cudaFree(d_dx)); cuda_check(cudaFree(d_dw)); cuda_check(cudaFree(d_db));
    cuda_check(cudaFree(d_scratch));
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    const bool small_only = harness_small_only(argc, argv);
    Matmul mm;
    matmul_init(&mm);
    run(&mm, 111, 192, 576, false);      // odd N; the qkv shape of a C = 192 model
    run(&mm, 256, 768, 3072, false);     // the d12 fc shape (fewer rows)
    if (!small_only) {
        run(&mm, 8 * 1024, 768, 2304, true); // d12 qkv
        run(&mm, 8 * 1024, 768, 3072, true); // d12 fc
        run(&mm, 8 * 1024, 3072, 768, true); // d12 fcproj
    }
    matmul_free(&mm);
    return harness_exit("matmul");
}
