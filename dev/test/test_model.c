// Checks the CPU model (train_gpt.c, included below) against references:
//   test_model case PREFIX   the PyTorch reference (dev/torch/gpt2_reference.py case --out PREFIX)
//                            on the same checkpoint and batch: logits, loss, every gradient, and
//                            the losses and weights of the reference's optimizer steps
//   test_model fd SEED       central finite differences of the loss on a tiny random model
//   test_model gelu SEED     the GELU and its derivative against their fp64 formulas
//   test_model init SEED     GPT-2's initialization: constants where they are, normals of the right sd
//   test_model recompute SEED  every recompute policy bit-identical to keeping everything
//   test_model outlier       the z-score of -sl/-sg (llmc/outlier.h) on values with a known one
//   test_model fp8eval SEED  an evaluation pass leaves the FP8 amax history as it was
//   test_model sampler SEED  rng_sample_softmax draws each index as often as its probability
//   test_model duration      the progress line's ETA: seconds, minutes, hours, and "?" for no estimate
//   test_model sizes         d12-d48 have GPT-2's shapes and parameter counts; V padded to a multiple of 128
//   test_model twin SEED     the low-precision block linears equal matmul_lowp.cuh's recipe bit for bit
// Exits 1 when any comparison is out of tolerance; prints every comparison.
#define TESTING
#include <stdarg.h>

#include "../../train_gpt.c"

#include "../../llmc/logger.h"
#include "check.h"

static void *read_exact(FILE *f, size_t bytes, const char *path) {
    void *p = malloc_check(bytes);
    fread_check(p, 1, bytes, f, path);
    return p;
}

// max |a - b| / max |b| over one tensor instance.
static double rel_max_diff(const float *a, const float *b, size_t n) {
    double md = 0.0, mb = 0.0;
    for (size_t i = 0; i < n; i++) {
        md = fmax(md, fabs((double)a[i] - b[i]));
        mb = fmax(mb, fabs((double)b[i]));
    }
    return mb > 0 ? md / mb : md;
}

static void slot_label(const GPT2Config *cfg, int s, char *buf, size_t n) {
    const ParamSlot slot = gpt2_slot(cfg, s);
    param_slot_label(&slot, "", buf, n);
}

