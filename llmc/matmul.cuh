// The linear layers' matmuls through cuBLASLt: bf16 inputs, fp32 accumulation (CUBLAS_COMPUTE_32F,
// never the TF32 or 16-bit compute types), bf16 or fp32 outputs, the bias added in the epilogue,
// one persistent workspace.
//
// STATUS: verified on an H100 at commit 7c74e66 (2026-11-23), the plan cache included, and with the
// weight gradient's overwrite mode (beta = 0, 2026-11-24) on an H200 at c95ef56 (2026-11-27;
// dev/gpu_report.md).
//
// Layouts (row-major, as train_gpt.c): inp (N, IC), weight (OC, IC) as torch.nn.Linear, out (N, OC).
// cuBLASLt is column-major: a row-major (R, K) matrix is the column-major (K, R) matrix with
// leading dimension K, so each call below is written as column-major D (m, n) = op(A) op(B):
//   forward       out^T (OC, N)  = W (OC, IC)      @ inp^T (IC, N)    A = W (stored IC x OC, transposed)
//   input grad    dinp^T (IC, N) = W^T (IC, OC)    @ dout^T (OC, N)   no transposes
//   weight grad   dW^T (IC, OC) += inp^T (IC, N)  @ dout (N, OC)      B = dout^T stored (OC, N), transposed
// Weight gradients are fp32, accumulated (beta = 1) or, on a step's first write, overwritten
// (beta = 0: cuBLASLt does not read C, so neither a memset nor a read of the zeros is needed; the
// heuristic does not see beta, so both modes use the same algorithm, and x + 0 = x keeps the bits);
// bias gradients are column sums (colsum.cuh), because cuBLASLt's BGRAD epilogues cannot add to a
// gradient and round to the bias type.
// GELU in the epilogue (--gelu-fusion): the forward of the MLP's fc layer can write both
// gelu(x W^T + b) and its pre-activation (GELU_AUX_BIAS), and the input gradient of the fc
// projection can multiply by gelu'(pre-activation) before its single rounding (DGELU). cuBLASLt's
// GELU is GPT-2's tanh approximation, in fp32, like gelu.cuh; the bits may differ from
// gelu.cuh's by rounding, so a model uses one or the other consistently (train_gpt.cu).
// Determinism: cuBLASLt gives the same bits for the same shapes, pointers' alignment and
// workspace on the same GPU; the heuristic's choice depends only on those, and the first
// MATMUL_MAX_PLANS choices are kept (matmul_lt_run) so that those calls ask it only once.
#ifndef LLMC_MATMUL_CUH
#define LLMC_MATMUL_CUH

#include "colsum.cuh"
#include "cuda_common.cuh"

#define MATMUL_WORKSPACE_BYTES ((size_t)32 << 20)

// cuBLASLt's heuristic costs tens of microseconds of host time per query, and a training step asks
// the same few dozen questions every time (one per distinct matmul shape), so the answers are kept
// (the first MATMUL_MAX_PLANS; later calls ask again and get the same answer).
// The key is the call's full description (shape, types, transposes, epilogue, accumulation) and
// the pointers' alignments: everything the query sees, so a kept answer is the one the heuristic
// would give again, and the bits stay the same.
#define MATMUL_PLAN_KEY 224  // a call's description (checked < 160 bytes) and " align A B D" always fit
#define MATMUL_MAX_PLANS 256
typedef struct {
    char key[MATMUL_PLAN_KEY];
    cublasLtMatmulAlgo_t algo;
} MatmulPlan;

typedef struct {
    cublasLtHandle_t handle;
    void *workspace;    // MATMUL_WORKSPACE_BYTES, allocated once
    MatmulPlan *plans;  // the heuristic's answers so far, MATMUL_MAX_PLANS at most
    int num_plans;
} Matmul;

static inline void matmul_init(Matmul *mm) {
    cublasCheck(cublasLtCreate(&mm->handle));
    cudaCheck(cudaMalloc(&mm->workspace, MATMUL_WORKSPACE_BYTES));
    mm->plans = (MatmulPlan *)malloc(MATMUL_MAX_PLANS * sizeof(MatmulPlan));
    if (!mm->plans) die("out of host memory for the matmul plans");
    mm->num_plans = 0;
}

