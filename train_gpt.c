// CPU reference trainer for GPT-2: the model's forward and backward in fp32, parallel with OpenMP,
// matmuls through OpenBLAS. It is the correctness oracle for the GPU trainer and the default job
// on a machine without a GPU. The shared, non-arithmetic parts (flags, model description, files,
// data, schedule, optimizer, logging) live in llmc/.
//
// Shapes: B sequences of T tokens, C channels, NH heads of HS = C / NH, vocabulary V padded to Vp.
// Activations are row-major (B, T, channels); linear weights are (out, in) as torch.nn.Linear.
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmc/args.h"
#include "llmc/checkpoint.h"
#include "llmc/comm.h"
#include "llmc/model.h"
#include "llmc/optimizer.h"
#include "llmc/rng.h"
#include "llmc/state.h"
#include "llmc/trainer.h"
#include "llmc/utils.h"

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

// y = (x - mean) * rstd * w + b over the C channels of each of the N rows; keeps mean and rstd.
static void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                              int N, int C) {
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
        float s = 1.0f / sqrtf(v + eps);
        float *o = out + (size_t)i * C;
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * w[c] + b[c];
        mean[i] = m;
        rstd[i] = s;
    }
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
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC, weight, IC, 0.0f, out, OC);
    if (!bias) return;
    #pragma omp parallel for
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++) out[(size_t)i * OC + o] += bias[o];
}

// dinp (N, IC) = dout @ weight (overwritten); dweight += dout^T @ inp; dbias += column sums of dout.
static void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                            const float *weight, int N, int IC, int OC) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, dout, OC, weight, IC, 0.0f, dinp, IC);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f, dweight, IC);
    if (!dbias) return;
    #pragma omp parallel
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int o0 = (int)((long)OC * id / nt), o1 = (int)((long)OC * (id + 1) / nt);
        for (int i = 0; i < N; i++)
            for (int o = o0; o < o1; o++) dbias[o] += dout[(size_t)i * OC + o];
    }
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
                    const float *k = qkv + ((size_t)b * T + s) * C3 + C + h * HS;
                    float dot = 0.0f;
                    for (int i = 0; i < HS; i++) dot += q[i] * k[i];
                    a[s] = dot * scale;
                    if (a[s] > maxv) maxv = a[s];
                }
                float sum = 0.0f;
                for (int s = 0; s <= t; s++) {
                    a[s] = expf(a[s] - maxv);
                    sum += a[s];
                }
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
                        float dot = 0.0f;
                        for (int i = 0; i < HS; i++) {
                            dot += dy[i] * v[i];
                            dv[i] += a[s] * dy[i];
                        }
                        dp[s] = dot;
                        rowsum += a[s] * dot;
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

// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
#define GELU_SCALE 0.7978845608028654f  // sqrt(2 / pi)
static void gelu_forward(float *out, const float *inp, size_t n) {
    #pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALE * (x + 0.044715f * x * x * x)));
    }
}

// d = dout * gelu'(x), written over dout.
static void gelu_backward_inplace(float *d, const float *inp, size_t n) {
    #pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        float th = tanhf(u), sech2 = 1.0f - th * th;
        float grad = 0.5f * (1.0f + th) + 0.5f * x * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        d[i] *= grad;
    }
}

