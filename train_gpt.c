// CPU reference trainer for GPT-2: the model's forward and backward in fp32, parallel with OpenMP,
// matmuls through OpenBLAS. It is the correctness oracle for the GPU trainer and the default job
// on a machine without a GPU. The shared, non-arithmetic parts (flags, model description, files,
// data, schedule, optimizer, logging) live in llmc/.
// Under mpirun it trains data-parallel with ZeRO stage 0..3 (-z; llmc/zero.h, llmc/comm.h):
//     mpirun -np 4 ./train_gpt -z 3 ...
//
// Shapes: B sequences of T tokens, C channels, NH heads of HS = C / NH, vocabulary V padded to Vp.
// Activations are row-major (B, T, channels); linear weights are (out, in) as torch.nn.Linear.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmc/amax_history.h"
#include "llmc/args.h"
#include "llmc/blas_kernels.h"
#include "llmc/checkpoint.h"
#include "llmc/comm.h"
#include "llmc/model.h"
#include "llmc/optimizer.h"
#include "llmc/profile.h"
#include "llmc/quant.h"
#include "llmc/recompute.h"
#include "llmc/rng.h"
#include "llmc/sgemm_tiles.h"
#include "llmc/state.h"
#include "llmc/trainer.h"
#include "llmc/utils.h"
#include "llmc/zero.h"

// ----------------------------------------------------------------------------------------------
// Layers. Each *_backward accumulates (+=) into parameter gradients; into activation gradients it
// accumulates where the comment says so and overwrites otherwise.

static void encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C) {
    #pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *o = out + ((size_t)b * T + t) * C;
            const float *te = wte + (size_t)inp[b * T + t] * C, *pe = wpe + (size_t)t * C;
            for (int c = 0; c < C; c++) o[c] = te[c] + pe[c];
        }
}

// Each thread owns a range of channels, so the scattered adds into dwte never race and their
// order does not depend on the number of threads.
static void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T, int C) {
    #pragma omp parallel
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int c0 = (int)((long)C * id / nt), c1 = (int)((long)C * (id + 1) / nt);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                const float *d = dout + ((size_t)b * T + t) * C;
                float *dte = dwte + (size_t)inp[b * T + t] * C, *dpe = dwpe + (size_t)t * C;
                for (int c = c0; c < c1; c++) {
                    dte[c] += d[c];
                    dpe[c] += d[c];
                }
            }
    }
}

// mean and rstd = 1 / sqrt(var + 1e-5) over the C channels of each of the N rows.
static void layernorm_stats(float *mean, float *rstd, const float *inp, int N, int C) {
    const float eps = 1e-5f;
    #pragma omp parallel for
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        float m = 0.0f;
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        float v = 0.0f;
        for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        v /= C;
        mean[i] = m;
        rstd[i] = 1.0f / sqrtf(v + eps);
    }
}

// y = (x - mean) * rstd * w + b, from given statistics (the recompute path uses kept ones).
static void layernorm_apply(float *out, const float *inp, const float *mean, const float *rstd, const float *w,
                            const float *b, int N, int C) {
    #pragma omp parallel for
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        float *o = out + (size_t)i * C;
        const float m = mean[i], s = rstd[i];
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * w[c] + b[c];
    }
}

static void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                              int N, int C) {
    layernorm_stats(mean, rstd, inp, N, C);
    layernorm_apply(out, inp, mean, rstd, w, b, N, C);
}

// With n = (x - mean) rstd and g = dout * w:  dx = rstd (g - mean(g) - n mean(g n))  (accumulated),
// dw = sum over rows of dout * n, db = sum of dout.
static void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
                               const float *mean, const float *rstd, int N, int C) {
    #pragma omp parallel for
    for (int i = 0; i < N; i++) {
        const float *d = dout + (size_t)i * C, *x = inp + (size_t)i * C;
        float m = mean[i], s = rstd[i];
        float g_mean = 0.0f, gn_mean = 0.0f;
        for (int c = 0; c < C; c++) {
            float n = (x[c] - m) * s, g = d[c] * w[c];
            g_mean += g;
            gn_mean += g * n;
        }
        g_mean /= C;
        gn_mean /= C;
        float *dx = dinp + (size_t)i * C;
        for (int c = 0; c < C; c++) {
            float n = (x[c] - m) * s, g = d[c] * w[c];
            dx[c] += s * (g - g_mean - n * gn_mean);
        }
    }
    // Parameter gradients: each thread sums its channels over all rows in row order.
    #pragma omp parallel
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int c0 = (int)((long)C * id / nt), c1 = (int)((long)C * (id + 1) / nt);
        for (int i = 0; i < N; i++) {
            const float *d = dout + (size_t)i * C, *x = inp + (size_t)i * C;
            float m = mean[i], s = rstd[i];
            for (int c = c0; c < c1; c++) {
                dw[c] += d[c] * (x[c] - m) * s;
                db[c] += d[c];
            }
        }
    }
}

// out (N, OC) = inp (N, IC) @ weight^T + bias, weight (OC, IC).
static void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int IC, int OC) {
    sgemm_fixed_tiles(0, 1, N, OC, IC, inp, IC, weight, IC, 0.0f, out, OC);
    if (!bias) return;
    #pragma omp parallel for
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++) out[(size_t)i * OC + o] += bias[o];
}

// dinp (N, IC) = dout @ weight (overwritten).
static void matmul_backward_input(float *dinp, const float *dout, const float *weight, int N, int IC, int OC) {
    sgemm_fixed_tiles(0, 0, N, IC, OC, dout, OC, weight, IC, 0.0f, dinp, IC);
}

// dweight += dout^T @ inp (when dweight); dbias += column sums of dout (when dbias).
static void matmul_backward_weight(float *dweight, float *dbias, const float *dout, const float *inp, int N, int IC,
                                   int OC) {
    if (dweight) sgemm_fixed_tiles(1, 0, OC, IC, N, dout, OC, inp, IC, 1.0f, dweight, IC);
    if (!dbias) return;
    #pragma omp parallel
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int o0 = (int)((long)OC * id / nt), o1 = (int)((long)OC * (id + 1) / nt);
        for (int i = 0; i < N; i++)
            for (int o = o0; o < o1; o++) dbias[o] += dout[(size_t)i * OC + o];
    }
}

static void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                            const float *weight, int N, int IC, int OC) {
    matmul_backward_input(dinp, dout, weight, N, IC, OC);
    matmul_backward_weight(dweight, dbias, dout, inp, N, IC, OC);
}

// e^x for -87 <= x <= 0 (the softmax's and the GELU's arguments), in plain arithmetic that
// vectorizes (the library expf is a call per element, a third of a small model's step):
// x = n ln2 + r with |r| <= ln2 / 2 (Cody-Waite: ln2 split in a part exact in fp32 and a
// correction), e^r by its Taylor polynomial to degree 6 (truncation below r^7 / 7! < 1.3e-7
// relative), 2^n by exponent bits. Relative error about 2e-7. Arguments below -87 give e^-87
// instead of a subnormal; such terms are 1e-38 of the row's largest term and do not change any sum.
static inline float softmax_exp(float x) {
    x = x < -87.0f ? -87.0f : x;
    const float round = 12582912.0f;  // 1.5 * 2^23: (v + round) - round rounds v to an integer
    const float n = (x * 1.44269504088896341f + round) - round;
    const float r = (x - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;
    const float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    union { int32_t i; float f; } scale = {.i = ((int32_t)n + 127) << 23};
    return p * scale.f;
}

// x . y over n floats in 8 interleaved partial sums (lane j takes the i with i mod 8 = j), added
// pairwise at the end. A sequential sum cannot vectorize (its rounding order is the source's);
// the 8 lanes are one vector multiply-add per 8 elements, in an order the source fixes, not the
// compiler's vector width or the thread count.
static inline float dot_product(const float *x, const float *y, int n) {
    float lane[8] = {0.0f};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) lane[j] += x[i + j] * y[i + j];
    for (int j = 0; i < n; i++, j++) lane[j] += x[i] * y[i];
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// Causal self-attention. qkv (B, T, 3C) holds [q | k | v] per token, each split into NH heads of
// HS channels. att (B, NH, T, T) keeps the softmax probabilities (row t uses columns 0..t) for
// the backward pass; out (B, T, C) has the heads side by side.
static void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH) {
    const int HS = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)HS);
    #pragma omp parallel for collapse(3)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((size_t)b * T + t) * C3 + h * HS;
                float *a = att + (((size_t)b * NH + h) * T + t) * T;
                float maxv = -INFINITY;
                for (int s = 0; s <= t; s++) {
                    a[s] = dot_product(q, qkv + ((size_t)b * T + s) * C3 + C + h * HS, HS) * scale;
                    if (a[s] > maxv) maxv = a[s];
                }
                for (int s = 0; s <= t; s++) a[s] = softmax_exp(a[s] - maxv);
                float sum = 0.0f;
                for (int s = 0; s <= t; s++) sum += a[s];
                float inv = 1.0f / sum;
                float *o = out + ((size_t)b * T + t) * C + h * HS;
                for (int i = 0; i < HS; i++) o[i] = 0.0f;
                for (int s = 0; s <= t; s++) {
                    a[s] *= inv;
                    const float *v = qkv + ((size_t)b * T + s) * C3 + 2 * C + h * HS;
                    for (int i = 0; i < HS; i++) o[i] += a[s] * v[i];
                }
            }
}

