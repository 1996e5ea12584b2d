// GPU trainer for GPT-2: bf16 parameters and activations, fp32 gradients, master weights and AdamW
// moments, fp32 accumulation in every matmul and reduction. It computes what train_gpt.c (the
// fp32 CPU reference) computes, with the same flags, files, data loader and training loop
// (llmc/trainer.h): this file only supplies the arithmetic as a TrainerBackend.
//
// STATUS: compiled and linked for sm_90; short runs on one H100 (7c74e66) and one H200 (c95ef56)
// in bf16, fp8 and int8 (d12, d48; dev/gpu_report.md records what has run where). test_gpt.cu
// checks it against the CPU reference.
//
// Shapes: B sequences of T tokens, N = B*T rows, C channels, NH heads of HS = C / NH (64 or 128,
// what llmc/attention.cuh supports), vocabulary V padded to Vp. Activations are row-major
// (B, T, channels) as in train_gpt.c; linear weights (out, in). Kernels: llmc/*.cuh.
// Numerics: parameters are bf16 copies of fp32 master weights, rounded stochastically after each
// update with bits from (seed, step, element) so a resumed run rounds identically; the model file
// of a checkpoint holds the bf16 weights (exactly, as fp32), the state file the fp32 master.
// The four linear layers of each block run in bf16, FP8 or int8 (--matmul; llmc/matmul_lowp.cuh,
// whose CPU twin is train_gpt.c's emulation); the output head, attention, LayerNorm and AdamW
// stay in bf16/fp32 whatever the flag.
// The model runs on one stream and ZeRO's collectives on a second (GPUZero); the host waits only
// where the loop needs a number (the loss, the gradient norm, the update-clipping sums and the
// count of clipped tensors, sampled logits).
// Selective recomputation (-r, --recompute, --mem-budget; llmc/recompute.h), as train_gpt.c: each
// layer keeps what its policy says, one shared scratch holds the rest, and the backward pass of a
// block first reruns the forward steps it dropped (gpu_block_forward, the same code as the
// forward). STATUS: verified on an H100 at commit 7c74e66 (2026-11-23, dev/gpu_report.md): every
// policy bit-identical to none. On an H200 at c95ef56 (2026-11-27): the output head in chunks, its
// backward in the forward pass (test_gptcu check 2b, and check 7 on tiny with the wgmma attention),
// and --profile's marks (CUDA events; llmc/profile.cuh).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmc/amax_history.h"
#include "llmc/args.h"
#include "llmc/checkpoint.h"
#include "llmc/comm.h"
#include "llmc/comm_nccl.h"
#include "llmc/model.h"
#include "llmc/optimizer.h"
#include "llmc/rng.h"
#include "llmc/state.h"
#include "llmc/trainer.h"
#include "llmc/utils.h"
#include "llmc/zero.h"

#include "llmc/adamw.cuh"
#include "llmc/attention.cuh"
#include "llmc/classifier.cuh"
#include "llmc/colsum.cuh"
#include "llmc/cuda_common.cuh"
#include "llmc/encoder.cuh"
#include "llmc/gelu.cuh"
#include "llmc/global_norm.cuh"
#include "llmc/layernorm.cuh"
#include "llmc/matmul.cuh"
#include "llmc/matmul_lowp.cuh"
#include "llmc/profile.cuh"

// ----------------------------------------------------------------------------------------------
// The model on the device

typedef struct {  // what one block keeps for its backward pass (bf16 unless noted); NULL: not kept
    bf16 *ln1;                    // (N, C)
    float *ln1_mean, *ln1_rstd;   // (N) fp32
    bf16 *qkv;                    // (N, 3C): per token [q | k | v], each NH heads of HS
    bf16 *atty;                   // (N, C) attention output before the projection
    float *lse;                   // (B, NH, T) fp32 softmax log-sum-exp (attention.cuh)
    bf16 *residual2;              // (N, C) residual after attention
    bf16 *ln2;                    // (N, C)
    float *ln2_mean, *ln2_rstd;
    bf16 *fch, *fch_gelu;         // (N, 4C) fc pre-activation and GELU output
    bf16 *residual3;              // (N, C) block output
    // With FP8 weight gradients (gpu_keeps_input_codes): the block linears' inputs as the
    // transposed FP8 codes their weight gradients read, (IC, N), written by the training forward's
    // cast; ln1, ln2 and fch_gelu are then not kept in bf16 (the shared scratch holds them for the
    // forward), atty is (the attention backward reads it).
    uint8_t *ln1_t, *atty_t, *ln2_t, *gelu_t;
} GPUBlockActs;

// ----------------------------------------------------------------------------------------------
// ZeRO on the GPU (llmc/zero.h has the plan, the segments and the memory formula; train_gpt.c's
// Zero is the CPU twin). STATUS: verified on an H100 at commit 7c74e66 (2026-11-23, dev/gpu_report.md) with one NCCL rank and with 2 and 3
// host-staged MPI ranks on one GPU, and with the embeddings' own gradient scratch
// (ZERO_EMBED_SCRATCH) and the prefetch during the output head on an H200 at c95ef56 (2026-11-27):
// NCCL across several GPUs has not run.
//
// Buffers per rank (elements; S the slice, M the largest segment, Np the padded model):
//   params (bf16)  stage 0-2: Np, the whole model;  stage 3: the slice S, plus two M-element
//                  gather buffers (double buffer: one segment in use, the next one arriving)
//                  and a 2C one for the final LayerNorm, which the output head uses beside the
//                  embeddings
//   grads (fp32)   stage 0-1: Np;  stage 2-3: the slice S plus two Mb-element segment scratches
//                  and an E-element one for the embeddings (llmc/zero.h: their gradient spans
//                  the forward and the backward pass)
//   master, m, v   stage 0: Np each;  stage 1-3: S each (fp32)
// zero_memory counts fp32 elements: here params are bf16 (2 bytes each) and the fp32 master
// weights follow the optimizer's sharding (zero_memory's optimizer / 2 elements); stage 3 adds
// the second gather buffer (M) to the formula's S + M + 2C, and stages 2-3 the second gradient
// scratch (Mb) to the formula's S + E + Mb. Each scratch has 256 bytes of slack:
// a segment starts at the byte offset (its flat offset mod 256 bytes), so every tensor in scratch
// has the address alignment it has in the whole buffer, cuBLASLt picks the same algorithms and
// stages 1, 2 and 3 compute the same bits.
//
// Streams: the model computes on g->stream; every collective runs on comm_stream (the Comm was
// created on it). Before a collective, comm_stream waits for the compute stream's work so far
// (event compute_mark); the compute stream waits for a gathered segment (slot_ready) before its
// first use, and before it writes a gradient scratch, for the reduction that last read that
// scratch (reduced[b]). A gather buffer is refilled only after its segment was released, and the
// wait on compute_mark orders the refill after the release's readers and after the update of the
// parameters. The segments' gradients alternate between two scratches, so that the reduction of
// one segment (comm stream) overlaps the backward of the next (compute stream), for Mb floats
// more than the formula's one scratch; the embeddings' gradient has the third. At stages 0-1 the
// step's last micro-step reduces each segment's gradient in place as its backward completes it
// (no kernel writes it again before the update), so those reductions overlap the backward too.
enum { ZERO_SLOTS = 3, ZERO_FINAL_SLOT = 2 };  // two gather buffers for segments, one for the final LayerNorm
enum { ZERO_SCRATCHES = 3, ZERO_EMBED_SCRATCH = 2 };  // two gradient scratches in turn, one for the embeddings

typedef struct {
    ZeroPlan plan;
    GPT2Config cfg;
    Comm device_comm;  // collectives on comm_stream (llmc/comm_nccl.h), or the single process
    Comm *comm;
    cudaStream_t comm_stream;
    cudaEvent_t compute_mark, comm_done;
    size_t *counts;                         // W counts for zero_split
    bf16 *slot_base[ZERO_SLOTS];            // stage 3: gather buffers
    int slot_segment[ZERO_SLOTS], slot_acquired[ZERO_SLOTS];
    cudaEvent_t slot_ready[ZERO_SLOTS];
    float *grad_scratch[ZERO_SCRATCHES];    // stage 2-3: two segments' gradients in turn, the embeddings'
    int scratch_segment[ZERO_SCRATCHES];    // the segment each scratch holds (-1: none)
    cudaEvent_t reduced[ZERO_SCRATCHES];    // the last reduction that read each scratch
    int next_scratch;                       // the scratch (0 or 1) the next segment other than 0 takes
    // Stages 1-2: the all-gather of each segment's updated weights (gpu_update), which the compute
    // stream waits for at the segment's first use (zero_weights_acquire), not before the forward.
    cudaEvent_t *segment_gathered;
    bool *segment_pending;
    uint64_t debug_delay_ns;                // LLMC_ZERO_DEBUG_DELAY_US (see zero_debug_delay)
} GPUZero;

typedef struct {
    GPT2Config cfg;
    size_t num_params;
    int B, T;  // capacity of the activation buffers
    AdamWConfig hp;
    uint64_t rounding_seed;  // stochastic rounding of the bf16 weights
    cudaStream_t stream;
    Matmul mm;
    LowpMatmul lp;  // the block linears' precision, scales and quantized scratch
    AdamW opt;
    // parameters and optimizer state, flat in the layer-major order of llmc/model.h: whole or
    // this rank's ZeRO slice (see GPUZero)
    bf16 *params;
    float *grads, *master, *m, *v;
    bool grads_unwritten;  // the step's first micro-step has not written its gradient yet (see grads_accumulate)
    int micro_steps_left;  // of the step (gpu_zero_grads); the last reduces at stages 0-1 (zero_grads_release)
    // The weights may have changed since the last training micro-step: set by their writers
    // (gpu_set_weights, gpu_update) and, as the backend contract allows them to change only between
    // optimizer steps, at every step's start (gpu_zero_grads). Until a training micro-step clears
    // it, the FP8/int8 weight casts may not keep the previous micro-step's codes (lowp_begin_forward).
    bool weights_changed;
    GPUZero zero;
    // activations, carved from one allocation
    void *acts_memory;
    size_t acts_bytes;
    bf16 *encoded;                // (N, C)
    GPUBlockActs *blocks;         // L of them (host array of device pointers)
    int *policy;                  // L recompute policies (llmc/recompute.h)
    int gelu_fusion;              // --gelu-fusion: enum GeluFusion
    int separate_casts;           // GPUModelOptions.separate_casts
    int attention;                // --attention: enum AttentionKernel (llmc/args.h)
    size_t kept_bytes;            // the activations kept for backward (exact sizes, no alignment)
    GPUBlockActs work;            // recompute scratch: one block's dropped buffers, shared by all layers
    void *recompute_scratch;      // where work lives (NULL when no layer recomputes nor keeps input codes)
    size_t recompute_scratch_bytes;
    float *lnf_mean, *lnf_rstd;   // (N) the final LayerNorm's statistics
    bf16 *dbtc;                   // (N, C) d lnf from the output head until the backward pass reads
                                  // it; then scratch of every layer's backward
    // scratch: the output head's (llmc/trainer.h), the backward's (shared by all layers)
    bf16 *lnf;                    // (N, C) the final LayerNorm's output
    int head_rows;                // rows of the output head at once
    bf16 *logits;                 // (head_rows, Vp) one chunk's logits, dlogits in place; the same
                                  // memory as work, dresidual and dwide (layout_activations)
    float *losses;                // (N)
    bf16 *dresidual;              // (N, C)
    bf16 *dwide;                  // (N, 4C): dfch in the MLP, dqkv (N, 3C) in attention
    float *colsum_scratch;        // colsum_scratch_floats(N, 4C)
    void *att_scratch;            // attention_backward_scratch_bytes
    double *norm_scratch, *norm_out;
    // tokens: [inputs N][targets N][encoder buckets 3N + 1] on the device and pinned on the host
    int *d_tokens, *h_tokens;
    int *h_counts;                // Vp, scratch of the bucket sort
    int num_buckets;              // of the last forward with gradients
    float *h_losses;              // pinned (N)
    double *h_norm;               // pinned (1)
    bf16 *h_logits;               // pinned (Vp)
    EventTimeline timeline;       // --profile (llmc/profile.h)
} GPUModel;

// --profile: the part of the step that begins here, in the compute stream (llmc/profile.h).
static void mark(GPUModel *g, ProfPart part) { event_timeline_mark(&g->timeline, part, g->stream); }

