// Token shards in the common GPT-2 format: int32 header[256] (magic 20240520, version 1, token
// count), then the tokens as uint16. A glob names the shards; they are read in sorted order.
//
// Every optimizer micro-step the world of `num_ranks` processes reads num_ranks consecutive
// windows of B*T+1 tokens from the current shard; rank r takes window r (its own part of the
// global batch). Inputs are the first B*T tokens of a window, targets the last B*T. When the
// shard has too few tokens left for the next micro-step the loader moves to the next shard,
// wrapping around to the first (a new epoch). Reads stream from the file: memory stays B*T.
#ifndef LLMC_DATALOADER_H
#define LLMC_DATALOADER_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHARD_MAGIC 20240520
#define SHARD_VERSION 1

typedef struct {
    int64_t shard;     // index into the sorted list of shards
    int64_t position;  // token offset of the next micro-step's first window in that shard
} DataPosition;

typedef struct {
    int B, T, rank, num_ranks, vocab_size;
    char **paths;
    int num_shards;
    int64_t *shard_tokens;
    DataPosition pos;
    FILE *file;          // the open current shard
    int64_t open_shard;  // which shard `file` is, -1 for none
    uint16_t *buffer;    // B*T+1 tokens
} DataLoader;

// Opens every shard that `pattern` matches and validates its header and size (a truncated or
// mislabelled shard is refused here, naming the file). Dies if nothing matches or a shard holds
// fewer tokens than one micro-step of the whole world needs.
void dataloader_init(DataLoader *dl, const char *pattern, int B, int T, int rank, int num_ranks, int vocab_size);
// Fills inputs and targets (B*T each). Dies naming the shard and token offset if a token is >= V
// or the shard was truncated after it was opened.
void dataloader_next_batch(DataLoader *dl, int *inputs, int *targets);
void dataloader_reset(DataLoader *dl);
int64_t dataloader_total_tokens(const DataLoader *dl);
// Micro-steps in one pass over the shards before next_batch wraps around (at least 1).
int64_t dataloader_batches_per_pass(const DataLoader *dl);
void dataloader_free(DataLoader *dl);

#ifdef __cplusplus
}
#endif
#endif
