#include "trainer.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "dataloader.h"
#include "fault.h"
#include "fileio.h"
#include "logger.h"
#include "optimizer.h"
#include "outlier.h"
#include "profile.h"
#include "rng.h"
#include "schedule.h"
#include "tokenizer.h"
#include "utils.h"

// mkdir -p: creates dir and any missing parents.
static void make_output_dir(const char *dir) {
    char path[4096];
    snprintf(path, sizeof(path), "%s", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            die("cannot create the output directory '%s': %s", path, strerror(errno));
        *p = saved;
        if (!saved) break;
    }
    char probe[4096];
    snprintf(probe, sizeof(probe), "%s/.write_test.%d", dir, (int)getpid());
    FILE *f = fopen(probe, "w");
    if (!f) die("the output directory '%s' is not writable: %s", dir, strerror(errno));
    fclose(f);
    unlink(probe);
}

// Checkpoint file names. A name's step, or -1 when it is not one of ours; *is_marker tells DONE_.
static long checkpoint_file_step(const char *name, int *is_marker) {
    long step = -1;
    int rank, end = 0;
    *is_marker = 0;
    if (sscanf(name, "DONE_%8ld%n", &step, &end) == 1 && end > 0 && name[end] == '\0') {
        *is_marker = 1;
        return step;
    }
    end = 0;
    if (sscanf(name, "model_%8ld.bin%n", &step, &end) == 1 && end > 0 && name[end] == '\0') return step;
    end = 0;
    if (sscanf(name, "state_%8ld_%5d.bin%n", &step, &rank, &end) == 2 && end > 0 && name[end] == '\0') return step;
    return -1;
}

static void checkpoint_paths(const char *dir, long step, int rank, char *model, char *state, char *done, size_t n) {
    snprintf(model, n, "%s/model_%08ld.bin", dir, step);
    snprintf(state, n, "%s/state_%08ld_%05d.bin", dir, step, rank);
    snprintf(done, n, "%s/DONE_%08ld", dir, step);
}

// A checkpoint's model file must be the one written with its state: a model file copied from
// another step or run passes its own checksum, and would silently train on from weights whose
// moments, data position and step are not theirs. Rank 0's state file records the model's
// checksum (checkpoints from before it existed are not checked).
static void check_model_matches_state(const char *dir, long step, const TrainState *st) {
    char model[4096], state[4096], done[4096];
    checkpoint_paths(dir, step, 0, model, state, done, sizeof(model));
    uint64_t sum;
    if (st->model_sum_saved && (!checkpoint_stored_sum(model, &sum) || sum != st->model_sum))
        die("'%s' is not the model file written with '%s': it was replaced, or copied from another step or run", model,
            state);
}

static void remove_file(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (unlink(path) != 0 && errno != ENOENT)
        fprintf(stderr, "%s: warning: cannot remove '%s': %s\n", program_name(), path, strerror(errno));
}

static int compare_steps_descending(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x < y) - (x > y);
}

// The steps that have a DONE_<step> marker in dir, newest first, in a malloc'ed array (NULL if none).
static long *complete_checkpoints(const char *dir, int *count) {
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    long *steps = NULL;
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int is_marker;
        long step = checkpoint_file_step(e->d_name, &is_marker);
        if (step < 0 || !is_marker) continue;
        if (*count == cap) {
            cap = cap ? 2 * cap : 16;
            steps = (long *)realloc_check(steps, (size_t)cap * sizeof(long));
        }
        steps[(*count)++] = step;
    }
    closedir(d);
    if (*count > 1) qsort(steps, (size_t)*count, sizeof(long), compare_steps_descending);
    return steps;
}

// The newest step with a DONE_<step> marker in dir, or -1.
static long newest_complete_checkpoint(const char *dir) {
    int n;
    long *steps = complete_checkpoints(dir, &n);
    long newest = n > 0 ? steps[0] : -1;
    free(steps);
    return newest;
}