static int run_case(const char *prefix) {
    char ckpt[4096], casep[4096];
    snprintf(ckpt, sizeof(ckpt), "%s.bin", prefix);
    snprintf(casep, sizeof(casep), "%s.case", prefix);
    GPT2Config cfg;
    checkpoint_read_config(ckpt, &cfg);
    FILE *f = fopen_check(casep, "rb");
    int32_t h[256];
    float hpf[16];
    fread_check(h, sizeof(int32_t), 256, f, casep);
    fread_check(hpf, sizeof(float), 16, f, casep);
    if (h[0] != 20241123 || h[1] != 1) die("'%s' is not a reference case file", casep);
    const int B = h[2], T = h[3], V = h[4], Vp = h[5], nsteps = h[6], update_clip = h[7];
    const size_t P = (size_t)h[8];
    if (V != cfg.vocab_size || Vp != cfg.padded_vocab_size || P != gpt2_num_params(&cfg))
        die("'%s' does not match the checkpoint '%s'", casep, ckpt);
    int *inputs = (int *)read_exact(f, (size_t)B * T * sizeof(int), casep);
    int *targets = (int *)read_exact(f, (size_t)B * T * sizeof(int), casep);
    float *ref_logits = (float *)read_exact(f, (size_t)B * T * Vp * sizeof(float), casep);
    float ref_loss;
    fread_check(&ref_loss, sizeof(float), 1, f, casep);
    float *file_grads = (float *)read_exact(f, P * sizeof(float), casep);
    float *ref_losses = (float *)read_exact(f, (size_t)nsteps * sizeof(float), casep);
    float *file_after = (float *)read_exact(f, P * sizeof(float), casep);
    fclose(f);
    float *ref_grads = (float *)malloc_check(P * sizeof(float));
    float *ref_after = (float *)malloc_check(P * sizeof(float));
    params_file_order_to_memory(&cfg, file_grads, ref_grads);
    params_file_order_to_memory(&cfg, file_after, ref_after);
    printf("case %s: L=%d C=%d NH=%d maxT=%d V=%d Vp=%d B=%d T=%d, %d steps, update clipping %s\n", prefix,
           cfg.num_layers, cfg.channels, cfg.num_heads, cfg.max_seq_len, V, Vp, B, T, nsteps, update_clip ? "on" : "off");

    GPT2 m;
    gpt2_alloc(&m, &cfg, B, T);
    checkpoint_read_params(ckpt, &cfg, m.params);
    gpt2_forward(&m, inputs, targets, B, T, 0, 1.0f);

    // fp32 against fp32 with different summation orders: 1e-4 absolute on logits of size ~1,
    // 1e-5 relative on the loss (the tolerances).
    double max_logit_diff = 0.0;
    for (int i = 0; i < B * T; i++)
        for (int j = 0; j < V; j++)
            max_logit_diff = fmax(max_logit_diff, fabs((double)m.logits[(size_t)i * Vp + j] - ref_logits[(size_t)i * Vp + j]));
    check(max_logit_diff < 1e-4, "logits: max abs diff %.3g (< 1e-4)", max_logit_diff);
    double loss_rel = fabs((double)m.mean_loss - ref_loss) / fabs((double)ref_loss);
    check(loss_rel < 1e-5, "loss: %.7f vs %.7f, rel diff %.3g (< 1e-5)", m.mean_loss, ref_loss, loss_rel);

    gpt2_forward(&m, inputs, targets, B, T, 1, 1.0f);
    gpt2_backward(&m, B, T);
    double worst = 0.0;
    char label[64], worst_label[64] = "";
    for (int s = 0; s < gpt2_num_slots(&cfg); s++) {
        ParamSlot slot = gpt2_slot(&cfg, s);
        double d = rel_max_diff(m.grads + slot.offset, ref_grads + slot.offset, slot.numel);
        slot_label(&cfg, s, label, sizeof(label));
        if (d >= 1e-4) check(0, "grad %s: max diff / max |grad| = %.3g (< 1e-4)", label, d);
        if (d > worst) { worst = d; snprintf(worst_label, sizeof(worst_label), "%s", label); }
    }
    check(worst < 1e-4, "gradients of all %d tensors: worst max diff / max |grad| %.3g at %s (< 1e-4)",
          gpt2_num_slots(&cfg), worst, worst_label);

    // The reference's optimizer steps on the same batch.
    AdamWConfig hp = {hpf[1], hpf[2], hpf[3], hpf[4], hpf[5], update_clip ? hpf[6] : 0.0f};
    memset(m.m, 0, P * sizeof(float));
    memset(m.v, 0, P * sizeof(float));
    double worst_loss = 0.0;
    for (int step = 1; step <= nsteps; step++) {
        memset(m.grads, 0, P * sizeof(float));
        gpt2_forward(&m, inputs, targets, B, T, 1, 1.0f);
        double rel = fabs((double)m.mean_loss - ref_losses[step - 1]) / fabs((double)ref_losses[step - 1]);
        printf("     step %2d: loss %.7f, reference %.7f, rel diff %.3g\n", step, m.mean_loss, ref_losses[step - 1], rel);
        worst_loss = fmax(worst_loss, rel);
        gpt2_backward(&m, B, T);
        double norm = gpt2_grad_norm(&m);
        adamw_step(&cfg, &hp, m.params, m.grads, m.m, m.v, 0, P, step, hpf[0], grad_clip_scale(hp.grad_clip, norm), NULL, NULL);
    }
    check(worst_loss < 1e-4, "losses of %d optimizer steps: worst rel diff %.3g (< 1e-4)", nsteps, worst_loss);
    // Weights after the steps, each tensor's relative L2 difference. One part is left out: the
    // key bias (the middle third of qkvb). Its gradient is zero in exact arithmetic (adding q.b_k
    // to every score of a row leaves the softmax unchanged), so both sides hold rounding noise
    // there, and Adam, which normalizes each update to about lr, turns that noise into steps of
    // lr in random directions. The same happens, more weakly, to every element whose gradient is
    // small in some step, so the weights carry amplified rounding noise: this trainer against the
    // same reference at 1, 2, 3 and 4 OpenMP threads (whose sums differ in order) measured worst
    // per-tensor differences of 1.0e-6..5.9e-6 (lr 6e-4) and 2.9e-6..1.05e-5 (lr 3e-3, c64_full_t).
    // Tolerance 5e-5: five times that spread. Still caught (mutations of llmc/optimizer.c, run by
    // hand): the first moment's bias correction one step off gives 5.8e-2; weight decay 10% too
    // strong gives 1.0e-4 (at wpe, lr 6e-4), which the losses alone (3.8e-5) would miss.
    double worst_w = 0.0;
    char worst_w_label[64] = "";
    for (int s = 0; s < gpt2_num_slots(&cfg); s++) {
        ParamSlot slot = gpt2_slot(&cfg, s);
        double dd = 0.0, rr = 0.0;
        for (size_t i = 0; i < slot.numel; i++) {
            if (slot.kind == PT_QKVB && i >= (size_t)cfg.channels && i < 2 * (size_t)cfg.channels) continue;
            double d = (double)m.params[slot.offset + i] - ref_after[slot.offset + i];
            dd += d * d;
            rr += (double)ref_after[slot.offset + i] * ref_after[slot.offset + i];
        }
        if (sqrt(dd / rr) > worst_w) {
            worst_w = sqrt(dd / rr);
            slot_label(&cfg, s, worst_w_label, sizeof(worst_w_label));
        }
    }
    check(worst_w < 5e-5, "weights after %d steps: worst per-tensor relative L2 diff %.3g at %s (< 5e-5)", nsteps, worst_w,
          worst_w_label);
    gpt2_free(&m);
    free(inputs); free(targets); free(ref_logits); free(file_grads); free(ref_losses); free(file_after);
    free(ref_grads); free(ref_after);
    return g_failures;
}

// Central differences (f(p+h) - f(p-h)) / 2h of the mean loss on a tiny model whose LayerNorm
// weights and biases are random too, at a few coordinates of every tensor instance. The loss is
// summed in double; with fp32 activations the difference quotient carries about
// 1e-7 * loss / h of rounding noise, so a coordinate passes when
// |fd - grad| <= 2e-2 |grad| + 2e-4 (h = 1e-2 keeps the truncation error, O(h^2), below that).
// The output head runs in chunks of 4 of the 14 rows (the last one short), so the head's
// backward in the forward pass and its accumulation over chunks are what is checked.
static int run_fd(uint64_t seed) {
    GPT2Config cfg = {.max_seq_len = 8, .vocab_size = 37, .padded_vocab_size = 128, .num_layers = 2, .num_heads = 2, .channels = 8};
    const int B = 2, T = 7;
    const ModelOptions opt = {NULL, MATMUL_FP32, 0, 0, 4};
    GPT2 m;
    gpt2_alloc_with(&m, &cfg, B, T, &opt);
    gpt2_init_params(&cfg, m.params, seed);
    for (size_t i = 0; i < m.num_params; i++) m.params[i] += 0.1f * (float)rng_normal(seed, 99, i);
    int inputs[B * T], targets[B * T];
    for (int i = 0; i < B * T; i++) {
        inputs[i] = (int)(rng_uniform(seed, 7, i) * cfg.vocab_size);
        targets[i] = (int)(rng_uniform(seed, 8, i) * cfg.vocab_size);
    }
    gpt2_forward(&m, inputs, targets, B, T, 1, 1.0f);
    gpt2_backward(&m, B, T);
    const float h = 1e-2f;
    int checked = 0, bad = 0;
    double worst = 0.0;
    for (int s = 0; s < gpt2_num_slots(&cfg); s++) {
        ParamSlot slot = gpt2_slot(&cfg, s);
        for (int k = 0; k < 3; k++) {
            size_t i = slot.offset + (size_t)(rng_uniform(seed, 1000 + s, k) * slot.numel);
            if (slot.kind == PT_WTE && (i - slot.offset) / cfg.channels >= (size_t)cfg.vocab_size) continue;  // padded row
            float saved = m.params[i];
            m.params[i] = saved + h;
            gpt2_forward(&m, inputs, targets, B, T, 0, 1.0f);
            double up = m.mean_loss;
            m.params[i] = saved - h;
            gpt2_forward(&m, inputs, targets, B, T, 0, 1.0f);
            double down = m.mean_loss;
            m.params[i] = saved;
            double fd = (up - down) / (2.0 * h), g = m.grads[i];
            double err = fabs(fd - g), tol = 2e-2 * fabs(g) + 2e-4;
            worst = fmax(worst, err / tol);
            checked++;
            if (err > tol) {
                char label[64];
                slot_label(&cfg, s, label, sizeof(label));
                check(0, "finite difference %s element %zu: fd %.6g vs grad %.6g", label, i - slot.offset, fd, g);
                bad++;
            }
        }
    }
    check(bad == 0 && checked > 50, "finite differences: %d coordinates checked, worst error/tolerance %.3f", checked, worst);
    gpt2_free(&m);
    return g_failures;
}

