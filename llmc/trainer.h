// The training loop shared by the CPU and the GPU trainer. It owns everything that is not
// arithmetic: data loading, the learning-rate schedule, gradient accumulation, outlier and NaN
// skipping, validation, sampling, logging, checkpoint naming and resume. The arithmetic (the
// model's forward and backward, gradient reduction across ranks, the optimizer, the checkpoint
// payloads) comes from a TrainerBackend, implemented by train_gpt.c (CPU) and train_gpt.cu (GPU).
//
// Checkpoint at step s in the output directory: model_<s>.bin (rank 0), state_<s>_<rank>.bin (each
// rank), then DONE_<s> (rank 0, after a barrier): a checkpoint is complete when its marker exists.
// A directory holds one run: a new run (no -y 1) refuses an output directory that holds markers.
//
// Faults it survives (llmc/fault.h for the mechanisms):
//   - SIGTERM/SIGINT: the step in progress finishes, a checkpoint is written (with -o), and
//     trainer_run returns 0; a second signal exits at once. -y 1 then resumes bit for bit.
//   - a checkpoint that cannot be written (ENOSPC...): its partial files are removed, the older
//     checkpoints stay, and the run goes on with a warning or, with -nf 1, stops with exit 1.
//   - -nk N keeps the newest N complete checkpoints; older ones (and torn leftovers) are deleted
//     after each successful save. Temporaries of a killed writer are removed at startup.
//   - a non-finite loss or gradient norm, or a z-score spike (-sl/-sg): the update is skipped,
//     counted and logged; -sm K stops the run (exit 1) after K skipped updates in a row.
//   - -w S: a step (with its validation, sampling and checkpoint) that takes longer than S seconds
//     exits 124 naming the step and its phase.
#ifndef LLMC_TRAINER_H
#define LLMC_TRAINER_H

#include <stddef.h>

#include "args.h"
#include "comm.h"
#include "model.h"
#include "optimizer.h"
#include "quant.h"
#include "recompute.h"
#include "state.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    void *self;
    // Zeroes the gradient accumulators at the start of an optimizer step of micro_steps
    // forward_backward calls (the GPU trainer reduces the gradient across ranks during the last
    // one's backward pass).
    void (*zero_grads)(void *self, int micro_steps);
    // Forward and backward of one B x T micro-batch, accumulating the gradient of
    // loss_scale * (mean loss); returns this rank's mean loss of the micro-batch.
    float (*forward_backward)(void *self, const int *inputs, const int *targets, float loss_scale);
    // Mean loss of one B x T micro-batch without gradients (validation).
    float (*forward_loss)(void *self, const int *inputs, const int *targets);
    // Logits of the last of n tokens (1 <= n <= T), V floats into logits (sampling).
    void (*next_token_logits)(void *self, const int *tokens, int n, float *logits);
    // Completes the step's gradient (the reduction across ranks) and returns its global norm.
    double (*grad_norm)(void *self);
    // AdamW step t (from 1); returns how many tensors update clipping slowed.
    int (*update)(void *self, int t, float lr, float grad_scale);
    // Writes this rank's part of a checkpoint (rank 0 also the model file) to the given paths.
    // Returns 0, or -1 with a message in err.
    int (*save)(void *self, const char *model_path, const char *state_path, const TrainState *st, char *err, size_t errlen);
    // Loads a checkpoint written by save; fills st.
    void (*load)(void *self, const char *model_path, const char *state_path, TrainState *st);
    // --profile (llmc/profile.h): adds the time of each part since the last call to
    // ms[NUM_PROF_PARTS] (NULL: drops it); the part running from now on is PROF_HOST.
    void (*profile_take)(void *self, double *ms);
} TrainerBackend;

typedef struct {
    const TrainConfig *tc;
    const GPT2Config *cfg;
    TrainerBackend *backend;
    Comm *comm;
    int64_t num_params;
    int64_t shard_begin, shard_end;  // this rank's slice of the optimizer state (whole model without ZeRO)
    double flops_per_token;          // model FLOPs per token (trainer_flops_per_token), for MFU
    double peak_flops;               // the device's peak FLOP/s; 0 shows no MFU
} Trainer;

