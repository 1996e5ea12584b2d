// Model checkpoint files, in the common GPT-2 C layout:
//   int32 header[256]: [0] magic 20240326, [1] version (3: fp32 params, 5: bf16 params),
//                      [2] maxT, [3] V, [4] L, [5] NH, [6] C, [7] Vp,
//                      [10] CHECKPOINT_SUM_MARK when [11..12] hold the FNV-1a 64 of the header
//                      (with [11..12] zero) and then the payload; CHECKPOINT_PAYLOAD_SUM_MARK in
//                      older files of this project (the payload's only); files from other
//                      trainers have zeros there and load without a check
//   then every parameter tensor stacked over layers, in the order of enum ParamTensor.
// In memory the parameters are layer-major (model.h); these functions convert.
#ifndef LLMC_CHECKPOINT_H
#define LLMC_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CHECKPOINT_MAGIC 20240326
#define CHECKPOINT_VERSION_FP32 3
#define CHECKPOINT_VERSION_BF16 5
#define CHECKPOINT_SUM_MARK 0x4d555348          // "HSUM": header and payload
#define CHECKPOINT_PAYLOAD_SUM_MARK 0x4d555343  // "CSUM": the payload only (read, not written)

// Reads the header of a checkpoint and validates it against the file size. Dies with a message
// naming the file and the problem.
void checkpoint_read_config(const char *path, GPT2Config *cfg);
// Reads the parameters (fp32 or bf16 in the file) of the model cfg describes into params
// (layer-major, gpt2_num_params floats). Verifies the checksum when present. Dies on any mismatch,
// a file holding another model included.
void checkpoint_read_params(const char *path, const GPT2Config *cfg, float *params);
// Converts a parameter-sized array from the file's stacked order to the layer-major memory order.
void params_file_order_to_memory(const GPT2Config *cfg, const float *file_order, float *layer_major);
// Writes an fp32 (version 3) checkpoint atomically; *sum gets the checksum it holds (the training
// state records it: llmc/state.h). Returns 0, or -1 with a message in err.
int checkpoint_write(const char *path, const GPT2Config *cfg, const float *params, uint64_t *sum, char *err,
                     size_t errlen);
// The whole-file checksum a checkpoint's header holds (read from the header alone; the payload is
// verified against it by checkpoint_read_params). Returns 0 when the file holds none (written by
// another trainer, or an older file of this project that sums the payload only).
int checkpoint_stored_sum(const char *path, uint64_t *sum);

#ifdef __cplusplus
}
#endif
#endif