// The segment that holds tensor (kind, layer) (llmc/zero.h's segments).
static int param_segment(const GPT2Config *cfg, int kind, int layer) {
    if (layer >= 0) return zero_layer_segment(layer);
    return kind == PT_WTE || kind == PT_WPE ? 0 : zero_final_segment(cfg);
}

// Where segment seg starts in a scratch of `size`-byte elements: the flat offset's alignment
// modulo 256 bytes (see the header comment).
static size_t scratch_shift(const GPT2Config *cfg, int seg, size_t size) {
    return zero_segment(cfg, seg).begin % (256 / size);
}
static bf16 *slot_data(GPUZero *z, int s, int seg) { return z->slot_base[s] + scratch_shift(&z->cfg, seg, sizeof(bf16)); }
static float *scratch_data(GPUZero *z, int b, int seg) {
    return z->grad_scratch[b] + scratch_shift(&z->cfg, seg, sizeof(float));
}
// The gradient scratch that holds segment seg (-1: none).
static int zero_scratch_of(const GPUZero *z, int seg) {
    for (int b = 0; b < ZERO_SCRATCHES; b++)
        if (z->scratch_segment[b] == seg) return b;
    return -1;
}

// LLMC_ZERO_DEBUG_DELAY_US (a test hook, off when unset): every collective's work on the comm
// stream starts that much later, the compute stream pauses that long after taking a gradient
// scratch, and a scratch is filled with NaN once its reduction has read it (so a gradient that
// added to it instead of overwriting would be NaN), a gather buffer before it is filled. With the
// streams ordered right none of this changes a bit; a missing or misplaced wait then makes a
// stream read the other's data too early, every time, as NaN or different bits
// (scripts/gpu_zero_check.sh compares such runs with the undelayed ones).
__global__ void zero_debug_delay_kernel(uint64_t ns) {
    const uint64_t start = global_timer_ns();
    while (global_timer_ns() - start < ns) {
    }
}
static void zero_debug_delay(const GPUZero *z, cudaStream_t stream) {
    if (!z->debug_delay_ns) return;
    LLMC_LAUNCH(1, 1, 0, stream, zero_debug_delay_kernel)(z->debug_delay_ns);
    kernelCheck();
}
static void zero_debug_poison(const GPUZero *z, void *p, size_t bytes) {
    if (z->debug_delay_ns) cudaCheck(cudaMemsetAsync(p, 0xFF, bytes, z->comm_stream));
}

// The comm stream waits for the compute stream's work so far; then the compute stream waits for
// the collectives enqueued in between.
static void zero_comm_begin(GPUModel *g) {
    cudaCheck(cudaEventRecord(g->zero.compute_mark, g->stream));
    cudaCheck(cudaStreamWaitEvent(g->zero.comm_stream, g->zero.compute_mark, 0));
    zero_debug_delay(&g->zero, g->zero.comm_stream);
}
static void zero_comm_end(GPUModel *g) {
    cudaCheck(cudaEventRecord(g->zero.comm_done, g->zero.comm_stream));
    cudaCheck(cudaStreamWaitEvent(g->stream, g->zero.comm_done, 0));
}

static int zero_slot_of(const GPUZero *z, int seg) {
    for (int s = 0; s < ZERO_SLOTS; s++)
        if (z->slot_segment[s] == seg) return s;
    return -1;
}

// Stage 3: starts gathering segment seg's bf16 weights into a free buffer on the comm stream
// (nothing when it is there or arriving). Every rank calls it in the same order.
static void zero_weights_prefetch(GPUModel *g, int seg) {
    GPUZero *z = &g->zero;
    if (!zero_shards_params(&z->plan) || zero_slot_of(z, seg) >= 0) return;
    int s = ZERO_FINAL_SLOT;
    if (seg != zero_final_segment(&z->cfg)) {
        s = z->slot_segment[0] < 0 ? 0 : z->slot_segment[1] < 0 ? 1 : -1;
        if (s < 0)
            die("internal error: ZeRO-3 gathers segment %d while segments %d and %d are held", seg, z->slot_segment[0],
                z->slot_segment[1]);
    }
    const ZeroRange r = zero_segment(&z->cfg, seg), own = zero_own_part(&z->plan, r);
    bf16 *dst = slot_data(z, s, seg);
    zero_comm_begin(g);
    zero_debug_poison(z, dst, (r.end - r.begin) * sizeof(bf16));
    if (own.end > own.begin)
        cudaCheck(cudaMemcpyAsync(dst + (own.begin - r.begin), g->params + (own.begin - zero_slice(&z->plan, z->plan.rank).begin),
                                  (own.end - own.begin) * sizeof(bf16), cudaMemcpyDeviceToDevice, z->comm_stream));
    zero_split(&z->plan, r, z->counts);
    z->comm->allgather_u16(z->comm, (uint16_t *)dst, z->counts);
    cudaCheck(cudaEventRecord(z->slot_ready[s], z->comm_stream));
    z->slot_segment[s] = seg;
    z->slot_acquired[s] = 0;
}

// Stages 1-2: the compute stream waits for the update's all-gather of segment seg, if pending.
static void zero_weights_gathered(GPUModel *g, int seg) {
    GPUZero *z = &g->zero;
    if (!z->segment_pending[seg]) return;
    mark(g, PROF_COMM);
    cudaCheck(cudaStreamWaitEvent(g->stream, z->segment_gathered[seg], 0));
    z->segment_pending[seg] = false;
}
static void zero_weights_all_gathered(GPUModel *g) {
    for (int seg = 0; seg < g->zero.plan.num_segments; seg++) zero_weights_gathered(g, seg);
}

// Segment seg's weights are usable on the compute stream (until zero_weights_release at stage 3).
static void zero_weights_acquire(GPUModel *g, int seg) {
    GPUZero *z = &g->zero;
    if (!zero_shards_params(&z->plan)) {
        zero_weights_gathered(g, seg);
        return;
    }
    zero_weights_prefetch(g, seg);
    const int s = zero_slot_of(z, seg);
    mark(g, PROF_COMM);
    cudaCheck(cudaStreamWaitEvent(g->stream, z->slot_ready[s], 0));
    z->slot_acquired[s] = 1;
}

static void zero_weights_release(GPUModel *g, int seg) {
    GPUZero *z = &g->zero;
    if (!zero_shards_params(&z->plan)) return;
    const int s = zero_slot_of(z, seg);
    if (s < 0) die("internal error: ZeRO-3 releases segment %d, which is not held", seg);
    z->slot_segment[s] = -1;
    z->slot_acquired[s] = 0;
}

// The forward pass's prefetch at the start of layer l: the next layer, or after the last one
// the final LayerNorm and the embeddings for the output head.
static void zero_forward_prefetch(GPUModel *g, int l) {
    if (l + 1 < g->cfg.num_layers) {
        zero_weights_prefetch(g, zero_layer_segment(l + 1));
        return;
    }
    zero_weights_prefetch(g, zero_final_segment(&g->cfg));
    zero_weights_prefetch(g, 0);
}

// Stages 2-3: segment seg's gradient of this micro-step is written into the scratch (its first
// write to each tensor overwrites, grads_accumulate) until zero_grads_release reduces it into
// this rank's slice.
static void zero_grads_acquire(GPUModel *g, int seg) {
    GPUZero *z = &g->zero;
    if (!zero_shards_grads(&z->plan)) return;
    const int b = seg == 0 ? ZERO_EMBED_SCRATCH : z->next_scratch;
    if (z->scratch_segment[b] >= 0 || zero_scratch_of(z, seg) >= 0)
        die("internal error: ZeRO gradient scratch %d asked for segment %d while it holds %d", b, seg,
            z->scratch_segment[b]);
    z->scratch_segment[b] = seg;
    if (seg != 0) z->next_scratch = b ^ 1;
    mark(g, PROF_COMM);
    cudaCheck(cudaStreamWaitEvent(g->stream, z->reduced[b], 0));  // the last reduction has read this scratch
    zero_debug_delay(z, g->stream);
}

// dst[i] += src[i], i < n.
__global__ void add_into_kernel(float *dst, const float *src, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] += src[i];
}

// Segment seg's gradient of this micro-step is complete. Stages 2-3: sums it over the ranks into
// each owner's part (comm stream) and adds this rank's part to its gradient slice (the step's sum
// over micro-steps). Stages 0-1, in the step's last micro-step, where the segment's gradient is
// the step's on every rank: all-reduces it (stage 0) or reduce-scatters it into the owners' parts
// (stage 1) in place, while the backward pass goes on (gpu_grad_norm waits for it); earlier
// micro-steps add to it, so they reduce nothing.
static void zero_grads_release(GPUModel *g, int seg) {
    GPUZero *z = &g->zero;
    const ZeroRange r = zero_segment(&z->cfg, seg), own = zero_own_part(&z->plan, r);
    if (!zero_shards_grads(&z->plan)) {
        if (g->micro_steps_left != 1 || z->plan.world == 1) return;
        zero_comm_begin(g);
        if (z->plan.stage == 0) {
            z->comm->allreduce_sum_f32(z->comm, g->grads + r.begin, r.end - r.begin);
        } else {
            zero_split(&z->plan, r, z->counts);
            z->comm->reduce_scatter_sum_f32(z->comm, g->grads + r.begin, z->counts);
        }
        return;
    }
    const int b = zero_scratch_of(z, seg);
    if (b < 0) die("internal error: ZeRO gradient of segment %d released without its scratch", seg);
    float *scratch = scratch_data(z, b, seg);
    zero_comm_begin(g);
    zero_split(&z->plan, r, z->counts);
    z->comm->reduce_scatter_sum_f32(z->comm, scratch, z->counts);
    const size_t n = own.end - own.begin;
    if (n > 0) {
        LLMC_LAUNCH(ceil_div((int64_t)n, 256), 256, 0, z->comm_stream, add_into_kernel)(
            g->grads + (own.begin - zero_slice(&z->plan, z->plan.rank).begin), scratch + (own.begin - r.begin), n);
        kernelCheck();
    }
    zero_debug_poison(z, scratch, (r.end - r.begin) * sizeof(float));
    cudaCheck(cudaEventRecord(z->reduced[b], z->comm_stream));
    z->scratch_segment[b] = -1;
}

// Tensor (kind, layer) of the weights: in the whole buffer, or (stage 3) in its gathered segment.
static bf16 *param_ptr(GPUModel *g, int kind, int layer) {
    const size_t off = gpt2_param_offset(&g->cfg, kind, layer);
    GPUZero *z = &g->zero;
    const int seg = param_segment(&g->cfg, kind, layer);
    if (!zero_shards_params(&z->plan)) {
        if (z->segment_pending[seg]) die("internal error: segment %d used before its all-gather was waited for", seg);
        return g->params + off;
    }
    const int s = zero_slot_of(z, seg);
    if (s < 0 || !z->slot_acquired[s]) die("internal error: ZeRO-3 uses segment %d, which is not acquired", seg);
    return slot_data(z, s, seg) + (off - zero_segment(&g->cfg, seg).begin);
}

// Tensor (kind, layer) of the gradient: in the whole buffer, or (stages 2-3) in the scratch.
static float *grad_ptr(GPUModel *g, int kind, int layer) {
    const size_t off = gpt2_param_offset(&g->cfg, kind, layer);
    GPUZero *z = &g->zero;
    if (!zero_shards_grads(&z->plan)) return g->grads + off;
    const int seg = param_segment(&g->cfg, kind, layer), b = zero_scratch_of(z, seg);
    if (b < 0) die("internal error: ZeRO gradient of segment %d used outside its scratch", seg);
    return scratch_data(z, b, seg) + (off - zero_segment(&g->cfg, seg).begin);
}

// Whether a gradient write adds to what its tensor holds (+=) or overwrites it (=). In the step's
// first micro-step each tensor's first write overwrites, so the gradient needs no memset and the
// weight gradients' GEMMs no read of the zeros (8 bytes per parameter per step); the bits are
// those of adding to zeros. At stages 2-3 every micro-step writes a scratch that holds nothing of
// its own to add to.
static bool grads_accumulate(const GPUModel *g) { return !g->grads_unwritten && !zero_shards_grads(&g->zero.plan); }

// This rank's slice (from its first element) of a buffer the stage keeps whole or sharded.
static size_t own_slice_offset(const GPUModel *g, int sharded) {
    return sharded ? 0 : zero_slice(&g->zero.plan, g->zero.plan.rank).begin;
}
static bf16 *own_params(GPUModel *g) { return g->params + own_slice_offset(g, zero_shards_params(&g->zero.plan)); }
static float *own_grads(GPUModel *g) { return g->grads + own_slice_offset(g, zero_shards_grads(&g->zero.plan)); }
static float *own_state(GPUModel *g, float *buf) { return buf + own_slice_offset(g, zero_shards_optimizer(&g->zero.plan)); }

