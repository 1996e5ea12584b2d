// Harness of the fused causal attention in llmc/attention.cuh.
//   build/dev/cuda/attention            checks, then the benchmark
//   build/dev/cuda/attention --check    checks only (for compute-sanitizer memcheck)
//   build/dev/cuda/attention --check-small   the small cases only (for racecheck)
//   build/dev/cuda/attention --check-short   the small cases with T < 512 (for the CPU emulator's
//                                            race build, dev/emu/race.h, where T 1000 takes minutes)
// Checks, per (B, NH, T, HS) case on seeded random inputs: out, lse, dq, dk, dv against an fp64
// CPU reference computed from the same bf16 inputs; no NaN/Inf and every output element written
// (outputs are pre-filled with NaN); identical bits over repeated runs; at HS 64 the other row
// tiles per warp (RT) of the forward and of the backward's kernels and the other streamed tile
// height (BS) give the same bits, and the backward's RT 2 its FP8 codes; the backward with dQ by
// integer reduction (attention_backward_reduce_dq, and at HS 64 its RT and reduction variants):
// dK and dV with the default's bits, dQ the same bits over 2 runs and with either reduction, and
// within the same bound of fp64 (check_reduce_dq). Then a case with
// many heads (several waves of CTAs): every element written, identical bits over 2 runs
// (check_many_heads; not with --check-small). Prints PASS/FAIL per case and exits 1 if any check
// fails.
// With --wgmma, the wgmma kernels (attention_forward_wgmma, and at HS 64 attention_backward_wgmma
// from its out and lse; sm_90a, this harness is built for sm_90a when NVCC_ARCH is sm_90) instead:
// first their building blocks on one tile each, exactly, with values that name the element read
// (check_wgmma_units: a failure prints which element each wrong output came from); then per case,
// out, lse (and dq, dk, dv) against fp64 with the same tolerances, and row by row (each
// tensor's worst row against TOL_ROW or twice the default kernels' worst row), no NaN/Inf or
// unwritten element, identical bits over 2 runs, the same bits from the variant with one
// warpgroup per CTA and in the old grid order; at HS 64 the wgmma backward with dQ by integer
// reduction (attention_backward_wgmma_reduce_dq, and with one warpgroup per CTA: dK and dV with
// the wgmma backward's bits, dQ the same bits over 2 runs and within the same bound of fp64;
// check_wgmma_reduce_dq);
// the many-heads case; the NaN case; the benchmark table with their times (and the one-warpgroup
// variants', and the wgmma rdQ backward's with 2 and 1 warpgroups per CTA) beside the default
// kernels'. It exits 1 on a GPU or build without sm_90a. With --wgmma --ws, also the
// warp-specialized wgmma rdQ backward (attention_backward_wgmma_ws: mbarriers; a protocol fault
// there hangs rather than fails, so the GPU bundle runs it as a step of its own) in each of those,
// and the warp-specialized wgmma forward (forward_wgmma_ws_hs, HS 64: out and lse against fp64 as
// the wgmma forward's, the same bits twice and in the old grid order; its time in the table);
// with --wgmma --pipelined, the pipelined wgmma forward (its out and lse with the wgmma forward's
// bits, 2 and 1 warpgroups per CTA; its time in the table), also in that step, so that a fault of
// these kernels, never run on a GPU, cannot close the bundle's wgmma gate.
// Every run (default or --wgmma) also checks its kernels' bits in the old grid order (all heads
// in one group, llmc/attention.cuh's cta_grid) and times both orders (time_grid_order).
// Benchmark: median time of forward and backward with CUDA events, in TFLOP/s, at T = 1024, 2048,
// 4096 and HS = 64, 128, with B * T = 16384 tokens and NH * HS = 2048 channels. Then the HS 64
// backward kernel by kernel (delta, dK/dV, dQ, each with 2 row tiles per warp too; with --wgmma
// also the wgmma ones), and the HS 64 kernel variants (occupancy, row tiles per warp, streamed
// tile height) side by side (see tune_occupancy; variants whose bits differ also make it exit 1),
// and the backward with dQ by integer reduction in each variant beside the default (time_reduce_dq;
// the benchmark table's rdQ column is attention_backward_reduce_dq).
// With --profile-once, no checks and no timing: each HS 64 kernel of the benchmark's T 1024 shape
// runs once (forward; backward delta, dK/dV, dQ, and those two with 2 row tiles per warp; the
// backward with dQ by integer reduction, bulk and red.global at RT 2; with
// --wgmma the wgmma forward, dK/dV and dQ, and the wgmma backward with dQ by integer reduction
// with 2 and 1 warpgroups per CTA too, with --ws the warp-specialized forward and backward, with
// --pipelined the pipelined forward), for Nsight Compute to profile
// (scripts/gpu_run_bundle.sh, phase profile: stall reasons, pipe use and occupancy of each).
// The same-run baseline of PyTorch's SDPA comes from dev/bench/torch_sdpa_bench.py on the GPU
// machine (issue 5 asks for the ratio).
// FLOP convention (the one FlashAttention papers use): forward = 4 B NH T^2 HS / 2 (two matmuls,
// half of the T x T square under the causal mask), backward = 2.5 x forward (five matmuls). Our
// backward does seven (P and dP recomputed in the dQ kernel), which is not counted.
//
// STATUS: ran and passed on an H100 at commit 7c74e66 (2026-11-23), then with a fused-dQ backward
// variant since removed (slower), and as it is now, every wgmma check and timing included, on an
// H200 at c95ef56 (2026-11-27; dev/gpu_report.md). The same source also builds against the CPU
// emulator of dev/emu (build/emu/attention, mk/emu.mk), where --check-small passes with and without
// --wgmma (t_44).
#include "../../llmc/attention.cuh"
#include "common.h"

#include <string.h>

#include <algorithm>
#include <string>

typedef __nv_bfloat16 bf16;

// ---------------------------------------------------------------------------------------------
// fp64 CPU reference, on the bf16 inputs converted exactly to double.

struct Shape {
    int B, NH, T, HS;
    size_t qkv_count() const { return (size_t)B * T * 3 * NH * HS; }
    size_t out_count() const { return (size_t)B * T * NH * HS; }
    size_t lse_count() const { return (size_t)B * NH * T; }
    // Index of element d of head h of token t in (B, T, 3, NH, HS); which = 0 q, 1 k, 2 v.
    size_t qkv_index(int b, int t, int which, int h, int d) const {
        return ((((size_t)b * T + t) * 3 + which) * NH + h) * HS + d;
    }
    size_t out_index(int b, int t, int h, int d) const { return (((size_t)b * T + t) * NH + h) * HS + d; }
};

// The device buffers of one shape: inputs qkv and dout, outputs out, lse and dqkv, the backward's
// scratch.
struct Buffers {
    bf16 *qkv, *dqkv, *out, *dout;
    float *lse;
    void *scratch;
};

static Buffers buffers_alloc(const Shape &sh) {
    return {device_alloc<bf16>(sh.qkv_count()), device_alloc<bf16>(sh.qkv_count()), device_alloc<bf16>(sh.out_count()),
            device_alloc<bf16>(sh.out_count()), device_alloc<float>(sh.lse_count()),
            device_alloc<unsigned char>(std::max(attention_backward_scratch_bytes(sh.B, sh.T, sh.NH, sh.HS),
                                                 attention_backward_reduce_dq_scratch_bytes(sh.B, sh.T, sh.NH, sh.HS)))};
}

static void buffers_free(const Buffers &b) {
    cuda_check(cudaFree(b.qkv)), cuda_check(cudaFree(b.dqkv)), cuda_check(cudaFree(b.out));
    cuda_check(cudaFree(b.dout)), cuda_check(cudaFree(b.lse)), cuda_check(cudaFree(b.scratch));
}

struct Reference {
    std::vector<double> out, lse, dqkv;
};

// S = s Q K^T (causal), P = softmax(S), O = P V; dP = dO V^T, delta = rowsum(dO * O),
// dS = P (dP - delta), dQ = s dS K, dK = s dS^T Q, dV = P^T dO.
static Reference reference_attention(const Shape &sh, const std::vector<bf16> &qkv_bf, const std::vector<bf16> &dout_bf) {
    const int T = sh.T, HS = sh.HS;
    const double scale = 1.0 / sqrt((double)HS);
    std::vector<double> qkv(qkv_bf.size()), dout(dout_bf.size());
    for (size_t i = 0; i < qkv.size(); i++) qkv[i] = __bfloat162float(qkv_bf[i]);
    for (size_t i = 0; i < dout.size(); i++) dout[i] = __bfloat162float(dout_bf[i]);
    Reference ref;
    ref.out.assign(sh.out_count(), 0.0);
    ref.lse.assign(sh.lse_count(), 0.0);
    ref.dqkv.assign(sh.qkv_count(), 0.0);
    std::vector<double> P((size_t)T * T), dS((size_t)T * T);
    for (int b = 0; b < sh.B; b++)
        for (int h = 0; h < sh.NH; h++) {
            auto q = [&](int t, int d) { return qkv[sh.qkv_index(b, t, 0, h, d)]; };
            auto k = [&](int t, int d) { return qkv[sh.qkv_index(b, t, 1, h, d)]; };
            auto v = [&](int t, int d) { return qkv[sh.qkv_index(b, t, 2, h, d)]; };
            auto dO = [&](int t, int d) { return dout[sh.out_index(b, t, h, d)]; };
            for (int i = 0; i < T; i++) {
                double mx = -INFINITY;
                for (int j = 0; j <= i; j++) {
                    double s = 0.0;
                    for (int d = 0; d < HS; d++) s += q(i, d) * k(j, d);
                    P[(size_t)i * T + j] = s * scale;
                    mx = std::max(mx, s * scale);
                }
                double sum = 0.0;
                for (int j = 0; j <= i; j++) sum += exp(P[(size_t)i * T + j] - mx);
                for (int j = 0; j <= i; j++) P[(size_t)i * T + j] = exp(P[(size_t)i * T + j] - mx) / sum;
                ref.lse[((size_t)b * sh.NH + h) * T + i] = mx + log(sum);
                double delta = 0.0;
                for (int d = 0; d < HS; d++) {
                    double o = 0.0;
                    for (int j = 0; j <= i; j++) o += P[(size_t)i * T + j] * v(j, d);
                    ref.out[sh.out_index(b, i, h, d)] = o;
                    delta += dO(i, d) * o;
                }
                for (int j = 0; j <= i; j++) {
                    double dp = 0.0;
                    for (int d = 0; d < HS; d++) dp += dO(i, d) * v(j, d);
                    dS[(size_t)i * T + j] = P[(size_t)i * T + j] * (dp - delta);
                }
            }
            for (int i = 0; i < T; i++)
                for (int j = 0; j <= i; j++) {
                    const double ds = dS[(size_t)i * T + j], p = P[(size_t)i * T + j];
                    for (int d = 0; d < HS; d++) {
                        ref.dqkv[sh.qkv_index(b, i, 0, h, d)] += scale * ds * k(j, d);
                        ref.dqkv[sh.qkv_index(b, j, 1, h, d)] += scale * ds * q(i, d);
                        ref.dqkv[sh.qkv_index(b, j, 2, h, d)] += p * dO(i, d);
                    }
                }
        }
    return ref;
}

// ---------------------------------------------------------------------------------------------
// Comparison

// ||x - ref||_2 / ||ref||_2 over all elements (which = -1) or over one slot of a qkv-shaped
// tensor (which = 0 q, 1 k, 2 v; slot = NH * HS values); non-finite values of x are counted.
struct ErrorStat {
    double rel_l2;
    size_t non_finite;
};

