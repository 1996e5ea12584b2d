// GPU harness for the low-precision matmuls of the trainer, through cuBLASLt on sm_90:
//   1. int8 GEMM (int32 accumulation) equals the CPU integer GEMM exactly, and the whole SwitchBack
//      chain (row-wise activation/gradient scales, tensor-wise weight scale, int8 GEMM, dequantize
//      + bias) equals its CPU replay with llmc/quant.h bit for bit, forward and input gradient;
//   2. FP8 GEMM, E4M3 x E4M3 (forward, bf16 out + bias) and E5M2 x E4M3 (input gradient), matches
//      the fp64 product of the dequantized operands within the bound stated at fp8_tolerance(),
//      with cuBLASLt's promotion of partial sums to fp32 and with fast accumulation (FAST_ACCUM);
//   3. timing of the four block matmuls of d12, d24, d36, d48 (B*T = 8192) in bf16, FP8, FP8 with
//      fast accumulation and int8.
// Exit status 1 if a check fails.
//
// Layouts. Every matrix is row-major: out (M, N) = x (M, K) @ w (N, K)^T, with x the activation (or
// the output gradient) and w the weight (or the transposed weight). cuBLASLt is column-major and its
// FP8 and int8 kernels want the "TN" form D = op(A) op(B) with op(A) = A^T, op(B) = B: take
// A = w (row-major (N, K) is column-major (K, N), lda = K, transposed gives (N, K)), B = x
// (column-major (K, M), ldb = K), D column-major (N, M), ldd = N, which is out row-major (M, N).
// The input gradient dx (M, K) = dout (M, N) @ w (N, K) is the same call with x = dout and w = w^T
// (K, N), the transposed copy that quant_transpose_gpu() writes.
//
// STATUS: ran and passed on an H100 at commit ad0f582 (dev/gpu_report.md), after its FP8 scale pointers
// were given 16-byte alignment, and with the fast-accumulation checks and column (2026-11-25) on an
// H200 at c95ef56 (2026-11-27).
#include <cublasLt.h>
#include <omp.h>

#include "common.h"
#include "../../llmc/matmul_lowp.cuh"  // lowp_accumulation_bound; the casts of llmc/quant.cuh

static int failures = 0;
static cublasLtHandle_t lt;
static void *lt_workspace;
static const size_t lt_workspace_size = 32 << 20;

// ---------------------------------------------------------------------------------------------
// One cuBLASLt matmul out (M, N) = x (M, K) @ w (N, K)^T [+ bias], planned once (descriptors and
// algorithm) so that timing measures only cublasLtMatmul.

struct lt_plan {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
    bool integer;   // int8 in, int32 out: alpha/beta are int32
};

// x_type/w_type: CUDA_R_16BF, CUDA_R_8F_E4M3, CUDA_R_8F_E5M2 or CUDA_R_8I (both int8).
// x_inv_scale/w_inv_scale: device pointers to the dequantization multipliers 1/scale (FP8 only,
// else NULL). bias: bf16 device pointer or NULL. fast_accum: FP8 fast accumulation.
static lt_plan lt_plan_create(int M, int N, int K, cudaDataType_t x_type, cudaDataType_t w_type, cudaDataType_t out_type,
                              const float *x_inv_scale, const float *w_inv_scale, const __nv_bfloat16 *bias,
                              bool fast_accum = false) {
    lt_plan p;
    p.integer = x_type == CUDA_R_8I;
    if (p.integer != (w_type == CUDA_R_8I) || p.integer != (out_type == CUDA_R_32I))
        die("lt_plan_create: int8 operands go with an int32 output, and only with each other");
    cublasCheck(cublasLtMatmulDescCreate(&p.desc, p.integer ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F,
                                          p.integer ? CUDA_R_32I : CUDA_R_32F));
    cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
    cublasCheck(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t));
    cublasCheck(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n));
    if (w_inv_scale)
        cublasCheck(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_inv_scale, sizeof w_inv_scale));
    if (x_inv_scale)
        cublasCheck(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_inv_scale, sizeof x_inv_scale));
    if (fast_accum) {
        const int8_t on = 1;
        cublasCheck(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &on, sizeof on));
    }
    if (bias) {
        cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
        cudaDataType_t bias_type = CUDA_R_16BF;
        cublasCheck(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
        cublasCheck(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
        cublasCheck(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
    }
    cublasCheck(cublasLtMatrixLayoutCreate(&p.a, w_type, K, N, K));
    cublasCheck(cublasLtMatrixLayoutCreate(&p.b, x_type, K, M, K));
    cublasCheck(cublasLtMatrixLayoutCreate(&p.d, out_type, N, M, N));   // also the layout of C (beta = 0)
    cublasLtMatmulPreference_t pref;
    cublasCheck(cublasLtMatmulPreferenceCreate(&pref));
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &lt_workspace_size,
                                                      sizeof lt_workspace_size));
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    cublasCheck(cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.a, p.b, p.d, p.d, pref, 1, &result, &found));
    if (found == 0) die("cuBLASLt has no algorithm for M=%d N=%d K=%d with types x %d, w %d, out %d", M, N, K, x_type, w_type, out_type);
    p.algo = result.algo;
    cublasCheck(cublasLtMatmulPreferenceDestroy(pref));
    return p;
}

