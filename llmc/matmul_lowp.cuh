// The four linear layers of every block (qkv, attention output, fc, fc projection) in FP8 or int8
// (--matmul fp8|int8); bf16 passes straight through to matmul.cuh. The output head, attention,
// LayerNorm and the optimizer never come here.
//
// STATUS: verified on an H100 (cuBLASLt 13) at commit 7c74e66 (2026-11-23) and on an H200 at
// c95ef56 (2026-11-27; dev/gpu_report.md): test_gptcu's one-layer checks against llmc/quant.h's
// emulation and its whole-model checks against the CPU twin pass in every mode (tiny, small, d12),
// and the runs are deterministic. On the H200 also the weight gradients' overwrite mode, the
// scales set without one-thread kernels (lowp_begin_forward, the casts computing current scales)
// and --fp8-fast-accum: within lowp_accumulation_bound (worst error/bound 0.50), d48's four block
// GEMMs 1.12x faster than promoted FP8 (dev/cuda/matmul_lowp), a d48 step 1.02x.
//
// What each mode computes, the exact twin of quant_emulate_operand() (llmc/quant.h) in train_gpt.c
// (the operands' codes; with --gelu-fusion the GPU applies the GELU before its one rounding where
// the twin rounds twice, which the tolerances cover, not the bits):
//              forward out = inp @ W^T + b          input gradient dinp = dout @ W     weight gradient
//   fp8        E4M3(inp) x E4M3(W), bf16 out + bias  E5M2(dout) x E4M3(W), bf16 out     bf16 (--fp8-wgrad 1:
//              (per-tensor scales)                   (per-tensor scales)                E5M2(dout)^T x E4M3(inp))
//   int8       int8(inp, a scale per row) x          int8(dout, a scale per row) x      bf16
//              int8(W, one scale), int32 accumulate  int8(W, one scale), int32
// Scales are powers of two (QUANT_SCALE_POW2), so dequantization is exact: an FP8 GEMM dequantizes
// through cuBLASLt's A/B scale pointers (1/scale), an int8 GEMM in int8_dequantize_bias_kernel.
// FP8 scales come from the tensor's current amax, or with --amax-history H > 0 (delayed scaling)
// from the max amax of the same tensor over the previous H training micro-steps.
//
// Layouts. Row-major everywhere: inp (N, IC), W (OC, IC), out (N, OC). cuBLASLt's FP8 and int8
// kernels take only the "TN" form, which for row-major operands reads out (M, Nc) = x (M, K) @
// w (Nc, K)^T (see matmul_lt_tn). Forward: x = inp, w = W, no copy. Input gradient: x = dout (N, OC),
// w = W^T (IC, OC), the transposed copy that the forward's cast of W writes in the same pass
// (quant_transpose_gpu) and keeps until the backward (lowp_weight_t: 12 C^2 bytes a layer, 1.5 GB
// at d48, instead of a second pass over the bf16 W in the backward; NOT RUN on a GPU). FP8 weight
// gradient: dW (OC, IC) = x (OC, N) @ w (IC, N)^T with x = dout^T and w = inp^T, both transposed
// copies (dout's comes out of the same fused pass as its row-major copy; inp's out of the forward's
// cast, when the trainer keeps them (inp_t: train_gpt.cu keeps a layer's linear inputs as these
// codes instead of bf16 where its recompute policy keeps them), else from a second cast in the
// backward; NOT RUN on a GPU, 2026-11-27).
//
// Scales and histories live on the device, indexed by operand = (layer * 4 + linear) * 3 + role
// (role: QUANT_ACTIVATION, QUANT_WEIGHT, QUANT_GRADIENT of llmc/quant.h), so no step waits on the
// host. Launches per operand and micro-step: current scaling, an amax pass and the cast (which
// computes the scale); delayed scaling, the cast alone; plus one launch per forward pass for all
// operands (lowp_begin_forward: amaxes zeroed, delayed scales set). At d48 (576 operands) that is
// 1151 (current) or 575 (delayed) fewer tiny launches per micro-step than a memset and a scale
// kernel before each cast (or a scale kernel alone).
// Producers' codes: with delayed scaling the scale of an input exists before the input does, so
// the kernel that makes the input can write its codes (q, q^T and the amax, QuantCodesOut) in the
// same pass instead of a cast reading it back (lowp_producer_codes; inp NULL in
// lowp_linear_forward), and so can the kernel that makes an output gradient (lowp_gradient_producer_
// codes; dout NULL in lowp_linear_backward). train_gpt.cu has the LayerNorms do it for qkv and fc,
// the GELU for the fc projection and, with FP8 weight gradients, the GELU's backward for fc's
// gradient and the attention's backward for qkv's (T % 64 == 0): with FP8 weight gradients (which
// keep the codes alone) 8 + 16 + 16 + 12 N C bytes a layer less (each output's bf16 no longer
// written, then read back), at d48 B 4 about 16.4 GB of traffic (~5.5 ms at 3 TB/s) and 240
// launches a micro-step. NOT RUN on a GPU (2026-11-28).
// Kept weight codes: a training forward casts each weight into codes kept by layer (W in
// lowp_weight_codes, W^T in lowp_weight_t; 24 C^2 bytes a layer, 2.9 GB at d48), which its replays
// (recomputation) read, and so do the next micro-steps of the same weights (lowp_begin_forward):
// in int8 always, in FP8 with delayed scaling while the weight's scale stays the same (their casts
// return at once). With gradient accumulation that is every micro-step of an optimizer step but
// the first. NOT RUN on a GPU (2026-11-28).
// The weight's and the activation's scales of the forward are reused by the backward of the same
// micro-step: the weight has not changed and the activation is the one the forward saw, so W^T
// (kept from the forward's cast) and the activation's transposed copy (kept from the forward's
// cast, or cast again in the backward; FP8 weight gradient) hold the codes the forward used.
// Bias gradients (FP8): the cast of the output gradient, which reads all of it anyway, also sums its
// columns by tile row, so the bias gradient costs no pass of its own over dout (a bf16 N x OC
// tensor, 9 N C elements a layer: at d48 B 4, 5.7 GB a step, about 1.9 ms on an H200 at 3 TB/s).
// Up to N = 16384 rows (256 tile rows, as many as colsum.cuh's chunks, so that colsum_finish's one
// thread per column stays short); past that colsum.cuh's own pass. NOT RUN on a GPU (2026-11-27).
//
// GELU (--gelu-fusion, train_gpt.cu): the fc forward may write gelu(out) and its pre-activation
// from the epilogue, and the fc projection's input gradient may multiply by gelu'(pre-activation)
// before its one rounding, in FP8 as in bf16 (the epilogue works on the dequantized fp32 sums;
// cuBLASLt documents GELU aux outputs for FP8 kernels). int8's GEMM ends in int32 and its own
// dequantization kernel, so it has no GELU epilogue. NOT RUN on a GPU with FP8 (2026-11-27).
//
// Accumulation (--fp8-fast-accum). Hopper's FP8 tensor-core instruction (k = 32 products a step)
// keeps about 14 significant bits of its running sum. By default cuBLASLt promotes those partial
// sums into separate fp32 registers every few instructions; with CUBLASLT_MATMUL_DESC_FAST_ACCUM
// it never does, which is faster (about 1.1-1.2x per GEMM elsewhere; not yet measured here) and
// less exact: each of the K/32 instructions may drop about 2^-13 of the running sum. Level 1 sets
// it for the forward GEMMs (as Transformer Engine and torchao do by default), level 2 for every
// FP8 GEMM. lowp_accumulation_bound() states the error each mode is checked against.
#ifndef LLMC_MATMUL_LOWP_CUH
#define LLMC_MATMUL_LOWP_CUH