template <typename GetX>
static ErrorStat relative_error(const std::vector<double> &ref, GetX x, size_t slot, int which) {
    double err2 = 0.0, ref2 = 0.0;
    size_t non_finite = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        if (which >= 0 && (int)((i / slot) % 3) != which) continue;
        const double xi = x(i);
        if (!isfinite(xi)) {
            non_finite++;
            continue;
        }
        err2 += (xi - ref[i]) * (xi - ref[i]);
        ref2 += ref[i] * ref[i];
    }
    return {ref2 > 0.0 ? sqrt(err2 / ref2) : sqrt(err2), non_finite};
}

// The tolerance for out, dq, dk, dv: relative L2 error 1e-2. Why: the inputs are exact bf16, so
// the only errors are the kernel's own roundings: P and dS rounded to bf16 before their matmuls
// and every output rounded to bf16 (unit roundoff u = 2^-8 ~ 3.9e-3, rms relative error of a
// round-to-nearest ~ u / sqrt(12) per rounding), fp32 accumulation being ~1e-6. Errors of
// independent sign add in quadrature, giving a few 1e-3; an emulation of exactly these roundings
// in numpy measured 1.6e-3..2.0e-3 (out), 2.4e-3..4.9e-3 (dq, dk, the latter at sharp softmax,
// input std 3), 2.1e-3..2.3e-3 (dv) for the cases below. 1e-2 leaves a factor 2 above the worst;
// an indexing or masking bug gives errors of order 1.
// lse is fp32 arithmetic on exact inputs: absolute error 1e-3 (scores of magnitude < 100, fp32
// relative 1e-6 per operation over <= 128 terms).
static const double TOL_BF16 = 1e-2, TOL_LSE = 1e-3;

// Row by row (the HS values of one (b, t, h), of out or of dq, dk or dv): an error confined to a
// few rows (one query's mask, one key's tile) hides in a tensor's L2 error over many rows. The
// relative error of a row is ||x - ref|| / max(||ref||, 0.01 rms row norm): the floor keeps rows of
// tiny norm (the gradient of a key hardly attended to) from turning ulps into large ratios. Each
// row has the whole tensor's roundings over HS = 64..128 values instead of thousands, so its error
// scatters more: 5e-2 (ten times the tensor-wide worst above), or twice the worst row of the
// default kernels (verified on an H100) on the same inputs, whichever is larger. Where the exact
// tensor is zero (dq and dk at T = 1) the error is absolute instead.
static const double TOL_ROW = 5e-2;

struct Case {
    Shape shape;
    float qk_std;  // larger = sharper softmax
    uint64_t seed;
};

static bool report(const char *name, const char *what, double value, double tol, size_t non_finite) {
    const bool ok = non_finite == 0 && value <= tol;
    printf("    %-5s %-30s %.3e (tol %.0e)%s %s\n", name, what, value, tol,
           non_finite ? " NON-FINITE VALUES" : "", ok ? "ok" : "FAIL");
    if (non_finite) printf("          %zu non-finite values\n", non_finite);
    return ok;
}

// Max abs error of lse against the reference (non-finite values counted), reported.
static bool report_lse(const char *name, const Reference &ref, const std::vector<float> &lse) {
    double err = 0.0;
    size_t bad = 0;
    for (size_t i = 0; i < ref.lse.size(); i++) {
        if (!isfinite(lse[i])) bad++;
        else err = std::max(err, fabs(lse[i] - ref.lse[i]));
    }
    return report(name, "max abs error vs fp64", err, TOL_LSE, bad);
}

// The largest relative error of one row of HS values (see TOL_ROW), over all rows (which = -1) or
// over the rows of one slot of a qkv-shaped tensor.
template <typename GetX>
static double worst_row_error(const std::vector<double> &ref, GetX x, int HS, size_t slot, int which) {
    std::vector<double> err2, ref2;
    for (size_t r = 0; r < ref.size() / HS; r++) {
        const size_t i0 = r * HS;
        if (which >= 0 && (int)((i0 / slot) % 3) != which) continue;
        double e = 0.0, n = 0.0;
        for (size_t i = i0; i < i0 + HS; i++) {
            e += (x(i) - ref[i]) * (x(i) - ref[i]);
            n += ref[i] * ref[i];
        }
        err2.push_back(e);
        ref2.push_back(n);
    }
    double mean_norm2 = 0.0;
    for (double n : ref2) mean_norm2 += n / ref2.size();
    // A tensor that is zero in exact arithmetic (dq and dk at T = 1, where dS = 0): absolute error.
    const double floor2 = mean_norm2 > 0.0 ? 1e-4 * mean_norm2 : 1.0;
    double worst = 0.0;
    for (size_t r = 0; r < err2.size(); r++) {
        const double e = sqrt(err2[r] / std::max(ref2[r], floor2));
        if (!(e <= worst)) worst = e;  // a NaN sticks, and fails the check
    }
    return worst;
}

// The outputs of one forward and backward, copied to the host.
struct Outputs {
    std::vector<bf16> out, dqkv;
    std::vector<float> lse;
};

// Fills the outputs with 0xFF bytes (NaN in bf16 and fp32), so that an element the kernels fail to
// write shows up.
static void poison_outputs(const Buffers &b, const Shape &sh) {
    cuda_check(cudaMemset(b.out, 0xFF, sh.out_count() * sizeof(bf16)));
    cuda_check(cudaMemset(b.lse, 0xFF, sh.lse_count() * sizeof(float)));
    cuda_check(cudaMemset(b.dqkv, 0xFF, sh.qkv_count() * sizeof(bf16)));
}

// Forward and backward into NaN-filled outputs.
static Outputs run_poisoned(const Buffers &b, const Shape &sh) {
    poison_outputs(b, sh);
    attention_forward(b.out, b.lse, b.qkv, sh.B, sh.T, sh.NH, sh.HS, 0);
    attention_backward(b.dqkv, b.scratch, b.dout, b.qkv, b.out, b.lse, sh.B, sh.T, sh.NH, sh.HS, 0);
    cuda_check(cudaDeviceSynchronize());
    return {to_host(b.out, sh.out_count()), to_host(b.dqkv, sh.qkv_count()), to_host(b.lse, sh.lse_count())};
}

// The host copies of a wgmma run's outputs (dqkv empty at HS 128, which has no wgmma backward yet).
static Outputs wgmma_outputs(const Buffers &b, const Shape &sh) {
    cuda_check(cudaDeviceSynchronize());
    return {to_host(b.out, sh.out_count()), sh.HS == 64 ? to_host(b.dqkv, sh.qkv_count()) : std::vector<bf16>(),
            to_host(b.lse, sh.lse_count())};
}
// The wgmma forward, and at HS 64 the wgmma backward from its out and lse, into NaN-filled outputs.
static Outputs run_wgmma_poisoned(const Buffers &b, const Shape &sh) {
    poison_outputs(b, sh);
    attention_forward_wgmma(b.out, b.lse, b.qkv, sh.B, sh.T, sh.NH, sh.HS, 0);
    if (sh.HS == 64)
        attention_backward_wgmma(b.dqkv, b.scratch, b.dout, b.qkv, b.out, b.lse, sh.B, sh.T, sh.NH, sh.HS, 0);
    return wgmma_outputs(b, sh);
}

// The same with one warpgroup per CTA (the kernels' WG = 1 variant), which must give the same bits.
static void wgmma_forward_one_warpgroup(const Buffers &b, const Shape &sh) {
    using namespace attention_detail;
    if (sh.HS == 64) forward_wgmma_hs<64, 1>(b.out, b.lse, b.qkv, sh.B, sh.T, sh.NH, 0);
    else forward_wgmma_hs<128, 1>(b.out, b.lse, b.qkv, sh.B, sh.T, sh.NH, 0);
}
static void wgmma_backward_one_warpgroup(const Buffers &b, const Shape &sh) {
    attention_detail::backward_wgmma_hs<64, 1>(b.dqkv, b.scratch, b.dout, b.qkv, b.out, b.lse, sh.B, sh.T, sh.NH, 0);
}
static Outputs run_wgmma_one_warpgroup_poisoned(const Buffers &b, const Shape &sh) {
    poison_outputs(b, sh);
    wgmma_forward_one_warpgroup(b, sh);
    if (sh.HS == 64) wgmma_backward_one_warpgroup(b, sh);
    return wgmma_outputs(b, sh);
}

// The pipelined wgmma forward (its softmax beside the previous tile's O += P V) with WG warpgroups
// per CTA, which must give the wgmma forward's bits.
template <int WG> static void wgmma_forward_pipelined(const Buffers &b, const Shape &sh) {
    using namespace attention_detail;
    if (sh.HS == 64) forward_wgmma_hs<64, WG, true>(b.out, b.lse, b.qkv, sh.B, sh.T, sh.NH, 0);
    else forward_wgmma_hs<128, WG, true>(b.out, b.lse, b.qkv, sh.B, sh.T, sh.NH, 0);
}
// forward() into NaN-filled outputs: its out and lse.
template <typename Forward> static Outputs forward_outputs(const Buffers &b, const Shape &sh, Forward forward) {
    poison_outputs(b, sh);
    forward();
    cuda_check(cudaDeviceSynchronize());
    Outputs o;
    o.out = to_host(b.out, sh.out_count());
    o.lse = to_host(b.lse, sh.lse_count());
    return o;
}
// Whether forward() writes want's out and lse bit for bit into NaN-filled outputs.
template <typename Forward>
static bool same_forward(const Buffers &b, const Shape &sh, const Outputs &want, Forward forward) {
    const Outputs o = forward_outputs(b, sh, forward);
    return same_bytes(o.out, want.out) && same_bytes(o.lse, want.lse);
}
// The warp-specialized wgmma forward (HS 64; its 128-key tiles round otherwise than the wgmma
// forward's 64): its out and lse from NaN-filled outputs.
static Outputs run_ws_forward_poisoned(const Buffers &b, const Shape &sh) {
    return forward_outputs(b, sh, [&] { attention_detail::forward_wgmma_ws_hs<64>(b.out, b.lse, b.qkv, sh.B, sh.T, sh.NH, 0); });
}

// The HS 64 backward with KV_RT and DQ_RT row tiles per warp in its dK/dV and dQ kernels
// (llmc/attention.cuh's RT; RT 2 with 32-row streamed tiles and free registers, RT 1 the default
// kernel): the variants "dK/dV RT2", "dQ RT2" and "RT2" (both: attention_backward_rt2, the
// trainer's --attention mma-rt2), which must give the default's bits. From the out and lse in b;
// codes as attention_backward's.
template <int KV_RT, int DQ_RT>
static void backward_row_tiles(const Buffers &b, const Shape &sh, const QuantCodesOut &codes = QuantCodesOut{}) {
    using namespace attention_detail;
    if constexpr (KV_RT == 2 && DQ_RT == 2)
        return attention_backward_rt2(b.dqkv, b.scratch, b.dout, b.qkv, b.out, b.lse, sh.B, sh.T, sh.NH, 64, 0, codes);
    const float *delta = backward_delta<64>(b.scratch, b.dout, b.out, sh.B, sh.T, sh.NH, 0);
    if constexpr (KV_RT == 1) backward_kv_hs<64>(b.dqkv, b.dout, b.qkv, b.lse, delta, sh.B, sh.T, sh.NH, 0, codes);
    else backward_kv_hs<64, 1, 32, KV_RT>(b.dqkv, b.dout, b.qkv, b.lse, delta, sh.B, sh.T, sh.NH, 0, codes);
    if constexpr (DQ_RT == 1) backward_dq_hs<64>(b.dqkv, b.dout, b.qkv, b.lse, delta, sh.B, sh.T, sh.NH, 0, codes);
    else backward_dq_hs<64, 1, 32, DQ_RT>(b.dqkv, b.dout, b.qkv, b.lse, delta, sh.B, sh.T, sh.NH, 0, codes);
}

