#include "checkpoint.h"

#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "utils.h"

// Visits every tensor instance in file order (stacked: tensor kind outermost, then layer) and
// gives its offset in the layer-major memory buffer.
typedef void (*TensorVisitor)(size_t mem_offset, size_t numel, void *ctx);
static void for_each_tensor_in_file_order(const GPT2Config *cfg, TensorVisitor visit, void *ctx) {
    for (int k = 0; k < NUM_PARAM_TENSORS; k++) {
        int layers = param_tensor_is_layered(k) ? cfg->num_layers : 1;
        for (int l = 0; l < layers; l++)
            visit(gpt2_param_offset(cfg, k, param_tensor_is_layered(k) ? l : -1), param_tensor_numel(cfg, k), ctx);
    }
}

// The checksum's start: FNV-1a 64 of the header with its hash words [11..12] zero.
static uint64_t header_hash(const int32_t *h) {
    int32_t copy[256];
    memcpy(copy, h, sizeof(copy));
    copy[11] = copy[12] = 0;
    return fnv1a64(FNV1A64_INIT, copy, sizeof(copy));
}

static uint64_t stored_sum(const int32_t *h) { return (uint64_t)(uint32_t)h[11] | (uint64_t)(uint32_t)h[12] << 32; }

static size_t payload_bytes(const GPT2Config *cfg, int version) {
    return gpt2_num_params(cfg) * (version == CHECKPOINT_VERSION_BF16 ? 2 : 4);
}

// Reads the 256-word header; returns the file's size.
static long read_header(const char *path, int32_t *h) {
    FILE *f = fopen_check(path, "rb");
    long size = file_size_check(f, path);
    if (size < 256 * (long)sizeof(int32_t))
        die("'%s' is not a model checkpoint: %ld bytes, shorter than the 1024-byte header", path, size);
    fread_check(h, sizeof(int32_t), 256, f, path);
    fclose(f);
    return size;
}

void checkpoint_read_config(const char *path, GPT2Config *cfg) {
    int32_t h[256];
    long size = read_header(path, h);
    if (h[0] != CHECKPOINT_MAGIC)
        die("'%s' is not a model checkpoint: magic %d, expected %d", path, h[0], CHECKPOINT_MAGIC);
    if (h[1] != CHECKPOINT_VERSION_FP32 && h[1] != CHECKPOINT_VERSION_BF16)
        die("'%s': checkpoint version %d is not supported (3 = fp32, 5 = bf16)", path, h[1]);
    memset(cfg, 0, sizeof(*cfg));
    cfg->max_seq_len = h[2];
    cfg->vocab_size = h[3];
    cfg->num_layers = h[4];
    cfg->num_heads = h[5];
    cfg->channels = h[6];
    cfg->padded_vocab_size = h[7];
    const char *bad = gpt2_config_error(cfg);
    if (bad) die("'%s': corrupt checkpoint header: %s", path, bad);
    size_t want = sizeof(h) + payload_bytes(cfg, h[1]);
    if ((size_t)size != want)
        die("'%s' is %s: %ld bytes, the header's model needs %zu", path, (size_t)size < want ? "truncated" : "longer than its header says", size, want);
}

int checkpoint_stored_sum(const char *path, uint64_t *sum) {
    int32_t h[256];
    read_header(path, h);
    *sum = stored_sum(h);
    return h[0] == CHECKPOINT_MAGIC && h[10] == CHECKPOINT_SUM_MARK;
}

typedef struct {
    FILE *f;
    const char *path;
    float *params;
    int bf16;
    uint64_t hash;
    void *buf;
} ReadCtx;

static void read_tensor(size_t mem_offset, size_t numel, void *vctx) {
    ReadCtx *c = (ReadCtx *)vctx;
    float *dst = c->params + mem_offset;
    if (!c->bf16) {
        fread_check(dst, sizeof(float), numel, c->f, c->path);
        c->hash = fnv1a64(c->hash, dst, numel * sizeof(float));
        return;
    }
    uint16_t *tmp = (uint16_t *)c->buf;
    fread_check(tmp, sizeof(uint16_t), numel, c->f, c->path);
    c->hash = fnv1a64(c->hash, tmp, numel * sizeof(uint16_t));
    for (size_t i = 0; i < numel; i++) {  // bf16 is the top half of an fp32
        uint32_t bits = (uint32_t)tmp[i] << 16;
        memcpy(&dst[i], &bits, sizeof(bits));
    }
}