#include "matmul.cuh"
#include "profile.cuh"
#include "quant.cuh"


typedef struct {
    matmul_precision precision;  // MATMUL_BF16, MATMUL_FP8 or MATMUL_INT8
    int fp8_wgrad;               // 1: the FP8 weight gradient
    int fast_accum;              // --fp8-fast-accum: 0 off, 1 the forward GEMMs, 2 every FP8 GEMM
    int history_len;             // H; 0: current scaling
    int num_operands;            // L * NUM_BLOCK_LINEARS * QUANT_ROLES
    int64_t history_steps;       // training micro-steps recorded in the history (host)
    // device state, one entry per operand
    float *scales;               // [num_operands][4]: 1/scale, scale (lowp_inv_scale, lowp_scale), and for
                                 // a weight the scale its kept codes have and whether its cast is skipped
                                 // (lowp_codes_scale_at, lowp_codes_kept_at; see lowp_begin_kernel)
    float *amax;                 // [num_operands]: the current amax (current scaling), zeroed per pass
    float *history;              // [num_operands][H]: amax ring, slot history_steps % H is this step's
    uint8_t *amax_taken;         // host, [num_operands]: an amax accumulated since lowp_begin_forward
    uint8_t *weight_t_recorded;  // host, [num_operands]: this pass's training forward cast (or kept) the
                                 // weight's W^T and scale, which lowp_linear_backward reads
    // device scratch shared by all layers (sizes for the widest linear: 4C)
    uint8_t *q_inp, *q_inp_t;    // (N, 4C) activation codes; (4C, N) transposed (FP8 weight gradient)
    uint8_t *q_grad, *q_grad_t;  // (N, 4C) gradient codes; (4C, N) transposed (FP8 weight gradient)
    uint8_t *q_weight;           // (4C, C) weight codes (evaluation's and sampling's)
    uint8_t *q_weights;          // every layer's W codes (lowp_weight_codes), from a training forward's cast
    uint8_t *q_weight_t;         // every layer's W^T codes (lowp_weight_t), from the forward's cast for the backward
    bool weight_codes_cast;      // host: q_weights and q_weight_t hold the last training micro-step's casts
    bool keep_weight_codes;      // host: this training pass's weights are those (lowp_begin_forward)
    int layers, C;
    float *row_scales;           // (N) int8 scale of each row of the activation or gradient
    float *bias_partial;         // FP8: (tile rows, 4C) the gradient's column sums (lowp_linear_backward)
    int32_t *acc;                // (N, 4C) int8 GEMM accumulator
    size_t bytes;                // device memory of all of the above
    EventTimeline *timeline;     // --profile: the quantization apart from the GEMMs (NULL: none)
} LowpMatmul;

static inline void lowp_mark(const LowpMatmul *lp, ProfPart part, cudaStream_t st) {
    if (lp->timeline) event_timeline_mark(lp->timeline, part, st);
}


// An operand's scale (the multiplier before the cast) and its inverse (the dequantization
// multiplier cuBLASLt reads). Each operand owns 16 bytes so that the inverse is 16-byte aligned:
// cuBLASLt 13 on an H100 answers CUBLAS_STATUS_NOT_SUPPORTED for a scale pointer that is only
// 4-byte aligned (measured, though the documentation does not say so).
static inline QUANT_HOSTDEV float *lowp_inv_scale_at(float *scales, int op) { return scales + 4 * (size_t)op; }
static inline QUANT_HOSTDEV float *lowp_scale_at(float *scales, int op) { return scales + 4 * (size_t)op + 1; }
static inline float *lowp_inv_scale(const LowpMatmul *lp, int op) { return lowp_inv_scale_at(lp->scales, op); }
static inline float *lowp_scale(const LowpMatmul *lp, int op) { return lowp_scale_at(lp->scales, op); }
static inline QUANT_HOSTDEV float *lowp_codes_scale_at(float *scales, int op) { return scales + 4 * (size_t)op + 2; }
static inline QUANT_HOSTDEV float *lowp_codes_kept_at(float *scales, int op) { return scales + 4 * (size_t)op + 3; }

// An FP8 operand's format follows its role: the gradient's is E5M2 (range), the activation's and
// the weight's E4M3 (precision).
static inline QUANT_HOSTDEV quant_target lowp_fp8_target(int op) {
    return op % QUANT_ROLES == QUANT_GRADIENT ? QUANT_TO_E5M2 : QUANT_TO_E4M3;
}