static double error_over_tolerance(double error, double tolerance) {
    return error == 0.0 ? 0.0 : fabs(error) / tolerance;  // a nonzero error with no tolerance: inf
}

// The GELU and its derivative against the same formulas in fp64 (with the fp32 constants), where
// s = sigmoid(2u) = 1 / (1 + e^(-2u)) has no cancellation at either end: on a dense grid over
// [-20, 20] (every 1e-4), seeded random points there, and very small and very large |x|. The
// tolerance adds three terms:
//   - 4 fp32 ulps (2^-21 relative) of the reference;
//   - fp32's rounding of u itself (2^-22 of the sum of its terms' magnitudes), which any fp32 GELU
//     carries, through ds/du = 2 s (1 - s): near x = -9 it is most of the error;
//   - what setting e^(-2|u|) < 1.7e-38 to 0 (|u| >= 43.5) may cost: 2e-38 |x| in the GELU,
//     2e-38 (1 + 2 |x| u'(x)) in its derivative.
// The derivative crosses zero near x = -0.75, so its error is measured against the magnitudes of
// its two terms, s and 2 x s (1 - s) u'(x). NaN gives NaN and +inf +inf (gelu'(inf) is inf * 0 =
// NaN, as it was with tanhf).
static int run_gelu(uint64_t seed) {
    const int grid = 400001, random = 100000;
    const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-8f, -1e-8f, 30.0f, -30.0f, 100.0f, -100.0f, 1e4f, -1e4f, 1e12f, -1e12f};
    const int nspecial = (int)(sizeof(special) / sizeof(special[0])), n = grid + random + nspecial;
    float *x = (float *)malloc_check(n * sizeof(float)), *y = (float *)malloc_check(n * sizeof(float)),
          *d = (float *)malloc_check(n * sizeof(float));
    for (int i = 0; i < grid; i++) x[i] = -20.0f + 1e-4f * (float)i;
    for (int i = 0; i < random; i++) x[grid + i] = (float)(40.0 * rng_uniform(seed, 1, i) - 20.0);
    for (int i = 0; i < nspecial; i++) x[grid + random + i] = special[i];
    for (int i = 0; i < n; i++) d[i] = 1.0f;
    gelu_forward(y, x, n);
    gelu_backward_inplace(d, x, n);
    // The formula's constants written out, not train_gpt.c's macros: a wrong digit there must fail.
    const double rel = ldexp(1.0, -21), k = (double)(float)sqrt(2.0 / M_PI), c = (double)0.044715f;
    double worst_y = 0.0, worst_d = 0.0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const double xd = x[i], u = k * (xd + c * xd * xd * xd);
        const double s = 1.0 / (1.0 + exp(-2.0 * u)), one_minus_s = 1.0 / (1.0 + exp(2.0 * u));
        const double du = k * (1.0 + 3.0 * c * xd * xd), ref_y = xd * s, slope = 2.0 * xd * s * one_minus_s * du;
        const double ds = 2.0 * s * one_minus_s * ldexp(k * (fabs(xd) + c * fabs(xd) * fabs(xd) * fabs(xd)), -22);
        const double ey = error_over_tolerance(y[i] - ref_y, rel * fabs(ref_y) + fabs(xd) * ds + 2e-38 * fabs(xd));
        const double ed = error_over_tolerance(d[i] - (s + slope), rel * (fabs(s) + fabs(slope)) +
                                               fabs(1.0 + 2.0 * xd * (1.0 - 2.0 * s) * du) * ds +
                                               2e-38 * (1.0 + 2.0 * fabs(xd) * du));
        worst_y = fmax(worst_y, ey);
        worst_d = fmax(worst_d, ed);
        if (!(ey <= 1.0 && ed <= 1.0) && bad++ < 5)
            check(0, "gelu(%.9g) = %.9g, gelu' %.9g; fp64: %.9g, %.9g", xd, y[i], d[i], ref_y, s + slope);
    }
    check(bad == 0, "gelu and gelu' at %d points against fp64 (4 ulp plus fp32's rounding of u): worst error/tolerance %.3f and %.3f", n, worst_y, worst_d);
    const float odd[2] = {NAN, INFINITY};
    float oy[2], od[2] = {1.0f, 1.0f};
    gelu_forward(oy, odd, 2);
    gelu_backward_inplace(od, odd, 2);
    check(isnan(oy[0]) && isnan(od[0]) && oy[1] == INFINITY, "gelu(NaN) = %g, gelu'(NaN) = %g, gelu(inf) = %g", oy[0],
          od[0], oy[1]);
    free(x);
    free(y);
    free(d);
    return g_failures;
}