// dqkv (B, T, 3C) is overwritten. With P the probabilities and dP = dout V^T:
// dV = P^T dout, dS = P * (dP - rowsum(P * dP)), dQ = scale dS K, dK = scale dS^T Q.
// One (b, h) per task, so the sums over t into dk and dv run in a fixed order.
static void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att, int B, int T, int C,
                               int NH) {
    const int HS = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)HS);
    #pragma omp parallel
    {
        float *dp = (float *)malloc_check((size_t)T * sizeof(float));
        #pragma omp for collapse(2)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                for (int t = 0; t < T; t++) {
                    float *d = dqkv + ((size_t)b * T + t) * C3 + h * HS;
                    for (int i = 0; i < HS; i++) d[i] = d[C + i] = d[2 * C + i] = 0.0f;
                }
                for (int t = 0; t < T; t++) {
                    const float *a = att + (((size_t)b * NH + h) * T + t) * T;
                    const float *dy = dout + ((size_t)b * T + t) * C + h * HS;
                    const float *q = qkv + ((size_t)b * T + t) * C3 + h * HS;
                    float *dq = dqkv + ((size_t)b * T + t) * C3 + h * HS;
                    float rowsum = 0.0f;
                    for (int s = 0; s <= t; s++) {
                        const float *v = qkv + ((size_t)b * T + s) * C3 + 2 * C + h * HS;
                        float *dv = dqkv + ((size_t)b * T + s) * C3 + 2 * C + h * HS;
                        for (int i = 0; i < HS; i++) dv[i] += a[s] * dy[i];
                        dp[s] = dot_product(dy, v, HS);
                        rowsum += a[s] * dp[s];
                    }
                    for (int s = 0; s <= t; s++) {
                        float ds = a[s] * (dp[s] - rowsum) * scale;
                        const float *k = qkv + ((size_t)b * T + s) * C3 + C + h * HS;
                        float *dk = dqkv + ((size_t)b * T + s) * C3 + C + h * HS;
                        for (int i = 0; i < HS; i++) {
                            dq[i] += ds * k[i];
                            dk[i] += ds * q[i];
                        }
                    }
                }
            }
        free(dp);
    }
}

// GELU, tanh approximation: gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
// 0.5 (1 + tanh(u)) = sigmoid(2u), computed from e = e^(-2|u|) <= 1 by softmax_exp (it vectorizes;
// libm's tanhf is a call per element, which made the GELU 7% of the default CPU run):
// sigmoid(2u) = 1 / (1 + e) for u >= 0 and e / (1 + e) below, so neither it nor 1 - sigmoid
// cancels (1 + tanh(u) does as tanh(u) nears -1): a few ulp from the exact sigmoid. From |u| = 43.5
// on (e < 1.7e-38) e is 0, so s is 0 or 1 exactly, as fp32 has it; a NaN |u| takes that branch too
// (softmax_exp is never given a NaN) and a NaN x still gives NaN through the product x s.
#define GELU_SCALE 0.7978845608028654f  // sqrt(2 / pi)
#define GELU_CUBIC 0.044715f
typedef struct { float s, one_minus_s, du_dx; } GeluTerms;  // sigmoid(2u), 1 - sigmoid(2u), u'(x)

static inline GeluTerms gelu_terms(float x) {
    const float u = GELU_SCALE * (x + GELU_CUBIC * x * x * x);
    const float a = fabsf(u), e = a < 43.5f ? softmax_exp(-2.0f * a) : 0.0f, r = 1.0f / (1.0f + e);
    GeluTerms t = {u >= 0.0f ? r : e * r, u >= 0.0f ? e * r : r, GELU_SCALE * (1.0f + 3.0f * GELU_CUBIC * x * x)};
    return t;
}

static void gelu_forward(float *out, const float *inp, size_t n) {
    #pragma omp parallel for simd
    for (size_t i = 0; i < n; i++) out[i] = inp[i] * gelu_terms(inp[i]).s;
}

// d = dout * gelu'(x), written over dout: gelu'(x) = s + 2 x s (1 - s) u'(x), s = sigmoid(2u)
// (d/dx sigmoid(2u) = 2 s (1 - s) u').
static void gelu_backward_inplace(float *d, const float *inp, size_t n) {
    #pragma omp parallel for simd
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        const GeluTerms t = gelu_terms(x);
        d[i] *= t.s + 2.0f * x * t.s * t.one_minus_s * t.du_dx;
    }
}