// The bound on |gpu - ref| / sum_k |a_k b_k| of the accumulation of one FP8 GEMM output over K
// products (ref: the fp64 sum over the dequantized operands, whose products are exact in fp32):
// promoted (fast_accum 0): fp32 partial sums (K 2^-24 <= 2^-11 for K <= 8192) plus the
// instruction's reduced-precision partial sums (about 2^-13), 2^-10 in all; fast accumulation: the
// running sum (at most sum |a_k b_k|) may lose 2^-13 of itself in each of the K/32 instructions,
// K/32 2^-13 more. Checked by test_gptcu (check 6a) and dev/cuda/matmul_lowp, which print the
// worst error / bound measured. int8 accumulates exactly.
static inline double lowp_accumulation_bound(int K, bool fast_accum) {
    return ldexp(1.0, -10) + (fast_accum ? ldexp((double)K / 32, -13) : 0.0);
}

// ---------------------------------------------------------------------------------------------
// cuBLASLt in the TN form

// out (M, Nc) row-major [+]= x (M, K) @ w (Nc, K)^T, with x and w row-major in x_type and w_type.
// Column-major, that is D (Nc, M) = A^T B with A = w stored (K, Nc) (lda = K, transposed) and
// B = x stored (K, M) (ldb = K): the TN form that FP8 and int8 kernels require.
//   FP8 (x, w E4M3 or E5M2, not both E5M2): compute fp32; out bf16 (+ bias (Nc) bf16 in the epilogue,
//     and/or a GELU with its aux matrix as matmul_lt's, matmul.cuh's matmul_set_epilogue) or fp32
//     (accumulate: out += ...); each operand dequantized by the fp32 device scalar its inv_scale
//     pointer holds (cuBLASLt's B and A scale pointers).
//   int8 (x, w CUDA_R_8I): compute int32, out int32 (exact; no scales, no epilogue).
// fast_accum (FP8 only): CUBLASLT_MATMUL_DESC_FAST_ACCUM (see the top of this file).
// Requirements: K and Nc multiples of 16 and 16-byte aligned matrices (cuBLASLt's heuristic then
// finds no algorithm), and 16-byte aligned scale pointers (checked here).
static inline void matmul_lt_tn(Matmul *mm, void *out, cudaDataType_t out_type, const void *x, cudaDataType_t x_type,
                                const void *w, cudaDataType_t w_type, const float *x_inv_scale,
                                const float *w_inv_scale, const bf16 *bias, matmul_gelu gelu, bf16 *aux, int M, int Nc,
                                int K, bool accumulate, bool fast_accum, cudaStream_t stream) {
    const bool integer = x_type == CUDA_R_8I;
    if (integer != (w_type == CUDA_R_8I) || integer != (out_type == CUDA_R_32I) ||
        (integer && (bias || gelu != MATMUL_GELU_NONE || accumulate || fast_accum)))
        die("matmul_lt_tn: int8 operands go with each other and an int32 output, without an epilogue, accumulation "
            "or fast accumulation");
    if ((uintptr_t)x_inv_scale % 16 || (uintptr_t)w_inv_scale % 16)
        die("matmul_lt_tn: cuBLASLt needs 16-byte aligned scale pointers (%p, %p)", (const void *)x_inv_scale,
            (const void *)w_inv_scale);
    cublasLtMatmulDesc_t desc;
    cublasCheck(cublasLtMatmulDescCreate(&desc, integer ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F,
                                         integer ? CUDA_R_32I : CUDA_R_32F));
    const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
    cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t)));
    cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof(op_n)));
    if (w_inv_scale)
        cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_inv_scale,
                                                   sizeof(w_inv_scale)));
    if (x_inv_scale)
        cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_inv_scale,
                                                   sizeof(x_inv_scale)));
    if (fast_accum) {
        const int8_t on = 1;
        cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &on, sizeof(on)));
    }
    if (!integer) matmul_set_epilogue(desc, "matmul_lt_tn", bias, gelu, aux, out_type, Nc, accumulate);
    cublasLtMatrixLayout_t la, lb, ld;
    cublasCheck(cublasLtMatrixLayoutCreate(&la, w_type, K, Nc, K));
    cublasCheck(cublasLtMatrixLayoutCreate(&lb, x_type, K, M, K));
    cublasCheck(cublasLtMatrixLayoutCreate(&ld, out_type, Nc, M, Nc));  // also C's (C = D)

    char what[160];
    if (snprintf(what, sizeof(what),
                 "the TN matmul M=%d N=%d K=%d, x type %d, w type %d, out type %d, bias align %u, accumulate=%d fast=%d "
                 "gelu=%d aux align %u",
             M, Nc, K, (int)x_type, (int)w_type, (int)out_type, bias ? pointer_alignment(bias) : 0, accumulate,
             fast_accum, (int)gelu, aux ? pointer_alignment(aux) : 0) >= (int)sizeof(what))
        die("matmul description too long (it keys the plan cache: a cut one could match another call)");
    const float alpha_f = 1.0f, beta_f = accumulate ? 1.0f : 0.0f;
    const int32_t alpha_i = 1, beta_i = 0;
    matmul_lt_run(mm, desc, la, lb, ld, integer ? (const void *)&alpha_i : (const void *)&alpha_f, w, x,
                  integer ? (const void *)&beta_i : (const void *)&beta_f, out, stream, what);
    cublasCheck(cublasLtMatrixLayoutDestroy(la));
    cublasCheck(cublasLtMatrixLayoutDestroy(lb));
    cublasCheck(cublasLtMatrixLayoutDestroy(ld));
    cublasCheck(cublasLtMatmulDescDestroy(desc));
}

// ---------------------------------------------------------------------------------------------
// Setup

// Whether an FP8 weight gradient can contract over N = B*T rows: cuBLASLt's FP8 kernels want
// K % 16 == 0.
static inline bool lowp_fp8_wgrad_rows_ok(int64_t N) { return N % 16 == 0; }