// The backward with dQ by integer reduction (llmc/attention.cuh's reduce_dq_tile) with RT row tiles
// per warp in its dK/dV kernel and the reduction DQ (red.global or bulk), from the out and lse in b
// (RT 2 at HS 64 only). Its scratch is zeroed by itself.
template <int RT, int DQ>
static void reduce_dq_backward(const Buffers &b, const Shape &sh) {
    using namespace attention_detail;
    if (sh.HS == 64) backward_reduce_dq_hs<64, RT, DQ>(b.dqkv, b.scratch, b.dout, b.qkv, b.out, b.lse, sh.B, sh.T, sh.NH, 0);
    else if constexpr (RT == 1)
        backward_reduce_dq_hs<128, RT, DQ>(b.dqkv, b.scratch, b.dout, b.qkv, b.out, b.lse, sh.B, sh.T, sh.NH, 0);
    else die("reduce_dq_backward: RT 2 is for head size 64");
}
// The same into a NaN-filled dqkv, and its host copy.
template <int RT, int DQ>
static std::vector<bf16> reduce_dq_run(const Buffers &b, const Shape &sh) {
    cuda_check(cudaMemset(b.dqkv, 0xFF, sh.qkv_count() * sizeof(bf16)));
    reduce_dq_backward<RT, DQ>(b, sh);
    return to_host(b.dqkv, sh.qkv_count());
}

// Whether parts first..last (0 q, 1 k, 2 v) of two dqkv have the same bits.
static bool same_parts(const std::vector<bf16> &a, const std::vector<bf16> &b, const Shape &sh, int first, int last) {
    const size_t C = (size_t)sh.NH * sh.HS;
    for (size_t row = 0; row < (size_t)sh.B * sh.T; row++)
        if (memcmp(&a[row * 3 * C + first * C], &b[row * 3 * C + first * C], (last - first + 1) * C * sizeof(bf16)))
            return false;
    return true;
}

// attention_backward_reduce_dq twice, and the other variants (at HS 64: RT 1 and 2, each with red.global
// and the bulk reduction; HS 128: RT 1 with both): dK and dV must have the default's bits (dflt),
// dQ the same bits over the 2 runs and with either reduction at the same RT (the same integers
// added in another order). Returns the first run's dqkv for the comparison with fp64.
static std::vector<bf16> check_reduce_dq(const Buffers &d, const Shape &sh, const std::vector<bf16> &dflt, bool *ok) {
    using namespace attention_detail;
    cuda_check(cudaMemset(d.dqkv, 0xFF, sh.qkv_count() * sizeof(bf16)));
    attention_backward_reduce_dq(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, sh.T, sh.NH, sh.HS, 0);
    const std::vector<bf16> first = to_host(d.dqkv, sh.qkv_count());
    const std::vector<bf16> second = sh.HS == 64 ? reduce_dq_run<2, DQ_BULK>(d, sh) : reduce_dq_run<1, DQ_BULK>(d, sh);
    std::vector<std::vector<bf16>> others = {reduce_dq_run<1, DQ_RED>(d, sh)};
    if (sh.HS == 64) others.push_back(reduce_dq_run<1, DQ_BULK>(d, sh)), others.push_back(reduce_dq_run<2, DQ_RED>(d, sh));
    const bool same_runs = same_parts(first, second, sh, 0, 0);
    const bool same_reductions = sh.HS == 64 ? same_parts(others[0], others[1], sh, 0, 0) &&
                                                   same_parts(others[2], first, sh, 0, 0)
                                             : same_parts(others[0], first, sh, 0, 0);
    bool same_dkdv = same_parts(first, dflt, sh, 1, 2) && same_parts(second, dflt, sh, 1, 2);
    for (const std::vector<bf16> &o : others) same_dkdv = same_dkdv && same_parts(o, dflt, sh, 1, 2);
    printf("    %-5s %-30s %s\n", "all", "reduce dQ: dK dV default bits", same_dkdv ? "ok" : "FAIL");
    printf("    %-5s %-30s %s\n", "all", "reduce dQ: dQ bits over 2 runs", same_runs ? "ok" : "FAIL");
    printf("    %-5s %-30s %s\n", "all", "reduce dQ: red = bulk bits", same_reductions ? "ok" : "FAIL");
    *ok = same_dkdv && same_runs && same_reductions;
    return first;
}

// The wgmma backward with dQ by integer reduction (HS 64; attention_backward_wgmma_reduce_dq) from
// the wgmma forward's out and lse in d, twice, twice with one warpgroup per CTA (each 64 keys'
// share turned to fixed point alone, where two warpgroups add theirs in fp32 first: other dQ
// bits), and twice warp-specialized (each tile's dQ one wgmma chain over 128 keys: other dQ bits
// again): dK and dV must have the wgmma backward's bits (wgmma_dqkv) in all six runs, dQ the same
// bits in the two runs of each variant. Returns the first run's dqkv of each (WGMMA_RDQ_VARIANTS'
// order) for the comparison with fp64.
static const char *const WGMMA_RDQ_VARIANTS[] = {"wgmma rdQ", "wgmma rdQ 1 WG", "wgmma rdQ ws"};
static bool g_ws = false;  // --ws: the warp-specialized variant too (the third above)
static bool g_pipelined = false;  // --pipelined: the pipelined wgmma forward too
static std::vector<std::vector<bf16>> check_wgmma_reduce_dq(const Buffers &d, const Shape &sh,
                                                            const std::vector<bf16> &wgmma_dqkv, bool *ok) {
    using namespace attention_detail;
    auto run = [&](int variant) {
        cuda_check(cudaMemset(d.dqkv, 0xFF, sh.qkv_count() * sizeof(bf16)));
        if (variant == 0)
            attention_backward_wgmma_reduce_dq(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, sh.T, sh.NH, sh.HS, 0);
        else if (variant == 1)
            backward_reduce_dq_wgmma_hs<64, 1>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, sh.T, sh.NH, 0);
        else
            backward_reduce_dq_wgmma_ws_hs<64>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, sh.T, sh.NH, 0);
        return to_host(d.dqkv, sh.qkv_count());
    };
    std::vector<std::vector<bf16>> firsts;
    bool same_dkdv = true, same_dq = true;
    for (int v = 0; v < (g_ws ? 3 : 2); v++) {
        const std::vector<bf16> a = run(v), b = run(v);
        same_dkdv = same_dkdv && same_parts(a, wgmma_dqkv, sh, 1, 2) && same_parts(b, wgmma_dqkv, sh, 1, 2);
        same_dq = same_dq && same_parts(a, b, sh, 0, 0);
        firsts.push_back(a);
    }
    printf("    %-5s %-30s %s\n", "all", "wgmma rdQ: dK dV wgmma's bits", same_dkdv ? "ok" : "FAIL");
    printf("    %-5s %-30s %s\n", "all", "wgmma rdQ: dQ bits over 2 runs", same_dq ? "ok" : "FAIL");
    *ok = same_dkdv && same_dq;
    return firsts;
}

static bool identical(const Outputs &a, const Outputs &b) {
    return same_bytes(a.out, b.out) && same_bytes(a.lse, b.lse) && same_bytes(a.dqkv, b.dqkv);
}

// run() with every head in one group of CTAs (llmc/attention.cuh's cta_grid; the launch order
// before 2026-11-29), which must give want's bits: no CTA's result depends on when it runs.
template <typename Run> static bool same_in_old_grid_order(const Shape &sh, const Outputs &want, Run run) {
    attention_detail::head_group_override = sh.B * sh.NH;
    const bool same = identical(run(), want);
    attention_detail::head_group_override = 0;
    return same;
}

static const char *wgmma_unavailable_reason(void) {
    int device, major;
    cuda_check(cudaGetDevice(&device));
    cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    return major == 9 ? "this build has no sm_90a code (build with NVCC_ARCH=sm_90)" : "not a GPU of compute capability 9.0";
}

// ---------------------------------------------------------------------------------------------
// wgmma building blocks on one tile each (--wgmma, before the attention cases): the assumptions
// of llmc/wgmma.cuh and the wgmma kernels, each on its own, with values that name their source.
//   S = A B^T (mma_rows_by_rows: A K-major from a resident tile of 64 WG rows at warpgroup w's
//     64 rows, B K-major), A one-hot: A[r][k] = 1 at k = koff + sel(r), sel(r) = (r + 32 (r / 64))
//     % 64 (other rows for the second warpgroup), so S[r][n] = B[n][koff + sel(r)];
//   O = P V (acc_to_a from an accumulator in the C layout, mma_regs_by_tile: V MN-major), P the
//     identity, so O[64 w + r][c] = V[r][c].
// Every B and V element is a distinct power-of-two multiple, label(i, j) = +-(1 + i/64) 2^(j%64 - 32)
// (negative for j >= 64): exact in bf16, summed exactly with zeros in fp32, and a wrong value
// decodes to the element actually read, which the failure lines print (a layout error shows as
// a pattern of wrong rows, columns or panels).

static float unit_label(int i, int j) { return (j >= 64 ? -1.0f : 1.0f) * ldexpf(1.0f + i / 64.0f, j % 64 - 32); }

// (i, j) of a label, or false for a value that is none.
static bool unit_decode(float x, int *i, int *j) {
    if (x == 0.0f || !isfinite(x)) return false;
    int e;
    const float m = frexpf(fabsf(x), &e);  // |x| = m 2^e, m in [0.5, 1): 1 + i/64 = 2m, j % 64 = e + 31
    *i = (int)lrintf((2.0f * m - 1.0f) * 64.0f);
    *j = e + 31 + (x < 0 ? 64 : 0);
    return *i >= 0 && *i < 64 && e + 31 >= 0 && e + 31 < 64 && unit_label(*i, *j) == x;
}

static int unit_select(int r) { return (r + 32 * (r / 64)) % 64; }

