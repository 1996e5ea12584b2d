// Unit tests of the ZeRO shard plan (llmc/zero.h) and of the buffer collectives (llmc/comm.h).
// Run as one process and under mpirun with any number of ranks; exits non-zero on a failure.
//   - the plan: for many parameter counts and world sizes the slices are equal, aligned and tile
//     the padded buffer (padding < W * ZERO_ALIGN); zero_split of every segment gives parts that
//     concatenate to the segment in rank order; the memory formula of each stage.
//   - the collectives, on seeded random data (every rank can compute every rank's input):
//     reduce-scatter with uneven counts, empty parts and a part longer than one MPI message
//     piece, against the documented summation order bit for bit; all-gather (fp32 and 16-bit);
//     the f32 all-reduce (a length that W does not divide); the f64 all-reduce in rank order; broadcast.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../llmc/comm.h"
#include "../../../llmc/rng.h"
#include "../../../llmc/utils.h"
#include "../../../llmc/zero.h"

static int g_failures;

static void check(int ok, const char *what, Comm *c) {
    if (!ok) {
        fprintf(stderr, "FAIL (rank %d): %s\n", c->rank, what);
        g_failures++;
    }
}

// Rank p's input element i of test case k: 24 random bits scaled by a random power of two in
// [2^-8, 2^8), so that nearly every sum rounds and a wrong summation order shows.
static float input(int k, int p, size_t i) {
    uint64_t seed = 1234 + (uint64_t)k;
    float mantissa = rng_uniform(seed, (uint64_t)p, 2 * i) - 0.5f;
    return ldexpf(mantissa, (int)(rng_uniform(seed, (uint64_t)p, 2 * i + 1) * 16.0f) - 8);
}

static void test_plan(Comm *c) {
    const int shapes[][4] = {{1, 8, 2, 37}, {2, 64, 4, 512}, {3, 48, 3, 1000}, {1, 64, 1, 50257}};
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        GPT2Config cfg = {.max_seq_len = 16 + (int)s, .vocab_size = shapes[s][3], .num_layers = shapes[s][0],
                          .channels = shapes[s][1], .num_heads = shapes[s][2]};
        cfg.padded_vocab_size = gpt2_pad_vocab(cfg.vocab_size);
        size_t N = gpt2_num_params(&cfg);
        for (int W = 1; W <= 9; W++) {
            for (int stage = 0; stage <= 3; stage++) {
                ZeroPlan p;
                zero_plan_init(&p, &cfg, stage, W - 1, W);
                check(p.num_params == N && p.padded >= N && p.padded - N < (size_t)W * ZERO_ALIGN, "padding", c);
                check(p.slice * (size_t)W == p.padded && p.slice % ZERO_ALIGN == 0, "equal aligned slices", c);
                size_t next = 0, Mb = 0;
                for (int seg = 0; seg < p.num_segments; seg++) {
                    ZeroRange r = zero_segment(&cfg, seg);
                    check(r.begin == next && r.end > r.begin && r.end - r.begin <= p.max_segment, "segments tile", c);
                    if (seg > 0 && r.end - r.begin > Mb) Mb = r.end - r.begin;
                    next = r.end;
                    size_t counts[9], at = r.begin;
                    zero_split(&p, r, counts);
                    for (int q = 0; q < W; q++) {
                        ZeroRange sq = zero_slice(&p, q);
                        if (counts[q] > 0) check(at >= sq.begin && at + counts[q] <= sq.end, "part inside its slice", c);
                        at += counts[q];
                    }
                    check(at == r.end, "parts concatenate to the segment", c);
                    ZeroRange own = zero_own_part(&p, r);
                    check(own.end - own.begin == counts[W - 1], "own part", c);
                }
                check(next == N, "segments cover the parameters", c);
                ZeroMemory m = zero_memory(&p);
                size_t S = p.slice, Np = p.padded, M = p.max_segment, F = 2 * (size_t)cfg.channels;
                size_t E = zero_segment(&cfg, 0).end;
                check(p.embed_numel == E && p.max_block_segment == Mb && M == (E > Mb ? E : Mb), "segment sizes", c);
                size_t want_p = stage < 3 ? Np : S + M + F, want_g = stage < 2 ? Np : S + E + Mb;
                size_t want_o = stage < 1 ? 2 * Np : 2 * S;
                check(m.params == want_p && m.grads == want_g && m.optimizer == want_o, "memory formula", c);
            }
        }
    }
}

// The documented order: element of rank q's part = ((x_q + x_{q-1}) + x_{q-2}) + ... + x_{q+1}.
static float ordered_sum(int k, int q, int W, size_t i) {
    float s = input(k, q, i);
    for (int j = 1; j < W; j++) s += input(k, (q - j + W) % W, i);
    return s;
}