// B*T = N rows at most, L layers of width C. precision MATMUL_BF16 allocates nothing.
static inline void lowp_init(LowpMatmul *lp, matmul_precision precision, int fp8_wgrad, int fast_accum, int history_len,
                             int L, int C, int N) {
    memset(lp, 0, sizeof(*lp));
    lp->precision = precision;
    if (precision == MATMUL_BF16) return;
    if (precision != MATMUL_FP8 && precision != MATMUL_INT8)
        die("lowp_init: the block matmuls run in bf16, fp8 or int8, not precision %d", (int)precision);
    if (precision != MATMUL_FP8 && (fp8_wgrad || history_len > 0 || fast_accum))  // flags: trainer_matmul_precision
        die("lowp_init: an FP8 weight gradient, amax history or fast accumulation without FP8 (precision %d)",
            (int)precision);
    if (fast_accum < 0 || fast_accum > 2) die("lowp_init: fast accumulation level %d (0, 1 or 2)", fast_accum);
    if (fp8_wgrad && !lowp_fp8_wgrad_rows_ok(N))  // train_gptcu refuses the flags first (gpu_unsupported)
        die("lowp_init: an FP8 weight gradient over N = %d rows, not a multiple of 16", N);
    lp->fp8_wgrad = fp8_wgrad;
    lp->fast_accum = fast_accum;
    lp->history_len = history_len;
    lp->num_operands = L * NUM_BLOCK_LINEARS * QUANT_ROLES;
    const size_t wide = (size_t)N * 4 * C, ops = (size_t)lp->num_operands;
    lp->bytes = ops * (4 + 1 + (size_t)history_len) * sizeof(float) + 2 * wide + (size_t)4 * C * C;
    cudaCheck(cudaMalloc(&lp->scales, ops * 4 * sizeof(float)));
    cudaCheck(cudaMalloc(&lp->amax, ops * sizeof(float)));
    lp->amax_taken = (uint8_t *)calloc_check(ops, 1);
    lp->weight_t_recorded = (uint8_t *)calloc_check(ops, 1);
    cudaCheck(cudaMalloc(&lp->q_inp, wide));
    cudaCheck(cudaMalloc(&lp->q_grad, wide));
    cudaCheck(cudaMalloc(&lp->q_weight, (size_t)4 * C * C));
    lp->layers = L, lp->C = C;
    cudaCheck(cudaMalloc(&lp->q_weight_t, (size_t)L * 12 * C * C));
    lp->bytes += (size_t)L * 12 * C * C;
    cudaCheck(cudaMalloc(&lp->q_weights, (size_t)L * 12 * C * C));
    lp->bytes += (size_t)L * 12 * C * C;
    if (precision == MATMUL_FP8) {
        const int rows = quant_colsum_rows(N) < COLSUM_MAX_CHUNKS ? quant_colsum_rows(N) : COLSUM_MAX_CHUNKS;
        const size_t partial_bytes = (size_t)rows * 4 * C * sizeof(float);
        cudaCheck(cudaMalloc(&lp->bias_partial, partial_bytes));
        lp->bytes += partial_bytes;
    }
    if (history_len > 0) {
        cudaCheck(cudaMalloc(&lp->history, ops * history_len * sizeof(float)));
        cudaCheck(cudaMemset(lp->history, 0, ops * history_len * sizeof(float)));
    }
    if (fp8_wgrad) {
        cudaCheck(cudaMalloc(&lp->q_inp_t, wide));
        cudaCheck(cudaMalloc(&lp->q_grad_t, wide));
        lp->bytes += 2 * wide;
    }
    if (precision == MATMUL_INT8) {
        cudaCheck(cudaMalloc(&lp->row_scales, (size_t)N * sizeof(float)));
        cudaCheck(cudaMalloc(&lp->acc, wide * sizeof(int32_t)));
        lp->bytes += (size_t)N * sizeof(float) + wide * sizeof(int32_t);
    }
}

static inline void lowp_free(LowpMatmul *lp) {
    // cudaFree(NULL) is a no-op: the buffers a mode did not allocate are NULL.
    cudaCheck(cudaFree(lp->scales));
    cudaCheck(cudaFree(lp->amax));
    cudaCheck(cudaFree(lp->history));
    cudaCheck(cudaFree(lp->q_inp));
    cudaCheck(cudaFree(lp->q_inp_t));
    cudaCheck(cudaFree(lp->q_grad));
    cudaCheck(cudaFree(lp->q_grad_t));
    cudaCheck(cudaFree(lp->q_weight));
    cudaCheck(cudaFree(lp->q_weights));
    cudaCheck(cudaFree(lp->q_weight_t));
    cudaCheck(cudaFree(lp->row_scales));
    cudaCheck(cudaFree(lp->bias_partial));
    cudaCheck(cudaFree(lp->acc));
    free(lp->amax_taken);
    free(lp->weight_t_recorded);
}

// Where block linear `linear` of `layer` keeps its weight's codes in `store` (q_weights: W (OC, IC),
// q_weight_t: W^T (IC, OC)): each layer holds qkv's (3C x C), the attention projection's (C x C),
// fc's (4C x C) and the fc projection's (C x 4C), 12 C^2 bytes.
static inline uint8_t *lowp_layer_codes(const LowpMatmul *lp, uint8_t *store, int layer, int linear, int IC, int OC) {
    static const int offset_c2[NUM_BLOCK_LINEARS] = {0, 3, 4, 8}, size_c2[NUM_BLOCK_LINEARS] = {3, 1, 4, 4};
    const size_t c2 = (size_t)lp->C * lp->C;
    if (!store || layer < 0 || layer >= lp->layers || linear < 0 || linear >= NUM_BLOCK_LINEARS ||
        (size_t)IC * OC > size_c2[linear] * c2)
        die("lowp: no room for layer %d linear %d's weight codes (%d x %d) in %d layers of width %d", layer, linear,
            IC, OC, lp->layers, lp->C);
    return store + ((size_t)layer * 12 + offset_c2[linear]) * c2;
}
static inline uint8_t *lowp_weight_t(const LowpMatmul *lp, int layer, int linear, int IC, int OC) {
    return lowp_layer_codes(lp, lp->q_weight_t, layer, linear, IC, OC);
}
static inline uint8_t *lowp_weight_codes(const LowpMatmul *lp, int layer, int linear, int IC, int OC) {
    return lowp_layer_codes(lp, lp->q_weights, layer, linear, IC, OC);
}

// ---------------------------------------------------------------------------------------------
// Scales

