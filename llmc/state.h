// Training-state files: what a checkpoint needs beyond the model to resume bit for bit.
// One file per rank, "state_<step>_<rank>.bin":
//   int64 header[128]: [0] magic STATE_MAGIC, [1] version, [2] step (completed optimizer steps),
//     [3] rank, [4] ranks, [5] parameters in the model, [6] begin, [7] end of this rank's slice
//     of the flat parameter buffer (ZeRO; the whole buffer for one process), [8] training-data
//     shard, [9] position in it, [10] sampling-RNG seed, [11] its counter, [12] 1 if fp32 master
//     weights follow (GPU trainer), [13] FNV-1a 64 of the header (with [13] zero) and everything
//     after it, [14] operands and [15] length of this rank's FP8 amax history (0 0: none), [16]
//     its recorded micro-steps, [17] the run's --seed (the GPU's stochastic rounding is keyed by it),
//     [18] updates skipped in a row up to the step (-sm counts on across a resume; 0 in older files),
//     [19] the checksum of the checkpoint's model file (llmc/checkpoint.h) and [20] 1 when [19]
//     holds it (rank 0's file; 0 in the other ranks' files and in older files): a resume refuses
//     a model file of another step or run beside the state
//   float m[end-begin], v[end-begin], master[end-begin] (if [12]),
//   the loss and grad-norm OutlierDetectors (int32 count, int32 next, double values[WINDOW]),
//   float amax history[operands][length] (llmc/amax_history.h; each rank its own: the
//   activations and gradients it quantized are its own).
// Version 1 files (older) are read too: their checksum covers what follows the header only, and
// they hold no seed ([17] zero). Files without a history (written before it existed, or by a run
// without delayed scaling) have zeros in [14..16].
#ifndef LLMC_STATE_H
#define LLMC_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "amax_history.h"
#include "dataloader.h"
#include "outlier.h"
#include "rng.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STATE_MAGIC 20241122
#define STATE_VERSION 2

typedef struct {
    int64_t step;
    uint64_t run_seed;   // --seed of the run's first start (0 in a version 1 file)
    int run_seed_saved;  // read: 0 for a version 1 file
    int skipped_in_a_row;  // updates skipped in a row up to step (llmc/trainer.c, -sm)
    uint64_t model_sum;    // the checksum of the model file written with this state (checkpoint_write)
    int model_sum_saved;   // whether model_sum holds it (rank 0's file of a checkpoint)
    int rank, num_ranks;
    int64_t num_params;
    int64_t begin, end;
    DataPosition train_pos;
    Rng sample_rng;
    OutlierDetector loss_outliers, norm_outliers;
    // FP8 delayed scaling. Writing: the history to save (values NULL or length 0: none). Reading: the file's
    // operands, length and steps; its values go into `values` when the caller points it at a
    // buffer before state_read and operands and length match its own (see state_read).
    AmaxHistory amax;
} TrainState;

// Writes atomically; master may be NULL. Returns 0, or -1 with a message in err.
int state_write(const char *path, const TrainState *st, const float *m, const float *v, const float *master,
                char *err, size_t errlen);
// Reads the header only (for checks before allocating). Dies naming the file on any problem.
void state_read_header(const char *path, TrainState *st, int *has_master);
// Reads everything; m, v (and master if the file has it and master != NULL) hold end-begin
// floats. Verifies size and checksum; dies naming the file on any mismatch. The amax history
// is read into st->amax.values when the caller set st->amax (operands, length, values) to a
// history of the same shape as the file's; otherwise st->amax.values comes back NULL and
// operands, length, steps describe what the file held (0 0 0: nothing).
void state_read(const char *path, TrainState *st, float *m, float *v, float *master);

// Reads the flat range [begin, end) of the moments (and master weights, when master != NULL and
// the files have them) from all the state files of one checkpoint, whichever number of ranks
// wrote it (each file's header gives its slice): re-slicing for another world size or ZeRO
// stage. state_path is this rank's file of the checkpoint (<dir>/state_<step>_<rank>.bin, the
// names llmc/trainer.c gives); m, v, master hold end - begin floats for the range. st gets the
// run's shared state (step, data position, sampling RNG, outlier windows) from rank 0's file.
// Returns whether the files hold master weights. Dies naming the file when the files do not
// belong together or do not cover the range exactly once.
int state_read_range(const char *state_path, int64_t num_params, size_t begin, size_t end, float *m, float *v,
                     float *master, TrainState *st);
// Restores the FP8 amax history (llmc/amax_history.h) of rank `rank` from its file of the
// checkpoint into h (whose operands and length say the shape wanted; nothing to do for length
// 0). When the checkpoint was written by another number of ranks than `world` or holds no history
// of that shape, resets h and warns that the resume is not bit-exact (a rank's history is of its
// own data, so it does not re-slice).
void state_restore_amax_history(const char *state_path, int rank, int world, AmaxHistory *h);

#ifdef __cplusplus
}
#endif
#endif