static void residual_forward(float *out, const float *a, const float *b, size_t n) {
    #pragma omp parallel for
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

// Cross-entropy over the first V of the Vp logits of each row: losses (N) per position. With
// with_grad, each row's logits then become dlogits = (softmax - onehot(target)) * dloss in place,
// softmax = e^(logit - lse) with lse the row's log-sum-exp, and its padded columns 0: row by row,
// so that the row (Vp floats) is read from memory once, not once for the loss and again for
// dlogits. The reductions are vectorized (a fixed order for a given build), so they are
// deterministic.
static void crossentropy_forward(float *losses, float *logits, const int *targets, int with_grad, float dloss, int N,
                                 int V, int Vp) {
    #pragma omp parallel for
    for (int i = 0; i < N; i++) {
        float *l = logits + (size_t)i * Vp;
        float maxv = -INFINITY;
        #pragma omp simd reduction(max : maxv)
        for (int j = 0; j < V; j++) maxv = l[j] > maxv ? l[j] : maxv;
        float sum = 0.0f;
        #pragma omp simd reduction(+ : sum)
        for (int j = 0; j < V; j++) sum += softmax_exp(l[j] - maxv);
        const float lse = maxv + logf(sum);
        losses[i] = lse - l[targets[i]];
        if (!with_grad) continue;
        #pragma omp simd
        for (int j = 0; j < V; j++) l[j] = softmax_exp(l[j] - lse) * dloss;
        l[targets[i]] -= dloss;
        for (int j = V; j < Vp; j++) l[j] = 0.0f;
    }
}

// ----------------------------------------------------------------------------------------------
// ZeRO on the CPU: the buffers a rank keeps at each stage and the two per-segment steps the
// model's passes call (llmc/zero.h has the plan, the segments and the memory formula):
//   stage 3 gathers a segment's weights from the ranks' slices into scratch before each use;
//   stages 2 and 3 reduce-scatter a segment's gradient as soon as it is complete and add this
//   rank's part into its gradient slice (the step's sum over micro-steps).
// The tied embedding is the largest segment; the final LayerNorm, used beside it by the output
// head, has a small scratch of its own, so at most one large segment is ever gathered. The
// embeddings' gradient accumulates from the output head (forward pass) to the encoder (the end
// of the backward pass) in a scratch of its own; the other segments take one scratch in turn.

typedef struct {
    ZeroPlan plan;
    GPT2Config cfg;
    Comm *comm;
    size_t *counts;         // W counts for zero_split
    float *gathered;        // stage 3: M floats for one segment, then 2C for the final LayerNorm
    float *grad_scratch[2]; // stage 2, 3: one micro-step's gradient of the embeddings (E floats)
                            // and of the other segment being finished (Mb floats)
    int gathered_segment;   // the segment in gathered's first M floats, -1 for none
    int scratch_segment[2]; // the segment in each grad_scratch, -1 for none
} Zero;

static int grad_scratch_index(int seg) { return seg == 0 ? 0 : 1; }

static int model_shards_weights(const Zero *z) { return z && zero_shards_params(&z->plan); }
static int model_shards_grads(const Zero *z) { return z && zero_shards_grads(&z->plan); }

// Gathers segment seg's weights from every rank's slice (this rank's: `slice`, S floats from
// the slice's first element); returns the scratch that holds them, valid until the release.
static float *zero_gather(Zero *z, const float *slice, int seg) {
    int final = seg == zero_final_segment(&z->cfg);
    if (!final) {
        if (z->gathered_segment >= 0)
            die("internal error: ZeRO-3 gathers segment %d while segment %d is held", seg, z->gathered_segment);
        z->gathered_segment = seg;
    }
    float *dst = final ? z->gathered + z->plan.max_segment : z->gathered;
    ZeroRange r = zero_segment(&z->cfg, seg), own = zero_own_part(&z->plan, r);
    size_t slice_begin = zero_slice(&z->plan, z->plan.rank).begin;
    if (own.end > own.begin)
        memcpy(dst + (own.begin - r.begin), slice + (own.begin - slice_begin), (own.end - own.begin) * sizeof(float));
    zero_split(&z->plan, r, z->counts);
    z->comm->allgather_f32(z->comm, dst, z->counts);
    return dst;
}

static void zero_release(Zero *z, int seg) {
    if (seg != zero_final_segment(&z->cfg)) z->gathered_segment = -1;
}

// The zeroed scratch where segment seg's gradient of this micro-step accumulates.
static float *zero_grad_scratch(Zero *z, int seg) {
    const int b = grad_scratch_index(seg);
    if (z->scratch_segment[b] >= 0)
        die("internal error: ZeRO gradient scratch asked for segment %d while it holds %d", seg, z->scratch_segment[b]);
    z->scratch_segment[b] = seg;
    float *scratch = z->grad_scratch[b];
    ZeroRange r = zero_segment(&z->cfg, seg);
    memset(scratch, 0, (r.end - r.begin) * sizeof(float));
    return scratch;
}

// The scratch of segment seg, acquired earlier and not yet reduced.
static float *zero_held_scratch(Zero *z, int seg) {
    const int b = grad_scratch_index(seg);
    if (z->scratch_segment[b] != seg) die("internal error: ZeRO gradient of segment %d used outside its scratch", seg);
    return z->grad_scratch[b];
}

// Sums segment seg's gradient over the ranks into each owner's part and adds this rank's part to
// its gradient slice (`grad_slice`, S floats from the slice's first element).
static void zero_reduce_segment(Zero *z, float *grad_slice, int seg) {
    ZeroRange r = zero_segment(&z->cfg, seg), own = zero_own_part(&z->plan, r);
    float *scratch = z->grad_scratch[grad_scratch_index(seg)];
    zero_split(&z->plan, r, z->counts);
    z->comm->reduce_scatter_sum_f32(z->comm, scratch, z->counts);
    const float *sum = scratch + (own.begin - r.begin);
    float *dst = grad_slice + (own.begin - zero_slice(&z->plan, z->plan.rank).begin);
    size_t n = own.end - own.begin;
    #pragma omp parallel for if (n > 65536)
    for (size_t i = 0; i < n; i++) dst[i] += sum[i];
    z->scratch_segment[grad_scratch_index(seg)] = -1;
}

// ----------------------------------------------------------------------------------------------
// The model

typedef struct {  // one block's activations; a NULL pointer is not kept (see the recompute policy)
    float *ln1, *ln1_mean, *ln1_rstd;  // (B,T,C), (B,T), (B,T)
    float *qkv;                        // (B,T,3C)
    float *atty;                       // (B,T,C) attention output before the projection
    float *att;                        // (B,NH,T,T) softmax probabilities
    float *residual2;                  // (B,T,C) residual after attention
    float *ln2, *ln2_mean, *ln2_rstd;
    float *fch, *fch_gelu;             // (B,T,4C) fc pre-activation and GELU output
    float *residual3;                  // (B,T,C) block output, always kept
} BlockActs;

// How the model computes: the recompute policy of each layer (llmc/recompute.h) and the
// precision the four block matmuls emulate (llmc/quant.h). NULL options: keep everything, fp32.
typedef struct {
    const int *policies;          // L policies, or NULL for none
    matmul_precision precision;
    int fp8_wgrad;                // FP8 also for the weight-gradient matmul
    int amax_history;             // FP8 delayed scaling over this many micro-steps (0: current)
    int head_rows;                // rows of output-head logits at once (llmc/trainer.h); 0: all B*T
} ModelOptions;


typedef struct {
    GPT2Config cfg;
    size_t num_params;
    // The weights, gradients and AdamW moments this process keeps: the whole flat buffers
    // (gpt2_alloc), or under ZeRO (zero != NULL) the stage's part of each, slices starting at
    // this rank's first element. The passes reach weights and gradients only a segment at a
    // time, through weights_acquire and grads_acquire.
    float *params, *grads, *m, *v;
    Zero *zero;
    int B, T;                         // capacity of the activation buffers
    int *policy;                      // L recompute policies
    matmul_precision precision;
    int fp8_wgrad;
    quant_pass phase;                 // llmc/amax_history.h
    AmaxHistory amax;                 // FP8 delayed scaling (length 0: current scaling)
    float *fp8_scales;                // FP8: the scale of each operand in this micro-step's forward
    float *acts_memory;
    size_t acts_floats;               // kept activations
    float *encoded;                   // (B,T,C)
    BlockActs *blocks;                // L of them, with what each keeps
    BlockActs work;                   // one block's worth of scratch for what is not kept
    float *lnf_mean, *lnf_rstd;       // (B,T) the final LayerNorm's statistics
    float *dbtc;                      // (B,T,C) d lnf from the output head until the backward pass
                                      // reads it; then scratch of every layer's backward
    float *scratch_memory;            // scratch: output head, backward, recompute, quantization
    size_t scratch_floats;
    float *lnf;                       // (B,T,C) the final LayerNorm's output
    int head_rows;                    // rows of the output head at once (llmc/trainer.h)
    float *logits;                    // (head_rows,Vp) one chunk's logits, dlogits in place; the
                                      // same memory as the backward's scratch below
    float *losses;                    // (B,T)
    float *dresidual, *dqkv, *dfch;
    float *quant_a, *quant_b;         // low-precision operands, max(B*T*4C, 4C*C) each
    int *inputs;                      // the micro-batch of the last forward
    float mean_loss;
    WallTimeline timeline;            // --profile (llmc/profile.h)
} GPT2;

// One segment's weights or gradients (llmc/zero.h): `data` holds its elements from flat index
// `first` on, so tensor (kind, layer) of the segment starts at data + offset - first.
typedef struct {
    float *data;
    size_t first;
} Segment;

// --profile: the part of the step that begins here (llmc/profile.h).
static void mark(GPT2 *m, ProfPart part) { wall_timeline_mark(&m->timeline, part); }

static float *at(const GPT2 *m, Segment s, int kind, int layer) {
    return s.data + (gpt2_param_offset(&m->cfg, kind, layer) - s.first);
}

// The weights of segment seg until weights_release: a range of params, or gathered (ZeRO-3).
static Segment weights_acquire(GPT2 *m, int seg) {
    size_t first = zero_segment(&m->cfg, seg).begin;
    if (!model_shards_weights(m->zero)) return (Segment){m->params + first, first};
    mark(m, PROF_COMM);
    return (Segment){zero_gather(m->zero, m->params, seg), first};
}

static void weights_release(GPT2 *m, int seg) {
    if (model_shards_weights(m->zero)) zero_release(m->zero, seg);
}

// Where segment seg's gradient accumulates (+=) until grads_release: a range of grads, or a
// zeroed scratch (ZeRO-2, 3) that the release reduces into this rank's slice.
static Segment grads_acquire(GPT2 *m, int seg) {
    size_t first = zero_segment(&m->cfg, seg).begin;
    if (!model_shards_grads(m->zero)) return (Segment){m->grads + first, first};
    mark(m, PROF_COMM);
    return (Segment){zero_grad_scratch(m->zero, seg), first};
}

// An acquired segment's gradient, again (the embeddings': acquired by the forward pass's head).
static Segment grads_held(GPT2 *m, int seg) {
    size_t first = zero_segment(&m->cfg, seg).begin;
    if (model_shards_grads(m->zero)) return (Segment){zero_held_scratch(m->zero, seg), first};
    return (Segment){m->grads + first, first};
}

static void grads_release(GPT2 *m, int seg) {
    if (!model_shards_grads(m->zero)) return;
    mark(m, PROF_COMM);
    zero_reduce_segment(m->zero, m->grads, seg);
}

// The cost model of llmc/recompute.h for this trainer: the CPU attention keeps its (T x T)
// probabilities and, under RC_ATTN, recomputes them from q, k, v alone; everything is fp32.
static inline RecomputeShape cpu_recompute_shape(const GPT2Config *cfg, int T) {
    return (RecomputeShape){cfg->channels, cfg->num_heads, T, T, 0, 1, sizeof(float), 0.0};  // inputs kept as activations
}

// The kept activations no policy changes, floats per token: the embeddings' output and d lnf
// (the output head's backward ran in the forward pass; llmc/trainer.h), C each, and the final
// LayerNorm's mean and rstd.
static inline double cpu_fixed_activation_floats(const GPT2Config *cfg) { return 2.0 * cfg->channels + 2; }

// Carves one block's buffers from base + *used on (advancing *used): every buffer when keep_all
// (the shared scratch), else only what `policy` keeps (the others stay NULL). A NULL base only
// counts.
static void take_block(BlockActs *a, float *base, size_t *used, int policy, int keep_all, size_t BT, size_t C,
                       size_t att) {
    memset(a, 0, sizeof(*a));
#define TAKE(field, n, buffer) if (keep_all || recompute_keeps(policy, buffer)) { a->field = base ? base + *used : NULL; *used += (n); }
    TAKE(ln1, BT * C, RB_LN1);
    TAKE(ln1_mean, BT, RB_LN1_STATS);
    TAKE(ln1_rstd, BT, RB_LN1_STATS);
    TAKE(qkv, BT * 3 * C, RB_QKV);
    TAKE(atty, BT * C, RB_ATT_OUT);
    TAKE(att, att, RB_ATT_KEPT);
    TAKE(residual2, BT * C, RB_RESIDUAL2);
    TAKE(ln2, BT * C, RB_LN2);
    TAKE(ln2_mean, BT, RB_LN2_STATS);
    TAKE(ln2_rstd, BT, RB_LN2_STATS);
    TAKE(fch, BT * 4 * C, RB_FCH);
    TAKE(fch_gelu, BT * 4 * C, RB_FCH_GELU);
#undef TAKE
    if (!keep_all) {  // residual3: every block keeps its output
        a->residual3 = base ? base + *used : NULL;
        *used += BT * C;
    }
}

// The activations and scratch for B x T tokens; the parameter buffers are the caller's.
static void gpt2_alloc_activations(GPT2 *m, const GPT2Config *cfg, int B, int T, const ModelOptions *opt) {
    memset(m, 0, sizeof(*m));
    m->cfg = *cfg;
    m->num_params = gpt2_num_params(cfg);
    m->B = B;
    m->T = T;
    const size_t L = cfg->num_layers, C = cfg->channels, BT = (size_t)B * T;
    const size_t att = (size_t)B * cfg->num_heads * T * T;
    m->policy = (int *)calloc_check(L, sizeof(int));
    int recomputes = 0;
    for (size_t l = 0; l < L && opt && opt->policies; l++) recomputes |= m->policy[l] = opt->policies[l];
    m->precision = opt ? opt->precision : MATMUL_FP32;
    m->fp8_wgrad = opt ? opt->fp8_wgrad : 0;
    const int operands = (int)L * NUM_BLOCK_LINEARS * QUANT_ROLES;
    amax_history_init(&m->amax, operands, opt && m->precision == MATMUL_FP8 ? opt->amax_history : 0);
    m->fp8_scales = (float *)calloc_check(operands, sizeof(float));

    // Kept activations, what the backward pass reads: sized by a dry run of the carving.
    size_t kept = 0;
    for (size_t l = 0; l < L; l++) take_block(&m->work, NULL, &kept, m->policy[l], 0, BT, C, att);
    m->acts_floats = kept + BT * (size_t)cpu_fixed_activation_floats(cfg);
    m->acts_memory = (float *)malloc_check(m->acts_floats * sizeof(float));
    float *p = m->acts_memory;
    m->encoded = p, p += BT * C;
    m->blocks = (BlockActs *)malloc_check(L * sizeof(BlockActs));
    size_t used = 0;
    for (size_t l = 0; l < L; l++) take_block(&m->blocks[l], p, &used, m->policy[l], 0, BT, C, att);
    p += used;
    m->lnf_mean = p, p += BT;
    m->lnf_rstd = p, p += BT;
    m->dbtc = p, p += BT * C;
    if ((size_t)(p - m->acts_memory) != m->acts_floats) die("internal error: activation layout");

    // Scratch: the output head's (the final LayerNorm's output, the losses, one chunk of logits),
    // backward buffers, one block of recompute buffers (only if some layer recomputes; shared by
    // all layers), and the operands of emulated low-precision matmuls. The logits live from the
    // head (the forward's end) to the backward's start, the rest of the scratch from then to the
    // backward's end (it holds nothing between a backward and the next forward's head): the same
    // memory serves both.
    m->head_rows = opt && opt->head_rows > 0 && (size_t)opt->head_rows < BT ? opt->head_rows : (int)BT;
    const size_t Vp = cfg->padded_vocab_size, R = m->head_rows;
    size_t work = 0;
    if (recomputes) take_block(&m->work, NULL, &work, RC_NONE, 1, BT, C, att);
    const size_t quant = m->precision != MATMUL_FP32 ? (BT * 4 * C > 4 * C * C ? BT * 4 * C : 4 * C * C) : 0;
    const size_t backward = BT * C + BT * 3 * C + BT * 4 * C + work + 2 * quant;
    m->scratch_floats = BT * C + BT + (R * Vp > backward ? R * Vp : backward);
    m->scratch_memory = (float *)malloc_check(m->scratch_floats * sizeof(float));
    float *q = m->scratch_memory;
    m->lnf = q, q += BT * C;
    m->losses = q, q += BT;
    m->logits = q;
    m->dresidual = q, q += BT * C;
    m->dqkv = q, q += BT * 3 * C;
    m->dfch = q, q += BT * 4 * C;
    used = 0;
    if (recomputes) take_block(&m->work, q, &used, RC_NONE, 1, BT, C, att);
    else memset(&m->work, 0, sizeof(m->work));
    q += used;
    if (quant) {
        m->quant_a = q, q += quant;
        m->quant_b = q, q += quant;
    }
    if (q < m->logits + R * Vp) q = m->logits + R * Vp;
    if ((size_t)(q - m->scratch_memory) != m->scratch_floats) die("internal error: scratch layout");
    m->inputs = (int *)malloc_check(BT * sizeof(int));
}

#ifdef TESTING
// The whole model in one process (dev/test/test_model.c): activations plus full parameter,
// gradient and moment buffers.
static void gpt2_alloc_with(GPT2 *m, const GPT2Config *cfg, int B, int T, const ModelOptions *opt) {
    gpt2_alloc_activations(m, cfg, B, T, opt);
    m->params = (float *)malloc_check(m->num_params * sizeof(float));
    m->grads = (float *)calloc_check(m->num_params, sizeof(float));
    m->m = (float *)calloc_check(m->num_params, sizeof(float));
    m->v = (float *)calloc_check(m->num_params, sizeof(float));
}

static void gpt2_alloc(GPT2 *m, const GPT2Config *cfg, int B, int T) { gpt2_alloc_with(m, cfg, B, T, NULL); }

static double gpt2_grad_norm(const GPT2 *m) { return sqrt(sum_of_squares(m->grads, m->num_params)); }
#endif

static void gpt2_free(GPT2 *m) {
    free(m->params); free(m->grads); free(m->m); free(m->v);
    free(m->acts_memory); free(m->blocks); free(m->scratch_memory); free(m->policy);
    free(m->inputs); free(m->fp8_scales);
    amax_history_free(&m->amax);
}

// The FP8 scale of operand op (tensor x of n values) in a pass that computes it: from x's current
// amax, or with delayed scaling from the amax history, a training pass recording x's amax (the
// order of llmc/matmul_lowp.cuh's lowp_quantize: the history's max first, then the record).
static float fp8_scale(GPT2 *m, int op, const float *x, size_t n, float qmax, int record) {
    const float current = quant_amax(x, n);
    if (m->amax.length == 0) return quant_scale(current, qmax, QUANT_SCALE_POW2);
    const float amax = amax_history_amax(&m->amax, op, current);
    if (record) amax_history_record(&m->amax, op, current);
    return quant_scale(amax, qmax, QUANT_SCALE_POW2);
}

// out = the FP8 fake quantization of a forward operand (E4M3): its scale is computed (and kept
// for the backward pass), or replayed when the backward pass recomputes the forward.
static void fp8_forward_operand(GPT2 *m, float *out, const float *x, size_t n, int op) {
    if (m->phase != QUANT_PASS_REPLAY)
        m->fp8_scales[op] = fp8_scale(m, op, x, n, FP8_E4M3_MAX, m->phase == QUANT_PASS_TRAIN);
    fp8_fake_quantize(out, x, n, m->fp8_scales[op], FP8_E4M3);
}

// A block's linear layers in the emulated matmul precision: forward quantizes the input
// (activation) and the weight; the input gradient the output gradient and the weight; the weight
// gradient rounds its operands to bf16 (the GPU's bf16 weight-gradient matmul in every low
// precision) or, with --fp8-wgrad, quantizes them to FP8. The bias gradient is always the plain
// column sum. In FP8 the backward pass reuses the forward's scales of the weight and the
// activation (as the GPU does: same tensors, so the same scales under current scaling, and under
// delayed scaling the scales of the micro-step's forward).
static void linear_forward(GPT2 *m, int layer, int linear, float *out, const float *inp, const float *weight,
                           const float *bias, int N, int IC, int OC) {
    if (m->precision != MATMUL_FP32) mark(m, PROF_QUANTIZE);
    if (m->precision == MATMUL_FP8) {
        fp8_forward_operand(m, m->quant_a, inp, (size_t)N * IC, quant_operand_index(layer, linear, QUANT_ACTIVATION));
        fp8_forward_operand(m, m->quant_b, weight, (size_t)OC * IC, quant_operand_index(layer, linear, QUANT_WEIGHT));
        inp = m->quant_a;
        weight = m->quant_b;
    } else if (m->precision != MATMUL_FP32) {
        quant_emulate_operand(m->quant_a, inp, N, IC, m->precision, QUANT_ACTIVATION, QUANT_SCALE_POW2);
        quant_emulate_operand(m->quant_b, weight, OC, IC, m->precision, QUANT_WEIGHT, QUANT_SCALE_POW2);
        inp = m->quant_a;
        weight = m->quant_b;
    }
    mark(m, PROF_MATMUL_FORWARD);
    matmul_forward(out, inp, weight, bias, N, IC, OC);
}

static void linear_backward(GPT2 *m, int layer, int linear, float *dinp, float *dweight, float *dbias,
                            const float *dout, const float *inp, const float *weight, int N, int IC, int OC) {
    const matmul_precision prec = m->precision;
    if (prec == MATMUL_FP32) {
        mark(m, PROF_MATMUL_BACKWARD);
        matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, IC, OC);
        return;
    }
    mark(m, PROF_QUANTIZE);
    if (prec == MATMUL_FP8) {
        const int op_g = quant_operand_index(layer, linear, QUANT_GRADIENT);
        const float grad_scale = fp8_scale(m, op_g, dout, (size_t)N * OC, FP8_E5M2_MAX, 1);
        fp8_fake_quantize(m->quant_a, dout, (size_t)N * OC, grad_scale, FP8_E5M2);
        fp8_fake_quantize(m->quant_b, weight, (size_t)OC * IC,
                          m->fp8_scales[quant_operand_index(layer, linear, QUANT_WEIGHT)], FP8_E4M3);
    } else {
        quant_emulate_operand(m->quant_a, dout, N, OC, prec, QUANT_GRADIENT, QUANT_SCALE_POW2);
        quant_emulate_operand(m->quant_b, weight, OC, IC, prec, QUANT_WEIGHT, QUANT_SCALE_POW2);
    }
    mark(m, PROF_MATMUL_BACKWARD);
    matmul_backward_input(dinp, m->quant_a, m->quant_b, N, IC, OC);
    mark(m, PROF_QUANTIZE);
    if (prec == MATMUL_FP8 && m->fp8_wgrad) {  // quant_a holds E5M2(dout) already
        fp8_fake_quantize(m->quant_b, inp, (size_t)N * IC,
                          m->fp8_scales[quant_operand_index(layer, linear, QUANT_ACTIVATION)], FP8_E4M3);
    } else {
        quant_emulate_operand(m->quant_a, dout, N, OC, MATMUL_BF16, QUANT_GRADIENT, QUANT_SCALE_POW2);
        quant_emulate_operand(m->quant_b, inp, N, IC, MATMUL_BF16, QUANT_ACTIVATION, QUANT_SCALE_POW2);
    }
    mark(m, PROF_MATMUL_BACKWARD);
    matmul_backward_weight(dweight, NULL, m->quant_a, m->quant_b, N, IC, OC);
    matmul_backward_weight(NULL, dbias, dout, NULL, N, IC, OC);
}

