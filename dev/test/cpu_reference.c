// See cpu_reference.h. train_gpt.c without its main() (TESTING), wrapped.
#define TESTING
#include "../../train_gpt.c"

#include "cpu_reference.h"

struct CpuModel {
    GPT2 gpt;
    float *quant;  // the low-precision operand buffers cpu_model_set_matmul adds
};

CpuModel *cpu_model_new(const GPT2Config *cfg, int B, int T) {
    CpuModel *m = (CpuModel *)malloc_check(sizeof(CpuModel));
    gpt2_alloc(&m->gpt, cfg, B, T);
    m->quant = NULL;
    return m;
}

void cpu_model_set_matmul(CpuModel *m, matmul_precision precision, int fp8_wgrad, int amax_history) {
    GPT2 *g = &m->gpt;
    const size_t C = g->cfg.channels, BT = (size_t)g->B * g->T;
    const size_t n = BT * 4 * C > 4 * C * C ? BT * 4 * C : 4 * C * C;  // as gpt2_alloc_activations
    if (!m->quant && !g->quant_a) {
        m->quant = (float *)malloc_check(2 * n * sizeof(float));
        g->quant_a = m->quant;
        g->quant_b = m->quant + n;
    }
    g->precision = precision;
    g->fp8_wgrad = fp8_wgrad;
    amax_history_free(&g->amax);
    amax_history_init(&g->amax, g->amax.operands, precision == MATMUL_FP8 ? amax_history : 0);
}

void cpu_model_free(CpuModel *m) {
    free(m->quant);
    gpt2_free(&m->gpt);
    free(m);
}

float *cpu_model_params(CpuModel *m) { return m->gpt.params; }
const float *cpu_model_grads(const CpuModel *m) { return m->gpt.grads; }
const float *cpu_model_logits(const CpuModel *m) { return m->gpt.logits; }

float cpu_model_forward_eval(CpuModel *m, const int *inputs, const int *targets) {
    m->gpt.phase = QUANT_PASS_EVAL;
    gpt2_forward(&m->gpt, inputs, targets, m->gpt.B, m->gpt.T, 0, 1.0f);
    m->gpt.phase = QUANT_PASS_TRAIN;
    return m->gpt.mean_loss;
}

float cpu_model_forward_backward(CpuModel *m, const int *inputs, const int *targets, float loss_scale) {
    gpt2_forward(&m->gpt, inputs, targets, m->gpt.B, m->gpt.T, 1, loss_scale);
    gpt2_backward(&m->gpt, m->gpt.B, m->gpt.T);
    return m->gpt.mean_loss;
}

void cpu_model_zero_grads(CpuModel *m) { memset(m->gpt.grads, 0, m->gpt.num_params * sizeof(float)); }

double cpu_model_grad_norm(const CpuModel *m) { return gpt2_grad_norm(&m->gpt); }

int cpu_model_update(CpuModel *m, const AdamWConfig *hp, int t, float lr, float grad_scale) {
    GPT2 *g = &m->gpt;
    return adamw_step(&g->cfg, hp, g->params, g->grads, g->m, g->v, 0, g->num_params, t, lr, grad_scale, NULL, NULL);
}