// Deletes every checkpoint file older than the keep newest complete checkpoints (torn ones too,
// such as the leftovers of an interrupted deletion), so the newest complete one always stays.
// Markers go first, in a pass of their own: a checkpoint stops being complete before its files
// go, so a kill in the middle never leaves a marker that names missing files.
static void prune_checkpoints(const char *dir, int keep) {
    int n;
    long *steps = complete_checkpoints(dir, &n);
    long oldest_kept = n > keep ? steps[keep - 1] : -1;
    free(steps);
    if (oldest_kept < 0) return;
    for (int markers = 1; markers >= 0; markers--) {
        DIR *d = opendir(dir);
        if (!d) return;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            int is_marker;
            long step = checkpoint_file_step(e->d_name, &is_marker);
            if (step >= 0 && step < oldest_kept && is_marker == markers) remove_file(dir, e->d_name);
        }
        closedir(d);
    }
}

// Removes the temporaries of checkpoint files that a killed run was writing (fileio.h).
static void remove_stale_temporaries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int is_marker;
        char final_name[256];
        const char *tag = strstr(e->d_name, ".tmp.");
        if (!tag || !is_atomic_temporary(e->d_name) || (size_t)(tag - e->d_name) >= sizeof(final_name)) continue;
        memcpy(final_name, e->d_name, (size_t)(tag - e->d_name));
        final_name[tag - e->d_name] = '\0';
        if (checkpoint_file_step(final_name, &is_marker) >= 0) remove_file(dir, e->d_name);
    }
    closedir(d);
}

// Writes the checkpoint of `step` on every rank; returns 0 when it is complete, the same answer
// on every rank. On failure (a full disk, say) the step's partial files are removed, so that they
// neither take the space nor pass for a checkpoint, and the previous checkpoints stay untouched.
static int save_checkpoint(Trainer *t, int step, const TrainState *st) {
    const char *dir = t->tc->output_dir;
    const int main_rank = t->comm->rank == 0;
    char model[4096], state[4096], done[4096], err[512] = "";
    watchdog_set_phase(PHASE_CHECKPOINT);
    // No marker exists for this step: a new run refuses a directory with markers, and a resumed
    // one writes only steps after the newest marker (trainer_run).
    checkpoint_paths(dir, step, t->comm->rank, model, state, done, sizeof(model));
    int rc = t->backend->save(t->backend->self, model, state, st, err, sizeof(err));
    if (rc != 0) fprintf(stderr, "%s: warning: checkpoint at step %d not written: %s\n", program_name(), step, err);
    double failed = rc != 0;
    t->comm->allreduce_sum_f64(t->comm, &failed, 1);  // the marker only when every rank succeeded
    if (failed == 0 && main_rank) {
        AtomicFile af;
        if (atomic_open(&af, done) != 0 || atomic_commit(&af) != 0) {
            fprintf(stderr, "%s: warning: checkpoint at step %d not completed: %s\n", program_name(), step, af.error);
            failed = 1;
            rc = -1;
        }
    }
    t->comm->broadcast_bytes(t->comm, &failed, sizeof(failed));
    if (failed != 0 && rc == 0 && main_rank)
        fprintf(stderr, "%s: warning: checkpoint at step %d not written: another rank failed (see its message)\n",
                program_name(), step);
    if (failed != 0) {
        unlink(state);
        if (main_rank) {
            unlink(model);
            long newest = newest_complete_checkpoint(dir);
            if (newest >= 0)
                fprintf(stderr, "%s: warning: the newest complete checkpoint is still step %ld in %s\n", program_name(),
                        newest, dir);
            else fprintf(stderr, "%s: warning: there is no complete checkpoint in %s\n", program_name(), dir);
        }
        return -1;
    }
    if (main_rank && t->tc->keep_ckpts > 0) prune_checkpoints(dir, t->tc->keep_ckpts);
    return 0;
}

// Mean of the ranks' values.
static double mean_over_ranks(Comm *c, double x) {
    c->allreduce_sum_f64(c, &x, 1);
    return x / c->size;
}

static float evaluate(Trainer *t, DataLoader *val, int batches, int *inputs, int *targets) {
    watchdog_set_phase(PHASE_VALIDATION);
    dataloader_reset(val);
    double sum = 0.0;
    for (int i = 0; i < batches; i++) {
        dataloader_next_batch(val, inputs, targets);
        sum += t->backend->forward_loss(t->backend->self, inputs, targets);
    }
    return (float)mean_over_ranks(t->comm, sum / batches);
}