// Block l's buffers for a pass: what it keeps, and the shared scratch for the rest.
static BlockActs block_buffers(const GPT2 *m, int l) {
    BlockActs a = m->blocks[l];
    const BlockActs *w = &m->work;
    float **fields[] = {&a.ln1, &a.ln1_mean, &a.ln1_rstd, &a.qkv, &a.atty, &a.att, &a.residual2,
                        &a.ln2, &a.ln2_mean, &a.ln2_rstd, &a.fch, &a.fch_gelu};
    float *const scratch[] = {w->ln1, w->ln1_mean, w->ln1_rstd, w->qkv, w->atty, w->att, w->residual2,
                              w->ln2, w->ln2_mean, w->ln2_rstd, w->fch, w->fch_gelu};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (!*fields[i]) *fields[i] = scratch[i];
    return a;
}

// The `steps` of block l's forward pass from its input `residual`. A LayerNorm whose statistics
// the block keeps is recomputed from them (stats_kept), which gives the same bits as the forward.
static void block_forward(GPT2 *m, int l, Segment w, const float *residual, const BlockActs *a, int steps,
                          int stats_kept, int B, int T) {
    const int C = m->cfg.channels, NH = m->cfg.num_heads, N = B * T;
    if (steps & RC_STEP_LN1) {
        mark(m, PROF_LAYERNORM);
        if (!(stats_kept & RC_STEP_LN1)) layernorm_stats(a->ln1_mean, a->ln1_rstd, residual, N, C);
        layernorm_apply(a->ln1, residual, a->ln1_mean, a->ln1_rstd, at(m, w, PT_LN1W, l), at(m, w, PT_LN1B, l), N, C);
    }
    if (steps & RC_STEP_QKV) linear_forward(m, l, LINEAR_QKV, a->qkv, a->ln1, at(m, w, PT_QKVW, l), at(m, w, PT_QKVB, l), N, C, 3 * C);
    if (steps & RC_STEP_ATTN) {
        mark(m, PROF_ATTENTION_FORWARD);
        attention_forward(a->atty, a->att, a->qkv, B, T, C, NH);
    }
    if (steps & RC_STEP_ATTPROJ) {
        linear_forward(m, l, LINEAR_ATTPROJ, a->residual2, a->atty, at(m, w, PT_ATTPROJW, l), at(m, w, PT_ATTPROJB, l), N, C, C);
        residual_forward(a->residual2, a->residual2, residual, (size_t)N * C);
    }
    if (steps & RC_STEP_LN2) {
        mark(m, PROF_LAYERNORM);
        if (!(stats_kept & RC_STEP_LN2)) layernorm_stats(a->ln2_mean, a->ln2_rstd, a->residual2, N, C);
        layernorm_apply(a->ln2, a->residual2, a->ln2_mean, a->ln2_rstd, at(m, w, PT_LN2W, l), at(m, w, PT_LN2B, l), N, C);
    }
    if (steps & RC_STEP_FC) linear_forward(m, l, LINEAR_FC, a->fch, a->ln2, at(m, w, PT_FCW, l), at(m, w, PT_FCB, l), N, C, 4 * C);
    if (steps & RC_STEP_GELU) {
        mark(m, PROF_GELU);
        gelu_forward(a->fch_gelu, a->fch, (size_t)N * 4 * C);
    }
    if (steps & RC_STEP_FCPROJ) {
        linear_forward(m, l, LINEAR_FCPROJ, a->residual3, a->fch_gelu, at(m, w, PT_FCPROJW, l), at(m, w, PT_FCPROJB, l), N, 4 * C, C);
        residual_forward(a->residual3, a->residual3, a->residual2, (size_t)N * C);
    }
}