// Model FLOPs per token of a training step: 6 N for the matmuls with the N parameters (forward 2,
// backward 4) plus attention's QK^T and PV, 12 L C T (the PaLM convention: the causal mask's
// saving is not subtracted).
double trainer_flops_per_token(const GPT2Config *cfg, int T);

// The recompute policy of every layer from -r, --recompute or --mem-budget (at most one of them;
// exit 2 on a bad value or a budget nothing fits). For the budget, fixed_bytes are the activations
// outside the blocks, and the plan is the fastest at device's rates. Rank 0 prints the plan with
// its predicted activation memory, extra recompute FLOPs and time.
void trainer_recompute_plan(const TrainConfig *tc, const GPT2Config *cfg, const RecomputeShape *shape,
                            const RecomputeDevice *device, double fixed_bytes, int rank, int *policies);
// The output head (logits = lnf wte^T, the cross-entropy, and in a training forward already the
// head's backward: dlogits, d lnf and the tied head's part of d wte) runs over the B*T rows in
// chunks of this many rows, so that only one chunk's logits exist at a time and the backward
// pass keeps d lnf (C per row) instead of the logits (Vp per row). Both trainers, from
// --head-chunk: its value, at most B*T; by default HEAD_CHUNK_ROWS. The chunk size is one for
// every recompute policy, since the head's d wte sums its rows chunk by chunk (fp32 rounding):
// policies give the same bits only at the same chunk size. 8192 rows of GPT-2's logits take
// 786 MiB in bf16 (d12 at B 16 T 1024: 2 chunks instead of 1.5 GiB in one); each more chunk
// costs one more pass over d wte's fp32 accumulator (V C floats).
#define HEAD_CHUNK_ROWS 8192
int trainer_head_rows(const TrainConfig *tc);
// --matmul auto is fp32 on the CPU and bf16 on a GPU; --fp8-wgrad, --amax-history and
// --fp8-fast-accum without fp8 are usage errors.
matmul_precision trainer_matmul_precision(const TrainConfig *tc, int gpu);

// The model the flags describe: -e as a description (d12, L4C256NH4; random initialization with
// --max-seq-len and --vocab-size) or a checkpoint file. Checks -t against maxT (exit 2). Returns 1
// when -e is a checkpoint to load, 0 for a random initialization.
int trainer_model_config(const TrainConfig *tc, GPT2Config *cfg);
// Under mpirun, every rank must run the same command on the same model: a rank with another -l
// would train a replica that drifts silently from the others, one with another model would fail
// in its first collective. Compares the arguments, the model's shape and the checksum of the -e
// checkpoint (NULL for a random model) with rank 0's; when any rank differs, rank 0 says so and
// every rank exits 2.
void trainer_check_ranks_agree(Comm *comm, int argc, char **argv, const GPT2Config *cfg, const char *checkpoint);
// The starting weights (layer-major, gpt2_num_params floats): the checkpoint's when
// from_checkpoint (trainer_model_config's answer), else the seeded GPT-2 initialization.
void trainer_initial_weights(const TrainConfig *tc, const GPT2Config *cfg, int from_checkpoint, float *weights);
// AdamW's hyperparameters from the flags (--beta1, --beta2, --eps, -c, --grad-clip, --update-clip).
AdamWConfig trainer_adamw_config(const TrainConfig *tc);
// The start-up line "model: L=.. C=.. NH=.. maxT=.. V=.. Vp=.., N parameters".
void trainer_print_model(const GPT2Config *cfg);

// Validates the batch flags against the model (exit 2 with a message), then trains. Returns 0,
// also when a stop signal ended the run early (the message says so).
int trainer_run(Trainer *t);

#ifdef __cplusplus
}
#endif
#endif