static void test_reduce_scatter_allgather(Comm *c, int k, const size_t *counts) {
    const int W = c->size, r = c->rank;
    size_t total = 0, mine = 0;
    for (int q = 0; q < W; q++) {
        if (q == r) mine = total;
        total += counts[q];
    }
    float *buf = (float *)malloc_check(total * sizeof(float));
    for (size_t i = 0; i < total; i++) buf[i] = input(k, r, i);
    c->reduce_scatter_sum_f32(c, buf, counts);
    size_t bad = 0;
    for (size_t i = 0; i < counts[r]; i++) bad += buf[mine + i] != ordered_sum(k, r, W, mine + i);
    char what[128];
    snprintf(what, sizeof(what), "reduce-scatter case %d: %zu of %zu elements differ", k, bad, counts[r]);
    check(bad == 0, what, c);

    // All-gather: this rank's part holds the reduced sums; every part must arrive intact.
    for (size_t i = 0; i < total; i++)
        if (i < mine || i >= mine + counts[r]) buf[i] = NAN;
    c->allgather_f32(c, buf, counts);
    bad = 0;
    size_t at = 0;
    for (int q = 0; q < W; q++)
        for (size_t i = 0; i < counts[q]; i++, at++) bad += buf[at] != ordered_sum(k, q, W, at);
    snprintf(what, sizeof(what), "all-gather case %d: %zu of %zu elements differ", k, bad, total);
    check(bad == 0, what, c);
    free(buf);

    // The 16-bit all-gather (bf16 weights): element i of rank q's part is (q, i) packed in 16 bits.
    uint16_t *half = (uint16_t *)malloc_check((total ? total : 1) * sizeof(uint16_t));
    for (size_t i = 0; i < total; i++)
        half[i] = i >= mine && i < mine + counts[r] ? (uint16_t)(r * 4099 + i * 31) : 0xffff;
    c->allgather_u16(c, half, counts);
    bad = 0;
    at = 0;
    for (int q = 0; q < W; q++)
        for (size_t i = 0; i < counts[q]; i++, at++) bad += half[at] != (uint16_t)(q * 4099 + at * 31);
    snprintf(what, sizeof(what), "16-bit all-gather case %d: %zu of %zu elements differ", k, bad, total);
    check(bad == 0, what, c);
    free(half);
}

static void test_collectives(Comm *c) {
    const int W = c->size, r = c->rank;
    size_t *counts = (size_t *)malloc_check((size_t)W * sizeof(size_t));
    // Uneven parts with some empty ones.
    for (int q = 0; q < W; q++) counts[q] = q % 3 == 1 ? 0 : (size_t)(100 + 37 * q);
    test_reduce_scatter_allgather(c, 1, counts);
    // One part longer than an MPI message piece (4M floats), the others short.
    for (int q = 0; q < W; q++) counts[q] = q == 0 ? ((size_t)1 << 22) + 1000 : (size_t)(q + 1);
    test_reduce_scatter_allgather(c, 2, counts);

    // f32 all-reduce: owners by the equal split of n.
    const size_t n = 1001;
    comm_equal_split(n, W, counts);
    float *buf = (float *)malloc_check(n * sizeof(float));
    for (size_t i = 0; i < n; i++) buf[i] = input(3, r, i);
    c->allreduce_sum_f32(c, buf, n);
    size_t bad = 0, at = 0;
    for (int q = 0; q < W; q++)
        for (size_t i = 0; i < counts[q]; i++, at++) bad += buf[at] != ordered_sum(3, q, W, at);
    check(at == n && bad == 0, "f32 all-reduce", c);
    free(buf);

    // f64 all-reduce: the sum in rank order 0..W-1, the same on every rank.
    double d[3], want[3];
    for (int i = 0; i < 3; i++) {
        d[i] = (double)input(4, r, (size_t)i) * 1e-3 + 1.0;
        want[i] = (double)input(4, 0, (size_t)i) * 1e-3 + 1.0;
        for (int q = 1; q < W; q++) want[i] += (double)input(4, q, (size_t)i) * 1e-3 + 1.0;
    }
    c->allreduce_sum_f64(c, d, 3);
    check(memcmp(d, want, sizeof(d)) == 0, "f64 all-reduce in rank order", c);

    // Broadcast of rank 0's bytes.
    char msg[32];
    snprintf(msg, sizeof(msg), "from rank %d", r);
    c->broadcast_bytes(c, msg, sizeof(msg));
    check(strcmp(msg, "from rank 0") == 0, "broadcast", c);
    c->barrier(c);
    free(counts);
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    Comm c;
    comm_init(&c, &argc, &argv);
    test_plan(&c);
    test_collectives(&c);
    double failures = g_failures;
    c.allreduce_sum_f64(&c, &failures, 1);
    if (c.rank == 0) printf("test_comm: %d rank(s): %s\n", c.size, failures == 0 ? "all checks passed" : "FAILED");
    c.finalize(&c);
    return failures == 0 ? 0 : 1;
}