// Forward over B x T tokens (at most the allocated capacity). With targets, also the mean loss;
// with_grad (a training micro-step, with targets) also the output head's backward for the
// gradient of loss_scale * (mean loss), chunk by chunk (llmc/trainer.h): the logits of head_rows
// rows become dlogits in place, then d lnf of those rows (kept for gpt2_backward) and the tied
// head's part of d wte. The embeddings' gradient segment stays acquired until the encoder's part
// at the end of gpt2_backward. Without targets only the last chunk is computed: m->logits holds
// the logits of rows [(N - 1) / head_rows * head_rows, N) (sampling reads the last row).
static void gpt2_forward(GPT2 *m, const int *inputs, const int *targets, int B, int T, int with_grad,
                         float loss_scale) {
    const GPT2Config *c = &m->cfg;
    const int C = c->channels, V = c->vocab_size, Vp = c->padded_vocab_size, N = B * T, R = m->head_rows;
    const int EMB = 0, FINAL = zero_final_segment(c);
    if (with_grad && (!targets || m->phase != QUANT_PASS_TRAIN))
        die("internal error: a forward pass with gradients needs targets and the training phase");
    memcpy(m->inputs, inputs, (size_t)N * sizeof(int));
    Segment w = weights_acquire(m, EMB);
    mark(m, PROF_ENCODER);
    encoder_forward(m->encoded, inputs, at(m, w, PT_WTE, -1), at(m, w, PT_WPE, -1), B, T, C);
    weights_release(m, EMB);
    const float *residual = m->encoded;
    for (int l = 0; l < c->num_layers; l++) {
        BlockActs a = block_buffers(m, l);
        w = weights_acquire(m, zero_layer_segment(l));
        block_forward(m, l, w, residual, &a, RC_ALL_STEPS, 0, B, T);
        weights_release(m, zero_layer_segment(l));
        residual = a.residual3;
    }
    Segment wf = weights_acquire(m, FINAL), we = weights_acquire(m, EMB);
    mark(m, PROF_LAYERNORM);
    layernorm_forward(m->lnf, m->lnf_mean, m->lnf_rstd, residual, at(m, wf, PT_LNFW, -1), at(m, wf, PT_LNFB, -1), N, C);
    weights_release(m, FINAL);
    Segment ge = with_grad ? grads_acquire(m, EMB) : (Segment){NULL, 0};
    mark(m, PROF_HEAD);
    for (int r0 = targets ? 0 : (N - 1) / R * R; r0 < N; r0 += R) {
        const int n = N - r0 < R ? N - r0 : R;
        const float *lnf = m->lnf + (size_t)r0 * C;
        matmul_forward(m->logits, lnf, at(m, we, PT_WTE, -1), NULL, n, C, Vp);
        if (!targets) continue;
        crossentropy_forward(m->losses + r0, m->logits, targets + r0, with_grad, loss_scale / (float)N, n, V, Vp);
        if (!with_grad) continue;
        matmul_backward_input(m->dbtc + (size_t)r0 * C, m->logits, at(m, we, PT_WTE, -1), n, C, Vp);
        matmul_backward_weight(at(m, ge, PT_WTE, -1), NULL, m->logits, lnf, n, C, Vp);
    }
    weights_release(m, EMB);
    if (!targets) return;
    double sum = 0.0;
    for (int i = 0; i < N; i++) sum += m->losses[i];
    m->mean_loss = (float)(sum / N);
}