// Samples after <|endoftext|> with temperature 1. Every rank samples (the model may be sharded,
// so all must run the forward passes); the same generator gives every rank the same tokens.
static void sample(Trainer *t, Rng *rng, const Tokenizer *tok, float *logits) {
    const GPT2Config *cfg = t->cfg;
    watchdog_set_phase(PHASE_SAMPLING);
    int n = t->tc->gen_tokens;
    if (n > t->tc->T - 1) n = t->tc->T - 1;
    int *tokens = (int *)malloc_check((size_t)(n + 1) * sizeof(int));
    tokens[0] = cfg->vocab_size > GPT2_EOT ? GPT2_EOT : cfg->vocab_size - 1;
    for (int i = 1; i <= n; i++) {
        t->backend->next_token_logits(t->backend->self, tokens, i, logits);
        tokens[i] = rng_sample_softmax(logits, cfg->vocab_size, rng_next_uniform(rng));
    }
    if (t->comm->rank == 0) {
        printf("sample: ");
        if (tok) {
            tokenizer_fprint(tok, tokens + 1, (size_t)n, stdout);
        } else {
            for (int i = 1; i <= n; i++) printf("%d ", tokens[i]);
        }
        printf("\n");
        fflush(stdout);
    }
    free(tokens);
}

double trainer_flops_per_token(const GPT2Config *cfg, int T) {
    return 6.0 * (double)gpt2_num_params(cfg) + 12.0 * cfg->num_layers * (double)cfg->channels * T;
}

void trainer_recompute_plan(const TrainConfig *tc, const GPT2Config *cfg, const RecomputeShape *shape,
                            const RecomputeDevice *device, double fixed_bytes, int rank, int *policies) {
    const int L = cfg->num_layers;
    const int by_level = strcmp(tc->recompute_level, "none") != 0, by_list = tc->recompute_list[0] != '\0',
              by_budget = tc->mem_budget_gib > 0;
    if (by_level + by_list + by_budget > 1) usage_error("-r, --recompute and --mem-budget: give at most one of them");
    const double tokens = (double)tc->B * tc->T, budget_bytes = tc->mem_budget_gib * (double)(1ull << 30),
                 bytes_per_element = shape->element_bytes;
    char err[256];
    int p = RC_NONE;
    if (by_level && recompute_parse_policy(tc->recompute_level, &p) != 0)
        usage_error("-r (--recompute-level): '%s' is not a policy (none, gelu, norm, attn, mlp, block, or a+b)",
                    tc->recompute_level);
    for (int l = 0; l < L; l++) policies[l] = p;
    if (by_list && recompute_parse_list(tc->recompute_list, L, policies, err, sizeof(err)) != 0)
        usage_error("--recompute: %s", err);
    if (by_budget) {
        double per_token = (budget_bytes - fixed_bytes) / (bytes_per_element * tokens);
        if (recompute_plan_budget(shape, device, L, per_token, policies) != 0)
            usage_error("--mem-budget: %g GiB cannot hold the activations even recomputing every block (needs %.4g GiB)",
                        tc->mem_budget_gib,
                        (fixed_bytes + L * recompute_layer_elements(shape, RC_BLOCK) * bytes_per_element * tokens) /
                            (double)(1ull << 30));
    }
    if (rank != 0 || !(by_level || by_list || by_budget)) return;
    double elements = 0.0, flops = 0.0, seconds = 0.0;
    for (int l = 0; l < L; l++) {
        elements += recompute_layer_elements(shape, policies[l]);
        flops += recompute_layer_flops(shape, policies[l]);
        seconds += recompute_layer_seconds(shape, device, policies[l]);
    }
    char plan[1024] = "", name[64];
    for (int l = 0; l < L;) {
        int e = l;
        while (e + 1 < L && policies[e + 1] == policies[l]) e++;
        size_t used = strlen(plan);
        snprintf(plan + used, sizeof(plan) - used, "%s%d-%d:%s", used ? "," : "", l, e,
                 recompute_policy_name(policies[l], name, sizeof(name)));
        l = e + 1;
    }
    printf("recompute: %s | predicted activations %.1f MiB (blocks %.1f MiB) | extra %.3g FLOPs per token (%.1f%% of "
           "the step's model FLOPs), about %.3g ms per micro-step at the rates of %s\n", plan,
           (fixed_bytes + elements * bytes_per_element * tokens) / (1 << 20),
           elements * bytes_per_element * tokens / (1 << 20), flops,
           100.0 * flops / trainer_flops_per_token(cfg, tc->T), 1e3 * seconds * tokens, device->name);
}