static void lt_plan_run(const lt_plan &p, void *out, const void *x, const void *w, cudaStream_t stream) {
    const float alpha_f = 1.0f, beta_f = 0.0f;
    const int32_t alpha_i = 1, beta_i = 0;
    const void *alpha = p.integer ? (const void *)&alpha_i : (const void *)&alpha_f;
    const void *beta = p.integer ? (const void *)&beta_i : (const void *)&beta_f;
    cublasCheck(cublasLtMatmul(lt, p.desc, alpha, w, p.a, x, p.b, beta, out, p.d, out, p.d, &p.algo, lt_workspace,
                                lt_workspace_size, stream));
}

static void lt_plan_destroy(lt_plan &p) {
    cublasCheck(cublasLtMatrixLayoutDestroy(p.a));
    cublasCheck(cublasLtMatrixLayoutDestroy(p.b));
    cublasCheck(cublasLtMatrixLayoutDestroy(p.d));
    cublasCheck(cublasLtMatmulDescDestroy(p.desc));
}

// ---------------------------------------------------------------------------------------------
// Host helpers

static void report(const char *what, bool ok, const char *detail) {
    printf("%-62s %s  %s\n", what, ok ? "ok" : "FAIL", detail);
    failures += !ok;
}

// Random bf16 bit patterns ~ N(0, stddev^2).
static std::vector<uint16_t> random_bf16(size_t n, uint64_t seed, float stddev) {
    std::vector<uint16_t> v(n);
    for (size_t i = 0; i < n; i++) v[i] = bf16_from_float((float)normal01(seed, i) * stddev);
    return v;
}

static std::vector<float> bf16_values(const std::vector<uint16_t> &bits) {
    std::vector<float> v(bits.size());
    for (size_t i = 0; i < bits.size(); i++) v[i] = bf16_to_float(bits[i]);
    return v;
}

template <typename T> static T *upload(const std::vector<T> &v) {
    T *d = device_alloc<T>(v.size());
    to_device(d, v);
    return d;
}

static __nv_bfloat16 *upload_bf16(const std::vector<uint16_t> &bits) {
    return reinterpret_cast<__nv_bfloat16 *>(upload(bits));   // same 2-byte representation
}

// acc (M, N) = qx (M, K) @ qw (N, K)^T in exact integer arithmetic (|acc| <= K * 127^2 < 2^31).
static std::vector<int32_t> cpu_int8_gemm(const int8_t *qx, const int8_t *qw, int M, int N, int K) {
    std::vector<int32_t> acc((size_t)M * N);
#pragma omp parallel for collapse(2)
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int32_t s = 0;
            for (int k = 0; k < K; k++) s += (int32_t)qx[(size_t)m * K + k] * qw[(size_t)n * K + k];
            acc[(size_t)m * N + n] = s;
        }
    return acc;
}

// ---------------------------------------------------------------------------------------------
// 1. int8