// Backward of the last forward, which had with_grad: accumulates the rest of its gradient. The
// output head's backward ran in the forward pass; segments finish in the order final LayerNorm,
// layers L-1..0, embeddings (the encoder's part added to the head's). Each block first
// recomputes what its policy did not keep, with the same functions as the forward pass:
// bit-identical.
static void gpt2_backward(GPT2 *m, int B, int T) {
    const GPT2Config *c = &m->cfg;
    const int C = c->channels, NH = c->num_heads, N = B * T;
    const int EMB = 0, FINAL = zero_final_segment(c);
    m->phase = QUANT_PASS_REPLAY;  // a block's recompute reuses its forward's FP8 scales
    const float *last = c->num_layers > 0 ? m->blocks[c->num_layers - 1].residual3 : m->encoded;
    Segment wf = weights_acquire(m, FINAL);
    Segment gf = grads_acquire(m, FINAL);
    mark(m, PROF_LAYERNORM);
    memset(m->dresidual, 0, (size_t)N * C * sizeof(float));
    layernorm_backward(m->dresidual, at(m, gf, PT_LNFW, -1), at(m, gf, PT_LNFB, -1), m->dbtc, last,
                       at(m, wf, PT_LNFW, -1), m->lnf_mean, m->lnf_rstd, N, C);
    grads_release(m, FINAL);
    weights_release(m, FINAL);
    for (int l = c->num_layers - 1; l >= 0; l--) {
        const BlockActs a = block_buffers(m, l);
        const float *residual = l == 0 ? m->encoded : m->blocks[l - 1].residual3;
        const int seg = zero_layer_segment(l), policy = m->policy[l];
        Segment w = weights_acquire(m, seg);
        const int stats_kept = (policy & RC_BLOCK ? 0 : RC_STEP_LN1) | (policy & (RC_BLOCK | RC_MLP) ? 0 : RC_STEP_LN2);
        m->timeline.recomputing = 1;
        block_forward(m, l, w, residual, &a, recompute_steps(policy), stats_kept, B, T);
        m->timeline.recomputing = 0;
        Segment g = grads_acquire(m, seg);
        // MLP: residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))); dresidual holds d residual3.
        linear_backward(m, l, LINEAR_FCPROJ, m->dfch, at(m, g, PT_FCPROJW, l), at(m, g, PT_FCPROJB, l), m->dresidual, a.fch_gelu,
                        at(m, w, PT_FCPROJW, l), N, 4 * C, C);
        mark(m, PROF_GELU);
        gelu_backward_inplace(m->dfch, a.fch, (size_t)N * 4 * C);
        linear_backward(m, l, LINEAR_FC, m->dbtc, at(m, g, PT_FCW, l), at(m, g, PT_FCB, l), m->dfch, a.ln2, at(m, w, PT_FCW, l), N, C,
                        4 * C);
        mark(m, PROF_LAYERNORM);
        layernorm_backward(m->dresidual, at(m, g, PT_LN2W, l), at(m, g, PT_LN2B, l), m->dbtc, a.residual2,
                           at(m, w, PT_LN2W, l), a.ln2_mean, a.ln2_rstd, N, C);
        // Attention: residual2 = residual + attproj(attention(qkv(ln1(residual)))); dresidual = d residual2.
        linear_backward(m, l, LINEAR_ATTPROJ, m->dbtc, at(m, g, PT_ATTPROJW, l), at(m, g, PT_ATTPROJB, l), m->dresidual, a.atty,
                        at(m, w, PT_ATTPROJW, l), N, C, C);
        mark(m, PROF_ATTENTION_BACKWARD);
        attention_backward(m->dqkv, m->dbtc, a.qkv, a.att, B, T, C, NH);
        linear_backward(m, l, LINEAR_QKV, m->dbtc, at(m, g, PT_QKVW, l), at(m, g, PT_QKVB, l), m->dqkv, a.ln1, at(m, w, PT_QKVW, l), N,
                        C, 3 * C);
        mark(m, PROF_LAYERNORM);
        layernorm_backward(m->dresidual, at(m, g, PT_LN1W, l), at(m, g, PT_LN1B, l), m->dbtc, residual,
                           at(m, w, PT_LN1W, l), a.ln1_mean, a.ln1_rstd, N, C);
        grads_release(m, seg);
        weights_release(m, seg);
    }
    Segment ge = grads_held(m, EMB);
    mark(m, PROF_ENCODER);
    encoder_backward(at(m, ge, PT_WTE, -1), at(m, ge, PT_WPE, -1), m->dresidual, m->inputs, B, T, C);
    grads_release(m, EMB);
    m->phase = QUANT_PASS_TRAIN;
    amax_history_step_done(&m->amax);
}