// Waits for the compute stream; under NCCL with the deadline of LLMC_COMM_TIMEOUT.
static void gpu_sync(GPUModel *g) { comm_gpu_wait(g->zero.comm, g->stream); }

// Hands out 256-byte aligned pieces of one allocation (base NULL: only measures); requested
// counts the bytes asked for, without the alignment.
typedef struct {
    char *base;
    size_t used, requested;
} Carver;
static void *carve(Carver *c, size_t bytes) {
    void *p = c->base ? c->base + c->used : NULL;
    c->used += (bytes + 255) / 256 * 256;
    c->requested += bytes;
    return p;
}

// The cost model of llmc/recompute.h for this trainer: the fused attention keeps nothing beyond
// its statistics, one fp32 log-sum-exp per head and token (also under RC_ATTN); activations are
// bf16 (2 bytes, the model's element) and the statistics fp32 (mean, rstd, lse: width 2); with
// input_codes (FP8 weight gradients) the block linears' inputs are kept as 1-byte FP8 codes.
#define GPU_ACT_BYTES 2.0
static RecomputeShape gpu_recompute_shape(const GPT2Config *cfg, int T, bool input_codes) {
    return (RecomputeShape){cfg->channels, cfg->num_heads, T, 0, 1, 2, GPU_ACT_BYTES,
                            input_codes ? 1.0 / GPU_ACT_BYTES : 0.0};
}

// Whether the block linears' inputs are kept as their transposed FP8 codes (GPUBlockActs): with FP8
// weight gradients, which read nothing else of them, the backward then casts none of them again
// (N x 7C elements a layer: 2 bytes read and 1 written each) and keeps half the bytes of ln1, ln2
// and the GELU output.
static bool gpu_keeps_input_codes(matmul_precision precision, int fp8_wgrad) {
    return precision == MATMUL_FP8 && fp8_wgrad;
}

// The kept activations no policy changes, for B*T tokens: encoded and d lnf (the output head's
// backward ran in the forward pass; llmc/trainer.h), bf16, C each, and the final LayerNorm's mean
// and rstd (fp32).
static double gpu_fixed_activation_bytes(const GPT2Config *cfg, int B, int T) {
    return (double)B * T * (2.0 * 2.0 * cfg->channels + 4.0 * 2);
}

// The recompute policy of every layer from the flags (llmc/trainer.c prints the plan with the
// predicted activation bytes, which gpu_model_alloc's allocation equals).
static void gpu_recompute_plan(const TrainConfig *tc, const GPT2Config *cfg, int rank, int *policies) {
    const RecomputeShape shape =
        gpu_recompute_shape(cfg, tc->T, gpu_keeps_input_codes(trainer_matmul_precision(tc, true), tc->fp8_wgrad));
    trainer_recompute_plan(tc, cfg, &shape, &recompute_device_h100, gpu_fixed_activation_bytes(cfg, tc->B, tc->T),
                           rank, policies);
}

// The predicted bytes of the kept activations for B x T tokens under policies (L of them).
static double gpu_predicted_activation_bytes(const GPT2Config *cfg, int B, int T, const int *policies,
                                             bool input_codes) {
    const RecomputeShape shape = gpu_recompute_shape(cfg, T, input_codes);
    double elements = 0.0;
    for (int l = 0; l < cfg->num_layers; l++) elements += recompute_layer_elements(&shape, policies[l]);
    return gpu_fixed_activation_bytes(cfg, B, T) + elements * GPU_ACT_BYTES * B * T;
}

// Carves one block's buffers for N = B*T tokens: every buffer when keep_all (the recompute
// scratch; it never holds residual3, which every block keeps, nor codes), else what `policy`
// keeps (the others stay NULL; recompute_keeps says which), with input_codes the linears' inputs
// as codes (GPUBlockActs). The attention keeps its log-sum-exp (its statistics) under RC_ATTN
// too: the backward and the recomputed forward read it.
static void take_block(Carver *cv, GPUBlockActs *a, int policy, bool keep_all, bool input_codes, size_t N, size_t C,
                       size_t NH) {
    memset(a, 0, sizeof(*a));
    const bool codes = input_codes && !keep_all;
#define TAKE(field, type, n, buffer)                                                                    \
    do {                                                                                                 \
        if (keep_all || recompute_keeps(policy, buffer)) a->field = (type *)carve(cv, (n) * sizeof(type)); \
    } while (0)
    if (codes) TAKE(ln1_t, uint8_t, N * C, RB_LN1);
    else TAKE(ln1, bf16, N * C, RB_LN1);
    TAKE(ln1_mean, float, N, RB_LN1_STATS);
    TAKE(ln1_rstd, float, N, RB_LN1_STATS);
    TAKE(qkv, bf16, N * 3 * C, RB_QKV);
    TAKE(atty, bf16, N * C, RB_ATT_OUT);
    if (codes) TAKE(atty_t, uint8_t, N * C, RB_ATT_OUT);
    TAKE(lse, float, N * NH, RB_ATT_STATS);
    TAKE(residual2, bf16, N * C, RB_RESIDUAL2);
    if (codes) TAKE(ln2_t, uint8_t, N * C, RB_LN2);
    else TAKE(ln2, bf16, N * C, RB_LN2);
    TAKE(ln2_mean, float, N, RB_LN2_STATS);
    TAKE(ln2_rstd, float, N, RB_LN2_STATS);
    TAKE(fch, bf16, N * 4 * C, RB_FCH);
    if (codes) TAKE(gelu_t, uint8_t, N * 4 * C, RB_FCH_GELU);
    else TAKE(fch_gelu, bf16, N * 4 * C, RB_FCH_GELU);
#undef TAKE
    if (!keep_all) a->residual3 = (bf16 *)carve(cv, N * C * sizeof(bf16));  // every block keeps its output
}

// Block l's buffers for a pass: what it keeps, and the recompute scratch for the rest.
static GPUBlockActs block_buffers(const GPUModel *g, int l) {
    GPUBlockActs a = g->blocks[l];
    const GPUBlockActs *w = &g->work;
    bf16 **act[] = {&a.ln1, &a.qkv, &a.atty, &a.residual2, &a.ln2, &a.fch, &a.fch_gelu};
    bf16 *const act_scratch[] = {w->ln1, w->qkv, w->atty, w->residual2, w->ln2, w->fch, w->fch_gelu};
    float **stat[] = {&a.ln1_mean, &a.ln1_rstd, &a.lse, &a.ln2_mean, &a.ln2_rstd};
    float *const stat_scratch[] = {w->ln1_mean, w->ln1_rstd, w->lse, w->ln2_mean, w->ln2_rstd};
    for (size_t i = 0; i < sizeof(act) / sizeof(act[0]); i++)
        if (!*act[i]) *act[i] = act_scratch[i];
    for (size_t i = 0; i < sizeof(stat) / sizeof(stat[0]); i++)
        if (!*stat[i]) *stat[i] = stat_scratch[i];
    return a;
}

// Whether --attention runs a wgmma forward (sm_90a): wgmma, wgmma-fwd, wgmma-rdq and wgmma-ws (the
// last its warp-specialized one).
static bool wgmma_forward(int attention) {
    return attention == ATTENTION_WGMMA || attention == ATTENTION_WGMMA_FORWARD || attention == ATTENTION_WGMMA_RDQ ||
           attention == ATTENTION_WGMMA_WS;
}
// Whether --attention's backward makes dQ by integer reduction (mma-rdq, wgmma-rdq, wgmma-ws): its
// scratch, and dqkv itself, not FP8 codes of it.
static bool reduces_dq(int attention) {
    return attention == ATTENTION_MMA_RDQ || attention == ATTENTION_WGMMA_RDQ || attention == ATTENTION_WGMMA_WS;
}
// Whether --attention's backward is written for head size 64 only (the wgmma backwards).
static bool backward_needs_hs64(int attention) {
    return attention == ATTENTION_WGMMA || attention == ATTENTION_WGMMA_RDQ || attention == ATTENTION_WGMMA_WS;
}

static void layout_activations(GPUModel *g, Carver *cv) {
    const size_t L = g->cfg.num_layers, C = g->cfg.channels, NH = g->cfg.num_heads, N = (size_t)g->B * g->T;
#define TAKE(type, n) (type *)carve(cv, (n) * sizeof(type))
    g->encoded = TAKE(bf16, N * C);
    const bool codes = gpu_keeps_input_codes(g->lp.precision, g->lp.fp8_wgrad);
    for (size_t l = 0; l < L; l++) take_block(cv, &g->blocks[l], g->policy[l], false, codes, N, C, NH);
    g->lnf_mean = TAKE(float, N);
    g->lnf_rstd = TAKE(float, N);
    g->dbtc = TAKE(bf16, N * C);
    g->kept_bytes = cv->requested;  // everything above: what the backward reads
    // One region, two lives: the output head's chunk of logits, from the head (the forward's end)
    // to the backward's start, then the backward's own buffers (the recompute scratch, dresidual,
    // dwide), which hold nothing between a backward and the next forward's head.
    const size_t shared_begin = cv->used;
    g->logits = TAKE(bf16, (size_t)g->head_rows * g->cfg.padded_vocab_size);
    const size_t head_end = cv->used;
    cv->used = shared_begin;
    // The recompute scratch, only if some layer recomputes or keeps its linears' inputs as codes
    // alone (their bf16 values pass through the scratch).
    int recomputes = codes;
    for (size_t l = 0; l < L; l++) recomputes |= g->policy[l];
    if (recomputes) take_block(cv, &g->work, RC_NONE, true, false, N, C, NH);
    else memset(&g->work, 0, sizeof(g->work));
    g->recompute_scratch = recomputes && cv->base ? cv->base + shared_begin : NULL;
    g->recompute_scratch_bytes = cv->used - shared_begin;
    g->dresidual = TAKE(bf16, N * C);
    g->dwide = TAKE(bf16, N * 4 * C);
    if (cv->used < head_end) cv->used = head_end;
    g->lnf = TAKE(bf16, N * C);
    g->losses = TAKE(float, N);
    g->colsum_scratch = TAKE(float, colsum_scratch_floats((int)N, 4 * (int)C));
    g->att_scratch = TAKE(unsigned char, (reduces_dq(g->attention) ? attention_backward_reduce_dq_scratch_bytes
                                                                    : attention_backward_scratch_bytes)(
                                             g->B, g->T, (int)NH, (int)(C / NH)));
    g->norm_scratch = TAKE(double, (size_t)global_norm_chunks(g->num_params));
    g->norm_out = TAKE(double, 1);
    g->d_tokens = TAKE(int, 5 * N + 1);
#undef TAKE
}

static size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

// cudaMalloc of one of the trainer's large buffers. Out of device memory, one line that names the
// buffer, its size, what was free and the flags that shrink it, instead of cudaCheck's bare
// status.
static void *device_alloc(size_t bytes, const char *what, const char *shrink) {
    void *p = NULL;
    const cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        size_t free_bytes = 0, total_bytes = 0;
        cudaCheck(cudaMemGetInfo(&free_bytes, &total_bytes));
        die("out of device memory: %s need %.1f MiB, and %.1f MiB of the device's %.1f MiB are free; %s", what,
            bytes / 1048576.0, free_bytes / 1048576.0, total_bytes / 1048576.0, shrink);
    }
    cudaCheck(err);
    return p;
}