static void residual_forward(float *out, const float *a, const float *b, size_t n) {
    #pragma omp parallel for
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

// Cross-entropy over the first V of the Vp logits of each row; losses (N) per position.
static void crossentropy_forward(float *losses, const float *logits, const int *targets, int N, int V, int Vp) {
    #pragma omp parallel for
    for (int i = 0; i < N; i++) {
        const float *l = logits + (size_t)i * Vp;
        float maxv = -INFINITY;
        for (int j = 0; j < V; j++) maxv = fmaxf(maxv, l[j]);
        float sum = 0.0f;
        for (int j = 0; j < V; j++) sum += expf(l[j] - maxv);
        losses[i] = logf(sum) + maxv - l[targets[i]];
    }
}

// logits become dlogits = (softmax - onehot(target)) * dloss in place; padded columns get 0.
static void crossentropy_softmax_backward_inplace(float *logits, const int *targets, float dloss, int N, int V, int Vp) {
    #pragma omp parallel for
    for (int i = 0; i < N; i++) {
        float *l = logits + (size_t)i * Vp;
        float maxv = -INFINITY;
        for (int j = 0; j < V; j++) maxv = fmaxf(maxv, l[j]);
        float sum = 0.0f;
        for (int j = 0; j < V; j++) {
            l[j] = expf(l[j] - maxv);
            sum += l[j];
        }
        float inv = 1.0f / sum;
        for (int j = 0; j < V; j++) l[j] = l[j] * inv * dloss;
        l[targets[i]] -= dloss;
        for (int j = V; j < Vp; j++) l[j] = 0.0f;
    }
}

// ----------------------------------------------------------------------------------------------
// The model

typedef struct {  // what one block keeps for its backward pass
    float *ln1, *ln1_mean, *ln1_rstd;  // (B,T,C), (B,T), (B,T)
    float *qkv;                        // (B,T,3C)
    float *atty;                       // (B,T,C) attention output before the projection
    float *att;                        // (B,NH,T,T) softmax probabilities
    float *residual2;                  // (B,T,C) residual after attention
    float *ln2, *ln2_mean, *ln2_rstd;
    float *fch, *fch_gelu;             // (B,T,4C) fc pre-activation and GELU output
    float *residual3;                  // (B,T,C) block output
} BlockActs;

typedef struct {
    GPT2Config cfg;
    size_t num_params;
    float *params, *grads, *m, *v;
    int B, T;                         // capacity of the activation buffers
    float *acts_memory;
    size_t acts_floats;
    float *encoded;                   // (B,T,C)
    BlockActs *blocks;                // L of them
    float *lnf, *lnf_mean, *lnf_rstd;
    float *logits;                    // (B,T,Vp), dlogits in place during backward
    float *losses;                    // (B,T)
    float *scratch_memory;            // backward scratch, shared by all layers
    float *dresidual, *dbtc, *dqkv, *dfch;
    int *inputs, *targets;            // the micro-batch of the last forward
    float mean_loss;
} GPT2;

static float *param(GPT2 *m, float *base, int kind, int layer) { return base + gpt2_param_offset(&m->cfg, kind, layer); }

static void gpt2_alloc(GPT2 *m, const GPT2Config *cfg, int B, int T) {
    memset(m, 0, sizeof(*m));
    m->cfg = *cfg;
    m->num_params = gpt2_num_params(cfg);
    m->params = (float *)malloc_check(m->num_params * sizeof(float));
    m->grads = (float *)calloc_check(m->num_params, sizeof(float));
    m->m = (float *)calloc_check(m->num_params, sizeof(float));
    m->v = (float *)calloc_check(m->num_params, sizeof(float));
    m->B = B;
    m->T = T;
    size_t L = cfg->num_layers, C = cfg->channels, NH = cfg->num_heads, BT = (size_t)B * T;
    size_t per_block = BT * (C + 2 + 3 * C + C + C + 2 + 4 * C + 4 * C + C + C) + (size_t)B * NH * T * T;
    m->acts_floats = BT * C + L * per_block + BT * (C + 2) + BT * cfg->padded_vocab_size + BT;
    m->acts_memory = (float *)malloc_check(m->acts_floats * sizeof(float));
    float *p = m->acts_memory;
#define TAKE(n) (p += (n), p - (n))
    m->encoded = TAKE(BT * C);
    m->blocks = (BlockActs *)malloc_check(L * sizeof(BlockActs));
    for (size_t l = 0; l < L; l++) {
        BlockActs *a = &m->blocks[l];
        a->ln1 = TAKE(BT * C);
        a->ln1_mean = TAKE(BT);
        a->ln1_rstd = TAKE(BT);
        a->qkv = TAKE(BT * 3 * C);
        a->atty = TAKE(BT * C);
        a->att = TAKE((size_t)B * NH * T * T);
        a->residual2 = TAKE(BT * C);
        a->ln2 = TAKE(BT * C);
        a->ln2_mean = TAKE(BT);
        a->ln2_rstd = TAKE(BT);
        a->fch = TAKE(BT * 4 * C);
        a->fch_gelu = TAKE(BT * 4 * C);
        a->residual3 = TAKE(BT * C);
    }
    m->lnf = TAKE(BT * C);
    m->lnf_mean = TAKE(BT);
    m->lnf_rstd = TAKE(BT);
    m->logits = TAKE(BT * cfg->padded_vocab_size);
    m->losses = TAKE(BT);
    if ((size_t)(p - m->acts_memory) != m->acts_floats) die("internal error: activation layout");
    size_t scratch = BT * C * 2 + BT * 3 * C + BT * 4 * C;
    m->scratch_memory = (float *)malloc_check(scratch * sizeof(float));
    p = m->scratch_memory;
    m->dresidual = TAKE(BT * C);
    m->dbtc = TAKE(BT * C);
    m->dqkv = TAKE(BT * 3 * C);
    m->dfch = TAKE(BT * 4 * C);
#undef TAKE
    m->inputs = (int *)malloc_check(BT * sizeof(int));
    m->targets = (int *)malloc_check(BT * sizeof(int));
}

static void gpt2_free(GPT2 *m) {
    free(m->params); free(m->grads); free(m->m); free(m->v);
    free(m->acts_memory); free(m->blocks); free(m->scratch_memory);
    free(m->inputs); free(m->targets);
}

// Forward over B x T tokens (at most the allocated capacity). With targets, also the mean loss.
static void gpt2_forward(GPT2 *m, const int *inputs, const int *targets, int B, int T) {
    const GPT2Config *c = &m->cfg;
    const int C = c->channels, NH = c->num_heads, V = c->vocab_size, Vp = c->padded_vocab_size, N = B * T;
    float *P = m->params;
    memcpy(m->inputs, inputs, (size_t)N * sizeof(int));
    encoder_forward(m->encoded, inputs, param(m, P, PT_WTE, -1), param(m, P, PT_WPE, -1), B, T, C);
    const float *residual = m->encoded;
    for (int l = 0; l < c->num_layers; l++) {
        BlockActs *a = &m->blocks[l];
        layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, residual, param(m, P, PT_LN1W, l), param(m, P, PT_LN1B, l), N, C);
        matmul_forward(a->qkv, a->ln1, param(m, P, PT_QKVW, l), param(m, P, PT_QKVB, l), N, C, 3 * C);
        attention_forward(a->atty, a->att, a->qkv, B, T, C, NH);
        matmul_forward(a->residual2, a->atty, param(m, P, PT_ATTPROJW, l), param(m, P, PT_ATTPROJB, l), N, C, C);
        residual_forward(a->residual2, a->residual2, residual, (size_t)N * C);
        layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->residual2, param(m, P, PT_LN2W, l), param(m, P, PT_LN2B, l), N, C);
        matmul_forward(a->fch, a->ln2, param(m, P, PT_FCW, l), param(m, P, PT_FCB, l), N, C, 4 * C);
        gelu_forward(a->fch_gelu, a->fch, (size_t)N * 4 * C);
        matmul_forward(a->residual3, a->fch_gelu, param(m, P, PT_FCPROJW, l), param(m, P, PT_FCPROJB, l), N, 4 * C, C);
        residual_forward(a->residual3, a->residual3, a->residual2, (size_t)N * C);
        residual = a->residual3;
    }
    layernorm_forward(m->lnf, m->lnf_mean, m->lnf_rstd, residual, param(m, P, PT_LNFW, -1), param(m, P, PT_LNFB, -1), N, C);
    matmul_forward(m->logits, m->lnf, param(m, P, PT_WTE, -1), NULL, N, C, Vp);
    if (!targets) return;
    memcpy(m->targets, targets, (size_t)N * sizeof(int));
    crossentropy_forward(m->losses, m->logits, targets, N, V, Vp);
    double sum = 0.0;
    for (int i = 0; i < N; i++) sum += m->losses[i];
    m->mean_loss = (float)(sum / N);
}

