// Host-side checks of index arithmetic that CUDA kernels rely on, runnable without a GPU (the
// kernels' own helpers, called from the host; nothing here touches the CUDA runtime):
//   1. attention's dK/dV kernel (llmc/attention.cuh's kv_first_query_tile): for T = 1..300 and
//      larger, key blocks of 64 and 128 rows (1 and 2 row tiles per warp), query tiles of 32 and
//      64 rows, every key block starts at the query tile that holds its first key: the tiles
//      before it hold only earlier queries (which see none of its keys), and it is a tile of the
//      sequence.
//   2. the quantize-and-transpose tile swizzle (llmc/quant.cuh's quant_tile_col): a bijection of
//      each 64 x 64 tile's bytes, 8-byte groups kept whole (pass 1's stores), and pass 2's reads
//      (a warp: 4 columns x 8 rows 8 apart, 8 reads each) free of shared-memory bank conflicts.
//   3. wgmma's operand descriptors (llmc/wgmma.cuh) against the tiles the attention loader writes
//      (llmc/attention.cuh's wgmma kernels): for every operand and k16 step, the address each
//      element is read from, worked out from the descriptor's fields by the PTX ISA's canonical
//      layouts and the hardware's address swizzle (dev/emu/ptx_isa.h, written independently of
//      wgmma.cuh's layout function), is where the loader put that element; and the swizzled
//      layout is a bijection whose 8-row groups of one 16-byte column are bank-conflict free.
//      This checks our code against our reading of the ISA; only a GPU checks the reading.
//   4. the fixed-point format of the attention backward's dQ by integer reduction
//      (llmc/attention.cuh's dq_fixed_shift, pow2f): over bounds from 0 and subnormals to
//      overflow, inf and NaN, the shift puts the exact bound 4 ||dO||_1 max|K| max|V| times 2^shift
//      in [2^29, 2^30] (below only where a tiny bound is clamped), so that every partial sum,
//      at most 2.05 / 4 of it, fits an int32 with 2^29 to spare; a bound beyond fp32 is flagged.
// Prints one line per check (dev/test/check.h); exits 1 if any fails.
#include "../../../llmc/attention.cuh"
#include "../../../llmc/quant.cuh"
#include "../check.h"
#include "../../emu/ptx_isa.h"

#include <stdio.h>
#include <set>
#include <vector>

using ptx_isa::wgmma_desc_mode_ok;
using ptx_isa::wgmma_read_address;

using attention_detail::kv_first_query_tile;
using attention_detail::ROWS_PER_CTA;

// One (T, key block rows KROWS, BQ); returns false and says why at the first violation.
static bool kv_first_tiles_ok(int T, int KROWS, int BQ) {
    const int key_blocks = (T + KROWS - 1) / KROWS, tiles = (T + BQ - 1) / BQ;
    for (int kb = 0; kb < key_blocks; kb++) {
        const int k0 = kb * KROWS, first = kv_first_query_tile(k0, BQ);
        // The tile before the first must hold only queries < k0, the first one a query >= k0.
        if (first < 0 || first >= tiles || (first > 0 && first * BQ > k0) || (first + 1) * BQ <= k0) {
            printf("  T=%d KROWS=%d BQ=%d: key block %d starts at query tile %d (of %d)\n", T, KROWS, BQ, kb, first,
                   tiles);
            return false;
        }
    }
    return true;
}

static void check_kv_first_tiles(void) {
    std::vector<int> Ts;
    for (int T = 1; T <= 300; T++) Ts.push_back(T);
    for (int T : {511, 512, 513, 1000, 1023, 1024, 1025, 2048, 4096}) Ts.push_back(T);
    bool ok = true;
    for (int KROWS : {ROWS_PER_CTA, 2 * ROWS_PER_CTA})
        for (int BQ : {32, 64})
            for (int T : Ts) ok = kv_first_tiles_ok(T, KROWS, BQ) && ok;
    check(ok, "attention backward dK/dV: each key block's first query tile, T = 1..300 and 511..4096, key blocks "
              "of 64 and 128, BQ 32 and 64");
}

