// Checks the GPU trainer (train_gpt.cu, included below) against the fp32 CPU reference
// (train_gpt.c, through dev/test/cpu_reference.h) on the same weights and batches:
//   1. logits and loss of one forward pass
//   2. every parameter gradient (per tensor instance) and the global gradient norm; the same
//      with the output head in chunks (and the sampling path's row in a later chunk), and on a
//      model whose head's logits outgrow the backward's buffers that share their memory, on a
//      batch of distinct tokens (2c)
//   3. the losses of 10 AdamW steps, both trainers stepping side by side
//   4. determinism: two identical 3-step runs give identical bits (weights, master, moments, losses)
//   5. resume: save after 2 steps, 2 more steps; reload, the same 2 steps: identical bits
//   6. low-precision block linears (llmc/matmul_lowp.cuh), fp8 and int8:
//      a. one linear layer, forward and backward, against llmc/quant.h's emulation on the same
//         operands (also the FP8 weight gradient);
//      b. the whole model: one training step against the CPU twin (train_gpt.c's emulation of the
//         same precision), then a second step's loss; determinism; delayed scaling (fp8);
//      e. FP8 with delayed scaling: the LayerNorms, the GELU and (T a multiple of 64) the
//         attention's backward writing the linears' codes, and the weight codes kept across the
//         micro-steps of a step (also int8), give the bits of separate casts over 4 steps of 2
//         micro-steps (with FP8 weight gradients at each GELU fusion level);
//      f. the kept weight codes of one linear: a micro-step on a NaN weight gives the bits of the
//         one before (fp8, int8).
//   7. (test_gptcu CASE recompute) selective recomputation: every policy, a mixed per-layer list
//      and a --mem-budget plan give bit-identical losses, gradients and weights to keeping
//      everything over 5 steps (bf16 with the default --gelu-fusion 1, also with 2 at the levels that
//      recompute no GELU alone, which excludes the budget plan; fp8 with delayed scaling (and at
//      d12 FP8 weight gradients: the linears' inputs kept as FP8 codes), at --gelu-fusion 0 (its
//      default), 1 and 2; int8),
//      and allocate exactly the activation bytes the plan predicts; an FP8 forward replayed after
//      its amax grew gives its bits.
//   8. GELU in cuBLASLt's epilogues at every level (--gelu-fusion 0, 1, 2), with random biases and
//      LayerNorm weights: logits, loss and gradients against the CPU reference with the
//      tolerances of 1 and 2; determinism. The same in fp8 against its CPU twin (6b's tolerances).
// Checks 1-5 run the trainer's defaults for bf16 (gpu_model_options: --gelu-fusion 1).
// Usage: test_gptcu tiny|small|d12 [recompute] [wgmma|wgmma-fwd|mma-rt2|mma-rdq] (configurations below; recompute:
// check 7 alone, else 1-6 and 8; wgmma: every model here with --attention wgmma, head size 64 only,
// so tiny or d12; wgmma-fwd: the wgmma forward with the mma.sync backward, any case (small's head
// size is 128); either fails where the wgmma kernels cannot run; mma-rt2: the mma.sync backward
// with 2 row tiles per warp at head size 64; mma-rdq: the mma.sync backward with dQ by integer
// reduction in its dK/dV kernel). Exits 1 if any check fails.
//
// STATUS: on an H200 (2026-11-27, commit c95ef56; dev/gpu_report.md): tiny, tiny wgmma, tiny
// recompute wgmma, d12 and d12 wgmma pass (every check, the wgmma argument, check 2b, check 7's 5
// steps and the GELU levels included); small passed every check but one: its 10 steps at lr 1e-3
// drifted 2.70e-2 from the CPU at step 6 (tolerance 2e-2; 1.47e-2 on the H100 at 7c74e66 and in
// the emulator). Small's side-by-side lr is now 3e-4 (see test_case): in the emulator the drift
// falls to 9.5e-4; NOT yet RUN on a GPU. check 7 on small ran on an H100 at 7c74e66 (3 steps).
// Every case also passes in the CPU emulator of dev/emu (make test runs tiny and tiny recompute
// wgmma, t_45), which checks the code's logic, not the hardware or cuBLASLt itself.
//
// Both trainers start from the same weights: the seeded initialization rounded to bf16, so the
// GPU's bf16 parameters and fp32 master weights and the CPU's fp32 parameters are the same numbers.
#define TESTING
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "train_gpt.cu"
#include "llmc/blas_kernels.h"
#include "dev/test/cpu_reference.h"

#include "dev/test/check.h"

// --seed of every model here: the weights' initialization and the stochastic rounding.
static const uint64_t TEST_SEED = 1337;
// The attention kernels of every model here (the arguments wgmma, wgmma-fwd, mma-rt2 and mma-rdq: llmc/args.h).
static int g_attention = ATTENTION_MMA;

static GPUModelOptions test_options(matmul_precision precision) {
    GPUModelOptions o = gpu_model_options(precision);
    o.attention = g_attention;
    return o;
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
    check(isfinite(d2) && rel_l2 <= tol_l2 && rel_max <= tol_max, "%-14s rel_l2 %.2e (tol %.1e)  rel_max %.2e (tol %.1e)",
          name, rel_l2, tol_l2, rel_max, tol_max);
}