template <int HS, int WG>
__global__ void wgmma_unit_kernel(bf16 *s_out, bf16 *o_out, const bf16 *a, const bf16 *b, const bf16 *v) {
    using namespace attention_detail;
    constexpr int ROWS = 64 * WG, THREADS = 128 * WG;
    LLMC_DYNAMIC_SMEM(smem_raw);
    unsigned char *smem = swizzle_aligned(smem_raw);
    bf16 *sA = reinterpret_cast<bf16 *>(smem), *sB = sA + ROWS * HS, *sV = sB + 64 * HS;
    load_tile_async<ROWS, HS, true, THREADS>(sA, a, HS, 0, ROWS);
    load_tile_async<64, HS, true, THREADS>(sB, b, HS, 0, 64);
    load_tile_async<64, HS, true, THREADS>(sV, v, HS, 0, 64);
    cp_async_commit();
    publish_tiles();
    const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane >> 2, t = lane & 3;

    float sacc[8][4];
    wgmma::hold_registers<8>(sacc);
    wgmma::fence();
    mma_rows_by_rows<HS>(sacc, smem_addr(sA), ROWS, 64 * wg, smem_addr(sB));
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::hold_registers<8>(sacc);
    store_rows<64>(s_out, 64, 64 * wg + 16 * warp, ROWS, sacc, 1.0f, 1.0f, lane);

    float p[8][4], o[HS / 8][4];
#pragma unroll
    for (int n = 0; n < 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) p[n][e] = 8 * n + 2 * t + (e & 1) == 16 * warp + g + 8 * (e >> 1) ? 1.0f : 0.0f;
#pragma unroll
    for (int n = 0; n < HS / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    uint32_t pf[4][4];
    acc_to_a<64>(pf, p);
    wgmma::hold_registers<HS / 8>(o);
    wgmma::hold_registers<4>(pf);
    wgmma::fence();
    mma_regs_by_tile<HS, 64>(o, pf, smem_addr(sV));
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::hold_registers<HS / 8>(o);
    store_rows<HS>(o_out, HS, 64 * wg + 16 * warp, ROWS, o, 1.0f, 1.0f, lane);
}

// Compares got with expected (labels), printing the first few differences decoded; returns the
// number of differences.
static int unit_compare(const char *what, const char *src, const std::vector<bf16> &got, const std::vector<float> &want,
                        int cols) {
    int bad = 0;
    for (size_t x = 0; x < want.size(); x++) {
        const float g = __bfloat162float(got[x]);
        if (g == want[x]) continue;
        if (bad++ >= 8) continue;
        int i, j, wi = -1, wj = -1;
        unit_decode(want[x], &wi, &wj);
        if (unit_decode(g, &i, &j))
            printf("      %s[%zu][%zu]: want %s[%d][%d], got %s[%d][%d]\n", what, x / cols, x % cols, src, wi, wj, src, i, j);
        else printf("      %s[%zu][%zu]: want %s[%d][%d], got %g\n", what, x / cols, x % cols, src, wi, wj, g);
    }
    return bad;
}

template <int HS, int WG>
static bool check_wgmma_unit(int koff) {
    constexpr int ROWS = 64 * WG;
    std::vector<bf16> a((size_t)ROWS * HS), b((size_t)64 * HS), v((size_t)64 * HS);
    for (int r = 0; r < ROWS; r++)
        for (int k = 0; k < HS; k++) a[(size_t)r * HS + k] = __float2bfloat16(k == koff + unit_select(r) ? 1.0f : 0.0f);
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < HS; j++) {
            b[(size_t)i * HS + j] = __float2bfloat16(unit_label(i, j));
            v[(size_t)i * HS + j] = __float2bfloat16(unit_label(i, j));
        }
    std::vector<float> s_want((size_t)ROWS * 64), o_want((size_t)ROWS * HS);
    for (int r = 0; r < ROWS; r++) {
        for (int n = 0; n < 64; n++) s_want[(size_t)r * 64 + n] = unit_label(n, koff + unit_select(r));
        for (int c = 0; c < HS; c++) o_want[(size_t)r * HS + c] = unit_label(r % 64, c);
    }
    bf16 *d_a = device_alloc<bf16>(a.size()), *d_b = device_alloc<bf16>(b.size()), *d_v = device_alloc<bf16>(v.size());
    bf16 *d_s = device_alloc<bf16>(s_want.size()), *d_o = device_alloc<bf16>(o_want.size());
    to_device(d_a, a), to_device(d_b, b), to_device(d_v, v);
    cuda_check(cudaMemset(d_s, 0xFF, s_want.size() * sizeof(bf16)));
    cuda_check(cudaMemset(d_o, 0xFF, o_want.size() * sizeof(bf16)));
    const size_t smem = wgmma::SWIZZLE_ALIGN + (size_t)(ROWS + 128) * HS * sizeof(bf16);
    attention_detail::launch_config(wgmma_unit_kernel<HS, WG>, smem);
    LLMC_LAUNCH(1, 128 * WG, smem, 0, wgmma_unit_kernel<HS, WG>)(d_s, d_o, d_a, d_b, d_v);
    cuda_check(cudaGetLastError());
    cuda_check(cudaDeviceSynchronize());
    printf("  wgmma unit HS %d, %d warpgroup(s), A one-hot in columns %d..%d\n", HS, WG, koff, koff + 63);
    const int bad_s = unit_compare("S", "B", to_host(d_s, s_want.size()), s_want, 64);
    const int bad_o = unit_compare("O", "V", to_host(d_o, o_want.size()), o_want, HS);
    for (bf16 *p : {d_a, d_b, d_v, d_s, d_o}) cuda_check(cudaFree(p));
    printf("    %-5s %-30s %d wrong of %zu %s\n", "S", "A B^T (K-major, K-major)", bad_s, s_want.size(), bad_s ? "FAIL" : "ok");
    printf("    %-5s %-30s %d wrong of %zu %s\n", "O", "P V (registers, MN-major)", bad_o, o_want.size(), bad_o ? "FAIL" : "ok");
    return bad_s == 0 && bad_o == 0;
}

static bool check_wgmma_units(void) {
    printf("wgmma building blocks, one tile each (exact)\n");
    bool ok = check_wgmma_unit<64, 1>(0) & check_wgmma_unit<64, 2>(0);
    for (int koff : {0, 64}) ok = check_wgmma_unit<128, 1>(koff) & check_wgmma_unit<128, 2>(koff) & ok;
    printf("%s wgmma building blocks\n", ok ? "PASS" : "FAIL");
    return ok;
}

// The wgmma kernels' two runs (run_wgmma_poisoned): out, lse and (HS 64) dq, dk, dv against the
// fp64 reference with the default's tolerances, tensor-wide and row by row (against the default
// kernels' worst row on the same inputs, baseline), and the same bits twice.
static bool check_wgmma(const Shape &sh, const Reference &ref, const Outputs runs[2], const Outputs &baseline,
                        const char *who = "wgmma") {
    auto bf_at = [](const std::vector<bf16> &v) { return [&v](size_t i) { return (double)__bfloat162float(v[i]); }; };
    const std::string rel_l2 = std::string(who) + ": rel L2 error vs fp64", worst_row = std::string(who) + ": worst row vs fp64";
    auto check_tensor = [&](const char *name, const std::vector<double> &r, const std::vector<bf16> &x,
                            const std::vector<bf16> &base, size_t slot, int which) {
        const ErrorStat e = relative_error(r, bf_at(x), slot, which);
        bool ok = report(name, rel_l2.c_str(), e.rel_l2, TOL_BF16, e.non_finite);
        if (e.non_finite) return false;
        const double worst = worst_row_error(r, bf_at(x), sh.HS, slot, which);
        const double base_worst = worst_row_error(r, bf_at(base), sh.HS, slot, which);
        printf("          worst row %.3e, default kernels' worst row %.3e\n", worst, base_worst);
        return report(name, worst_row.c_str(), worst, std::max(TOL_ROW, 2.0 * base_worst), 0) && ok;
    };
    bool ok = check_tensor("out", ref.out, runs[0].out, baseline.out, 0, -1);
    ok = report_lse("lse", ref, runs[0].lse) && ok;
    if (!runs[0].dqkv.empty()) {
        const char *names[3] = {"dq", "dk", "dv"};
        for (int which = 0; which < 3; which++)
            ok = check_tensor(names[which], ref.dqkv, runs[0].dqkv, baseline.dqkv, (size_t)sh.NH * sh.HS, which) && ok;
    }
    const bool same = identical(runs[0], runs[1]);
    printf("    %-5s %-30s %s\n", "all", (std::string(who) + ": same bits twice").c_str(), same ? "ok" : "FAIL");
    return ok && same;
}

// A case's seeded inputs (q and k ~ N(0, qk_std^2), v and dout ~ N(0, 1), exact in bf16), on the
// host and in a new set of device buffers.
static Buffers case_inputs(const Case &c, std::vector<bf16> &qkv, std::vector<bf16> &dout) {
    const Shape &sh = c.shape;
    printf("case B=%d NH=%d T=%d HS=%d qk_std=%.1f seed=%llu\n", sh.B, sh.NH, sh.T, sh.HS, c.qk_std,
           (unsigned long long)c.seed);
    qkv = random_normal_bf16(sh.qkv_count(), c.seed, 1.0f);
    for (size_t i = 0; i < qkv.size(); i++)
        if ((i / ((size_t)sh.NH * sh.HS)) % 3 != 2) qkv[i] = __float2bfloat16(c.qk_std * __bfloat162float(qkv[i]));
    dout = random_normal_bf16(sh.out_count(), c.seed + 1, 1.0f);
    const Buffers d = buffers_alloc(sh);
    to_device(d.qkv, qkv);
    to_device(d.dout, dout);
    return d;
}

// The backward writing dqkv's FP8 codes instead of dqkv (attention_backward's codes, the trainer's
// FP8 step with FP8 weight gradients; T % 64 == 0): q, q^T, amax and the column sums byte for byte
// as quant_transpose_gpu makes them of the same backward's bf16 dqkv, from the out and lse in d;
// the outputs filled with a byte pattern first. backward(codes) runs the backward under test
// (attention_backward, attention_backward_wgmma at HS 64, or backward_row_tiles); what names it.
template <typename Backward>
static bool check_codes(const Buffers &d, const Shape &sh, const char *what, Backward backward) {
    const int N = sh.B * sh.T, cols = 3 * sh.NH * sh.HS;
    const size_t n = (size_t)N * cols, sums = (size_t)quant_colsum_rows(N) * cols;
    uint8_t *q[2], *qt[2];
    float *sum[2];
    for (int k = 0; k < 2; k++) {
        q[k] = device_alloc<uint8_t>(n), qt[k] = device_alloc<uint8_t>(n), sum[k] = device_alloc<float>(sums);
        cuda_check(cudaMemset(q[k], 0xA5, n)), cuda_check(cudaMemset(qt[k], 0x5A, n));
        cuda_check(cudaMemset(sum[k], 0xFF, sums * sizeof(float)));
    }
    float *s = device_alloc<float>(3);  // the scale, the cast's amax, the backward's
    to_device(s, std::vector<float>{256.0f, 0.0f, 0.0f});
    backward(QuantCodesOut{});
    quant_transpose_gpu(q[0], qt[0], s + 1, sum[0], d.dqkv, N, cols, quant_scale_given(s), QUANT_TO_E5M2, 0);
    backward(QuantCodesOut{q[1], qt[1], s, s + 2, QUANT_TO_E5M2, sum[1]});
    const std::vector<float> amax = to_host(s, 3);
    const bool same = to_host(q[1], n) == to_host(q[0], n) && to_host(qt[1], n) == to_host(qt[0], n) &&
                      !memcmp(to_host(sum[1], sums).data(), to_host(sum[0], sums).data(), sums * sizeof(float)) &&
                      !memcmp(&amax[1], &amax[2], sizeof(float)) && amax[1] > 0.0f;
    printf("    %-5s %-30s %s\n", "all", what, same ? "ok" : "FAIL");
    for (int k = 0; k < 2; k++) cuda_check(cudaFree(q[k])), cuda_check(cudaFree(qt[k])), cuda_check(cudaFree(sum[k]));
    cuda_check(cudaFree(s));
    return same;
}

