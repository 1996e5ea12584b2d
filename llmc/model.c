#include "model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rng.h"

static const char *const kNames[NUM_PARAM_TENSORS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb",
};

const char *param_tensor_name(int kind) { return kNames[kind]; }

void param_slot_label(const ParamSlot *slot, const char *prefix, char *buf, size_t n) {
    if (slot->layer >= 0) snprintf(buf, n, "%s%s[%d]", prefix, param_tensor_name(slot->kind), slot->layer);
    else snprintf(buf, n, "%s%s", prefix, param_tensor_name(slot->kind));
}

int param_tensor_is_layered(int kind) { return kind >= FIRST_LAYER_TENSOR && kind <= LAST_LAYER_TENSOR; }

int param_tensor_is_decayed(int kind) {
    return kind == PT_WTE || kind == PT_WPE || kind == PT_QKVW || kind == PT_ATTPROJW ||
           kind == PT_FCW || kind == PT_FCPROJW;
}

size_t param_tensor_numel(const GPT2Config *cfg, int kind) {
    size_t C = (size_t)cfg->channels;
    switch (kind) {
    case PT_WTE: return (size_t)cfg->padded_vocab_size * C;
    case PT_WPE: return (size_t)cfg->max_seq_len * C;
    case PT_QKVW: return 3 * C * C;
    case PT_QKVB: return 3 * C;
    case PT_ATTPROJW: return C * C;
    case PT_FCW: return 4 * C * C;
    case PT_FCB: return 4 * C;
    case PT_FCPROJW: return 4 * C * C;
    default: return C;  // the LayerNorm weights and biases, attprojb, fcprojb
    }
}

size_t gpt2_layer_numel(const GPT2Config *cfg) {
    size_t n = 0;
    for (int k = FIRST_LAYER_TENSOR; k <= LAST_LAYER_TENSOR; k++) n += param_tensor_numel(cfg, k);
    return n;
}

size_t gpt2_num_params(const GPT2Config *cfg) {
    return param_tensor_numel(cfg, PT_WTE) + param_tensor_numel(cfg, PT_WPE) +
           (size_t)cfg->num_layers * gpt2_layer_numel(cfg) + 2 * (size_t)cfg->channels;
}

size_t gpt2_param_offset(const GPT2Config *cfg, int kind, int layer) {
    size_t layers_start = param_tensor_numel(cfg, PT_WTE) + param_tensor_numel(cfg, PT_WPE);
    switch (kind) {
    case PT_WTE: return 0;
    case PT_WPE: return param_tensor_numel(cfg, PT_WTE);
    case PT_LNFW: return layers_start + (size_t)cfg->num_layers * gpt2_layer_numel(cfg);
    case PT_LNFB: return layers_start + (size_t)cfg->num_layers * gpt2_layer_numel(cfg) + cfg->channels;
    default: {
        size_t off = layers_start + (size_t)layer * gpt2_layer_numel(cfg);
        for (int k = FIRST_LAYER_TENSOR; k < kind; k++) off += param_tensor_numel(cfg, k);
        return off;
    }
    }
}

int gpt2_num_slots(const GPT2Config *cfg) { return 4 + NUM_LAYER_TENSORS * cfg->num_layers; }

ParamSlot gpt2_slot(const GPT2Config *cfg, int i) {
    ParamSlot s;
    int last = gpt2_num_slots(cfg) - 2;
    if (i < 2) { s.kind = i; s.layer = -1; }
    else if (i >= last) { s.kind = PT_LNFW + (i - last); s.layer = -1; }
    else { s.kind = FIRST_LAYER_TENSOR + (i - 2) % NUM_LAYER_TENSORS; s.layer = (i - 2) / NUM_LAYER_TENSORS; }
    s.offset = gpt2_param_offset(cfg, s.kind, s.layer);
    s.numel = param_tensor_numel(cfg, s.kind);
    return s;
}

int gpt2_pad_vocab(int vocab_size) { return (vocab_size + 127) / 128 * 128; }