static inline void matmul_free(Matmul *mm) {
    free(mm->plans);
    cudaCheck(cudaFree(mm->workspace));
    cublasCheck(cublasLtDestroy(mm->handle));
}

// The largest power of two <= 256 that divides the address (what cuBLASLt's alignment
// preferences ask for; it assumes 256 unless told).
static inline uint32_t pointer_alignment(const void *p) {
    uintptr_t a = (uintptr_t)p;
    uint32_t align = 256;
    while (align > 1 && a % align) align /= 2;
    return align;
}

// The heuristic's best algorithm for the descriptor and layouts given the pointers' alignments
// and the workspace. `what` names the call in the error when no algorithm exists.
static inline cublasLtMatmulAlgo_t matmul_lt_heuristic(Matmul *mm, cublasLtMatmulDesc_t desc,
                                                       cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                                                       cublasLtMatrixLayout_t ld, const void *a, const void *b,
                                                       const void *d, const char *what) {
    cublasLtMatmulPreference_t pref;
    cublasCheck(cublasLtMatmulPreferenceCreate(&pref));
    const size_t ws = MATMUL_WORKSPACE_BYTES;
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    const uint32_t align_a = pointer_alignment(a), align_b = pointer_alignment(b), align_d = pointer_alignment(d);
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)));
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)));
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d, sizeof(align_d)));
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof(align_d)));

    cublasLtMatmulHeuristicResult_t heuristic;
    int found = 0;
    cublasCheck(cublasLtMatmulAlgoGetHeuristic(mm->handle, desc, la, lb, ld, ld, pref, 1, &heuristic, &found));
    if (found == 0) die("cuBLASLt has no algorithm for %s", what);
    cublasCheck(cublasLtMatmulPreferenceDestroy(pref));
    return heuristic.algo;
}

// Runs D = alpha op(A) op(B) + beta C (C = D) with the descriptor and layouts the caller built and
// the algorithm kept for this call's description `what` (which must name everything the
// descriptor and layouts say) and pointer alignments, asking the heuristic the first time.
static inline void matmul_lt_run(Matmul *mm, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t la,
                                 cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t ld, const void *alpha,
                                 const void *a, const void *b, const void *beta, void *d, cudaStream_t stream,
                                 const char *what) {
    char key[MATMUL_PLAN_KEY];
    snprintf(key, sizeof(key), "%s align %u %u %u", what, pointer_alignment(a), pointer_alignment(b), pointer_alignment(d));
    const cublasLtMatmulAlgo_t *algo = nullptr;
    for (int i = 0; i < mm->num_plans && !algo; i++)
        if (strcmp(mm->plans[i].key, key) == 0) algo = &mm->plans[i].algo;
    // Not kept yet: ask the heuristic, and keep its answer while there is room. Sampling alone makes
    // 5 new shapes per generated token, so a full cache is normal; the heuristic answers the same
    // for the same question, so an unkept call gets the same algorithm (and bits) as a kept one.
    cublasLtMatmulAlgo_t fresh;
    if (!algo) {
        fresh = matmul_lt_heuristic(mm, desc, la, lb, ld, a, b, d, what);
        algo = &fresh;
        if (mm->num_plans < MATMUL_MAX_PLANS) {
            MatmulPlan *plan = &mm->plans[mm->num_plans++];
            memcpy(plan->key, key, sizeof(key));
            plan->algo = fresh;
        }
    }
    cublasCheck(cublasLtMatmul(mm->handle, desc, alpha, a, la, b, lb, beta, d, ld, d, ld, algo, mm->workspace,
                               MATMUL_WORKSPACE_BYTES, stream));
}

// What the epilogue does with GELU (see the top of this file). aux is a bf16 matrix of D's shape
// and leading dimension: written with the pre-activation (FORWARD), read as it (BACKWARD).
typedef enum {
    MATMUL_GELU_NONE,
    MATMUL_GELU_FORWARD,   // D = gelu(op(A) op(B) + bias), aux = op(A) op(B) + bias
    MATMUL_GELU_BACKWARD,  // D = (op(A) op(B)) * gelu'(aux)
} matmul_gelu;