// Every recompute policy, and a mixed per-layer list, against keeping everything: the gradients
// of one step and the losses and weights of 5 optimizer steps must be bit-identical; and the
// activation floats the trainer allocates must equal the cost model's prediction. The output
// head runs in chunks of 7 of the 48 rows, as with recomputation in the trainer.
static int run_recompute(uint64_t seed) {
    GPT2Config cfg = {.max_seq_len = 16, .vocab_size = 300, .padded_vocab_size = 384, .num_layers = 4, .num_heads = 4, .channels = 64};
    const int B = 3, T = 16, L = cfg.num_layers, steps = 5;
    // All 13 distinct policies (mlp implies gelu, block everything), and a mixed list.
    const char *const levels[] = {"none", "gelu", "norm", "attn", "mlp", "block", "norm+gelu", "attn+gelu", "attn+norm",
                                  "attn+norm+gelu", "mlp+norm", "attn+mlp", "attn+mlp+norm", "0:block,1:attn+gelu,2:mlp,3:norm"};
    const int nlevels = (int)(sizeof(levels) / sizeof(levels[0]));
    int inputs[B * T], targets[B * T];
    for (int i = 0; i < B * T; i++) {
        inputs[i] = (int)(rng_uniform(seed, 7, i) * cfg.vocab_size);
        targets[i] = (int)(rng_uniform(seed, 8, i) * cfg.vocab_size);
    }
    AdamWConfig hp = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1.0f};
    const size_t P = gpt2_num_params(&cfg);
    float *ref_grads = (float *)malloc_check(P * sizeof(float)), *ref_params = (float *)malloc_check(P * sizeof(float));
    float ref_losses[5];
    const RecomputeShape shape = cpu_recompute_shape(&cfg, T);
    for (int k = 0; k < nlevels; k++) {
        int policies[4], p;
        char err[256];
        if (strchr(levels[k], ':')) {
            if (recompute_parse_list(levels[k], L, policies, err, sizeof(err)) != 0) die("%s", err);
        } else {
            if (recompute_parse_policy(levels[k], &p) != 0) die("bad policy %s", levels[k]);
            for (int l = 0; l < L; l++) policies[l] = p;
        }
        ModelOptions opt = {policies, MATMUL_FP32, 0, 0, 7};
        GPT2 m;
        gpt2_alloc_with(&m, &cfg, B, T, &opt);
        gpt2_init_params(&cfg, m.params, seed);
        for (size_t i = 0; i < P; i++) m.params[i] += 0.1f * (float)rng_normal(seed, 99, i);
        double predicted = 0;
        for (int l = 0; l < L; l++) predicted += recompute_layer_elements(&shape, policies[l]);
        // Beside the blocks, per token: the embeddings' output and d lnf (C each), lnf's mean and
        // rstd. Written out here, not taken from train_gpt.c, so that the allocation is checked.
        predicted = (predicted + 2.0 * cfg.channels + 2) * B * T;
        float losses[5];
        int same_grads = 1;
        for (int step = 1; step <= steps; step++) {
            memset(m.grads, 0, P * sizeof(float));
            gpt2_forward(&m, inputs, targets, B, T, 1, 1.0f);
            losses[step - 1] = m.mean_loss;
            gpt2_backward(&m, B, T);
            if (step == 1 && k == 0) memcpy(ref_grads, m.grads, P * sizeof(float));
            if (step == 1 && k > 0) same_grads = memcmp(ref_grads, m.grads, P * sizeof(float)) == 0;
            double norm = gpt2_grad_norm(&m);
            adamw_step(&cfg, &hp, m.params, m.grads, m.m, m.v, 0, P, step, 1e-3f, grad_clip_scale(hp.grad_clip, norm), NULL, NULL);
        }
        if (k == 0) {
            memcpy(ref_losses, losses, sizeof(losses));
            memcpy(ref_params, m.params, P * sizeof(float));
        }
        const int same_losses = memcmp(ref_losses, losses, sizeof(losses)) == 0;
        const int same_params = memcmp(ref_params, m.params, P * sizeof(float)) == 0;
        check(same_grads && same_losses && same_params && (double)m.acts_floats == predicted,
              "recompute %-32s gradients, %d losses and weights bit-identical to none: %s; activations %zu floats "
              "(predicted %.0f), scratch %zu", levels[k], steps, same_grads && same_losses && same_params ? "yes" : "NO",
              m.acts_floats, predicted, m.scratch_floats);
        gpt2_free(&m);
    }
    free(ref_grads);
    free(ref_params);
    return g_failures;
}

// Activation memory of every uniform recompute level for a model description (d12, d48, ...) at
// B x T: the floats the trainer allocates (counted; the buffers are allocated, not touched)
// beside the cost model's prediction. A benchmark aid (dev/bench/bench_recompute.sh), not a test.
static int run_memory(const char *desc, int B, int T) {
    GPT2Config cfg;
    if (gpt2_config_from_string(desc, &cfg) != 0) die("'%s' is not a model description", desc);
    const char *const levels[] = {"none", "gelu", "norm", "norm+gelu", "attn", "attn+gelu", "mlp", "attn+mlp", "block"};
    const RecomputeShape shape = cpu_recompute_shape(&cfg, T);
    const double mib = sizeof(float) / (double)(1 << 20), tokens = (double)B * T;
    printf("%s B=%d T=%d: activation memory per level (CPU trainer, fp32)\n", desc, B, T);
    printf("%-12s %12s %12s %10s %14s\n", "level", "counted MiB", "predicted", "vs none", "extra FLOP/tok");
    double none = 0;
    for (size_t k = 0; k < sizeof(levels) / sizeof(levels[0]); k++) {
        int p, *policies = (int *)malloc_check((size_t)cfg.num_layers * sizeof(int));
        if (recompute_parse_policy(levels[k], &p) != 0) die("bad level");
        for (int l = 0; l < cfg.num_layers; l++) policies[l] = p;
        ModelOptions opt = {policies, MATMUL_FP32, 0, 0, HEAD_CHUNK_ROWS};  // the trainers' default
        GPT2 m;
        gpt2_alloc_activations(&m, &cfg, B, T, &opt);
        const double predicted =
            (cfg.num_layers * recompute_layer_elements(&shape, p) + cpu_fixed_activation_floats(&cfg)) * tokens;
        if (k == 0) none = (double)m.acts_floats;
        printf("%-12s %12.1f %12.1f %9.2fx %14.3g\n", levels[k], m.acts_floats * mib, predicted * mib,
               none / (double)m.acts_floats, cfg.num_layers * recompute_layer_flops(&shape, p));
        gpt2_free(&m);
        free(policies);
    }
    return 0;
}