int trainer_head_rows(const TrainConfig *tc) {
    const int tokens = tc->B * tc->T, rows = tc->head_chunk > 0 ? tc->head_chunk : HEAD_CHUNK_ROWS;
    return rows < tokens ? rows : tokens;
}

matmul_precision trainer_matmul_precision(const TrainConfig *tc, int gpu) {
    matmul_precision p;
    switch (tc->matmul) {
    case MATMUL_MODE_FP32: p = MATMUL_FP32; break;
    case MATMUL_MODE_BF16: p = MATMUL_BF16; break;
    case MATMUL_MODE_FP8: p = MATMUL_FP8; break;
    case MATMUL_MODE_INT8: p = MATMUL_INT8; break;
    default: p = gpu ? MATMUL_BF16 : MATMUL_FP32;
    }
    if (p != MATMUL_FP8 && (tc->fp8_wgrad || tc->amax_history > 0 || tc->fp8_fast_accum > 0))
        usage_error("--fp8-wgrad, --amax-history and --fp8-fast-accum apply to --matmul fp8 only");
    return p;
}

int trainer_model_config(const TrainConfig *tc, GPT2Config *cfg) {
    int from_checkpoint = gpt2_config_from_string(tc->model, cfg) != 0;
    if (from_checkpoint) {
        if (tc->bench) usage_error("--bench needs a model description for -e (such as d12 or L4C256NH4), not a file");
        if (!file_exists(tc->model))  // most likely a mistyped description
            usage_error("-e (--model): '%s' is not d<depth>, L<layers>C<channels>NH<heads> or an existing checkpoint file",
                        tc->model);
        checkpoint_read_config(tc->model, cfg);
        // The file's shape stands; flags that set another (the defaults aside) would be ignored silently.
        TrainConfig d;
        train_config_defaults(&d);
        if ((tc->max_seq_len != d.max_seq_len && tc->max_seq_len != cfg->max_seq_len) ||
            (tc->vocab_size != d.vocab_size && tc->vocab_size != cfg->vocab_size))
            if (!is_secondary_rank())
                printf("note: the checkpoint's model has maxT %d and V %d; --max-seq-len and --vocab-size describe "
                       "a random model and are not used\n", cfg->max_seq_len, cfg->vocab_size);
    } else {
        cfg->max_seq_len = tc->max_seq_len;
        cfg->vocab_size = tc->vocab_size;
        cfg->padded_vocab_size = gpt2_pad_vocab(tc->vocab_size);
        const char *bad = gpt2_config_error(cfg);
        if (bad) usage_error("-e (--model) '%s': %s", tc->model, bad);
    }
    if (tc->T > cfg->max_seq_len) usage_error("-t (--seq-len): %d is larger than the model's maxT %d", tc->T, cfg->max_seq_len);
    return from_checkpoint;
}

// Exits 2 on every rank, rank 0 saying that some ranks `differ` ("... than rank 0's"), unless
// every rank's fingerprint equals rank 0's.
static void ranks_agree_or_exit(Comm *comm, uint64_t print, const char *differ) {
    uint64_t first = print;
    comm->broadcast_bytes(comm, &first, sizeof(first));
    double others = first != print;
    comm->allreduce_sum_f64(comm, &others, 1);
    if (others == 0) return;
    if (comm->rank == 0)
        fprintf(stderr, "%s: error: %d of %d ranks %s: every rank must run the same command on the same files\n",
                program_name(), (int)others, comm->size, differ);
    comm->barrier(comm);  // every rank exits after rank 0 has said why (the launcher kills at the first exit)
    exit(2);
}

void trainer_check_ranks_agree(Comm *comm, int argc, char **argv, const GPT2Config *cfg, const char *checkpoint) {
    uint64_t print = FNV1A64_INIT;
    for (int i = 1; i < argc; i++)  // each with its NUL: "-x" "12" is not "-x1" "2"
        print = fnv1a64(print, argv[i], strlen(argv[i]) + 1);
    print = fnv1a64(print, cfg, sizeof(*cfg));
    uint64_t sum = 0;
    if (checkpoint && checkpoint_stored_sum(checkpoint, &sum)) print = fnv1a64(print, &sum, sizeof(sum));
    ranks_agree_or_exit(comm, print, "were started with other arguments than rank 0's, or read another model file");
}

