#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <stddef.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "utils.h"

typedef enum { OPT_INT, OPT_INT64, OPT_U64, OPT_FLOAT, OPT_STRING, OPT_ENUM, OPT_SWITCH } OptType;

const char *const matmul_mode_names[NUM_MATMUL_MODES] = {"auto", "fp32", "bf16", "fp8", "int8"};
const char *const attention_kernel_names[NUM_ATTENTION_KERNELS] = {"mma",     "wgmma",     "wgmma-fwd", "mma-rt2",
                                                                   "mma-rdq", "wgmma-rdq", "wgmma-ws"};

typedef struct {
    const char *flag;   // short form, e.g. "-b"
    const char *name;   // long form without dashes, e.g. "batch"
    OptType type;
    const char *const *names;  // OPT_ENUM: the accepted values, stored as their index
    size_t offset;      // field in TrainConfig
    double min, max;    // valid range for numbers
    const char *help;
} Option;

#define F(field) offsetof(TrainConfig, field)
static const Option kOptions[] = {
    {"-i", "train", OPT_STRING, NULL, F(train_pattern), 0, 0, "glob of training token shards"},
    {"-j", "val", OPT_STRING, NULL, F(val_pattern), 0, 0, "glob of validation token shards"},
    {"-o", "out", OPT_STRING, NULL, F(output_dir), 0, 0, "output directory for checkpoints and main.log (\"\" for none)"},
    {"-e", "model", OPT_STRING, NULL, F(model), 0, 0, "d<depth> or L<l>C<c>NH<h> for a random GPT-2, or a checkpoint .bin"},
    {"-y", "resume", OPT_INT, NULL, F(resume), 0, 1, "1: resume from the newest complete checkpoint in -o"},
    {"-b", "batch", OPT_INT, NULL, F(B), 1, 1 << 20, "micro-batch size in sequences"},
    {"-t", "seq-len", OPT_INT, NULL, F(T), 1, 1 << 20, "sequence length (at most the model's maxT)"},
    {"-d", "total-batch", OPT_INT64, NULL, F(total_batch), 0, 1e12, "tokens per optimizer step (0: B*T*ranks); a multiple of B*T*ranks"},
    {"-x", "steps", OPT_INT, NULL, F(max_steps), -1, 1 << 30, "optimizer steps (-1: one pass over the training data)"},
    {"-l", "lr", OPT_FLOAT, NULL, F(lr), 0, 10, "peak learning rate"},
    {"-u", "warmup", OPT_INT, NULL, F(warmup), 0, 1 << 30, "learning-rate warmup steps"},
    {"-q", "final-lr-frac", OPT_FLOAT, NULL, F(final_frac), 0, 1, "final learning rate as a fraction of -l"},
    {"-k", "schedule", OPT_ENUM, lr_schedule_names, F(schedule), 0, NUM_LR_SCHEDULES - 1, "learning-rate schedule: cosine, linear, constant or wsd"},
    {"-c", "weight-decay", OPT_FLOAT, NULL, F(weight_decay), 0, 10, "AdamW weight decay (2-D weights only)"},
    {NULL, "beta1", OPT_FLOAT, NULL, F(beta1), 0, 0.999999, "AdamW beta1"},
    {NULL, "beta2", OPT_FLOAT, NULL, F(beta2), 0, 0.999999, "AdamW beta2"},
    {NULL, "eps", OPT_FLOAT, NULL, F(eps), 1e-30, 1, "AdamW epsilon"},
    {NULL, "grad-clip", OPT_FLOAT, NULL, F(grad_clip), 0, 1e9, "global gradient-norm clipping threshold (0: off)"},
    {NULL, "update-clip", OPT_FLOAT, NULL, F(update_clip), 0, 1e9, "StableAdamW update-clipping threshold (0: off)"},
    {"-sl", "skip-loss-z", OPT_FLOAT, NULL, F(skip_loss_z), 0, 1e9, "skip the update when the loss z-score exceeds this (0: off)"},
    {"-sg", "skip-norm-z", OPT_FLOAT, NULL, F(skip_norm_z), 0, 1e9, "skip the update when the grad-norm z-score exceeds this (0: off)"},
    {"-sm", "max-skips", OPT_INT, NULL, F(max_skips), 0, 1 << 30, "stop with an error after this many skipped updates in a row (0: never)"},
    {"-nk", "keep-ckpts", OPT_INT, NULL, F(keep_ckpts), 0, 1 << 30, "keep only the newest this many complete checkpoints (0: all)"},
    {"-nf", "stop-on-save-error", OPT_INT, NULL, F(stop_on_save_error), 0, 1, "1: a checkpoint that cannot be written stops the run (exit 1); 0: warn, go on"},
    {"-w", "watchdog", OPT_INT, NULL, F(watchdog_s), 0, 1 << 30, "exit 124 naming the phase when a step takes longer than this many seconds (0: off)"},
    {NULL, "seed", OPT_U64, NULL, F(seed), 0, 0, "seed of the initialization and of sampling"},
    {NULL, "max-seq-len", OPT_INT, NULL, F(max_seq_len), 1, 1 << 20, "maxT of a randomly initialized model"},
    {NULL, "vocab-size", OPT_INT, NULL, F(vocab_size), 1, 1 << 24, "V of a randomly initialized model"},
    {"-v", "val-every", OPT_INT, NULL, F(val_every), 0, 1 << 30, "validation loss every this many steps (0: off)"},
    {"-m", "val-batches", OPT_INT, NULL, F(val_batches), 0, 1 << 30, "micro-batches per validation (at most what the shards hold)"},
    {"-s", "sample-every", OPT_INT, NULL, F(sample_every), 0, 1 << 30, "print a sample every this many steps (0: off)"},
    {"-g", "gen-tokens", OPT_INT, NULL, F(gen_tokens), 0, 1 << 20, "tokens per sample (at most T - 1)"},
    {"-n", "ckpt-every", OPT_INT, NULL, F(ckpt_every), -1, 1 << 30, "checkpoint every this many steps and after the last (-1: after the last only; 0: off)"},
    {"-z", "zero", OPT_INT, NULL, F(zero_stage), 0, 3, "ZeRO stage under mpirun: 0 all-reduce, 1 shard optimizer, 2 + gradients, 3 + parameters"},
    {NULL, "tokenizer", OPT_STRING, NULL, F(tokenizer_dir), 0, 0, "directory with encoder.json and vocab.bpe"},
    {NULL, "matmul", OPT_ENUM, matmul_mode_names, F(matmul), 0, NUM_MATMUL_MODES - 1, "precision of the block matmuls: auto (fp32 on the CPU, bf16 on a GPU), fp32, bf16, fp8, int8"},
    {NULL, "fp8-wgrad", OPT_INT, NULL, F(fp8_wgrad), 0, 1, "1: the weight-gradient matmul in FP8 too (E5M2 x E4M3)"},
    {NULL, "amax-history", OPT_INT, NULL, F(amax_history), 0, 1024, "FP8 delayed scaling from the max amax of this many micro-steps (0: current scaling)"},
    {NULL, "fp8-fast-accum", OPT_INT, NULL, F(fp8_fast_accum), 0, 2, "GPU, --matmul fp8: cuBLASLt's fast accumulation (the GEMM never promotes its partial sums to fp32: faster, less exact): 0 off, 1 the forward GEMMs, 2 every FP8 GEMM"},
    {"-r", "recompute-level", OPT_STRING, NULL, F(recompute_level), 0, 0, "recompute policy of every layer: none, gelu, norm, attn, mlp, block, or a+b"},
    {NULL, "recompute", OPT_STRING, NULL, F(recompute_list), 0, 0, "recompute policies by layer range, e.g. 0-5:block,6-11:gelu"},
    {NULL, "mem-budget", OPT_FLOAT, NULL, F(mem_budget_gib), 0, 1e6, "budget in GiB for the activations kept for the backward pass: choose the cheapest recompute plan that fits (0: off)"},
    {NULL, "head-chunk", OPT_INT, NULL, F(head_chunk), 0, 1 << 30, "rows of the output head's logits computed at once; the head's loss and backward run chunk by chunk in the forward pass (0: 8192)"},
    {NULL, "gelu-fusion", OPT_INT, NULL, F(gelu_fusion), -1, 2, "GPU, bf16 or fp8 block matmuls: GELU in the cuBLASLt epilogues: 0 off, 1 gelu' in the fc projection's input gradient, 2 also the fc forward (not in layers that recompute the GELU alone); -1: 1 with bf16 block matmuls, else 0"},
    {NULL, "attention", OPT_ENUM, attention_kernel_names, F(attention), 0, NUM_ATTENTION_KERNELS - 1, "GPU attention kernels: mma (mma.sync, sm_80 and later), wgmma (Hopper's warpgroup MMA: compute capability 9.0, a build for sm_90a, head size 64), wgmma-fwd (the wgmma forward, head size 64 or 128, with the mma.sync backward), mma-rt2 (mma.sync, the backward with 2 row tiles per warp at head size 64: the same bits as mma), mma-rdq (mma.sync, the backward making dQ in its dK/dV kernel by integer reduction: deterministic, dQ rounded differently from mma), wgmma-rdq (wgmma, head size 64, its backward making dQ by integer reduction: dQ rounded differently from wgmma) or wgmma-ws (warp-specialized, head size 64: FlashAttention-3's forward, with out rounded differently from wgmma's, and wgmma-rdq's backward, dQ rounded differently again)"},
    {NULL, "peak-tflops", OPT_FLOAT, NULL, F(peak_tflops), 0, 1e6, "peak TFLOP/s for MFU (0: a GPU's from its name; train_gpt shows MFU only when given)"},
    {NULL, "bench", OPT_SWITCH, NULL, F(bench), 0, 0, "time steps on random tokens (no data, logs or checkpoints); prints bench_tokens_per_s"},
    {NULL, "profile", OPT_SWITCH, NULL, F(profile), 0, 0, "print the time per step of each part (matmuls, attention, head, optimizer, ...) at the end: wall clock on the CPU, CUDA events on a GPU"},
};
#undef F
#define NUM_OPTIONS (sizeof(kOptions) / sizeof(kOptions[0]))