// The buffers of GPUZero's table for the plan, the streams, events and the device communicator
// of host's ranks (NULL: a single process).
static void gpu_zero_alloc(GPUModel *g, int stage, const Comm *host) {
    GPUZero *z = &g->zero;
    z->cfg = g->cfg;
    cudaCheck(cudaStreamCreateWithFlags(&z->comm_stream, cudaStreamNonBlocking));
    if (host) comm_gpu_init(&z->device_comm, host, z->comm_stream);
    else comm_init_single(&z->device_comm);
    z->comm = &z->device_comm;
    zero_plan_init(&z->plan, &g->cfg, stage, z->comm->rank, z->comm->size);
    z->counts = (size_t *)malloc_check((size_t)z->comm->size * sizeof(size_t));
    cudaCheck(cudaEventCreateWithFlags(&z->compute_mark, cudaEventDisableTiming));
    cudaCheck(cudaEventCreateWithFlags(&z->comm_done, cudaEventDisableTiming));
    for (int b = 0; b < ZERO_SCRATCHES; b++) cudaCheck(cudaEventCreateWithFlags(&z->reduced[b], cudaEventDisableTiming));
    const int segments = z->plan.num_segments;
    z->segment_gathered = (cudaEvent_t *)malloc_check((size_t)segments * sizeof(cudaEvent_t));
    z->segment_pending = (bool *)calloc_check((size_t)segments, sizeof(bool));
    for (int seg = 0; seg < segments; seg++)
        cudaCheck(cudaEventCreateWithFlags(&z->segment_gathered[seg], cudaEventDisableTiming));
    z->debug_delay_ns = 1000 * (uint64_t)env_nonnegative("LLMC_ZERO_DEBUG_DELAY_US", 0);
    const ZeroPlan *p = &z->plan;
    const size_t S = p->slice, M = p->max_segment, slack_bf16 = 256 / sizeof(bf16), slack_f32 = 256 / sizeof(float);
    const size_t nparams = zero_shards_params(p) ? S : p->padded, ngrads = zero_shards_grads(p) ? S : p->padded;
    const size_t nstate = zero_shards_optimizer(p) ? S : p->padded;
    // Gather buffers and scratch follow the slices in the same allocations, each starting 256-byte
    // aligned (S is a multiple of ZERO_ALIGN = 64 elements: 256 bytes of fp32, 128 of bf16).
    const size_t params_end = round_up(nparams, slack_bf16);
    const size_t slot_elems[ZERO_SLOTS] = {round_up(M + slack_bf16, slack_bf16), round_up(M + slack_bf16, slack_bf16),
                                           round_up(p->final_numel + slack_bf16, slack_bf16)};
    size_t gather = 0;
    if (zero_shards_params(p))
        for (int s = 0; s < ZERO_SLOTS; s++) gather += slot_elems[s];
    const size_t scratch_elems[ZERO_SCRATCHES] = {round_up(p->max_block_segment + slack_f32, slack_f32),
                                                  round_up(p->max_block_segment + slack_f32, slack_f32),
                                                  round_up(p->embed_numel + slack_f32, slack_f32)};
    size_t scratch = 0;
    if (zero_shards_grads(p))
        for (int b = 0; b < ZERO_SCRATCHES; b++) scratch += scratch_elems[b];
    g->params = (bf16 *)device_alloc((params_end + gather) * sizeof(bf16), "the bf16 parameters",
                                     "ZeRO stage 3 (-z 3 under mpirun) shards them over more ranks, or take a "
                                     "smaller model");
    g->grads = (float *)device_alloc((ngrads + scratch) * sizeof(float), "the fp32 gradients",
                                     "ZeRO stage 2 or 3 (-z 2 under mpirun) shards them over more ranks, or take a "
                                     "smaller model");
    cudaCheck(cudaMemset(g->params, 0, (params_end + gather) * sizeof(bf16)));
    cudaCheck(cudaMemset(g->grads, 0, (ngrads + scratch) * sizeof(float)));
    float **state[3] = {&g->master, &g->m, &g->v};
    const char *state_name[3] = {"the fp32 master weights", "AdamW's first moments", "AdamW's second moments"};
    for (int i = 0; i < 3; i++) {
        *state[i] = (float *)device_alloc(nstate * sizeof(float), state_name[i],
                                          "ZeRO (-z 1 under mpirun) shards them over more ranks, or take a smaller "
                                          "model");
        cudaCheck(cudaMemset(*state[i], 0, nstate * sizeof(float)));
    }
    bf16 *next = g->params + params_end;
    for (int s = 0; s < ZERO_SLOTS; s++) {
        z->slot_base[s] = zero_shards_params(p) ? next : NULL;
        next += zero_shards_params(p) ? slot_elems[s] : 0;
        z->slot_segment[s] = -1;
        cudaCheck(cudaEventCreateWithFlags(&z->slot_ready[s], cudaEventDisableTiming));
    }
    float *next_scratch = g->grads + ngrads;
    for (int b = 0; b < ZERO_SCRATCHES; b++) {
        z->grad_scratch[b] = zero_shards_grads(p) ? next_scratch : NULL;
        next_scratch += zero_shards_grads(p) ? scratch_elems[b] : 0;
        z->scratch_segment[b] = -1;
    }
    z->next_scratch = 0;
    const ZeroRange own = zero_slice_params(p, p->rank);
    if (p->stage == 0) adamw_init(&g->opt, &g->cfg, g->hp.weight_decay, 0, g->num_params);
    else adamw_init(&g->opt, &g->cfg, g->hp.weight_decay, own.begin, own.end);
}

// The stochastic rounding of the bf16 weights is keyed by the run's --seed (kept by its checkpoints).
static uint64_t gpu_rounding_seed(uint64_t run_seed) { return run_seed ^ 0x5eedb16f0a7ULL; }

// --gelu-fusion, bf16 and fp8 block matmuls (int8's GEMM has no such epilogue): where cuBLASLt's
// epilogues compute the MLP's GELU.
// GELU_FUSED_BACKWARD multiplies by gelu'(pre-activation) in the fc projection's input gradient
// (DGELU) before its single rounding: it saves a bf16 tensor of N x 4C written and read twice, and
// reads the pre-activation that every recompute policy keeps or recomputes, so every policy keeps
// the bits of keeping everything; it is the default. GELU_FUSED_BOTH also writes gelu(fc) from the
// fc forward's epilogue (gelu_fused_forward: not in layers that recompute the GELU alone). On an
// H100 (2026-11-23, d12 B 16, bf16) fusing both was about 1.3% faster than neither and the forward
// alone gained nothing, so the gain is the backward's. With fp8 the unfused GELU cost 2.0 ms more
// than bf16's fused backward at d48 B 4 on an H200 (2026-11-27: 3.63 against 1.62 ms a step);
// fp8 takes levels 1 and 2 too (FP8 GEMMs with GELU epilogues, llmc/matmul_lowp.cuh), but its
// default stays 0 until a GPU has run them (NOT RUN: whether cuBLASLt has those kernels for
// E5M2 x E4M3 on Hopper is what the first run shows).
enum GeluFusion { GELU_UNFUSED, GELU_FUSED_BACKWARD, GELU_FUSED_BOTH };

// How a GPU model computes, beside its shape: the precision of the four block linears
// (MATMUL_BF16, MATMUL_FP8 or MATMUL_INT8), fp8_wgrad, fp8_fast_accum, amax_history, gelu_fusion and
// attention as the flags --fp8-wgrad, --fp8-fast-accum, --amax-history, --gelu-fusion and
// --attention, the L layers' recompute
// policies (NULL: keep everything), the rows of the output head at once (llmc/trainer.h; 0: all
// B*T), the ZeRO stage over host's ranks (host NULL: one process) and --profile.
// separate_casts (test_gpt.cu only): FP8 with delayed scaling casts the LayerNorms', the GELU's
// and the attention backward's bf16 outputs in passes of their own, as current scaling must,
// instead of having those kernels write the codes (producer_output), and casts every weight in
// every micro-step instead of keeping the codes of the previous micro-step of the same weights
// (lowp_begin_forward): the same bits, which test_gptcu checks.
typedef struct {
    matmul_precision precision;
    int fp8_wgrad, fp8_fast_accum, amax_history, gelu_fusion, attention, separate_casts;
    const int *policies;
    int head_rows;
    int zero_stage;
    const Comm *host;
    int profile;  // --profile
} GPUModelOptions;

// The defaults to start from: one process, every layer keeps everything, the GELU's backward in
// the epilogue with bf16 block matmuls (the default of --gelu-fusion), the mma.sync attention.
static GPUModelOptions gpu_model_options(matmul_precision precision) {
    GPUModelOptions o;
    memset(&o, 0, sizeof(o));
    o.precision = precision;
    o.gelu_fusion = precision == MATMUL_BF16 ? GELU_FUSED_BACKWARD : GELU_UNFUSED;
    return o;
}


// What train_gptcu cannot run, into buf (NULL: nothing): the model's shape (*usage 0: C, the padded
// vocabulary and the head sizes its kernels take), or the flags' (*usage 1: --attention wgmma's
// head size, B*T rows of 4C elements indexed in 32 bits, B*T rows for --fp8-wgrad 1). main asks
// before it touches the GPU.
static const char *gpu_unsupported(const GPT2Config *cfg, int B, int T, int attention, int fp8_wgrad, int *usage,
                                   char *buf, size_t n) {
    const int C = cfg->channels, HS = C / cfg->num_heads;
    *usage = 0;
    if (C % 64 != 0)
        snprintf(buf, n, "C = %d is not a multiple of 64, which train_gptcu's kernels need (128-bit loads, aligned "
                 "tensors)", C);
    else if (cfg->padded_vocab_size % 128 != 0)
        snprintf(buf, n, "Vp = %d is not a multiple of 128, which train_gptcu's kernels need", cfg->padded_vocab_size);
    else if (!attention_head_size_supported(HS))
        snprintf(buf, n, "head size C / NH = %d; train_gptcu's attention takes 64 or 128", HS);
    else {
        *usage = 1;
        if (backward_needs_hs64(attention) && HS != 64)
            snprintf(buf, n, "--attention %s: head size C / NH = %d; its backward is written for 64 only (mma takes "
                     "64 and 128)", attention_kernel_names[attention], HS);
        else if ((int64_t)B * T * 4 * C > INT32_MAX)
            snprintf(buf, n, "-b (--batch) %d x -t (--seq-len) %d = %lld rows: train_gptcu indexes B*T x 4C = %lld "
                     "elements (C = %d) in 32 bits, at most %d", B, T, (long long)B * T, (long long)B * T * 4 * C, C,
                     INT32_MAX);
        else if (fp8_wgrad && !lowp_fp8_wgrad_rows_ok((int64_t)B * T))
            snprintf(buf, n, "--fp8-wgrad 1 needs B*T = %lld to be a multiple of 16 (cuBLASLt's FP8 GEMMs contract "
                     "over the rows)", (long long)B * T);
        else return NULL;
    }
    return buf;
}

static void gpu_model_alloc(GPUModel *g, const GPT2Config *cfg, int B, int T, const AdamWConfig *hp, uint64_t seed,
                            const GPUModelOptions *opt) {
    memset(g, 0, sizeof(*g));
    g->cfg = *cfg;
    g->num_params = gpt2_num_params(cfg);
    g->B = B;
    g->T = T;
    g->hp = *hp;
    g->rounding_seed = gpu_rounding_seed(seed);
    if (opt->gelu_fusion < GELU_UNFUSED || opt->gelu_fusion > GELU_FUSED_BOTH ||
        (opt->gelu_fusion != GELU_UNFUSED && opt->precision == MATMUL_INT8))
        die("gpu_model_alloc: --gelu-fusion %d with %s block matmuls (0-2; int8 only 0)", opt->gelu_fusion,
            matmul_precision_name(opt->precision));
    g->gelu_fusion = opt->gelu_fusion;
    g->attention = opt->attention;
    g->separate_casts = opt->separate_casts;
    g->weights_changed = true;  // none cast yet
    g->head_rows = opt->head_rows > 0 && opt->head_rows < B * T ? opt->head_rows : B * T;
    const int C = cfg->channels, NH = cfg->num_heads;
    char why[256];
    int usage;
    // main says it first, for the trainer
    if (gpu_unsupported(cfg, B, T, g->attention, opt->fp8_wgrad, &usage, why, sizeof(why))) die("%s", why);
    attention_require_supported(NH, C / NH);  // and the GPU's compute capability
    layernorm_require_supported(C);
    if (wgmma_forward(g->attention) && !attention_wgmma_available())
        die("--attention %s needs a GPU of compute capability 9.0 (H100, H200) and a build for sm_90a "
            "(make NVCC_ARCH=sm_90)", attention_kernel_names[g->attention]);

    cudaCheck(cudaStreamCreate(&g->stream));
    matmul_init(&g->mm);
    lowp_init(&g->lp, opt->precision, opt->fp8_wgrad, opt->fp8_fast_accum, opt->amax_history, cfg->num_layers, C,
              B * T);
    event_timeline_start(&g->timeline, opt->profile, g->stream);
    g->lp.timeline = opt->profile ? &g->timeline : NULL;
    gpu_zero_alloc(g, opt->zero_stage, opt->host);

    g->blocks = (GPUBlockActs *)malloc_check((size_t)cfg->num_layers * sizeof(GPUBlockActs));
    g->policy = (int *)calloc_check((size_t)cfg->num_layers, sizeof(int));
    if (opt->policies) memcpy(g->policy, opt->policies, (size_t)cfg->num_layers * sizeof(int));
    Carver measure = {NULL, 0, 0};
    layout_activations(g, &measure);
    g->acts_bytes = measure.used;
    g->acts_memory = device_alloc(g->acts_bytes, "the activations",
                                  "a smaller -b (with -d for the same tokens a step), -r/--recompute/--mem-budget "
                                  "(recompute instead of keeping) or a smaller --head-chunk shrink them");
    Carver real = {(char *)g->acts_memory, 0, 0};
    layout_activations(g, &real);

    const size_t N = (size_t)B * T;
    cudaCheck(cudaMallocHost(&g->h_tokens, (5 * N + 1) * sizeof(int)));
    cudaCheck(cudaMallocHost(&g->h_losses, N * sizeof(float)));
    cudaCheck(cudaMallocHost(&g->h_norm, sizeof(double)));
    cudaCheck(cudaMallocHost(&g->h_logits, (size_t)cfg->padded_vocab_size * sizeof(bf16)));
    g->h_counts = (int *)malloc_check((size_t)cfg->padded_vocab_size * sizeof(int));
}