static void check_transpose_swizzle(void) {
    constexpr int TILE = QUANT_TILE;
    std::vector<int> owner(TILE * TILE, -1);
    bool bijection = true, groups_whole = true;
    for (int r = 0; r < TILE; r++)
        for (int c = 0; c < TILE; c++) {
            const int col = quant_tile_col(r, c), at = r * TILE + col;
            const bool inside = col >= 0 && col < TILE;
            bijection = bijection && inside && owner[at] < 0;
            if (inside && owner[at] < 0) owner[at] = r * TILE + c;
            groups_whole = groups_whole && quant_tile_col(r, c) == (quant_tile_col(r, c & ~7) | (c & 7));
        }
    check(bijection, "quant transpose swizzle: a bijection of the 64 x 64 tile");
    check(groups_whole, "quant transpose swizzle: 8-byte column groups stay contiguous and aligned");
    // Pass 2: thread g of the block reads tile[r + k][quant_tile_col(r + k, c)] with c = g / 8,
    // r = 8 (g % 8), k = 0..7. Per warp and k: distinct 4-byte words must sit in distinct banks.
    int worst = 0;
    for (int warp = 0; warp < QUANT_TILE_THREADS / 32; warp++)
        for (int k = 0; k < 8; k++) {
            std::vector<std::set<int>> words(32);
            for (int g = 32 * warp; g < 32 * warp + 32; g++) {
                const int c = g / 8, r = g % 8 * 8 + k, byte = r * TILE + quant_tile_col(r, c);
                words[(byte / 4) % 32].insert(byte / 4);
            }
            for (const auto &w : words) worst = w.size() > (size_t)worst ? (int)w.size() : worst;
        }
    check(worst == 1, "quant transpose swizzle: pass 2 reads conflict-free (worst %d-way)", worst);
}