// Reads the decimal digits at *s (no sign or space), advancing *s past them: their value, or -1
// when *s holds no digit. Values saturate at 2^24, beyond every range of gpt2_config_error, so
// that a huge number is rejected there instead of wrapping into a valid one (and 64 * depth
// cannot overflow).
static int read_count(const char **s) {
    if (**s < '0' || **s > '9') return -1;
    int v = 0;
    for (; **s >= '0' && **s <= '9'; (*s)++) v = v >= (1 << 24) / 10 ? 1 << 24 : v * 10 + (**s - '0');
    return v;
}

// Consumes `word` at *s, then a count: the count, or -1.
static int read_word_count(const char **s, const char *word) {
    const size_t n = strlen(word);
    if (strncmp(*s, word, n) != 0) return -1;
    *s += n;
    return read_count(s);
}

int gpt2_config_from_string(const char *desc, GPT2Config *cfg) {
    const char *p = desc;
    int depth = read_word_count(&p, "d"), L = 0, C = 0, NH = 0;
    if (depth >= 0 && *p == '\0') {
        // GPT-2's published sizes; other depths use 64-channel heads, one per layer.
        L = depth;
        switch (depth) {
        case 24: C = 1024; NH = 16; break;  // 350M
        case 36: C = 1280; NH = 20; break;  // 774M
        case 48: C = 1600; NH = 25; break;  // 1.5B
        default: C = 64 * depth; NH = depth; break;  // d12: 768 channels, 12 heads (124M)
        }
    } else {
        p = desc;
        L = read_word_count(&p, "L");
        C = L >= 0 ? read_word_count(&p, "C") : -1;
        NH = C >= 0 ? read_word_count(&p, "NH") : -1;
        if (NH < 0 || *p != '\0') return -1;
    }
    memset(cfg, 0, sizeof(*cfg));
    cfg->num_layers = L;
    cfg->channels = C;
    cfg->num_heads = NH;
    cfg->max_seq_len = 1024;
    cfg->vocab_size = 50257;
    cfg->padded_vocab_size = gpt2_pad_vocab(50257);
    return 0;
}

const char *gpt2_config_error(const GPT2Config *cfg) {
    if (cfg->num_layers < 1 || cfg->num_layers > 1024) return "the number of layers must be in [1, 1024]";
    if (cfg->channels < 1 || cfg->channels > 65536) return "the channel count C must be in [1, 65536]";
    if (cfg->num_heads < 1 || cfg->channels % cfg->num_heads != 0) return "the head count NH must be >= 1 and divide C";
    if (cfg->max_seq_len < 1 || cfg->max_seq_len > 1 << 20) return "maxT must be in [1, 1048576]";
    if (cfg->vocab_size < 1 || cfg->vocab_size > 1 << 24) return "the vocabulary size V must be in [1, 16777216]";
    if (cfg->padded_vocab_size < cfg->vocab_size || cfg->padded_vocab_size > cfg->vocab_size + 4096)
        return "the padded vocabulary Vp must be in [V, V + 4096]";
    return NULL;
}

void gpt2_init_params(const GPT2Config *cfg, float *params, uint64_t seed) {
    const float residual_scale = 1.0f / sqrtf(2.0f * (float)cfg->num_layers);
    int nslots = gpt2_num_slots(cfg);
    for (int i = 0; i < nslots; i++) {
        ParamSlot s = gpt2_slot(cfg, i);
        float *p = params + s.offset;
        int k = s.kind;
        if (k == PT_LN1W || k == PT_LN2W || k == PT_LNFW) {
            for (size_t j = 0; j < s.numel; j++) p[j] = 1.0f;
        } else if (k == PT_LN1B || k == PT_LN2B || k == PT_LNFB || k == PT_QKVB || k == PT_ATTPROJB ||
                   k == PT_FCB || k == PT_FCPROJB) {
            memset(p, 0, s.numel * sizeof(float));
        } else {
            float stddev = 0.02f * ((k == PT_ATTPROJW || k == PT_FCPROJW) ? residual_scale : 1.0f);
            // Stream = (kind, layer): each tensor instance draws its own addressable sequence.
            uint64_t stream = (uint64_t)k << 32 | (uint32_t)(s.layer + 1);
            #pragma omp parallel for
            for (size_t j = 0; j < s.numel; j++) p[j] = stddev * (float)rng_normal(seed, stream, j);
        }
    }
}
