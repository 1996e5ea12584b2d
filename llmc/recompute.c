#include "recompute.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utils.h"

static const struct { const char *name; int bit; } kBits[] = {
    {"norm", RC_NORM}, {"gelu", RC_GELU}, {"attn", RC_ATTN}, {"mlp", RC_MLP}, {"block", RC_BLOCK},
};
#define NUM_BITS (int)(sizeof(kBits) / sizeof(kBits[0]))

static int canonical(int p) {
    if (p & RC_BLOCK) return RC_BLOCK;
    if (p & RC_MLP) p &= ~RC_GELU;  // MLP already recomputes the GELU output
    return p;
}

int recompute_parse_policy(const char *s, int *policy) {
    if (strcmp(s, "none") == 0) { *policy = RC_NONE; return 0; }
    int p = 0;
    const char *start = s;
    while (*start) {
        const char *end = strchr(start, '+');
        size_t len = end ? (size_t)(end - start) : strlen(start);
        int found = 0;
        for (int i = 0; i < NUM_BITS; i++)
            if (strlen(kBits[i].name) == len && strncmp(start, kBits[i].name, len) == 0) { p |= kBits[i].bit; found = 1; }
        if (!found) return -1;
        if (!end) break;
        start = end + 1;
        if (!*start) return -1;
    }
    if (p == 0) return -1;
    *policy = canonical(p);
    return 0;
}

const char *recompute_policy_name(int policy, char *buf, size_t n) {
    if (policy == RC_NONE) { snprintf(buf, n, "none"); return buf; }
    buf[0] = '\0';
    for (int i = 0; i < NUM_BITS; i++) {
        if (!(policy & kBits[i].bit)) continue;
        size_t used = strlen(buf);
        snprintf(buf + used, n - used, "%s%s", used ? "+" : "", kBits[i].name);
    }
    return buf;
}

// A layer index: decimal digits only, at most 9 of them (no sign, no wrap-around); *end after it.
static int parse_layer(const char *s, const char **end, long *layer) {
    int digits = 0;
    *layer = 0;
    while (digits < 10 && isdigit((unsigned char)s[digits])) *layer = *layer * 10 + (s[digits++] - '0');
    *end = s + digits;
    return digits >= 1 && digits <= 9 ? 0 : -1;
}

// One item "<a>[-<b>]:<policy>" of a list; fills policies[a..b].
static int parse_list_item(char *item, int L, int *policies, char *err, size_t errlen) {
    if (!*item) { snprintf(err, errlen, "an empty item (two commas in a row, or one at an end)"); return -1; }
    char *colon = strchr(item, ':');
    if (!colon) { snprintf(err, errlen, "'%s' is not <layers>:<policy>", item); return -1; }
    *colon = '\0';
    long lo, hi;
    const char *end;
    int bad = parse_layer(item, &end, &lo);
    if (!bad && *end == '-') bad = parse_layer(end + 1, &end, &hi);
    else hi = lo;
    if (bad || *end != '\0') { snprintf(err, errlen, "'%s' is not a layer or a range a-b", item); return -1; }
    if (lo > hi) { snprintf(err, errlen, "layers %ld-%ld: the range is reversed (write %ld-%ld)", lo, hi, hi, lo); return -1; }
    if (hi >= L) { snprintf(err, errlen, "layers %ld-%ld are outside 0-%d", lo, hi, L - 1); return -1; }
    int policy;
    if (recompute_parse_policy(colon + 1, &policy) != 0) {
        snprintf(err, errlen, "'%s' is not a policy (none, gelu, norm, attn, mlp, block, or a+b)", colon + 1);
        return -1;
    }
    for (long l = lo; l <= hi; l++) {
        if (policies[l] >= 0) { snprintf(err, errlen, "layer %ld is given twice", l); return -1; }
        policies[l] = policy;
    }
    return 0;
}

int recompute_parse_list(const char *s, int L, int *policies, char *err, size_t errlen) {
    for (int l = 0; l < L; l++) policies[l] = -1;
    char *copy = (char *)malloc_check(strlen(s) + 1);
    strcpy(copy, s);
    int rc = 0;
    for (char *item = copy; rc == 0;) {
        char *comma = strchr(item, ',');
        if (comma) *comma = '\0';
        rc = parse_list_item(item, L, policies, err, errlen);
        if (!comma) break;
        item = comma + 1;
    }
    free(copy);
    if (rc) return rc;
    for (int l = 0; l < L; l++)
        if (policies[l] < 0) { snprintf(err, errlen, "layer %d has no policy", l); return -1; }
    return 0;
}

