// Hopper's warpgroup matrix multiply (wgmma, sm_90a): the shared-memory tile layout it reads, the
// operand descriptors that point at it, and the few instruction shapes the kernels here use.
//
// STATUS: verified on an H200 at c95ef56 (2026-11-27, dev/gpu_report.md): the wgmma attention
// passes its harness against fp64, memcheck and racecheck, and test_gptcu. Before that, and still
// in make test: dev/test/cuda_host/kernel_indexing.cu checks on the host that every descriptor
// below addresses the element the tile loader wrote, under the PTX ISA's canonical layouts
// (section 9.7.15.5.1.2), and the CPU emulator of dev/emu runs the wgmma attention kernels with the
// wrappers below replaced by its own (t_44); both check this file against our reading of the ISA
// (dev/emu/ptx_isa.h), not against the hardware, and neither sees the asm strings themselves.
//
// The instructions exist only in code built for the arch-specific target sm_90a
// (-gencode arch=compute_90a,code=sm_90a); their wrappers compile to nothing elsewhere, and a
// kernel that uses them says at run time whether it was built for it (wgmma_compiled_in below).
//
// Tile layout: the 128-byte swizzle (the layout TMA's SWIZZLE_128B also writes). A tile of R rows x
// W bf16 (W a multiple of 64, R a multiple of 8) is stored as W / 64 panels of R rows x 64 bf16, one
// panel after the other; a panel row is 128 bytes, and its 16-byte chunk c (columns 8c..8c+7) sits
// at chunk position c ^ (r % 8). So the 8 rows that one 8x8 core matrix spans hit 8 different
// 16-byte bank groups. The hardware applies the XOR to address bits [4,7) from bits [7,10), so
// every tile must start at a 1024-byte boundary (then so does every panel, R being a multiple of 8).
//
// Descriptors (64 bits): start address >> 4 in bits [0,14), leading byte offset (LBO) >> 4 in
// [16,30), stride byte offset (SBO) >> 4 in [32,46), swizzle mode in [62,64) (1 = 128 bytes).
// Canonical layouts with the 128-byte swizzle, in bf16 elements (T = 8 per 16 bytes):
//   K-major  (the contraction index runs along a row):  ((8, m), (T, 2)) : ((8T, SBO), (1, T))
//            8 rows 128 bytes apart, then groups of 8 rows SBO apart; one k16 step is two
//            16-byte chunks side by side. LBO is unused.
//   MN-major (the contraction index runs down the rows): ((T, 8, m), (8, k)) : ((1, T, LBO), (8T, SBO))
//            64 columns in a 128-byte row, further groups of 64 columns LBO apart (the next
//            panel); contraction rows 128 bytes apart, groups of 8 rows SBO apart.
// For our tiles SBO = 1024 (8 rows of 128 bytes) in both, and the MN-major LBO is a panel (R x 128).
// A k16 step of a K-major operand advances the start address by 32 bytes inside the panel (the
// swizzle is applied after, on the address bits, so this stays consistent), and every fourth step
// moves to the next panel.
#ifndef LLMC_WGMMA_CUH
#define LLMC_WGMMA_CUH

#include <stdint.h>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LLMC_WGMMA_DEVICE 1
#endif