// The start of a forward pass, for every operand at once (one thread each): zero its amax, and
// with delayed scaling past the first recorded micro-step set its scale from the max of its H
// history entries (the amaxes of the previous H micro-steps; bit patterns of non-negative floats
// order like the values and NaN sorts above Inf, so a NaN amax gives a NaN scale); when the pass
// records, clear the slot this micro-step's casts will fill.
// Kept weight codes: a recording pass also decides for each weight whether its cast may be
// skipped: when same_weights (the weights are those the previous recording pass cast, whose codes
// q_weights and q_weight_t still hold) and the scale is the one those codes were cast with
// (codes_scale; NaN after current scaling, which matches nothing). The skipped cast's amax, max |W|
// of the same weights, is then the previous micro-step's (slot prev_slot), which the slot gets
// instead of 0: the history holds the same bits as with the cast.
__global__ void lowp_begin_kernel(float *scales, float *amax, float *history, int num_operands, int H, int slot,
                                  int prev_slot, int delayed_scales, int record, int same_weights) {
    const int op = blockIdx.x * blockDim.x + threadIdx.x;
    if (op >= num_operands) return;
    amax[op] = 0.0f;
    if (H == 0) return;
    float *h = history + (size_t)op * H;
    float s = __uint_as_float(0x7FC00000u);  // NaN: current scaling (the cast chooses the scale)
    if (delayed_scales) {
        unsigned int bits = 0;
        for (int k = 0; k < H; k++) bits = max(bits, __float_as_uint(h[k]) & 0x7FFFFFFFu);
        s = quant_scale(__uint_as_float(bits), quant_target_max(lowp_fp8_target(op)), QUANT_SCALE_POW2);
        *lowp_scale_at(scales, op) = s;
        *lowp_inv_scale_at(scales, op) = 1.0f / s;
    }
    if (!record) return;
    bool kept = false;
    if (op % QUANT_ROLES == QUANT_WEIGHT) {
        float *codes_scale = lowp_codes_scale_at(scales, op);
        kept = same_weights && *codes_scale == s;
        *codes_scale = s;
        *lowp_codes_kept_at(scales, op) = kept ? 1.0f : 0.0f;
    }
    h[slot] = kept ? h[prev_slot] : 0.0f;
}

// Every forward pass (training, validation, sampling) begins with this, before its first block
// linear: one launch for all L * 12 operands instead of a memset and a scale kernel per cast.
// record: a training pass (delayed scaling records this micro-step's amaxes).
// same_weights (a training pass): no weight has changed since the previous training pass (the
// trainer: a micro-step after the first of an optimizer step). The codes that pass cast are then
// kept: int8's always (the weight's scale is its own), FP8's with delayed scaling where the
// weight's scale has not changed either (lowp_begin_kernel decides on the device; current scaling
// casts). At d48 that saves 4 bytes of traffic per block weight in FP8 (W read, W and W^T codes
// written; 5.9 GB a micro-step) and 6 in int8 (its amax pass too), in every micro-step of an
// optimizer step but the first.
static inline void lowp_begin_forward(LowpMatmul *lp, bool record, bool same_weights, cudaStream_t st) {
    if (lp->precision == MATMUL_BF16) return;
    lowp_mark(lp, PROF_QUANTIZE, st);
    const int H = lp->history_len, slot = H > 0 ? (int)(lp->history_steps % H) : 0;
    lp->keep_weight_codes = record && same_weights && lp->weight_codes_cast;
    LLMC_LAUNCH(ceil_div(lp->num_operands, 256), 256, 0, st, lowp_begin_kernel)(
        lp->scales, lp->amax, lp->history, lp->num_operands, H, slot, H > 0 ? (slot + H - 1) % H : 0,
        H > 0 && lp->history_steps > 0, H > 0 && record, lp->keep_weight_codes);
    kernelCheck();
    memset(lp->amax_taken, 0, (size_t)lp->num_operands);
    memset(lp->weight_t_recorded, 0, (size_t)lp->num_operands);
    if (record) lp->weight_codes_cast = false;  // until this micro-step is done (lowp_step_done)
}

// The amax of operand `op` in this pass, which accumulates once: a second accumulation would mix
// two tensors' amaxes (a forward pass that did not begin with lowp_begin_forward).
static inline float *lowp_take_amax(LowpMatmul *lp, float *amax, int op) {
    if (lp->amax_taken[op])
        die("lowp: operand %d's amax accumulated twice in one pass (lowp_begin_forward must start every forward)", op);
    lp->amax_taken[op] = 1;
    return amax;
}

// Quantizes x (rows, cols) row-major as FP8 operand `op` (in lowp_fp8_target(op)) into q
// (row-major) and/or qt (transposed); either may be NULL, and without qt or colsum this is a plain
// cast. colsum (may be NULL): the column sums of x by tile row (quant_transpose_gpu), in the same
// pass.
// The scale is kept in lp->scales for the backward: from the current amax (one extra read of x;
// the cast computes the scale), or with delayed scaling from the history (set by
// lowp_begin_forward), the cast itself then recording this step's amax when `record` (the
// training forward and backward; not validation or sampling, which must not change the training
// run). The first recorded step has no history yet and uses its current amax.
// kept (NULL: none): the weight's flag that lowp_begin_forward set where q and qt already hold
// these codes (delayed scaling; the cast is then skipped).
static inline void lowp_quantize(LowpMatmul *lp, uint8_t *q, uint8_t *qt, float *colsum, const bf16 *x, int rows,
                                 int cols, int op, bool record, const float *kept, cudaStream_t st) {
    const quant_target target = lowp_fp8_target(op);
    float *scale = lowp_scale(lp, op), *inv_scale = lowp_inv_scale(lp, op);
    const bool delayed = lp->history_len > 0, recording = delayed && record;
    const int H = lp->history_len, slot = delayed ? (int)(lp->history_steps % H) : 0;
    float *amax = recording ? lp->history + (size_t)op * H + slot : lp->amax + op;
    QuantScale qs = quant_scale_given(scale, kept);
    float *cast_amax = nullptr;
    if (delayed && lp->history_steps > 0) {
        if (recording) cast_amax = lowp_take_amax(lp, amax, op);
    } else {
        quant_amax_gpu(lowp_take_amax(lp, amax, op), x, (size_t)rows * cols, st);
        qs = quant_scale_of_amax(scale, inv_scale, amax, QUANT_SCALE_POW2);
    }
    if (qt || colsum) quant_transpose_gpu(q, qt, cast_amax, colsum, x, rows, cols, qs, target, st);
    else quant_cast_gpu(q, cast_amax, x, (size_t)rows * cols, qs, target, st);
}

