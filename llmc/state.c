#include "state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "utils.h"

typedef struct {
    int32_t count, next;
    double values[OUTLIER_WINDOW];
} SavedOutliers;

static void pack_outliers(const OutlierDetector *d, SavedOutliers *s) {
    memset(s, 0, sizeof(*s));
    s->count = d->count;
    s->next = d->next;
    memcpy(s->values, d->values, sizeof(s->values));
}

static int unpack_outliers(const SavedOutliers *s, OutlierDetector *d) {
    if (s->count < 0 || s->count > OUTLIER_WINDOW || s->next < 0 || s->next >= OUTLIER_WINDOW) return -1;
    d->count = s->count;
    d->next = s->next;
    memcpy(d->values, s->values, sizeof(d->values));
    return 0;
}

int state_write(const char *path, const TrainState *st, const float *m, const float *v, const float *master,
                char *err, size_t errlen) {
    int64_t h[128] = {0};
    h[0] = STATE_MAGIC;
    h[1] = STATE_VERSION;
    h[2] = st->step;
    h[3] = st->rank;
    h[4] = st->num_ranks;
    h[5] = st->num_params;
    h[6] = st->begin;
    h[7] = st->end;
    h[8] = st->train_pos.shard;
    h[9] = st->train_pos.position;
    h[10] = (int64_t)st->sample_rng.seed;
    h[11] = (int64_t)st->sample_rng.counter;
    h[12] = master != NULL;
    const AmaxHistory *ah = &st->amax;
    const size_t amax_n = ah->values && ah->length > 0 ? (size_t)ah->operands * ah->length : 0;
    h[14] = amax_n ? ah->operands : 0;
    h[15] = amax_n ? ah->length : 0;
    h[16] = amax_n ? ah->steps : 0;
    h[17] = (int64_t)st->run_seed;
    h[18] = st->skipped_in_a_row;
    h[19] = st->model_sum_saved ? (int64_t)st->model_sum : 0;
    h[20] = st->model_sum_saved != 0;
    size_t n = (size_t)(st->end - st->begin);
    SavedOutliers so[2];
    pack_outliers(&st->loss_outliers, &so[0]);
    pack_outliers(&st->norm_outliers, &so[1]);
    uint64_t hash = fnv1a64(FNV1A64_INIT, h, sizeof(h));  // h[13] is still zero
    hash = fnv1a64(hash, m, n * sizeof(float));
    hash = fnv1a64(hash, v, n * sizeof(float));
    if (master) hash = fnv1a64(hash, master, n * sizeof(float));
    hash = fnv1a64(hash, so, sizeof(so));
    if (amax_n) hash = fnv1a64(hash, ah->values, amax_n * sizeof(float));
    h[13] = (int64_t)hash;

    AtomicFile af;
    if (atomic_open(&af, path) != 0) {
        snprintf(err, errlen, "%s", af.error);
        return -1;
    }
    atomic_write(&af, h, sizeof(h));
    atomic_write(&af, m, n * sizeof(float));
    atomic_write(&af, v, n * sizeof(float));
    if (master) atomic_write(&af, master, n * sizeof(float));
    atomic_write(&af, so, sizeof(so));
    if (amax_n) atomic_write(&af, ah->values, amax_n * sizeof(float));
    if (atomic_commit(&af) != 0) {
        snprintf(err, errlen, "%s", af.error);
        return -1;
    }
    return 0;
}