static void check_int8_gemm_exact(int M, int N, int K, uint64_t seed) {
    std::vector<int8_t> qx((size_t)M * K), qw((size_t)N * K);
    for (size_t i = 0; i < qx.size(); i++) qx[i] = (int8_t)((int)(splitmix64(seed * 0x100000000ull + i) % 255) - 127);
    for (size_t i = 0; i < qw.size(); i++) qw[i] = (int8_t)((int)(splitmix64((seed + 1) * 0x100000000ull + i) % 255) - 127);
    int8_t *d_x = upload(qx), *d_w = upload(qw);
    int32_t *d_acc = device_alloc<int32_t>((size_t)M * N);
    lt_plan p = lt_plan_create(M, N, K, CUDA_R_8I, CUDA_R_8I, CUDA_R_32I, nullptr, nullptr, nullptr);
    lt_plan_run(p, d_acc, d_x, d_w, 0);
    std::vector<int32_t> got = to_host(d_acc, (size_t)M * N), want = cpu_int8_gemm(qx.data(), qw.data(), M, N, K);
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); i++) bad += got[i] != want[i];
    char what[96], detail[64];
    snprintf(what, sizeof what, "int8 GEMM == CPU integer GEMM, M=%d N=%d K=%d", M, N, K);
    snprintf(detail, sizeof detail, "%zu of %zu differ", bad, got.size());
    report(what, bad == 0, detail);
    lt_plan_destroy(p);
    cuda_check(cudaFree(d_x)), cuda_check(cudaFree(d_w)), cuda_check(cudaFree(d_acc));
}