// Whether the kernel that produces a block linear's input may write the input's FP8 codes itself
// (QuantCodesOut, lowp_producer_codes) in this forward pass: a training pass (record) in FP8 with
// delayed scaling past its first recorded micro-step, whose scales lowp_begin_forward set before
// any input exists. (Current scaling needs the input's amax before its codes; replays and
// evaluation passes keep the cast, which records nothing.)
static inline bool lowp_producer_codes_available(const LowpMatmul *lp, bool record) {
    return lp->precision == MATMUL_FP8 && record && lp->history_len > 0 && lp->history_steps > 0;
}

// What the producer of block linear `linear` of `layer`'s input writes (lowp_producer_codes_available
// must hold): its codes into the scratch lowp_linear_forward reads with inp NULL (which must come
// next, with no other block linear between), its transposed codes into inp_t (NULL: none; the
// block's kept codes, as lowp_linear_forward's inp_t), with the scale the cast would use, the amax
// into this micro-step's history slot as the cast records it: the same bytes as the cast.
static inline QuantCodesOut lowp_operand_codes(LowpMatmul *lp, int op, uint8_t *q, uint8_t *qt, float *colsum) {
    const int H = lp->history_len;
    float *amax = lowp_take_amax(lp, lp->history + (size_t)op * H + lp->history_steps % H, op);
    return QuantCodesOut{q, qt, lowp_scale(lp, op), amax, lowp_fp8_target(op), colsum};
}
static inline QuantCodesOut lowp_producer_codes(LowpMatmul *lp, int layer, int linear, uint8_t *inp_t) {
    return lowp_operand_codes(lp, quant_operand_index(layer, linear, QUANT_ACTIVATION), lp->q_inp, inp_t, nullptr);
}

// The same for the output gradient of a block linear's backward, where FP8 weight gradients read
// only its codes (lowp_linear_backward with dout NULL): a training step (always recorded) in FP8
// with FP8 weight gradients and delayed scaling past its first micro-step, with at most
// COLSUM_MAX_CHUNKS tile rows, so that the bias gradient comes from the producer's column sums.
static inline bool lowp_gradient_producer_codes_available(const LowpMatmul *lp, int N) {
    return lowp_producer_codes_available(lp, true) && lp->fp8_wgrad && quant_colsum_rows(N) <= COLSUM_MAX_CHUNKS;
}

// What the producer of the output gradient of block linear `linear` of `layer` writes: its codes
// and transposed codes into the scratch lowp_linear_backward reads with dout NULL (which must come
// next), with the gradient's scale and this micro-step's amax slot, and the column sums by tile row
// for its bias gradient: the bytes of lowp_linear_backward's own cast.
static inline QuantCodesOut lowp_gradient_producer_codes(LowpMatmul *lp, int layer, int linear) {
    return lowp_operand_codes(lp, quant_operand_index(layer, linear, QUANT_GRADIENT), lp->q_grad, lp->q_grad_t,
                              lp->bias_partial);
}

// The transposed codes qt (cols, rows) of x (rows, cols) with the scale operand `op` already has
// (set by lowp_quantize in this micro-step's forward).
static inline void lowp_quantize_transposed_again(LowpMatmul *lp, uint8_t *qt, const bf16 *x, int rows, int cols,
                                                  int op, quant_target target, cudaStream_t st) {
    quant_transpose_gpu((uint8_t *)nullptr, qt, (float *)nullptr, (float *)nullptr, x, rows, cols,
                        quant_scale_given(lowp_scale(lp, op)), target, st);
}

// A training micro-step's forward and backward are done: the next one records into the next slot,
// and its forward may keep the weight codes this one cast (lowp_begin_forward's same_weights).
static inline void lowp_step_done(LowpMatmul *lp) {
    if (lp->history_len > 0) lp->history_steps++;
    lp->weight_codes_cast = lp->precision != MATMUL_BF16;
}

// Forgets the amax history: the next training micro-step scales from its current amaxes again.
static inline void lowp_history_reset(LowpMatmul *lp) {
    lp->weight_codes_cast = false;
    if (lp->history_len == 0) return;
    lp->history_steps = 0;
    cudaCheck(cudaMemset(lp->history, 0, (size_t)lp->num_operands * lp->history_len * sizeof(float)));
}

// ---------------------------------------------------------------------------------------------
// The linear layers

