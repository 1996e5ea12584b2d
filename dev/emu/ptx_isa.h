// The PTX ISA's data layouts, written from the ISA's text, independently of llmc/*.cuh's own
// layout code: where each element of an mma.sync or ldmatrix fragment lives, and which
// shared-memory byte a wgmma descriptor reads. The CPU emulator (dev/emu/cuda_emu.h) executes the
// instructions with them and dev/test/cuda_host/kernel_indexing.cu checks the wgmma descriptors
// against them. They check our kernels against our reading of the ISA; only a GPU checks the
// reading (the mma.sync and ldmatrix ones are confirmed by the default attention kernels, which
// passed on an H100 and pass in the emulator).
// Lanes: g = lane / 4, t = lane % 4. A 32-bit register holds two bf16, the first in the low half.
#ifndef DEV_EMU_PTX_ISA_H
#define DEV_EMU_PTX_ISA_H

#include <stdint.h>

namespace ptx_isa {

// Always inlined: the emulator's unsanitized functions (cuda_emu.h's EMU_OWN) call them, and GCC
// inlines nothing across a difference in the sanitizer attributes unless told to.
#define PTX_ISA_FN inline __attribute__((always_inline))

struct RowCol {
    int row, col;
};

// mma.sync.m16n8k16 with bf16 A, B and fp32 C/D (ISA 9.7.13.4.8, "Matrix Fragments for
// mma.m16n8k16 with floating point type").
// A (16 x 16, row = m, col = k): register r in 0..3, half h: row g + 8 (r % 2), col 2t + h + 8 (r / 2).
PTX_ISA_FN RowCol mma_a_element(int lane, int r, int h) { return {lane / 4 + 8 * (r % 2), 2 * (lane % 4) + h + 8 * (r / 2)}; }
// B (16 x 8, row = k, col = n): register r in 0..1, half h: row 2t + h + 8 r, col g.
PTX_ISA_FN RowCol mma_b_element(int lane, int r, int h) { return {2 * (lane % 4) + h + 8 * r, lane / 4}; }
// C and D (16 x 8): element e in 0..3: row g + 8 (e / 2), col 2t + e % 2.
PTX_ISA_FN RowCol mma_c_element(int lane, int e) { return {lane / 4 + 8 * (e / 2), 2 * (lane % 4) + e % 2}; }

// ldmatrix.sync.aligned.m8n8.x4.b16 (ISA 9.7.13.4.15): lanes 8m..8m+7 give the addresses of rows
// 0..7 of matrix m; register m of lane l receives, half h, element (l / 4, 2 (l % 4) + h) of that
// matrix, or with .trans element (2 (l % 4) + h, l / 4).
PTX_ISA_FN RowCol ldmatrix_element(int lane, int h, bool trans) {
    const RowCol plain = {lane / 4, 2 * (lane % 4) + h};
    return trans ? RowCol{plain.col, plain.row} : plain;
}

// wgmma.mma_async m64nNk16 (ISA 9.7.15.5.1): warp w of the warpgroup holds rows 16 w .. 16 w + 15.
// The fp32 accumulator d[n][e] is the mma.sync C element e of the 16 x 8 block n of those rows;
// an A operand in registers is the mma.sync A fragment of those rows.
PTX_ISA_FN RowCol wgmma_d_element(int thread, int n, int e) {
    const RowCol c = mma_c_element(thread % 32, e);
    return {16 * (thread / 32) + c.row, 8 * n + c.col};
}
PTX_ISA_FN RowCol wgmma_a_element(int thread, int r, int h) {
    const RowCol a = mma_a_element(thread % 32, r, h);
    return {16 * (thread / 32) + a.row, a.col};
}

// The shared-memory byte from which wgmma reads element (mn, k) of a bf16 operand (mn: its row of
// A or column of B; k: the contraction index, 0..15 within the instruction), decoded from the
// descriptor as ISA 9.7.15.5.1.2 defines it for the 128-byte swizzle, T = 8 bf16 per 16 bytes:
//   K-major  ((8, m), (T, 2)) : ((8T, SBO), (1, T))
//   MN-major ((T, 8, m), (8, k)) : ((1, T, LBO), (8T, SBO))
// then the swizzle on the address: bits [4,7) ^= bits [7,10).
PTX_ISA_FN uint32_t wgmma_read_address(uint64_t desc, bool mn_major, int mn, int k) {
    const uint32_t start = (uint32_t)(desc & 0x3FFF) << 4, lbo = (uint32_t)((desc >> 16) & 0x3FFF) << 4,
                   sbo = (uint32_t)((desc >> 32) & 0x3FFF) << 4;
    uint32_t addr;
    if (!mn_major)
        addr = start + (mn % 8) * 128 + (mn / 8) * sbo + (k % 8) * 2 + (k / 8) * 16;
    else
        addr = start + (mn % 8) * 2 + (mn / 8 % 8) * 16 + (mn / 64) * lbo + (k % 8) * 128 + (k / 8) * sbo;
    return addr ^ (((addr >> 7) & 7) << 4);
}

// The fields the ISA leaves zero for these tiles: bits 14-15, 30-31 and 46-61 (the base offset,
// bits 49-51, is 0 for tiles on 1024-byte boundaries); the swizzle mode, bits 62-63, is 1 (128 B).
PTX_ISA_FN bool wgmma_desc_mode_ok(uint64_t desc) {
    const uint64_t zero_bits = (3ull << 14) | (3ull << 30) | (0xFFFFull << 46);
    return (desc >> 62) == 1 && (desc & zero_bits) == 0;
}

}  // namespace ptx_isa

#endif  // DEV_EMU_PTX_ISA_H