void train_config_defaults(TrainConfig *c) {
    memset(c, 0, sizeof(*c));
    c->train_pattern = "data/nlpcorpus/nlpcorpus_train_*.bin";
    c->val_pattern = "data/nlpcorpus/nlpcorpus_val_*.bin";
    c->output_dir = "";
    c->model = "d12";
    c->tokenizer_dir = "data/gpt2";
    c->recompute_level = "none";
    c->recompute_list = "";
    c->B = 4;
    c->T = 1024;
    c->max_steps = -1;
    c->lr = 3e-4f;
    c->warmup = 0;
    c->final_frac = 1.0f;
    c->schedule = LR_COSINE;
    c->weight_decay = 0.0f;
    c->beta1 = 0.9f;
    c->beta2 = 0.95f;
    c->eps = 1e-8f;
    c->grad_clip = 1.0f;
    c->update_clip = 1.0f;
    c->seed = 1337;
    c->max_seq_len = 1024;
    c->vocab_size = 50257;
    c->val_every = 20;
    c->val_batches = 20;
    c->sample_every = 20;
    c->gen_tokens = 64;
    c->ckpt_every = -1;
    c->max_skips = 10;
    c->gelu_fusion = -1;
}

static void print_help(FILE *out) {
    TrainConfig d;
    train_config_defaults(&d);
    fprintf(out, "usage: %s [flags]\n\nTrains a GPT-2 model. Flags (default in brackets):\n", program_name());
    for (size_t i = 0; i < NUM_OPTIONS; i++) {
        const Option *o = &kOptions[i];
        char forms[48];
        snprintf(forms, sizeof(forms), "%s%s--%s", o->flag ? o->flag : "", o->flag ? ", " : "    ", o->name);
        char def[64] = "";
        const char *field = (const char *)&d + o->offset;
        switch (o->type) {
        case OPT_INT: snprintf(def, sizeof(def), "%d", *(const int *)field); break;
        case OPT_INT64: snprintf(def, sizeof(def), "%" PRId64, *(const int64_t *)field); break;
        case OPT_U64: snprintf(def, sizeof(def), "%" PRIu64, *(const uint64_t *)field); break;
        case OPT_FLOAT: snprintf(def, sizeof(def), "%g", *(const float *)field); break;
        case OPT_STRING: snprintf(def, sizeof(def), "\"%s\"", *(const char *const *)field); break;
        case OPT_ENUM: snprintf(def, sizeof(def), "%s", o->names[*(const int *)field]); break;
        case OPT_SWITCH: snprintf(def, sizeof(def), "off"); break;
        }
        fprintf(out, "  %-22s %s [%s]\n", forms, o->help, def);
    }
    fprintf(out, "  -h, --help             this help\n");
}