// The forward of a block linear; again: a recomputation in the backward pass of the same
// micro-step (llmc/recompute.h), which must give the forward's bits and change no state. FP8 then
// casts with the scales the forward stored instead of choosing them: with delayed scaling a
// scale chosen now would read the history the forward has since written this step's amax into.
// int8 takes the weight's stored scale too, and scales the rows from the operand alone (the same).
// gelu_pre (bf16 and FP8; NULL: none): the GELU in the epilogue, out = gelu(inp @ W^T + b) and
// gelu_pre = inp @ W^T + b (cuBLASLt's GELU_AUX_BIAS, matmul.cuh).
// inp_t (FP8 weight gradients; NULL: none): where the training forward's cast of inp also writes
// its transposed codes (IC, N) for lowp_linear_backward, in the same pass.
// inp NULL (FP8, a training forward): inp's producer wrote its codes (lowp_producer_codes), which
// this pass reads instead of casting inp (inp_t is unused then).
static inline void lowp_linear_forward_pass(LowpMatmul *lp, Matmul *mm, bf16 *out, bf16 *gelu_pre, const bf16 *inp,
                                            uint8_t *inp_t, const bf16 *weight, const bf16 *bias, int N, int IC,
                                            int OC, int layer, int linear, bool record, bool again, cudaStream_t st) {
    const int op_inp = quant_operand_index(layer, linear, QUANT_ACTIVATION), op_w = quant_operand_index(layer, linear, QUANT_WEIGHT);
    const matmul_gelu gelu = gelu_pre ? MATMUL_GELU_FORWARD : MATMUL_GELU_NONE;  // (int8: matmul_lt_tn refuses)
    if (inp_t && (!lp->fp8_wgrad || again || !record))
        die("lowp: transposed input codes are written by a training forward with FP8 weight gradients only");
    if (!inp && (again || !lowp_producer_codes_available(lp, record)))
        die("lowp: the input's codes come from its producer only in an FP8 training forward with delayed scaling");
    lowp_mark(lp, lp->precision == MATMUL_BF16 ? PROF_MATMUL_FORWARD : PROF_QUANTIZE, st);
    if (record && !again && lp->precision != MATMUL_BF16) lp->weight_t_recorded[op_w] = 1;
    switch (lp->precision) {
    case MATMUL_FP8: {
        // W's codes: a training forward's kept by layer, with W^T for the backward (for replays, and
        // for the next micro-steps while the weights and their scale stay the same:
        // lowp_begin_forward); evaluation's and sampling's in scratch, without W^T.
        uint8_t *w_codes = record || again ? lowp_weight_codes(lp, layer, linear, IC, OC) : lp->q_weight;
        if (again) {  // W's codes are the forward's
            quant_cast_gpu(lp->q_inp, (float *)nullptr, inp, (size_t)N * IC,
                           quant_scale_given(lowp_scale(lp, op_inp)), lowp_fp8_target(op_inp), st);
        } else {
            if (inp) lowp_quantize(lp, lp->q_inp, inp_t, nullptr, inp, N, IC, op_inp, record, nullptr, st);
            const float *kept = record && lp->history_len > 0 ? lowp_codes_kept_at(lp->scales, op_w) : nullptr;
            lowp_quantize(lp, w_codes, record ? lowp_weight_t(lp, layer, linear, IC, OC) : nullptr, nullptr, weight,
                          OC, IC, op_w, record, kept, st);
        }
        lowp_mark(lp, PROF_MATMUL_FORWARD, st);
        matmul_lt_tn(mm, out, CUDA_R_16BF, lp->q_inp, CUDA_R_8F_E4M3, w_codes, CUDA_R_8F_E4M3,
                     lowp_inv_scale(lp, op_inp), lowp_inv_scale(lp, op_w), bias, gelu, gelu_pre, N, OC, IC, false,
                     lp->fast_accum >= 1, st);
        return;
    }
    case MATMUL_INT8: {
        int8_quantize_rows_gpu((int8_t *)lp->q_inp, lp->row_scales, inp, N, IC, QUANT_SCALE_POW2, st);
        // W's codes with the weight's tensor scale, always current (the weight is read anyway), kept
        // as FP8's: a replay, or a training forward of the weights the previous one cast (whose
        // scale, the weights' own, is the same), reads the codes and the scale as they are.
        uint8_t *w_codes = record || again ? lowp_weight_codes(lp, layer, linear, IC, OC) : lp->q_weight;
        if (!again && !(record && lp->keep_weight_codes)) {
            float *amax = lowp_take_amax(lp, lp->amax + op_w, op_w);
            quant_amax_gpu(amax, weight, (size_t)OC * IC, st);
            const QuantScale qs =
                quant_scale_of_amax(lowp_scale(lp, op_w), lowp_inv_scale(lp, op_w), amax, QUANT_SCALE_POW2);
            if (record)  // and W^T for the backward
                quant_transpose_gpu(w_codes, lowp_weight_t(lp, layer, linear, IC, OC), (float *)nullptr,
                                    (float *)nullptr, weight, OC, IC, qs, QUANT_TO_INT8, st);
            else
                quant_cast_gpu(w_codes, (float *)nullptr, weight, (size_t)OC * IC, qs, QUANT_TO_INT8, st);
        }
        lowp_mark(lp, PROF_MATMUL_FORWARD, st);
        matmul_lt_tn(mm, lp->acc, CUDA_R_32I, lp->q_inp, CUDA_R_8I, w_codes, CUDA_R_8I, nullptr, nullptr, nullptr,
                     gelu, gelu_pre, N, OC, IC, false, false, st);
        lowp_mark(lp, PROF_QUANTIZE, st);
        int8_dequantize_bias_gpu(out, lp->acc, lp->row_scales, lowp_scale(lp, op_w), bias, N, OC, st);
        return;
    }
    default:
        if (gelu_pre) matmul_forward_gelu(mm, out, gelu_pre, inp, weight, bias, N, IC, OC, st);
        else matmul_forward(mm, out, inp, weight, bias, N, IC, OC, st);
    }
}

// out (N, OC) = inp (N, IC) @ weight (OC, IC)^T + bias (OC) for block linear `linear` of `layer`,
// or with gelu_pre (not NULL) out = gelu of that and gelu_pre = it.
// record: a training forward (delayed scaling records this step's amaxes); inp (NULL: codes from
// its producer) and inp_t: see above.
static inline void lowp_linear_forward(LowpMatmul *lp, Matmul *mm, bf16 *out, bf16 *gelu_pre, const bf16 *inp,
                                       uint8_t *inp_t, const bf16 *weight, const bf16 *bias, int N, int IC, int OC,
                                       int layer, int linear, bool record, cudaStream_t st) {
    lowp_linear_forward_pass(lp, mm, out, gelu_pre, inp, inp_t, weight, bias, N, IC, OC, layer, linear, record, false,
                             st);
}

// lowp_linear_forward once more on the same operands, after it ran for this layer and linear in
// this training micro-step and before its backward (recomputation): the same output bits; records
// no amax and leaves the scales as they are (test_gptcu check 7, which ran on an H100).
static inline void lowp_linear_forward_again(LowpMatmul *lp, Matmul *mm, bf16 *out, bf16 *gelu_pre, const bf16 *inp,
                                             const bf16 *weight, const bf16 *bias, int N, int IC, int OC, int layer,
                                             int linear, cudaStream_t st) {
    lowp_linear_forward_pass(lp, mm, out, gelu_pre, inp, nullptr, weight, bias, N, IC, OC, layer, linear, false, true,
                             st);
}

