#include "trainer.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataloader.h"
#include "fileio.h"
#include "logger.h"
#include "optimizer.h"
#include "outlier.h"
#include "rng.h"
#include "schedule.h"
#include "tokenizer.h"
#include "utils.h"

static void make_output_dir(const char *dir) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) die("cannot create the output directory '%s': %s", dir, strerror(errno));
    char probe[4096];
    snprintf(probe, sizeof(probe), "%s/.write_test.%d", dir, (int)getpid());
    FILE *f = fopen(probe, "w");
    if (!f) die("the output directory '%s' is not writable: %s", dir, strerror(errno));
    fclose(f);
    unlink(probe);
}

// The newest step with a DONE_<step> marker in dir, or -1.
static long newest_complete_checkpoint(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    long best = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long step;
        int end = 0;
        if (sscanf(e->d_name, "DONE_%8ld%n", &step, &end) == 1 && e->d_name[end] == '\0' && step > best) best = step;
    }
    closedir(d);
    return best;
}

static void checkpoint_paths(const char *dir, long step, int rank, char *model, char *state, char *done, size_t n) {
    snprintf(model, n, "%s/model_%08ld.bin", dir, step);
    snprintf(state, n, "%s/state_%08ld_%05d.bin", dir, step, rank);
    snprintf(done, n, "%s/DONE_%08ld", dir, step);
}

static int save_checkpoint(Trainer *t, int step, const TrainState *st) {
    char model[4096], state[4096], done[4096], err[512] = "";
    checkpoint_paths(t->tc->output_dir, step, t->comm->rank, model, state, done, sizeof(model));
    int rc = t->backend->save(t->backend->self, model, state, st, err, sizeof(err));
    double failed = rc != 0;
    t->comm->allreduce_sum_f64(t->comm, &failed, 1);  // the marker only when every rank succeeded
    if (failed == 0 && t->comm->rank == 0) {
        AtomicFile af;
        if (atomic_open(&af, done) != 0 || atomic_commit(&af) != 0) {
            snprintf(err, sizeof(err), "%s", af.error);
            rc = -1;
        }
    }
    if (rc != 0) fprintf(stderr, "%s: warning: checkpoint at step %d not written: %s\n", program_name(), step, err);
    else if (failed != 0 && t->comm->rank == 0)
        fprintf(stderr, "%s: warning: checkpoint at step %d incomplete: another rank failed to write\n", program_name(), step);
    return rc;
}

// Mean of the ranks' values.
static double mean_over_ranks(Comm *c, double x) {
    c->allreduce_sum_f64(c, &x, 1);
    return x / c->size;
}

static float evaluate(Trainer *t, DataLoader *val, int *inputs, int *targets) {
    dataloader_reset(val);
    double sum = 0.0;
    for (int i = 0; i < t->tc->val_batches; i++) {
        dataloader_next_batch(val, inputs, targets);
        sum += t->backend->forward_loss(t->backend->self, inputs, targets);
    }
    return (float)mean_over_ranks(t->comm, sum / t->tc->val_batches);
}