namespace wgmma {

constexpr int SWIZZLE_BYTES = 128;  // one panel row
constexpr int SWIZZLE_ALIGN = 1024; // one 8-row swizzle pattern

// Byte offset of element (r, col) in a swizzled tile of `rows` rows (see the layout above).
__host__ __device__ constexpr uint32_t sw128_offset(int rows, int r, int col) {
    return (uint32_t)((col / 64) * rows * SWIZZLE_BYTES + r * SWIZZLE_BYTES +
                      ((((col % 64) / 8) ^ (r % 8)) * 16) + (col % 8) * 2);
}

__host__ __device__ constexpr uint64_t make_desc(uint32_t smem_addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
    return (uint64_t)((smem_addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo_bytes & 0x3FFFF) >> 4) << 16) |
           ((uint64_t)((sbo_bytes & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

// K-major operand: rows r0..r0+63 (A) or r0..r0+N-1 (B) of a tile of `rows` rows at shared address
// tile_addr, contraction columns 16 kk..16 kk+15. r0 is a multiple of 8.
__host__ __device__ constexpr uint64_t desc_k_major(uint32_t tile_addr, int rows, int r0, int kk) {
    return make_desc(tile_addr + (uint32_t)((kk / 4) * rows * SWIZZLE_BYTES + r0 * SWIZZLE_BYTES + (kk % 4) * 32),
                     16, 8 * SWIZZLE_BYTES);
}

// MN-major operand (B, or A of the ss form): contraction rows r0 + 16 kk..r0 + 16 kk+15 of a tile of
// `rows` rows, all its columns (M or N = the tile's width, in panels of 64 LBO apart). r0 is a
// multiple of 8, so that the start stays on a 1024-byte boundary.
__host__ __device__ constexpr uint64_t desc_mn_major(uint32_t tile_addr, int rows, int kk, int r0 = 0) {
    return make_desc(tile_addr + (uint32_t)((r0 + kk * 16) * SWIZZLE_BYTES), (uint32_t)(rows * SWIZZLE_BYTES),
                     8 * SWIZZLE_BYTES);
}

// ---------------------------------------------------------------------------------------------
// Instructions. Register fragments, per warp w of the warpgroup (rows 16 w..16 w+15 of the 64),
// with g = lane / 4 and t = lane % 4 (the same per-warp layouts as mma.sync m16n8k16):
//   accumulator d[n][e] (N/8 blocks of 4 floats): row g + 8 (e / 2), column 8 n + 2 t + (e % 2);
//   A in registers a[0..3]: (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..), bf16 pairs.
// An accumulator that feeds the next step as A is therefore packed pairwise, as mma.sync's is.

// Registers a thread of a CTA of `threads` threads (one CTA per SM) launches with: 64K shared out,
// in the multiples of 8 that allocation comes in. A CTA's setmaxnreg moves registers within these.
constexpr int launch_registers(int threads) { return 65536 / threads / 8 * 8; }

// The instructions (the CPU emulator of dev/emu supplies its own versions of these wrappers).
#ifndef LLMC_EMULATE_PTX

// Issue order: fence() before the first wgmma that reads registers other instructions wrote
// (accumulators, A fragments); commit() closes a group; wait<N>() returns when at most N groups
// are pending. The accumulators must not be touched in between. hold_registers() pins registers
// in place for the compiler, which does not know the instructions are asynchronous: before
// fence(), so that writes to accumulators and A fragments are not moved after it; after wait(),
// so that reads of the accumulators are not moved above it.
__device__ __forceinline__ void fence() {
#ifdef LLMC_WGMMA_DEVICE
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void commit() {
#ifdef LLMC_WGMMA_DEVICE
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void wait() {
#ifdef LLMC_WGMMA_DEVICE
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
template <int BLOCKS> __device__ __forceinline__ void hold_registers(float (*d)[4]) {
#pragma unroll
    for (int n = 0; n < BLOCKS; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) asm volatile("" : "+f"(d[n][e])::"memory");
}
template <int BLOCKS> __device__ __forceinline__ void hold_registers(uint32_t (*a)[4]) {
#pragma unroll
    for (int n = 0; n < BLOCKS; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) asm volatile("" : "+r"(a[n][e])::"memory");
}

// Shared memory written by ordinary stores or cp.async and read next by wgmma or a bulk copy (the
// async proxy; sm_90 and later, not only sm_90a): each writing thread fences before the barrier
// that publishes the tile.
__device__ __forceinline__ void fence_proxy_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

#define LLMC_WGMMA_ACC4(n) "+f"(d[n][0]), "+f"(d[n][1]), "+f"(d[n][2]), "+f"(d[n][3])
#define LLMC_WGMMA_ACC32                                                                                      \
    LLMC_WGMMA_ACC4(0), LLMC_WGMMA_ACC4(1), LLMC_WGMMA_ACC4(2), LLMC_WGMMA_ACC4(3), LLMC_WGMMA_ACC4(4),       \
        LLMC_WGMMA_ACC4(5), LLMC_WGMMA_ACC4(6), LLMC_WGMMA_ACC4(7)
#define LLMC_WGMMA_ACC64                                                                                      \
    LLMC_WGMMA_ACC32, LLMC_WGMMA_ACC4(8), LLMC_WGMMA_ACC4(9), LLMC_WGMMA_ACC4(10), LLMC_WGMMA_ACC4(11),       \
        LLMC_WGMMA_ACC4(12), LLMC_WGMMA_ACC4(13), LLMC_WGMMA_ACC4(14), LLMC_WGMMA_ACC4(15)
#define LLMC_WGMMA_REGS32                                                                                     \
    "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27," \
    "%28,%29,%30,%31}"
#define LLMC_WGMMA_REGS64                                                                                     \
    "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27," \
    "%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,"    \
    "%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}"

// d (64 x 64 fp32) = A B (+ d if accumulate): A 64 x 16 and B 16 x (N = 64), bf16 in shared memory,
// both K-major, or with MN_MAJOR both MN-major (read transposed: the contraction runs down the
// tiles' rows).
template <bool MN_MAJOR = false>
__device__ __forceinline__ void mma_ss_n64(float (*d)[4], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
#ifdef LLMC_WGMMA_DEVICE
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " LLMC_WGMMA_REGS32 ", %32, %33, p, 1, 1, %35, %35;\n}\n"
                 : LLMC_WGMMA_ACC32
                 : "l"(desc_a), "l"(desc_b), "r"((int)accumulate), "n"((int)MN_MAJOR));
#endif
}

// d (64 x 128 fp32) = A B (+ d if accumulate): A 64 x 16 and B 16 x 128, bf16 in shared memory, both
// K-major (the warp-specialized forward's scores over 128 keys: A is read once for twice the
// columns of two n64 products).
__device__ __forceinline__ void mma_ss_n128(float (*d)[4], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
#ifdef LLMC_WGMMA_DEVICE
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " LLMC_WGMMA_REGS64 ", %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : LLMC_WGMMA_ACC64
                 : "l"(desc_a), "l"(desc_b), "r"((int)accumulate));
#endif
}

// d (64 x N fp32) += A B: A 64 x 16 bf16 in registers, B 16 x N bf16 MN-major in shared memory
// (transposed read), N = 64 or 128.
template <int N> __device__ __forceinline__ void mma_rs_mn_major_b(float (*d)[4], const uint32_t a[4], uint64_t desc_b);

template <> __device__ __forceinline__ void mma_rs_mn_major_b<64>(float (*d)[4], const uint32_t a[4], uint64_t desc_b) {
#ifdef LLMC_WGMMA_DEVICE
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " LLMC_WGMMA_REGS32
                 ", {%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"
                 : LLMC_WGMMA_ACC32
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
#endif
}

template <> __device__ __forceinline__ void mma_rs_mn_major_b<128>(float (*d)[4], const uint32_t a[4], uint64_t desc_b) {
#ifdef LLMC_WGMMA_DEVICE
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " LLMC_WGMMA_REGS64
                 ", {%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"
                 : LLMC_WGMMA_ACC64
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
#endif
}

// The calling warpgroup's registers per thread from here on (setmaxnreg, sm_90a), up from or down
// to what the launch gave (65536 / the CTA's threads, rounded to warpgroups): a warp-specialized
// kernel gives its loading warpgroup few and its computing ones many, within the CTA's 64K; ptxas
// allocates the code after the call within the new count. All 128 threads of the warpgroup call it.
template <int REGS> __device__ __forceinline__ void raise_registers() {
    static_assert(REGS % 8 == 0 && REGS >= 24 && REGS <= 256, "setmaxnreg: a multiple of 8 in 24..256");
#ifdef LLMC_WGMMA_DEVICE
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
#endif
}
template <int REGS> __device__ __forceinline__ void lower_registers() {
    static_assert(REGS % 8 == 0 && REGS >= 24 && REGS <= 256, "setmaxnreg: a multiple of 8 in 24..256");
#ifdef LLMC_WGMMA_DEVICE
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
#endif
}

#undef LLMC_WGMMA_ACC4
#undef LLMC_WGMMA_ACC32
#undef LLMC_WGMMA_ACC64
#undef LLMC_WGMMA_REGS32
#undef LLMC_WGMMA_REGS64

// 1 in code built for sm_90a (where the wrappers above are instructions), 0 elsewhere. A kernel
// that uses them writes this to a flag before anything else, so that its host side can refuse a
// build without them instead of returning garbage.
__host__ __device__ constexpr int wgmma_compiled_in() {
#ifdef LLMC_WGMMA_DEVICE
    return 1;
#else
    return 0;
#endif
}

#endif  // LLMC_EMULATE_PTX

}  // namespace wgmma

#endif  // LLMC_WGMMA_CUH