// One case. The default kernels: forward and backward three times, bit-identical results, the
// other RT and BS variants' bits, every output against the reference. With wgmma: the wgmma
// kernels twice (identical bits), once with one warpgroup per CTA (the same bits), and the
// default kernels once; check_wgmma compares with the reference.
static bool check_case(const Case &c, bool wgmma) {
    const Shape &sh = c.shape;
    std::vector<bf16> qkv, dout;
    const Buffers d = case_inputs(c, qkv, dout);
    if (wgmma) {
        Outputs runs[2];
        for (Outputs &r : runs) r = run_wgmma_poisoned(d, sh);
        const bool same_wg1 = identical(run_wgmma_one_warpgroup_poisoned(d, sh), runs[0]);
        auto pipelined_wg2 = [&] { wgmma_forward_pipelined<2>(d, sh); };
        auto pipelined_wg1 = [&] { wgmma_forward_pipelined<1>(d, sh); };
        const bool same_pipelined = !g_pipelined || (same_forward(d, sh, runs[0], pipelined_wg2) &&
                                                     same_forward(d, sh, runs[0], pipelined_wg1));
        const bool same_order = same_in_old_grid_order(sh, runs[0], [&] { return run_wgmma_poisoned(d, sh); });
        auto wgmma_backward = [&](const QuantCodesOut &codes) {
            attention_backward_wgmma(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, sh.T, sh.NH, sh.HS, 0, codes);
        };
        const bool codes =
            sh.T % 64 != 0 || sh.HS != 64 || check_codes(d, sh, "wgmma: FP8 codes = the cast's", wgmma_backward);
        bool reduce_ok = true;
        const std::vector<std::vector<bf16>> reduce_dqkv =
            sh.HS == 64 ? check_wgmma_reduce_dq(d, sh, runs[0].dqkv, &reduce_ok) : std::vector<std::vector<bf16>>();
        // the warp-specialized forward (--ws, HS 64): twice, and in the old grid order, the same bits
        const bool ws_forward = g_ws && sh.HS == 64;
        Outputs ws_runs[2];
        bool ws_same_order = true;
        if (ws_forward) {
            for (Outputs &r : ws_runs) r = run_ws_forward_poisoned(d, sh);
            ws_same_order = same_in_old_grid_order(sh, ws_runs[0], [&] { return run_ws_forward_poisoned(d, sh); });
        }
        const Outputs baseline = run_poisoned(d, sh);
        buffers_free(d);
        printf("    %-5s %-30s %s\n", "all", "wgmma: 1 warpgroup, same bits", same_wg1 ? "ok" : "FAIL");
        if (g_pipelined) printf("    %-5s %-30s %s\n", "fwd", "wgmma pipelined: same bits", same_pipelined ? "ok" : "FAIL");
        printf("    %-5s %-30s %s\n", "all", "wgmma old grid order: same bits", same_order ? "ok" : "FAIL");
        if (ws_forward) printf("    %-5s %-30s %s\n", "fwd", "ws fwd old grid order: same bits", ws_same_order ? "ok" : "FAIL");
        const Reference ref = reference_attention(sh, qkv, dout);
        bool ok = check_wgmma(sh, ref, runs, baseline) && same_wg1 && same_pipelined && same_order && codes && reduce_ok;
        if (ws_forward) ok = check_wgmma(sh, ref, ws_runs, baseline, "ws fwd") && ws_same_order && ok;
        // dQ of each variant: against fp64, tensor-wide and row by row (against the wgmma
        // backward's worst row, as check_wgmma does)
        for (size_t v = 0; v < reduce_dqkv.size(); v++) {
            auto at = [&](const std::vector<bf16> &x) { return [&x](size_t i) { return (double)__bfloat162float(x[i]); }; };
            const size_t slot = (size_t)sh.NH * sh.HS;
            const ErrorStat e = relative_error(ref.dqkv, at(reduce_dqkv[v]), slot, 0);
            ok = report("dq", (std::string(WGMMA_RDQ_VARIANTS[v]) + ": rel L2 vs fp64").c_str(), e.rel_l2, TOL_BF16,
                        e.non_finite) && ok;
            const double worst = worst_row_error(ref.dqkv, at(reduce_dqkv[v]), sh.HS, slot, 0);
            const double base_worst = worst_row_error(ref.dqkv, at(runs[0].dqkv), sh.HS, slot, 0);
            ok = report("dq", (std::string(WGMMA_RDQ_VARIANTS[v]) + ": worst row").c_str(), worst,
                        std::max(TOL_ROW, 2.0 * base_worst), 0) && ok;
        }
        printf("%s B=%d NH=%d T=%d HS=%d (wgmma)\n", ok ? "PASS" : "FAIL", sh.B, sh.NH, sh.T, sh.HS);
        return ok;
    }

    Outputs runs[3];
    for (Outputs &r : runs) r = run_poisoned(d, sh);
    const bool same_order = same_in_old_grid_order(sh, runs[0], [&] { return run_poisoned(d, sh); });
    // HS 64: the forward with the other number of row tiles per warp (llmc/attention.cuh's RT, 1 or
    // 2), separately the backward with the other streamed tile height (BS, 64 or 32), and the
    // backward with 2 row tiles per warp in both its kernels, must give the defaults' bits on this
    // case's odd shapes too.
    bool same_rt = true, same_bs = true, same_bwd_rt = true;
    if (sh.HS == 64) {
        using namespace attention_detail;
        same_rt = same_forward(d, sh, runs[0], [&] {
            forward_hs<64, forward_min_ctas<64>(), 3 - forward_row_tiles<64>()>(d.out, d.lse, d.qkv, sh.B, sh.T, sh.NH, 0);
        });
        cuda_check(cudaMemset(d.dqkv, 0xFF, sh.qkv_count() * sizeof(bf16)));
        backward_hs<64, backward_min_ctas<64>(), 96 - bwd_stream_rows<64>()>(d.dqkv, d.scratch, d.dout, d.qkv, d.out,
                                                                             d.lse, sh.B, sh.T, sh.NH, 0);
        const std::vector<bf16> dg = to_host(d.dqkv, sh.qkv_count());
        same_bs = !memcmp(dg.data(), runs[0].dqkv.data(), dg.size() * sizeof(bf16));
        cuda_check(cudaMemset(d.dqkv, 0xFF, sh.qkv_count() * sizeof(bf16)));
        backward_row_tiles<2, 2>(d, sh);
        const std::vector<bf16> dg2 = to_host(d.dqkv, sh.qkv_count());
        same_bwd_rt = !memcmp(dg2.data(), runs[0].dqkv.data(), dg2.size() * sizeof(bf16));
    }
    auto default_backward = [&](const QuantCodesOut &codes) {
        attention_backward(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, sh.T, sh.NH, sh.HS, 0, codes);
    };
    auto rt2_backward = [&](const QuantCodesOut &codes) { backward_row_tiles<2, 2>(d, sh, codes); };
    const bool codes = sh.T % 64 != 0 || (check_codes(d, sh, "FP8 codes = the cast's", default_backward) &&
                                          (sh.HS != 64 || check_codes(d, sh, "backward RT2: FP8 codes", rt2_backward)));
    bool reduce_ok;
    const std::vector<bf16> reduce_dqkv = check_reduce_dq(d, sh, runs[0].dqkv, &reduce_ok);

    buffers_free(d);

    bool ok = same_rt && same_bs && same_bwd_rt && same_order && codes && reduce_ok;
    printf("    %-5s %-30s %s\n", "all", "old grid order: same bits", same_order ? "ok" : "FAIL");
    if (sh.HS == 64) {
        printf("    %-5s %-30s %s\n", "all", "other RT: same bits", same_rt ? "ok" : "FAIL");
        printf("    %-5s %-30s %s\n", "all", "other BS: same bits", same_bs ? "ok" : "FAIL");
        printf("    %-5s %-30s %s\n", "all", "backward RT2: same bits", same_bwd_rt ? "ok" : "FAIL");
    }
    const bool same_bits = identical(runs[1], runs[0]) && identical(runs[2], runs[0]);
    printf("    %-5s %-30s %s\n", "all", "identical bits over 3 runs", same_bits ? "ok" : "FAIL");
    ok = ok && same_bits;

    const Reference ref = reference_attention(sh, qkv, dout);
    auto bf_at = [](const std::vector<bf16> &v) { return [&v](size_t i) { return (double)__bfloat162float(v[i]); }; };
    ErrorStat e = relative_error(ref.out, bf_at(runs[0].out), 0, -1);
    ok = report("out", "rel L2 error vs fp64", e.rel_l2, TOL_BF16, e.non_finite) && ok;
    const char *names[3] = {"dq", "dk", "dv"};
    for (int which = 0; which < 3; which++) {
        e = relative_error(ref.dqkv, bf_at(runs[0].dqkv), (size_t)sh.NH * sh.HS, which);
        ok = report(names[which], "rel L2 error vs fp64", e.rel_l2, TOL_BF16, e.non_finite) && ok;
    }
    e = relative_error(ref.dqkv, bf_at(reduce_dqkv), (size_t)sh.NH * sh.HS, 0);
    ok = report("dq", "reduce dQ: rel L2 vs fp64", e.rel_l2, TOL_BF16, e.non_finite) && ok;
    ok = report_lse("lse", ref, runs[0].lse) && ok;
    printf("%s B=%d NH=%d T=%d HS=%d\n", ok ? "PASS" : "FAIL", sh.B, sh.NH, sh.T, sh.HS);
    return ok;
}

// Every element of two runs' outputs finite (they were NaN-filled) and the two runs' bits identical.
static bool written_and_identical(const char *what, const Outputs &first, const Outputs &second) {
    size_t non_finite = 0;
    for (const bf16 &x : first.out) non_finite += !isfinite(__bfloat162float(x));
    for (float x : first.lse) non_finite += !isfinite(x);
    for (const bf16 &x : first.dqkv) non_finite += !isfinite(__bfloat162float(x));
    const bool same = identical(first, second);
    printf("    %-5s %snon-finite or unwritten %zu %s\n", "all", what, non_finite, non_finite ? "FAIL" : "ok");
    printf("    %-5s %sidentical bits over 2 runs %s\n", "all", what, same ? "ok" : "FAIL");
    return non_finite == 0 && same;
}

// Many heads (1024 to 2048 CTAs per kernel: several waves on any GPU; every case above fits on a
// GPU at once, at most 32 CTAs): forward and backward of the defaults twice over NaN-filled
// outputs, every element written and finite, and the two runs' bits identical (no fp64 reference
// at this size); also the backward with dQ by integer reduction twice (with --wgmma its wgmma
// version and the warp-specialized one, HS 64), whose adds here come from many CTAs at once.
static bool check_many_heads(bool wgmma) {
    bool ok = true;
    for (int HS : {64, 128}) {
        const Shape sh = {4, 2048 / HS, 1024, HS};
        printf("case B=%d NH=%d T=%d HS=%d: across waves of CTAs\n", sh.B, sh.NH, sh.T, HS);
        const Buffers d = buffers_alloc(sh);
        fill_uniform_bf16(d.qkv, sh.qkv_count(), 300 + HS, -1.0f, 1.0f);
        fill_uniform_bf16(d.dout, sh.out_count(), 301 + HS, -1.0f, 1.0f);
        auto run = [&] { return wgmma ? run_wgmma_poisoned(d, sh) : run_poisoned(d, sh); };
        const Outputs first = run(), second = run();
        bool case_ok = written_and_identical(wgmma ? "wgmma: " : "", first, second);
        if (!wgmma || HS == 64) {
            Outputs reduced[2] = {first, first};
            for (Outputs &r : reduced) {
                cuda_check(cudaMemset(d.dqkv, 0xFF, sh.qkv_count() * sizeof(bf16)));
                (wgmma ? attention_backward_wgmma_reduce_dq : attention_backward_reduce_dq)(
                    d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, sh.T, sh.NH, HS, 0, QuantCodesOut{});
                r.dqkv = to_host(d.dqkv, sh.qkv_count());
            }
            case_ok = written_and_identical("reduce dQ: ", reduced[0], reduced[1]) && case_ok;
            if (wgmma && g_ws) {  // and warp-specialized, the forward too
                const Outputs ws_fwd[2] = {run_ws_forward_poisoned(d, sh), run_ws_forward_poisoned(d, sh)};
                case_ok = written_and_identical("ws forward: ", ws_fwd[0], ws_fwd[1]) && case_ok;
                for (Outputs &r : reduced) {
                    cuda_check(cudaMemset(d.dqkv, 0xFF, sh.qkv_count() * sizeof(bf16)));
                    attention_detail::backward_reduce_dq_wgmma_ws_hs<64>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse,
                                                                         sh.B, sh.T, sh.NH, 0);
                    r.dqkv = to_host(d.dqkv, sh.qkv_count());
                }
                case_ok = written_and_identical("reduce dQ ws: ", reduced[0], reduced[1]) && case_ok;
            }
        }
        buffers_free(d);
        printf("%s B=%d NH=%d T=%d HS=%d (many heads)\n", case_ok ? "PASS" : "FAIL", sh.B, sh.NH, sh.T, HS);
        ok = ok && case_ok;
    }
    return ok;
}

