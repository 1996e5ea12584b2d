// The GPT-2 model description shared by every build: configuration, the parameter tensors,
// their shapes and their place in the one flat parameter buffer, and the seeded initialization.
//
// In memory the parameters are one flat fp32 array in layer-major order:
//     wte, wpe, | layer 0: ln1w ln1b qkvw qkvb attprojw attprojb ln2w ln2b fcw fcb fcprojw fcprojb |
//     layer 1 ... | layer L-1 ... | lnfw, lnfb
// so that one layer's weights (and gradients, and optimizer state) are one contiguous range: ZeRO
// gathers and reduces them as a block, and recomputation works a layer at a time. The checkpoint
// file keeps the common GPT-2 C layout instead (each tensor stacked over layers); checkpoint.c
// converts between the two.
// Linear weights are stored (out, in) row-major, as torch.nn.Linear.weight.
#ifndef LLMC_MODEL_H
#define LLMC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPT2_EOT 50256  // <|endoftext|> in GPT-2's vocabulary: starts every document and sample

typedef struct {
    int max_seq_len;        // maxT: positions the model has embeddings for
    int vocab_size;         // V: real tokens (50257 for GPT-2)
    int padded_vocab_size;  // Vp: V rounded up to a multiple of 128 for fast matmuls
    int num_layers;         // L
    int num_heads;          // NH
    int channels;           // C, a multiple of NH
} GPT2Config;

enum ParamTensor {
    PT_WTE, PT_WPE,
    PT_LN1W, PT_LN1B, PT_QKVW, PT_QKVB, PT_ATTPROJW, PT_ATTPROJB,
    PT_LN2W, PT_LN2B, PT_FCW, PT_FCB, PT_FCPROJW, PT_FCPROJB,
    PT_LNFW, PT_LNFB,
    NUM_PARAM_TENSORS
};
#define FIRST_LAYER_TENSOR PT_LN1W
#define LAST_LAYER_TENSOR PT_FCPROJB
#define NUM_LAYER_TENSORS (LAST_LAYER_TENSOR - FIRST_LAYER_TENSOR + 1)

// One tensor instance: a global tensor (wte, wpe, lnfw, lnfb) or one layer's copy of a layer tensor.
// Optimizer and ZeRO work on these units: 4 + 12 L of them, in memory order.
typedef struct {
    int kind;          // enum ParamTensor
    int layer;         // layer index, -1 for global tensors
    size_t offset;     // first element in the flat buffer
    size_t numel;
} ParamSlot;

const char *param_tensor_name(int kind);
// "<prefix><name>[<layer>]", or "<prefix><name>" for a global tensor, into buf (n bytes).
void param_slot_label(const ParamSlot *slot, const char *prefix, char *buf, size_t n);
int param_tensor_is_layered(int kind);
// Weight decay applies to the 2-D weight matrices and embeddings, not to biases or LayerNorm.
int param_tensor_is_decayed(int kind);
// Elements of one instance of the tensor (one layer's copy for layered tensors).
size_t param_tensor_numel(const GPT2Config *cfg, int kind);
size_t gpt2_layer_numel(const GPT2Config *cfg);
size_t gpt2_num_params(const GPT2Config *cfg);
// Offset of tensor `kind` of layer `layer` (ignored for global tensors) in the flat buffer.
size_t gpt2_param_offset(const GPT2Config *cfg, int kind, int layer);
// Number of ParamSlots (4 + 12 L) and the i-th in memory order.
int gpt2_num_slots(const GPT2Config *cfg);
ParamSlot gpt2_slot(const GPT2Config *cfg, int i);

// Sizes by depth, as GPT-2: d12 (C=768, NH=12, 124M), d24 (1024, 16, 350M), d36 (1280, 20, 774M),
// d48 (1600, 25, 1.5B); any other depth d has C = 64 d and NH = d. Also "L<l>C<c>NH<h>" (e.g. L4C256NH4) for explicit shapes.
// Returns 0 and fills cfg (V = 50257, maxT = 1024, caller may override) or returns -1 if the
// string is not a model description (then it is taken to be a checkpoint path).
int gpt2_config_from_string(const char *desc, GPT2Config *cfg);
// Checks the configuration; returns NULL if valid or a static message naming the problem.
const char *gpt2_config_error(const GPT2Config *cfg);
int gpt2_pad_vocab(int vocab_size);  // round up to a multiple of 128

// GPT-2 initialization: normal(0, 0.02) for weights and embeddings (including padded wte rows),
// the residual projections (attprojw, fcprojw) scaled by 1/sqrt(2L), biases 0, LayerNorm weight 1
// and bias 0. Element j of tensor instance (kind, layer) is normal draw number j of the stream
// (kind, layer) of the counter-based generator (rng.h), so the weights depend only on the seed:
// not on the memory layout, the number of threads or the number of ranks.
void gpt2_init_params(const GPT2Config *cfg, float *params, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
