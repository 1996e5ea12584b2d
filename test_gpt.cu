// Checks the GPU trainer (train_gpt.cu, included below) against the fp32 CPU reference
// (train_gpt.c, through dev/test/cpu_reference.h) on the same weights and batches:
//   1. logits and loss of one forward pass
//   2. every parameter gradient (per tensor instance) and the global gradient norm
//   3. the losses of 10 AdamW steps, both trainers stepping side by side
//   4. determinism: two identical 3-step runs give identical bits (weights, master, moments, losses)
//   5. resume: save after 2 steps, 2 more steps; reload, the same 2 steps: identical bits
// Usage: test_gptcu tiny|small|d12 (configurations below). Exits 1 if any check fails.
//
// STATUS: compiled and linked for sm_90; NOT YET RUN ON A GPU. The tolerances below are reasoned,
// not measured; the first run on a GPU must confirm them (dev/gpu_report.md).
//
// Both trainers start from the same weights: the seeded initialization rounded to bf16, so the
// GPU's bf16 parameters and fp32 master weights and the CPU's fp32 parameters are the same numbers.
#define TESTING
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include <vector>

#include "train_gpt.cu"
#include "dev/test/cpu_reference.h"

static int g_failures = 0;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    if (!ok) g_failures++;
}

// rel_l2 = ||gpu - cpu|| / ||cpu||, rel_max = max |gpu - cpu| / max |cpu|; both must be within
// their tolerance (and finite). Over the first n elements, or strided rows (n_rows of `cols`
// used columns, `stride` apart) when cols > 0.
static void compare(const char *name, const float *gpu, const float *cpu, size_t n_rows, size_t cols, size_t stride,
                    double tol_l2, double tol_max) {
    double d2 = 0, c2 = 0, dmax = 0, cmax = 0;
    for (size_t r = 0; r < n_rows; r++)
        for (size_t j = 0; j < cols; j++) {
            const double a = gpu[r * stride + j], b = cpu[r * stride + j], d = a - b;
            d2 += d * d;
            c2 += b * b;
            dmax = fmax(dmax, fabs(d));  // fmax drops a NaN d: the NaN check is on d2 below
            cmax = fmax(cmax, fabs(b));
        }
    const double rel_l2 = c2 > 0 ? sqrt(d2 / c2) : sqrt(d2), rel_max = cmax > 0 ? dmax / cmax : dmax;
    check(isfinite(d2) && rel_l2 <= tol_l2 && rel_max <= tol_max, "%-14s rel_l2 %.2e (tol %.0e)  rel_max %.2e (tol %.0e)",
          name, rel_l2, tol_l2, rel_max, tol_max);
}

typedef struct {
    const char *name;
    GPT2Config cfg;
    int B, T;
} TestCase;

// tiny: HS 64, for compute-sanitizer (fast). small: HS 128, odd T, odd V (a padded vocabulary
// whose last chunk is partly real), three layers. d12: GPT-2 small itself at T = 256.
static TestCase test_case(const char *name) {
    TestCase tc;
    memset(&tc, 0, sizeof(tc));
    tc.name = name;
    GPT2Config *c = &tc.cfg;
    if (!strcmp(name, "tiny")) {
        *c = (GPT2Config){64, 301, gpt2_pad_vocab(301), 2, 2, 128};
        tc.B = 2, tc.T = 19;
    } else if (!strcmp(name, "small")) {
        *c = (GPT2Config){96, 1001, gpt2_pad_vocab(1001), 3, 3, 384};
        tc.B = 3, tc.T = 37;
    } else if (!strcmp(name, "d12")) {
        gpt2_config_from_string("d12", c);
        tc.B = 4, tc.T = 256;
    } else {
        usage_error("unknown test case '%s' (tiny, small or d12)", name);
    }
    return tc;
}

// Batch number k: tokens from (seed, k); half the positions drawn from 7 tokens so that the
// encoder's backward sees tokens at many positions.
static void make_batch(int *inputs, int *targets, int N, int V, uint64_t k) {
    for (int i = 0; i < N; i++) {
        const uint64_t r = rng_bits(4242, k, (uint64_t)i);
        inputs[i] = (r & 1) ? (int)((r >> 8) % 7) : (int)((r >> 8) % (uint64_t)V);
        targets[i] = (int)((r >> 40) % (uint64_t)V);
    }
}

// Everything an optimizer step changes, copied to the host.
typedef struct {
    std::vector<uint16_t> params;
    std::vector<float> master, m, v;
} Snapshot;

