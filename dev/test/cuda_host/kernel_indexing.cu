// Host-side checks of index arithmetic that CUDA kernels rely on, runnable without a GPU (the
// kernels' own helpers, called from the host; nothing here touches the CUDA runtime):
//   1. attention's dK/dV kernel (llmc/attention.cuh's kv_first_query_tile): for T = 1..300 and
//      larger, query tiles of 32 and 64 rows, every key block starts at the query tile that holds
//      its first key: the tiles before it hold only earlier queries (which see none of its keys),
//      and it is a tile of the sequence.
//   2. the quantize-and-transpose tile swizzle (llmc/quant.cuh's quant_tile_col): a bijection of
//      each 64 x 64 tile's bytes, 8-byte groups kept whole (pass 1's stores), and pass 2's reads
//      (a warp: 4 columns x 8 rows 8 apart, 8 reads each) free of shared-memory bank conflicts.
// Prints one line per check (dev/test/check.h); exits 1 if any fails.
#include "../../../llmc/attention.cuh"
#include "../../../llmc/quant.cuh"
#include "../check.h"

#include <stdio.h>
#include <set>
#include <vector>

using attention_detail::kv_first_query_tile;
using attention_detail::ROWS_PER_CTA;

// One (T, BQ); returns false and says why at the first violation.
static bool kv_first_tiles_ok(int T, int BQ) {
    const int key_blocks = (T + ROWS_PER_CTA - 1) / ROWS_PER_CTA, tiles = (T + BQ - 1) / BQ;
    for (int kb = 0; kb < key_blocks; kb++) {
        const int first = kv_first_query_tile(kb, BQ);
        // The tile before the first must hold only queries < kb * 64, the first one a query >= kb * 64.
        if (first < 0 || first >= tiles || (first > 0 && first * BQ > kb * ROWS_PER_CTA) ||
            (first + 1) * BQ <= kb * ROWS_PER_CTA) {
            printf("  T=%d BQ=%d: key block %d starts at query tile %d (of %d)\n", T, BQ, kb, first, tiles);
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
    for (int BQ : {32, 64})
        for (int T : Ts) ok = kv_first_tiles_ok(T, BQ) && ok;
    check(ok, "attention backward dK/dV: each key block's first query tile, T = 1..300 and 511..4096, BQ 32 and 64");
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

int main() {
    check_kv_first_tiles();
    check_transpose_swizzle();
    printf("%d check(s) failed\n", g_failures);
    return g_failures ? 1 : 0;
}