void checkpoint_read_params(const char *path, const GPT2Config *cfg, float *params) {
    GPT2Config file_cfg;
    checkpoint_read_config(path, &file_cfg);
    if (memcmp(&file_cfg, cfg, sizeof(*cfg)) != 0)
        die("'%s' holds another model (L %d C %d NH %d maxT %d V %d) than the one being loaded (L %d C %d NH %d "
            "maxT %d V %d: -e, --max-seq-len, --vocab-size)", path, file_cfg.num_layers, file_cfg.channels,
            file_cfg.num_heads, file_cfg.max_seq_len, file_cfg.vocab_size, cfg->num_layers, cfg->channels,
            cfg->num_heads, cfg->max_seq_len, cfg->vocab_size);
    FILE *f = fopen_check(path, "rb");
    int32_t h[256];
    fread_check(h, sizeof(int32_t), 256, f, path);
    const int header_summed = h[10] == CHECKPOINT_SUM_MARK;
    ReadCtx c = {f, path, params, h[1] == CHECKPOINT_VERSION_BF16, header_summed ? header_hash(h) : FNV1A64_INIT, NULL};
    size_t largest = 0;
    for (int k = 0; k < NUM_PARAM_TENSORS; k++)
        if (param_tensor_numel(cfg, k) > largest) largest = param_tensor_numel(cfg, k);
    if (c.bf16) c.buf = malloc_check(largest * sizeof(uint16_t));
    for_each_tensor_in_file_order(cfg, read_tensor, &c);
    free(c.buf);
    fclose(f);
    if (header_summed || h[10] == CHECKPOINT_PAYLOAD_SUM_MARK) {
        if (stored_sum(h) != c.hash) die("'%s' is corrupt: checksum mismatch", path);
    }
}

typedef struct {
    const float *src;
    float *dst;
    size_t read;
} ReorderCtx;

static void reorder_tensor(size_t mem_offset, size_t numel, void *vctx) {
    ReorderCtx *c = (ReorderCtx *)vctx;
    memcpy(c->dst + mem_offset, c->src + c->read, numel * sizeof(float));
    c->read += numel;
}

void params_file_order_to_memory(const GPT2Config *cfg, const float *file_order, float *layer_major) {
    ReorderCtx c = {file_order, layer_major, 0};
    for_each_tensor_in_file_order(cfg, reorder_tensor, &c);
}

typedef struct {
    AtomicFile *af;
    const float *params;
    uint64_t hash;
} WriteCtx;

static void write_tensor(size_t mem_offset, size_t numel, void *vctx) {
    WriteCtx *c = (WriteCtx *)vctx;
    atomic_write(c->af, c->params + mem_offset, numel * sizeof(float));
    c->hash = fnv1a64(c->hash, c->params + mem_offset, numel * sizeof(float));
}

int checkpoint_write(const char *path, const GPT2Config *cfg, const float *params, uint64_t *sum, char *err,
                     size_t errlen) {
    int32_t h[256] = {0};
    h[0] = CHECKPOINT_MAGIC;
    h[1] = CHECKPOINT_VERSION_FP32;
    h[2] = cfg->max_seq_len;
    h[3] = cfg->vocab_size;
    h[4] = cfg->num_layers;
    h[5] = cfg->num_heads;
    h[6] = cfg->channels;
    h[7] = cfg->padded_vocab_size;
    AtomicFile af;
    if (atomic_open(&af, path) != 0) {
        snprintf(err, errlen, "%s", af.error);
        return -1;
    }
    h[10] = CHECKPOINT_SUM_MARK;
    atomic_write(&af, h, sizeof(h));
    WriteCtx c = {&af, params, header_hash(h)};
    for_each_tensor_in_file_order(cfg, write_tensor, &c);
    h[11] = (int32_t)(uint32_t)c.hash;
    h[12] = (int32_t)(uint32_t)(c.hash >> 32);
    atomic_pwrite(&af, h, sizeof(h), 0);
    if (atomic_commit(&af) != 0) {
        snprintf(err, errlen, "%s", af.error);
        return -1;
    }
    *sum = c.hash;
    return 0;
}