static void gpu_model_free(GPUModel *g) {
    gpu_sync(g);
    cudaCheck(cudaStreamSynchronize(g->zero.comm_stream));
    cudaCheck(cudaFree(g->params));
    cudaCheck(cudaFree(g->grads));
    cudaCheck(cudaFree(g->master));
    cudaCheck(cudaFree(g->m));
    cudaCheck(cudaFree(g->v));
    cudaCheck(cudaFree(g->acts_memory));
    cudaCheck(cudaFreeHost(g->h_tokens));
    cudaCheck(cudaFreeHost(g->h_losses));
    cudaCheck(cudaFreeHost(g->h_norm));
    cudaCheck(cudaFreeHost(g->h_logits));
    free(g->h_counts);
    free(g->blocks);
    free(g->policy);
    adamw_free(&g->opt);
    lowp_free(&g->lp);
    event_timeline_free(&g->timeline);
    matmul_free(&g->mm);
    cudaCheck(cudaStreamDestroy(g->stream));
    GPUZero *z = &g->zero;
    free(z->counts);
    cudaEvent_t events[] = {z->compute_mark,  z->comm_done,      z->reduced[0],     z->reduced[1],
                            z->reduced[2],    z->slot_ready[0], z->slot_ready[1], z->slot_ready[2]};
    for (cudaEvent_t e : events) cudaCheck(cudaEventDestroy(e));
    for (int seg = 0; seg < z->plan.num_segments; seg++) cudaCheck(cudaEventDestroy(z->segment_gathered[seg]));
    free(z->segment_gathered);
    free(z->segment_pending);
    // comm_stream stays: the device communicator enqueues on it until main finalizes it
}