static void check_wgmma_descriptors(void) {
    namespace fwd = attention_detail::fwd_wgmma;
    namespace bwd = attention_detail::bwd_wgmma;
    // The tiles the kernels give wgmma: resident tiles of 128 rows (64 in the one-warpgroup
    // variants) that each warpgroup's 64 rows read as A (forward Q; backward K, V, Q, dO), and
    // streamed tiles of 64 rows read as B, K-major (forward K; backward Q, dO, K, V) or MN-major
    // (forward V; backward dO, Q, K).
    static_assert(fwd::query_rows<2>() == bwd::resident_rows<2>() && fwd::query_rows<1>() == bwd::resident_rows<1>(),
                  "the forward's and the backward's resident tiles have the same heights");
    const int a_rows[] = {fwd::query_rows<2>(), fwd::query_rows<1>()};
    const int b_rows[] = {fwd::KEYS, bwd::TILE};
    bool ok_a = true, ok_b = true, ok_mn = true, ok_mode = true;
    for (uint32_t base : {0u, 37u * 1024u})  // any 1024-byte boundary
        for (int HS : {64, 128}) {
            for (int rows : a_rows)  // A, K-major: warpgroup w's 64 rows
                for (int w = 0; w < rows / 64; w++)
                    for (int kk = 0; kk < HS / 16; kk++) {
                        const uint64_t d = wgmma::desc_k_major(base, rows, 64 * w, kk);
                        ok_mode = ok_mode && wgmma_desc_mode_ok(d);
                        for (int m = 0; m < 64; m++)
                            for (int k = 0; k < 16; k++)
                                ok_a = ok_a && wgmma_read_address(d, false, m, k) ==
                                                   base + wgmma::sw128_offset(rows, 64 * w + m, 16 * kk + k);
                    }
            for (int rows : b_rows) {
                for (int kk = 0; kk < HS / 16; kk++) {  // B, K-major: N = the tile's rows
                    const uint64_t d = wgmma::desc_k_major(base, rows, 0, kk);
                    ok_mode = ok_mode && wgmma_desc_mode_ok(d);
                    for (int n = 0; n < rows; n++)
                        for (int k = 0; k < 16; k++)
                            ok_b = ok_b && wgmma_read_address(d, false, n, k) == base + wgmma::sw128_offset(rows, n, 16 * kk + k);
                }
                for (int kk = 0; kk < rows / 16; kk++) {  // B, MN-major: N = HS, contraction down the rows
                    const uint64_t d = wgmma::desc_mn_major(base, rows, kk);
                    ok_mode = ok_mode && wgmma_desc_mode_ok(d);
                    for (int n = 0; n < HS; n++)
                        for (int k = 0; k < 16; k++)
                            ok_mn = ok_mn && wgmma_read_address(d, true, n, k) == base + wgmma::sw128_offset(rows, 16 * kk + k, n);
                }
            }
        }
    // The dK/dV kernel's dQ share (dQ by integer reduction): warpgroup w's dS (queries x its 64 keys)
    // from the staged dS^T [rows][64] and its K rows, both MN-major from row 64 w; element (m, k) of
    // A is dS^T's (64 w + 16 kk + k, m), element (n, k) of B is K's (64 w + 16 kk + k, n).
    bool ok_share = true;
    for (uint32_t base : {0u, 37u * 1024u})
        for (int rows : a_rows)
            for (int w = 0; w < rows / 64; w++)
                for (int kk = 0; kk < 4; kk++) {
                    const uint64_t d = wgmma::desc_mn_major(base, rows, kk, 64 * w);
                    ok_mode = ok_mode && wgmma_desc_mode_ok(d);
                    for (int mn = 0; mn < 64; mn++)
                        for (int k = 0; k < 16; k++)
                            ok_share = ok_share && wgmma_read_address(d, true, mn, k) ==
                                                       base + wgmma::sw128_offset(rows, 64 * w + 16 * kk + k, mn);
                }
    // store_a_swizzled's 4-byte stores of dS^T: per warp and register, 32 lanes in 32 banks.
    bool stores_conflict_free = true;
    for (int rows : a_rows)
        for (int row0 = 0; row0 < rows; row0 += 16)
            for (int k = 0; k < 4; k++)
                for (int r = 0; r < 4; r++) {
                    std::set<int> banks;
                    for (int lane = 0; lane < 32; lane++)
                        banks.insert(wgmma::sw128_offset(rows, row0 + lane / 4 + 8 * (r % 2), 16 * k + 2 * (lane % 4) + 8 * (r / 2)) / 4 % 32);
                    stores_conflict_free = stores_conflict_free && banks.size() == 32;
                }
    check(ok_mode, "wgmma descriptors: 128-byte swizzle mode, the unused fields and the base offset zero");
    check(stores_conflict_free, "wgmma attention: the staged dS^T's stores are conflict-free (32 banks a warp store)");
    check(ok_share, "wgmma attention: dQ share's A and B descriptors (MN-major from row 64 w) read the staged rows");
    check(ok_a, "wgmma attention: A descriptors (K-major, resident tiles) read what the loader wrote, HS 64 and 128");
    check(ok_b, "wgmma attention: B descriptors (K-major, streamed tiles) read what the loader wrote, HS 64 and 128");
    check(ok_mn, "wgmma attention: B descriptors (MN-major, streamed tiles) read what the loader wrote, HS 64 and 128");

    // The layout: a bijection of a 64 x 128 tile onto its bytes (2 per element, 16-byte chunks
    // whole), and a 16-byte column of 8 consecutive rows (what one 8x8 core matrix reads) spread
    // over 8 different 16-byte bank groups.
    const int rows = 64, width = 128;
    std::vector<int> owner(rows * width * 2, -1);
    bool bijection = true, conflict_free = true;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < width; c++) {
            const uint32_t at = wgmma::sw128_offset(rows, r, c);
            bijection = bijection && at < owner.size() && at % 2 == 0 && owner[at] < 0 &&
                        at == wgmma::sw128_offset(rows, r, c & ~7) + (c & 7) * 2;
            if (at < owner.size()) owner[at] = r * width + c;
        }
    for (int r0 = 0; r0 < rows; r0 += 8)
        for (int c = 0; c < width; c += 8) {
            std::set<int> groups;
            for (int r = r0; r < r0 + 8; r++) groups.insert(wgmma::sw128_offset(rows, r, c) / 16 % 8);
            conflict_free = conflict_free && groups.size() == 8;
        }
    check(bijection, "wgmma swizzled tile: a bijection onto its bytes, 16-byte chunks whole");
    check(conflict_free, "wgmma swizzled tile: 8 rows of one 16-byte column in 8 different bank groups");
}