// The spike tests of t_60 only see a jump of many standard deviations. Here: no decision before
// OUTLIER_MIN_COUNT values (15 give 0, 16 do not), and the standard deviation of the window itself
// (divided by n, not n - 1): eight 1s and eight 3s have mean 2 and deviation 1, so 5 scores 3.
// GPT-2's initialization (llmc/model.c) on L4 C128 NH4: LayerNorm weights 1 and biases 0, every
// bias 0, and every other tensor instance drawn from N(0, sd) with sd = 0.02, or 0.02 / sqrt(2L)
// for the two residual projections. Each drawn tensor's mean, standard deviation and share within
// one sd are checked against the normal's with room for sampling (n >= 8192 draws: the sd's
// relative standard error is 1 / sqrt(2n) <= 0.8%, the share's sqrt(0.68 * 0.32 / n) <= 0.5%), and
// each layer's instance is uncorrelated with layer 0's (within 5 / sqrt(n)).
// The CPU twin of the GPU's low-precision block linears (linear_forward, linear_backward) against
// the recipe in llmc/matmul_lowp.cuh's table, composed here from llmc/quant.h's quantizers, bit
// for bit: out = Q(inp) Q(W)^T + b, dinp = Q(dout) Q(W), dW = bf16(dout)^T bf16(inp) (FP8 weight
// gradients: E5M2(dout)^T E4M3(inp)), db = the column sums of dout itself. FP8: E4M3 for inp and
// W, E5M2 for dout, power-of-two scales from each tensor's amax; with delayed scaling from the
// max of the earlier micro-steps' amaxes (one of 8 x inp, W and dout recorded first, so the
// scales are 8 times smaller), the backward pass reusing the forward's scales. int8: inp and dout by
// row, W by tensor. The fc layer of a 1-layer model (N 32, C 32 -> 128).
static int run_twin(uint64_t seed) {
    GPT2Config cfg = {.max_seq_len = 16, .vocab_size = 300, .padded_vocab_size = 384, .num_layers = 1, .num_heads = 2, .channels = 32};
    enum { B = 2, T = 16, N = B * T, IC = 32, OC = 128 };
    static const struct { matmul_precision precision; int fp8_wgrad, history; const char *name; } kModes[] = {
        {MATMUL_BF16, 0, 0, "bf16"}, {MATMUL_FP8, 0, 0, "fp8"}, {MATMUL_FP8, 1, 0, "fp8, FP8 weight gradients"},
        {MATMUL_FP8, 0, 2, "fp8, delayed scaling"}, {MATMUL_INT8, 0, 0, "int8"},
    };
    static float inp[N * IC], w[OC * IC], bias[OC], dout[N * OC], big_inp[N * IC], big_w[OC * IC], big_dout[N * OC];
    static float out[N * OC], dinp[N * IC], dw[OC * IC], db[OC];
    static float q_inp[N * IC], q_w[OC * IC], q_dout[N * OC], g_dout[N * OC], g_inp[N * IC];
    static float r_out[N * OC], r_dinp[N * IC], r_dw[OC * IC], r_db[OC];
    static int8_t codes[N * OC];
    static float row_scales[N];
    for (int i = 0; i < N * IC; i++) inp[i] = (float)rng_normal(seed, 1, i), big_inp[i] = 8 * inp[i];
    for (int i = 0; i < OC * IC; i++) w[i] = 0.05f * (float)rng_normal(seed, 2, i), big_w[i] = 8 * w[i];
    for (int i = 0; i < OC; i++) bias[i] = 0.1f * (float)rng_normal(seed, 3, i);
    for (int i = 0; i < N * OC; i++) dout[i] = 1e-3f * (float)rng_normal(seed, 4, i), big_dout[i] = 8 * dout[i];
    for (size_t k = 0; k < sizeof(kModes) / sizeof(kModes[0]); k++) {
        const matmul_precision prec = kModes[k].precision;
        ModelOptions opt = {NULL, prec, kModes[k].fp8_wgrad, kModes[k].history, 0};
        GPT2 m;
        gpt2_alloc_with(&m, &cfg, B, T, &opt);
        m.phase = QUANT_PASS_TRAIN;
        if (kModes[k].history) {  // a micro-step of 8 x the tensors, recorded in the history
            linear_forward(&m, 0, LINEAR_FC, out, big_inp, big_w, bias, N, IC, OC);
            linear_backward(&m, 0, LINEAR_FC, dinp, dw, db, big_dout, big_inp, big_w, N, IC, OC);
            amax_history_step_done(&m.amax);
        }
        memset(dw, 0, sizeof(dw));
        memset(db, 0, sizeof(db));
        linear_forward(&m, 0, LINEAR_FC, out, inp, w, bias, N, IC, OC);
        linear_backward(&m, 0, LINEAR_FC, dinp, dw, db, dout, inp, w, N, IC, OC);
        gpt2_free(&m);

        // The recipe.
        const float history = kModes[k].history ? 8.0f : 1.0f;  // the amax the scales come from
        if (prec == MATMUL_BF16) {
            for (int i = 0; i < N * IC; i++) q_inp[i] = bf16_to_float(bf16_from_float(inp[i]));
            for (int i = 0; i < OC * IC; i++) q_w[i] = bf16_to_float(bf16_from_float(w[i]));
            for (int i = 0; i < N * OC; i++) q_dout[i] = bf16_to_float(bf16_from_float(dout[i]));
        } else if (prec == MATMUL_FP8) {
            const float s_inp = quant_scale(history * quant_amax(inp, N * IC), FP8_E4M3_MAX, QUANT_SCALE_POW2);
            const float s_w = quant_scale(history * quant_amax(w, OC * IC), FP8_E4M3_MAX, QUANT_SCALE_POW2);
            const float s_dout = quant_scale(history * quant_amax(dout, N * OC), FP8_E5M2_MAX, QUANT_SCALE_POW2);
            fp8_fake_quantize(q_inp, inp, N * IC, s_inp, FP8_E4M3);
            fp8_fake_quantize(q_w, w, OC * IC, s_w, FP8_E4M3);
            fp8_fake_quantize(q_dout, dout, N * OC, s_dout, FP8_E5M2);
        } else {  // int8
            int8_quantize_rows(codes, row_scales, inp, N, IC, QUANT_SCALE_POW2);
            int8_dequantize_rows(q_inp, codes, row_scales, N, IC);
            int8_quantize_rows(codes, row_scales, dout, N, OC, QUANT_SCALE_POW2);
            int8_dequantize_rows(q_dout, codes, row_scales, N, OC);
            const float s_w = int8_quantize_tensor(codes, w, OC * IC, QUANT_SCALE_POW2);
            for (int i = 0; i < OC * IC; i++) q_w[i] = (float)codes[i] / s_w;  // exact: s_w is a power of two
        }
        for (int i = 0; i < N * OC; i++)
            g_dout[i] = kModes[k].fp8_wgrad ? q_dout[i] : bf16_to_float(bf16_from_float(dout[i]));
        for (int i = 0; i < N * IC; i++) g_inp[i] = kModes[k].fp8_wgrad ? q_inp[i] : bf16_to_float(bf16_from_float(inp[i]));
        memset(r_dw, 0, sizeof(r_dw));
        memset(r_db, 0, sizeof(r_db));
        matmul_forward(r_out, q_inp, q_w, bias, N, IC, OC);
        matmul_backward_input(r_dinp, q_dout, q_w, N, IC, OC);
        matmul_backward_weight(r_dw, NULL, g_dout, g_inp, N, IC, OC);
        matmul_backward_weight(NULL, r_db, dout, NULL, N, IC, OC);
        const int same[4] = {!memcmp(out, r_out, sizeof(out)), !memcmp(dinp, r_dinp, sizeof(dinp)),
                             !memcmp(dw, r_dw, sizeof(dw)), !memcmp(db, r_db, sizeof(db))};
        check(same[0] && same[1] && same[2] && same[3], "CPU twin, %-26s out %s, dinp %s, dW %s, db %s: the recipe's bits",
              kModes[k].name, same[0] ? "=" : "DIFFERS", same[1] ? "=" : "DIFFERS", same[2] ? "=" : "DIFFERS",
              same[3] ? "=" : "DIFFERS");
    }
    return g_failures;
}