int recompute_keeps(int policy, RecomputeBuffer b) {
    if (policy & RC_BLOCK) return 0;
    const int mlp = policy & RC_MLP;
    switch (b) {
    case RB_LN1: return !(policy & RC_NORM);
    case RB_LN1_STATS: case RB_QKV: case RB_ATT_STATS: case RB_RESIDUAL2: return 1;
    case RB_ATT_OUT: case RB_ATT_KEPT: return !(policy & RC_ATTN);
    case RB_LN2: return !mlp && !(policy & RC_NORM);
    case RB_LN2_STATS: case RB_FCH: return !mlp;
    case RB_FCH_GELU: return !mlp && !(policy & RC_GELU);
    }
    return 0;
}

double recompute_layer_elements(const RecomputeShape *s, int policy) {
    const double C = s->C, NH = s->NH, w = s->stats_width;
    const double codes = s->input_codes, input = codes > 0 ? codes : 1.0;  // a kept ln1, ln2 or GELU output
    const double per_token[] = {
        [RB_LN1] = C * input, [RB_LN1_STATS] = 2 * w, [RB_QKV] = 3 * C, [RB_ATT_OUT] = C * (1 + codes),
        [RB_ATT_KEPT] = NH * s->att_kept_per_head_token * w, [RB_ATT_STATS] = NH * s->att_stats_per_head_token * w,
        [RB_RESIDUAL2] = C, [RB_LN2] = C * input, [RB_LN2_STATS] = 2 * w, [RB_FCH] = 4 * C, [RB_FCH_GELU] = 4 * C * input,
    };
    double e = C;  // residual3
    for (int b = 0; b < (int)(sizeof(per_token) / sizeof(per_token[0])); b++)
        if (recompute_keeps(policy, (RecomputeBuffer)b)) e += per_token[b];
    return e;
}

int recompute_steps(int policy) {
    if (policy & RC_BLOCK) return RC_ALL_STEPS & ~RC_STEP_FCPROJ;
    int steps = 0;
    if (policy & RC_NORM) steps |= RC_STEP_LN1 | RC_STEP_LN2;
    if (policy & RC_ATTN) steps |= RC_STEP_ATTN;
    if (policy & RC_MLP) steps |= RC_STEP_LN2 | RC_STEP_FC | RC_STEP_GELU;
    if (policy & RC_GELU) steps |= RC_STEP_GELU;
    return steps;
}

// The work one recomputable step of a block's forward pass (an RC_STEP_ bit of recompute_steps;
// never RC_STEP_FCPROJ, whose output every policy keeps) does per token: matmul FLOPs
// (a matmul of m x k by k x n is 2mkn), attention FLOPs (forward, causal, averaged over positions:
// 2 matmuls of about T/2 keys, 2 * 2 * C * T / 2 = 2 C T, plus about 5 operations per score for
// the softmax), and the elements a LayerNorm or a GELU writes (each reads as many).
typedef struct { double matmul_flops, attention_flops, layernorm_elements, gelu_elements; } StepWork;

static StepWork step_work(const RecomputeShape *s, int step) {
    const double C = s->C, T = s->T;
    StepWork w = {0, 0, 0, 0};
    switch (step) {
    case RC_STEP_LN1: case RC_STEP_LN2: w.layernorm_elements = C; break;
    case RC_STEP_QKV: w.matmul_flops = 2 * C * 3 * C; break;
    case RC_STEP_ATTN: w.attention_flops = 2 * C * T + 5 * s->NH * T / 2.0; break;
    case RC_STEP_ATTPROJ: w.matmul_flops = 2 * C * C; break;
    case RC_STEP_FC: w.matmul_flops = 2 * C * 4 * C; break;
    case RC_STEP_GELU: w.gelu_elements = 4 * C; break;
    }
    return w;
}

// The work of the steps `policy` recomputes.
static StepWork policy_work(const RecomputeShape *s, int policy) {
    const int steps = recompute_steps(policy);
    StepWork sum = {0, 0, 0, 0};
    for (int step = 1; step < RC_STEP_FCPROJ; step <<= 1) {
        if (!(steps & step)) continue;
        const StepWork w = step_work(s, step);
        sum.matmul_flops += w.matmul_flops;
        sum.attention_flops += w.attention_flops;
        sum.layernorm_elements += w.layernorm_elements;
        sum.gelu_elements += w.gelu_elements;
    }
    return sum;
}

// Elementwise work counted as operations per element: a LayerNorm output about 4, a GELU about 12.
double recompute_layer_flops(const RecomputeShape *s, int policy) {
    const StepWork w = policy_work(s, policy);
    return w.matmul_flops + w.attention_flops + 4 * w.layernorm_elements + 12 * w.gelu_elements;
}