// master = weights (fp32, layer-major, num_params), params = bf16 round-to-nearest-even of them;
// under ZeRO the parts of them this rank keeps.
static void gpu_set_weights(GPUModel *g, const float *weights) {
    const ZeroPlan *p = &g->zero.plan;
    const ZeroRange own = zero_slice_params(p, p->rank);
    const size_t P = g->num_params, n = own.end - own.begin;
    const size_t pfirst = zero_shards_params(p) ? own.begin : 0, np = zero_shards_params(p) ? n : P;  // params kept
    const size_t mfirst = zero_shards_optimizer(p) ? own.begin : 0, nm = zero_shards_optimizer(p) ? n : P;  // master kept
    uint16_t *h = (uint16_t *)malloc_check((np ? np : 1) * sizeof(uint16_t));
    for (size_t i = 0; i < np; i++) h[i] = bf16_from_float(weights[pfirst + i]);
    zero_weights_all_gathered(g);  // no all-gather of an update may write them after this (stages 1-2)
    cudaCheck(cudaMemcpy(g->master, weights + mfirst, nm * sizeof(float), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(g->params, h, np * sizeof(uint16_t), cudaMemcpyHostToDevice));
    free(h);
    g->weights_changed = true;
}

// The bf16 weights widened to fp32 (exact), layer-major, into host memory (weights may be NULL
// on ranks that only take part: under ZeRO-3 every rank gathers every segment).
static void gpu_get_weights(GPUModel *g, float *weights) {
    const size_t P = g->num_params;
    uint16_t *h = (uint16_t *)malloc_check(P * sizeof(uint16_t));
    if (!zero_shards_params(&g->zero.plan)) {
        zero_weights_all_gathered(g);
        gpu_sync(g);  // with the deadline, as below
        cudaCheck(cudaMemcpy(h, g->params, P * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    } else {
        for (int seg = 0; seg < g->zero.plan.num_segments; seg++) {
            const ZeroRange r = zero_segment(&g->cfg, seg);
            zero_weights_acquire(g, seg);
            // The gather is waited for with the deadline: a copy into pageable memory blocks the
            // host until the stream reaches it, with no deadline if a peer never joins the gather.
            gpu_sync(g);
            cudaCheck(cudaMemcpy(h + r.begin, slot_data(&g->zero, zero_slot_of(&g->zero, seg), seg),
                                 (r.end - r.begin) * sizeof(uint16_t), cudaMemcpyDeviceToHost));
            zero_weights_release(g, seg);
        }
    }
    if (weights)
        for (size_t i = 0; i < P; i++) weights[i] = bf16_to_float(h[i]);
    free(h);
}

static void check_tokens(const int *tok, int n, int V, const char *what) {
    for (int i = 0; i < n; i++)
        if (tok[i] < 0 || tok[i] >= V) die("%s token %d at position %d is outside the vocabulary [0, %d)", what, tok[i], i, V);
}

// Whether layer l's fc forward writes the GELU output from cuBLASLt's epilogue (GELU_FUSED_BOTH,
// bf16 or fp8 block matmuls). Not for a layer whose policy recomputes the GELU alone from the kept
// pre-activation: that recompute runs gelu.cuh, whose bits may differ from the epilogue's, and the
// backward must see the forward's bits (a policy that reruns fc reruns the fused call: the same).
static bool recomputes_gelu_alone(int policy) {
    const int recomputed = recompute_steps(policy);
    return (recomputed & RC_STEP_GELU) && !(recomputed & RC_STEP_FC);
}
static bool gelu_fused_forward(const GPUModel *g, int l) {
    return g->gelu_fusion >= GELU_FUSED_BOTH && !recomputes_gelu_alone(g->policy[l]);
}

// Whether the fc projection's input gradient applies gelu' in its epilogue (GELU_FUSED_BACKWARD and
// up): from the kept or recomputed pre-activation, as gelu_backward_inplace does, rounded once.
static bool gelu_fused_backward(const GPUModel *g) { return g->gelu_fusion >= GELU_FUSED_BACKWARD; }

// A block linear's forward in `pass`; gelu_pre not NULL: out = gelu(pre) from the epilogue, and
// gelu_pre = pre (the fc layer under gelu_fused_forward). inp_t: where the block keeps inp's
// transposed FP8 codes (GPUBlockActs; NULL: it does not), which the training pass writes. (A
// replay never reruns a linear whose input the block keeps: no policy recomputes the output of a
// linear and keeps its input, and the codes kept are the ones the replay would write.)
static void block_linear(GPUModel *g, quant_pass pass, bf16 *out, bf16 *gelu_pre, const bf16 *inp, uint8_t *inp_t,
                         const bf16 *weight, const bf16 *bias, int N, int IC, int OC, int layer, int linear) {
    if (pass == QUANT_PASS_REPLAY)
        lowp_linear_forward_again(&g->lp, &g->mm, out, gelu_pre, inp, weight, bias, N, IC, OC, layer, linear,
                                  g->stream);
    else
        lowp_linear_forward(&g->lp, &g->mm, out, gelu_pre, inp, pass == QUANT_PASS_TRAIN ? inp_t : nullptr, weight,
                            bias, N, IC, OC, layer, linear, pass == QUANT_PASS_TRAIN, g->stream);
}

// Where a LayerNorm or the GELU of the forward writes its output, the input of block linear
// `linear` of `layer`: bf16 into `out` and, with codes (lowp_producer_codes_available), also that
// linear's FP8 codes (lowp_producer_codes; inp_t: the block's kept transposed codes, NULL: none).
// Where the block keeps its linears' inputs as codes (gpu_keeps_input_codes) the bf16 output has
// no reader then, and is not written (out NULL).
typedef struct {
    bf16 *out;
    QuantCodesOut codes;
} ProducerOutput;
static ProducerOutput producer_output(GPUModel *g, bool codes, bf16 *out, uint8_t *inp_t, int layer, int linear) {
    if (!codes) return ProducerOutput{out, QuantCodesOut{}};
    return ProducerOutput{gpu_keeps_input_codes(g->lp.precision, g->lp.fp8_wgrad) ? nullptr : out,
                          lowp_producer_codes(&g->lp, layer, linear, inp_t)};
}

// The `steps` (llmc/recompute.h) of block l's forward pass over B x T tokens, from its input
// `residual` into the buffers a (block_buffers(g, l)); the forward runs them all, the backward
// pass first those its policy dropped (QUANT_PASS_REPLAY), with the same kernels on the same inputs,
// which are deterministic: the same bits.
// Each projection's output goes through g->dbtc, free both in the forward and before a block's
// backward, into one kernel that adds the residual and normalizes the sum: the attention
// projection's makes residual2 and ln2 (so RC_STEP_ATTPROJ does RC_STEP_LN2's work; no policy
// recomputes one without the other), the fc projection's residual3 and the next block's ln1 (or
// lnf), so a forward over all blocks runs RC_STEP_LN1 for block 0 only.
// A LayerNorm recomputed alone (layernorm_forward of the kept residual) gives the fused kernel's
// bits: that kernel rounds the sum to bf16, stores it, and takes the statistics and the output
// from the rounded values with the same code in the same order (llmc/layernorm.cuh). It also
// recomputes mean and rstd, into the kept buffers where the policy keeps them: the same values.
// In an FP8 training pass with delayed scaling (lowp_producer_codes_available) the LayerNorms
// and the GELU (where no fc epilogue computes it) write the FP8 codes of the qkv, fc and fc
// projection's inputs themselves (producer_output), and those linears cast nothing; a replay casts
// the recomputed bf16 output with the same scale: the same codes.
static void gpu_block_forward(GPUModel *g, int l, const bf16 *residual, const GPUBlockActs *a, int steps,
                              quant_pass pass, int B, int T) {
    const int C = g->cfg.channels, NH = g->cfg.num_heads, HS = C / NH, N = B * T, L = g->cfg.num_layers;
    cudaStream_t st = g->stream;
    bf16 *proj = g->dbtc;
    const bool codes = !g->separate_casts && lowp_producer_codes_available(&g->lp, pass == QUANT_PASS_TRAIN);
    if (steps & RC_STEP_LN1) {
        mark(g, PROF_LAYERNORM);
        const ProducerOutput o = producer_output(g, codes, a->ln1, a->ln1_t, l, LINEAR_QKV);
        layernorm_forward(o.out, a->ln1_mean, a->ln1_rstd, residual, param_ptr(g, PT_LN1W, l), param_ptr(g, PT_LN1B, l),
                          N, C, st, o.codes);
    }
    if (steps & RC_STEP_QKV)
        block_linear(g, pass, a->qkv, nullptr, codes ? nullptr : a->ln1, a->ln1_t, param_ptr(g, PT_QKVW, l),
                     param_ptr(g, PT_QKVB, l), N, C, 3 * C, l, LINEAR_QKV);
    if (steps & RC_STEP_ATTN) {
        mark(g, PROF_ATTENTION_FORWARD);
        (g->attention == ATTENTION_WGMMA_WS ? attention_forward_wgmma_ws
         : wgmma_forward(g->attention)      ? attention_forward_wgmma
                                            : attention_forward)(a->atty, a->lse, a->qkv, B, T, NH, HS, st);
    }
    if (steps & RC_STEP_ATTPROJ) {
        block_linear(g, pass, proj, nullptr, a->atty, a->atty_t, param_ptr(g, PT_ATTPROJW, l),
                     param_ptr(g, PT_ATTPROJB, l), N, C, C, l, LINEAR_ATTPROJ);
        mark(g, PROF_LAYERNORM);
        const ProducerOutput o = producer_output(g, codes, a->ln2, a->ln2_t, l, LINEAR_FC);
        fused_residual_layernorm_forward(a->residual2, o.out, a->ln2_mean, a->ln2_rstd, residual, proj,
                                         param_ptr(g, PT_LN2W, l), param_ptr(g, PT_LN2B, l), N, C, st, o.codes);
    } else if (steps & RC_STEP_LN2) {
        mark(g, PROF_LAYERNORM);
        layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->residual2, param_ptr(g, PT_LN2W, l),
                          param_ptr(g, PT_LN2B, l), N, C, st);
    }
    if ((steps & RC_STEP_FC) && (steps & RC_STEP_GELU) && gelu_fused_forward(g, l)) {
        block_linear(g, pass, a->fch_gelu, a->fch, codes ? nullptr : a->ln2, a->ln2_t, param_ptr(g, PT_FCW, l),
                     param_ptr(g, PT_FCB, l), N, C, 4 * C, l, LINEAR_FC);
    } else {
        if (steps & RC_STEP_FC)
            block_linear(g, pass, a->fch, nullptr, codes ? nullptr : a->ln2, a->ln2_t, param_ptr(g, PT_FCW, l),
                         param_ptr(g, PT_FCB, l), N, C, 4 * C, l, LINEAR_FC);
        if (steps & RC_STEP_GELU) {
            mark(g, PROF_GELU);
            const ProducerOutput o = producer_output(g, codes, a->fch_gelu, a->gelu_t, l, LINEAR_FCPROJ);
            if (codes) gelu_forward_codes(o.out, o.codes, a->fch, N, 4 * C, st);
            else gelu_forward(a->fch_gelu, a->fch, (int64_t)N * 4 * C, st);
        }
    }
    if (steps & RC_STEP_FCPROJ) {
        // (a training pass runs every step: the GELU above wrote the codes unless the fc epilogue did it)
        block_linear(g, pass, proj, nullptr, codes && !gelu_fused_forward(g, l) ? nullptr : a->fch_gelu, a->gelu_t,
                     param_ptr(g, PT_FCPROJW, l), param_ptr(g, PT_FCPROJB, l), N, 4 * C, C, l, LINEAR_FCPROJ);
        // residual3 = residual2 + proj, normalized by the next block's ln1 or by lnf (ZeRO-3: whose
        // weights the forward prefetched; the backward's recompute never reruns this step).
        zero_weights_acquire(g, l + 1 < L ? zero_layer_segment(l + 1) : zero_final_segment(&g->cfg));
        mark(g, PROF_LAYERNORM);
        if (l + 1 < L) {
            const GPUBlockActs n = block_buffers(g, l + 1);
            const ProducerOutput o = producer_output(g, codes, n.ln1, n.ln1_t, l + 1, LINEAR_QKV);
            fused_residual_layernorm_forward(a->residual3, o.out, n.ln1_mean, n.ln1_rstd, a->residual2, proj,
                                             param_ptr(g, PT_LN1W, l + 1), param_ptr(g, PT_LN1B, l + 1), N, C, st,
                                             o.codes);
        } else {
            fused_residual_layernorm_forward(a->residual3, g->lnf, g->lnf_mean, g->lnf_rstd, a->residual2, proj,
                                             param_ptr(g, PT_LNFW, -1), param_ptr(g, PT_LNFB, -1), N, C, st);
        }
    }
}

// Forward over B x T tokens (at most the capacity). With targets: the losses; with with_grad (a
// training micro-step, with targets: it also records FP8 amax history and builds the encoder's
// buckets for the backward pass) also the output head's backward for the gradient of
// loss_scale * (mean loss), chunk by chunk (llmc/trainer.h): the logits of head_rows rows become
// dlogits in place (scaled by loss_scale / N), then d lnf of those rows (kept for gpu_backward)
// and the tied head's part of d wte. The embeddings' gradient segment stays acquired until the
// encoder's part at the end of gpu_backward. Without targets only the last chunk is computed:
// g->logits holds the logits of rows [(N - 1) / head_rows * head_rows, N).
// Returns the mean loss (0 without targets).
static float gpu_forward(GPUModel *g, const int *inputs, const int *targets, int B, int T, int with_grad,
                         float loss_scale) {
    const GPT2Config *c = &g->cfg;
    const int C = c->channels, V = c->vocab_size, Vp = c->padded_vocab_size;
    const int N = B * T, L = c->num_layers;
    cudaStream_t st = g->stream;
    check_tokens(inputs, N, V, "input");
    if (targets) check_tokens(targets, N, V, "target");
    if (with_grad && !targets) die("internal error: a forward pass with gradients needs targets");

    // The pinned buffer is free: every call that filled it before has synchronized.
    memcpy(g->h_tokens, inputs, (size_t)N * sizeof(int));
    size_t count = N;
    if (targets) {
        memcpy(g->h_tokens + N, targets, (size_t)N * sizeof(int));
        count = 2 * (size_t)N;
    }
    if (with_grad) {
        g->num_buckets = encoder_buckets_build(g->h_tokens + 2 * N, g->h_counts, inputs, N, Vp);
        count = 5 * (size_t)N + 1;
    }
    mark(g, PROF_ENCODER);
    cudaCheck(cudaMemcpyAsync(g->d_tokens, g->h_tokens, count * sizeof(int), cudaMemcpyHostToDevice, st));
    const int *d_inputs = g->d_tokens, *d_targets = g->d_tokens + N;

    // ZeRO-3 hooks (no-ops below stage 3): see GPUZero. Layer 0's weights gather while the
    // encoder computes (its prefetch comes before the compute stream waits for the embeddings).
    zero_weights_prefetch(g, 0);
    zero_weights_prefetch(g, zero_layer_segment(0));
    zero_weights_acquire(g, 0);
    const quant_pass pass = with_grad ? QUANT_PASS_TRAIN : QUANT_PASS_EVAL;
    // the FP8/int8 amaxes and delayed scales; the last micro-step's weight codes may be kept
    lowp_begin_forward(&g->lp, with_grad, with_grad && !g->weights_changed && !g->separate_casts, st);
    if (with_grad) g->weights_changed = false;
    mark(g, PROF_ENCODER);
    encoder_forward(g->encoded, d_inputs, param_ptr(g, PT_WTE, -1), param_ptr(g, PT_WPE, -1), B, T, C, st);
    zero_weights_release(g, 0);
    zero_weights_acquire(g, zero_layer_segment(0));
    const bf16 *residual = g->encoded;
    for (int l = 0; l < L; l++) {
        const GPUBlockActs a = block_buffers(g, l);
        zero_forward_prefetch(g, l);
        // Block l-1's last step already made block l's ln1 (fused with its residual add).
        gpu_block_forward(g, l, residual, &a, l == 0 ? RC_ALL_STEPS : RC_ALL_STEPS & ~RC_STEP_LN1, pass, B, T);
        residual = a.residual3;
        zero_weights_release(g, zero_layer_segment(l));
    }
    zero_weights_release(g, zero_final_segment(c));
    zero_weights_acquire(g, 0);
    if (with_grad) {
        zero_grads_acquire(g, 0);
        // ZeRO-3: the backward pass's first weights (the final LayerNorm, layer L-1) gather while
        // the head computes; the buffers they take are free (only segment 0 is held).
        zero_weights_prefetch(g, zero_final_segment(c));
        if (L > 0) zero_weights_prefetch(g, zero_layer_segment(L - 1));
    }
    const int R = g->head_rows;
    const bf16 *wte = param_ptr(g, PT_WTE, -1);
    mark(g, PROF_HEAD);
    for (int r0 = targets ? 0 : (N - 1) / R * R; r0 < N; r0 += R) {
        const int n = N - r0 < R ? N - r0 : R;
        const bf16 *lnf = g->lnf + (size_t)r0 * C;
        matmul_forward(&g->mm, g->logits, lnf, wte, NULL, n, C, Vp, st);
        if (!targets) continue;
        fused_classifier(g->logits, g->losses + r0, d_targets + r0, loss_scale / (float)N, n, V, Vp, with_grad, st);
        if (!with_grad) continue;
        matmul_backward_input(&g->mm, g->dbtc + (size_t)r0 * C, g->logits, wte, n, C, Vp, st);
        matmul_backward_weight(&g->mm, grad_ptr(g, PT_WTE, -1), NULL, g->colsum_scratch, g->logits, lnf, n, C, Vp,
                               r0 > 0 || grads_accumulate(g), st);
    }
    zero_weights_release(g, 0);
    if (!targets) return 0.0f;
    mark(g, PROF_HOST);
    cudaCheck(cudaMemcpyAsync(g->h_losses, g->losses, (size_t)N * sizeof(float), cudaMemcpyDeviceToHost, st));
    gpu_sync(g);
    double sum = 0.0;  // as train_gpt.c: the mean over positions, summed in double
    for (int i = 0; i < N; i++) sum += g->h_losses[i];
    return (float)(sum / N);
}

// Backward of the last forward, which had with_grad: adds the rest of its gradient to the fp32
// gradients (writes it, in a step's first micro-step: grads_accumulate). Mirrors gpt2_backward in
// train_gpt.c step by step: the output head's backward ran in the forward pass; each block first
// recomputes what its policy did not keep (into the shared scratch g->work); segments finish in
// the order final LayerNorm, layers L-1..0, embeddings (the encoder's part added to the head's),
// each then reduced (zero_grads_release). One of the micro-steps that gpu_zero_grads announced.
static void gpu_backward(GPUModel *g, int B, int T) {
    if (g->micro_steps_left < 1) die("internal error: a micro-step past those gpu_zero_grads announced");
    const GPT2Config *c = &g->cfg;
    const int C = c->channels, NH = c->num_heads, HS = C / NH, N = B * T, L = c->num_layers;
    cudaStream_t st = g->stream;
    Matmul *mm = &g->mm;
    LowpMatmul *lp = &g->lp;
    float *cs = g->colsum_scratch;
    const bf16 *last = g->blocks[L - 1].residual3;
    const int FINAL = zero_final_segment(c);
    zero_weights_acquire(g, FINAL);  // ZeRO hooks (no-ops below stages 2 and 3): see GPUZero
    zero_grads_acquire(g, FINAL);
    mark(g, PROF_LAYERNORM);
    cudaCheck(cudaMemsetAsync(g->dresidual, 0, (size_t)N * C * sizeof(bf16), st));
    const bool acc = grads_accumulate(g);
    layernorm_backward(g->dresidual, grad_ptr(g, PT_LNFW, -1), grad_ptr(g, PT_LNFB, -1), cs, g->dbtc, last,
                       param_ptr(g, PT_LNFW, -1), g->lnf_mean, g->lnf_rstd, N, C, acc, st);
    zero_grads_release(g, FINAL);
    zero_weights_release(g, FINAL);
    for (int l = L - 1; l >= 0; l--) {
        GPUBlockActs acts = block_buffers(g, l), *a = &acts;
        zero_weights_acquire(g, zero_layer_segment(l));
        // ZeRO-3: the weights the compute stream needs next gather while this layer's backward runs:
        // layer l - 1's, or after layer 0 the embeddings for the step's next micro-step (unchanged
        // until the update), whose forward then need not wait for them.
        if (l > 0) zero_weights_prefetch(g, zero_layer_segment(l - 1));
        else if (g->micro_steps_left > 1) zero_weights_prefetch(g, 0);
        zero_grads_acquire(g, zero_layer_segment(l));
        const bf16 *residual = l == 0 ? g->encoded : g->blocks[l - 1].residual3;
        const int recompute = recompute_steps(g->policy[l]);
        if (recompute) {
            g->timeline.recomputing = 1;
            gpu_block_forward(g, l, residual, a, recompute, QUANT_PASS_REPLAY, B, T);
            g->timeline.recomputing = 0;
        }
        bf16 *dfch = g->dwide, *dqkv = g->dwide;
        // MLP; dresidual holds d residual3.
        const bool fused_dgelu = gelu_fused_backward(g);
        lowp_linear_backward(lp, mm, dfch, grad_ptr(g, PT_FCPROJW, l), grad_ptr(g, PT_FCPROJB, l), cs, g->dresidual,
                             a->fch_gelu, a->gelu_t, param_ptr(g, PT_FCPROJW, l), fused_dgelu ? a->fch : nullptr, N,
                             4 * C, C, l, LINEAR_FCPROJ, acc, st);
        // FP8 weight gradients with delayed scaling: the GELU's backward writes the fc layer's gradient
        // as the codes that layer's backward reads (the bf16 gradient has no other reader).
        const bool dgelu_codes = !fused_dgelu && !g->separate_casts && lowp_gradient_producer_codes_available(lp, N);
        if (!fused_dgelu) {
            mark(g, PROF_GELU);
            if (dgelu_codes)
                gelu_backward_codes(lowp_gradient_producer_codes(lp, l, LINEAR_FC), dfch, a->fch, N, 4 * C, st);
            else
                gelu_backward_inplace(dfch, a->fch, (int64_t)N * 4 * C, st);
        }
        lowp_linear_backward(lp, mm, g->dbtc, grad_ptr(g, PT_FCW, l), grad_ptr(g, PT_FCB, l), cs,
                             dgelu_codes ? nullptr : dfch, a->ln2, a->ln2_t, param_ptr(g, PT_FCW, l), nullptr, N, C,
                             4 * C, l, LINEAR_FC, acc, st);
        mark(g, PROF_LAYERNORM);
        layernorm_backward(g->dresidual, grad_ptr(g, PT_LN2W, l), grad_ptr(g, PT_LN2B, l), cs, g->dbtc, a->residual2,
                           param_ptr(g, PT_LN2W, l), a->ln2_mean, a->ln2_rstd, N, C, acc, st);
        // Attention; dresidual holds d residual2.
        lowp_linear_backward(lp, mm, g->dbtc, grad_ptr(g, PT_ATTPROJW, l), grad_ptr(g, PT_ATTPROJB, l), cs,
                             g->dresidual, a->atty, a->atty_t, param_ptr(g, PT_ATTPROJW, l), nullptr, N, C, C, l,
                             LINEAR_ATTPROJ, acc, st);
        // The same for the qkv layer's gradient, from the attention backward (whose CTAs must cover
        // whole 64-row tiles of it: T % 64 == 0).
        const bool dqkv_codes = !g->separate_casts && !reduces_dq(g->attention) && T % 64 == 0 &&
                                lowp_gradient_producer_codes_available(lp, N);
        mark(g, PROF_ATTENTION_BACKWARD);
        (g->attention == ATTENTION_WGMMA       ? attention_backward_wgmma
         : g->attention == ATTENTION_MMA_RT2   ? attention_backward_rt2
         : g->attention == ATTENTION_MMA_RDQ   ? attention_backward_reduce_dq
         : g->attention == ATTENTION_WGMMA_RDQ ? attention_backward_wgmma_reduce_dq
         : g->attention == ATTENTION_WGMMA_WS  ? attention_backward_wgmma_ws
                                               : attention_backward)(
            dqkv, g->att_scratch, g->dbtc, a->qkv, a->atty, a->lse, B, T, NH, HS, st,
            dqkv_codes ? lowp_gradient_producer_codes(lp, l, LINEAR_QKV) : QuantCodesOut{});
        lowp_linear_backward(lp, mm, g->dbtc, grad_ptr(g, PT_QKVW, l), grad_ptr(g, PT_QKVB, l), cs,
                             dqkv_codes ? nullptr : dqkv, a->ln1, a->ln1_t, param_ptr(g, PT_QKVW, l), nullptr, N, C,
                             3 * C, l, LINEAR_QKV, acc, st);
        mark(g, PROF_LAYERNORM);
        layernorm_backward(g->dresidual, grad_ptr(g, PT_LN1W, l), grad_ptr(g, PT_LN1B, l), cs, g->dbtc, residual,
                           param_ptr(g, PT_LN1W, l), a->ln1_mean, a->ln1_rstd, N, C, acc, st);
        zero_grads_release(g, zero_layer_segment(l));
        zero_weights_release(g, zero_layer_segment(l));
    }
    mark(g, PROF_ENCODER);
    encoder_backward(grad_ptr(g, PT_WTE, -1), grad_ptr(g, PT_WPE, -1), g->dresidual, g->d_tokens + 2 * N,
                     g->num_buckets, B, T, c->max_seq_len, C, acc, st);  // d wte adds to the head's
    zero_grads_release(g, 0);  // acquired by gpu_forward's output head
    lowp_step_done(lp);
    g->grads_unwritten = false;
    g->micro_steps_left--;
}

// Waits for the step's gradient (reduced segment by segment during the backward passes:
// zero_grads_release), then the norm: each rank's sum of squares over its slice, summed over the
// ranks (as train_gpt.c).
static double gpu_grad_norm(GPUModel *g) {
    GPUZero *z = &g->zero;
    const ZeroPlan *p = &z->plan;
    if (g->micro_steps_left != 0)
        die("internal error: the gradient norm with %d of the step's micro-steps to run", g->micro_steps_left);
    mark(g, PROF_GRAD_NORM);
    if (p->stage <= 1) {
        zero_comm_end(g);  // the last micro-step's reductions
    } else {
        for (int b = 0; b < ZERO_SCRATCHES; b++) cudaCheck(cudaStreamWaitEvent(g->stream, z->reduced[b], 0));  // the last reductions
    }
    const ZeroRange own = zero_slice_params(p, p->rank);
    double ss = 0.0;
    if (own.end > own.begin) {
        global_sum_squares(g->norm_out, g->norm_scratch, own_grads(g), own.end - own.begin, g->stream);
        mark(g, PROF_HOST);
        cudaCheck(cudaMemcpyAsync(g->h_norm, g->norm_out, sizeof(double), cudaMemcpyDeviceToHost, g->stream));
        gpu_sync(g);
        ss = *g->h_norm;
    } else {
        mark(g, PROF_HOST);
        gpu_sync(g);  // the reductions above have completed on every path
    }
    z->comm->allreduce_sum_f64(z->comm, &ss, 1);
    return sqrt(ss);
}

// Stage 0: every rank updates every weight. Stages 1-3: each rank its slice, with the update-
// clipping sums completed across ranks; stages 1 and 2 then all-gather the updated bf16 weights
// (16-bit all-gather: the rounded weights as they are, half the bytes of the fp32 master), segment
// by segment in the order the forward pass uses them, each waited for at its first use
// (zero_weights_acquire), so that all but the embeddings' gather run beside the next forward.
static int gpu_update(GPUModel *g, int t, float lr, float grad_scale) {
    const AdamWConfig *hp = &g->hp;
    GPUZero *z = &g->zero;
    const ZeroPlan *p = &z->plan;
    mark(g, PROF_OPTIMIZER);
    g->weights_changed = true;
    int clipped;
    if (p->stage == 0) {
        clipped = adamw_update(&g->opt, g->master, g->params, g->m, g->v, g->grads, t, lr, grad_scale, hp->beta1,
                               hp->beta2, hp->eps, hp->update_clip, g->rounding_seed, g->stream, NULL, NULL);
    } else {
        if (zero_shards_grads(p))  // the slice is complete (gpu_grad_norm waited already; the update must not rely on it)
            for (int b = 0; b < ZERO_SCRATCHES; b++) cudaCheck(cudaStreamWaitEvent(g->stream, z->reduced[b], 0));
        zero_weights_all_gathered(g);  // the last update's all-gathers have read this rank's slice
        clipped = adamw_update(&g->opt, g->master, own_params(g), g->m, g->v, own_grads(g), t, lr, grad_scale,
                               hp->beta1, hp->beta2, hp->eps, hp->update_clip, g->rounding_seed, g->stream,
                               comm_allreduce_sum_f64_fn, z->comm);
        if (!zero_shards_params(p)) {
            zero_comm_begin(g);
            for (int seg = 0; seg < p->num_segments; seg++) {
                const ZeroRange r = zero_segment(&g->cfg, seg);
                zero_split(p, r, z->counts);
                z->comm->allgather_u16(z->comm, (uint16_t *)g->params + r.begin, z->counts);
                cudaCheck(cudaEventRecord(z->segment_gathered[seg], z->comm_stream));
                z->segment_pending[seg] = true;
            }
        }
    }
    mark(g, PROF_HOST);
    return clipped;
}

// ----------------------------------------------------------------------------------------------
// The GPU backend of the shared training loop (llmc/trainer.h)

// The next micro-step overwrites the gradient (grads_accumulate); at stages 2-3 the slice, to
// which each micro-step's reduction adds, is zeroed. micro_steps: the gpu_forward_backward calls
// of the step, the last of which reduces the gradient at stages 0-1 (zero_grads_release).
static void gpu_zero_grads(void *self, int micro_steps) {
    GPUModel *g = (GPUModel *)self;
    const ZeroPlan *p = &g->zero.plan;
    if (micro_steps < 1) die("internal error: an optimizer step of %d micro-steps", micro_steps);
    g->micro_steps_left = micro_steps;
    g->grads_unwritten = true;
    g->weights_changed = true;
    if (!zero_shards_grads(p)) return;
    mark(g, PROF_OPTIMIZER);
    cudaCheck(cudaMemsetAsync(g->grads, 0, p->slice * sizeof(float), g->stream));
    mark(g, PROF_HOST);
}

static float gpu_forward_backward(void *self, const int *inputs, const int *targets, float loss_scale) {
    GPUModel *g = (GPUModel *)self;
    // Each rank's gradient of loss_scale / W times its mean loss: their sum over the ranks is
    // the gradient of the global batch's mean loss.
    float loss = gpu_forward(g, inputs, targets, g->B, g->T, 1, loss_scale / (float)g->zero.plan.world);
    gpu_backward(g, g->B, g->T);
    mark(g, PROF_HOST);
    return loss;
}

static float gpu_forward_loss(void *self, const int *inputs, const int *targets) {
    GPUModel *g = (GPUModel *)self;
    return gpu_forward(g, inputs, targets, g->B, g->T, 0, 1.0f);
}

static void gpu_next_token_logits(void *self, const int *tokens, int n, float *logits) {
    GPUModel *g = (GPUModel *)self;
    const int V = g->cfg.vocab_size, Vp = g->cfg.padded_vocab_size;
    gpu_forward(g, tokens, NULL, 1, n, 0, 1.0f);
    const int row = (n - 1) % g->head_rows;  // the last row of the last chunk
    cudaCheck(cudaMemcpyAsync(g->h_logits, g->logits + (size_t)row * Vp, (size_t)V * sizeof(bf16),
                              cudaMemcpyDeviceToHost, g->stream));
    gpu_sync(g);
    for (int j = 0; j < V; j++) logits[j] = __bfloat162float(g->h_logits[j]);
}

static double gpu_backend_grad_norm(void *self) { return gpu_grad_norm((GPUModel *)self); }

static int gpu_backend_update(void *self, int t, float lr, float grad_scale) {
    return gpu_update((GPUModel *)self, t, lr, grad_scale);
}

static void gpu_profile_take(void *self, double *ms) {
    GPUModel *g = (GPUModel *)self;
    event_timeline_take(&g->timeline, ms, g->stream);
}

// Rank 0 writes the model file (under ZeRO-3 assembled segment by segment, every rank taking part
// in the gathers); every rank writes its slice of the AdamW moments and master weights, the
// files train_gpt.c writes, so either trainer resumes from them at any world size or stage.
// The FP8 amax history (llmc/amax_history.h; the device ring has the same [operands][H] layout
// and slot convention) copied to the host; length 0 without delayed scaling.
static void gpu_history_get(GPUModel *g, AmaxHistory *h) {
    amax_history_init(h, g->lp.num_operands, g->lp.history_len);
    if (h->length == 0) return;
    cudaCheck(cudaMemcpy(h->values, g->lp.history, (size_t)h->operands * h->length * sizeof(float),
                         cudaMemcpyDeviceToHost));
    h->steps = g->lp.history_steps;
}

static int gpu_save(void *self, const char *model_path, const char *state_path, const TrainState *st, char *err,
                    size_t errlen) {
    GPUModel *g = (GPUModel *)self;
    const ZeroPlan *p = &g->zero.plan;
    const int main_rank = p->rank == 0;
    gpu_sync(g);
    float *weights = main_rank ? (float *)malloc_check(g->num_params * sizeof(float)) : NULL;
    gpu_get_weights(g, weights);  // the bf16 weights, as fp32, for the model file
    TrainState mine = *st;  // with the model file's checksum, and this rank's FP8 amax history (delayed scaling), if any
    mine.model_sum_saved = main_rank;
    int rc = main_rank ? checkpoint_write(model_path, &g->cfg, weights, &mine.model_sum, err, errlen) : 0;
    free(weights);
    if (rc != 0) return rc;
    const ZeroRange own = zero_slice_params(p, p->rank);
    const size_t n = own.end - own.begin, bytes = n * sizeof(float);
    float *buf = (float *)malloc_check(3 * (n ? n : 1) * sizeof(float));
    float *m = buf, *v = buf + n, *master = buf + 2 * n;
    cudaCheck(cudaMemcpy(m, own_state(g, g->m), bytes, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(v, own_state(g, g->v), bytes, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(master, own_state(g, g->master), bytes, cudaMemcpyDeviceToHost));
    AmaxHistory history;
    gpu_history_get(g, &history);
    mine.amax = history;
    rc = state_write(state_path, &mine, m, v, master, err, errlen);
    amax_history_free(&history);
    free(buf);
    return rc;
}

// Loads a checkpoint of either trainer written at any world size and stage: the model file's
// bf16 weights, then this rank's range of the moments (and master weights, when the files hold
// them; a CPU checkpoint's master weights are the model file's) re-sliced from the state files.
static void gpu_load(void *self, const char *model_path, const char *state_path, TrainState *st) {
    GPUModel *g = (GPUModel *)self;
    const ZeroPlan *p = &g->zero.plan;
    const size_t P = g->num_params;
    float *weights = (float *)malloc_check(P * sizeof(float));
    checkpoint_read_params(model_path, &g->cfg, weights);
    gpu_set_weights(g, weights);  // the file holds the bf16 weights: rounding them is exact
    free(weights);
    const ZeroRange need = zero_optimizer_range(p);
    const size_t n = need.end - need.begin, bytes = n * sizeof(float);
    float *buf = (float *)malloc_check(3 * (n ? n : 1) * sizeof(float));
    float *m = buf, *v = buf + n, *master = buf + 2 * n;
    const int has_master = state_read_range(state_path, (int64_t)P, need.begin, need.end, m, v, master, st);
    if (st->run_seed_saved) g->rounding_seed = gpu_rounding_seed(st->run_seed);
    // need starts at the kept buffers' first element: 0 at stage 0, the rank's slice start above
    cudaCheck(cudaMemcpy(g->m, m, bytes, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(g->v, v, bytes, cudaMemcpyHostToDevice));
    if (has_master) cudaCheck(cudaMemcpy(g->master, master, bytes, cudaMemcpyHostToDevice));
    free(buf);
    AmaxHistory history;  // this rank's own (another world size restarts it, with a warning)
    amax_history_init(&history, g->lp.num_operands, g->lp.history_len);
    state_restore_amax_history(state_path, p->rank, p->world, &history);
    if (history.length > 0) {
        cudaCheck(cudaMemcpy(g->lp.history, history.values, (size_t)history.operands * history.length * sizeof(float),
                             cudaMemcpyHostToDevice));
        g->lp.history_steps = history.steps;
    }
    amax_history_free(&history);
}

// ----------------------------------------------------------------------------------------------
// Model FLOPs utilization: model FLOPs per token (trainer_flops_per_token) over the peak.

// Dense bf16 tensor-core peak in FLOP/s: --peak-tflops, or from the device name (data sheets);
// 0 when unknown.
static double gpu_peak_flops(const char *name, float peak_tflops) {
    if (peak_tflops > 0) return peak_tflops * 1e12;
    if (strstr(name, "H200")) return 989.4e12;
    if (strstr(name, "H100")) return strstr(name, "PCIe") ? 756.5e12 : strstr(name, "NVL") ? 835.5e12 : 989.4e12;
    if (strstr(name, "A100")) return 312e12;
    return 0.0;
}

// --matmul as the precision of the block linears (trainer_matmul_precision: auto is bf16 here);
// fp32 is the CPU trainer's.
static matmul_precision gpu_block_precision(const TrainConfig *tc) {
    const matmul_precision p = trainer_matmul_precision(tc, 1);
    if (p == MATMUL_FP32) usage_error("--matmul fp32: train_gptcu runs the block matmuls in bf16, fp8 or int8");
    return p;
}

#ifndef TESTING  // test_gpt.cu includes everything above
int main(int argc, char **argv) {
    set_program_name(argv[0]);
    TrainConfig tc;
    parse_train_args(&tc, argc, argv);
    const matmul_precision precision = gpu_block_precision(&tc);
    if (tc.gelu_fusion > 0 && precision == MATMUL_INT8)
        usage_error("--gelu-fusion %d needs bf16 or fp8 block matmuls: int8's GEMM ends in int32, without a GELU "
                    "epilogue", tc.gelu_fusion);
    Comm comm;
    comm_init(&comm, &argc, &argv);  // MPI under mpirun; the device communicator wraps it (GPUZero)

    GPT2Config cfg;
    const int from_checkpoint = trainer_model_config(&tc, &cfg);
    trainer_check_ranks_agree(&comm, argc, argv, &cfg, from_checkpoint ? tc.model : NULL);
    // What the flags or the model ask for and the kernels cannot run is said before the GPU is
    // touched (without one, or with a busy one, it would be a CUDA error): a flag's value exits 2,
    // said once under mpirun; a checkpoint's model exits 1, as a file that cannot be used.
    char why[256];
    int usage;
    if (gpu_unsupported(&cfg, tc.B, tc.T, tc.attention, tc.fp8_wgrad, &usage, why, sizeof(why))) {
        if (usage) usage_error("%s", why);
        if (from_checkpoint) die("'%s' holds a model that train_gptcu cannot run: %s", tc.model, why);
        usage_error("-e (--model) '%s': %s", tc.model, why);
    }
    int *policies = (int *)malloc_check((size_t)cfg.num_layers * sizeof(int));
    gpu_recompute_plan(&tc, &cfg, comm.rank, policies);

    const int device = comm_gpu_device(&comm);
    cudaCheck(cudaSetDevice(device));
    cudaDeviceProp prop;
    cudaCheck(cudaGetDeviceProperties(&prop, device));

    const AdamWConfig hp = trainer_adamw_config(&tc);
    GPUModelOptions opt = gpu_model_options(precision);
    opt.fp8_wgrad = tc.fp8_wgrad;
    opt.fp8_fast_accum = tc.fp8_fast_accum;
    opt.amax_history = tc.amax_history;
    if (tc.gelu_fusion >= 0) opt.gelu_fusion = tc.gelu_fusion;  // -1: the default for the precision
    opt.attention = tc.attention;
    opt.policies = policies;
    opt.head_rows = trainer_head_rows(&tc);
    opt.zero_stage = tc.zero_stage;
    opt.host = &comm;
    opt.profile = tc.profile;
    GPUModel g;
    gpu_model_alloc(&g, &cfg, tc.B, tc.T, &hp, tc.seed, &opt);
    const double predicted_act_bytes = gpu_predicted_activation_bytes(
        &cfg, tc.B, tc.T, policies, gpu_keeps_input_codes(g.lp.precision, g.lp.fp8_wgrad));
    if ((double)g.kept_bytes != predicted_act_bytes)  // the budget planner chose by the prediction
        die("internal error: %zu bytes of activations kept, %.0f predicted", g.kept_bytes, predicted_act_bytes);
    free(policies);
    Comm *dc = g.zero.comm;  // takes comm over: host collectives through it, finalized through it
    float *weights = (float *)malloc_check(g.num_params * sizeof(float));
    trainer_initial_weights(&tc, &cfg, from_checkpoint, weights);
    gpu_set_weights(&g, weights);
    free(weights);

    const ZeroPlan *plan = &g.zero.plan;
    if (comm.rank == 0) {
        const double mib = 1.0 / (1 << 20);
        const ZeroMemory mem = zero_memory(plan);
        const double gather = zero_shards_params(plan) ? (double)plan->max_segment : 0.0;  // the second gather buffer
        const double overlap = zero_shards_grads(plan) ? (double)plan->max_block_segment : 0.0;  // the second gradient scratch
        printf("device: %s, %d SMs, %.1f GiB\n", prop.name, prop.multiProcessorCount,
               (double)prop.totalGlobalMem / (1 << 30));
        trainer_print_model(&cfg);
        printf("memory per rank (ZeRO stage %d, %d rank(s), %s): params %.1f MiB (bf16%s), grads %.1f MiB%s, "
               "master %.1f MiB, AdamW state %.1f MiB, activations %.1f MiB\n", plan->stage, plan->world, dc->name,
               ((double)mem.params + gather) * 2 * mib, zero_shards_params(plan) ? ", with the prefetch buffer" : "",
               ((double)mem.grads + overlap) * 4 * mib, zero_shards_grads(plan) ? " (with the overlap scratch)" : "",
               (double)mem.optimizer / 2 * 4 * mib, (double)mem.optimizer * 4 * mib, (double)g.acts_bytes * mib);
        printf("zero: stage %d ranks %d params %zu padded %zu slice %zu max_segment %zu | elements per rank: params %zu "
               "(bf16) + gather %zu grads %zu + overlap %zu optimizer %zu\n", plan->stage, plan->world,
               plan->num_params, plan->padded, plan->slice, plan->max_segment, mem.params, (size_t)gather, mem.grads,
               (size_t)overlap, mem.optimizer);
        printf("activations: kept %.1f MiB (predicted %.1f MiB), recompute scratch %.1f MiB, output head %d rows at a "
               "time (logits %.1f MiB)\n", (double)g.kept_bytes * mib, predicted_act_bytes * mib,
               (double)g.recompute_scratch_bytes * mib, g.head_rows,
               (double)g.head_rows * cfg.padded_vocab_size * sizeof(bf16) * mib);
        const char *const fast_accum[] = {"", ", fast accumulation in the forward GEMMs",
                                          ", fast accumulation in every FP8 GEMM"};
        printf("block matmuls: %s%s%s%s, low-precision scratch %.1f MiB\n",
               matmul_precision_name(g.lp.precision),
               g.lp.fp8_wgrad ? ", fp8 weight gradient" : "", g.lp.history_len > 0 ? ", delayed scaling" : "",
               fast_accum[g.lp.fast_accum], (double)g.lp.bytes * mib);
        const char *const fusion[] = {"off", "fc projection's input gradient", "fc projection's input gradient and fc forward"};
        printf("gelu in cuBLASLt epilogues: %s", fusion[g.gelu_fusion]);
        if (g.gelu_fusion == GELU_FUSED_BOTH) {
            int fused_layers = 0;
            for (int l = 0; l < cfg.num_layers; l++) fused_layers += gelu_fused_forward(&g, l);
            printf(" (fc forward fused in %d of %d layers: not where the GELU alone is recomputed)", fused_layers,
                   cfg.num_layers);
        }
        printf("\n");
        static const char *const kernels[] = {
            "mma.sync", "wgmma (sm_90a)", "wgmma forward (sm_90a), mma.sync backward",
            "mma.sync, the backward with 2 row tiles per warp (head size 64)",
            "mma.sync, the backward with dQ by integer reduction",
            "wgmma (sm_90a), the backward with dQ by integer reduction",
            "wgmma (sm_90a), the backward with dQ by integer reduction, warp-specialized"};
        static_assert(sizeof(kernels) / sizeof(kernels[0]) == NUM_ATTENTION_KERNELS, "a line for every --attention");
        printf("attention kernels: %s\n", kernels[g.attention]);
    }
    const double flops_per_token = trainer_flops_per_token(&cfg, tc.T), peak = gpu_peak_flops(prop.name, tc.peak_tflops);
    if (comm.rank == 0) {
        printf("mfu_flops_per_token %.6e\n", flops_per_token);
        if (peak > 0) printf("mfu_peak_flops %.6e\n", peak);
        else printf("mfu: unknown GPU '%s': pass --peak-tflops to report MFU\n", prop.name);
    }
    TrainerBackend backend = {&g, gpu_zero_grads, gpu_forward_backward, gpu_forward_loss, gpu_next_token_logits,
                              gpu_backend_grad_norm, gpu_backend_update, gpu_save, gpu_load, gpu_profile_take};
    const ZeroRange own = zero_slice_params(plan, plan->rank);
    Trainer trainer = {&tc, &cfg, &backend, dc, (int64_t)g.num_params, (int64_t)own.begin, (int64_t)own.end,
                       flops_per_token, peak};
    trainer_run(&trainer);
    if (comm.rank == 0) {  // all buffers are allocated up front: what is in use now is the run's peak
        size_t free_bytes, total_bytes;
        cudaCheck(cudaMemGetInfo(&free_bytes, &total_bytes));
        printf("device memory in use: %.1f MiB of %.1f MiB (cudaMemGetInfo, after the run)\n",
               (double)(total_bytes - free_bytes) / (1 << 20), (double)total_bytes / (1 << 20));
    }
    gpu_model_free(&g);
    dc->finalize(dc);
    return 0;
}
#endif