// The model descriptions of GPT-2's four published sizes give its shapes, and with the unpadded
// vocabulary its parameter counts (124M, 355M, 774M, 1.5B as OpenAI's checkpoints hold them);
// other depths take 64-channel heads, one per layer. The vocabulary is padded to 50304, a
// multiple of 128, as in llm.c's checkpoints.
static int run_sizes(void) {
    static const struct { const char *desc; int L, C, NH; size_t params; } kSizes[] = {
        {"d12", 12, 768, 12, 124439808}, {"d24", 24, 1024, 16, 354823168},
        {"d36", 36, 1280, 20, 774030080}, {"d48", 48, 1600, 25, 1557611200}, {"d6", 6, 384, 6, 0},
    };
    for (size_t i = 0; i < sizeof(kSizes) / sizeof(kSizes[0]); i++) {
        GPT2Config cfg;
        const int parsed = gpt2_config_from_string(kSizes[i].desc, &cfg) == 0;
        const int shape = parsed && cfg.num_layers == kSizes[i].L && cfg.channels == kSizes[i].C &&
                          cfg.num_heads == kSizes[i].NH && cfg.vocab_size == 50257 && cfg.max_seq_len == 1024 &&
                          cfg.padded_vocab_size == 50304;
        cfg.padded_vocab_size = cfg.vocab_size;
        const size_t params = parsed ? gpt2_num_params(&cfg) : 0;
        check(shape && (kSizes[i].params == 0 || params == kSizes[i].params),
              "%s: L %d C %d NH %d, %zu parameters with V = 50257 (want L %d C %d NH %d%s), V padded to 50304",
              kSizes[i].desc, cfg.num_layers, cfg.channels, cfg.num_heads, params, kSizes[i].L, kSizes[i].C, kSizes[i].NH,
              kSizes[i].params ? ", GPT-2's count" : "");
    }
    // DESIGN.md: the vocabulary padded to a multiple of 128 (50257 -> 50304 is also a multiple of 64).
    static const int kPad[][2] = {{1, 128}, {64, 128}, {128, 128}, {129, 256}, {300, 384}, {50257, 50304}};
    for (size_t i = 0; i < sizeof(kPad) / sizeof(kPad[0]); i++)
        check(gpt2_pad_vocab(kPad[i][0]) == kPad[i][1], "V %d padded to %d (want %d)", kPad[i][0],
              gpt2_pad_vocab(kPad[i][0]), kPad[i][1]);
    return g_failures;
}