#ifndef TESTING  // dev/test/test_model.c includes everything above
// ----------------------------------------------------------------------------------------------
// The CPU backend of the shared training loop (llmc/trainer.h), data-parallel over the ranks of
// comm with the ZeRO stage of its plan. One process is the plan with one rank, where every
// slice is the whole model and every collective the identity.
//
// The step's gradient is the sum over ranks of each rank's gradient of loss_scale / W times its
// mean loss: the gradient of the global batch's mean loss. Every stage reduces it with the same
// collectives (comm.h: the summation order of an element depends only on the rank that owns it,
// here its slice), so at one micro-step per step stages 0..3 compute bit-identical gradients,
// norms and (stages 1..3, which also split the update-clipping sums the same way) weights.
// With several micro-steps, stages 0 and 1 add micro-steps first and ranks second, stages 2 and
// 3 the other way round: equal up to fp32 rounding.

typedef struct {
    GPT2 model;
    Zero zero;
    AdamWConfig hp;
    Comm *comm;
} CPUTrainer;

// This rank's slice (from its first element) of a buffer the stage keeps whole or sharded.
static float *own_slice(const CPUTrainer *c, float *buf, int sharded) {
    return sharded ? buf : buf + zero_slice(&c->zero.plan, c->zero.plan.rank).begin;
}
static float *own_params(const CPUTrainer *c) { return own_slice(c, c->model.params, zero_shards_params(&c->zero.plan)); }
static float *own_grads(const CPUTrainer *c) { return own_slice(c, c->model.grads, zero_shards_grads(&c->zero.plan)); }
static float *own_moments(const CPUTrainer *c, float *mv) { return own_slice(c, mv, zero_shards_optimizer(&c->zero.plan)); }

// The buffers of zero_memory(plan); the ZeRO-3 gather scratch follows the parameter slice and
// the ZeRO-2/3 gradient scratch the gradient slice, in the same allocations.
static void cpu_alloc(CPUTrainer *c, const GPT2Config *cfg, int B, int T, const ModelOptions *opt, int stage,
                      Comm *comm) {
    GPT2 *m = &c->model;
    Zero *z = &c->zero;
    gpt2_alloc_activations(m, cfg, B, T, opt);
    zero_plan_init(&z->plan, cfg, stage, comm->rank, comm->size);
    z->cfg = *cfg;
    z->comm = comm;
    z->counts = (size_t *)malloc_check((size_t)comm->size * sizeof(size_t));
    z->gathered_segment = z->scratch_segment[0] = z->scratch_segment[1] = -1;
    ZeroMemory mem = zero_memory(&z->plan);
    m->params = (float *)calloc_check(mem.params, sizeof(float));
    m->grads = (float *)calloc_check(mem.grads, sizeof(float));
    m->m = (float *)calloc_check(mem.optimizer / 2, sizeof(float));
    m->v = (float *)calloc_check(mem.optimizer / 2, sizeof(float));
    if (zero_shards_params(&z->plan)) z->gathered = m->params + z->plan.slice;
    if (zero_shards_grads(&z->plan)) {
        z->grad_scratch[0] = m->grads + z->plan.slice;
        z->grad_scratch[1] = z->grad_scratch[0] + z->plan.embed_numel;
    }
    m->zero = z;
    c->comm = comm;
}

static void cpu_free(CPUTrainer *c) {
    gpt2_free(&c->model);
    free(c->zero.counts);
}

// Where to put the whole model's parameters (from a file or the initialization): the parameter
// buffer itself, or under ZeRO-3 a temporary one that params_commit reduces to this rank's slice.
static float *params_staging(CPUTrainer *c) {
    if (!zero_shards_params(&c->zero.plan)) return c->model.params;
    return (float *)malloc_check(c->model.num_params * sizeof(float));
}

static void params_commit(CPUTrainer *c, float *staging) {
    if (staging == c->model.params) return;
    ZeroRange own = zero_slice_params(&c->zero.plan, c->zero.plan.rank);
    memcpy(c->model.params, staging + own.begin, (own.end - own.begin) * sizeof(float));
    free(staging);
}

// micro_steps goes unused: the CPU trainer reduces the gradient in cpu_grad_norm.
static void cpu_zero_grads(void *self, int micro_steps) {
    CPUTrainer *c = (CPUTrainer *)self;
    size_t n = zero_shards_grads(&c->zero.plan) ? c->zero.plan.slice : c->zero.plan.padded;
    mark(&c->model, PROF_OPTIMIZER);
    memset(c->model.grads, 0, n * sizeof(float));
    mark(&c->model, PROF_HOST);
}

static float cpu_forward_backward(void *self, const int *inputs, const int *targets, float loss_scale) {
    CPUTrainer *c = (CPUTrainer *)self;
    GPT2 *m = &c->model;
    gpt2_forward(m, inputs, targets, m->B, m->T, 1, loss_scale / (float)c->comm->size);
    gpt2_backward(m, m->B, m->T);
    mark(m, PROF_HOST);
    return m->mean_loss;
}

static float cpu_forward_loss(void *self, const int *inputs, const int *targets) {
    GPT2 *m = &((CPUTrainer *)self)->model;
    m->phase = QUANT_PASS_EVAL;
    gpt2_forward(m, inputs, targets, m->B, m->T, 0, 1.0f);
    m->phase = QUANT_PASS_TRAIN;
    return m->mean_loss;
}

static void cpu_next_token_logits(void *self, const int *tokens, int n, float *logits) {
    GPT2 *m = &((CPUTrainer *)self)->model;
    m->phase = QUANT_PASS_EVAL;
    gpt2_forward(m, tokens, NULL, 1, n, 0, 1.0f);
    m->phase = QUANT_PASS_TRAIN;
    const int row = (n - 1) % m->head_rows;  // the last row of the last chunk
    memcpy(logits, m->logits + (size_t)row * m->cfg.padded_vocab_size, (size_t)m->cfg.vocab_size * sizeof(float));
}

// Stage 0 all-reduces the gradient, stage 1 reduce-scatters it (stages 2 and 3 did during the
// backward pass); then the norm: each rank's sum of squares over its slice, summed over ranks.
static double cpu_grad_norm(void *self) {
    CPUTrainer *c = (CPUTrainer *)self;
    const ZeroPlan *p = &c->zero.plan;
    Comm *comm = c->comm;
    mark(&c->model, PROF_GRAD_NORM);
    if (p->stage == 0) comm->allreduce_sum_f32(comm, c->model.grads, p->padded);
    if (p->stage == 1) {
        zero_split(p, (ZeroRange){0, p->padded}, c->zero.counts);
        comm->reduce_scatter_sum_f32(comm, c->model.grads, c->zero.counts);
    }
    ZeroRange own = zero_slice_params(p, p->rank);
    double ss = sum_of_squares(own_grads(c), own.end - own.begin);
    comm->allreduce_sum_f64(comm, &ss, 1);
    mark(&c->model, PROF_HOST);
    return sqrt(ss);
}

