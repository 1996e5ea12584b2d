// The ZeRO shard plan, shared by the CPU and the GPU trainer: which part of the flat parameter,
// gradient and optimizer buffers each rank owns, the segments the model gathers and reduces one
// at a time, and the per-rank memory of each stage.
//
// Slices. The N parameters (model.h's layer-major flat order) are padded with zeros to
// Np = round_up(N, W * ZERO_ALIGN) so that each of the W ranks owns one equal slice of
// S = Np / W elements, rank r the range [r S, (r + 1) S), every slice starting ZERO_ALIGN-aligned.
// Any N and W work; the padding (less than W * ZERO_ALIGN elements) is never updated.
//
// Segments. The model uses its weights in blocks that are contiguous in the flat order:
//   segment 0       the embeddings wte, wpe
//   segment 1 + l   layer l's 12 tensors
//   segment L + 1   the final LayerNorm lnfw, lnfb
// Stage 2 reduce-scatters a segment's gradient as soon as it is complete; stage 3 all-gathers a
// segment's weights just before they are used. The embeddings' gradient is the one that spans
// the passes: the output head adds its part in the forward pass (trainer.h: the head's backward
// runs there, chunk by chunk), the encoder its part at the end of the backward pass; so it has
// a scratch of its own (E elements) beside the one the other segments take in turn (Mb, the
// largest of them). A segment meets the slices
// of consecutive ranks: zero_split gives each rank's part, in rank order, which is exactly the
// layout the collectives of comm.h take.
//
// Stages (what each rank keeps, fp32 elements; M = the largest segment, E = the embeddings,
// Mb = the largest other segment, 2C = the final LayerNorm):
//   stage 0: params Np, grads Np, AdamW moments 2 Np         all-reduce gradients, update all
//   stage 1: params Np, grads Np, moments 2 S                 reduce-scatter grads, update the slice,
//                                                             all-gather the weights
//   stage 2: params Np, grads S + E + Mb, moments 2 S         + reduce each segment when complete
//                                                             from its scratch into the slice
//   stage 3: params S + M + 2C, grads S + E + Mb, moments 2 S + weights sharded: a segment (and the
//                                                             final LayerNorm beside the tied head) is
//                                                             gathered into scratch for each use
// so at stage 3 the per-rank total tends to 4 Np / W as the model grows (M, E and Mb shrink relative to N).
#ifndef LLMC_ZERO_H
#define LLMC_ZERO_H

#include <stddef.h>

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

// Slice alignment in elements: 64 floats = 256 bytes, a multiple of cache lines and of the
// widest GPU vector loads, and what NCCL recommends for buffer offsets.
#define ZERO_ALIGN 64

typedef struct {
    size_t begin, end;  // [begin, end) in the flat index space
} ZeroRange;

typedef struct {
    int stage;          // 0..3
    int rank, world;
    size_t num_params;  // N
    size_t padded;      // Np = world * slice
    size_t slice;       // S
    size_t max_segment; // M
    size_t embed_numel; // E, segment 0
    size_t max_block_segment; // Mb, the largest of segments 1 .. L + 1
    size_t final_numel; // 2C, the final LayerNorm segment
    int num_segments;   // L + 2
} ZeroPlan;

// What a stage shards, each stage adding to the one before: the AdamW moments and master
// weights from stage 1, the gradients from stage 2, the weights at stage 3.
static inline int zero_shards_optimizer(const ZeroPlan *p) { return p->stage >= 1; }
static inline int zero_shards_grads(const ZeroPlan *p) { return p->stage >= 2; }
static inline int zero_shards_params(const ZeroPlan *p) { return p->stage >= 3; }

// Fills the plan; dies with a message for a stage outside 0..3 or an impossible world size.
void zero_plan_init(ZeroPlan *p, const GPT2Config *cfg, int stage, int rank, int world);
// Rank q's slice [q S, (q + 1) S) (it may reach into the padding).
ZeroRange zero_slice(const ZeroPlan *p, int q);
// Rank q's slice without the padding: its part of the real parameters [0, N) (may be empty).
ZeroRange zero_slice_params(const ZeroPlan *p, int q);
// The flat range of the AdamW moments (and master weights) this rank keeps: every parameter at
// stage 0, its own slice from stage 1 (what a resume reads from the state files).
ZeroRange zero_optimizer_range(const ZeroPlan *p);
// Segment seg in [0, L + 2): see the header comment.
ZeroRange zero_segment(const GPT2Config *cfg, int seg);
int zero_layer_segment(int layer);
int zero_final_segment(const GPT2Config *cfg);
// counts[q] = the number of elements of r in rank q's slice, for every rank q. The ranks' parts
// are consecutive in r and in rank order, so they concatenate to r.
void zero_split(const ZeroPlan *p, ZeroRange r, size_t *counts);
// This rank's part of r (empty when begin == end).
ZeroRange zero_own_part(const ZeroPlan *p, ZeroRange r);

// The fp32 elements each rank keeps at the plan's stage (the formula in the header comment).
typedef struct {
    size_t params, grads, optimizer;
} ZeroMemory;
ZeroMemory zero_memory(const ZeroPlan *p);

#ifdef __cplusplus
}
#endif
#endif