// Backward of the last forward (which had targets), accumulating into m->grads the gradient of
// loss_scale * (mean loss). Gradient accumulation over k micro-steps uses loss_scale = 1/k.
static void gpt2_backward(GPT2 *m, int B, int T, float loss_scale) {
    const GPT2Config *c = &m->cfg;
    const int C = c->channels, NH = c->num_heads, V = c->vocab_size, Vp = c->padded_vocab_size, N = B * T;
    float *P = m->params, *G = m->grads;
    crossentropy_softmax_backward_inplace(m->logits, m->targets, loss_scale / (float)N, N, V, Vp);
    const float *last = c->num_layers > 0 ? m->blocks[c->num_layers - 1].residual3 : m->encoded;
    matmul_backward(m->dbtc, param(m, G, PT_WTE, -1), NULL, m->logits, m->lnf, param(m, P, PT_WTE, -1), N, C, Vp);
    memset(m->dresidual, 0, (size_t)N * C * sizeof(float));
    layernorm_backward(m->dresidual, param(m, G, PT_LNFW, -1), param(m, G, PT_LNFB, -1), m->dbtc, last,
                       param(m, P, PT_LNFW, -1), m->lnf_mean, m->lnf_rstd, N, C);
    for (int l = c->num_layers - 1; l >= 0; l--) {
        BlockActs *a = &m->blocks[l];
        const float *residual = l == 0 ? m->encoded : m->blocks[l - 1].residual3;
        // MLP: residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))); dresidual holds d residual3.
        matmul_backward(m->dfch, param(m, G, PT_FCPROJW, l), param(m, G, PT_FCPROJB, l), m->dresidual, a->fch_gelu,
                        param(m, P, PT_FCPROJW, l), N, 4 * C, C);
        gelu_backward_inplace(m->dfch, a->fch, (size_t)N * 4 * C);
        matmul_backward(m->dbtc, param(m, G, PT_FCW, l), param(m, G, PT_FCB, l), m->dfch, a->ln2,
                        param(m, P, PT_FCW, l), N, C, 4 * C);
        layernorm_backward(m->dresidual, param(m, G, PT_LN2W, l), param(m, G, PT_LN2B, l), m->dbtc, a->residual2,
                           param(m, P, PT_LN2W, l), a->ln2_mean, a->ln2_rstd, N, C);
        // Attention: residual2 = residual + attproj(attention(qkv(ln1(residual)))); dresidual = d residual2.
        matmul_backward(m->dbtc, param(m, G, PT_ATTPROJW, l), param(m, G, PT_ATTPROJB, l), m->dresidual, a->atty,
                        param(m, P, PT_ATTPROJW, l), N, C, C);
        attention_backward(m->dqkv, m->dbtc, a->qkv, a->att, B, T, C, NH);
        matmul_backward(m->dbtc, param(m, G, PT_QKVW, l), param(m, G, PT_QKVB, l), m->dqkv, a->ln1,
                        param(m, P, PT_QKVW, l), N, C, 3 * C);
        layernorm_backward(m->dresidual, param(m, G, PT_LN1W, l), param(m, G, PT_LN1B, l), m->dbtc, residual,
                           param(m, P, PT_LN1W, l), a->ln1_mean, a->ln1_rstd, N, C);
    }
    encoder_backward(param(m, G, PT_WTE, -1), param(m, G, PT_WPE, -1), m->dresidual, m->inputs, B, T, C);
}