// Every rank takes its own windows of one global stream of shards: ranks that list other shards
// (node-local copies that differ) would read other data, and a one-pass run (-x -1) would count
// other step numbers, and hang at the end. Compares the shards' number and token counts.
static void check_ranks_share_data(Comm *comm, const DataLoader *dl, const char *which) {
    uint64_t print = fnv1a64(FNV1A64_INIT, &dl->num_shards, sizeof(dl->num_shards));
    print = fnv1a64(print, dl->shard_tokens, (size_t)dl->num_shards * sizeof(int64_t));
    char differ[128];
    snprintf(differ, sizeof(differ), "see other %s shards than rank 0 (their number or sizes)", which);
    ranks_agree_or_exit(comm, print, differ);
}

void trainer_initial_weights(const TrainConfig *tc, const GPT2Config *cfg, int from_checkpoint, float *weights) {
    if (from_checkpoint) checkpoint_read_params(tc->model, cfg, weights);
    else gpt2_init_params(cfg, weights, tc->seed);
}

AdamWConfig trainer_adamw_config(const TrainConfig *tc) {
    const AdamWConfig hp = {tc->beta1, tc->beta2, tc->eps, tc->weight_decay, tc->grad_clip, tc->update_clip};
    return hp;
}

void trainer_print_model(const GPT2Config *cfg) {
    printf("model: L=%d C=%d NH=%d maxT=%d V=%d Vp=%d, %zu parameters\n", cfg->num_layers, cfg->channels,
           cfg->num_heads, cfg->max_seq_len, cfg->vocab_size, cfg->padded_vocab_size, gpt2_num_params(cfg));
}