static const char *flag_label(const Option *o, char *buf, size_t n) {
    if (o->flag) snprintf(buf, n, "%s (--%s)", o->flag, o->name);
    else snprintf(buf, n, "--%s", o->name);
    return buf;
}

static void set_value(TrainConfig *cfg, const Option *o, const char *value) {
    char label[48];
    flag_label(o, label, sizeof(label));
    char *field = (char *)cfg + o->offset;
    char *end = NULL;
    errno = 0;
    switch (o->type) {
    case OPT_INT:
    case OPT_INT64: {
        long long x = strtoll(value, &end, 10);
        if (end == value || *end != '\0' || errno || x < o->min || x > o->max)
            usage_error("%s: '%s' is not an integer in [%.0f, %.0f]", label, value, o->min, o->max);
        if (o->type == OPT_INT) *(int *)field = (int)x;
        else *(int64_t *)field = (int64_t)x;
        break;
    }
    case OPT_U64: {
        unsigned long long x = strtoull(value, &end, 10);
        if (!isdigit((unsigned char)value[0]) || *end != '\0' || errno)  // strtoull takes " -1" as 2^64 - 1
            usage_error("%s: '%s' is not an integer in [0, 18446744073709551615]", label, value);
        *(uint64_t *)field = (uint64_t)x;
        break;
    }
    case OPT_FLOAT: {
        double x = strtod(value, &end);
        if (end == value || *end != '\0' || errno || !isfinite(x) || x < o->min || x > o->max)
            usage_error("%s: '%s' is not a number in [%g, %g]", label, value, o->min, o->max);
        // fp32 would hold it as 0 (for most of these flags "off") or a subnormal.
        if (x != 0 && fabs(x) < FLT_MIN)
            usage_error("%s: '%s' is below fp32's smallest normal number %g, so it would be 0 or subnormal", label,
                        value, FLT_MIN);
        *(float *)field = (float)x;
        break;
    }
    case OPT_STRING: *(const char **)field = value; break;
    case OPT_ENUM: {
        char list[256] = "";
        for (int k = 0; k <= (int)o->max; k++) {
            if (strcmp(value, o->names[k]) == 0) { *(int *)field = k; return; }
            size_t used = strlen(list);
            snprintf(list + used, sizeof(list) - used, "%s%s", k ? ", " : "", o->names[k]);
        }
        usage_error("%s: '%s' is not one of %s", label, value, list);
    }
    case OPT_SWITCH: break;
    }
}