static Snapshot snapshot(GPUModel *g) {
    const size_t P = g->num_params;
    Snapshot s;
    s.params.resize(P);
    s.master.resize(P);
    s.m.resize(P);
    s.v.resize(P);
    cudaCheck(cudaMemcpy(s.params.data(), g->params, P * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(s.master.data(), g->master, P * sizeof(float), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(s.m.data(), g->m, P * sizeof(float), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(s.v.data(), g->v, P * sizeof(float), cudaMemcpyDeviceToHost));
    return s;
}

static bool same_bits(const Snapshot &a, const Snapshot &b) {
    return a.params == b.params && !memcmp(a.master.data(), b.master.data(), a.master.size() * sizeof(float)) &&
           !memcmp(a.m.data(), b.m.data(), a.m.size() * sizeof(float)) &&
           !memcmp(a.v.data(), b.v.data(), a.v.size() * sizeof(float));
}

static const float kLR = 1e-3f;

// GPU optimizer steps first_step..last_step (t from 1) on batches first_step..last_step.
static std::vector<float> gpu_steps(GPUModel *g, int first_step, int last_step) {
    const int N = g->B * g->T;
    std::vector<int> in(N), tg(N);
    std::vector<float> losses;
    for (int t = first_step; t <= last_step; t++) {
        make_batch(in.data(), tg.data(), N, g->cfg.vocab_size, (uint64_t)t);
        gpu_zero_grads(g);
        losses.push_back(gpu_forward_backward(g, in.data(), tg.data(), 1.0f));
        const double norm = gpu_grad_norm(g);
        gpu_update(g, t, kLR, grad_clip_scale(g->hp.grad_clip, norm));
    }
    return losses;
}

// The GPU model back at the starting weights with zero moments.
static void gpu_reset(GPUModel *g, const float *weights) {
    gpu_set_weights(g, weights);
    cudaCheck(cudaMemset(g->m, 0, g->num_params * sizeof(float)));
    cudaCheck(cudaMemset(g->v, 0, g->num_params * sizeof(float)));
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    if (argc != 2) usage_error("usage: %s tiny|small|d12", argv[0]);
    const TestCase tc = test_case(argv[1]);
    const GPT2Config *cfg = &tc.cfg;
    const int B = tc.B, T = tc.T, N = B * T, V = cfg->vocab_size, Vp = cfg->padded_vocab_size;
    printf("test_gptcu %s: L=%d C=%d NH=%d V=%d Vp=%d maxT=%d, B=%d T=%d\n", tc.name, cfg->num_layers, cfg->channels,
           cfg->num_heads, V, Vp, cfg->max_seq_len, B, T);
    const AdamWConfig hp = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1.0f};  // beta1, beta2, eps, wd, grad clip, update clip

    GPUModel g;
    gpu_model_alloc(&g, cfg, B, T, &hp, 1337);
    const size_t P = g.num_params;
    std::vector<float> weights(P);
    gpt2_init_params(cfg, weights.data(), 1337);
    for (size_t i = 0; i < P; i++) weights[i] = bf16_to_float(bf16_from_float(weights[i]));
    gpu_set_weights(&g, weights.data());
    CpuModel *cpu = cpu_model_new(cfg, B, T);
    memcpy(cpu_model_params(cpu), weights.data(), P * sizeof(float));

    std::vector<int> in(N), tg(N);
    make_batch(in.data(), tg.data(), N, V, 0);

    // 1. Forward. Logits: the GPU's activations are bf16 (unit roundoff 2^-9 = 2e-3 per rounding)
    // and every block rounds ~8 of them, so with L blocks the logits carry a few 1e-3 of relative
    // error in the l2 sense and a few times that at the worst element: 2e-2 / 5e-2. Loss: an
    // average of N cross-entropies, each off by about the logits' absolute error: 1e-2.
    const float gpu_loss = gpu_forward(&g, in.data(), tg.data(), B, T, 0, 1.0f);
    std::vector<uint16_t> lbits((size_t)N * Vp);
    cudaCheck(cudaMemcpy(lbits.data(), g.logits, lbits.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    std::vector<float> gpu_logits(lbits.size());
    for (size_t i = 0; i < lbits.size(); i++) gpu_logits[i] = bf16_to_float(lbits[i]);
    const float cpu_loss = cpu_model_forward(cpu, in.data(), tg.data());
    compare("logits", gpu_logits.data(), cpu_model_logits(cpu), (size_t)N, (size_t)V, (size_t)Vp, 2e-2, 5e-2);
    check(fabsf(gpu_loss - cpu_loss) <= 1e-2f, "loss           gpu %.6f cpu %.6f (tol 1e-2 absolute)", gpu_loss, cpu_loss);

    // The sampling path (B = 1, T = n) gives the logits of the first sequence's position n - 1.
    const int n = T / 2 + 1;
    std::vector<float> next(V);
    gpu_next_token_logits(&g, in.data(), n, next.data());
    compare("next_token", next.data(), cpu_model_logits(cpu) + (size_t)(n - 1) * Vp, 1, (size_t)V, 0, 2e-2, 5e-2);

    // 2. Gradients. The backward pass rounds the activation gradients to bf16 at every layer
    // (the weight gradients themselves accumulate in fp32), and the errors of the forward pass
    // enter through the activations it multiplies: l2 5e-2, worst element 1e-1 of the tensor's
    // largest. A wrong index or a missing term gives errors of order 1.
    cpu_model_zero_grads(cpu);
    cpu_model_forward(cpu, in.data(), tg.data());
    cpu_model_backward(cpu, 1.0f);
    gpu_zero_grads(&g);
    gpu_forward_backward(&g, in.data(), tg.data(), 1.0f);
    std::vector<float> grads(P);
    cudaCheck(cudaMemcpy(grads.data(), g.grads, P * sizeof(float), cudaMemcpyDeviceToHost));
    for (int s = 0; s < gpt2_num_slots(cfg); s++) {
        const ParamSlot slot = gpt2_slot(cfg, s);
        char label[64];
        if (slot.layer >= 0) snprintf(label, sizeof(label), "d%s[%d]", param_tensor_name(slot.kind), slot.layer);
        else snprintf(label, sizeof(label), "d%s", param_tensor_name(slot.kind));
        compare(label, grads.data() + slot.offset, cpu_model_grads(cpu) + slot.offset, 1, slot.numel, 0, 5e-2, 1e-1);
    }
    // The norm is dominated by the largest gradients, which carry the l2 error above at most.
    const double gpu_norm = gpu_grad_norm(&g), cpu_norm = cpu_model_grad_norm(cpu);
    check(fabs(gpu_norm - cpu_norm) <= 5e-2 * cpu_norm, "grad norm      gpu %.6f cpu %.6f (tol 5e-2 relative)", gpu_norm,
          cpu_norm);

    // 3. Ten steps side by side from the same weights. Beyond the differences above, the GPU's
    // weights are bf16 (stochastically rounded from the fp32 master), which moves each loss by
    // about 1e-3 of its value: 2e-2 absolute over the whole run. The loss must also fall.
    gpu_reset(&g, weights.data());
    const std::vector<float> gpu_losses = gpu_steps(&g, 1, 10);
    float max_diff = 0.0f, first_cpu = 0.0f, last_cpu = 0.0f;
    for (int t = 1; t <= 10; t++) {
        make_batch(in.data(), tg.data(), N, V, (uint64_t)t);
        cpu_model_zero_grads(cpu);
        const float loss = cpu_model_forward(cpu, in.data(), tg.data());
        cpu_model_backward(cpu, 1.0f);
        const double norm = cpu_model_grad_norm(cpu);
        cpu_model_update(cpu, &hp, t, kLR, grad_clip_scale(hp.grad_clip, norm));
        printf("     step %2d    loss gpu %.6f cpu %.6f\n", t, gpu_losses[t - 1], loss);
        max_diff = fmaxf(max_diff, fabsf(gpu_losses[t - 1] - loss));
        if (t == 1) first_cpu = loss;
        last_cpu = loss;
    }
    check(max_diff <= 2e-2f, "10 steps       max |loss gpu - loss cpu| %.2e (tol 2e-2)", max_diff);
    check(gpu_losses[9] < gpu_losses[0] && last_cpu < first_cpu, "10 steps       the loss falls (gpu %.4f -> %.4f)",
          gpu_losses[0], gpu_losses[9]);

    // 4. Determinism: no atomics in any floating-point sum, so identical bits.
    gpu_reset(&g, weights.data());
    const std::vector<float> run_a = gpu_steps(&g, 1, 3);
    const Snapshot snap_a = snapshot(&g);
    gpu_reset(&g, weights.data());
    const std::vector<float> run_b = gpu_steps(&g, 1, 3);
    const Snapshot snap_b = snapshot(&g);
    check(same_bits(snap_a, snap_b) && !memcmp(run_a.data(), run_b.data(), run_a.size() * sizeof(float)),
          "determinism    two 3-step runs give identical weights, master, moments and losses");

    // 5. Resume through the backend's own save and load (the files the trainer writes).
    char dir[] = "/tmp/test_gptcu.XXXXXX";
    if (!mkdtemp(dir)) die("cannot create a temporary directory");
    char model_path[256], state_path[256], err[512];
    snprintf(model_path, sizeof(model_path), "%s/model.bin", dir);
    snprintf(state_path, sizeof(state_path), "%s/state.bin", dir);
    TrainState st;
    memset(&st, 0, sizeof(st));
    st.step = 2;
    st.num_ranks = 1;
    st.num_params = (int64_t)P;
    st.end = (int64_t)P;
    outlier_init(&st.loss_outliers);
    outlier_init(&st.norm_outliers);
    gpu_reset(&g, weights.data());
    gpu_steps(&g, 1, 2);
    if (gpu_save(&g, model_path, state_path, &st, err, sizeof(err)) != 0) die("save failed: %s", err);
    const std::vector<float> cont_a = gpu_steps(&g, 3, 4);
    const Snapshot resume_a = snapshot(&g);
    gpu_reset(&g, weights.data());  // scramble the state the load must restore
    TrainState loaded;
    gpu_load(&g, model_path, state_path, &loaded);
    const std::vector<float> cont_b = gpu_steps(&g, 3, 4);
    const Snapshot resume_b = snapshot(&g);
    check(same_bits(resume_a, resume_b) && !memcmp(cont_a.data(), cont_b.data(), cont_a.size() * sizeof(float)) &&
              loaded.step == 2,
          "resume         save at step 2, reload, steps 3-4: identical bits");
    unlink(model_path);
    unlink(state_path);
    rmdir(dir);

    cpu_model_free(cpu);
    gpu_model_free(&g);
    printf("%s: %d check(s) failed\n", tc.name, g_failures);
    return g_failures ? 1 : 0;
}
