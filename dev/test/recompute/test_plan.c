// Unit tests of the recompute policies and the memory-budget planner (llmc/recompute.h).
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../../llmc/recompute.h"

static int failures = 0;
#define CHECK(cond, ...)                                           \
    do {                                                           \
        printf("%s ", (cond) ? "ok  " : "FAIL");                   \
        printf(__VA_ARGS__);                                       \
        printf("\n");                                              \
        if (!(cond)) failures++;                                   \
    } while (0)

static const int kUniform[] = {RC_NONE, RC_GELU, RC_NORM, RC_NORM | RC_GELU, RC_ATTN, RC_MLP, RC_BLOCK};

int main(void) {
    int p;
    char name[64], err[256];
    CHECK(recompute_parse_policy("none", &p) == 0 && p == RC_NONE, "parse none");
    CHECK(recompute_parse_policy("norm+gelu", &p) == 0 && p == (RC_NORM | RC_GELU), "parse norm+gelu");
    CHECK(recompute_parse_policy("mlp+gelu", &p) == 0 && p == RC_MLP, "mlp+gelu is canonically mlp");
    CHECK(recompute_parse_policy("block+attn", &p) == 0 && p == RC_BLOCK, "block implies everything");
    CHECK(recompute_parse_policy("gelu+", &p) != 0 && recompute_parse_policy("fast", &p) != 0 &&
          recompute_parse_policy("", &p) != 0, "bad policies are refused");
    CHECK(strcmp(recompute_policy_name(RC_ATTN | RC_GELU | RC_NORM, name, sizeof(name)), "norm+gelu+attn") == 0,
          "canonical name: %s", name);

    int pol[12];
    CHECK(recompute_parse_list("0-5:block,6-10:gelu,11:none", 12, pol, err, sizeof(err)) == 0 && pol[0] == RC_BLOCK &&
          pol[5] == RC_BLOCK && pol[6] == RC_GELU && pol[10] == RC_GELU && pol[11] == RC_NONE, "parse a layer list");
    CHECK(recompute_parse_list("0-5:block", 12, pol, err, sizeof(err)) != 0 && strstr(err, "layer 6 has no policy"),
          "a list must cover every layer: %s", err);
    CHECK(recompute_parse_list("0-6:block,6-11:gelu", 12, pol, err, sizeof(err)) != 0 && strstr(err, "given twice"),
          "overlapping ranges are refused: %s", err);
    CHECK(recompute_parse_list("0-12:gelu", 12, pol, err, sizeof(err)) != 0 && strstr(err, "outside"),
          "out-of-range layers are refused: %s", err);
    CHECK(recompute_parse_list("0-99999999999:block", 12, pol, err, sizeof(err)) != 0 && strstr(err, "not a layer"),
          "a layer number too long to be one is refused, not wrapped: %s", err);
    CHECK(recompute_parse_list("0-5:block,,6-11:gelu", 12, pol, err, sizeof(err)) != 0 && strstr(err, "empty item"),
          "an empty item is refused: %s", err);
    CHECK(recompute_parse_list("0-11:gelu,", 12, pol, err, sizeof(err)) != 0 && strstr(err, "empty item"),
          "a trailing comma is refused: %s", err);
    CHECK(recompute_parse_list("-1-11:gelu", 12, pol, err, sizeof(err)) != 0 && recompute_parse_list("+0-11:gelu", 12, pol, err, sizeof(err)) != 0,
          "signed layer numbers are refused: %s", err);

    // d12 at T=1024 on the CPU (full softmax kept, fp32) and on the GPU (log-sum-exp only, kept
    // under attn too; bf16 activations, fp32 statistics twice as wide).
    RecomputeShape cpu = {768, 12, 1024, 1024, 0, 1}, gpu = {768, 12, 1024, 0, 1, 2};
    double none = recompute_layer_elements(&cpu, RC_NONE), block = recompute_layer_elements(&cpu, RC_BLOCK);
    CHECK(none == 768 * 16 + 4 + 12 * 1024 && block == 768 && recompute_layer_elements(&cpu, RC_ATTN) == none - 768 - 12 * 1024 &&
          recompute_layer_elements(&gpu, RC_ATTN) == recompute_layer_elements(&gpu, RC_NONE) - 768,
          "elements per token: none %.0f, block %.0f; attn drops the output and the probabilities (CPU) or the output (GPU)",
          none, block);
    CHECK(recompute_layer_elements(&gpu, RC_NONE) == 768 * 16 + 2 * (2 + 2 + 12),
          "GPU elements per token of a layer kept whole: %d bf16, fp32 ln1/ln2 mean+rstd and 12 log-sum-exps at width 2: %.0f",
          768 * 16, recompute_layer_elements(&gpu, RC_NONE));
    for (int i = 1; i < (int)(sizeof(kUniform) / sizeof(kUniform[0])); i++) {
        int q = kUniform[i];
        recompute_policy_name(q, name, sizeof(name));
        CHECK(recompute_layer_elements(&gpu, q) < recompute_layer_elements(&gpu, RC_NONE) &&
              recompute_layer_flops(&gpu, q) > 0, "%s keeps less than none and recomputes something", name);
    }
    double block_flops = recompute_layer_flops(&gpu, RC_BLOCK), fwd = 24.0 * 768 * 768 + 2.0 * 768 * 1024;
    CHECK(block_flops < fwd * 1.05, "block recomputes at most one layer forward: %.3g vs %.3g FLOPs/token", block_flops, fwd);

    // The planner: for budgets between block's and none's memory, the plan fits and is no slower
    // than any uniform level that fits.
    const int L = 12;
    int plans = 0, bad = 0;
    for (int k = 0; k <= 40; k++) {
        double lo = L * recompute_layer_elements(&gpu, RC_BLOCK), hi = L * recompute_layer_elements(&gpu, RC_NONE);
        double budget = lo + (hi - lo) * k / 40.0;
        int plan[L];
        if (recompute_plan_budget(&gpu, L, budget, plan) != 0) { bad++; continue; }
        double mem = 0, flops = 0;
        for (int l = 0; l < L; l++) {
            mem += recompute_layer_elements(&gpu, plan[l]);
            flops += recompute_layer_flops(&gpu, plan[l]);
        }
        if (mem > budget * (1 + 1e-12)) bad++;
        for (int i = 0; i < (int)(sizeof(kUniform) / sizeof(kUniform[0])); i++) {
            int q = kUniform[i];
            if (L * recompute_layer_elements(&gpu, q) <= budget && L * recompute_layer_flops(&gpu, q) < flops * (1 - 1e-12)) bad++;
        }
        plans++;
    }
    CHECK(bad == 0 && plans == 41, "planner: %d budgets from all-block to all-none: every plan fits and beats or ties "
          "every uniform level that fits (%d violations)", plans, bad);
    int plan[L];
    CHECK(recompute_plan_budget(&gpu, L, L * recompute_layer_elements(&gpu, RC_BLOCK) * 0.99, plan) != 0,
          "planner: a budget below all-block is refused");
    CHECK(recompute_plan_budget(&gpu, L, 1e30, plan) == 0 && plan[0] == RC_NONE && plan[L - 1] == RC_NONE,
          "planner: an ample budget recomputes nothing");
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
