// Where a training step's time goes, part by part (--profile).
//
// A backend marks, in the order its work runs, the part that begins; the time from one mark to
// the next belongs to the part the first one named. So the parts add up to the whole span, gaps
// included: each backend call marks PROF_HOST as it returns, and the time until the next call's
// first mark is the training loop's own work (data loading, logging) or, on a GPU, the time the
// device waits for the host. The CPU reads the wall clock at each mark (WallTimeline, here); the
// GPU records a CUDA event in its stream and reads the intervals when the host next waits for
// them (llmc/profile.cuh), so a kernel's time is the device's, not the time of its launch.
#ifndef LLMC_PROFILE_H
#define LLMC_PROFILE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    PROF_HOST,                // the training loop between backend calls; on a GPU, the device idle
    PROF_ENCODER,             // token + position embeddings, forward and backward
    PROF_LAYERNORM,           // forward (with the residual add it is fused with) and backward
    PROF_MATMUL_FORWARD,      // the block linears' forward (with the residual add on the CPU)
    PROF_MATMUL_BACKWARD,     // the block linears' input, weight and bias gradients
    PROF_QUANTIZE,            // --matmul fp8|int8: amaxes, scales, casts, transposes, int8 dequantization
    PROF_ATTENTION_FORWARD,
    PROF_ATTENTION_BACKWARD,
    PROF_GELU,                // forward and backward, where no matmul epilogue does it
    PROF_HEAD,                // the output head: logits, loss and their backward
    PROF_RECOMPUTE,           // the forward steps a backward pass reruns (-r, --recompute, --mem-budget)
    PROF_COMM,                // ZeRO's collectives inside forward and backward (GPU: the waits for them)
    PROF_GRAD_NORM,           // the gradient's reduction across ranks and its norm
    PROF_OPTIMIZER,           // zeroing the gradients, AdamW, the all-gather of the updated weights
    NUM_PROF_PARTS
} ProfPart;

extern const char *const prof_part_names[NUM_PROF_PARTS];

// The part a mark starts: while a backward pass recomputes (recomputing != 0), all of it is
// PROF_RECOMPUTE, whatever the kernels.
static inline int prof_part(int part, int recomputing) { return recomputing ? PROF_RECOMPUTE : part; }

// The CPU's timeline: the wall clock at each mark.
typedef struct {
    int on;                     // --profile; off, a mark returns at once
    int recomputing;            // see prof_part
    int part;                   // the part running since `since`
    double since;               // wall time (s) of the last mark
    double ms[NUM_PROF_PARTS];  // time of each part since the last wall_timeline_take
} WallTimeline;

void wall_timeline_start(WallTimeline *tl, int on);
void wall_timeline_mark(WallTimeline *tl, ProfPart part);
// Marks PROF_HOST, then adds the time of each part since the last take to ms[NUM_PROF_PARTS]
// (NULL: drops it).
void wall_timeline_take(WallTimeline *tl, double *ms);

// Prints the mean time per step of every part (0 for those that did not run), over `steps` steps
// whose parts add up to ms, beside measured_ms, the mean step time the training loop measured
// over the same steps.
void prof_print(const double *ms, int steps, double measured_ms);

#ifdef __cplusplus
}
#endif

#endif  // LLMC_PROFILE_H
