// The CPU reference model (train_gpt.c, fp32) behind a small C interface, so that test_gpt.cu
// (C++/CUDA, compiled by nvcc) can run it beside the GPU trainer. cpu_reference.c includes
// train_gpt.c and is compiled by gcc with the Makefile's flags (OpenMP, OpenBLAS).
#ifndef DEV_TEST_CPU_REFERENCE_H
#define DEV_TEST_CPU_REFERENCE_H

#include "../../llmc/model.h"
#include "../../llmc/optimizer.h"
#include "../../llmc/quant.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CpuModel CpuModel;

// A model with activations for B x T tokens; parameters uninitialized, gradients and AdamW
// moments zero.
CpuModel *cpu_model_new(const GPT2Config *cfg, int B, int T);
void cpu_model_free(CpuModel *m);
// Layer-major (llmc/model.h), gpt2_num_params floats each.
float *cpu_model_params(CpuModel *m);
const float *cpu_model_grads(const CpuModel *m);
// (B, T, Vp) logits of the last cpu_model_forward_eval (the model computes the output head in
// one chunk of all B*T rows).
const float *cpu_model_logits(const CpuModel *m);
// A validation forward with targets (with FP8 delayed scaling it records no amax); returns the
// mean loss.
float cpu_model_forward_eval(CpuModel *m, const int *inputs, const int *targets);
// A training micro-step (it records amaxes): gradients += d(loss_scale * mean loss); returns the
// mean loss.
float cpu_model_forward_backward(CpuModel *m, const int *inputs, const int *targets, float loss_scale);
void cpu_model_zero_grads(CpuModel *m);
double cpu_model_grad_norm(const CpuModel *m);
// Later forward and backward passes emulate `precision` in the four block matmuls (train_gpt.c's
// linear_forward / linear_backward: llmc/quant.h fake quantization with power-of-two scales from
// the current amax, or with amax_history H > 0 from the amax history of the last H micro-steps
// (llmc/amax_history.h); fp8_wgrad: the weight gradient from E5M2(dout) and E4M3(input)).
void cpu_model_set_matmul(CpuModel *m, matmul_precision precision, int fp8_wgrad, int amax_history);
// AdamW step t (from 1) of llmc/optimizer.h; returns the number of clipped tensors.
int cpu_model_update(CpuModel *m, const AdamWConfig *hp, int t, float lr, float grad_scale);

#ifdef __cplusplus
}
#endif
#endif