// SwitchBack, forward (transpose_w = false: out (M, N) = x (M, K) @ w (N, K)^T + bias) or input
// gradient (transpose_w = true: dx (M, N) = dout (M, K) @ w (K, N), no bias), GPU chain vs CPU replay.
static void check_switchback(int M, int N, int K, bool transpose_w, uint64_t seed) {
    // w is stored as the trainer stores it: (N, K) for the forward, (K, N) for the input gradient.
    int w_rows = transpose_w ? K : N, w_cols = transpose_w ? N : K;
    std::vector<uint16_t> x_bits = random_bf16((size_t)M * K, seed, 1.0f);
    std::vector<uint16_t> w_bits = random_bf16((size_t)N * K, seed + 1, 0.02f);
    std::vector<uint16_t> bias_bits = random_bf16(N, seed + 2, 0.1f);
    std::vector<float> x = bf16_values(x_bits), w = bf16_values(w_bits);
    // CPU: row-wise x, tensor-wise w, integer GEMM, then the epilogue in the kernel's fp32 order.
    std::vector<int8_t> qx((size_t)M * K), qw((size_t)N * K), qw_nk((size_t)N * K);
    std::vector<float> sx(M);
    int8_quantize_rows(qx.data(), sx.data(), x.data(), M, K, QUANT_SCALE_POW2);
    float sw = int8_quantize_tensor(qw.data(), w.data(), (size_t)N * K, QUANT_SCALE_POW2);
    for (int r = 0; r < w_rows; r++)   // the (N, K) operand the GEMM reads
        for (int c = 0; c < w_cols; c++)
            qw_nk[transpose_w ? (size_t)c * K + r : (size_t)r * K + c] = qw[(size_t)r * w_cols + c];
    std::vector<int32_t> acc = cpu_int8_gemm(qx.data(), qw_nk.data(), M, N, K);
    std::vector<uint16_t> want((size_t)M * N);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            volatile float v = (float)acc[(size_t)m * N + n] * (1.0f / sx[m]);   // volatile: one rounding per step
            v = v * (1.0f / sw);
            if (!transpose_w) v = v + bf16_to_float(bias_bits[n]);
            want[(size_t)m * N + n] = bf16_from_float(v);
        }
    // GPU
    __nv_bfloat16 *d_x = upload_bf16(x_bits), *d_w = upload_bf16(w_bits), *d_bias = upload_bf16(bias_bits);
    __nv_bfloat16 *d_out = device_alloc<__nv_bfloat16>((size_t)M * N);
    int8_t *d_qx = device_alloc<int8_t>((size_t)M * K), *d_qw = device_alloc<int8_t>((size_t)N * K);
    float *d_sx = device_alloc<float>(M), *d_amax = device_alloc<float>(1), *d_sw = device_alloc<float>(2);
    int32_t *d_acc = device_alloc<int32_t>((size_t)M * N);
    int8_quantize_rows_gpu(d_qx, d_sx, d_x, M, K, QUANT_SCALE_POW2, 0);
    cuda_check(cudaMemset(d_amax, 0, sizeof(float)));
    quant_amax_gpu(d_amax, d_w, (size_t)N * K, 0);
    const QuantScale sw_of_amax = quant_scale_of_amax(d_sw, d_sw + 1, d_amax, QUANT_SCALE_POW2);
    uint8_t *q_nk = reinterpret_cast<uint8_t *>(d_qw);
    if (transpose_w)
        quant_transpose_gpu((uint8_t *)nullptr, q_nk, (float *)nullptr, (float *)nullptr, d_w, w_rows, w_cols,
                            sw_of_amax, QUANT_TO_INT8, 0);
    else
        quant_transpose_gpu(q_nk, (uint8_t *)nullptr, (float *)nullptr, (float *)nullptr, d_w, w_rows, w_cols,
                            sw_of_amax, QUANT_TO_INT8, 0);
    lt_plan p = lt_plan_create(M, N, K, CUDA_R_8I, CUDA_R_8I, CUDA_R_32I, nullptr, nullptr, nullptr);
    lt_plan_run(p, d_acc, d_qx, d_qw, 0);
    int8_dequantize_bias_gpu(d_out, d_acc, d_sx, d_sw, transpose_w ? nullptr : d_bias, M, N, 0);
    std::vector<uint16_t> got_bits = to_host(reinterpret_cast<uint16_t *>(d_out), (size_t)M * N);
    std::vector<int8_t> got_qx = to_host(d_qx, (size_t)M * K), got_qw = to_host(d_qw, (size_t)N * K);
    size_t bad_q = 0, bad_out = 0;
    for (size_t i = 0; i < got_qx.size(); i++) bad_q += got_qx[i] != qx[i];
    for (size_t i = 0; i < got_qw.size(); i++) bad_q += got_qw[i] != qw_nk[i];
    for (size_t i = 0; i < got_bits.size(); i++) bad_out += got_bits[i] != want[i];
    char what[96], detail[96];
    snprintf(what, sizeof what, "SwitchBack int8 %s, M=%d N=%d K=%d", transpose_w ? "input gradient" : "forward", M, N, K);
    snprintf(detail, sizeof detail, "codes: %zu differ; bf16 outputs: %zu of %zu differ", bad_q, bad_out, got_bits.size());
    report(what, bad_q == 0 && bad_out == 0, detail);
    lt_plan_destroy(p);
    cuda_check(cudaFree(d_x)), cuda_check(cudaFree(d_w)), cuda_check(cudaFree(d_bias)), cuda_check(cudaFree(d_out));
    cuda_check(cudaFree(d_qx)), cuda_check(cudaFree(d_qw)), cuda_check(cudaFree(d_sx)), cuda_check(cudaFree(d_amax));
    cuda_check(cudaFree(d_sw)), cuda_check(cudaFree(d_acc));
}

// ---------------------------------------------------------------------------------------------
// 2. FP8

// Bound on |gpu - ref| for one output, where ref = sum_k a_k b_k + bias in fp64 over the dequantized
// operands (the products a_k b_k of two FP8 values times power-of-two scales are exact in fp32):
//   2^-8 |ref|         the bf16 output: 8 significant bits, round to nearest is within half an ulp;
//   lowp_accumulation_bound(K, fast_accum) sum|a_k b_k|, the accumulation (llmc/matmul_lowp.cuh).
// The harness prints the largest error / bound so the bound can be tightened from measurement.
static double fp8_tolerance(double ref, double abs_sum, int K, bool fast_accum) {
    return ldexp(fabs(ref), -8) + lowp_accumulation_bound(K, fast_accum) * abs_sum;
}

