// Host-side checks of index arithmetic that CUDA kernels rely on, runnable without a GPU (the
// kernels' own helpers, called from the host; nothing here touches the CUDA runtime):
//   1. attention's fused dQ schedule (llmc/attention.cuh): for T = 1..300 and larger, query tiles
//      of 32 and 64 rows, 3 heads: the tickets name every (head, key block) exactly once; run in
//      ticket order, one CTA after another, every share finds its tile's counter at its turn
//      (so every wait is for a CTA with an earlier ticket, which is what makes the kernel free of
//      deadlock); each tile gets the shares of key blocks dq_last_key_block .. 0, one each, the
//      first stored and the last from key block 0 (which writes dQ); and a key block meets every
//      tile that holds a query >= its first key, and no earlier one.
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

using attention_detail::dq_counter_index;
using attention_detail::dq_first_query_tile;
using attention_detail::dq_last_key_block;
using attention_detail::dq_ticket_head;
using attention_detail::dq_turn;
using attention_detail::dq_ticket_key_block;
using attention_detail::ROWS_PER_CTA;

// One (T, BQ) schedule; returns false and says why at the first violation.
static bool fused_dq_schedule_ok(int T, int BQ, int heads) {
    const int key_blocks = (T + ROWS_PER_CTA - 1) / ROWS_PER_CTA, tiles = (T + BQ - 1) / BQ;
    // The kernel's counters, at the kernel's indices (dq_sync[0] is the ticket counter), as many
    // as the scratch layout allocates.
    const attention_detail::BackwardScratchLayout layout = attention_detail::backward_scratch_layout(1, T, heads, 64, true);
    std::vector<int> counters((layout.bytes - layout.dq_sync) / sizeof(int), 0), finals((size_t)heads * tiles, 0);
    std::set<std::pair<int, int>> seen;
    for (int ticket = 0; ticket < heads * key_blocks; ticket++) {
        const int bh = dq_ticket_head(ticket, key_blocks), kb = dq_ticket_key_block(ticket, key_blocks);
        if (bh < 0 || bh >= heads || kb < 0 || kb >= key_blocks || !seen.insert({bh, kb}).second) {
            printf("  T=%d BQ=%d: ticket %d names head %d key block %d twice or out of range\n", T, BQ, ticket, bh, kb);
            return false;
        }
        const int first = dq_first_query_tile(kb, BQ);
        // The tile before the first must hold only queries < kb * 64 (they see none of its keys),
        // the first one a query >= kb * 64.
        if ((first > 0 && first * BQ > kb * ROWS_PER_CTA) || (first + 1) * BQ <= kb * ROWS_PER_CTA) {
            printf("  T=%d BQ=%d: key block %d starts at query tile %d\n", T, BQ, kb, first);
            return false;
        }
        for (int i = first; i < tiles; i++) {
            const int turn = dq_turn(i, kb, BQ, T);
            const int64_t at = dq_counter_index(bh, i, BQ, T);
            if (at < 1 || at >= (int64_t)counters.size()) {
                printf("  T=%d BQ=%d: counter index %lld outside the scratch\n", T, BQ, (long long)at);
                return false;
            }
            int &have = counters[at];
            if (turn < 0 || have != turn) {  // a CTA that would wait for a later ticket, or a share out of turn
                printf("  T=%d BQ=%d: head %d key block %d at tile %d: turn %d, %d shares in\n", T, BQ, bh, kb, i, turn,
                       have);
                return false;
            }
            have = turn + 1;  // what the kernel releases
            if (kb == 0) finals[(size_t)bh * tiles + i]++;
        }
    }
    for (int bh = 0; bh < heads; bh++)
        for (int i = 0; i < tiles; i++) {
            const int have = counters[dq_counter_index(bh, i, BQ, T)], final_writes = finals[(size_t)bh * tiles + i];
            if (have != dq_last_key_block(i, BQ, T) + 1 || final_writes != 1) {
                printf("  T=%d BQ=%d: tile %d of head %d got %d shares (want %d), %d final writes\n", T, BQ, i, bh,
                       have, dq_last_key_block(i, BQ, T) + 1, final_writes);
                return false;
            }
        }
    return true;
}

static void check_fused_dq_schedule(void) {
    std::vector<int> Ts;
    for (int T = 1; T <= 300; T++) Ts.push_back(T);
    for (int T : {511, 512, 513, 1000, 1023, 1024, 1025, 2048, 4096}) Ts.push_back(T);
    bool ok = true;
    for (int BQ : {32, 64})
        for (int T : Ts) ok = fused_dq_schedule_ok(T, BQ, 3) && ok;
    check(ok, "attention fused dQ: tickets, turns and final writes for T = 1..300 and 511..4096, BQ 32 and 64");
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
    check_fused_dq_schedule();
    check_transpose_swizzle();
    printf("%d check(s) failed\n", g_failures);
    return g_failures ? 1 : 0;
}