// A NaN in one query element: the default backward's dQ is NaN in that row only (and dK, dV of the
// keys it sees). The backward with dQ by integer reduction must give NaN in the same dQ elements
// and finite values elsewhere: its integers cannot carry a NaN, so the delta kernel flags the row.
// With wgmma, the wgmma forward and backwards (HS 64), the warp-specialized one too.
static bool check_reduce_dq_nan(bool wgmma) {
    bool ok = true;
    for (int HS : {64, 128}) {
        if (wgmma && HS != 64) continue;
        const Shape sh = {1, 2, 100, HS};
        const Buffers d = buffers_alloc(sh);
        fill_uniform_bf16(d.qkv, sh.qkv_count(), 400 + HS, -1.0f, 1.0f);
        fill_uniform_bf16(d.dout, sh.out_count(), 401 + HS, -1.0f, 1.0f);
        const bf16 nan = __float2bfloat16(NAN);
        cuda_check(cudaMemcpy(d.qkv + sh.qkv_index(0, 37, 0, 1, 5), &nan, sizeof(bf16), cudaMemcpyHostToDevice));
        (wgmma ? attention_forward_wgmma : attention_forward)(d.out, d.lse, d.qkv, sh.B, sh.T, sh.NH, HS, 0);
        (wgmma ? attention_backward_wgmma : attention_backward)(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B,
                                                                sh.T, sh.NH, HS, 0, QuantCodesOut{});
        const std::vector<bf16> dflt = to_host(d.dqkv, sh.qkv_count());
        (wgmma ? attention_backward_wgmma_reduce_dq : attention_backward_reduce_dq)(
            d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, sh.T, sh.NH, HS, 0, QuantCodesOut{});
        std::vector<std::vector<bf16>> reduced = {to_host(d.dqkv, sh.qkv_count())};
        if (wgmma && g_ws) {
            attention_detail::backward_reduce_dq_wgmma_ws_hs<64>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B,
                                                                 sh.T, sh.NH, 0);
            reduced.push_back(to_host(d.dqkv, sh.qkv_count()));
        }
        buffers_free(d);
        size_t nan_dq = 0, mismatched = 0;
        for (int t = 0; t < sh.T; t++)
            for (int h = 0; h < sh.NH; h++)
                for (int e = 0; e < HS; e++) {
                    const size_t i = sh.qkv_index(0, t, 0, h, e);
                    const bool want = !isfinite(__bfloat162float(dflt[i]));
                    nan_dq += want;
                    for (const std::vector<bf16> &r : reduced) mismatched += want != !isfinite(__bfloat162float(r[i]));
                }
        const bool case_ok = nan_dq == (size_t)HS && mismatched == 0;
        printf("%s a NaN in q: %sreduce dQ's non-finite dQ elements are the default's (%zu of them, %zu differ), HS %d\n",
               case_ok ? "PASS" : "FAIL", wgmma ? "wgmma " : "", nan_dq, mismatched, HS);
        ok = ok && case_ok;
    }
    return ok;
}

static bool check_rejections() {
    const int bad[] = {0, 16, 32, 80, 96, 256};
    bool ok = attention_head_size_supported(64) && attention_head_size_supported(128);
    for (int hs : bad) ok = ok && !attention_head_size_supported(hs);
    printf("%s head sizes other than 64 and 128 are rejected\n", ok ? "PASS" : "FAIL");
    return ok;
}

// ---------------------------------------------------------------------------------------------
// Benchmark

struct BenchRow {
    int T, HS, B, NH;
    float fwd_ms, bwd_ms, wgmma_fwd_ms, wgmma_bwd_ms, wg1_fwd_ms, wg1_bwd_ms;  // < 0: not timed (wg1: 1 warpgroup per CTA)
    float pipelined_fwd_ms;  // the wgmma forward pipelined (2 warpgroups per CTA)
    float ws_fwd_ms;         // the wgmma forward warp-specialized (forward_wgmma_ws_hs)
    float reduce_dq_bwd_ms;  // attention_backward_reduce_dq, or with wgmma attention_backward_wgmma_reduce_dq
    float wg1_reduce_dq_bwd_ms;  // the latter with one warpgroup per CTA
    float ws_reduce_dq_bwd_ms;   // and warp-specialized (backward_reduce_dq_wgmma_ws_hs)
};

static double tflops(double flops, float ms) { return flops / (ms * 1e-3) / 1e12; }

// One timing as a line for scripts (scripts/gpu_run_bundle.sh's attention table): "attention_ms T
// HS NAME MS", NAME the kernels as the trainer's --attention modes pair them; nothing if not timed.
static void print_ms_line(int T, int HS, const char *name, float ms) {
    if (ms >= 0) printf("attention_ms %d %d %s %.4f\n", T, HS, name, ms);
}

static BenchRow bench(int T, int HS, uint64_t seed, bool wgmma) {
    BenchRow row = {T, HS, 16384 / T, 2048 / HS, 0, 0, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    const Shape sh = {row.B, row.NH, T, HS};
    const Buffers d = buffers_alloc(sh);
    fill_uniform_bf16(d.qkv, sh.qkv_count(), seed, -1.0f, 1.0f);
    fill_uniform_bf16(d.dout, sh.out_count(), seed + 1, -1.0f, 1.0f);
    cuda_check(cudaDeviceSynchronize());

    const int warmup = 3, reps = 21;
    row.fwd_ms = time_median_ms([&] { attention_forward(d.out, d.lse, d.qkv, sh.B, T, sh.NH, HS, 0); }, warmup, reps,
                                0);
    row.bwd_ms = time_median_ms(
        [&] { attention_backward(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, T, sh.NH, HS, 0); }, warmup,
        reps, 0);
    if (!wgmma)
        row.reduce_dq_bwd_ms = time_median_ms(
            [&] { attention_backward_reduce_dq(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, T, sh.NH, HS, 0); },
            warmup, reps, 0);
    if (wgmma) {
        row.wgmma_fwd_ms = time_median_ms(
            [&] { attention_forward_wgmma(d.out, d.lse, d.qkv, sh.B, T, sh.NH, HS, 0); }, warmup, reps, 0);
        row.wg1_fwd_ms = time_median_ms([&] { wgmma_forward_one_warpgroup(d, sh); }, warmup, reps, 0);
        if (g_pipelined) row.pipelined_fwd_ms = time_median_ms([&] { wgmma_forward_pipelined<2>(d, sh); }, warmup, reps, 0);
        if (HS == 64) {
            row.wgmma_bwd_ms = time_median_ms(
                [&] { attention_backward_wgmma(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, T, sh.NH, HS, 0); },
                warmup, reps, 0);
            row.wg1_bwd_ms = time_median_ms([&] { wgmma_backward_one_warpgroup(d, sh); }, warmup, reps, 0);
            row.reduce_dq_bwd_ms = time_median_ms(
                [&] {
                    attention_backward_wgmma_reduce_dq(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, T, sh.NH,
                                                       HS, 0);
                },
                warmup, reps, 0);
            row.wg1_reduce_dq_bwd_ms = time_median_ms(
                [&] {
                    attention_detail::backward_reduce_dq_wgmma_hs<64, 1>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse,
                                                                         sh.B, T, sh.NH, 0);
                },
                warmup, reps, 0);
            if (g_ws)
                row.ws_fwd_ms = time_median_ms(
                    [&] { attention_detail::forward_wgmma_ws_hs<64>(d.out, d.lse, d.qkv, sh.B, T, sh.NH, 0); }, warmup,
                    reps, 0);
            if (g_ws) row.ws_reduce_dq_bwd_ms = time_median_ms(
                [&] {
                    attention_detail::backward_reduce_dq_wgmma_ws_hs<64>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse,
                                                                         sh.B, T, sh.NH, 0);
                },
                warmup, reps, 0);
        }
    }

    buffers_free(d);
    return row;
}

// The launch order of llmc/attention.cuh's cta_grid (heads in groups of G, each group's blocks
// longest first) against all heads in one group (head_group_override = B NH: the order before
// 2026-11-29), at the benchmark's shapes: the default forward and backward, and with --wgmma the
// wgmma forward and, at HS 64, the wgmma backward and the warp-specialized one (with --ws).
static void time_grid_order(bool wgmma) {
    int device, sms;
    cuda_check(cudaGetDevice(&device));
    cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    printf("\ngrid order, B*T = 16384, NH*HS = 2048, median of 21 runs (ms): heads in groups (G: the largest divisor\n"
           "of B NH up to 4 x %d SMs / blocks per head) against all heads in one group (\"old\")\n", sms);
    printf("%5s %4s | %9s %9s | %9s %9s", "T", "HS", "fwd", "fwd old", "bwd", "bwd old");
    if (wgmma) printf(" | %9s %9s | %9s %9s | %9s %9s", "wgmma fwd", "old", "wgmma bwd", "old", "ws rdQ", "old");
    printf("\n");
    uint64_t seed = 5000;
    for (int HS : {64, 128})
        for (int T : {1024, 2048, 4096}) {
            const Shape sh = {16384 / T, 2048 / HS, T, HS};
            const Buffers d = buffers_alloc(sh);
            fill_uniform_bf16(d.qkv, sh.qkv_count(), seed += 2, -1.0f, 1.0f);
            fill_uniform_bf16(d.dout, sh.out_count(), seed + 1, -1.0f, 1.0f);
            attention_forward(d.out, d.lse, d.qkv, sh.B, T, sh.NH, HS, 0);
            auto both = [&](auto launch) {  // {grouped, old} ms
                float ms[2];
                for (int old = 0; old < 2; old++) {
                    attention_detail::head_group_override = old ? sh.B * sh.NH : 0;
                    ms[old] = time_median_ms(launch, 3, 21, 0);
                }
                attention_detail::head_group_override = 0;
                printf(" | %9.3f %9.3f", ms[0], ms[1]);
            };
            printf("%5d %4d", T, HS);
            both([&] { attention_forward(d.out, d.lse, d.qkv, sh.B, T, sh.NH, HS, 0); });
            both([&] { attention_backward(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, T, sh.NH, HS, 0); });
            if (wgmma) {
                both([&] { attention_forward_wgmma(d.out, d.lse, d.qkv, sh.B, T, sh.NH, HS, 0); });
                if (HS == 64) {
                    both([&] {
                        attention_backward_wgmma(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, T, sh.NH, HS, 0);
                    });
                    if (g_ws) both([&] {
                        attention_detail::backward_reduce_dq_wgmma_ws_hs<64>(d.dqkv, d.scratch, d.dout, d.qkv, d.out,
                                                                             d.lse, sh.B, T, sh.NH, 0);
                    });
                    else printf(" | %9s %9s", "-", "-");
                } else printf(" | %9s %9s | %9s %9s", "-", "-", "-", "-");
            }
            printf("\n");
            buffers_free(d);
        }
}

