// Selective activation recomputation: per layer, what the forward pass keeps for the backward
// pass and what the backward pass recomputes. A policy is a set of these bits:
//   RC_NORM   drop the LayerNorm outputs ln1, ln2; recompute them from the kept input, mean, rstd
//   RC_GELU   drop the GELU output; recompute it from the kept fc pre-activation
//   RC_ATTN   drop the attention output and probabilities; keep q, k, v and the softmax
//             statistics (log-sum-exp per row) and redo the attention forward in backward
//   RC_MLP    keep only the MLP input (residual2); recompute ln2, fc, GELU
//   RC_BLOCK  keep only the block's input (the previous block's output); recompute the block
// A block's output (residual3) is always kept: it is the next block's input.
//
// Memory is counted in activation elements per token (multiply by B*T and the element size);
// recompute work in FLOPs per token, counting a matmul of m x k by k x n as 2mkn, and in seconds
// per token at the rates a trainer's device was measured to run each kind of work at
// (RecomputeDevice). The budget planner minimizes the seconds: FLOPs alone rank the work wrongly,
// because LayerNorm and GELU are bound by memory, not arithmetic, and the fused attention runs at
// a fraction of the matmuls' rate (on an H100, `norm` costs more time per byte it frees than
// `gelu`, where FLOPs rank it 3x cheaper; the attention forward ran at 140 TFLOP/s, the matmuls
// at 630).
#ifndef LLMC_RECOMPUTE_H
#define LLMC_RECOMPUTE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { RC_NONE = 0, RC_NORM = 1, RC_GELU = 2, RC_ATTN = 4, RC_MLP = 8, RC_BLOCK = 16 };

// "none", "gelu", "norm", "attn", "mlp", "block" or combinations joined by '+' ("norm+gelu").
// Returns 0 and the canonical policy (MLP implies GELU and the ln2 half of NORM is recomputed;
// BLOCK implies everything), or -1.
int recompute_parse_policy(const char *s, int *policy);
// Canonical name of a policy, e.g. "attn+gelu"; buf of at least 32 bytes.
const char *recompute_policy_name(int policy, char *buf, size_t n);
// "0-5:block,6-11:gelu" (ranges may be single layers, must cover every layer 0..L-1 exactly
// once). Returns 0, or -1 with a one-line reason in err.
int recompute_parse_list(const char *s, int L, int *policies, char *err, size_t errlen);

// The buffers of a block's forward pass that a policy may drop (the block output, residual3, is
// always kept). RB_ATT_KEPT is what the attention keeps for its backward pass beyond its
// statistics (the CPU's probabilities), RB_ATT_STATS its statistics (the GPU's log-sum-exp,
// which the recomputation under RC_ATTN reads too).
typedef enum {
    RB_LN1, RB_LN1_STATS, RB_QKV, RB_ATT_OUT, RB_ATT_KEPT, RB_ATT_STATS, RB_RESIDUAL2,
    RB_LN2, RB_LN2_STATS, RB_FCH, RB_FCH_GELU
} RecomputeBuffer;
// Whether a layer under `policy` keeps buffer b from its forward pass to its backward pass: the
// one definition both trainers allocate by and the cost model counts.
int recompute_keeps(int policy, RecomputeBuffer b);

// The shapes the cost model needs, and what the attention keeps for its backward pass, per head
// and token: att_kept beyond its statistics when it is not recomputed (T probabilities on the
// CPU, none for the fused GPU kernel), att_stats whether recomputed or not (none on the CPU,
// which recomputes the softmax from q and k alone; 1 log-sum-exp on the GPU).
// stats_width: activation elements one statistic takes (a LayerNorm mean or rstd, what the
// attention keeps): 1 where they share the activations' type (the CPU, all fp32), 2 for fp32
// statistics beside bf16 activations (the GPU), so that elements * element_bytes is the bytes.
// input_codes: activation elements one byte takes (1 / element_bytes) where the inputs of the four
// block linears are kept as the transposed FP8 codes their weight gradients read (the GPU with
// --fp8-wgrad 1): ln1, ln2 and the GELU output then as codes alone (their bf16 values serve
// nothing else in the backward pass), the attention output as codes beside its bf16 values (the
// attention backward reads those); 0 where the inputs are kept as activations.
typedef struct {
    int C, NH, T;
    int att_kept_per_head_token;
    int att_stats_per_head_token;
    int stats_width;
    double element_bytes;  // bytes of one activation element
    double input_codes;
} RecomputeShape;

// How fast a trainer does each kind of recompute work on a device, fitted to measurements
// (dev/test/recompute/test_plan.c keeps them and checks the fit): the block matmuls, the attention
// forward, and the memory a LayerNorm and a GELU move (each reads its input and writes its output
// once).
typedef struct {
    const char *name;  // where the rates were measured, printed with a plan
    double matmul_flops_per_s;
    double attention_flops_per_s;
    double layernorm_bytes_per_s;
    double gelu_bytes_per_s;
} RecomputeDevice;
// The GPU trainer's (bf16, fused attention) on an H100 and the CPU trainer's (fp32, OpenBLAS,
// OpenMP) on 2 cores.
extern const RecomputeDevice recompute_device_h100;
extern const RecomputeDevice recompute_device_cpu;

// Activation elements per token one layer keeps under `policy` (the block output included).
double recompute_layer_elements(const RecomputeShape *s, int policy);
// Extra forward FLOPs per token the backward pass spends recomputing under `policy`.
double recompute_layer_flops(const RecomputeShape *s, int policy);
// The seconds per token the same recomputation takes on device d.
double recompute_layer_seconds(const RecomputeShape *s, const RecomputeDevice *d, int policy);

// The steps of a block's forward pass, in order. The backward pass of a block first reruns the
// steps whose outputs its policy did not keep (recompute_steps), with the forward's functions on
// the same inputs, which gives the same bits.
enum {
    RC_STEP_LN1 = 1, RC_STEP_QKV = 2, RC_STEP_ATTN = 4, RC_STEP_ATTPROJ = 8,
    RC_STEP_LN2 = 16, RC_STEP_FC = 32, RC_STEP_GELU = 64, RC_STEP_FCPROJ = 128, RC_ALL_STEPS = 255
};
// What the backward pass of a block under `policy` recomputes before it starts (the block output,
// RC_STEP_FCPROJ's, is always kept).
int recompute_steps(int policy);

// Chooses a policy per layer (L of them into policies) whose total activation elements per
// token stay within budget_elements and whose total recompute time on device d is least. Returns
// 0, or -1 when even recomputing every block does not fit.
int recompute_plan_budget(const RecomputeShape *s, const RecomputeDevice *d, int L, double budget_elements,
                          int *policies);

#ifdef __cplusplus
}
#endif
#endif