// The logits of the last forward without gradients, (N, Vp) as floats: all N rows only when the
// output head ran in one chunk (the model's head_rows >= N; gpu_forward keeps one chunk).
static std::vector<float> download_logits(const GPUModel *g, int N) {
    if (g->head_rows < N) die("download_logits: the head runs in chunks of %d rows, not all %d", g->head_rows, N);
    std::vector<uint16_t> bits((size_t)N * g->cfg.padded_vocab_size);
    cudaCheck(cudaMemcpy(bits.data(), g->logits, bits.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    std::vector<float> logits(bits.size());
    for (size_t i = 0; i < bits.size(); i++) logits[i] = bf16_to_float(bits[i]);
    return logits;
}

// compare() of every parameter tensor instance's gradient, labelled "<prefix><tensor>[<layer>]".
static void compare_grads(const char *prefix, const GPT2Config *cfg, const float *gpu, const float *cpu, double tol_l2,
                          double tol_max) {
    for (int s = 0; s < gpt2_num_slots(cfg); s++) {
        const ParamSlot slot = gpt2_slot(cfg, s);
        char label[128];
        param_slot_label(&slot, prefix, label, sizeof(label));
        compare(label, gpu + slot.offset, cpu + slot.offset, 1, slot.numel, 0, tol_l2, tol_max);
    }
}

typedef struct {
    const char *name;
    GPT2Config cfg;
    int B, T;
    float lr;  // of the side-by-side steps: small enough that both runs stay in the stable regime
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
        tc.B = 2, tc.T = 19, tc.lr = 1e-3f;
    } else if (!strcmp(name, "small")) {
        *c = (GPT2Config){96, 1001, gpt2_pad_vocab(1001), 3, 3, 384};
        // At 1e-3 the GPU's and the CPU's losses drift apart step by step (about 3x a step from
        // step 3) and peak at step 6: 2.70e-2 on an H200, 1.47e-2 on an H100 and in the emulator;
        // how far depends on the order in which the matmuls sum. At 3e-4 the emulator's drift
        // stays below 1e-3 at every step.
        tc.B = 3, tc.T = 37, tc.lr = 3e-4f;
    } else if (!strcmp(name, "d12")) {
        gpt2_config_from_string("d12", c);
        // At 1e-3 without warmup d12 oscillates (both runs' losses jump up and down between steps
        // 4 and 9, measured on an H100), where bf16 against fp32 weights decides each jump.
        tc.B = 4, tc.T = 256, tc.lr = 3e-4f;
    } else {
        usage_error("unknown test case '%s' (tiny, small or d12)", name);
    }
    return tc;
}

// Batch number k: tokens from (seed, k); half the positions drawn from 7 tokens so that the
// encoder's backward sees tokens at many positions. Three targets in four are the input plus one,
// a rule the model learns within a few steps, so the loss over fresh batches falls.
static void make_batch(int *inputs, int *targets, int N, int V, uint64_t k) {
    for (int i = 0; i < N; i++) {
        const uint64_t r = rng_bits(4242, k, (uint64_t)i);
        inputs[i] = (r & 1) ? (int)((r >> 8) % 7) : (int)((r >> 8) % (uint64_t)V);
        targets[i] = (r >> 62) ? (inputs[i] + 1) % V : (int)((r >> 32) % (uint64_t)V);
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

// GPU optimizer steps first_step..last_step (t from 1) on batches first_step..last_step.
static std::vector<float> gpu_steps(GPUModel *g, int first_step, int last_step, float lr) {
    const int N = g->B * g->T;
    std::vector<int> in(N), tg(N);
    std::vector<float> losses;
    for (int t = first_step; t <= last_step; t++) {
        make_batch(in.data(), tg.data(), N, g->cfg.vocab_size, (uint64_t)t);
        gpu_zero_grads(g, 1);
        losses.push_back(gpu_forward_backward(g, in.data(), tg.data(), 1.0f));
        const double norm = gpu_grad_norm(g);
        gpu_update(g, t, lr, grad_clip_scale(g->hp.grad_clip, norm));
    }
    return losses;
}

// The GPU model back at the starting weights with zero moments.
static void gpu_reset(GPUModel *g, const float *weights) {
    gpu_set_weights(g, weights);
    cudaCheck(cudaMemset(g->m, 0, g->num_params * sizeof(float)));
    cudaCheck(cudaMemset(g->v, 0, g->num_params * sizeof(float)));
    lowp_history_reset(&g->lp);  // delayed scaling: a fresh run starts from its current amaxes
}

// Determinism: two 3-step runs from `weights` give identical weights, master, moments and losses.
static bool three_steps_twice_identical(GPUModel *g, const float *weights, float lr) {
    gpu_reset(g, weights);
    const std::vector<float> run_a = gpu_steps(g, 1, 3, lr);
    const Snapshot snap_a = snapshot(g);
    gpu_reset(g, weights);
    const std::vector<float> run_b = gpu_steps(g, 1, 3, lr);
    return same_bits(snap_a, snapshot(g)) && !memcmp(run_a.data(), run_b.data(), run_a.size() * sizeof(float));
}

// ---------------------------------------------------------------------------------------------
// 6. Low-precision block linears

// n bf16 values ~ N(0, stddev^2) from (seed, i), as fp32 (exact) and as device bf16.
static std::vector<float> random_bf16(size_t n, uint64_t seed, float stddev) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = bf16_to_float(bf16_from_float((float)rng_normal(seed, 0, i) * stddev));
    return v;
}
static bf16 *upload_bf16(const std::vector<float> &v) {
    std::vector<uint16_t> bits(v.size());
    for (size_t i = 0; i < v.size(); i++) bits[i] = bf16_from_float(v[i]);  // exact: v holds bf16 values
    bf16 *d;
    cudaCheck(cudaMalloc(&d, bits.size() * sizeof(uint16_t)));
    cudaCheck(cudaMemcpy(d, bits.data(), bits.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
    return d;
}
static std::vector<float> download_bf16(const bf16 *d, size_t n) {
    std::vector<uint16_t> bits(n);
    cudaCheck(cudaMemcpy(bits.data(), d, n * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = bf16_to_float(bits[i]);
    return v;
}

// Counts the elements of got outside |got - ref| <= 2^-8 |ref| + accumulation abs_sum and reports
// the worst error / bound. ref and abs_sum are fp64 sums over the same (dequantized) operands the
// GPU multiplied, so what remains is the GPU's arithmetic: 2^-8 |ref| is the bf16 output's rounding
// (half an ulp of 8 significant bits; an fp32 output has less), accumulation the GEMM's sums,
// lowp_accumulation_bound() (llmc/matmul_lowp.cuh; int8 accumulates exactly and only the int32 to
// fp32 conversion and the fp32 bias add round, within its 2^-10).
static void check_bound(const char *name, const std::vector<float> &got, const std::vector<double> &ref,
                        const std::vector<double> &abs_sum, double accumulation) {
    size_t bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < got.size(); i++) {
        const double err = fabs((double)got[i] - ref[i]), bound = ldexp(fabs(ref[i]), -8) + accumulation * abs_sum[i];
        bad += !(err <= bound);  // also counts a NaN
        worst = fmax(worst, err / bound);
    }
    check(bad == 0, "%-32s %zu of %zu outside the bound, max error/bound %.3f", name, bad, got.size(), worst);
}

// out (R, Cc) = a (R, K) @ b^T (b (Cc, K)) [+ add (Cc)] in fp64, with the sums of |terms|.
// a_stride_k / b_stride_k let the same loop read transposed operands.
static void ref_matmul(std::vector<double> &out, std::vector<double> &abs_sum, const float *a, const float *b,
                       const float *add, int R, int Cc, int K, size_t a_row, size_t a_k, size_t b_row, size_t b_k) {
    out.assign((size_t)R * Cc, 0.0);
    abs_sum.assign((size_t)R * Cc, 0.0);
#pragma omp parallel for collapse(2)
    for (int r = 0; r < R; r++)
        for (int c = 0; c < Cc; c++) {
            double s = add ? add[c] : 0.0, sa = add ? fabs(add[c]) : 0.0;
            for (int k = 0; k < K; k++) {
                const double t = (double)a[r * a_row + k * a_k] * b[c * b_row + k * b_k];
                s += t;
                sa += fabs(t);
            }
            out[(size_t)r * Cc + c] = s;
            abs_sum[(size_t)r * Cc + c] = sa;
        }
}

// 6a. One linear layer out = inp @ W^T + b (N, IC -> OC) and its backward in `precision`, against
// the emulation of llmc/quant.h (quant_emulate_operand) on the same bf16 operands: the quantizers
// are bit-exact twins, so both sides multiply identical dequantized values. fast_accum: the
// --fp8-fast-accum level, whose GEMMs are held to the looser bound of lowp_accumulation_bound().
// With the FP8 weight gradient, the same forward and backward again with the input's transposed
// codes kept from the forward (as GPUBlockActs keeps them) and inp overwritten with NaN before the
// backward, which must then not read it: the same bits as casting inp again in the backward.
static void check_lowp_linear(Matmul *mm, matmul_precision precision, int fp8_wgrad, int fast_accum, int N, int IC,
                              int OC, uint64_t seed) {
    const std::vector<float> inp = random_bf16((size_t)N * IC, seed, 1.0f), w = random_bf16((size_t)OC * IC, seed + 1, 0.02f);
    const std::vector<float> bias = random_bf16(OC, seed + 2, 0.1f), dout = random_bf16((size_t)N * OC, seed + 3, 1e-3f);
    const std::vector<float> dw0 = random_bf16((size_t)OC * IC, seed + 4, 1e-2f), db0 = random_bf16(OC, seed + 5, 1e-2f);
    LowpMatmul lp;
    lowp_init(&lp, precision, fp8_wgrad, fast_accum, 0, 1, IC > OC ? IC : OC, N);  // scratch for width max(IC, OC)
    bf16 *d_inp = upload_bf16(inp), *d_w = upload_bf16(w), *d_bias = upload_bf16(bias), *d_dout = upload_bf16(dout);
    bf16 *d_out, *d_dinp;
    float *d_dw, *d_db, *d_scratch;
    cudaCheck(cudaMalloc(&d_out, (size_t)N * OC * sizeof(bf16)));
    cudaCheck(cudaMalloc(&d_dinp, (size_t)N * IC * sizeof(bf16)));
    cudaCheck(cudaMalloc(&d_dw, (size_t)OC * IC * sizeof(float)));
    cudaCheck(cudaMalloc(&d_db, (size_t)OC * sizeof(float)));
    cudaCheck(cudaMalloc(&d_scratch, colsum_scratch_floats(N, OC) * sizeof(float)));
    uint8_t *d_inp_t = nullptr;  // the transposed input codes, kept from the forward (second run)
    std::vector<float> out, dinp, dw((size_t)OC * IC), db(OC);
    for (int run = 0; run < (fp8_wgrad ? 2 : 1); run++) {
        cudaCheck(cudaMemcpy(d_dw, dw0.data(), dw0.size() * sizeof(float), cudaMemcpyHostToDevice));
        cudaCheck(cudaMemcpy(d_db, db0.data(), db0.size() * sizeof(float), cudaMemcpyHostToDevice));
        if (run == 1) cudaCheck(cudaMalloc(&d_inp_t, (size_t)N * IC));
        lowp_begin_forward(&lp, true, false, 0);
        lowp_linear_forward(&lp, mm, d_out, nullptr, d_inp, d_inp_t, d_w, d_bias, N, IC, OC, 0, LINEAR_FC, true, 0);
        if (run == 1) cudaCheck(cudaMemset(d_inp, 0xFF, (size_t)N * IC * sizeof(bf16)));  // NaN: must not be read
        lowp_linear_backward(&lp, mm, d_dinp, d_dw, d_db, d_scratch, d_dout, d_inp, d_inp_t, d_w, nullptr, N, IC, OC, 0,
                             LINEAR_FC, true, 0);  // adds to dw0, db0 (the whole-model checks cover the first write)
        cudaCheck(cudaDeviceSynchronize());
        const std::vector<float> o = download_bf16(d_out, (size_t)N * OC), di = download_bf16(d_dinp, (size_t)N * IC);
        std::vector<float> w_grad((size_t)OC * IC), b_grad(OC);
        cudaCheck(cudaMemcpy(w_grad.data(), d_dw, w_grad.size() * sizeof(float), cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(b_grad.data(), d_db, b_grad.size() * sizeof(float), cudaMemcpyDeviceToHost));
        if (run == 0) {
            out = o, dinp = di, dw = w_grad, db = b_grad;
        } else {
            const bool same = !memcmp(o.data(), out.data(), o.size() * sizeof(float)) &&
                              !memcmp(di.data(), dinp.data(), di.size() * sizeof(float)) &&
                              !memcmp(w_grad.data(), dw.data(), dw.size() * sizeof(float)) &&
                              !memcmp(b_grad.data(), db.data(), db.size() * sizeof(float));
            check(same, "%s%s linear %dx%d->%d with the input's codes kept from the forward (input NaN in the "
                  "backward): out, dinp, dweight, dbias bit-identical to casting it again", matmul_precision_name(precision),
                  fast_accum ? " fast" : "", N, IC, OC);
        }
    }

    // The CPU twin's operands.
    std::vector<float> q_inp(inp.size()), q_w(w.size()), q_dout(dout.size());
    quant_emulate_operand(q_inp.data(), inp.data(), N, IC, precision, QUANT_ACTIVATION, QUANT_SCALE_POW2);
    quant_emulate_operand(q_w.data(), w.data(), OC, IC, precision, QUANT_WEIGHT, QUANT_SCALE_POW2);
    quant_emulate_operand(q_dout.data(), dout.data(), N, OC, precision, QUANT_GRADIENT, QUANT_SCALE_POW2);
    const float *wg_dout = fp8_wgrad ? q_dout.data() : dout.data(), *wg_inp = fp8_wgrad ? q_inp.data() : inp.data();
    std::vector<double> ref, abs_sum;
    char name[96], mode[32];
    snprintf(mode, sizeof(mode), "%s%s%s", matmul_precision_name(precision), fp8_wgrad ? "+wgrad" : "",
             fast_accum ? (fast_accum == 1 ? "+fast1" : "+fast2") : "");
    ref_matmul(ref, abs_sum, q_inp.data(), q_w.data(), bias.data(), N, OC, IC, IC, 1, IC, 1);
    snprintf(name, sizeof(name), "%s linear %dx%d->%d out", mode, N, IC, OC);
    check_bound(name, out, ref, abs_sum, lowp_accumulation_bound(IC, fast_accum >= 1));
    ref_matmul(ref, abs_sum, q_dout.data(), q_w.data(), nullptr, N, IC, OC, OC, 1, 1, IC);  // dinp = dout @ W
    snprintf(name, sizeof(name), "%s linear %dx%d->%d dinp", mode, N, IC, OC);
    check_bound(name, dinp, ref, abs_sum, lowp_accumulation_bound(OC, fast_accum >= 2));
    ref_matmul(ref, abs_sum, wg_dout, wg_inp, nullptr, OC, IC, N, 1, OC, 1, IC);  // dW = dout^T @ inp
    for (size_t i = 0; i < ref.size(); i++) ref[i] += dw0[i], abs_sum[i] += fabs(dw0[i]);  // accumulated onto dW0
    snprintf(name, sizeof(name), "%s linear %dx%d->%d dweight", mode, N, IC, OC);
    check_bound(name, dw, ref, abs_sum, lowp_accumulation_bound(N, fp8_wgrad && fast_accum >= 2));
    std::vector<double> db_ref(OC), db_abs(OC);
    for (int o = 0; o < OC; o++) {
        db_ref[o] = db0[o], db_abs[o] = fabs(db0[o]);
        for (int n = 0; n < N; n++) db_ref[o] += dout[(size_t)n * OC + o], db_abs[o] += fabs(dout[(size_t)n * OC + o]);
    }
    snprintf(name, sizeof(name), "%s linear %dx%d->%d dbias", mode, N, IC, OC);
    check_bound(name, db, db_ref, db_abs, lowp_accumulation_bound(N, false));  // fp32 column sums
    for (void *p : {(void *)d_inp, (void *)d_w, (void *)d_bias, (void *)d_dout, (void *)d_out, (void *)d_dinp,
                    (void *)d_dw, (void *)d_db, (void *)d_scratch, (void *)d_inp_t})
        cudaCheck(cudaFree(p));
    lowp_free(&lp);
}

// 6b. The whole model with low-precision block linears against the CPU twin, from the same
// weights. Unlike 6a the operands entering quantization are not identical: the GPU's activations
// and gradients are bf16 (relative differences of a few 2^-9 from the CPU's fp32, 5e-2 for the
// backward's gradients as in check 2), so an element near a rounding boundary of the low-precision
// grid lands on the neighbouring code on one side. A fraction p ~ (difference / code spacing) of
// the elements move by one spacing s; over a dot product that adds a relative error of about
// sqrt(p) s: E4M3 (s ~ 2^-3.5 relative, p ~ 10%) and int8 rows (s ~ 1-2% of the row's amax) give
// ~3% on forward outputs; E5M2 (s ~ 2^-2.5, p ~ 30%) ~10% on activation gradients. The logits
// compound that over the L blocks: measured on an H100, rel L2 6.2e-2 (small) and 7.4e-2 (d12),
// worst 6.6e-2 and 8.9e-2. Hence, on top of check 1-2's tolerances: logits l2 1.5e-1 / worst
// 3e-1, loss 3e-2 absolute, gradients l2
// 1.5e-1 / worst 3e-1 of the tensor's largest, norm 1e-1 relative. A transposed operand, a wrong
// scale (a factor 2 at least: scales are powers of two) or a missing dequantization gives errors
// of order 1.
// amax_history > 0: FP8 delayed scaling on both sides; the sequence below (an evaluation forward,
// a training micro-step, an update, an evaluation forward) then scales the last forward from the
// training step's recorded amaxes, on the GPU in lowp_quantize and on the CPU in amax_history.c.
// fast_accum > 0 (--fp8-fast-accum): the CPU twin accumulates in fp32 as always, and the
// tolerances stay: fast accumulation's error is expected well below the code flips' (its worst
// case, check 6a's bound, is 1.2e-2 of the sum of |terms| at K = 3072; typical sums lose far less
// than the worst case); a failure here says otherwise. On an H200 (2026-11-27, d12; tiny and small
// skip the FP8 weight gradient) it passed with logits rel L2 7.36e-2, promoted 7.37e-2.
static void check_lowp_model(const TestCase &tc, const AdamWConfig &hp, const std::vector<float> &weights,
                             matmul_precision precision, int fp8_wgrad, int amax_history, int fast_accum) {
    const GPT2Config *cfg = &tc.cfg;
    const int B = tc.B, T = tc.T, N = B * T, V = cfg->vocab_size, Vp = cfg->padded_vocab_size;
    const size_t P = weights.size();
    char what[64];
    snprintf(what, sizeof(what), "%s%s%s%s model", matmul_precision_name(precision), fp8_wgrad ? "+wgrad" : "",
             amax_history ? "+delayed" : "", fast_accum ? "+fast" : "");
    GPUModelOptions opt = test_options(precision);
    opt.fp8_wgrad = fp8_wgrad;
    opt.fp8_fast_accum = fast_accum;
    opt.amax_history = amax_history;
    GPUModel g;
    gpu_model_alloc(&g, cfg, B, T, &hp, TEST_SEED, &opt);
    gpu_set_weights(&g, weights.data());
    std::vector<int> in(N), tg(N);

    {
        CpuModel *cpu = cpu_model_new(cfg, B, T);
        memcpy(cpu_model_params(cpu), weights.data(), P * sizeof(float));
        cpu_model_set_matmul(cpu, precision, fp8_wgrad, amax_history);
        char label[96];
        make_batch(in.data(), tg.data(), N, V, 0);
        gpu_forward(&g, in.data(), tg.data(), B, T, 0, 1.0f);
        cpu_model_forward_eval(cpu, in.data(), tg.data());
        const std::vector<float> logits = download_logits(&g, N);
        snprintf(label, sizeof(label), "%s logits", what);
        compare(label, logits.data(), cpu_model_logits(cpu), (size_t)N, (size_t)V, (size_t)Vp, 1.5e-1, 3e-1);

        gpu_zero_grads(&g, 1);
        const float gpu_loss = gpu_forward_backward(&g, in.data(), tg.data(), 1.0f);
        cpu_model_zero_grads(cpu);
        const float cpu_loss = cpu_model_forward_backward(cpu, in.data(), tg.data(), 1.0f);
        check(fabsf(gpu_loss - cpu_loss) <= 3e-2f, "%-14s loss gpu %.6f cpu %.6f (tol 3e-2 absolute)", what, gpu_loss,
              cpu_loss);
        std::vector<float> grads(P);
        cudaCheck(cudaMemcpy(grads.data(), g.grads, P * sizeof(float), cudaMemcpyDeviceToHost));
        snprintf(label, sizeof(label), "%s d", what);
        compare_grads(label, cfg, grads.data(), cpu_model_grads(cpu), 1.5e-1, 3e-1);
        const double gpu_norm = gpu_grad_norm(&g), cpu_norm = cpu_model_grad_norm(cpu);
        check(fabs(gpu_norm - cpu_norm) <= 1e-1 * cpu_norm, "%-14s grad norm gpu %.6f cpu %.6f (tol 1e-1 relative)",
              what, gpu_norm, cpu_norm);
        // One update each, then the loss of the next batch.
        gpu_update(&g, 1, tc.lr, grad_clip_scale(hp.grad_clip, gpu_norm));
        cpu_model_update(cpu, &hp, 1, tc.lr, grad_clip_scale(hp.grad_clip, cpu_norm));
        make_batch(in.data(), tg.data(), N, V, 1);
        const float gpu_next = gpu_forward(&g, in.data(), tg.data(), B, T, 0, 1.0f);
        const float cpu_next = cpu_model_forward_eval(cpu, in.data(), tg.data());
        check(fabsf(gpu_next - cpu_next) <= 3e-2f, "%-14s after one step: loss gpu %.6f cpu %.6f (tol 3e-2 absolute)",
              what, gpu_next, cpu_next);
        cpu_model_free(cpu);
    }

    // Determinism: amaxes combine with an order-free integer max, the GEMMs are deterministic.
    check(three_steps_twice_identical(&g, weights.data(), tc.lr), "%-14s determinism: two 3-step runs give identical bits",
          what);
    gpu_model_free(&g);
}

// 6c. FP8 delayed scaling (history of 4 micro-steps) beside current scaling over 10 steps: the
// first step has no history and scales from its current amaxes, so it is bit-identical; later
// scales differ only where an amax crossed a power of two between steps, which moves the loss by
// a few 1e-3 (3e-2 allowed); the loss falls; a rerun gives identical bits.
static void check_delayed_scaling(const TestCase &tc, const AdamWConfig &hp, const std::vector<float> &weights) {
    const GPUModelOptions current_scaling = test_options(MATMUL_FP8);
    GPUModelOptions delayed_scaling = current_scaling;
    delayed_scaling.amax_history = 4;
    GPUModel cur, del;
    gpu_model_alloc(&cur, &tc.cfg, tc.B, tc.T, &hp, TEST_SEED, &current_scaling);
    gpu_model_alloc(&del, &tc.cfg, tc.B, tc.T, &hp, TEST_SEED, &delayed_scaling);
    gpu_reset(&cur, weights.data());
    const std::vector<float> current = gpu_steps(&cur, 1, 10, tc.lr);
    gpu_reset(&del, weights.data());
    const std::vector<float> delayed = gpu_steps(&del, 1, 10, tc.lr);
    float max_diff = 0.0f;  // fmaxf drops a NaN: `finite` catches it
    bool finite = true;
    for (int t = 0; t < 10; t++) {
        max_diff = fmaxf(max_diff, fabsf(delayed[t] - current[t]));
        finite = finite && isfinite(delayed[t]);
    }
    check(delayed[0] == current[0], "fp8 delayed    step 1 (no history yet) equals current scaling: %.6f %.6f",
          delayed[0], current[0]);
    check(finite && max_diff <= 3e-2f && delayed[9] < delayed[0],
          "fp8 delayed    10 steps: max |delayed - current| %.2e (tol 3e-2), loss %.4f -> %.4f", max_diff, delayed[0],
          delayed[9]);
    gpu_reset(&del, weights.data());  // and its amax history
    const std::vector<float> again = gpu_steps(&del, 1, 10, tc.lr);
    check(!memcmp(again.data(), delayed.data(), delayed.size() * sizeof(float)),
          "fp8 delayed    a rerun from an empty history gives identical losses");
    gpu_model_free(&cur);
    gpu_model_free(&del);
}

// 6d. The FP8 scales themselves, bit for bit. One linear over 7 training micro-steps whose input,
// weight and output gradient are fixed tensors times powers of two (exact in bf16) that go up and
// down, with an evaluation forward after step 3. Both sides quantize the same bf16 operands, so
// after each pass the device's scale, its inverse and (delayed scaling) the amax ring of the
// activation, the weight and the gradient must equal the CPU twin's: quant_scale() of llmc/quant.h
// (E4M3 for the activation and the weight, E5M2 for the gradient) of llmc/amax_history.c's amax.
// H = 0: current scaling (the cast computes the scale from the amax kernel's result); H = 3:
// delayed scaling (lowp_begin_forward sets every scale from the ring and clears the slot that
// this step's casts fill; an amax smaller than the one it overwrites shows a slot not cleared).
// Each training step's input gradient must also be the product of this step's dequantized dout and
// W (fp64, within lowp_accumulation_bound): the backward multiplies by the W^T codes that this
// step's forward cast, and codes kept from an earlier step differ (delayed scaling: the scale lags
// the weight's factor).
// Kept weight codes (delayed scaling): where a step's weight is the previous training step's, its
// forward says so (lowp_begin_forward's same_weights). Step 5 (after the evaluation) has step 3's
// weight and scale: its cast must be skipped (the weight's kept flag set; the weight in memory is
// NaN then, so a cast that runs anyway fails the scales, the ring and the input gradient) and
// still give the same ring and input gradient; step 7 has step 6's weight but a larger scale (the
// history now holds the 4x weight's amax): it must cast again.
static void check_fp8_scales(Matmul *mm, int N, int IC, int OC, int H) {
    LowpMatmul lp;
    lowp_init(&lp, MATMUL_FP8, 0, 0, H, 1, IC > OC ? IC : OC, N);
    AmaxHistory host;
    amax_history_init(&host, lp.num_operands, H);
    const std::vector<float> x = random_bf16((size_t)N * IC, 720 + H, 1.0f), w = random_bf16((size_t)OC * IC, 721 + H, 0.02f),
                             dout = random_bf16((size_t)N * OC, 722 + H, 1e-3f);
    const float base_amax[QUANT_ROLES] = {quant_amax(x.data(), x.size()), quant_amax(w.data(), w.size()),
                                          quant_amax(dout.data(), dout.size())};
    const float qmax[QUANT_ROLES] = {FP8_E4M3_MAX, FP8_E4M3_MAX, FP8_E5M2_MAX};
    // Factors of (activation, weight, gradient) per micro-step; the last row is the evaluation's.
    const float factor[8][QUANT_ROLES] = {{1, 1, 1},          {4, 1, 0.03125f},   {0.0625f, 2, 8}, {0.0625f, 0.125f, 1},
                                          {2, 0.125f, 0.25f}, {0.5f, 0.125f, 64}, {8, 4, 1},       {0.25f, 4, 1}};
    bf16 *d_x, *d_w, *d_dout, *d_out, *d_dinp;
    float *d_dw, *d_db, *d_scratch;
    cudaCheck(cudaMalloc(&d_x, x.size() * sizeof(bf16)));
    cudaCheck(cudaMalloc(&d_w, w.size() * sizeof(bf16)));
    cudaCheck(cudaMalloc(&d_dout, dout.size() * sizeof(bf16)));
    cudaCheck(cudaMalloc(&d_out, (size_t)N * OC * sizeof(bf16)));
    cudaCheck(cudaMalloc(&d_dinp, (size_t)N * IC * sizeof(bf16)));
    cudaCheck(cudaMalloc(&d_dw, w.size() * sizeof(float)));
    cudaCheck(cudaMalloc(&d_db, (size_t)OC * sizeof(float)));
    cudaCheck(cudaMalloc(&d_scratch, colsum_scratch_floats(N, OC) * sizeof(float)));
    auto upload_scaled = [](bf16 *d, const std::vector<float> &v, float f) {
        std::vector<float> scaled(v.size());
        for (size_t i = 0; i < v.size(); i++) scaled[i] = v[i] * f;  // a power of two: exact
        bf16 *tmp = upload_bf16(scaled);
        cudaCheck(cudaMemcpy(d, tmp, v.size() * sizeof(bf16), cudaMemcpyDeviceToDevice));
        cudaCheck(cudaFree(tmp));
    };
    int bad_scales = 0, bad_history = 0, bad_kept = 0, kept_steps = 0;
    size_t bad_dinp = 0;            // input-gradient elements outside the bound, over the training steps
    int last_train = -1;            // the previous training step
    float last_weight_scale = NAN;  // its weight's scale (NaN: current scaling)
    // The device's scales of `roles` (a bit mask) against the twin's, the ring against the twin's.
    auto compare_state = [&](const float *expected_scale, int roles) {
        std::vector<float> scales((size_t)4 * lp.num_operands);
        cudaCheck(cudaMemcpy(scales.data(), lp.scales, scales.size() * sizeof(float), cudaMemcpyDeviceToHost));
        for (int r = 0; r < QUANT_ROLES; r++) {
            if (!(roles >> r & 1)) continue;
            const int op = quant_operand_index(0, LINEAR_FC, (quant_operand)r);
            const float got = *lowp_scale_at(scales.data(), op), got_inv = *lowp_inv_scale_at(scales.data(), op);
            bad_scales += memcmp(&got, &expected_scale[r], 4) != 0 || got_inv != 1.0f / expected_scale[r];
        }
        if (H == 0) return;
        std::vector<float> ring((size_t)lp.num_operands * H);
        cudaCheck(cudaMemcpy(ring.data(), lp.history, ring.size() * sizeof(float), cudaMemcpyDeviceToHost));
        bad_history += memcmp(ring.data(), host.values, ring.size() * sizeof(float)) != 0;
    };
    const int op_w = quant_operand_index(0, LINEAR_FC, QUANT_WEIGHT);
    for (int step = 0; step < 8; step++) {
        const bool eval = step == 4;  // after training micro-steps 0-3
        const bool same_weights =
            !eval && last_train >= 0 && factor[step][QUANT_WEIGHT] == factor[last_train][QUANT_WEIGHT];
        float expected[QUANT_ROLES];
        for (int r = 0; r < QUANT_ROLES; r++) {
            const int op = quant_operand_index(0, LINEAR_FC, (quant_operand)r);
            const float amax = base_amax[r] * factor[step][r];
            expected[r] = quant_scale(H ? amax_history_amax(&host, op, amax) : amax, qmax[r], QUANT_SCALE_POW2);
            if (H && !eval) amax_history_record(&host, op, amax);
        }
        const bool expect_kept = H && same_weights && expected[QUANT_WEIGHT] == last_weight_scale;
        upload_scaled(d_x, x, factor[step][QUANT_ACTIVATION]);
        upload_scaled(d_dout, dout, factor[step][QUANT_GRADIENT]);
        if (expect_kept)  // NaN: a cast that reads the weight instead of keeping its codes fails everything
            cudaCheck(cudaMemset(d_w, 0xFF, w.size() * sizeof(bf16)));
        else
            upload_scaled(d_w, w, factor[step][QUANT_WEIGHT]);
        lowp_begin_forward(&lp, !eval, same_weights, 0);
        lowp_linear_forward(&lp, mm, d_out, nullptr, d_x, nullptr, d_w, nullptr, N, IC, OC, 0, LINEAR_FC, !eval, 0);
        if (!eval) {
            lowp_linear_backward(&lp, mm, d_dinp, d_dw, d_db, d_scratch, d_dout, d_x, nullptr, d_w, nullptr, N, IC, OC,
                                 0, LINEAR_FC, false, 0);
            lowp_step_done(&lp);
            if (H) amax_history_step_done(&host);
        }
        cudaCheck(cudaDeviceSynchronize());
        compare_state(expected, eval ? 3 : 7);
        if (eval) continue;
        if (H) {  // the weight's cast skipped exactly where its codes could be kept
            float kept;
            cudaCheck(cudaMemcpy(&kept, lowp_codes_kept_at(lp.scales, op_w), sizeof(float), cudaMemcpyDeviceToHost));
            bad_kept += (kept != 0.0f) != expect_kept;
            kept_steps += expect_kept;
            last_weight_scale = last_train < 0 ? NAN : expected[QUANT_WEIGHT];  // the first: current scaling
        }
        last_train = step;
        std::vector<float> q_dout(dout.size()), q_w(w.size());
        for (size_t i = 0; i < dout.size(); i++) q_dout[i] = dout[i] * factor[step][QUANT_GRADIENT];
        for (size_t i = 0; i < w.size(); i++) q_w[i] = w[i] * factor[step][QUANT_WEIGHT];
        fp8_fake_quantize(q_dout.data(), q_dout.data(), q_dout.size(), expected[QUANT_GRADIENT], FP8_E5M2);
        fp8_fake_quantize(q_w.data(), q_w.data(), q_w.size(), expected[QUANT_WEIGHT], FP8_E4M3);
        std::vector<double> ref, abs_sum;
        ref_matmul(ref, abs_sum, q_dout.data(), q_w.data(), nullptr, N, IC, OC, OC, 1, 1, IC);  // dinp = dout @ W
        const std::vector<float> dinp = download_bf16(d_dinp, (size_t)N * IC);
        for (size_t i = 0; i < dinp.size(); i++) {
            const double err = fabs((double)dinp[i] - ref[i]);
            bad_dinp += !(err <= ldexp(fabs(ref[i]), -8) + lowp_accumulation_bound(OC, false) * abs_sum[i]);
        }
    }
    check(bad_scales == 0 && bad_history == 0 && bad_dinp == 0 && bad_kept == 0 && kept_steps == (H ? 1 : 0),
          "fp8 scales     %s, 7 micro-steps + 1 evaluation: scales and inverses == CPU twin's (%d differ)%s; input "
          "gradients from this step's W^T (%zu elements outside the bound); weight codes kept in %d step(s) (%d "
          "flags wrong)",
          H ? "delayed (H = 3)" : "current", bad_scales, H ? (bad_history ? ", amax ring differs" : ", amax ring ==") : "",
          bad_dinp, kept_steps, bad_kept);
    for (bf16 *p : {d_x, d_w, d_dout, d_out, d_dinp}) cudaCheck(cudaFree(p));
    for (float *p : {d_dw, d_db, d_scratch}) cudaCheck(cudaFree(p));
    amax_history_free(&host);
    lowp_free(&lp);
}

// 6e. The producers' codes and the kept weight codes. In an FP8 training step with delayed scaling
// past its first micro-step the LayerNorms and the GELU write the block linears' FP8 operands
// themselves (train_gpt.cu's producer_output; with FP8 weight gradients also the GELU's backward
// the fc layer's gradient and, where T % 64 == 0, the attention's backward the qkv layer's), and a
// micro-step after the first of an optimizer step keeps the weight codes of the one before where
// the weight's scale has not changed (lowp_begin_forward). With separate casts of the bf16 outputs
// and every weight cast in every micro-step instead (GPUModelOptions.separate_casts), 4 steps of
// 2 micro-steps each, with an evaluation forward after each step, must give identical losses,
// weights, master weights and moments. With FP8 weight gradients too, at B 1 and T 64 where the
// case's T is not a multiple of 64 (B*T a multiple of 16 for cuBLASLt, whole 64-row tiles for the
// attention's codes): at each --gelu-fusion level (at 1 and 2 the fc projection's epilogue applies
// gelu', and no GELU backward writes codes; at 2 the fc epilogue writes the GELU). The last
// micro-step must have kept the codes of some weights (their flags; separate casts: none). int8
// (which keeps every weight's codes in such micro-steps, its scales being the weights' own) the same.
static void check_producer_codes(const TestCase &tc, const AdamWConfig &hp, const std::vector<float> &weights) {
    const struct {
        matmul_precision precision;
        int fp8_wgrad, gelu_fusion;
    } runs[] = {{MATMUL_FP8, 0, GELU_UNFUSED},
                {MATMUL_FP8, 1, GELU_UNFUSED},
                {MATMUL_FP8, 1, GELU_FUSED_BACKWARD},
                {MATMUL_FP8, 1, GELU_FUSED_BOTH},
                {MATMUL_INT8, 0, GELU_UNFUSED}};
    for (const auto &run : runs) {
        const bool own_shape = run.fp8_wgrad && tc.T % 64;
        const int B = own_shape ? 1 : tc.B, T = own_shape ? 64 : tc.T, N = B * T;
        if (T > tc.cfg.max_seq_len) die("check 6e: T = %d past the case's maxT %d", T, tc.cfg.max_seq_len);
        std::vector<int> in(N), tg(N);
        const bool fp8 = run.precision == MATMUL_FP8;
        Snapshot snap[2];
        std::vector<float> losses[2];
        int kept[2] = {0, 0}, weight_ops = 0;
        for (int separate = 0; separate < 2; separate++) {
            GPUModelOptions opt = test_options(run.precision);
            opt.amax_history = fp8 ? 4 : 0;
            opt.fp8_wgrad = run.fp8_wgrad;
            opt.gelu_fusion = run.gelu_fusion;
            opt.separate_casts = separate;
            GPUModel g;
            gpu_model_alloc(&g, &tc.cfg, B, T, &hp, TEST_SEED, &opt);
            gpu_reset(&g, weights.data());
            for (int t = 1; t <= 4; t++) {
                gpu_zero_grads(&g, 2);
                for (int micro = 0; micro < 2; micro++) {
                    make_batch(in.data(), tg.data(), N, tc.cfg.vocab_size, (uint64_t)(2 * t + micro));
                    losses[separate].push_back(gpu_forward_backward(&g, in.data(), tg.data(), 0.5f));
                }
                const double norm = gpu_grad_norm(&g);
                gpu_update(&g, t, tc.lr, grad_clip_scale(g.hp.grad_clip, norm));
                make_batch(in.data(), tg.data(), N, tc.cfg.vocab_size, (uint64_t)(100 + t));
                losses[separate].push_back(gpu_forward_loss(&g, in.data(), tg.data()));
            }
            snap[separate] = snapshot(&g);
            std::vector<float> scales((size_t)4 * g.lp.num_operands);
            cudaCheck(cudaMemcpy(scales.data(), g.lp.scales, scales.size() * sizeof(float), cudaMemcpyDeviceToHost));
            weight_ops = 0;
            for (int op = QUANT_WEIGHT; op < g.lp.num_operands; op += QUANT_ROLES, weight_ops++)
                kept[separate] += fp8 && *lowp_codes_kept_at(scales.data(), op) != 0.0f;
            gpu_model_free(&g);
        }
        char kept_line[64] = "", shape[96];
        if (fp8)
            snprintf(kept_line, sizeof(kept_line), "; last micro-step kept %d of %d weights' codes", kept[0], weight_ops);
        snprintf(shape, sizeof(shape), " (B %d T %d, --gelu-fusion %d, --attention %s)", B, T, run.gelu_fusion,
                 attention_kernel_names[g_attention]);
        check(same_bits(snap[0], snap[1]) && losses[0].size() == losses[1].size() &&
                  !memcmp(losses[0].data(), losses[1].data(), losses[0].size() * sizeof(float)) &&
                  (!fp8 || (kept[0] > 0 && kept[1] == 0)),
              "%s%s%s kept weight codes == separate casts%s: 4 steps of 2 micro-steps and an evaluation each, "
              "identical losses, weights, moments%s",
              fp8 ? "fp8 delayed" : "int8", run.fp8_wgrad ? "+wgrad" : "", fp8 ? " producers' codes and" : "", shape,
              kept_line);
    }
}

// 6f. Kept weight codes, one linear: three training micro-steps of the same operands, the second
// and the third declared to have the previous one's weights (lowp_begin_forward's same_weights),
// the third with the weight overwritten by NaN. int8 keeps the codes from the second micro-step
// on, FP8 with delayed scaling (H = 2) from the third (the first scales from its current amax,
// which matches no kept scale): the third's output and input gradient must equal the second's bit
// for bit, and so must its replay (lowp_linear_forward_again) the output, where a cast reading the
// NaN weight would give NaN.
// Codes are kept only where a finished micro-step (lowp_step_done) cast them, whatever the caller
// declares. The first micro-step is declared to have the previous one's weights too, with none
// before it: it must cast, and equal a fresh LowpMatmul's first micro-step that is not declared
// so. A fourth training pass, of -W, ends before its forward (no cast, no lowp_step_done); a fifth
// declared to have its weights must cast -W, whose amax and scale are W's: its input gradient is
// the third's with every sign flipped (the codes of -W are W's negated, and dout @ -W =
// -(dout @ W) in any order of summation), where codes kept from the third give the same signs.
static void check_kept_weight_codes(Matmul *mm, int N, int IC, int OC, matmul_precision precision) {
    const int H = precision == MATMUL_FP8 ? 2 : 0, seed = 740 + 10 * (int)precision;
    LowpMatmul lp, fresh;
    lowp_init(&lp, precision, 0, 0, H, 1, IC > OC ? IC : OC, N);
    lowp_init(&fresh, precision, 0, 0, H, 1, IC > OC ? IC : OC, N);
    const std::vector<float> x = random_bf16((size_t)N * IC, seed, 1.0f),
                             w = random_bf16((size_t)OC * IC, seed + 1, 0.02f),
                             dout = random_bf16((size_t)N * OC, seed + 2, 1e-3f), bias = random_bf16(OC, seed + 3, 0.1f);
    std::vector<float> minus_w(w.size());
    for (size_t i = 0; i < w.size(); i++) minus_w[i] = -w[i];
    bf16 *d_x = upload_bf16(x), *d_w = upload_bf16(w), *d_minus_w = upload_bf16(minus_w), *d_dout = upload_bf16(dout),
         *d_bias = upload_bf16(bias);
    bf16 *d_out, *d_again, *d_dinp;
    float *d_dw, *d_db, *d_scratch;
    cudaCheck(cudaMalloc(&d_out, (size_t)N * OC * sizeof(bf16)));
    cudaCheck(cudaMalloc(&d_again, (size_t)N * OC * sizeof(bf16)));
    cudaCheck(cudaMalloc(&d_dinp, (size_t)N * IC * sizeof(bf16)));
    cudaCheck(cudaMalloc(&d_dw, w.size() * sizeof(float)));
    cudaCheck(cudaMalloc(&d_db, (size_t)OC * sizeof(float)));
    cudaCheck(cudaMalloc(&d_scratch, colsum_scratch_floats(N, OC) * sizeof(float)));
    auto bits = [](const bf16 *d, size_t n) {
        std::vector<uint16_t> h(n);
        cudaCheck(cudaMemcpy(h.data(), d, n * sizeof(uint16_t), cudaMemcpyDeviceToHost));
        return h;
    };
    // One training micro-step of weight d_weight; its output and input gradient bits.
    auto micro_step = [&](LowpMatmul *m, const bf16 *d_weight, bool same_weights, bool replay,
                          std::vector<uint16_t> &out, std::vector<uint16_t> &dinp) {
        lowp_begin_forward(m, true, same_weights, 0);
        lowp_linear_forward(m, mm, d_out, nullptr, d_x, nullptr, d_weight, d_bias, N, IC, OC, 0, LINEAR_FC, true, 0);
        if (replay)
            lowp_linear_forward_again(m, mm, d_again, nullptr, d_x, d_weight, d_bias, N, IC, OC, 0, LINEAR_FC, 0);
        lowp_linear_backward(m, mm, d_dinp, d_dw, d_db, d_scratch, d_dout, d_x, nullptr, d_weight, nullptr, N, IC, OC,
                             0, LINEAR_FC, false, 0);
        lowp_step_done(m);
        out = bits(d_out, (size_t)N * OC);
        dinp = bits(d_dinp, (size_t)N * IC);
    };
    std::vector<uint16_t> out[5], dinp[5], fresh_out, fresh_dinp, again;
    micro_step(&fresh, d_w, false, false, fresh_out, fresh_dinp);
    for (int step = 0; step < 3; step++) {
        if (step == 2) cudaCheck(cudaMemset(d_w, 0xFF, w.size() * sizeof(bf16)));
        micro_step(&lp, d_w, true, step == 2, out[step], dinp[step]);
    }
    again = bits(d_again, (size_t)N * OC);
    lowp_begin_forward(&lp, true, false, 0);  // the fourth pass, of -W, which casts nothing
    micro_step(&lp, d_minus_w, true, false, out[4], dinp[4]);
    size_t same_signs = 0;  // the fifth's input gradient against the third's negated
    for (size_t i = 0; i < dinp[4].size(); i++) same_signs += dinp[4][i] != (dinp[2][i] ^ 0x8000u);
    check(out[0] == fresh_out && dinp[0] == fresh_dinp && out[2] == out[1] && dinp[2] == dinp[1] && again == out[2] &&
              same_signs == 0,
          "%-5s kept weight codes, linear %dx%d->%d: the first micro-step casts (a fresh one's bits); a third of the "
          "same weights (NaN in memory) and its replay give the second's output and input gradient bits; after a "
          "pass that cast nothing, -W is cast (%zu input-gradient elements not the third's negated)",
          matmul_precision_name(precision), N, IC, OC, same_signs);
    for (bf16 *p : {d_x, d_w, d_minus_w, d_dout, d_bias, d_out, d_again, d_dinp}) cudaCheck(cudaFree(p));
    for (float *p : {d_dw, d_db, d_scratch}) cudaCheck(cudaFree(p));
    lowp_free(&fresh);
    lowp_free(&lp);
}

// ---------------------------------------------------------------------------------------------
// 7. Selective recomputation.

// NaN bits (0xFFFF in bf16, 0xFFFFFFFF in fp32) over the recompute scratch and the output head's
// (lnf, one chunk of logits), between a training forward and its backward: whatever the backward
// reads there without recomputing it first makes the gradients NaN.
static void poison_scratch(GPUModel *g) {
    if (g->recompute_scratch)
        cudaCheck(cudaMemsetAsync(g->recompute_scratch, 0xFF, g->recompute_scratch_bytes, g->stream));
    const size_t N = (size_t)g->B * g->T;
    cudaCheck(cudaMemsetAsync(g->lnf, 0xFF, N * g->cfg.channels * sizeof(bf16), g->stream));
    cudaCheck(cudaMemsetAsync(g->logits, 0xFF, (size_t)g->head_rows * g->cfg.padded_vocab_size * sizeof(bf16),
                              g->stream));
}

// lowp_linear_forward_again must cast with the scales the forward stored. In check_recompute's
// whole model an amax hardly moves over a few steps and scales are powers of two, so a replay
// that chose its scales anew would seldom change a bit there. Here, with delayed scaling, the
// second micro-step's input is 4x the first's: its forward scales from the first's amax (and
// saturates), while a scale chosen again from the history, which now holds this step's amax,
// would be 4x smaller. The replay must give the forward's output bits.
static void check_forward_again(int N, int IC, int OC) {
    Matmul mm;
    matmul_init(&mm);
    LowpMatmul lp;
    lowp_init(&lp, MATMUL_FP8, 0, 0, 2, 1, IC > OC ? IC : OC, N);
    const std::vector<float> x = random_bf16((size_t)N * IC, 700, 1.0f), w = random_bf16((size_t)OC * IC, 701, 0.02f);
    std::vector<float> x4(x.size());
    for (size_t i = 0; i < x.size(); i++) x4[i] = 4.0f * x[i];  // exact in bf16
    bf16 *d_x = upload_bf16(x), *d_x4 = upload_bf16(x4), *d_w = upload_bf16(w), *d_out, *d_again;
    cudaCheck(cudaMalloc(&d_out, (size_t)N * OC * sizeof(bf16)));
    cudaCheck(cudaMalloc(&d_again, (size_t)N * OC * sizeof(bf16)));
    lowp_begin_forward(&lp, true, false, 0);
    lowp_linear_forward(&lp, &mm, d_out, nullptr, d_x, nullptr, d_w, nullptr, N, IC, OC, 0, LINEAR_FC, true, 0);
    lowp_step_done(&lp);
    lowp_begin_forward(&lp, true, false, 0);
    lowp_linear_forward(&lp, &mm, d_out, nullptr, d_x4, nullptr, d_w, nullptr, N, IC, OC, 0, LINEAR_FC, true, 0);
    lowp_linear_forward_again(&lp, &mm, d_again, nullptr, d_x4, d_w, nullptr, N, IC, OC, 0, LINEAR_FC, 0);
    std::vector<uint16_t> out((size_t)N * OC), again(out.size());
    cudaCheck(cudaMemcpy(out.data(), d_out, out.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(again.data(), d_again, again.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    check(out == again, "recompute fp8+delayed forward_again after the amax grew 4x: the forward's bits");
    for (bf16 *p : {d_x, d_x4, d_w, d_out, d_again}) cudaCheck(cudaFree(p));
    lowp_free(&lp);
    matmul_free(&mm);
}

// ---------------------------------------------------------------------------------------------
// 8. GELU in cuBLASLt's epilogues

// --gelu-fusion 0, 1 and 2 against the CPU reference with checks 1 and 2's tolerances (the
// epilogue's GELU is the same tanh approximation in fp32 as gelu.cuh; only roundings differ, and
// the fused input gradient rounds once where the unfused one rounds twice), then determinism.
// fp8: the same against the CPU twin of fp8 (current scaling) with check 6b's tolerances; there
// the epilogues work on an FP8 GEMM's dequantized sums (llmc/matmul_lowp.cuh).
// A wrong aux leading dimension or a GELU applied to the wrong matrix gives errors of order 1.
// The biases (zero at initialization) and the LayerNorm weights are set to random bf16 values
// first, so that an epilogue that drops the bias, or adds it after the aux is written, fails too.
static void check_gelu_fusion(const TestCase &tc, const AdamWConfig &hp, const std::vector<float> &init_weights,
                              matmul_precision precision) {
    const GPT2Config *cfg = &tc.cfg;
    const int B = tc.B, T = tc.T, N = B * T, V = cfg->vocab_size, Vp = cfg->padded_vocab_size;
    const size_t P = init_weights.size();
    std::vector<float> weights = init_weights;
    for (int i = 0; i < gpt2_num_slots(cfg); i++) {
        const ParamSlot slot = gpt2_slot(cfg, i);
        if (param_tensor_is_decayed(slot.kind)) continue;  // the 2-D weights keep their initialization
        const bool ln_weight = slot.kind == PT_LN1W || slot.kind == PT_LN2W || slot.kind == PT_LNFW;
        for (size_t j = 0; j < slot.numel; j++) {
            const float u = rng_uniform(8, (uint64_t)i, j) - 0.5f;  // seed 8 (check 8), one stream per tensor
            weights[slot.offset + j] = bf16_to_float(bf16_from_float(ln_weight ? 1.0f + 0.5f * u : 0.2f * u));
        }
    }
    const bool fp8 = precision == MATMUL_FP8;
    const double logits_l2 = fp8 ? 1.5e-1 : 2e-2, logits_worst = fp8 ? 3e-1 : 5e-2, loss_tol = fp8 ? 3e-2 : 1e-2;
    const double grads_l2 = fp8 ? 1.5e-1 : 5e-2, grads_worst = fp8 ? 3e-1 : 1e-1;
    CpuModel *cpu = cpu_model_new(cfg, B, T);
    memcpy(cpu_model_params(cpu), weights.data(), P * sizeof(float));
    if (fp8) cpu_model_set_matmul(cpu, MATMUL_FP8, 0, 0);
    std::vector<int> in(N), tg(N);
    make_batch(in.data(), tg.data(), N, V, 0);
    const float cpu_loss = cpu_model_forward_eval(cpu, in.data(), tg.data());
    const std::vector<float> cpu_logits(cpu_model_logits(cpu), cpu_model_logits(cpu) + (size_t)N * Vp);
    cpu_model_zero_grads(cpu);
    cpu_model_forward_backward(cpu, in.data(), tg.data(), 1.0f);
    for (int fusion : {GELU_UNFUSED, GELU_FUSED_BACKWARD, GELU_FUSED_BOTH}) {
        GPUModelOptions opt = test_options(precision);
        opt.gelu_fusion = fusion;
        GPUModel g;
        gpu_model_alloc(&g, cfg, B, T, &hp, TEST_SEED, &opt);
        gpu_set_weights(&g, weights.data());
        char label[64];
        const char *name = matmul_precision_name(precision);
        const float loss = gpu_forward(&g, in.data(), tg.data(), B, T, 0, 1.0f);
        const std::vector<float> logits = download_logits(&g, N);
        snprintf(label, sizeof(label), "%s fusion%d logits", name, fusion);
        compare(label, logits.data(), cpu_logits.data(), (size_t)N, (size_t)V, (size_t)Vp, logits_l2, logits_worst);
        check(fabs(loss - cpu_loss) <= loss_tol, "%s fusion%d loss   gpu %.6f cpu %.6f (tol %.0e absolute)", name,
              fusion, loss, cpu_loss, loss_tol);
        gpu_zero_grads(&g, 1);
        gpu_forward_backward(&g, in.data(), tg.data(), 1.0f);
        std::vector<float> grads(P);
        cudaCheck(cudaMemcpy(grads.data(), g.grads, P * sizeof(float), cudaMemcpyDeviceToHost));
        snprintf(label, sizeof(label), "%s fusion%d d", name, fusion);
        compare_grads(label, cfg, grads.data(), cpu_model_grads(cpu), grads_l2, grads_worst);
        check(three_steps_twice_identical(&g, weights.data(), tc.lr),
              "%s fusion%d determinism: two 3-step runs give identical bits", name, fusion);
        gpu_model_free(&g);
    }
    cpu_model_free(cpu);
}

// A model's seeded initialization rounded to bf16: the same numbers in the GPU's bf16 parameters
// and fp32 master weights and in the CPU's fp32 parameters.
static std::vector<float> initial_weights(const GPT2Config *cfg, uint64_t seed) {
    std::vector<float> weights(gpt2_num_params(cfg));
    gpt2_init_params(cfg, weights.data(), seed);
    for (float &w : weights) w = bf16_to_float(bf16_from_float(w));
    return weights;
}

// 2c. The output head's chunk of logits and the backward's buffers (dresidual, dwide, the recompute
// scratch) share one region (layout_activations: the head is done before the backward starts).
// The test cases' logits are smaller than those buffers (Vp < 5C); here the case's vocabulary on a
// model of C 64 (one head of 64) makes them larger (Vp > 5C, all N rows in one chunk, no recompute
// scratch), so that a buffer carved after the region overlaps the logits unless the region ends
// after them. Loss and gradients against the CPU with the tolerances of checks 1 and 2.
// Its inputs are N distinct tokens, so that the encoder's backward has a bucket per position and
// the bucket table uploaded with the tokens is at its longest (3N + 1 ints: its last one is the
// last bucket's token; check 2's batches repeat tokens and leave it unused).
static void check_head_larger_than_backward(const TestCase &tc, const AdamWConfig &hp) {
    GPT2Config cfg = tc.cfg;
    cfg.channels = 64;
    cfg.num_heads = 1;
    const int B = tc.B, T = tc.T, N = B * T, C = cfg.channels, Vp = cfg.padded_vocab_size;
    GPUModel g;
    const GPUModelOptions opt = test_options(MATMUL_BF16);
    gpu_model_alloc(&g, &cfg, B, T, &hp, TEST_SEED, &opt);
    const size_t P = g.num_params;
    const std::vector<float> weights = initial_weights(&cfg, TEST_SEED + 1);
    gpu_set_weights(&g, weights.data());
    CpuModel *cpu = cpu_model_new(&cfg, B, T);
    memcpy(cpu_model_params(cpu), weights.data(), P * sizeof(float));
    std::vector<int> in(N), tg(N);
    make_batch(in.data(), tg.data(), N, cfg.vocab_size, 2);
    const int V = cfg.vocab_size;
    if (N > V) die("check 2c: %d positions and %d tokens: the inputs cannot all differ", N, V);
    std::vector<int> tokens(V);  // the first N of a seeded (Fisher-Yates) shuffle of the vocabulary
    for (int v = 0; v < V; v++) tokens[v] = v;
    for (int v = V - 1; v > 0; v--) std::swap(tokens[v], tokens[rng_bits(2, 0, (uint64_t)v) % (v + 1)]);
    for (int i = 0; i < N; i++) in[i] = tokens[i];
    cpu_model_zero_grads(cpu);
    const float cpu_loss = cpu_model_forward_backward(cpu, in.data(), tg.data(), 1.0f);
    gpu_zero_grads(&g, 1);
    const float loss = gpu_forward_backward(&g, in.data(), tg.data(), 1.0f);
    check(g.head_rows == N && !g.recompute_scratch && (size_t)Vp > 5 * (size_t)C && g.num_buckets == N,
          "logits > backward: %d rows of %d logits, the backward's buffers 5C = %d per row; %d distinct inputs, %d "
          "encoder buckets", g.head_rows, Vp, 5 * C, N, g.num_buckets);
    check(fabsf(loss - cpu_loss) <= 1e-2f, "logits > backward: loss gpu %.6f cpu %.6f (tol 1e-2 absolute)", loss,
          cpu_loss);
    std::vector<float> grads(P);
    cudaCheck(cudaMemcpy(grads.data(), g.grads, P * sizeof(float), cudaMemcpyDeviceToHost));
    compare_grads("logits > backward d", &cfg, grads.data(), cpu_model_grads(cpu), 5e-2, 1e-1);
    cpu_model_free(cpu);
    gpu_model_free(&g);
}

constexpr int RECOMPUTE_STEPS = 5;

typedef struct {
    std::vector<float> losses, grads;  // each step's loss; each step's gradient, concatenated
    Snapshot end;
    size_t kept_bytes;
} RecomputeRun;

// FP8 in check 7 takes FP8 weight gradients where cuBLASLt can (B*T a multiple of 16: d12; not
// tiny or small, whose whole-model runs t_45 covers with train_gptcu in the emulator instead).
static bool recompute_fp8_wgrad(const TestCase &tc, matmul_precision precision) {
    return precision == MATMUL_FP8 && tc.B * tc.T % 16 == 0;
}

// Steps 1-RECOMPUTE_STEPS of gpu_steps (5, as the CPU's `test_model recompute`) from `weights`
// under `policies`, keeping every step's gradient; the output head runs in chunks of T/3 + 1
// rows, as with recomputation in the trainer.
static RecomputeRun recompute_run(const TestCase &tc, const AdamWConfig &hp, const std::vector<float> &weights,
                                  matmul_precision precision, int amax_history, int gelu_fusion, const int *policies) {
    const int N = tc.B * tc.T, steps = RECOMPUTE_STEPS;
    GPUModelOptions opt = test_options(precision);
    opt.amax_history = amax_history;
    opt.fp8_wgrad = recompute_fp8_wgrad(tc, precision);  // the linears' inputs kept as FP8 codes
    opt.gelu_fusion = gelu_fusion;
    opt.policies = policies;
    opt.head_rows = tc.T / 3 + 1;
    GPUModel g;
    gpu_model_alloc(&g, &tc.cfg, tc.B, tc.T, &hp, TEST_SEED, &opt);
    gpu_reset(&g, weights.data());
    const size_t P = g.num_params;
    RecomputeRun run;
    run.kept_bytes = g.kept_bytes;
    run.grads.resize(steps * P);
    std::vector<int> in(N), tg(N);
    for (int t = 1; t <= steps; t++) {
        make_batch(in.data(), tg.data(), N, tc.cfg.vocab_size, (uint64_t)t);
        gpu_zero_grads(&g, 1);
        run.losses.push_back(gpu_forward(&g, in.data(), tg.data(), tc.B, tc.T, 1, 1.0f));  // gpu_forward_backward,
        poison_scratch(&g);                                                               // with the poison between
        gpu_backward(&g, tc.B, tc.T);
        cudaCheck(cudaMemcpy(run.grads.data() + (t - 1) * P, g.grads, P * sizeof(float), cudaMemcpyDeviceToHost));
        const double norm = gpu_grad_norm(&g);
        gpu_update(&g, t, tc.lr, grad_clip_scale(hp.grad_clip, norm));
    }
    run.end = snapshot(&g);
    gpu_model_free(&g);
    return run;
}

// Every level against keeping everything, in `precision` (fp8: with delayed scaling over a
// history of 2 micro-steps, so the later steps take their scales from the history that the forward
// has updated by the time the backward recomputes, and where B*T allows FP8 weight gradients, so
// that the layers keep their linears' inputs as FP8 codes where the policy keeps them and cast
// them again where it recomputes them) and with GELU in the matmul epilogues
// (gelu_fusion, enum GeluFusion, bf16 or fp8). Bit-identical is the requirement: the recompute runs the
// forward's kernels on the same inputs (and FP8 casts with the forward's stored scales), and every
// kernel is deterministic. Under GELU_FUSED_BOTH the levels are those where no layer recomputes the
// GELU alone: such a layer runs its fc forward unfused (gelu_fused_forward), whose rounding differs
// from the fused "none" by design (check 8 measures both against the CPU); that layer's recompute
// is what the GELU_FUSED_BACKWARD run (the default: the fc forward unfused everywhere) checks.
// Why this fails when a recompute is wrong: a step left out (say recompute_steps forgetting
// RC_STEP_GELU under RC_GELU) leaves the backward reading the poisoned scratch, NaN gradients;
// without the poison it would read another layer's values, wrong gradients for every layer
// below the last. A recompute from other inputs changes bits; an FP8 operand scaled anew only
// where its power-of-two scale moved, which check_forward_again forces. A policy that the
// allocation ignored (everything kept) fails the memory check: kept bytes must equal the plan's
// prediction, below none's.
static void check_recompute(const TestCase &tc, const AdamWConfig &hp, const std::vector<float> &weights,
                            matmul_precision precision, int gelu_fusion) {
    const GPT2Config *cfg = &tc.cfg;
    const int L = cfg->num_layers, history = precision == MATMUL_FP8 ? 2 : 0;
    // The mixed list: layer l gets kinds[l % 4], e.g. "0:block,1:attn+gelu,2:mlp".
    const bool fused_forward = gelu_fusion == GELU_FUSED_BOTH;
    const char *const kinds[] = {"block", fused_forward ? "attn" : "attn+gelu", "mlp", "norm"};
    std::string mixed;
    for (int l = 0; l < L; l++) mixed += (l ? "," : "") + std::to_string(l) + ":" + kinds[l % 4];
    std::vector<std::string> levels = {"none", "gelu", "norm", "attn", "mlp", "block", "norm+gelu", "attn+norm",
                                       "attn+mlp+norm", mixed, "budget"};
    // (the budget plan may recompute a GELU alone: at small and d12 it does, at the H100's rates)
    if (fused_forward) levels = {"none", "norm", "attn", "mlp", "block", "attn+norm", "attn+mlp+norm", mixed};
    if (precision != MATMUL_BF16) levels = {"none", "mlp", "block", mixed};  // the levels that rerun block linears
    std::vector<int> policies(L);
    RecomputeRun ref;
    for (const std::string &level : levels) {
        char err[256] = "";
        double budget_bytes = 0.0;
        int p = RC_NONE;
        if (level == "budget") {
            // Half-way between every block recomputed and none, through the trainer's own flag path.
            const RecomputeShape shape = gpu_recompute_shape(cfg, tc.T, false);  // (bf16 only)
            const double tokens = (double)tc.B * tc.T, fixed = gpu_fixed_activation_bytes(cfg, tc.B, tc.T);
            budget_bytes = fixed + L * GPU_ACT_BYTES * tokens *
                                       (recompute_layer_elements(&shape, RC_BLOCK) + recompute_layer_elements(&shape, RC_NONE)) / 2;
            TrainConfig flags;
            memset(&flags, 0, sizeof(flags));
            flags.B = tc.B, flags.T = tc.T, flags.recompute_level = "none", flags.recompute_list = "";
            flags.mem_budget_gib = (float)(budget_bytes / (1 << 30));
            budget_bytes = (double)flags.mem_budget_gib * (1 << 30);  // what the planner sees
            gpu_recompute_plan(&flags, cfg, 0, policies.data());
        } else if (level.find(':') != std::string::npos) {
            if (recompute_parse_list(level.c_str(), L, policies.data(), err, sizeof(err)) != 0) die("%s", err);
        } else {
            if (recompute_parse_policy(level.c_str(), &p) != 0) die("bad policy %s", level.c_str());
            for (int l = 0; l < L; l++) policies[l] = p;
        }
        bool gelu_alone = false;
        for (int l = 0; l < L; l++) gelu_alone = gelu_alone || recomputes_gelu_alone(policies[l]);
        if (fused_forward && gelu_alone)
            die("check 7: level %s recomputes a GELU alone under --gelu-fusion %d", level.c_str(), GELU_FUSED_BOTH);
        const RecomputeRun run = recompute_run(tc, hp, weights, precision, history, gelu_fusion, policies.data());
        const double predicted = gpu_predicted_activation_bytes(
            cfg, tc.B, tc.T, policies.data(), gpu_keeps_input_codes(precision, recompute_fp8_wgrad(tc, precision)));
        if (level == "none") ref = run;
        const bool same = !memcmp(run.losses.data(), ref.losses.data(), run.losses.size() * sizeof(float)) &&
                          !memcmp(run.grads.data(), ref.grads.data(), run.grads.size() * sizeof(float)) &&
                          same_bits(run.end, ref.end);
        const bool memory = (double)run.kept_bytes == predicted && (level == "none" || run.kept_bytes < ref.kept_bytes) &&
                            (level != "budget" || predicted <= budget_bytes);
        check(same && memory, "recompute %s%s%s %-28s %d steps' losses, gradients, weights bit-identical to none: %s; "
              "activations %zu B (predicted %.0f%s)", matmul_precision_name(precision),
              recompute_fp8_wgrad(tc, precision) ? "+delayed+wgrad" : history ? "+delayed" : "",
              gelu_fusion == GELU_FUSED_BACKWARD ? "+gelu-bwd" : fused_forward ? "+gelu-both" : "",
              level.size() > 28 ? "list" : level.c_str(), RECOMPUTE_STEPS, same ? "yes" : "NO", run.kept_bytes, predicted,
              level == "budget" ? ", within the budget" : "");
    }
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    blas_kernels_fix(argv);  // the CPU reference's matmuls
    bool recompute_only = false;
#define TEST_GPTCU_USAGE "usage: %s tiny|small|d12 [recompute] [mma|wgmma|wgmma-fwd|mma-rt2|mma-rdq|wgmma-rdq|wgmma-ws]"
    if (argc < 2) usage_error(TEST_GPTCU_USAGE, argv[0]);
    for (int i = 2; i < argc; i++) {
        int kernel = 0;
        while (kernel < NUM_ATTENTION_KERNELS && strcmp(argv[i], attention_kernel_names[kernel])) kernel++;
        if (!strcmp(argv[i], "recompute")) recompute_only = true;
        else if (kernel < NUM_ATTENTION_KERNELS) g_attention = kernel;
        else usage_error(TEST_GPTCU_USAGE ": unknown argument '%s'", argv[0], argv[i]);
    }
#undef TEST_GPTCU_USAGE
    const TestCase tc = test_case(argv[1]);
    const GPT2Config *cfg = &tc.cfg;
    if (backward_needs_hs64(g_attention) && cfg->channels / cfg->num_heads != 64)
        usage_error("%s: the wgmma attention backward takes head size 64 only (tiny or d12)",
                    attention_kernel_names[g_attention]);
    const int B = tc.B, T = tc.T, N = B * T, V = cfg->vocab_size, Vp = cfg->padded_vocab_size;
    printf("test_gptcu %s: L=%d C=%d NH=%d V=%d Vp=%d maxT=%d, B=%d T=%d, attention kernels %s\n", tc.name,
           cfg->num_layers, cfg->channels, cfg->num_heads, V, Vp, cfg->max_seq_len, B, T,
           attention_kernel_names[g_attention]);
    const AdamWConfig hp = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1.0f};  // beta1, beta2, eps, wd, grad clip, update clip

    const GPUModelOptions opt = test_options(MATMUL_BF16);
    GPUModel g;
    gpu_model_alloc(&g, cfg, B, T, &hp, TEST_SEED, &opt);
    const size_t P = g.num_params;
    const std::vector<float> weights = initial_weights(cfg, TEST_SEED);
    if (recompute_only) {
        gpu_model_free(&g);
        check_forward_again(64, cfg->channels, 4 * cfg->channels);  // fc's shape
        check_recompute(tc, hp, weights, MATMUL_BF16, GELU_FUSED_BACKWARD);  // the default
        check_recompute(tc, hp, weights, MATMUL_BF16, GELU_FUSED_BOTH);
        check_recompute(tc, hp, weights, MATMUL_FP8, GELU_UNFUSED);  // fp8's default
        check_recompute(tc, hp, weights, MATMUL_INT8, GELU_UNFUSED);
        // last: FP8 GEMMs with GELU epilogues have not yet met cuBLASLt on a GPU
        check_recompute(tc, hp, weights, MATMUL_FP8, GELU_FUSED_BACKWARD);
        check_recompute(tc, hp, weights, MATMUL_FP8, GELU_FUSED_BOTH);
        printf("%s recompute: %d check(s) failed\n", tc.name, g_failures);
        return g_failures ? 1 : 0;
    }
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
    const std::vector<float> gpu_logits = download_logits(&g, N);
    const float cpu_loss = cpu_model_forward_eval(cpu, in.data(), tg.data());
    const std::vector<float> cpu_logits(cpu_model_logits(cpu), cpu_model_logits(cpu) + (size_t)N * Vp);
    compare("logits", gpu_logits.data(), cpu_logits.data(), (size_t)N, (size_t)V, (size_t)Vp, 2e-2, 5e-2);
    check(fabsf(gpu_loss - cpu_loss) <= 1e-2f, "loss           gpu %.6f cpu %.6f (tol 1e-2 absolute)", gpu_loss, cpu_loss);

    // The sampling path (B = 1, T = n) gives the logits of the first sequence's position n - 1.
    const int n = T / 2 + 1;
    std::vector<float> next(V);
    gpu_next_token_logits(&g, in.data(), n, next.data());
    compare("next_token", next.data(), cpu_logits.data() + (size_t)(n - 1) * Vp, 1, (size_t)V, 0, 2e-2, 5e-2);

    // 2. Gradients. The backward pass rounds the activation gradients to bf16 at every layer
    // (the weight gradients themselves accumulate in fp32), and the errors of the forward pass
    // enter through the activations it multiplies: l2 5e-2, worst element 1e-1 of the tensor's
    // largest. A wrong index or a missing term gives errors of order 1.
    cpu_model_zero_grads(cpu);
    cpu_model_forward_backward(cpu, in.data(), tg.data(), 1.0f);
    gpu_zero_grads(&g, 1);
    gpu_forward_backward(&g, in.data(), tg.data(), 1.0f);
    std::vector<float> grads(P);
    cudaCheck(cudaMemcpy(grads.data(), g.grads, P * sizeof(float), cudaMemcpyDeviceToHost));
    compare_grads("d", cfg, grads.data(), cpu_model_grads(cpu), 5e-2, 1e-1);
    // The norm is dominated by the largest gradients, which carry the l2 error above at most.
    const double gpu_norm = gpu_grad_norm(&g), cpu_norm = cpu_model_grad_norm(cpu);
    check(fabs(gpu_norm - cpu_norm) <= 5e-2 * cpu_norm, "grad norm      gpu %.6f cpu %.6f (tol 5e-2 relative)", gpu_norm,
          cpu_norm);

    // 2b. The output head in chunks of T/3 + 1 rows (llmc/trainer.h; the last chunk short; the
    // CPU's head ran in one): loss and gradients with the tolerances of 1 and 2, and the sampling
    // path, whose row lies in a later chunk. A wrong chunk offset gives errors of order 1.
    {
        GPUModelOptions chunked = test_options(MATMUL_BF16);
        chunked.head_rows = T / 3 + 1;
        GPUModel h;
        gpu_model_alloc(&h, cfg, B, T, &hp, TEST_SEED, &chunked);
        gpu_set_weights(&h, weights.data());
        gpu_zero_grads(&h, 1);
        const float loss = gpu_forward_backward(&h, in.data(), tg.data(), 1.0f);
        check(fabsf(loss - cpu_loss) <= 1e-2f, "head in chunks of %d rows: loss gpu %.6f cpu %.6f (tol 1e-2 absolute)",
              chunked.head_rows, loss, cpu_loss);
        cudaCheck(cudaMemcpy(grads.data(), h.grads, P * sizeof(float), cudaMemcpyDeviceToHost));
        compare_grads("chunked head d", cfg, grads.data(), cpu_model_grads(cpu), 5e-2, 1e-1);
        gpu_next_token_logits(&h, in.data(), n, next.data());
        compare("chunked head next_token", next.data(), cpu_logits.data() + (size_t)(n - 1) * Vp, 1, (size_t)V, 0,
                2e-2, 5e-2);
        gpu_model_free(&h);
    }
    check_head_larger_than_backward(tc, hp);

    // 3. Ten steps side by side from the same weights. Beyond the differences above, the GPU's
    // weights are bf16 (stochastically rounded from the fp32 master), which moves each loss by
    // about 1e-3 of its value: 2e-2 absolute over the whole run. The loss must also fall.
    gpu_reset(&g, weights.data());
    const std::vector<float> gpu_losses = gpu_steps(&g, 1, 10, tc.lr);
    float max_diff = 0.0f, first_cpu = 0.0f, last_cpu = 0.0f;
    for (int t = 1; t <= 10; t++) {
        make_batch(in.data(), tg.data(), N, V, (uint64_t)t);
        cpu_model_zero_grads(cpu);
        const float loss = cpu_model_forward_backward(cpu, in.data(), tg.data(), 1.0f);
        const double norm = cpu_model_grad_norm(cpu);
        cpu_model_update(cpu, &hp, t, tc.lr, grad_clip_scale(hp.grad_clip, norm));
        printf("     step %2d    loss gpu %.6f cpu %.6f\n", t, gpu_losses[t - 1], loss);
        max_diff = fmaxf(max_diff, fabsf(gpu_losses[t - 1] - loss));
        if (t == 1) first_cpu = loss;
        last_cpu = loss;
    }
    check(max_diff <= 2e-2f, "10 steps       max |loss gpu - loss cpu| %.2e (tol 2e-2)", max_diff);
    check(gpu_losses[9] < gpu_losses[0] && last_cpu < first_cpu, "10 steps       the loss falls (gpu %.4f -> %.4f)",
          gpu_losses[0], gpu_losses[9]);

    // 4. Determinism: no atomics in any floating-point sum, so identical bits.
    check(three_steps_twice_identical(&g, weights.data(), tc.lr),
          "determinism    two 3-step runs give identical weights, master, moments and losses");

    // 5. Resume through the backend's own save and load (the files the trainer writes).
    char dir[] = "/tmp/test_gptcu.XXXXXX";
    if (!mkdtemp(dir)) die("cannot create a temporary directory");
    char model_path[256], state_path[256], err[512];
    snprintf(model_path, sizeof(model_path), "%s/model.bin", dir);
    snprintf(state_path, sizeof(state_path), "%s/state_00000002_00000.bin", dir);  // the trainer's names
    TrainState st;
    memset(&st, 0, sizeof(st));
    st.step = 2;
    st.run_seed = TEST_SEED;  // the run's --seed, as the trainer saves it: the load takes the rounding seed from it
    st.num_ranks = 1;
    st.num_params = (int64_t)P;
    st.end = (int64_t)P;
    outlier_init(&st.loss_outliers);
    outlier_init(&st.norm_outliers);
    gpu_reset(&g, weights.data());
    gpu_steps(&g, 1, 2, tc.lr);
    if (gpu_save(&g, model_path, state_path, &st, err, sizeof(err)) != 0) die("save failed: %s", err);
    const std::vector<float> cont_a = gpu_steps(&g, 3, 4, tc.lr);
    const Snapshot resume_a = snapshot(&g);
    gpu_reset(&g, weights.data());  // scramble the state the load must restore
    TrainState loaded;
    gpu_load(&g, model_path, state_path, &loaded);
    const std::vector<float> cont_b = gpu_steps(&g, 3, 4, tc.lr);
    const Snapshot resume_b = snapshot(&g);
    check(same_bits(resume_a, resume_b) && !memcmp(cont_a.data(), cont_b.data(), cont_a.size() * sizeof(float)) &&
              loaded.step == 2,
          "resume         save at step 2, reload, steps 3-4: identical bits");
    unlink(model_path);
    unlink(state_path);
    rmdir(dir);

    cpu_model_free(cpu);

    // 6. Low-precision block linears. 6a at N = 112 rows (a multiple of 16 for the FP8 weight
    // gradient, not of the GEMM tiles), the shapes of fc (C -> 4C) and fc proj (4C -> C).
    const int C = cfg->channels;
    for (int shape = 0; shape < 2; shape++) {
        const int IC = shape ? 4 * C : C, OC = shape ? C : 4 * C;
        check_lowp_linear(&g.mm, MATMUL_FP8, 0, 0, 112, IC, OC, 100 + 10 * shape);
        check_lowp_linear(&g.mm, MATMUL_FP8, 1, 0, 112, IC, OC, 200 + 10 * shape);
        check_lowp_linear(&g.mm, MATMUL_INT8, 0, 0, 112, IC, OC, 300 + 10 * shape);
        check_lowp_linear(&g.mm, MATMUL_FP8, 1, 2, 112, IC, OC, 400 + 10 * shape);
    }
    check_fp8_scales(&g.mm, 112, C, 4 * C, 0);
    check_fp8_scales(&g.mm, 112, C, 4 * C, 3);
    check_kept_weight_codes(&g.mm, 112, C, 4 * C, MATMUL_FP8);
    check_kept_weight_codes(&g.mm, 112, C, 4 * C, MATMUL_INT8);
    gpu_model_free(&g);
    check_lowp_model(tc, hp, weights, MATMUL_FP8, 0, 0, 0);
    check_lowp_model(tc, hp, weights, MATMUL_FP8, 0, 2, 0);
    if (N % 16 == 0) {  // cuBLASLt FP8 needs K = N % 16 == 0
        check_lowp_model(tc, hp, weights, MATMUL_FP8, 1, 0, 0);
        check_lowp_model(tc, hp, weights, MATMUL_FP8, 1, 2, 2);
    }
    check_lowp_model(tc, hp, weights, MATMUL_INT8, 0, 0, 0);
    check_delayed_scaling(tc, hp, weights);
    check_producer_codes(tc, hp, weights);
    check_gelu_fusion(tc, hp, weights, MATMUL_BF16);
    check_gelu_fusion(tc, hp, weights, MATMUL_FP8);  // last: an FP8 GEMM with a GELU epilogue is new to cuBLASLt here
    printf("%s: %d check(s) failed\n", tc.name, g_failures);
    return g_failures ? 1 : 0;
}