// out (M, N) = x (M, K) @ w (N, K)^T [+ bias]: x in x_format, w in E4M3, current scaling.
// forward: x E4M3 with bias; input gradient: x = dout in E5M2 and w = the transposed weight, no bias.
static void check_fp8_gemm(int M, int N, int K, quant_target x_target, bool with_bias, bool fast_accum, uint64_t seed) {
    std::vector<uint16_t> x_bits = random_bf16((size_t)M * K, seed, x_target == QUANT_TO_E5M2 ? 1e-3f : 1.0f);
    std::vector<uint16_t> w_bits = random_bf16((size_t)N * K, seed + 1, 0.02f);
    std::vector<uint16_t> bias_bits = random_bf16(N, seed + 2, 0.1f);
    std::vector<float> x = bf16_values(x_bits), w = bf16_values(w_bits);
    // CPU quantization with llmc/quant.h
    fp8_format x_format = (fp8_format)x_target;
    float sx = quant_scale(quant_amax(x.data(), x.size()), quant_target_max(x_target), QUANT_SCALE_POW2);
    float sw = quant_scale(quant_amax(w.data(), w.size()), FP8_E4M3_MAX, QUANT_SCALE_POW2);
    std::vector<uint8_t> qx(x.size()), qw(w.size());
    fp8_quantize(qx.data(), x.data(), x.size(), sx, x_format);
    fp8_quantize(qw.data(), w.data(), w.size(), sw, FP8_E4M3);
    // GPU: amax, scales, quantize, GEMM with the inverse scales
    __nv_bfloat16 *d_x = upload_bf16(x_bits), *d_w = upload_bf16(w_bits), *d_bias = upload_bf16(bias_bits);
    __nv_bfloat16 *d_out = device_alloc<__nv_bfloat16>((size_t)M * N);
    uint8_t *d_qx = device_alloc<uint8_t>(x.size()), *d_qw = device_alloc<uint8_t>(w.size());
    // Scale at [0], inverse scale at [4]: cuBLASLt 13 refuses (NOT_SUPPORTED) FP8 scale pointers
    // that are not 16-byte aligned (found on an H100).
    float *d_amax = device_alloc<float>(2), *d_sx = device_alloc<float>(8), *d_sw = device_alloc<float>(8);
    cuda_check(cudaMemset(d_amax, 0, 2 * sizeof(float)));
    quant_amax_gpu(d_amax, d_x, x.size(), 0);
    quant_amax_gpu(d_amax + 1, d_w, w.size(), 0);
    quant_cast_gpu(d_qx, (float *)nullptr, d_x, x.size(), quant_scale_of_amax(d_sx, d_sx + 4, d_amax, QUANT_SCALE_POW2),
                   x_target, 0);
    quant_cast_gpu(d_qw, (float *)nullptr, d_w, w.size(), quant_scale_of_amax(d_sw, d_sw + 4, d_amax + 1, QUANT_SCALE_POW2),
                   QUANT_TO_E4M3, 0);
    cudaDataType_t x_type = x_target == QUANT_TO_E5M2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
    lt_plan p = lt_plan_create(M, N, K, x_type, CUDA_R_8F_E4M3, CUDA_R_16BF, d_sx + 4, d_sw + 4, with_bias ? d_bias : nullptr,
                               fast_accum);
    lt_plan_run(p, d_out, d_qx, d_qw, 0);
    std::vector<uint8_t> got_qx = to_host(d_qx, qx.size()), got_qw = to_host(d_qw, qw.size());
    std::vector<uint16_t> got = to_host(reinterpret_cast<uint16_t *>(d_out), (size_t)M * N);
    size_t bad_q = 0;
    for (size_t i = 0; i < qx.size(); i++) bad_q += got_qx[i] != qx[i];
    for (size_t i = 0; i < qw.size(); i++) bad_q += got_qw[i] != qw[i];
    // fp64 reference over the dequantized operands
    std::vector<double> dx(x.size()), dw(w.size());
    for (size_t i = 0; i < x.size(); i++) dx[i] = (double)fp8_to_float(qx[i], x_format) / sx;
    for (size_t i = 0; i < w.size(); i++) dw[i] = (double)fp8_to_float(qw[i], FP8_E4M3) / sw;
    size_t bad = 0;
    double worst = 0.0;
#pragma omp parallel for collapse(2) reduction(+ : bad) reduction(max : worst)
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double ref = with_bias ? (double)bf16_to_float(bias_bits[n]) : 0.0, abs_sum = 0.0;
            for (int k = 0; k < K; k++) {
                double prod = dx[(size_t)m * K + k] * dw[(size_t)n * K + k];
                ref += prod;
                abs_sum += fabs(prod);
            }
            double err = fabs((double)bf16_to_float(got[(size_t)m * N + n]) - ref), tol = fp8_tolerance(ref, abs_sum, K, fast_accum);
            bad += !(err <= tol);
            worst = fmax(worst, err / tol);
        }
    char what[96], detail[128];
    snprintf(what, sizeof what, "FP8 %s x E4M3 -> bf16%s%s, M=%d N=%d K=%d", x_target == QUANT_TO_E5M2 ? "E5M2" : "E4M3",
             with_bias ? " + bias" : "", fast_accum ? ", fast acc" : "", M, N, K);
    snprintf(detail, sizeof detail, "codes: %zu differ; %zu outside the bound; max error/bound %.3f", bad_q, bad, worst);
    report(what, bad_q == 0 && bad == 0, detail);
    lt_plan_destroy(p);
    cuda_check(cudaFree(d_x)), cuda_check(cudaFree(d_w)), cuda_check(cudaFree(d_bias)), cuda_check(cudaFree(d_out));
    cuda_check(cudaFree(d_qx)), cuda_check(cudaFree(d_qw)), cuda_check(cudaFree(d_amax)), cuda_check(cudaFree(d_sx));
    cuda_check(cudaFree(d_sw));
}