// The epilogue of a matmul whose column-major D has m rows: the bias (bf16, may be NULL) and the
// GELU with its aux matrix (see matmul_gelu), checked as cuBLASLt needs them: a bf16 D for either,
// and for a GELU its aux (16-byte aligned, m a multiple of 8), no accumulation into D and no bias
// in the backward. Shared by the bf16 matmuls below and the FP8 ones (llmc/matmul_lowp.cuh).
static inline void matmul_set_epilogue(cublasLtMatmulDesc_t desc, const char *who, const bf16 *bias, matmul_gelu gelu,
                                       const bf16 *aux, cudaDataType_t d_type, int m, bool accumulate) {
    if (bias && d_type != CUDA_R_16BF) die("%s: a bias needs a bf16 output", who);
    if ((gelu != MATMUL_GELU_NONE) != (aux != nullptr) ||
        (gelu != MATMUL_GELU_NONE && (d_type != CUDA_R_16BF || accumulate || (uintptr_t)aux % 16 || m % 8)) ||
        (gelu == MATMUL_GELU_BACKWARD && bias))
        die("%s: a GELU epilogue needs its aux matrix (16-byte aligned, m = %d a multiple of 8), a bf16 output "
            "without accumulation, and no bias in the backward", who, m);
    const cublasLtEpilogue_t epilogue =
        gelu == MATMUL_GELU_FORWARD    ? (bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX)
        : gelu == MATMUL_GELU_BACKWARD ? CUBLASLT_EPILOGUE_DGELU
        : bias                         ? CUBLASLT_EPILOGUE_BIAS
                                       : CUBLASLT_EPILOGUE_DEFAULT;
    cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    if (bias) {
        const cudaDataType_t bias_type = CUDA_R_16BF;  // D's type, and what FP8 matmuls need said
        cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
        cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                   sizeof(bias_type)));
    }
    if (aux) {
        const int64_t aux_ld = m;  // aux has D's column-major shape (m, n)
        cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
        cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof(aux_ld)));
    }
}

// Column-major D (m, n) [+]= op(A) op(B) [+ bias (m)], op(A) (m, k), op(B) (k, n), with `gelu`
// applied in the epilogue (aux: see matmul_gelu; NULL with MATMUL_GELU_NONE).
// A stored (k, m) when trans_a else (m, k); B stored (n, k) when trans_b else (k, n); leading
// dimensions are the stored row counts. d_type: CUDA_R_16BF or CUDA_R_32F. bias: bf16, only
// with a bf16 D. accumulate: D = op(A) op(B) + D.
static inline void matmul_lt(Matmul *mm, void *d, cudaDataType_t d_type, const bf16 *a, const bf16 *b,
                             const bf16 *bias, int m, int n, int k, bool trans_a, bool trans_b, bool accumulate,
                             matmul_gelu gelu, bf16 *aux, cudaStream_t stream) {
    cublasLtMatmulDesc_t desc;
    cublasCheck(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
    cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
    matmul_set_epilogue(desc, "matmul_lt", bias, gelu, aux, d_type, m, accumulate);

    cublasLtMatrixLayout_t la, lb, ld;
    cublasCheck(trans_a ? cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, m, k)
                        : cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, m, k, m));
    cublasCheck(trans_b ? cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, n, k, n)
                        : cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, n, k));
    cublasCheck(cublasLtMatrixLayoutCreate(&ld, d_type, m, n, m));

    char what[160];
    if (snprintf(what, sizeof(what), "bf16 m=%d n=%d k=%d trans_a=%d trans_b=%d bias align %u out=%s accumulate=%d gelu=%d aux align %u",
             m, n, k, trans_a, trans_b, bias ? pointer_alignment(bias) : 0, d_type == CUDA_R_32F ? "fp32" : "bf16",
             accumulate, (int)gelu, aux ? pointer_alignment(aux) : 0) >= (int)sizeof(what))
        die("matmul description too long (it keys the plan cache: a cut one could match another call)");
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    matmul_lt_run(mm, desc, la, lb, ld, &alpha, a, b, &beta, d, stream, what);
    cublasCheck(cublasLtMatrixLayoutDestroy(la));
    cublasCheck(cublasLtMatrixLayoutDestroy(lb));
    cublasCheck(cublasLtMatrixLayoutDestroy(ld));
    cublasCheck(cublasLtMatmulDescDestroy(desc));
}