static void check_dq_fixed_point(void) {
    using attention_detail::dq_fixed_shift;
    using attention_detail::DQ_SHIFT_NONFINITE;
    bool pow2_ok = true;
    for (int k = -126; k <= 127; k++) pow2_ok = pow2_ok && attention_detail::pow2f(k) == ldexpf(1.0f, k);
    check(pow2_ok, "dQ fixed point: pow2f(k) == 2^k for k = -126..127");
    // Factors across the float range: 0, subnormals, powers of two with mantissas, the largest.
    std::vector<float> v = {0.0f, 1e-45f, 1e-40f, FLT_MIN, FLT_MAX};
    for (int e = -130; e <= 127; e += 3)
        for (float m : {1.0f, 1.0000001f, 1.5f, 1.9999999f}) v.push_back(ldexpf(m, e));
    bool range_ok = true, fits = true, tight = true, nonfinite_ok = true;
    long n = 0;
    for (float l1 : v)
        for (float mk : v)
            for (float mv : {0.0f, 1e-42f, 3e-30f, 0.7f, 1.0f, 5.5f, 3e20f, FLT_MAX}) {
                const int shift = dq_fixed_shift(l1, mk, mv);
                const long double bound = 4.0L * l1 * mk * mv;  // exact but for a rounding of 2^-64
                n++;
                if (bound >= ldexpl(1.0L, 128)) {
                    nonfinite_ok = nonfinite_ok && shift == DQ_SHIFT_NONFINITE;
                    continue;
                }
                range_ok = range_ok && shift >= -98 && shift <= 90;
                const long double scaled = ldexpl(bound, shift);
                fits = fits && scaled <= ldexpl(1.0L + ldexpl(1.0L, -20), 30);
                tight = tight && (scaled >= ldexpl(1.0L, 29) * (1.0L - ldexpl(1.0L, -20)) || shift == 90);
            }
    for (float bad : {INFINITY, NAN})
        nonfinite_ok = nonfinite_ok && dq_fixed_shift(bad, 1.0f, 1.0f) == DQ_SHIFT_NONFINITE &&
                       dq_fixed_shift(1.0f, bad, 1.0f) == DQ_SHIFT_NONFINITE &&
                       dq_fixed_shift(1.0f, 1.0f, bad) == DQ_SHIFT_NONFINITE;
    check(range_ok, "dQ fixed point: shift in -98..90 for every finite bound (%ld triples)", n);
    check(fits, "dQ fixed point: the exact bound x 2^shift <= 2^30 (so 2.05/4 of it fits an int32 with room)");
    check(tight, "dQ fixed point: the exact bound x 2^shift >= 2^29 unless clamped (no bits wasted)");
    check(nonfinite_ok, "dQ fixed point: a bound of 2^128 or more, infinite or NaN is flagged");
}

int main() {
    check_kv_first_tiles();
    check_transpose_swizzle();
    check_wgmma_descriptors();
    check_dq_fixed_point();
    printf("%d check(s) failed\n", g_failures);
    return g_failures ? 1 : 0;
}
