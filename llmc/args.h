// The command line of both trainers: one table of flags, their defaults, ranges and help.
// Flags take the llm.c style (-b 4) or a long form (--batch 4 or --batch=4). A bad value exits
// with status 2 and one line naming the flag and its valid range.
#ifndef LLMC_ARGS_H
#define LLMC_ARGS_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// --matmul: AUTO is fp32 on the CPU and bf16 on a GPU.
enum MatmulMode { MATMUL_MODE_AUTO, MATMUL_MODE_FP32, MATMUL_MODE_BF16, MATMUL_MODE_FP8, MATMUL_MODE_INT8, NUM_MATMUL_MODES };
extern const char *const matmul_mode_names[NUM_MATMUL_MODES];
// --attention: the GPU trainer's attention kernels (llmc/attention.cuh); the CPU trainer has one.
// WGMMA_FORWARD: the wgmma forward with the mma.sync backward; the *_RDQ ones: the backward making dQ
// by integer reduction in its dK/dV kernel (WGMMA_RDQ with the wgmma forward); WGMMA_WS: the same
// backward warp-specialized (a producer warp, two consumer warpgroups).
enum AttentionKernel {
    ATTENTION_MMA, ATTENTION_WGMMA, ATTENTION_WGMMA_FORWARD, ATTENTION_MMA_RT2, ATTENTION_MMA_RDQ, ATTENTION_WGMMA_RDQ,
    ATTENTION_WGMMA_WS, NUM_ATTENTION_KERNELS
};
extern const char *const attention_kernel_names[NUM_ATTENTION_KERNELS];

typedef struct {
    // data and files
    const char *train_pattern;  // -i  glob of training shards
    const char *val_pattern;    // -j  glob of validation shards
    const char *output_dir;     // -o  checkpoints and main.log; "" for none
    const char *model;          // -e  d12, L4C256NH4 (random init) or a checkpoint path
    const char *tokenizer_dir;  // --tokenizer  encoder.json and vocab.bpe for printing samples
    int resume;                 // -y  1: continue from the newest complete checkpoint in -o
    // batch and length
    int B;                      // -b  micro-batch size (sequences)
    int T;                      // -t  sequence length
    int64_t total_batch;        // -d  tokens per optimizer step; 0 means B*T*ranks
    int max_steps;              // -x  optimizer steps; -1 means one pass over the training data
    // optimization
    float lr;                   // -l
    int warmup;                 // -u  warmup steps
    float final_frac;           // -q  final lr as a fraction of -l
    int schedule;               // -k  enum LRSchedule
    float weight_decay;         // -c
    float beta1, beta2, eps;    // --beta1 --beta2 --eps
    float grad_clip;            // --grad-clip  global-norm threshold, 0 = off
    float update_clip;          // --update-clip  StableAdamW threshold, 0 = off
    float skip_loss_z;          // -sl  skip the update when the loss z-score exceeds this, 0 = off
    float skip_norm_z;          // -sg  same for the gradient norm
    // fault tolerance
    int max_skips;              // -sm  stop (exit 1) after this many skipped updates in a row, 0 = never
    int keep_ckpts;             // -nk  keep the newest this many complete checkpoints, 0 = all
    int stop_on_save_error;     // -nf  1: a checkpoint that cannot be written stops the run
    int watchdog_s;             // -w   a step longer than this many seconds exits 124, 0 = off
    uint64_t seed;              // --seed  initialization and sampling
    // random initialization only
    int max_seq_len;            // --max-seq-len
    int vocab_size;             // --vocab-size
    // evaluation, sampling and checkpoints (0 turns each off)
    int val_every;              // -v
    int val_batches;            // -m
    int sample_every;           // -s
    int gen_tokens;             // -g
    int ckpt_every;             // -n  every this many steps and after the last; -1: after the last only; 0: off
    int zero_stage;             // -z  ZeRO stage 0..3 (sharding across the ranks of mpirun)
    // measurement
    int bench;                  // --bench  random tokens, no files; prints bench_tokens_per_s
    int profile;                // --profile  time per step of each part (llmc/profile.h), printed at the end
    float peak_tflops;          // --peak-tflops  for MFU; 0 = known GPUs by name
    // low-precision matmuls (llmc/quant.h)
    int matmul;                 // --matmul  enum MatmulMode
    int fp8_wgrad;              // --fp8-wgrad  1: the weight-gradient matmul in FP8 too
    int amax_history;           // --amax-history  FP8 delayed scaling window, 0 = current scaling
    int fp8_fast_accum;         // --fp8-fast-accum  GPU: cuBLASLt fast accumulation (0 off, 1 forward, 2 every FP8 GEMM)
    int gelu_fusion;            // --gelu-fusion  GPU: GELU in cuBLASLt epilogues (0 off, 1 backward, 2 both; -1 auto)
    int attention;              // --attention  GPU: enum AttentionKernel
    // selective recomputation (llmc/recompute.h); at most one of these is not the default
    const char *recompute_level;  // -r  one policy for every layer
    const char *recompute_list;   // --recompute  policies by layer range
    float mem_budget_gib;         // --mem-budget  choose the plan from an activation budget
    int head_chunk;               // --head-chunk  rows of output-head logits at once, 0 = default (trainer_head_rows)
} TrainConfig;

// Fills cfg from argv (defaults first). Prints help and exits 0 on -h; exits 2 on a bad flag.
void parse_train_args(TrainConfig *cfg, int argc, char **argv);
// Every field at its default (what parse_train_args starts from).
void train_config_defaults(TrainConfig *cfg);
// The whole configuration, one "name value" pair per line, for the log.
void print_train_config(const TrainConfig *cfg, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