static int run_init(uint64_t seed) {
    GPT2Config cfg = {.max_seq_len = 64, .vocab_size = 1000, .padded_vocab_size = 1024, .num_layers = 4, .num_heads = 4, .channels = 128};
    float *params = (float *)malloc_check(gpt2_num_params(&cfg) * sizeof(float));
    gpt2_init_params(&cfg, params, seed);
    int bad = 0, drawn = 0;
    const float *first_of_kind[NUM_PARAM_TENSORS] = {NULL};  // the layer-0 instance, for independence
    for (int i = 0; i < gpt2_num_slots(&cfg); i++) {
        const ParamSlot slot = gpt2_slot(&cfg, i);
        const float *p = params + slot.offset;
        const int k = slot.kind;
        char label[64];
        param_slot_label(&slot, "", label, sizeof(label));
        if (k == PT_LN1W || k == PT_LN2W || k == PT_LNFW || k == PT_LN1B || k == PT_LN2B || k == PT_LNFB || k == PT_QKVB ||
            k == PT_ATTPROJB || k == PT_FCB || k == PT_FCPROJB) {
            const float want = k == PT_LN1W || k == PT_LN2W || k == PT_LNFW ? 1.0f : 0.0f;
            size_t off = 0;
            for (size_t j = 0; j < slot.numel; j++) off += p[j] != want;
            if (off) printf("FAIL %s: %zu of %zu values are not %g\n", label, off, slot.numel, want);
            bad += off != 0;
            continue;
        }
        const double sd = 0.02 * (k == PT_ATTPROJW || k == PT_FCPROJW ? 1.0 / sqrt(2.0 * cfg.num_layers) : 1.0);
        double sum = 0.0, sq = 0.0;
        size_t within = 0;
        for (size_t j = 0; j < slot.numel; j++) sum += p[j], sq += (double)p[j] * p[j], within += fabs(p[j]) <= sd;
        const double n = (double)slot.numel, mean = sum / n, got_sd = sqrt(sq / n - mean * mean), share = within / n;
        const int ok = fabs(mean) <= 5.0 * sd / sqrt(n) && fabs(got_sd / sd - 1.0) <= 0.04 && fabs(share - 0.6827) <= 0.025;
        if (!ok) printf("FAIL %s: mean %.3g, sd %.5g (want %.5g), %.4f within one sd (want 0.6827)\n", label, mean, got_sd, sd, share);
        bad += !ok;
        drawn++;
        // Every layer draws its own values: the correlation with layer 0's instance is sampling noise.
        if (!first_of_kind[k]) {
            first_of_kind[k] = p;
        } else {
            double dot = 0.0;
            for (size_t j = 0; j < slot.numel; j++) dot += (double)p[j] * first_of_kind[k][j];
            const double corr = dot / (n * sd * sd);
            if (fabs(corr) > 5.0 / sqrt(n)) printf("FAIL %s: correlation %.3g with layer 0's\n", label, corr);
            bad += fabs(corr) > 5.0 / sqrt(n);
        }
    }
    check(bad == 0, "initialization (seed %llu): LayerNorms 1 and 0, biases 0, %d drawn tensors N(0, 0.02) and the "
          "residual projections N(0, 0.02 / sqrt(2L)), each layer its own draws", (unsigned long long)seed, drawn);
    free(params);
    return g_failures;
}

// The sampler (rng_sample_softmax) against the softmax it draws from: over G evenly spaced
// uniforms (k + 0.5) / G, index j must come up p_j * G times, within 1 (each index owns an
// interval of length p_j of [0, 1)). Logits seeded, of several spreads, also shifted by 1000
// (where exp without the max subtracted overflows); and the extreme uniforms 0 and 1 - 2^-24.
static int run_sampler(uint64_t seed) {
    enum { V = 300, G = 50000 };
    static const double kSpread[] = {0.5, 3.0, 8.0};
    float logits[V];
    for (int c = 0; c < 6; c++) {
        const double spread = kSpread[c % 3], shift = c >= 3 ? 1000.0 : 0.0;
        for (int j = 0; j < V; j++) logits[j] = (float)(shift + spread * rng_normal(seed, (uint64_t)c % 3, (uint64_t)j));
        long double maxv = logits[0], total = 0;
        for (int j = 1; j < V; j++) maxv = logits[j] > maxv ? logits[j] : maxv;
        for (int j = 0; j < V; j++) total += expl((long double)logits[j] - maxv);
        static int count[V];
        memset(count, 0, sizeof(count));
        int out_of_range = 0;
        for (int k = 0; k < G; k++) {
            const int j = rng_sample_softmax(logits, V, (k + 0.5) / G);
            if (j < 0 || j >= V) out_of_range++;
            else count[j]++;
        }
        double worst = 0;
        for (int j = 0; j < V; j++) {
            const double want = (double)(expl((long double)logits[j] - maxv) / total * G);
            worst = fmax(worst, fabs(count[j] - want));
        }
        // The largest uniform falls where the cumulative probability passes 1 - 2^-24.
        int last = 0;
        for (long double cum = expl((long double)logits[0] - maxv) / total; cum <= 1.0L - 0x1p-24L;)
            cum += expl((long double)logits[++last] - maxv) / total;
        check(out_of_range == 0 && worst <= 1.0 && rng_sample_softmax(logits, V, 0.0) == 0 &&
                  rng_sample_softmax(logits, V, 1.0 - 0x1p-24) == last,
              "sampler, logits %g N(0, 1) + %g: %d draws, each index within %.3f of p * %d (<= 1); u = 0 gives index 0, "
              "u = 1 - 2^-24 index %d", spread, shift, G, worst, G, last);
    }
    return g_failures;
}