static double gpt2_grad_norm(const GPT2 *m) { return sqrt(sum_of_squares(m->grads, m->num_params)); }

#ifndef TESTING  // dev/test/test_model.c includes everything above
// ----------------------------------------------------------------------------------------------
// The CPU backend of the shared training loop (llmc/trainer.h)

typedef struct {
    GPT2 model;
    AdamWConfig hp;
} CPUTrainer;

static void cpu_zero_grads(void *self) {
    GPT2 *m = &((CPUTrainer *)self)->model;
    memset(m->grads, 0, m->num_params * sizeof(float));
}

static float cpu_forward_backward(void *self, const int *inputs, const int *targets, float loss_scale) {
    GPT2 *m = &((CPUTrainer *)self)->model;
    gpt2_forward(m, inputs, targets, m->B, m->T);
    gpt2_backward(m, m->B, m->T, loss_scale);
    return m->mean_loss;
}

static float cpu_forward_loss(void *self, const int *inputs, const int *targets) {
    GPT2 *m = &((CPUTrainer *)self)->model;
    gpt2_forward(m, inputs, targets, m->B, m->T);
    return m->mean_loss;
}

static void cpu_next_token_logits(void *self, const int *tokens, int n, float *logits) {
    GPT2 *m = &((CPUTrainer *)self)->model;
    gpt2_forward(m, tokens, NULL, 1, n);
    memcpy(logits, m->logits + (size_t)(n - 1) * m->cfg.padded_vocab_size, (size_t)m->cfg.vocab_size * sizeof(float));
}