double recompute_layer_seconds(const RecomputeShape *s, const RecomputeDevice *d, int policy) {
    const StepWork w = policy_work(s, policy);
    return w.matmul_flops / d->matmul_flops_per_s + w.attention_flops / d->attention_flops_per_s +
           2 * w.layernorm_elements * s->element_bytes / d->layernorm_bytes_per_s +
           2 * w.gelu_elements * s->element_bytes / d->gelu_bytes_per_s;
}

// Rates fitted to the recompute overheads measured on each device: the step time of every uniform
// level minus that of none (dev/test/recompute/test_plan.c holds the measurements and checks the
// model against them). On the H100 the matmuls ran at 630 TFLOP/s, the attention forward at 140
// (the forward kernel timed 1.38x faster in its harness afterwards, not yet in the trainer), the
// LayerNorm below the GELU's bandwidth (one warp per row). On the CPU the overheads are the time
// --profile counts in its recompute part (step-time differences were noisier than the overheads
// themselves): the GELU alone and the LayerNorms alone give their rates, attn the attention's, and
// mlp, less its GELU and LayerNorm, the matmuls' (below sgemm timed alone, about 240e9 at the fc's
// shape: in a step the operands come from memory, not cache).
const RecomputeDevice recompute_device_h100 = {"an H100 (bf16)", 630e12, 140e12, 1.6e12, 2.6e12};
const RecomputeDevice recompute_device_cpu = {"2 CPU cores (fp32)", 165e9, 19e9, 21e9, 15e9};

// The planner's candidates: every distinct canonical policy (13 of the 32 sets of the five bits).
#define POLICY_BIT_SETS (2 * RC_BLOCK)
static int planner_candidates(int candidates[POLICY_BIT_SETS]) {
    int n = 0;
    for (int bits = 0; bits < POLICY_BIT_SETS; bits++) {
        const int p = canonical(bits);
        int seen = 0;
        for (int i = 0; i < n; i++) seen |= candidates[i] == p;
        if (!seen) candidates[n++] = p;
    }
    return n;
}

// Exact for identical layers: a dynamic program over layers and memory measured in units of
// budget / UNITS (each policy's memory rounded up, so a plan it returns always fits), compared
// with every uniform plan (which the rounding could otherwise exclude at the edge).
#define UNITS 8192
int recompute_plan_budget(const RecomputeShape *s, const RecomputeDevice *d, int L, double budget_elements,
                          int *policies) {
    int candidates[POLICY_BIT_SETS], units[POLICY_BIT_SETS];
    const int num_candidates = planner_candidates(candidates);
    double mem[POLICY_BIT_SETS], cost[POLICY_BIT_SETS];
    for (int i = 0; i < num_candidates; i++) {
        mem[i] = recompute_layer_elements(s, candidates[i]);
        cost[i] = recompute_layer_seconds(s, d, candidates[i]);
        units[i] = budget_elements > 0 ? (int)ceil(mem[i] / budget_elements * UNITS) : UNITS + 1;
    }
    // best[l][u]: least time for l layers within u units; choice[l][u] the policy of layer l-1.
    double *best = (double *)malloc_check((size_t)(L + 1) * (UNITS + 1) * sizeof(double));
    int *choice = (int *)malloc_check((size_t)(L + 1) * (UNITS + 1) * sizeof(int));
    for (int u = 0; u <= UNITS; u++) best[u] = 0;
    for (int l = 1; l <= L; l++)
        for (int u = 0; u <= UNITS; u++) {
            double b = INFINITY;
            int c = -1;
            for (int i = 0; i < num_candidates; i++) {
                if (units[i] > u) continue;
                double f = best[(size_t)(l - 1) * (UNITS + 1) + u - units[i]] + cost[i];
                if (f < b) { b = f; c = i; }
            }
            best[(size_t)l * (UNITS + 1) + u] = b;
            choice[(size_t)l * (UNITS + 1) + u] = c;
        }
    double dp_cost = best[(size_t)L * (UNITS + 1) + UNITS];
    int best_uniform = -1;
    for (int i = 0; i < num_candidates; i++)
        if (L * mem[i] <= budget_elements && (best_uniform < 0 || cost[i] < cost[best_uniform])) best_uniform = i;
    int rc = 0;
    if (best_uniform >= 0 && !(L * cost[best_uniform] > dp_cost)) {
        for (int l = 0; l < L; l++) policies[l] = candidates[best_uniform];
    } else if (isfinite(dp_cost)) {
        // Walk back; the DP fills layers from the last, so the heaviest recompute lands on the
        // first layers.
        int u = UNITS;
        for (int l = L; l >= 1; l--) {
            int c = choice[(size_t)l * (UNITS + 1) + u];
            policies[l - 1] = candidates[c];
            u -= units[c];
        }
    } else {
        rc = -1;
    }
    free(best);
    free(choice);
    return rc;
}
