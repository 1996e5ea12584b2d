#include "zero.h"

#include "utils.h"

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }
static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

ZeroRange zero_segment(const GPT2Config *cfg, int seg) {
    size_t emb = param_tensor_numel(cfg, PT_WTE) + param_tensor_numel(cfg, PT_WPE);
    size_t layer = gpt2_layer_numel(cfg);
    if (seg == 0) return (ZeroRange){0, emb};
    if (seg <= cfg->num_layers) {
        size_t b = emb + (size_t)(seg - 1) * layer;
        return (ZeroRange){b, b + layer};
    }
    size_t b = emb + (size_t)cfg->num_layers * layer;
    return (ZeroRange){b, b + 2 * (size_t)cfg->channels};
}

int zero_layer_segment(int layer) { return 1 + layer; }
int zero_final_segment(const GPT2Config *cfg) { return cfg->num_layers + 1; }

void zero_plan_init(ZeroPlan *p, const GPT2Config *cfg, int stage, int rank, int world) {
    if (stage < 0 || stage > 3) die("ZeRO stage %d: must be 0, 1, 2 or 3", stage);
    if (world < 1 || rank < 0 || rank >= world) die("ZeRO: rank %d of %d ranks is impossible", rank, world);
    p->stage = stage;
    p->rank = rank;
    p->world = world;
    p->num_params = gpt2_num_params(cfg);
    size_t unit = (size_t)world * ZERO_ALIGN;
    p->padded = (p->num_params + unit - 1) / unit * unit;
    p->slice = p->padded / (size_t)world;
    p->num_segments = cfg->num_layers + 2;
    p->embed_numel = zero_segment(cfg, 0).end;
    p->max_block_segment = 0;
    for (int s = 1; s < p->num_segments; s++) {
        ZeroRange r = zero_segment(cfg, s);
        p->max_block_segment = max_size(p->max_block_segment, r.end - r.begin);
    }
    p->max_segment = max_size(p->embed_numel, p->max_block_segment);
    p->final_numel = 2 * (size_t)cfg->channels;
}

ZeroRange zero_slice(const ZeroPlan *p, int q) { return (ZeroRange){(size_t)q * p->slice, (size_t)(q + 1) * p->slice}; }

ZeroRange zero_slice_params(const ZeroPlan *p, int q) {
    ZeroRange s = zero_slice(p, q);
    return (ZeroRange){min_size(s.begin, p->num_params), min_size(s.end, p->num_params)};
}

static ZeroRange intersect(ZeroRange a, ZeroRange b) {
    size_t lo = max_size(a.begin, b.begin), hi = min_size(a.end, b.end);
    return (ZeroRange){lo, hi > lo ? hi : lo};
}

void zero_split(const ZeroPlan *p, ZeroRange r, size_t *counts) {
    for (int q = 0; q < p->world; q++) {
        ZeroRange part = intersect(r, zero_slice(p, q));
        counts[q] = part.end - part.begin;
    }
}

ZeroRange zero_optimizer_range(const ZeroPlan *p) {
    if (!zero_shards_optimizer(p)) return (ZeroRange){0, p->num_params};
    return zero_slice_params(p, p->rank);
}

ZeroRange zero_own_part(const ZeroPlan *p, ZeroRange r) { return intersect(r, zero_slice(p, p->rank)); }

ZeroMemory zero_memory(const ZeroPlan *p) {
    ZeroMemory m;
    size_t Np = p->padded, S = p->slice, M = p->max_segment;
    m.params = zero_shards_params(p) ? S + M + p->final_numel : Np;
    m.grads = zero_shards_grads(p) ? S + p->embed_numel + p->max_block_segment : Np;
    m.optimizer = 2 * (zero_shards_optimizer(p) ? S : Np);
    return m;
}