static double cpu_grad_norm(void *self) { return gpt2_grad_norm(&((CPUTrainer *)self)->model); }

static int cpu_update(void *self, int t, float lr, float grad_scale) {
    CPUTrainer *c = (CPUTrainer *)self;
    GPT2 *m = &c->model;
    return adamw_step(&m->cfg, &c->hp, m->params, m->grads, m->m, m->v, 0, m->num_params, t, lr, grad_scale, NULL, NULL);
}

static int cpu_save(void *self, const char *model_path, const char *state_path, const TrainState *st, char *err,
                    size_t errlen) {
    GPT2 *m = &((CPUTrainer *)self)->model;
    if (checkpoint_write(model_path, &m->cfg, m->params, err, errlen) != 0) return -1;
    return state_write(state_path, st, m->m, m->v, NULL, err, errlen);
}

static void cpu_load(void *self, const char *model_path, const char *state_path, TrainState *st) {
    GPT2 *m = &((CPUTrainer *)self)->model;
    GPT2Config saved;
    checkpoint_read_config(model_path, &saved);
    if (memcmp(&saved, &m->cfg, sizeof(saved)) != 0) die("'%s' holds a different model than -e describes", model_path);
    checkpoint_read_params(model_path, &m->cfg, m->params);
    TrainState header;
    int has_master;
    state_read_header(state_path, &header, &has_master);
    if (header.num_params != (int64_t)m->num_params || header.begin != 0 || header.end != (int64_t)m->num_params)
        die("'%s' was written for another model or sharding", state_path);
    state_read(state_path, st, m->m, m->v, NULL);
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    TrainConfig tc;
    parse_train_args(&tc, argc, argv);
    Comm comm;
    comm_init(&comm, &argc, &argv);

    // The model: a description for random initialization, or a checkpoint.
    GPT2Config cfg;
    int from_checkpoint = gpt2_config_from_string(tc.model, &cfg) != 0;
    if (from_checkpoint) {
        if (tc.bench) usage_error("--bench needs a model description for -e (such as d12 or L4C256NH4), not a file");
        checkpoint_read_config(tc.model, &cfg);
    } else {
        cfg.max_seq_len = tc.max_seq_len;
        cfg.vocab_size = tc.vocab_size;
        cfg.padded_vocab_size = gpt2_pad_vocab(tc.vocab_size);
        const char *bad = gpt2_config_error(&cfg);
        if (bad) usage_error("-e (--model) '%s': %s", tc.model, bad);
    }
    if (tc.T > cfg.max_seq_len) usage_error("-t (--seq-len): %d is larger than the model's maxT %d", tc.T, cfg.max_seq_len);

    CPUTrainer cpu;
    cpu.hp = (AdamWConfig){tc.beta1, tc.beta2, tc.eps, tc.weight_decay, tc.grad_clip, tc.update_clip};
    GPT2 *m = &cpu.model;
    gpt2_alloc(m, &cfg, tc.B, tc.T);
    if (from_checkpoint) checkpoint_read_params(tc.model, &cfg, m->params);
    else gpt2_init_params(&cfg, m->params, tc.seed);

    if (comm.rank == 0) {
        double mib = 1.0 / (1 << 20), pbytes = (double)m->num_params * sizeof(float);
        printf("model: L=%d C=%d NH=%d maxT=%d V=%d Vp=%d, %zu parameters\n", cfg.num_layers, cfg.channels,
               cfg.num_heads, cfg.max_seq_len, cfg.vocab_size, cfg.padded_vocab_size, m->num_params);
        printf("memory: params %.1f MiB, grads %.1f MiB, AdamW state %.1f MiB, activations %.1f MiB; %d threads\n",
               pbytes * mib, pbytes * mib, 2 * pbytes * mib, (double)m->acts_floats * sizeof(float) * mib,
               omp_get_max_threads());
    }
    TrainerBackend backend = {&cpu, cpu_zero_grads, cpu_forward_backward, cpu_forward_loss, cpu_next_token_logits,
                              cpu_grad_norm, cpu_update, cpu_save, cpu_load};
    Trainer trainer = {&tc, &cfg, &backend, &comm, (int64_t)m->num_params, 0, (int64_t)m->num_params};
    trainer_run(&trainer);
    gpt2_free(m);
    comm.finalize(&comm);
    return 0;
}
#endif