static int compare_floats(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int trainer_run(Trainer *t) {
    const TrainConfig *tc = t->tc;
    const GPT2Config *cfg = t->cfg;
    TrainerBackend *be = t->backend;
    Comm *comm = t->comm;
    const int rank = comm->rank, B = tc->B, T = tc->T;
    const int main_rank = rank == 0;
    stop_signals_install();
    watchdog_init(tc->watchdog_s);
    watchdog_begin_step(0);  // step 0: opening the data and resuming

    const int64_t micro_tokens = (int64_t)B * T * comm->size;
    const int64_t total_batch = tc->total_batch ? tc->total_batch : micro_tokens;
    if (total_batch % micro_tokens != 0)
        usage_error("-d (--total-batch): %lld is not a multiple of B*T*ranks = %lld", (long long)total_batch,
                    (long long)micro_tokens);
    if (total_batch / micro_tokens > INT32_MAX)
        usage_error("-d (--total-batch): %lld tokens would take %lld micro-steps of B*T*ranks = %lld tokens (at most %d)",
                    (long long)total_batch, (long long)(total_batch / micro_tokens), (long long)micro_tokens, INT32_MAX);
    const int accum = (int)(total_batch / micro_tokens);

    DataLoader train_loader, val_loader;
    int have_val = 0, val_batches = tc->val_batches;
    if (!tc->bench) {
        dataloader_init(&train_loader, tc->train_pattern, B, T, rank, comm->size, cfg->vocab_size);
        check_ranks_share_data(comm, &train_loader, "training");
        if (tc->val_every > 0 && tc->val_batches > 0 && tc->val_pattern[0]) {
            dataloader_init(&val_loader, tc->val_pattern, B, T, rank, comm->size, cfg->vocab_size);
            check_ranks_share_data(comm, &val_loader, "validation");
            have_val = 1;
            // More batches than the shards hold would count some windows twice.
            const int64_t whole = dataloader_batches_per_pass(&val_loader);
            if (val_batches > whole) {
                if (main_rank)
                    printf("note: the validation shards hold %lld micro-batches of B*T*ranks = %lld tokens: -m %d is "
                           "cut to %lld\n", (long long)whole, (long long)B * T * comm->size, val_batches,
                           (long long)whole);
                val_batches = (int)whole;
            }
        }
    }
    int steps = tc->max_steps;
    if (steps < 0 && tc->bench) steps = 15;
    if (steps < 0) {  // one pass
        const int64_t tokens = dataloader_total_tokens(&train_loader), pass = tokens / total_batch;
        if (pass > 1 << 30)
            usage_error("-x (--steps) -1: one pass over the training data is %lld steps, more than 2^30: give -x",
                        (long long)pass);
        steps = pass > 0 ? (int)pass : 1;
        if (pass == 0 && main_rank)
            printf("note: the training shards hold %lld tokens, less than one step of %lld: one step, which "
                   "repeats them\n", (long long)tokens, (long long)total_batch);
    }
    const int sampling = !tc->bench && tc->sample_every > 0 && tc->gen_tokens > 0 && T > 1;
    Tokenizer *tok = NULL;
    if (sampling && main_rank) {
        char why[512];
        tok = tokenizer_load(tc->tokenizer_dir, why, sizeof(why));
        if (!tok) fprintf(stderr, "%s: warning: samples print as token ids: %s\n", program_name(), why);
    }

    TrainState st;
    memset(&st, 0, sizeof(st));
    st.rank = rank;
    st.num_ranks = comm->size;
    st.num_params = t->num_params;
    st.begin = t->shard_begin;
    st.end = t->shard_end;
    st.run_seed = tc->seed;
    st.sample_rng.seed = tc->seed ^ 0x5eed5a3b1e5ULL;
    outlier_init(&st.loss_outliers);
    outlier_init(&st.norm_outliers);
    int start_step = 0;
    const int writes_files = !tc->bench && tc->output_dir[0];
    // A new run does not share its directory with an earlier run's checkpoints: -y 1 would later
    // resume the newest of them, and -nk would keep those (higher steps) and delete this run's.
    // Checked before anything in the directory is touched (another run may still be writing).
    if (writes_files && !tc->resume) {
        double earlier = main_rank ? (double)newest_complete_checkpoint(tc->output_dir) : -1.0;
        comm->broadcast_bytes(comm, &earlier, sizeof(earlier));
        if (earlier >= 0) {  // every rank exits after rank 0 has said why (the launcher kills at the first exit)
            if (main_rank)
                fprintf(stderr, "%s: error: '%s' holds the checkpoints of an earlier run (the newest at step %ld): "
                        "resume it with -y 1, or give another -o, or remove them\n", program_name(), tc->output_dir,
                        (long)earlier);
            comm->barrier(comm);
            exit(1);
        }
    }
    if (writes_files && main_rank) {
        make_output_dir(tc->output_dir);
        remove_stale_temporaries(tc->output_dir);
        // A run killed between a checkpoint's marker and the pruning after it left one checkpoint
        // more than -nk; without this, each such kill in a row would leave another.
        if (tc->resume && tc->keep_ckpts > 0) prune_checkpoints(tc->output_dir, tc->keep_ckpts);
    }
    comm->barrier(comm);
    if (tc->resume) {
        double newest = main_rank ? (double)newest_complete_checkpoint(tc->output_dir) : 0.0;
        comm->broadcast_bytes(comm, &newest, sizeof(newest));
        if (newest < 0) {
            if (main_rank) printf("no complete checkpoint in %s: starting from scratch\n", tc->output_dir);
        } else {
            char model[4096], state[4096], done[4096];
            checkpoint_paths(tc->output_dir, (long)newest, rank, model, state, done, sizeof(model));
            be->load(be->self, model, state, &st);
            check_model_matches_state(tc->output_dir, (long)newest, &st);
            st.rank = rank;  // the checkpoint's writer may have had another rank and slice
            st.num_ranks = comm->size;
            st.begin = t->shard_begin;
            st.end = t->shard_end;
            train_loader.pos = st.train_pos;
            start_step = (int)st.step;
            if (main_rank) printf("resumed from step %d of %s\n", start_step, tc->output_dir);
            // The run keeps its first start's seed (the backend's load took it: stochastic
            // rounding, sampling); a version 1 state file holds none, so the flag's stands.
            if (!st.run_seed_saved) st.run_seed = tc->seed;
            else if (st.run_seed != tc->seed && main_rank)
                printf("note: the run started with --seed %llu, which it keeps; --seed %llu is not used\n",
                       (unsigned long long)st.run_seed, (unsigned long long)tc->seed);
            if (start_step >= steps && main_rank)
                printf("note: the checkpoint is at step %d, and the run has %d steps: nothing to train (a larger "
                       "-x goes on)\n", start_step, steps);
        }
    }

    Logger logger;
    logger_init(&logger, writes_files && main_rank ? tc->output_dir : "", tc->resume ? start_step : -1);
    LRScheduleConfig sched = {tc->schedule, tc->lr, tc->warmup < steps ? tc->warmup : steps, steps, tc->final_frac};
    if (sampling && tc->gen_tokens > T - 1 && main_rank)
        printf("note: samples are at most T - 1 = %d tokens long (-g %d asks for more)\n", T - 1, tc->gen_tokens);
    if (tc->warmup > steps && main_rank)
        printf("note: the warmup (-u %d) is longer than the run (%d steps): the learning rate peaks at its last step\n",
               tc->warmup, steps);
    if (main_rank)
        printf("training: %d steps of %lld tokens (B=%d T=%d, %d micro-step(s), %d rank(s))\n", steps,
               (long long)total_batch, B, T, accum, comm->size);

    int *inputs = (int *)malloc_check((size_t)B * T * sizeof(int));
    int *targets = (int *)malloc_check((size_t)B * T * sizeof(int));
    float *logits = (float *)malloc_check((size_t)cfg->vocab_size * sizeof(float));
    Rng bench_rng = {tc->seed + (uint64_t)rank, 0};
    float *step_ms = (float *)malloc_check((size_t)(steps + 1) * sizeof(float));
    int timed = 0;
    double elapsed = 0.0;
    double prof_ms[NUM_PROF_PARTS] = {0};  // --profile: the parts of the timed steps
    int skipped_nonfinite = 0, skipped_spikes = 0;  // this start's; the run of skips in a row is in st
    int stopped_at = -1;  // the step after which a stop signal ended the run
    for (int step = start_step; step < steps; step++) {
        watchdog_begin_step(step + 1);
        if (have_val && step % tc->val_every == 0) {
            float vl = evaluate(t, &val_loader, val_batches, inputs, targets);
            if (main_rank) printf("val loss %.6f\n", vl);
            logger_val(&logger, step, vl);
        }
        if (sampling && step > 0 && step % tc->sample_every == 0) sample(t, &st.sample_rng, tok, logits);

        if (tc->profile) be->profile_take(be->self, NULL);  // validation and sampling are not the step's
        double t0 = wall_time();
        be->zero_grads(be->self, accum);
        double loss_sum = 0.0;
        for (int micro = 0; micro < accum; micro++) {
            watchdog_set_phase(PHASE_DATA);
            if (tc->bench) {
                for (int i = 0; i < B * T; i++) inputs[i] = (int)(rng_next_uniform(&bench_rng) * cfg->vocab_size);
                for (int i = 0; i < B * T; i++) targets[i] = (int)(rng_next_uniform(&bench_rng) * cfg->vocab_size);
            } else {
                dataloader_next_batch(&train_loader, inputs, targets);
            }
            watchdog_set_phase(PHASE_FORWARD_BACKWARD);
            const int inject_nan = micro == 0 && test_hook_nan_step(step + 1);
            loss_sum += be->forward_backward(be->self, inputs, targets, inject_nan ? NAN : 1.0f / (float)accum);
        }
        watchdog_set_phase(PHASE_GRADIENT_REDUCTION);
        float loss = (float)mean_over_ranks(comm, loss_sum / accum);
        double norm = be->grad_norm(be->self);
        float lr = lr_at_step(&sched, step);

        // Every rank sees the same global loss and norm, so all make the same decision.
        const int nonfinite = !isfinite(loss) || !isfinite(norm);
        const char *skip = NULL;
        if (nonfinite) skip = "non-finite loss or gradient";
        else if (tc->skip_loss_z > 0 && outlier_zscore(&st.loss_outliers, loss) > tc->skip_loss_z) skip = "loss spike";
        else if (tc->skip_norm_z > 0 && outlier_zscore(&st.norm_outliers, norm) > tc->skip_norm_z) skip = "grad-norm spike";
        if (skip) {
            st.skipped_in_a_row++;
            if (nonfinite) skipped_nonfinite++;
            else skipped_spikes++;
            if (main_rank)
                printf("step %d: update skipped (%s: loss %f, norm %f); %d skipped in a row, %d non-finite and %d "
                       "spikes in all\n", step + 1, skip, loss, norm, st.skipped_in_a_row, skipped_nonfinite, skipped_spikes);
            logger_skip(&logger, step + 1, skip);
            if (tc->max_skips > 0 && st.skipped_in_a_row >= tc->max_skips)
                die("%d updates in a row were skipped (the last at step %d: %s): stopping rather than training on "
                    "garbage (-sm); resume from the newest checkpoint with a lower -l or check the data",
                    st.skipped_in_a_row, step + 1, skip);
        } else {
            st.skipped_in_a_row = 0;
            watchdog_set_phase(PHASE_UPDATE);
            outlier_push(&st.loss_outliers, loss);
            outlier_push(&st.norm_outliers, norm);
            be->update(be->self, step + 1, lr, grad_clip_scale(tc->grad_clip, norm));
        }
        double dt = wall_time() - t0;
        const int timed_step = step > start_step + 2 || steps - start_step <= 3;
        if (timed_step) step_ms[timed++] = (float)(dt * 1e3);
        if (tc->profile) be->profile_take(be->self, timed_step ? prof_ms : NULL);
        elapsed += dt;
        int done = step + 1 - start_step;
        if (main_rank)
            print_progress(step + 1, steps, loss, (float)norm, lr, dt * 1e3, (double)total_batch / dt,
                           elapsed / done * (steps - step - 1),
                           t->peak_flops > 0 ? t->flops_per_token * total_batch / dt / t->peak_flops : -1.0);
        logger_train(&logger, step + 1, loss, lr, (float)norm);

        int saved = 0;  // a complete checkpoint of this step exists
        const int checkpoint_due = step + 1 == steps || (tc->ckpt_every > 0 && (step + 1) % tc->ckpt_every == 0);
        if (writes_files && tc->ckpt_every != 0 && checkpoint_due) {
            st.step = step + 1;
            st.train_pos = train_loader.pos;
            saved = save_checkpoint(t, step + 1, &st) == 0;
            if (!saved && tc->stop_on_save_error)
                die("stopping: the checkpoint at step %d could not be written (-nf 1)", step + 1);
        }
        // A stop signal on any rank stops every rank after the same step.
        double stop = stop_signal_received();
        comm->allreduce_sum_f64(comm, &stop, 1);
        if (stop != 0) {
            stopped_at = step + 1;
            if (writes_files && !saved) {
                st.step = step + 1;
                st.train_pos = train_loader.pos;
                if (save_checkpoint(t, step + 1, &st) != 0)
                    die("stopped by a signal after step %d, but its checkpoint could not be written", step + 1);
            }
            break;
        }
    }
    watchdog_begin_step(stopped_at < 0 ? steps : stopped_at);
    if (stopped_at >= 0 && main_rank) {
        if (writes_files)
            printf("stopped by a signal after step %d; the checkpoint is in %s: continue with -y 1\n", stopped_at,
                   tc->output_dir);
        else printf("stopped by a signal after step %d; no checkpoint written (no -o)\n", stopped_at);
    }
    if (main_rank && skipped_nonfinite + skipped_spikes > 0)
        printf("updates skipped: %d non-finite, %d spikes\n", skipped_nonfinite, skipped_spikes);
    if (have_val && start_step < steps && stopped_at < 0) {
        float vl = evaluate(t, &val_loader, val_batches, inputs, targets);
        if (main_rank) printf("val loss %.6f\n", vl);
        logger_val(&logger, steps, vl);
    }
    if (sampling && start_step < steps && stopped_at < 0) sample(t, &st.sample_rng, tok, logits);
    if (tc->profile && timed > 0 && main_rank) {
        double sum = 0.0;
        for (int i = 0; i < timed; i++) sum += step_ms[i];
        prof_print(prof_ms, timed, sum / timed);
    }
    if (tc->bench && timed > 0 && main_rank) {
        qsort(step_ms, (size_t)timed, sizeof(float), compare_floats);
        float median = step_ms[timed / 2];
        printf("bench_tokens_per_s %.1f\n", (double)total_batch / (median * 1e-3));
        printf("bench_median_step_ms %.2f over %d timed steps\n", median, timed);
    }
    watchdog_disarm();
    free(step_ms);
    free(inputs);
    free(targets);
    free(logits);
    tokenizer_free(tok);
    logger_close(&logger);
    if (!tc->bench) {
        dataloader_free(&train_loader);
        if (have_val) dataloader_free(&val_loader);
    }
    return 0;
}