// Stage 0: every rank updates every weight. Stages 1..3: each rank its slice, with the update-
// clipping sums completed across ranks; stages 1 and 2 then all-gather the updated weights.
static int cpu_update(void *self, int t, float lr, float grad_scale) {
    CPUTrainer *c = (CPUTrainer *)self;
    GPT2 *m = &c->model;
    const ZeroPlan *p = &c->zero.plan;
    mark(m, PROF_OPTIMIZER);
    int clipped;
    if (p->stage == 0) {
        clipped = adamw_step(&m->cfg, &c->hp, m->params, m->grads, m->m, m->v, 0, m->num_params, t, lr, grad_scale,
                             NULL, NULL);
    } else {
        ZeroRange own = zero_slice_params(p, p->rank);
        clipped = adamw_step(&m->cfg, &c->hp, own_params(c), own_grads(c), m->m, m->v, own.begin, own.end, t, lr,
                             grad_scale, comm_allreduce_sum_f64_fn, c->comm);
        if (!zero_shards_params(p)) {
            zero_split(p, (ZeroRange){0, p->padded}, c->zero.counts);
            c->comm->allgather_f32(c->comm, m->params, c->zero.counts);
        }
    }
    mark(m, PROF_HOST);
    return clipped;
}

// Rank 0 writes the model (under ZeRO-3 assembled segment by segment, every rank taking part in
// the gathers); every rank writes its slice of the AdamW moments. Whatever the stage, state
// file r holds rank r's slice, so any stage and world size can resume from it.
static int cpu_save(void *self, const char *model_path, const char *state_path, const TrainState *st, char *err,
                    size_t errlen) {
    CPUTrainer *c = (CPUTrainer *)self;
    GPT2 *m = &c->model;
    const int main_rank = c->comm->rank == 0;
    float *whole = m->params, *assembled = NULL;
    if (model_shards_weights(m->zero)) {
        if (main_rank) whole = assembled = (float *)malloc_check(m->num_params * sizeof(float));
        for (int seg = 0; seg < c->zero.plan.num_segments; seg++) {
            ZeroRange r = zero_segment(&m->cfg, seg);
            const float *w = zero_gather(m->zero, m->params, seg);
            if (main_rank) memcpy(assembled + r.begin, w, (r.end - r.begin) * sizeof(float));
            zero_release(m->zero, seg);
        }
    }
    TrainState mine = *st;
    mine.model_sum_saved = main_rank;
    int rc = main_rank ? checkpoint_write(model_path, &m->cfg, whole, &mine.model_sum, err, errlen) : 0;
    free(assembled);
    if (rc != 0) return rc;
    mine.amax = m->amax;
    return state_write(state_path, &mine, own_moments(c, m->m), own_moments(c, m->v), NULL, err, errlen);
}

// Reads the AdamW moments of the flat range `need` (zero_optimizer_range) from the checkpoint's
// state files, whatever number of ranks wrote them (llmc/state.h re-slices), into this rank's
// moment buffers.
static void load_moments(CPUTrainer *c, const char *state_path, ZeroRange need, TrainState *st) {
    GPT2 *m = &c->model;
    const size_t dst_first = zero_shards_optimizer(&c->zero.plan) ? zero_slice(&c->zero.plan, c->zero.plan.rank).begin : 0;
    const size_t at = need.end > need.begin ? need.begin - dst_first : 0;  // an empty range writes nothing
    state_read_range(state_path, (int64_t)m->num_params, need.begin, need.end, m->m + at, m->v + at, NULL, st);
}

static void cpu_load(void *self, const char *model_path, const char *state_path, TrainState *st) {
    CPUTrainer *c = (CPUTrainer *)self;
    GPT2 *m = &c->model;
    const ZeroPlan *p = &c->zero.plan;
    float *staging = params_staging(c);
    checkpoint_read_params(model_path, &m->cfg, staging);
    params_commit(c, staging);
    load_moments(c, state_path, zero_optimizer_range(p), st);
    state_restore_amax_history(state_path, p->rank, p->world, &m->amax);
}

static void cpu_profile_take(void *self, double *ms) { wall_timeline_take(&((CPUTrainer *)self)->model.timeline, ms); }

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    blas_kernels_fix(argv);
    TrainConfig tc;
    parse_train_args(&tc, argc, argv);
    if (tc.gelu_fusion > 0)
        usage_error("--gelu-fusion belongs to the GPU trainer (cuBLASLt epilogues); this CPU trainer computes GELU "
                    "in its own loop");
    if (tc.fp8_fast_accum > 0)
        usage_error("--fp8-fast-accum belongs to the GPU trainer (an accumulation mode of Hopper's FP8 tensor cores); "
                    "this CPU trainer's FP8 emulation accumulates in fp32");
    if (tc.attention != ATTENTION_MMA)
        usage_error("--attention %s belongs to the GPU trainer (its CUDA kernels); this CPU trainer computes attention "
                    "in its own loop", attention_kernel_names[tc.attention]);
    Comm comm;
    comm_init(&comm, &argc, &argv);

    GPT2Config cfg;
    const int from_checkpoint = trainer_model_config(&tc, &cfg);
    trainer_check_ranks_agree(&comm, argc, argv, &cfg, from_checkpoint ? tc.model : NULL);

    // Recomputation, matmul precision and the output head's chunks.
    const RecomputeShape shape = cpu_recompute_shape(&cfg, tc.T);
    const double fixed_bytes = sizeof(float) * (double)tc.B * tc.T * cpu_fixed_activation_floats(&cfg);
    int *policies = (int *)malloc_check((size_t)cfg.num_layers * sizeof(int));
    trainer_recompute_plan(&tc, &cfg, &shape, &recompute_device_cpu, fixed_bytes, comm.rank, policies);
    const ModelOptions options = {policies, trainer_matmul_precision(&tc, 0), tc.fp8_wgrad, tc.amax_history,
                                  trainer_head_rows(&tc)};

    CPUTrainer cpu;
    cpu.hp = trainer_adamw_config(&tc);
    cpu_alloc(&cpu, &cfg, tc.B, tc.T, &options, tc.zero_stage, &comm);
    free(policies);
    GPT2 *m = &cpu.model;
    wall_timeline_start(&m->timeline, tc.profile);
    float *staging = params_staging(&cpu);
    trainer_initial_weights(&tc, &cfg, from_checkpoint, staging);
    params_commit(&cpu, staging);

    const ZeroPlan *plan = &cpu.zero.plan;
    if (comm.rank == 0) {
        ZeroMemory mem = zero_memory(plan);
        double mib = sizeof(float) / (double)(1 << 20);
        trainer_print_model(&cfg);
        printf("memory per rank (ZeRO stage %d, %d rank(s)): params %.1f MiB, grads %.1f MiB, AdamW state %.1f MiB, "
               "activations %.1f MiB (counted), scratch %.1f MiB (output head: %d rows at a time); %d threads, %s\n",
               plan->stage, plan->world, mem.params * mib, mem.grads * mib, mem.optimizer * mib, m->acts_floats * mib,
               m->scratch_floats * mib, m->head_rows, omp_get_max_threads(), blas_kernels_description());
        if (m->precision != MATMUL_FP32)
            printf("matmul: the block matmuls emulate %s%s (quantize, dequantize, fp32 matmul)\n",
                   matmul_mode_names[tc.matmul], m->amax.length > 0 ? " with delayed scaling" : "");
        printf("zero: stage %d ranks %d params %zu padded %zu slice %zu max_segment %zu | floats per rank: params %zu "
               "grads %zu optimizer %zu\n", plan->stage, plan->world, plan->num_params, plan->padded, plan->slice,
               plan->max_segment, mem.params, mem.grads, mem.optimizer);
    }
    TrainerBackend backend = {&cpu, cpu_zero_grads, cpu_forward_backward, cpu_forward_loss, cpu_next_token_logits,
                              cpu_grad_norm, cpu_update, cpu_save, cpu_load, cpu_profile_take};
    ZeroRange own = zero_slice_params(plan, comm.rank);
    Trainer trainer = {.tc = &tc, .cfg = &cfg, .backend = &backend, .comm = &comm, .num_params = (int64_t)m->num_params,
                       .shard_begin = (int64_t)own.begin, .shard_end = (int64_t)own.end,
                       .flops_per_token = trainer_flops_per_token(&cfg, tc.T),
                       .peak_flops = tc.peak_tflops * 1e12};  // MFU only when --peak-tflops gives the CPU's peak
    trainer_run(&trainer);
    cpu_free(&cpu);
    comm.finalize(&comm);
    return 0;
}
#endif
