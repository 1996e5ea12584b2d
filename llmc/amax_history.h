// FP8 delayed scaling: for every quantized operand (a block linear's activation, weight or
// gradient), a ring of its amaxes over the last H training micro-steps; the scale of a micro-step
// comes from the largest of them instead of the tensor's own amax, so no pass over the tensor is
// needed before its cast. The semantics, which the GPU's lowp_quantize (llmc/matmul_lowp.cuh)
// implements on the device and train_gpt.c on the host:
//   micro-step s = 0 (nothing recorded yet): scale from the tensor's current amax;
//   micro-step s > 0: scale from max(ring) (NaN if any entry is NaN, so a diverged step shows);
//   a training micro-step records its current amax into slot s % H, overwriting step s - H;
//   validation and sampling read the ring without recording.
// The ring is part of the training state (llmc/state.h), so a resumed run scales as the
// uninterrupted one did.
#ifndef LLMC_AMAX_HISTORY_H
#define LLMC_AMAX_HISTORY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// What a forward pass does with FP8 scales, on both trainers: a training micro-step's forward
// computes them (and with delayed scaling records this step's amaxes), validation and sampling
// compute them without recording, and the backward pass's recompute of a block replays the scales
// its forward used (so it computes the same bits and changes no state).
typedef enum { QUANT_PASS_TRAIN = 0, QUANT_PASS_EVAL, QUANT_PASS_REPLAY } quant_pass;

// Limits a state file's header may claim (a d1024 model has 12 * 1024 operands).
#define AMAX_MAX_OPERANDS (1 << 20)
#define AMAX_MAX_LENGTH 1024

typedef struct {
    int32_t operands, length;  // number of operands, H (0: no delayed scaling)
    int64_t steps;             // training micro-steps recorded so far
    float *values;             // [operands][length], slot steps % length is the next to write
} AmaxHistory;

// Allocates a zeroed ring (length 0: an empty history that holds nothing).
void amax_history_init(AmaxHistory *h, int operands, int length);
void amax_history_free(AmaxHistory *h);
// The amax operand op's scale comes from in this micro-step (`current`: the tensor's own amax,
// used before the first recorded step).
float amax_history_amax(const AmaxHistory *h, int op, float current);
// This training micro-step's amax of operand op goes into its slot.
void amax_history_record(AmaxHistory *h, int op, float amax);
// The training micro-step's forward and backward are done: the next one writes the next slot.
void amax_history_step_done(AmaxHistory *h);
// Forgets every amax: the next micro-step scales from current amaxes again.
void amax_history_reset(AmaxHistory *h);

#ifdef __cplusplus
}
#endif
#endif