// Backward of lowp_linear_forward (which must have run for this layer in this micro-step):
// dinp (N, IC) = dout @ weight (overwritten), or with gelu_pre (bf16 and FP8; not NULL: the
// pre-activation of the GELU whose output was inp) dinp = (dout @ weight) * gelu'(gelu_pre) in the
// epilogue, rounded once (cuBLASLt's DGELU, matmul.cuh); dweight (OC, IC) += dout^T @ inp (fp32);
// dbias (OC) += column sums of dout (bf16 dout, unquantized): in FP8 (N <= 16384) from the sums that
// dout's cast writes by tile row in the same pass (lp->bias_partial), else by colsum.cuh's own pass
// over dout (scratch: colsum_scratch_floats(N, OC)); the two sum in different orders, each fixed.
// Without accumulate, dweight and dbias are overwritten (=), as matmul_backward_weight's.
// inp_t (FP8 weight gradient; NULL: none): inp's transposed codes as the forward wrote them
// (lowp_linear_forward's inp_t); inp is then not read. Without them the FP8 weight gradient casts
// inp again, with the forward's scale.
// dout NULL: dout's producer wrote its codes, transposed codes and column sums
// (lowp_gradient_producer_codes, which must be available), which this pass reads instead of
// casting dout.
static inline void lowp_linear_backward(LowpMatmul *lp, Matmul *mm, bf16 *dinp, float *dweight, float *dbias,
                                        float *scratch, const bf16 *dout, const bf16 *inp, const uint8_t *inp_t,
                                        const bf16 *weight, const bf16 *gelu_pre, int N, int IC, int OC, int layer,
                                        int linear, bool accumulate, cudaStream_t st) {
    const int op_inp = quant_operand_index(layer, linear, QUANT_ACTIVATION), op_w = quant_operand_index(layer, linear, QUANT_WEIGHT),
              op_g = quant_operand_index(layer, linear, QUANT_GRADIENT);
    const bool fp8 = lp->precision == MATMUL_FP8, fp8_wgrad = fp8 && lp->fp8_wgrad;
    if (inp_t && !fp8_wgrad) die("lowp: transposed input codes are read by the FP8 weight gradient only");
    if (!dout && !(lowp_gradient_producer_codes_available(lp, N) && dbias))
        die("lowp: the output gradient's codes come from its producer only with FP8 weight gradients and delayed "
            "scaling");
    // dbias from dout's cast (FP8), within colsum_finish's row-count limit (see the top of this file)
    const bool bias_in_cast = fp8 && dbias && quant_colsum_rows(N) <= COLSUM_MAX_CHUNKS;
    const matmul_gelu gelu = gelu_pre ? MATMUL_GELU_BACKWARD : MATMUL_GELU_NONE;
    bf16 *aux = const_cast<bf16 *>(gelu_pre);  // MATMUL_GELU_BACKWARD only reads it (int8: matmul_lt_tn refuses)
    // W^T (IC, OC) as the forward's cast wrote it (FP8, int8), with the scale the forward chose
    if (lp->precision != MATMUL_BF16 && !lp->weight_t_recorded[op_w])
        die("lowp: layer %d linear %d's backward reads the W^T codes its training forward writes; no training "
            "forward of it since lowp_begin_forward", layer, linear);
    const uint8_t *w_t = lp->precision == MATMUL_BF16 ? nullptr : lowp_weight_t(lp, layer, linear, IC, OC);
    lowp_mark(lp, lp->precision == MATMUL_BF16 ? PROF_MATMUL_BACKWARD : PROF_QUANTIZE, st);
    switch (lp->precision) {
    case MATMUL_FP8:
        // dout (N, OC) in E5M2, and in the same pass dout^T (OC, N) for the FP8 weight gradient and
        // the column sums for dbias.
        if (dout)
            lowp_quantize(lp, lp->q_grad, fp8_wgrad ? lp->q_grad_t : nullptr, bias_in_cast ? lp->bias_partial : nullptr,
                          dout, N, OC, op_g, true, nullptr, st);
        lowp_mark(lp, PROF_MATMUL_BACKWARD, st);
        matmul_lt_tn(mm, dinp, CUDA_R_16BF, lp->q_grad, CUDA_R_8F_E5M2, w_t, CUDA_R_8F_E4M3,
                     lowp_inv_scale(lp, op_g), lowp_inv_scale(lp, op_w), nullptr, gelu, aux, N, IC, OC, false,
                     lp->fast_accum >= 2, st);
        break;
    case MATMUL_INT8:
        int8_quantize_rows_gpu((int8_t *)lp->q_grad, lp->row_scales, dout, N, OC, QUANT_SCALE_POW2, st);
        lowp_mark(lp, PROF_MATMUL_BACKWARD, st);
        matmul_lt_tn(mm, lp->acc, CUDA_R_32I, lp->q_grad, CUDA_R_8I, w_t, CUDA_R_8I, nullptr, nullptr, nullptr, gelu,
                     aux, N, IC, OC, false, false, st);
        lowp_mark(lp, PROF_QUANTIZE, st);
        int8_dequantize_bias_gpu(dinp, lp->acc, lp->row_scales, lowp_scale(lp, op_w), nullptr, N, IC, st);
        break;
    default:
        if (gelu_pre) matmul_backward_input_dgelu(mm, dinp, dout, weight, gelu_pre, N, IC, OC, st);
        else matmul_backward_input(mm, dinp, dout, weight, N, IC, OC, st);
    }
    if (!fp8_wgrad) {
        lowp_mark(lp, PROF_MATMUL_BACKWARD, st);
        matmul_backward_weight(mm, dweight, bias_in_cast ? nullptr : dbias, scratch, dout, inp, N, IC, OC, accumulate,
                               st);
    } else {
        // dW (OC, IC) (+)= dout^T (OC, N) @ (inp^T (IC, N))^T: E5M2 x E4M3, fp32 accumulation.
        if (!inp_t) {
            lowp_mark(lp, PROF_QUANTIZE, st);
            lowp_quantize_transposed_again(lp, lp->q_inp_t, inp, N, IC, op_inp, lowp_fp8_target(op_inp), st);
            inp_t = lp->q_inp_t;
        }
        lowp_mark(lp, PROF_MATMUL_BACKWARD, st);
        matmul_lt_tn(mm, dweight, CUDA_R_32F, lp->q_grad_t, CUDA_R_8F_E5M2, inp_t, CUDA_R_8F_E4M3,
                     lowp_inv_scale(lp, op_g), lowp_inv_scale(lp, op_inp), nullptr, MATMUL_GELU_NONE, nullptr, OC, IC,
                     N, accumulate, lp->fast_accum >= 2, st);
    }
    if (bias_in_cast) colsum_finish<1>(dbias, nullptr, lp->bias_partial, quant_colsum_rows(N), OC, accumulate, st);
    else if (fp8_wgrad && dbias) bias_backward(dbias, scratch, dout, N, OC, accumulate, st);
}

#endif  // LLMC_MATMUL_LOWP_CUH