// Kernel variants side by side at HS 64 (llmc/attention.cuh: forward_min_ctas, backward_min_ctas,
// forward_row_tiles, bwd_stream_rows, the backward kernels' RT): the compiler's free register
// allocation against the register caps that fit 4 forward / 3 backward CTAs per SM, the forward
// with 2 row tiles per warp, the backward with 32-row streamed tiles, and the backward with 2 row
// tiles per warp in its dK/dV kernel, its dQ kernel, and both (backward_row_tiles). Every variant
// must give the same bits; returns false if not.
static bool tune_occupancy(void) {
    using namespace attention_detail;
    bool identical = true;
    float rt2_ms[2] = {-1.0f, -1.0f};  // RT2 at T 1024 and 2048
    printf("\nvariants, HS 64, B*T = 16384, NH = 32, median of 21 runs (ms): forward with 1 row tile per warp\n"
           "(free registers; capped for 4 CTAs/SM) and 2 row tiles; backward with 64-row streamed tiles (free;\n"
           "capped for 3 CTAs/SM), 32-row ones (free; capped for 3 CTAs/SM, 164 registers, no spills), and 2 row\n"
           "tiles per warp (32-row streamed tiles, free registers) in the dK/dV kernel, the dQ kernel, and both\n");
    printf("%5s | %8s %8s %8s | %8s %8s %8s %8s %8s %8s %8s | %s\n", "T", "fwd free", "fwd 4/SM", "fwd RT2",
           "bwd free", "bwd 3/SM", "BS32", "BS32 3/SM", "KV RT2", "dQ RT2", "RT2", "bits");
    for (int T : {1024, 2048}) {
        const Shape sh = {16384 / T, 32, T, 64};
        const Buffers d = buffers_alloc(sh);
        fill_uniform_bf16(d.qkv, sh.qkv_count(), 2000 + T, -1.0f, 1.0f);
        fill_uniform_bf16(d.dout, sh.out_count(), 2001 + T, -1.0f, 1.0f);
        const int warmup = 3, reps = 21;
        float ms[10];
        std::vector<bf16> outs[3], grads[7];
        std::vector<float> lses[3];
        // Each variant: its median time, then its outputs for the bit comparison.
        auto forward = [&](int v, auto launch) {
            ms[v] = time_median_ms(launch, warmup, reps, 0);
            outs[v] = to_host(d.out, sh.out_count()), lses[v] = to_host(d.lse, sh.lse_count());
        };
        auto backward = [&](int v, auto launch) {
            ms[3 + v] = time_median_ms(launch, warmup, reps, 0);
            grads[v] = to_host(d.dqkv, sh.qkv_count());
        };
        forward(0, [&] { forward_hs<64, 1, 1>(d.out, d.lse, d.qkv, sh.B, T, sh.NH, 0); });
        forward(1, [&] { forward_hs<64, 4, 1>(d.out, d.lse, d.qkv, sh.B, T, sh.NH, 0); });
        forward(2, [&] { forward_hs<64, 1, 2>(d.out, d.lse, d.qkv, sh.B, T, sh.NH, 0); });
        backward(0, [&] { backward_hs<64, 1, 64>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, T, sh.NH, 0); });
        backward(1, [&] { backward_hs<64, 3, 64>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, T, sh.NH, 0); });
        backward(2, [&] { backward_hs<64, 1, 32>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, T, sh.NH, 0); });
        backward(3, [&] { backward_hs<64, 3, 32>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, T, sh.NH, 0); });
        backward(4, [&] { backward_row_tiles<2, 1>(d, sh); });
        backward(5, [&] { backward_row_tiles<1, 2>(d, sh); });
        backward(6, [&] { backward_row_tiles<2, 2>(d, sh); });
        bool same = true;
        for (int v = 1; v < 7; v++) same = same && !memcmp(grads[v].data(), grads[0].data(), grads[0].size() * sizeof(bf16));
        for (int v = 1; v < 3; v++)
            same = same && !memcmp(outs[v].data(), outs[0].data(), outs[0].size() * sizeof(bf16)) &&
                   !memcmp(lses[v].data(), lses[0].data(), lses[0].size() * sizeof(float));
        identical = identical && same;
        printf("%5d | %8.3f %8.3f %8.3f | %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f | %s\n", T, ms[0], ms[1], ms[2],
               ms[3], ms[4], ms[5], ms[6], ms[7], ms[8], ms[9], same ? "identical" : "DIFFER (FAIL)");
        rt2_ms[T == 2048] = ms[9];
        buffers_free(d);
    }
    print_ms_line(1024, 64, "mma_rt2_bwd", rt2_ms[0]);  // the backward of --attention mma-rt2
    print_ms_line(2048, 64, "mma_rt2_bwd", rt2_ms[1]);
    return identical;
}

// The backward kernel by kernel at HS 64 (delta, dK/dV, dQ, and those two with 2 row tiles per
// warp; llmc/attention.cuh's backward_*_hs):
// where its time goes, and whether one implementation's dK/dV with the other's dQ would beat both
// (the kernels write disjoint parts of dqkv, so any pair is a complete backward).
static void time_backward_kernels(bool wgmma) {
    using namespace attention_detail;
    printf("\nbackward by kernel, HS 64, B*T = 16384, NH = 32, median of 21 runs (ms): delta, then dK/dV and dQ of\n"
           "mma.sync, each also with 2 row tiles per warp (RT2)%s; each T's second row (codes) with dqkv's FP8\n"
           "codes instead of dqkv; rdQ rest: what every backward with dQ by integer reduction adds around its\n"
           "dK/dV kernel (the accumulator's memset, delta with the bounds, the finalize kernel)\n",
           wgmma ? ", dK/dV and dQ of wgmma" : "");
    printf("%5s | %8s | %9s %9s %9s %9s | %9s%s\n", "T", "delta", "mma dK/dV", "mma dQ", "dK/dV RT2", "dQ RT2",
           "rdQ rest", wgmma ? " | wgmma dK/dV  wgmma dQ" : "");
    for (int T : {1024, 2048}) {
        const Shape sh = {16384 / T, 32, T, 64};
        const Buffers d = buffers_alloc(sh);
        fill_uniform_bf16(d.qkv, sh.qkv_count(), 3000 + T, -1.0f, 1.0f);
        fill_uniform_bf16(d.dout, sh.out_count(), 3001 + T, -1.0f, 1.0f);
        attention_forward(d.out, d.lse, d.qkv, sh.B, T, sh.NH, 64, 0);
        const int warmup = 3, reps = 21;
        const float *delta = (const float *)d.scratch;
        float ms[8];
        ms[0] = time_median_ms([&] { backward_delta<64>(d.scratch, d.dout, d.out, sh.B, T, sh.NH, 0); }, warmup, reps, 0);
        ms[1] = time_median_ms([&] { backward_kv_hs<64>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, T, sh.NH, 0); },
                               warmup, reps, 0);
        ms[2] = time_median_ms([&] { backward_dq_hs<64>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, T, sh.NH, 0); },
                               warmup, reps, 0);
        ms[5] = time_median_ms(
            [&] { backward_kv_hs<64, 1, 32, 2>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, T, sh.NH, 0); }, warmup, reps,
            0);
        ms[6] = time_median_ms(
            [&] { backward_dq_hs<64, 1, 32, 2>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, T, sh.NH, 0); }, warmup, reps,
            0);
        ms[7] = time_median_ms(
            [&] {
                reduce_dq_steps<64>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, sh.B, T, sh.NH, 0,
                                    [](const float *, DqReduce) {});
            },
            warmup, reps, 0);
        printf("%5d | %8.3f | %9.3f %9.3f %9.3f %9.3f | %9.3f", T, ms[0], ms[1], ms[2], ms[5], ms[6], ms[7]);
        if (wgmma) {
            ms[3] = time_median_ms(
                [&] { backward_kv_wgmma_hs<64>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, T, sh.NH, 0); }, warmup,
                reps, 0);
            ms[4] = time_median_ms(
                [&] { backward_dq_wgmma_hs<64>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, T, sh.NH, 0); }, warmup,
                reps, 0);
            printf(" | %11.3f %9.3f", ms[3], ms[4]);
        }
        printf("\n");
        // The same kernels writing dqkv's FP8 codes instead (the trainer's FP8 step with FP8 weight
        // gradients: q, q^T, amax and column sums from shared memory after the loop).
        const size_t n = sh.qkv_count(), sums = (size_t)quant_colsum_rows(16384) * 3 * 32 * 64;
        float *s = device_alloc<float>(2);
        to_device(s, std::vector<float>{256.0f, 0.0f});
        const QuantCodesOut codes{device_alloc<uint8_t>(n), device_alloc<uint8_t>(n), s, s + 1, QUANT_TO_E5M2,
                                  device_alloc<float>(sums)};
        ms[1] = time_median_ms([&] { backward_kv_hs<64>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, T, sh.NH, 0, codes); },
                               warmup, reps, 0);
        ms[2] = time_median_ms([&] { backward_dq_hs<64>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, T, sh.NH, 0, codes); },
                               warmup, reps, 0);
        ms[5] = time_median_ms(
            [&] { backward_kv_hs<64, 1, 32, 2>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, T, sh.NH, 0, codes); },
            warmup, reps, 0);
        ms[6] = time_median_ms(
            [&] { backward_dq_hs<64, 1, 32, 2>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, T, sh.NH, 0, codes); },
            warmup, reps, 0);
        printf("%5s | %8s | %9.3f %9.3f %9.3f %9.3f | %9s", "codes", "", ms[1], ms[2], ms[5], ms[6], "");
        if (wgmma) {
            ms[3] = time_median_ms(
                [&] { backward_kv_wgmma_hs<64>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, T, sh.NH, 0, codes); },
                warmup, reps, 0);
            ms[4] = time_median_ms(
                [&] { backward_dq_wgmma_hs<64>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, T, sh.NH, 0, codes); },
                warmup, reps, 0);
            printf(" | %11.3f %9.3f", ms[3], ms[4]);
        }
        printf("\n");
        cuda_check(cudaFree(codes.q)), cuda_check(cudaFree(codes.qt)), cuda_check(cudaFree(codes.colsum));
        cuda_check(cudaFree(s));
        buffers_free(d);
    }
}

// The backward with dQ by integer reduction in each variant beside the default backward (median of
// 21 runs, ms): RT 1 and 2 row tiles per warp in its dK/dV kernel (HS 64; HS 128 RT 1), each with
// red.global from registers and with the bulk reduction of a staged shared tile.
static void time_reduce_dq(void) {
    using namespace attention_detail;
    printf("\nbackward with dQ by integer reduction (rdQ), B*T = 16384, NH*HS = 2048, median of 21 runs (ms):\n"
           "the default backward, then rdQ with 1 or 2 row tiles per warp (RT) and red.global or bulk reductions\n");
    printf("%5s %4s | %8s | %9s %9s %9s %9s\n", "T", "HS", "default", "RT1 red", "RT1 bulk", "RT2 red", "RT2 bulk");
    const int shapes[][2] = {{1024, 64}, {2048, 64}, {4096, 64}, {1024, 128}, {2048, 128}};
    for (const auto &shape : shapes) {
        const int T = shape[0], HS = shape[1];
        const Shape sh = {16384 / T, 2048 / HS, T, HS};
        const Buffers d = buffers_alloc(sh);
        fill_uniform_bf16(d.qkv, sh.qkv_count(), 5000 + T + HS, -1.0f, 1.0f);
        fill_uniform_bf16(d.dout, sh.out_count(), 5001 + T + HS, -1.0f, 1.0f);
        attention_forward(d.out, d.lse, d.qkv, sh.B, T, sh.NH, HS, 0);
        const int warmup = 3, reps = 21;
        auto time = [&](auto launch) { return time_median_ms(launch, warmup, reps, 0); };
        const float base = time([&] {
            attention_backward(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, T, sh.NH, HS, 0);
        });
        // RT 2 at HS 64 only
        const float ms[4] = {time([&] { reduce_dq_backward<1, DQ_RED>(d, sh); }),
                             time([&] { reduce_dq_backward<1, DQ_BULK>(d, sh); }),
                             HS == 64 ? time([&] { reduce_dq_backward<2, DQ_RED>(d, sh); }) : -1.0f,
                             HS == 64 ? time([&] { reduce_dq_backward<2, DQ_BULK>(d, sh); }) : -1.0f};
        printf("%5d %4d | %8.3f |", T, HS, base);
        for (float m : ms) m < 0 ? printf(" %9s", "n/a") : printf(" %9.3f", m);
        printf("\n");
        buffers_free(d);
    }
}