static int is_help(const char *arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0; }

// The option that arg names (-b, --batch or --batch=4, then *inline_value = "4"), or NULL.
static const Option *find_option(const char *arg, const char **inline_value) {
    *inline_value = NULL;
    for (size_t k = 0; k < NUM_OPTIONS; k++) {
        const Option *c = &kOptions[k];
        if (c->flag && strcmp(arg, c->flag) == 0) return c;
        if (arg[0] == '-' && arg[1] == '-') {
            size_t n = strlen(c->name);
            if (strncmp(arg + 2, c->name, n) == 0 && (arg[2 + n] == '\0' || arg[2 + n] == '=')) {
                if (arg[2 + n] == '=') *inline_value = arg + 3 + n;
                return c;
            }
        }
    }
    return NULL;
}

void parse_train_args(TrainConfig *cfg, int argc, char **argv) {
    train_config_defaults(cfg);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (is_help(arg)) {
            print_help(stdout);
            exit(0);
        }
        const char *inline_value;
        const Option *o = find_option(arg, &inline_value);
        if (!o && arg[0] != '-')  // most often a glob the shell expanded into several files
            usage_error("unexpected argument '%s' (every flag takes one value; quote the globs of -i and -j so that "
                        "the shell does not expand them)", arg);
        if (!o) usage_error("unknown flag '%s'", arg);
        if (o->type == OPT_SWITCH) {
            if (inline_value) usage_error("--%s takes no value", o->name);
            *(int *)((char *)cfg + o->offset) = 1;
            continue;
        }
        if (!inline_value) {
            char label[48];
            const char *unused;
            // "-o -s 0" or "-o --profile": the value is missing, not a directory named like a flag.
            if (i + 1 >= argc || is_help(argv[i + 1]) || find_option(argv[i + 1], &unused))
                usage_error("%s needs a value", flag_label(o, label, sizeof(label)));
            inline_value = argv[++i];
        }
        set_value(cfg, o, inline_value);
    }
    // Combinations no single range can state.
    if (cfg->max_steps == 0)
        usage_error("-x (--steps): 0 steps would train nothing: give 1 or more, or -1 for one pass over the training data");
    // Both trainers count a micro-batch's tokens in an int (the product would overflow).
    if ((int64_t)cfg->B * cfg->T > INT_MAX)
        usage_error("-b (--batch) %d x -t (--seq-len) %d = %lld tokens per micro-step: at most %d", cfg->B, cfg->T,
                    (long long)cfg->B * cfg->T, INT_MAX);
    if (cfg->resume && !cfg->output_dir[0]) usage_error("-y (--resume) 1 needs an output directory (-o)");
    if (cfg->resume && cfg->bench)
        usage_error("--bench times a random model on random tokens and writes nothing: it does not resume (-y 1)");
    if (cfg->bench && cfg->output_dir[0])
        usage_error("--bench times a random model on random tokens and writes nothing: it takes no output directory "
                    "(-o %s)", cfg->output_dir);
    // Room for "/state_<8 digits>_<5 digits>.bin.tmp.<pid>" in a 4096-byte path.
    if (strlen(cfg->output_dir) > 4000)
        usage_error("-o (--out): the path is %zu bytes; checkpoint paths in it must stay under 4096",
                    strlen(cfg->output_dir));
}

void print_train_config(const TrainConfig *cfg, FILE *out) {
    for (size_t i = 0; i < NUM_OPTIONS; i++) {
        const Option *o = &kOptions[i];
        const char *field = (const char *)cfg + o->offset;
        fprintf(out, "%-14s ", o->name);
        switch (o->type) {
        case OPT_INT: case OPT_SWITCH: fprintf(out, "%d\n", *(const int *)field); break;
        case OPT_INT64: fprintf(out, "%" PRId64 "\n", *(const int64_t *)field); break;
        case OPT_U64: fprintf(out, "%" PRIu64 "\n", *(const uint64_t *)field); break;
        case OPT_FLOAT: fprintf(out, "%g\n", *(const float *)field); break;
        case OPT_STRING: fprintf(out, "%s\n", *(const char *const *)field); break;
        case OPT_ENUM: fprintf(out, "%s\n", o->names[*(const int *)field]); break;
        }
    }
}
