// The cuBLASLt subset the trainer calls (llmc/matmul.cuh, llmc/matmul_lowp.cuh), on the host, for
// the programs the emulator runs (dev/emu/cuda_emu.h): written from cuBLASLt's documentation, not
// from the trainer's code, so that a wrong layout, leading dimension, transpose, scale or epilogue
// in the trainer gives wrong numbers here as it would on a GPU.
//
// What a matmul computes. Column-major, as cuBLASLt: a stored (rows, cols) matrix with leading
// dimension ld holds element (r, c) at r + c * ld; op(A) is A or A^T by TRANSA, op(A) (m, k),
// op(B) (k, n), D and C (m, n) (C = D: the trainer passes the same pointer and layout).
//   acc   = sum_p op(A)(i, p) op(B)(p, j), each operand times its scale pointer's value (FP8),
//           products exact, summed in double, rounded once to fp32 (int32 exact for int8);
//   x     = alpha acc + beta C (fp32; C read only when beta != 0);
//   BIAS          x += bias[i]
//   GELU_AUX      aux(i, j) = x (in D's type), x = gelu(x)            (after BIAS, for GELU_AUX_BIAS)
//   DGELU         x = x * gelu'(aux(i, j))
//   D(i, j) = x rounded to D's type (round to nearest even).
// GELU is GPT-2's tanh approximation, evaluated in double and rounded once. The GPU's kernels sum
// in another order and round differently: the same tolerances apply, not the same bits.
// FAST_ACCUM (FP8 fast accumulation, int8_t) on an FP8 matmul: a model of Hopper's tensor cores
// without promotion to fp32, not their exact rule: the products of each k32 block (one FP8 wgmma)
// are summed exactly and added to the running sum, which then keeps 14 significant bits
// (truncated toward zero; DeepSeek-V3 reports about 14 bits kept). Within the bound that
// llmc/matmul_lowp.cuh's lowp_accumulation_bound states, and unlike the exact promoted sums, so a
// fast-accumulation GEMM that does not reach cuBLASLt gives other bits here.
//
// What it checks, as cuBLASLt would refuse (CUBLAS_STATUS_INVALID_VALUE or NOT_SUPPORTED, or the
// heuristic finding no algorithm), where the documentation and our measurements say so:
//   - layouts that disagree with the transposes and m, n, k, a leading dimension below the rows;
//   - type combinations: bf16 x bf16 -> bf16 | fp32 (compute 32F); E4M3|E5M2 x E4M3|E5M2, not
//     both E5M2 -> bf16 | fp32 (compute 32F, TN only, leading dimensions multiples of 16 bytes);
//     int8 x int8 -> int32 (compute 32I, scale type 32I, TN only, no epilogue);
//   - scale pointers on anything but FP8 operands, or not 16-byte aligned (measured on an H100,
//     llmc/matmul_lowp.cuh); a bias of another type than D's unless set (bf16 with FP8);
//   - GELU epilogues: an aux pointer, aux ld >= m and a multiple of 8, no accumulation (beta 0);
//   - pointers less aligned than the preference that chose the algorithm declared (the algorithm
//     then assumes alignment it does not have).
// The emulated algorithm needs no workspace, so the preference's workspace size is only accepted.
// Refusals return the status the library would; misuse the library leaves undefined (a NULL
// pointer it needs) ends the program with one line.
#include "cuda_emu.h"

#include <cublasLt.h>
#include <cuda_fp8.h>

struct cublasLtContext {
    int live;
};