static void print_bench_table(const std::vector<BenchRow> &rows, bool wgmma) {
    printf("\nbenchmark: B*T = 16384 tokens, NH*HS = 2048; median of 21 runs; TFLOP/s with forward = "
           "2 B NH T^2 HS (causal), backward = 2.5 x forward\n");
    printf("%5s %4s %3s %3s | %8s %7s | %8s %7s", "T", "HS", "B", "NH", "fwd ms", "TFLOP/s", "bwd ms", "TFLOP/s");
    if (wgmma)
        printf(" | %9s %7s | %9s %7s | %9s %7s | %9s %7s | %9s %7s | %9s %7s | %9s %7s | %9s %7s | %9s %7s",
               "wgmma fwd", "TFLOP/s", "wgmma bwd", "TFLOP/s", "1-WG fwd", "TFLOP/s", "1-WG bwd", "TFLOP/s", "pipe fwd",
               "TFLOP/s", "ws fwd", "TFLOP/s", "wg rdQ bwd", "TFLOP/s", "1-WG rdQ", "TFLOP/s", "ws rdQ", "TFLOP/s");
    else printf(" | %9s %7s", "rdQ bwd", "TFLOP/s");
    printf("\n");
    auto cell = [](float ms, double flops) {
        if (ms < 0) printf(" | %9s %7s", "n/a", "");
        else printf(" | %9.3f %7.1f", ms, tflops(flops, ms));
    };
    for (const BenchRow &r : rows) {
        const double fwd_flops = 2.0 * r.B * r.NH * (double)r.T * r.T * r.HS, bwd_flops = 2.5 * fwd_flops;
        printf("%5d %4d %3d %3d", r.T, r.HS, r.B, r.NH);
        cell(r.fwd_ms, fwd_flops);
        cell(r.bwd_ms, bwd_flops);
        if (wgmma) {
            cell(r.wgmma_fwd_ms, fwd_flops), cell(r.wgmma_bwd_ms, bwd_flops);
            cell(r.wg1_fwd_ms, fwd_flops), cell(r.wg1_bwd_ms, bwd_flops);
            cell(r.pipelined_fwd_ms, fwd_flops), cell(r.ws_fwd_ms, fwd_flops);
        }
        cell(r.reduce_dq_bwd_ms, bwd_flops);
        if (wgmma) cell(r.wg1_reduce_dq_bwd_ms, bwd_flops), cell(r.ws_reduce_dq_bwd_ms, bwd_flops);
        printf("\n");
    }
    for (const BenchRow &r : rows) {
        print_ms_line(r.T, r.HS, "mma_fwd", r.fwd_ms);
        print_ms_line(r.T, r.HS, "mma_bwd", r.bwd_ms);
        print_ms_line(r.T, r.HS, wgmma ? "wgmma_rdq_bwd" : "mma_rdq_bwd", r.reduce_dq_bwd_ms);
        print_ms_line(r.T, r.HS, "wgmma_fwd", r.wgmma_fwd_ms);
        print_ms_line(r.T, r.HS, "wgmma_bwd", r.wgmma_bwd_ms);
        print_ms_line(r.T, r.HS, "wgmma_pipelined_fwd", r.pipelined_fwd_ms);
        print_ms_line(r.T, r.HS, "wgmma_ws_fwd", r.ws_fwd_ms);
        print_ms_line(r.T, r.HS, "wgmma_ws_bwd", r.ws_reduce_dq_bwd_ms);
    }
}

// Each HS 64 kernel once at the benchmark's T 1024 shape, for a profiler (--profile-once).
static void profile_once(bool wgmma) {
    using namespace attention_detail;
    const Shape sh = {16, 32, 1024, 64};
    const Buffers d = buffers_alloc(sh);
    fill_uniform_bf16(d.qkv, sh.qkv_count(), 4000, -1.0f, 1.0f);
    fill_uniform_bf16(d.dout, sh.out_count(), 4001, -1.0f, 1.0f);
    const float *delta = (const float *)d.scratch;
    if (wgmma) {
        attention_forward_wgmma(d.out, d.lse, d.qkv, sh.B, sh.T, sh.NH, 64, 0);
        if (g_pipelined) forward_wgmma_hs<64, fwd_wgmma::DEFAULT_WG, true>(d.out, d.lse, d.qkv, sh.B, sh.T, sh.NH, 0);
        if (g_ws) forward_wgmma_ws_hs<64>(d.out, d.lse, d.qkv, sh.B, sh.T, sh.NH, 0);
    }
    attention_forward(d.out, d.lse, d.qkv, sh.B, sh.T, sh.NH, 64, 0);
    backward_delta<64>(d.scratch, d.dout, d.out, sh.B, sh.T, sh.NH, 0);
    backward_kv_hs<64>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, sh.T, sh.NH, 0);
    backward_dq_hs<64>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, sh.T, sh.NH, 0);
    backward_kv_hs<64, 1, 32, 2>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, sh.T, sh.NH, 0);
    backward_dq_hs<64, 1, 32, 2>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, sh.T, sh.NH, 0);
    backward_reduce_dq_hs<64, 2, DQ_BULK>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, sh.T, sh.NH, 0);
    backward_reduce_dq_hs<64, 2, DQ_RED>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, sh.T, sh.NH, 0);
    if (wgmma) {
        backward_kv_wgmma_hs<64>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, sh.T, sh.NH, 0);
        backward_dq_wgmma_hs<64>(d.dqkv, d.dout, d.qkv, d.lse, delta, sh.B, sh.T, sh.NH, 0);
        backward_reduce_dq_wgmma_hs<64>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, sh.T, sh.NH, 0);
        backward_reduce_dq_wgmma_hs<64, 1>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, sh.T, sh.NH, 0);
        if (g_ws) backward_reduce_dq_wgmma_ws_hs<64>(d.dqkv, d.scratch, d.dout, d.qkv, d.out, d.lse, sh.B, sh.T, sh.NH, 0);
    }
    cuda_check(cudaDeviceSynchronize());
    printf("profile-once: B %d NH %d T %d HS %d, each kernel once%s\n", sh.B, sh.NH, sh.T, sh.HS,
           wgmma ? " (and the wgmma ones)" : "");
    buffers_free(d);
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    bool check_only = false, small_only = false, short_only = false, wgmma = false, once = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check")) check_only = true;
        else if (!strcmp(argv[i], "--check-small")) check_only = small_only = true;
        else if (!strcmp(argv[i], "--check-short")) check_only = small_only = short_only = true;
        else if (!strcmp(argv[i], "--wgmma")) wgmma = true;
        else if (!strcmp(argv[i], "--ws")) g_ws = true;
        else if (!strcmp(argv[i], "--pipelined")) g_pipelined = true;
        else if (!strcmp(argv[i], "--profile-once")) once = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: %s [--wgmma [--ws] [--pipelined]] [--check | --check-small | --check-short | --profile-once]\n"
                   "  --wgmma        the wgmma kernels (sm_90a; backward at HS 64 only) instead of the default ones:\n"
                   "                 their checks, and their times beside the default's (a run of its own, so\n"
                   "                 that a failure of these unverified kernels cannot cut the default's checks short)\n"
                   "  --ws           with --wgmma, the warp-specialized forward and rdQ backward too\n"
                   "  --pipelined    with --wgmma, the pipelined wgmma forward too\n"
                   "  --check        correctness checks only, no benchmark\n"
                   "  --check-small  only the small cases (for compute-sanitizer's racecheck, which slows kernels\n"
                   "                 down a hundredfold and more): not the many-heads case\n"
                   "  --check-short  the small cases with T < 512 (for the CPU emulator's race build)\n"
                   "  --profile-once each HS 64 kernel once at T 1024 (B 16, NH 32), no checks, for a profiler\n",
                   argv[0]);
            return 0;
        } else usage_error("unknown argument '%s'", argv[i]);
    }
    int device;
    cudaDeviceProp prop;
    cuda_check(cudaGetDevice(&device));
    cuda_check(cudaGetDeviceProperties(&prop, device));
    printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
    attention_require_supported(1, 64);
    if (wgmma && !attention_wgmma_available()) {
        printf("FAIL wgmma forward unavailable: %s\n", wgmma_unavailable_reason());
        return 1;
    }
    if (g_ws && !wgmma) usage_error("--ws is a variant of the wgmma kernels: with --wgmma");
    if (g_pipelined && !wgmma) usage_error("--pipelined is a variant of the wgmma kernels: with --wgmma");
    if (once) {
        if (check_only) usage_error("--profile-once runs no checks: not with --check, --check-small or --check-short");
        profile_once(wgmma);
        return 0;
    }

    // T = 1 and T not a multiple of the 64-row tiles (or of the 32-row backward tiles of HS 128),
    // several batches and heads so that (b, h) indexing is exercised; sharp-softmax cases. Two run
    // at HS 64 with T beyond one 128-query CTA of the wgmma kernels: T 256 two full CTAs, T 300 a
    // third CTA whose second warpgroup has no rows (the wgmma forward skips its tiles); T 1000 at HS
    // 64 has the warp-specialized forward refill its stages (8 tiles of 128 keys in 4). Where
    // T % 64 == 0 (T 64 and 256 at HS 64, the last case at HS 128) the backward's FP8 codes too.
    const Case cases[] = {
        {{1, 1, 1, 64}, 1.0f, 101},   {{1, 1, 1, 128}, 1.0f, 102},  {{2, 3, 37, 64}, 1.0f, 103},
        {{1, 2, 64, 64}, 1.0f, 104},  {{2, 2, 65, 128}, 1.0f, 105}, {{1, 3, 127, 128}, 1.0f, 106},
        {{2, 4, 200, 64}, 1.0f, 107}, {{1, 2, 333, 128}, 1.0f, 108}, {{1, 2, 1000, 64}, 1.0f, 109},
        {{1, 2, 1000, 128}, 3.0f, 110}, {{2, 2, 256, 64}, 1.0f, 111}, {{1, 2, 300, 64}, 3.0f, 112},
        {{2, 1, 128, 128}, 1.0f, 113},
    };
    int failed = 0, n_checks = 0;
    if (wgmma) {  // first: where they fail, the attention cases below fail too
        failed += !check_wgmma_units();
        n_checks++;
    }
    for (const Case &c : cases) {
        if (short_only && c.shape.T >= 512) continue;
        failed += !check_case(c, wgmma);
        n_checks++;
    }
    if (!small_only) {
        failed += !check_many_heads(wgmma);
        n_checks++;
    }
    failed += !check_reduce_dq_nan(wgmma);
    n_checks++;
    failed += !check_rejections();
    n_checks++;
    printf("\nchecks: %d passed, %d failed\n", n_checks - failed, failed);

    if (!check_only) {
        std::vector<BenchRow> rows;
        const int Ts[] = {1024, 2048, 4096}, HSs[] = {64, 128};
        uint64_t seed = 1000;
        for (int HS : HSs)
            for (int T : Ts) rows.push_back(bench(T, HS, seed += 2, wgmma));
        print_bench_table(rows, wgmma);
        time_backward_kernels(wgmma);
        time_grid_order(wgmma);
        if (!wgmma) {
            failed += !tune_occupancy();
            time_reduce_dq();
        }
    }
    return failed ? 1 : 0;
}