static void parse_header(const char *path, const int64_t *h, long file_size, TrainState *st, int *has_master) {
    if (h[0] != STATE_MAGIC) die("'%s' is not a training-state file: magic %lld", path, (long long)h[0]);
    if (h[1] != 1 && h[1] != STATE_VERSION)
        die("'%s': training-state version %lld is not supported (1 or %d)", path, (long long)h[1], STATE_VERSION);
    memset(st, 0, sizeof(*st));
    st->step = h[2];
    st->run_seed = (uint64_t)h[17];
    st->run_seed_saved = h[1] >= 2;
    if (h[18] < 0 || h[18] > INT32_MAX) die("'%s': corrupt header (%lld updates skipped in a row)", path, (long long)h[18]);
    st->skipped_in_a_row = (int)h[18];
    st->model_sum_saved = (int)h[20];
    st->model_sum = (uint64_t)h[19];
    st->rank = (int)h[3];
    st->num_ranks = (int)h[4];
    st->num_params = h[5];
    st->begin = h[6];
    st->end = h[7];
    st->train_pos.shard = h[8];
    st->train_pos.position = h[9];
    st->sample_rng.seed = (uint64_t)h[10];
    st->sample_rng.counter = (uint64_t)h[11];
    *has_master = h[12] != 0;
    st->amax.operands = (int32_t)h[14];
    st->amax.length = (int32_t)h[15];
    st->amax.steps = h[16];
    // Ranges checked on the stored int64s, before narrowing to int can hide a wild value.
    if (st->step < 0 || h[4] < 1 || h[4] > INT32_MAX || h[3] < 0 || h[3] >= h[4] || st->num_params < 1 ||
        st->begin < 0 || st->end < st->begin || st->end - st->begin > st->num_params || h[12] < 0 || h[12] > 1 ||
        h[14] < 0 || h[14] > AMAX_MAX_OPERANDS || h[15] < 0 || h[15] > AMAX_MAX_LENGTH || (h[14] == 0) != (h[15] == 0) ||
        h[16] < 0 || h[20] < 0 || h[20] > 1)
        die("'%s' is corrupt: impossible values in the header", path);
    int64_t n = st->end - st->begin;
    // The slice must fit in the file before its byte count is computed (n * 12 can overflow).
    if (n > file_size / (int64_t)sizeof(float))
        die("'%s' is truncated: %ld bytes, its header's slice of %lld parameters needs more", path, file_size, (long long)n);
    int64_t want = (int64_t)(128 * sizeof(int64_t)) + n * (int64_t)sizeof(float) * (2 + *has_master) +
                   2 * (int64_t)sizeof(SavedOutliers) + h[14] * h[15] * (int64_t)sizeof(float);
    if (file_size != want)
        die("'%s' is %s: %ld bytes, its header needs %lld", path, file_size < want ? "truncated" : "longer than its header says",
            file_size, (long long)want);
}

void state_read_header(const char *path, TrainState *st, int *has_master) {
    FILE *f = fopen_check(path, "rb");
    long size = file_size_check(f, path);
    int64_t h[128];
    if (size < (long)sizeof(h)) die("'%s' is not a training-state file: %ld bytes, shorter than its header", path, size);
    fread_check(h, sizeof(int64_t), 128, f, path);
    fclose(f);
    parse_header(path, h, size, st, has_master);
}

void state_read(const char *path, TrainState *st, float *m, float *v, float *master) {
    const AmaxHistory want = st->amax;
    int has_master;
    state_read_header(path, st, &has_master);
    FILE *f = fopen_check(path, "rb");
    int64_t h[128];
    fread_check(h, sizeof(int64_t), 128, f, path);
    size_t n = (size_t)(st->end - st->begin);
    fread_check(m, sizeof(float), n, f, path);
    fread_check(v, sizeof(float), n, f, path);
    uint64_t hash = FNV1A64_INIT;
    if (st->run_seed_saved) {  // version 2: the header is summed too, with its hash word zero
        int64_t summed[128];
        memcpy(summed, h, sizeof(summed));
        summed[13] = 0;
        hash = fnv1a64(hash, summed, sizeof(summed));
    }
    hash = fnv1a64(hash, m, n * sizeof(float));
    hash = fnv1a64(hash, v, n * sizeof(float));
    if (has_master) {
        float *dst = master ? master : (float *)malloc_check(n * sizeof(float));
        fread_check(dst, sizeof(float), n, f, path);
        hash = fnv1a64(hash, dst, n * sizeof(float));
        if (!master) free(dst);
    }
    SavedOutliers so[2];
    fread_check(so, sizeof(SavedOutliers), 2, f, path);
    hash = fnv1a64(hash, so, sizeof(so));
    // The history into the caller's buffer when the shapes agree, else through a scratch copy
    // (the checksum covers it either way).
    const size_t amax_n = (size_t)st->amax.operands * st->amax.length;
    const int into_caller = want.values && want.operands == st->amax.operands && want.length == st->amax.length;
    float *amax = into_caller ? want.values : amax_n ? (float *)malloc_check(amax_n * sizeof(float)) : NULL;
    if (amax_n) {
        fread_check(amax, sizeof(float), amax_n, f, path);
        hash = fnv1a64(hash, amax, amax_n * sizeof(float));
    }
    if (!into_caller) free(amax);
    st->amax.values = into_caller ? want.values : NULL;
    fclose(f);
    if ((int64_t)hash != h[13]) die("'%s' is corrupt: checksum mismatch", path);
    if (unpack_outliers(&so[0], &st->loss_outliers) || unpack_outliers(&so[1], &st->norm_outliers))
        die("'%s' is corrupt: bad outlier window", path);
}