// ---------------------------------------------------------------------------------------------
// 3. Timing: the four matmuls of a block's forward at B*T = 8192 rows, bf16 vs FP8 (promoted and
// fast accumulation, --fp8-fast-accum) vs int8. FP8 and bf16 include the bf16 output and the bias
// epilogue; int8 is the GEMM to int32 alone (its dequantize + bias kernel is timed in
// dev/cuda/quant.cu). Quantization costs are not included.

static void time_shapes(void) {
    const int M = 8192, depths[4] = {12, 24, 36, 48}, widths[4] = {768, 1024, 1280, 1600};
    const char *names[4] = {"qkv", "attn proj", "fc", "fc proj"};
    printf("\nforward matmuls, M = B*T = %d, median of 20 runs (TFLOP/s; speedup vs bf16)\n", M);
    printf("%-4s %-9s %5s %5s   %9s   %9s %6s   %9s %6s   %9s %6s\n", "d", "matmul", "N", "K", "bf16", "fp8", "x",
           "fp8 fast", "x", "int8", "x");
    for (int di = 0; di < 4; di++) {
        int C = widths[di];
        int shapes[4][2] = {{3 * C, C}, {C, C}, {4 * C, C}, {C, 4 * C}};
        double total[4] = {0, 0, 0, 0};
        for (int s = 0; s < 4; s++) {
            int N = shapes[s][0], K = shapes[s][1];
            size_t nx = (size_t)M * K, nw = (size_t)N * K;
            __nv_bfloat16 *x = device_alloc<__nv_bfloat16>(nx), *w = device_alloc<__nv_bfloat16>(nw);
            __nv_bfloat16 *bias = device_alloc<__nv_bfloat16>(N), *out = device_alloc<__nv_bfloat16>((size_t)M * N);
            uint8_t *qx = device_alloc<uint8_t>(nx), *qw = device_alloc<uint8_t>(nw);
            int32_t *acc = device_alloc<int32_t>((size_t)M * N);
            float *one = device_alloc<float>(1), *int8_scale = device_alloc<float>(1);
            to_device(one, std::vector<float>(1, 1.0f));
            to_device(int8_scale, std::vector<float>(1, 100.0f));
            fill_uniform_bf16(x, nx, 1000 + s, -1.0f, 1.0f);
            fill_uniform_bf16(w, nw, 2000 + s, -1.0f, 1.0f);
            fill_uniform_bf16(bias, N, 3000 + s, -0.1f, 0.1f);
            double flops = 2.0 * M * N * K, ms[4];
            lt_plan p_bf16 = lt_plan_create(M, N, K, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, nullptr, nullptr, bias);
            ms[0] = time_median_ms([&] { lt_plan_run(p_bf16, out, x, w, 0); }, 3, 20, 0);
            quant_cast_gpu(qx, (float *)nullptr, x, nx, quant_scale_given(one), QUANT_TO_E4M3, 0);
            quant_cast_gpu(qw, (float *)nullptr, w, nw, quant_scale_given(one), QUANT_TO_E4M3, 0);
            lt_plan p_fp8 = lt_plan_create(M, N, K, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF, one, one, bias);
            ms[1] = time_median_ms([&] { lt_plan_run(p_fp8, out, qx, qw, 0); }, 3, 20, 0);
            lt_plan p_fast = lt_plan_create(M, N, K, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF, one, one, bias, true);
            ms[2] = time_median_ms([&] { lt_plan_run(p_fast, out, qx, qw, 0); }, 3, 20, 0);
            quant_cast_gpu(qx, (float *)nullptr, x, nx, quant_scale_given(int8_scale), QUANT_TO_INT8, 0);
            quant_cast_gpu(qw, (float *)nullptr, w, nw, quant_scale_given(int8_scale), QUANT_TO_INT8, 0);
            lt_plan p_int8 = lt_plan_create(M, N, K, CUDA_R_8I, CUDA_R_8I, CUDA_R_32I, nullptr, nullptr, nullptr);
            ms[3] = time_median_ms([&] { lt_plan_run(p_int8, acc, qx, qw, 0); }, 3, 20, 0);
            printf("d%-3d %-9s %5d %5d   %9.1f   %9.1f %5.2fx   %9.1f %5.2fx   %9.1f %5.2fx\n", depths[di], names[s], N,
                   K, flops / (ms[0] * 1e9), flops / (ms[1] * 1e9), ms[0] / ms[1], flops / (ms[2] * 1e9), ms[0] / ms[2],
                   flops / (ms[3] * 1e9), ms[0] / ms[3]);
            for (int i = 0; i < 4; i++) total[i] += ms[i];
            lt_plan_destroy(p_bf16), lt_plan_destroy(p_fp8), lt_plan_destroy(p_fast), lt_plan_destroy(p_int8);
            cuda_check(cudaFree(x)), cuda_check(cudaFree(w)), cuda_check(cudaFree(bias)), cuda_check(cudaFree(out));
            cuda_check(cudaFree(qx)), cuda_check(cudaFree(qw)), cuda_check(cudaFree(acc));
            cuda_check(cudaFree(one)), cuda_check(cudaFree(int8_scale));
        }
        printf("d%-3d all four: bf16 %.3f ms, fp8 %.3f ms (%.2fx), fp8 fast %.3f ms (%.2fx), int8 %.3f ms (%.2fx)\n",
               depths[di], total[0], total[1], total[0] / total[1], total[2], total[0] / total[2], total[3],
               total[0] / total[3]);
    }
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    const bool small_only = harness_small_only(argc, argv);
    cudaDeviceProp prop;
    cuda_check(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
    if (prop.major != 9) die("the FP8 cuBLASLt path here is written for sm_90 (TN only); this device is sm_%d%d", prop.major, prop.minor);
    cublasCheck(cublasLtCreate(&lt));
    cuda_check(cudaMalloc(&lt_workspace, lt_workspace_size));

    check_int8_gemm_exact(256, 384, 768, 1);
    check_int8_gemm_exact(128, 768, 3072, 3);
    check_switchback(256, 768, 512, false, 10);
    check_switchback(256, 512, 768, true, 20);
    check_fp8_gemm(256, 384, 768, QUANT_TO_E4M3, true, false, 30);
    check_fp8_gemm(128, 768, 3072, QUANT_TO_E4M3, true, false, 40);
    check_fp8_gemm(256, 768, 1024, QUANT_TO_E5M2, false, false, 50);
    check_fp8_gemm(128, 768, 3072, QUANT_TO_E4M3, true, true, 60);
    check_fp8_gemm(256, 768, 1024, QUANT_TO_E5M2, false, true, 70);
    cuda_check(cudaDeviceSynchronize());
    if (failures) {
        printf("matmul_lowp: %d checks FAILED\n", failures);
        return 1;
    }
    printf("matmul_lowp: all checks passed\n");
    if (!small_only) time_shapes();
    cuda_check(cudaFree(lt_workspace));
    cublasCheck(cublasLtDestroy(lt));
    return 0;
}
