#include "dataloader.h"

#include <errno.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "utils.h"

static const long kHeaderBytes = 256 * sizeof(int32_t);

static int64_t validate_shard(const char *path) {
    FILE *f = fopen_check(path, "rb");
    long size = file_size_check(f, path);
    int32_t h[256];
    if (size < kHeaderBytes) die("shard '%s' is truncated: %ld bytes, shorter than the 1024-byte header", path, size);
    fread_check(h, sizeof(int32_t), 256, f, path);
    fclose(f);
    if (h[0] != SHARD_MAGIC) die("'%s' is not a token shard: magic %d, expected %d", path, h[0], SHARD_MAGIC);
    if (h[1] != SHARD_VERSION) die("shard '%s': version %d is not supported (expected %d)", path, h[1], SHARD_VERSION);
    int64_t ntok = h[2];
    if (ntok < 0) die("shard '%s': negative token count %lld in the header", path, (long long)ntok);
    int64_t want = kHeaderBytes + 2 * ntok;
    if (size != want)
        die("shard '%s' is %s: %ld bytes, its header's %lld tokens need %lld", path,
            size < want ? "truncated" : "longer than its header says", size, (long long)ntok, (long long)want);
    return ntok;
}

void dataloader_init(DataLoader *dl, const char *pattern, int B, int T, int rank, int num_ranks, int vocab_size) {
    memset(dl, 0, sizeof(*dl));
    dl->B = B;
    dl->T = T;
    dl->rank = rank;
    dl->num_ranks = num_ranks;
    dl->vocab_size = vocab_size;
    glob_t g;
    int rc = glob(pattern, 0, NULL, &g);
    if (rc == GLOB_NOMATCH) die("no token shard matches '%s'", pattern);
    if (rc != 0) die("cannot expand the shard pattern '%s'", pattern);
    // Everything allocated is reachable from dl before a shard can be refused, so that
    // dataloader_free releases a loader whose init died (the shard fuzz target relies on it).
    dl->paths = (char **)calloc_check(g.gl_pathc, sizeof(char *));
    dl->shard_tokens = (int64_t *)calloc_check(g.gl_pathc, sizeof(int64_t));
    for (size_t i = 0; i < g.gl_pathc; i++) {  // glob sorts the names
        dl->paths[i] = strdup(g.gl_pathv[i]);
        if (!dl->paths[i]) die("out of memory");
        dl->num_shards = (int)i + 1;
    }
    globfree(&g);
    int64_t need = (int64_t)num_ranks * B * T + 1;
    for (int i = 0; i < dl->num_shards; i++) {
        dl->shard_tokens[i] = validate_shard(dl->paths[i]);
        if (dl->shard_tokens[i] < need)
            die("shard '%s' has %lld tokens; one micro-step of %d rank(s) x B=%d x T=%d needs %lld",
                dl->paths[i], (long long)dl->shard_tokens[i], num_ranks, B, T, (long long)need);
    }
    dl->buffer = (uint16_t *)malloc_check(((size_t)B * T + 1) * sizeof(uint16_t));
    dl->open_shard = -1;
}

void dataloader_reset(DataLoader *dl) {
    dl->pos.shard = 0;
    dl->pos.position = 0;
}

int64_t dataloader_total_tokens(const DataLoader *dl) {
    int64_t n = 0;
    for (int i = 0; i < dl->num_shards; i++) n += dl->shard_tokens[i];
    return n;
}

void dataloader_next_batch(DataLoader *dl, int *inputs, int *targets) {
    int64_t window = (int64_t)dl->B * dl->T;
    int64_t step_tokens = window * dl->num_ranks;
    if (dl->pos.shard >= dl->num_shards || dl->pos.position < 0 ||
        dl->pos.position + step_tokens + 1 > dl->shard_tokens[dl->pos.shard]) {
        // The previous micro-step used up this shard (or the position came from a resume with
        // other shards): start the next one.
        dl->pos.shard = dl->pos.shard + 1 >= dl->num_shards || dl->pos.shard < 0 ? 0 : dl->pos.shard + 1;
        dl->pos.position = 0;
    }
    const char *path = dl->paths[dl->pos.shard];
    if (dl->open_shard != dl->pos.shard) {
        if (dl->file) fclose(dl->file);
        dl->file = fopen_check(path, "rb");
        dl->open_shard = dl->pos.shard;
    }
    int64_t first = dl->pos.position + window * dl->rank;
    // The shard was whole at open time; it can still be cut short or vanish under a running job.
    if (fseek(dl->file, kHeaderBytes + 2 * first, SEEK_SET) != 0 ||
        fread(dl->buffer, sizeof(uint16_t), (size_t)window + 1, dl->file) != (size_t)window + 1)
        die("shard '%s' became unreadable during the run: cannot read %lld tokens at token offset %lld "
            "(byte %lld): %s", path, (long long)window + 1, (long long)first, (long long)(kHeaderBytes + 2 * first),
            feof(dl->file) ? "the file is now shorter than its header says" : strerror(errno));
    for (int64_t i = 0; i <= window; i++) {
        if (dl->buffer[i] >= dl->vocab_size)
            die("shard '%s': token %u at offset %lld is outside the model's vocabulary (V=%d): the shard is corrupt "
                "or made for a larger vocabulary than the model's (--vocab-size, or the checkpoint's V)", path,
                dl->buffer[i], (long long)(first + i), dl->vocab_size);
    }
    for (int64_t i = 0; i < window; i++) {
        inputs[i] = dl->buffer[i];
        targets[i] = dl->buffer[i + 1];
    }
    dl->pos.position += step_tokens;
}

// A shard of N tokens gives the windows at 0, S, 2S, ... with k S + S + 1 <= N (S = B T ranks, one
// more token for the last target): floor((N - 1) / S) of them.
int64_t dataloader_batches_per_pass(const DataLoader *dl) {
    const int64_t step_tokens = (int64_t)dl->B * dl->T * dl->num_ranks;
    int64_t n = 0;
    for (int i = 0; i < dl->num_shards; i++) n += (dl->shard_tokens[i] - 1) / step_tokens;
    return n;
}

void dataloader_free(DataLoader *dl) {
    if (dl->file) fclose(dl->file);
    for (int i = 0; i < dl->num_shards; i++) free(dl->paths[i]);
    free(dl->paths);
    free(dl->shard_tokens);
    free(dl->buffer);
    memset(dl, 0, sizeof(*dl));
}