// Samples after <|endoftext|> with temperature 1. Every rank samples (the model may be sharded,
// so all must run the forward passes); the same generator gives every rank the same tokens.
static void sample(Trainer *t, Rng *rng, const Tokenizer *tok, float *logits) {
    const GPT2Config *cfg = t->cfg;
    int n = t->tc->gen_tokens;
    if (n > t->tc->T - 1) n = t->tc->T - 1;
    int *tokens = (int *)malloc_check((size_t)(n + 1) * sizeof(int));
    tokens[0] = cfg->vocab_size > GPT2_EOT ? GPT2_EOT : cfg->vocab_size - 1;
    for (int i = 1; i <= n; i++) {
        t->backend->next_token_logits(t->backend->self, tokens, i, logits);
        float maxv = -INFINITY;
        for (int j = 0; j < cfg->vocab_size; j++) maxv = fmaxf(maxv, logits[j]);
        double sum = 0.0;
        for (int j = 0; j < cfg->vocab_size; j++) sum += exp((double)(logits[j] - maxv));
        double r = rng_next_uniform(rng) * sum, acc = 0.0;
        int next = cfg->vocab_size - 1;
        for (int j = 0; j < cfg->vocab_size; j++) {
            acc += exp((double)(logits[j] - maxv));
            if (acc > r) { next = j; break; }
        }
        tokens[i] = next;
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

    const int64_t micro_tokens = (int64_t)B * T * comm->size;
    const int64_t total_batch = tc->total_batch ? tc->total_batch : micro_tokens;
    if (total_batch % micro_tokens != 0)
        usage_error("-d (--total-batch): %lld is not a multiple of B*T*ranks = %lld", (long long)total_batch,
                    (long long)micro_tokens);
    const int accum = (int)(total_batch / micro_tokens);
    if (tc->resume && !tc->output_dir[0]) usage_error("-y (--resume) 1 needs an output directory (-o)");

    DataLoader train_loader, val_loader;
    int have_val = 0;
    if (!tc->bench) {
        dataloader_init(&train_loader, tc->train_pattern, B, T, rank, comm->size, cfg->vocab_size);
        if (tc->val_every > 0 && tc->val_batches > 0 && tc->val_pattern[0]) {
            dataloader_init(&val_loader, tc->val_pattern, B, T, rank, comm->size, cfg->vocab_size);
            have_val = 1;
        }
    }
    int steps = tc->max_steps;
    if (steps < 0) steps = tc->bench ? 15 : (int)(dataloader_total_tokens(&train_loader) / total_batch);
    if (steps < 1) steps = 1;
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
    st.sample_rng.seed = tc->seed ^ 0x5eed5a3b1e5ULL;
    outlier_init(&st.loss_outliers);
    outlier_init(&st.norm_outliers);
    int start_step = 0;
    const int writes_files = !tc->bench && tc->output_dir[0];
    if (writes_files && main_rank) make_output_dir(tc->output_dir);
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
            train_loader.pos = st.train_pos;
            start_step = (int)st.step;
            if (main_rank) printf("resumed from step %d of %s\n", start_step, tc->output_dir);
        }
    }

    Logger logger;
    logger_init(&logger, writes_files && main_rank ? tc->output_dir : "", start_step > 0);
    LRScheduleConfig sched = {tc->schedule, tc->lr, tc->warmup < steps ? tc->warmup : steps, steps, tc->final_frac};
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
    for (int step = start_step; step < steps; step++) {
        if (have_val && step % tc->val_every == 0) {
            float vl = evaluate(t, &val_loader, inputs, targets);
            if (main_rank) printf("val loss %.6f\n", vl);
            logger_val(&logger, step, vl);
        }
        if (sampling && step > 0 && step % tc->sample_every == 0) sample(t, &st.sample_rng, tok, logits);

        double t0 = wall_time();
        be->zero_grads(be->self);
        double loss_sum = 0.0;
        for (int micro = 0; micro < accum; micro++) {
            if (tc->bench) {
                for (int i = 0; i < B * T; i++) inputs[i] = (int)(rng_next_uniform(&bench_rng) * cfg->vocab_size);
                for (int i = 0; i < B * T; i++) targets[i] = (int)(rng_next_uniform(&bench_rng) * cfg->vocab_size);
            } else {
                dataloader_next_batch(&train_loader, inputs, targets);
            }
            loss_sum += be->forward_backward(be->self, inputs, targets, 1.0f / (float)accum);
        }
        float loss = (float)mean_over_ranks(comm, loss_sum / accum);
        double norm = be->grad_norm(be->self);
        float lr = lr_at_step(&sched, step);

        // Every rank sees the same global loss and norm, so all make the same decision.
        const char *skip = NULL;
        if (!isfinite(loss) || !isfinite(norm)) skip = "non-finite loss or gradient";
        else if (tc->skip_loss_z > 0 && outlier_zscore(&st.loss_outliers, loss) > tc->skip_loss_z) skip = "loss spike";
        else if (tc->skip_norm_z > 0 && outlier_zscore(&st.norm_outliers, norm) > tc->skip_norm_z) skip = "grad-norm spike";
        if (skip) {
            if (main_rank) printf("step %d: update skipped (%s: loss %f, norm %f)\n", step + 1, skip, loss, norm);
            logger_skip(&logger, step + 1, skip);
        } else {
            outlier_push(&st.loss_outliers, loss);
            outlier_push(&st.norm_outliers, norm);
            be->update(be->self, step + 1, lr, grad_clip_scale(tc->grad_clip, norm));
        }
        double dt = wall_time() - t0;
        if (step > start_step + 2 || steps - start_step <= 3) step_ms[timed++] = (float)(dt * 1e3);
        elapsed += dt;
        int done = step + 1 - start_step;
        if (main_rank)
            print_progress(step + 1, steps, loss, (float)norm, lr, dt * 1e3, (double)total_batch / dt,
                           elapsed / done * (steps - step - 1));
        logger_train(&logger, step + 1, loss, lr, (float)norm);

        if (writes_files && tc->ckpt_every > 0 && ((step + 1) % tc->ckpt_every == 0 || step + 1 == steps)) {
            st.step = step + 1;
            st.train_pos = train_loader.pos;
            save_checkpoint(t, step + 1, &st);
        }
    }
    if (have_val && start_step < steps) {
        float vl = evaluate(t, &val_loader, inputs, targets);
        if (main_rank) printf("val loss %.6f\n", vl);
        logger_val(&logger, steps, vl);
    }
    if (sampling && start_step < steps) sample(t, &st.sample_rng, tok, logits);
    if (tc->bench && timed > 0 && main_rank) {
        qsort(step_ms, (size_t)timed, sizeof(float), compare_floats);
        float median = step_ms[timed / 2];
        printf("bench_tokens_per_s %.1f\n", (double)total_batch / (median * 1e-3));
        printf("bench_median_step_ms %.2f over %d timed steps\n", median, timed);
    }
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