static int run_outlier(void) {
    OutlierDetector d;
    outlier_init(&d);
    for (int i = 0; i < 15; i++) outlier_push(&d, i % 2 ? 3.0 : 1.0);
    check(outlier_zscore(&d, 100.0) == 0.0, "15 values: z-score %g (0: too few to judge)", outlier_zscore(&d, 100.0));
    outlier_push(&d, 3.0);
    check(outlier_zscore(&d, 5.0) == 3.0, "16 values of 1 and 3: z-score of 5 is %.9g (3)", outlier_zscore(&d, 5.0));
    // Signed: a loss or norm far below the window is no spike (-sl/-sg skip z above theirs only).
    check(outlier_zscore(&d, -1.0) == -3.0, "16 values of 1 and 3: z-score of -1 is %.9g (-3)", outlier_zscore(&d, -1.0));
    // The window keeps the newest OUTLIER_WINDOW values: after 128 of 10 and 12, the 1s and 3s are gone.
    for (int i = 0; i < OUTLIER_WINDOW; i++) outlier_push(&d, i % 2 ? 12.0 : 10.0);
    check(outlier_zscore(&d, 14.0) == 3.0, "the newest %d values, 10 and 12: z-score of 14 is %.9g (3)", OUTLIER_WINDOW,
          outlier_zscore(&d, 14.0));
    // A window of one repeated value has no deviation: only that value is not an outlier.
    OutlierDetector flat;
    outlier_init(&flat);
    for (int i = 0; i < OUTLIER_MIN_COUNT; i++) outlier_push(&flat, 2.5);
    check(outlier_zscore(&flat, 2.5) == 0.0 && outlier_zscore(&flat, 2.5000001) == INFINITY,
          "16 values of 2.5: z-score of 2.5 is %g (0), of 2.5000001 %g (inf)", outlier_zscore(&flat, 2.5),
          outlier_zscore(&flat, 2.5000001));
    return g_failures;
}

// The ETA of the progress line (llmc/logger.c): rounded to the second, the unit changing at 60 s
// and 3600 s, and "?" for anything but a number of seconds from 0 to 1e8 (a clock gone back, NaN).
static int run_duration(void) {
    static const struct { double seconds; const char *want; } cases[] = {
        {0.0, "0s"},         {0.49, "0s"},        {59.49, "59s"},      {59.5, "1m00s"},
        {125.0, "2m05s"},    {600.0, "10m00s"},   {3599.49, "59m59s"}, {3599.5, "1h00m"},
        {3725.0, "1h02m"},   {3659.0, "1h00m"},   {360000.0, "100h00m"}, {1e8, "27777h46m"},
        {1.0001e8, "?"},     {-1.0, "?"},         {NAN, "?"},          {INFINITY, "?"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char got[32];
        format_duration(cases[i].seconds, got, sizeof(got));
        check(strcmp(got, cases[i].want) == 0, "ETA of %g s: \"%s\" (%s)", cases[i].seconds, got, cases[i].want);
    }
    return g_failures;
}

// With FP8 delayed scaling, only training micro-steps record amaxes: an evaluation (validation,
// sampling) that wrote its own into the ring would change the scales of the next training step,
// by too little for a loss comparison to notice where the power-of-two scale hides it.
static int run_fp8_eval(uint64_t seed) {
    GPT2Config cfg = {.max_seq_len = 16, .vocab_size = 300, .padded_vocab_size = 384, .num_layers = 2, .num_heads = 4, .channels = 64};
    const int B = 2, T = 16;
    int inputs[B * T], targets[B * T];
    for (int i = 0; i < B * T; i++) {
        inputs[i] = (int)(rng_uniform(seed, 7, i) * cfg.vocab_size);
        targets[i] = (int)(rng_uniform(seed, 8, i) * cfg.vocab_size);
    }
    ModelOptions opt = {NULL, MATMUL_FP8, 0, 3, 0};
    GPT2 m;
    gpt2_alloc_with(&m, &cfg, B, T, &opt);
    gpt2_init_params(&cfg, m.params, seed);
    gpt2_forward(&m, inputs, targets, B, T, 1, 1.0f);
    gpt2_backward(&m, B, T);
    const size_t bytes = (size_t)m.amax.operands * m.amax.length * sizeof(float);
    float *ring = (float *)malloc_check(bytes);
    memcpy(ring, m.amax.values, bytes);
    const int64_t steps = m.amax.steps;
    m.phase = QUANT_PASS_EVAL;
    gpt2_forward(&m, inputs, targets, B, T, 0, 1.0f);
    check(m.amax.steps == steps && memcmp(ring, m.amax.values, bytes) == 0,
          "fp8 delayed scaling: an evaluation pass leaves the amax history unchanged");
    free(ring);
    gpt2_free(&m);
    return g_failures;
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    blas_kernels_fix(argv);
    if (argc == 3 && strcmp(argv[1], "case") == 0) return run_case(argv[2]) ? 1 : 0;
    if (argc == 3 && strcmp(argv[1], "fd") == 0) return run_fd(strtoull(argv[2], NULL, 10)) ? 1 : 0;
    if (argc == 3 && strcmp(argv[1], "gelu") == 0) return run_gelu(strtoull(argv[2], NULL, 10)) ? 1 : 0;
    if (argc == 3 && strcmp(argv[1], "recompute") == 0) return run_recompute(strtoull(argv[2], NULL, 10)) ? 1 : 0;
    if (argc == 3 && strcmp(argv[1], "fp8eval") == 0) return run_fp8_eval(strtoull(argv[2], NULL, 10)) ? 1 : 0;
    if (argc == 2 && strcmp(argv[1], "outlier") == 0) return run_outlier() ? 1 : 0;
    if (argc == 2 && strcmp(argv[1], "duration") == 0) return run_duration() ? 1 : 0;
    if (argc == 2 && strcmp(argv[1], "sizes") == 0) return run_sizes() ? 1 : 0;
    if (argc == 3 && strcmp(argv[1], "twin") == 0) return run_twin(strtoull(argv[2], NULL, 10)) ? 1 : 0;
    if (argc == 3 && strcmp(argv[1], "sampler") == 0) return run_sampler(strtoull(argv[2], NULL, 10)) ? 1 : 0;
    if (argc == 3 && strcmp(argv[1], "init") == 0) return run_init(strtoull(argv[2], NULL, 10)) ? 1 : 0;
    if (argc == 5 && strcmp(argv[1], "memory") == 0) return run_memory(argv[2], atoi(argv[3]), atoi(argv[4]));
    fprintf(stderr, "usage: %s case PREFIX | fd SEED | gelu SEED | init SEED | recompute SEED | outlier | duration | sampler SEED | sizes | twin SEED | fp8eval SEED | "
                    "memory MODEL B T\n", argv[0]);
    return 2;
}