// out (N, OC) = inp (N, IC) @ weight^T + bias (bias may be nullptr).
static inline void matmul_forward(Matmul *mm, bf16 *out, const bf16 *inp, const bf16 *weight, const bf16 *bias, int N,
                                  int IC, int OC, cudaStream_t stream) {
    matmul_lt(mm, out, CUDA_R_16BF, weight, inp, bias, OC, N, IC, true, false, false, MATMUL_GELU_NONE, nullptr, stream);
}

// out (N, OC) = gelu(pre) and pre (N, OC) = inp (N, IC) @ weight^T + bias, in one call.
static inline void matmul_forward_gelu(Matmul *mm, bf16 *out, bf16 *pre, const bf16 *inp, const bf16 *weight,
                                       const bf16 *bias, int N, int IC, int OC, cudaStream_t stream) {
    matmul_lt(mm, out, CUDA_R_16BF, weight, inp, bias, OC, N, IC, true, false, false, MATMUL_GELU_FORWARD, pre, stream);
}

// dinp (N, IC) = dout (N, OC) @ weight (OC, IC), overwritten.
static inline void matmul_backward_input(Matmul *mm, bf16 *dinp, const bf16 *dout, const bf16 *weight, int N, int IC,
                                         int OC, cudaStream_t stream) {
    matmul_lt(mm, dinp, CUDA_R_16BF, weight, dout, nullptr, IC, N, OC, false, false, false, MATMUL_GELU_NONE, nullptr,
              stream);
}

// dinp (N, IC) = (dout (N, OC) @ weight (OC, IC)) * gelu'(pre), pre (N, IC) the pre-activation of
// the GELU whose output was this layer's input: its input gradient and the GELU's backward in one call.
static inline void matmul_backward_input_dgelu(Matmul *mm, bf16 *dinp, const bf16 *dout, const bf16 *weight,
                                               const bf16 *pre, int N, int IC, int OC, cudaStream_t stream) {
    matmul_lt(mm, dinp, CUDA_R_16BF, weight, dout, nullptr, IC, N, OC, false, false, false, MATMUL_GELU_BACKWARD,
              const_cast<bf16 *>(pre), stream);  // MATMUL_GELU_BACKWARD only reads aux
}

// dweight (OC, IC) += dout^T @ inp (fp32); dbias (OC) += column sums of dout when dbias != nullptr
// (scratch: colsum_scratch_floats(N, OC)). Without accumulate, = instead of += for both.
static inline void matmul_backward_weight(Matmul *mm, float *dweight, float *dbias, float *scratch, const bf16 *dout,
                                          const bf16 *inp, int N, int IC, int OC, bool accumulate,
                                          cudaStream_t stream) {
    matmul_lt(mm, dweight, CUDA_R_32F, inp, dout, nullptr, IC, OC, N, false, true, accumulate, MATMUL_GELU_NONE,
              nullptr, stream);
    if (dbias) bias_backward(dbias, scratch, dout, N, OC, accumulate, stream);
}

// Both of the above: the backward pass of matmul_forward.
static inline void matmul_backward(Matmul *mm, bf16 *dinp, float *dweight, float *dbias, float *scratch,
                                   const bf16 *dout, const bf16 *inp, const bf16 *weight, int N, int IC, int OC,
                                   bool accumulate, cudaStream_t stream) {
    matmul_backward_input(mm, dinp, dout, weight, N, IC, OC, stream);
    matmul_backward_weight(mm, dweight, dbias, scratch, dout, inp, N, IC, OC, accumulate, stream);
}

#endif  // LLMC_MATMUL_CUH