namespace {

struct Desc {
    cublasComputeType_t compute;
    cudaDataType_t scale_type;
    cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    const void *bias = nullptr;
    int bias_type = -1;  // -1: D's type
    void *aux = nullptr;
    int64_t aux_ld = 0;
    const float *a_scale = nullptr, *b_scale = nullptr;
    int8_t fast_accum = 0;
};
struct Layout {
    cudaDataType_t type;
    uint64_t rows, cols;
    int64_t ld;
};
struct Preference {
    uint32_t align[4] = {256, 256, 256, 256};  // A, B, C, D: cuBLASLt assumes 256 unless told
};
// What the heuristic hands back, inside cublasLtMatmulAlgo_t's opaque bytes.
struct Algo {
    uint32_t align[4];
};
static_assert(sizeof(Algo) <= sizeof(cublasLtMatmulAlgo_t), "an Algo fits cuBLASLt's opaque algorithm");

Desc *desc_of(cublasLtMatmulDesc_t d) { return reinterpret_cast<Desc *>(d); }
Layout *layout_of(cublasLtMatrixLayout_t l) { return reinterpret_cast<Layout *>(l); }
Preference *pref_of(cublasLtMatmulPreference_t p) { return reinterpret_cast<Preference *>(p); }

bool is_fp8(int t) { return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2; }
size_t type_bytes(int t) {
    switch (t) {
    case CUDA_R_32F:
    case CUDA_R_32I: return 4;
    case CUDA_R_16BF: return 2;
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
    case CUDA_R_8I: return 1;
    default: emu::fail("cuBLASLt: data type %d is not emulated", t);
    }
}

// Element e of a matrix of type t, as a double (exact for every type here). EMU_UNCHECKED, as the
// matmul below: the host runs it between kernels, so ThreadSanitizer has nothing to find there.
EMU_UNCHECKED double element(const void *p, int t, size_t e) {
    switch (t) {
    case CUDA_R_32F: return ((const float *)p)[e];
    case CUDA_R_32I: return ((const int32_t *)p)[e];
    case CUDA_R_16BF: return __bfloat162float(((const __nv_bfloat16 *)p)[e]);
    case CUDA_R_8I: return ((const int8_t *)p)[e];
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
        return __half2float(__half(__nv_cvt_fp8_to_halfraw(((const __nv_fp8_storage_t *)p)[e],
                                                           t == CUDA_R_8F_E4M3 ? __NV_E4M3 : __NV_E5M2)));
    default: emu::fail("cuBLASLt: data type %d is not emulated", t);
    }
}

EMU_UNCHECKED void store(void *p, int t, size_t e, float x) {
    if (t == CUDA_R_32F) ((float *)p)[e] = x;
    else if (t == CUDA_R_16BF) ((__nv_bfloat16 *)p)[e] = __float2bfloat16_rn(x);
    else emu::fail("cuBLASLt: output type %d is not emulated", t);
}

// GPT-2's GELU, tanh approximation, and its derivative.
constexpr double GELU_SCALE = 0.7978845608028654;  // sqrt(2 / pi)
double gelu(double x) { return 0.5 * x * (1.0 + tanh(GELU_SCALE * (x + 0.044715 * x * x * x))); }
double gelu_grad(double x) {
    const double t = tanh(GELU_SCALE * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_SCALE * (1.0 + 3.0 * 0.044715 * x * x);
}

// x truncated toward zero to `bits` significant bits.
double truncate_to_bits(double x, int bits) {
    int e;
    const double m = frexp(x, &e);  // |m| in [0.5, 1)
    return ldexp(trunc(ldexp(m, bits)), e - bits);
}

// The sums of a matmul (see the top): sums[j m_pad + i] = sum_p opa[p m_pad + i] opb[j k + p], in
// double, adding the products in the order p = 0, 1, ..., k - 1; with fast accumulation, each k32
// block's products are summed first, and the running sum keeps 14 bits after each block. Integer
// operands (int8) give exact integer sums (all below 2^53). A block of SUM_ROWS x SUM_COLS sums is
// kept in registers (vectors of 4 doubles, over i) through the loop over p: the same additions in
// the same order as one sum at a time, with each op(A) element loaded once per block, not per sum.
constexpr size_t SUM_ROWS = 8, SUM_COLS = 4;
using emu::Double4;
EMU_UNCHECKED void matmul_sums(const double *opa, const double *opb, double *sums, size_t m_pad, size_t n_pad,
                               size_t k, bool fast) {
    const size_t block_k = fast ? 32 : k;
    for (size_t i0 = 0; i0 < m_pad; i0 += SUM_ROWS)
        for (size_t j0 = 0; j0 < n_pad; j0 += SUM_COLS) {
            Double4 acc[SUM_COLS][2] = {};
            for (size_t p0 = 0; p0 < k; p0 += block_k) {
                Double4 block[SUM_COLS][2] = {};
                for (size_t p = p0; p < std::min(k, p0 + block_k); p++) {
                    Double4 a[2];
                    memcpy(a, opa + p * m_pad + i0, sizeof a);
#pragma GCC unroll 4
                    for (size_t c = 0; c < SUM_COLS; c++) {
                        const double b = opb[(j0 + c) * k + p];
                        block[c][0] += a[0] * b;
                        block[c][1] += a[1] * b;
                    }
                }
                for (size_t c = 0; c < SUM_COLS; c++)
                    for (int h = 0; h < 2; h++) {
                        if (!fast) acc[c][h] = block[c][h];  // one block: p = 0 .. k - 1
                        else
                            for (int e = 0; e < 4; e++)
                                acc[c][h][e] = truncate_to_bits(acc[c][h][e] + block[c][h][e], 14);
                    }
            }
            for (size_t c = 0; c < SUM_COLS; c++) memcpy(sums + (j0 + c) * m_pad + i0, acc[c], sizeof acc[c]);
        }
}

// The largest power of two <= 256 dividing the address. Written here, not taken from
// llmc/matmul.cuh's pointer_alignment, so that the code under test does not check itself.
uint32_t alignment_of(const void *p) {
    uint32_t a = 256;
    while (a > 1 && (uintptr_t)p % a) a /= 2;
    return a;
}

// The checks every call repeats (see the top); CUBLAS_STATUS_SUCCESS when cuBLASLt would run it.
cublasStatus_t supported(const Desc &d, const Layout &a, const Layout &b, const Layout &c, const Layout &dl) {
    const bool ta = d.trans_a == CUBLAS_OP_T, tb = d.trans_b == CUBLAS_OP_T;
    const uint64_t m = dl.rows, n = dl.cols, k = ta ? a.rows : a.cols;
    if ((ta ? a.cols : a.rows) != m || (tb ? b.rows : b.cols) != n || (tb ? b.cols : b.rows) != k || c.rows != m ||
        c.cols != n || c.type != dl.type || c.ld != dl.ld)
        return CUBLAS_STATUS_INVALID_VALUE;
    for (const Layout *l : {&a, &b, &dl})
        if (l->ld < (int64_t)std::max<uint64_t>(l->rows, 1)) return CUBLAS_STATUS_INVALID_VALUE;
    const bool integer = a.type == CUDA_R_8I || b.type == CUDA_R_8I;
    const bool fp8 = is_fp8(a.type) || is_fp8(b.type);
    if (integer) {
        if (a.type != CUDA_R_8I || b.type != CUDA_R_8I || dl.type != CUDA_R_32I || d.compute != CUBLAS_COMPUTE_32I ||
            d.scale_type != CUDA_R_32I || d.epilogue != CUBLASLT_EPILOGUE_DEFAULT || !ta || tb)
            return CUBLAS_STATUS_NOT_SUPPORTED;
    } else if (fp8) {
        if (!is_fp8(a.type) || !is_fp8(b.type) || (a.type == CUDA_R_8F_E5M2 && b.type == CUDA_R_8F_E5M2) || !ta || tb ||
            a.ld % 16 || b.ld % 16 || (dl.type != CUDA_R_16BF && dl.type != CUDA_R_32F))
            return CUBLAS_STATUS_NOT_SUPPORTED;
    } else if (a.type != CUDA_R_16BF || b.type != CUDA_R_16BF || (dl.type != CUDA_R_16BF && dl.type != CUDA_R_32F)) {
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (!integer && (d.compute != CUBLAS_COMPUTE_32F || d.scale_type != CUDA_R_32F)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if ((d.a_scale && !is_fp8(a.type)) || (d.b_scale && !is_fp8(b.type)) || (uintptr_t)d.a_scale % 16 ||
        (uintptr_t)d.b_scale % 16)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    const bool bias = d.epilogue == CUBLASLT_EPILOGUE_BIAS || d.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    const bool gelu_aux = d.epilogue == CUBLASLT_EPILOGUE_GELU_AUX || d.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    switch (d.epilogue) {
    case CUBLASLT_EPILOGUE_DEFAULT:
    case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_GELU_AUX:
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
    case CUBLASLT_EPILOGUE_DGELU: break;
    default: emu::fail("cuBLASLt: epilogue %d is not emulated", (int)d.epilogue);
    }
    if (bias && ((d.bias_type == -1 ? (int)dl.type : d.bias_type) != CUDA_R_16BF || dl.type != CUDA_R_16BF))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if ((gelu_aux || d.epilogue == CUBLASLT_EPILOGUE_DGELU) &&
        (dl.type != CUDA_R_16BF || d.aux_ld < (int64_t)m || d.aux_ld % 8))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) { return *handle = new cublasLtContext{1}, CUBLAS_STATUS_SUCCESS; }
const char *cublasLtGetStatusString(cublasStatus_t status) {  // the statuses this emulation returns
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) { return delete handle, CUBLAS_STATUS_SUCCESS; }

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t compute, cudaDataType_t scale_type) {
    Desc *d = new Desc();
    d->compute = compute, d->scale_type = scale_type;
    *desc = reinterpret_cast<cublasLtMatmulDesc_t>(d);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) { return delete desc_of(desc), CUBLAS_STATUS_SUCCESS; }

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t bytes) {
    Desc *d = desc_of(desc);
    // Each attribute's documented type; a size that differs is cuBLASLt's INVALID_VALUE.
    auto set = [&](void *field, size_t size) {
        if (bytes != size) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(field, buf, size);
        return CUBLAS_STATUS_SUCCESS;
    };
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return set(&d->trans_a, sizeof(int32_t));
    case CUBLASLT_MATMUL_DESC_TRANSB: return set(&d->trans_b, sizeof(int32_t));
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return set(&d->epilogue, sizeof(uint32_t));
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return set(&d->bias, sizeof(void *));
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return set(&d->bias_type, sizeof(int32_t));
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return set(&d->aux, sizeof(void *));
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return set(&d->aux_ld, sizeof(int64_t));
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER: return set(&d->a_scale, sizeof(void *));
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER: return set(&d->b_scale, sizeof(void *));
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM: return set(&d->fast_accum, sizeof(int8_t));
    default: emu::fail("cublasLtMatmulDescSetAttribute(%d) is not emulated", (int)attr);
    }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
    type_bytes(type);  // an unknown type ends the run here
    *layout = reinterpret_cast<cublasLtMatrixLayout_t>(new Layout{type, rows, cols, ld});
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
    return delete layout_of(layout), CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
    *pref = reinterpret_cast<cublasLtMatmulPreference_t>(new Preference());
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
    return delete pref_of(pref), CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t bytes) {
    Preference *p = pref_of(pref);
    const int slot = attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES   ? 0
                     : attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES ? 1
                     : attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES ? 2
                     : attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES ? 3
                                                                          : -1;
    if (slot >= 0) {
        if (bytes != sizeof(uint32_t)) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&p->align[slot], buf, bytes);
        return CUBLAS_STATUS_SUCCESS;
    }
    if (attr != CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES)
        emu::fail("cublasLtMatmulPreferenceSetAttribute(%d) is not emulated", (int)attr);
    return bytes == sizeof(uint64_t) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

// One algorithm, which needs no workspace and as much alignment as the preference promises.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t pref,
                                              int requested, cublasLtMatmulHeuristicResult_t results[], int *found) {
    if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
    *found = 0;
    const cublasStatus_t st = supported(*desc_of(desc), *layout_of(a), *layout_of(b), *layout_of(c), *layout_of(d));
    if (st == CUBLAS_STATUS_INVALID_VALUE) return st;
    if (st != CUBLAS_STATUS_SUCCESS) return CUBLAS_STATUS_SUCCESS;  // no algorithm
    memset(&results[0], 0, sizeof results[0]);
    Algo algo;
    memcpy(algo.align, pref_of(pref)->align, sizeof algo.align);
    memcpy(&results[0].algo, &algo, sizeof algo);
    results[0].workspaceSize = 0;
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *found = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t a_layout, const void *B, cublasLtMatrixLayout_t b_layout,
                              const void *beta, const void *C, cublasLtMatrixLayout_t c_layout, void *D,
                              cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t *algo_opaque, void *,
                              size_t, cudaStream_t stream) {
    if (!handle || !handle->live) emu::fail("cublasLtMatmul: not a live handle");
    const Desc d = *desc_of(desc);
    const Layout a = *layout_of(a_layout), b = *layout_of(b_layout), c = *layout_of(c_layout), dl = *layout_of(d_layout);
    const cublasStatus_t st = supported(d, a, b, c, dl);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if (!algo_opaque) emu::fail("cublasLtMatmul without an algorithm (the emulator has no default)");
    Algo algo;
    memcpy(&algo, algo_opaque, sizeof algo);
    const void *ptrs[4] = {A, B, C, D};
    for (int i = 0; i < 4; i++)
        if (alignment_of(ptrs[i]) < algo.align[i]) return CUBLAS_STATUS_INVALID_VALUE;

    const bool ta = d.trans_a == CUBLAS_OP_T, tb = d.trans_b == CUBLAS_OP_T, integer = a.type == CUDA_R_8I;
    const bool fast = d.fast_accum && is_fp8(a.type);  // (supported() took FP8 A and B together)
    double alpha_v, beta_v;  // host scalars (the default pointer mode): read at the call
    if (integer) alpha_v = *(const int32_t *)alpha, beta_v = *(const int32_t *)beta;
    else alpha_v = *(const float *)alpha, beta_v = *(const float *)beta;
    const bool bias = d.epilogue == CUBLASLT_EPILOGUE_BIAS || d.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    const bool gelu_aux = d.epilogue == CUBLASLT_EPILOGUE_GELU_AUX || d.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    const bool dgelu = d.epilogue == CUBLASLT_EPILOGUE_DGELU;
    if ((bias && !d.bias) || ((gelu_aux || dgelu) && !d.aux)) emu::fail("cublasLtMatmul: the epilogue's pointer is not set");
    if ((gelu_aux || dgelu) && beta_v != 0.0) return CUBLAS_STATUS_NOT_SUPPORTED;

    // The descriptors are read at the call; device memory (operands, scales, bias, aux) when the
    // stream runs the matmul.
    emu::stream_enqueue(stream, [=]() EMU_UNCHECKED {
        const size_t m = dl.rows, n = dl.cols, k = ta ? a.rows : a.cols;
        const double scale = (d.a_scale ? (double)*d.a_scale : 1.0) * (d.b_scale ? (double)*d.b_scale : 1.0);
        // op(A) column p (opa[p m_pad + i]) and op(B) column j (opb[j k + p]) as doubles, padded
        // with zeros to whole blocks of matmul_sums.
        const size_t m_pad = (m + SUM_ROWS - 1) / SUM_ROWS * SUM_ROWS, n_pad = (n + SUM_COLS - 1) / SUM_COLS * SUM_COLS;
        std::vector<double> opa(m_pad * k), opb(n_pad * k), sums(m_pad * n_pad);
        for (size_t p = 0; p < k; p++)
            for (size_t i = 0; i < m; i++) opa[p * m_pad + i] = element(A, a.type, ta ? p + i * a.ld : i + p * a.ld);
        for (size_t j = 0; j < n; j++)
            for (size_t p = 0; p < k; p++) opb[j * k + p] = element(B, b.type, tb ? j + p * b.ld : p + j * b.ld);
        matmul_sums(opa.data(), opb.data(), sums.data(), m_pad, n_pad, k, fast);
        for (size_t j = 0; j < n; j++) {
            for (size_t i = 0; i < m; i++) {
                const size_t at = i + j * dl.ld;
                if (integer) {
                    int32_t *out = (int32_t *)D;
                    const double c_term = beta_v != 0.0 ? beta_v * ((const int32_t *)C)[at] : 0.0;
                    out[at] = (int32_t)(alpha_v * (double)(int32_t)(int64_t)sums[j * m_pad + i] + c_term);
                    continue;
                }
                float x = (float)(scale * sums[j * m_pad + i]);
                x = (float)(alpha_v * x + (beta_v != 0.0 ? beta_v * element(C, c.type, at) : 0.0));
                if (bias) x = (float)(x + element(d.bias, CUDA_R_16BF, i));
                if (gelu_aux) {
                    store(d.aux, CUDA_R_16BF, i + j * d.aux_ld, x);
                    x = (float)gelu(x);
                }
                if (dgelu) x = (float)(x * gelu_grad(element(d.aux, CUDA_R_16BF, i + j * d.aux_ld)));
                store(D, dl.type, at, x);
            }
        }
    }, emu::WorkKind::COMPUTE);
    return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