// The state file of rank q of the checkpoint whose file for this rank is state_path: trainer.c
// names them <dir>/state_<step>_<rank>.bin with the rank in 5 digits.
static void state_path_of_rank(const char *state_path, int q, char *out, size_t n) {
    size_t len = strlen(state_path);
    const size_t tail = strlen("_00000.bin");
    if (len < tail || strcmp(state_path + len - 4, ".bin") != 0 || state_path[len - tail] != '_')
        die("internal error: '%s' is not named state_<step>_<rank>.bin", state_path);
    snprintf(out, n, "%.*s_%05d.bin", (int)(len - tail), state_path, q);
}

int state_read_range(const char *state_path, int64_t num_params, size_t begin, size_t end, float *m, float *v,
                     float *master, TrainState *st) {
    char path[4096], first_path[4096];
    state_path_of_rank(state_path, 0, first_path, sizeof(first_path));
    TrainState first;
    int has_master;
    state_read_header(first_path, &first, &has_master);
    size_t covered = 0;
    for (int q = 0; q < first.num_ranks; q++) {
        state_path_of_rank(state_path, q, path, sizeof(path));
        TrainState s;
        int with_master;
        state_read_header(path, &s, &with_master);
        if (s.num_params != num_params)
            die("'%s' holds the state of another model (%lld parameters, not %lld)", path, (long long)s.num_params,
                (long long)num_params);
        if (s.rank != q) die("'%s' holds rank %d's state, not rank %d's", path, (int)s.rank, q);
        if (q > 0 && (s.num_ranks != first.num_ranks || s.step != first.step || with_master != has_master))
            die("'%s' (step %lld of %d ranks%s) does not belong with '%s' (step %lld of %d ranks%s)", path,
                (long long)s.step, (int)s.num_ranks, with_master ? ", master weights" : "", first_path,
                (long long)first.step, (int)first.num_ranks, has_master ? ", master weights" : "");
        size_t lo = (size_t)s.begin > begin ? (size_t)s.begin : begin;
        size_t hi = (size_t)s.end < end ? (size_t)s.end : end;
        if (q != 0 && lo >= hi) continue;
        size_t n = (size_t)(s.end - s.begin), alloc = n ? n : 1;
        float *fm = (float *)malloc_check(alloc * sizeof(float)), *fv = (float *)malloc_check(alloc * sizeof(float));
        float *fw = master && has_master ? (float *)malloc_check(alloc * sizeof(float)) : NULL;
        state_read(path, &s, fm, fv, fw);
        if (lo < hi) {
            const size_t from = lo - (size_t)s.begin, to = lo - begin, len = (hi - lo) * sizeof(float);
            memcpy(m + to, fm + from, len);
            memcpy(v + to, fv + from, len);
            if (fw) memcpy(master + to, fw + from, len);
            covered += hi - lo;
        }
        if (q == 0) *st = s;
        free(fm);
        free(fv);
        free(fw);
    }
    if (covered != end - begin)
        die("the training-state files next to '%s' do not cover parameters [%zu, %zu) exactly once", state_path, begin,
            end);
    return has_master;
}

// Reads rank's history into h when the checkpoint was written by `world` ranks and holds one of
// h's shape; returns whether it did.
static int read_amax_history(const char *state_path, int rank, int world, AmaxHistory *h) {
    char path[4096];
    TrainState s;
    int has_master;
    state_path_of_rank(state_path, 0, path, sizeof(path));  // rank 0's file always exists
    state_read_header(path, &s, &has_master);
    if (s.num_ranks != world) return 0;
    state_path_of_rank(state_path, rank, path, sizeof(path));
    state_read_header(path, &s, &has_master);
    if (s.num_ranks != world || s.rank != rank || s.amax.operands != h->operands || s.amax.length != h->length)
        return 0;
    const size_t n = (size_t)(s.end - s.begin), alloc = n ? n : 1;
    float *fm = (float *)malloc_check(alloc * sizeof(float)), *fv = (float *)malloc_check(alloc * sizeof(float));
    s.amax = *h;
    state_read(path, &s, fm, fv, NULL);
    free(fm);
    free(fv);
    h->steps = s.amax.steps;
    return 1;
}

void state_restore_amax_history(const char *state_path, int rank, int world, AmaxHistory *h) {
    if (h->length == 0 || read_amax_history(state_path, rank, world, h)) return;
    amax_history_reset(h);
    fprintf(stderr, "%s: warning: '%s' holds no FP8 amax history of this shape for rank %d of %d: delayed scaling "
                    "restarts from current amaxes, so this resume is not bit-exact\n", program_name(), state_path, rank, world);
}
