// The emulator's own checks (dev/emu/cuda_emu.h), each shown to fire: `selftest <fault>` runs a
// small kernel with that one fault, which the emulator must end with its one-line error (exit 1);
// dev/test/t_44_emulated_attention.sh runs every fault and matches the line. `selftest clean`
// runs the same kernels without the faults and must exit 0. Built by g++ with the emulator forced
// in (mk/emu.mk); not a CUDA program.
#include "../../llmc/attention.cuh"

#include <string.h>

using namespace attention_detail;

// 64 threads, two warps, 4096 bytes of shared memory: a 16 x 8 bf16 tile at byte 0 (one 16-byte row
// per 8 values), read by ldmatrix and refilled by cp.async.
enum Fault { CLEAN, IN_FLIGHT, NO_BARRIER, WAR, NO_PROXY_FENCE, NO_WGMMA_FENCE, DIVERGENCE, DEADLOCK, OUT_OF_BOUNDS };
static const char *FAULT_NAMES[] = {"clean",          "in_flight",  "no_barrier", "war",          "no_proxy_fence",
                                    "no_wgmma_fence", "divergence", "deadlock",   "out_of_bounds"};

static __global__ void fault_kernel(int fault, const __nv_bfloat16 *src, float *dst) {
    LLMC_DYNAMIC_SMEM(smem);
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    __nv_bfloat16 *tile = reinterpret_cast<__nv_bfloat16 *>(smem);
    // Each of the first 16 threads copies one 16-byte row of the tile.
    if (tid < 16) cp_async_16(tile + 8 * tid, src + 8 * tid, true);
    cp_async_commit();
    if (fault != IN_FLIGHT) cp_async_wait<0>();
    if (fault != NO_BARRIER) __syncthreads();
    uint32_t r[4];
    if (warp == 0) {
        if (fault == DIVERGENCE && lane >= 16) {
            r[0] = __shfl_xor_sync(0xffffffffu, 1u, 1);
        } else {
            ldmatrix_x4(r, tile + 8 * (lane % 16));  // rows 0..15, twice
        }
        dst[lane] = (float)(r[0] & 0xFF);
    }
    // Warp 1 refills the tile: after a barrier, unless the fault is the race.
    if (fault != WAR) __syncthreads();
    if (warp == 1 && lane < 16) cp_async_16(tile + 8 * lane, src + 8 * lane, true);
    cp_async_commit();
    cp_async_wait<0>();
    if (fault == DEADLOCK) {
        if (lane < 16) __syncthreads();
        else r[0] = __shfl_xor_sync(0xffffffffu, 1u, 1);
    }
    __syncthreads();
    if (fault == OUT_OF_BOUNDS && tid == 0) cp_async_16(smem + 4096, src, true);
}

// One warpgroup: a 64 x 64 swizzled tile by cp.async, then S = A A^T by wgmma.
static __global__ void wgmma_fault_kernel(int fault, const __nv_bfloat16 *src, float *dst) {
    LLMC_DYNAMIC_SMEM(smem);
    __nv_bfloat16 *tile = reinterpret_cast<__nv_bfloat16 *>(smem);
    load_tile_async<64, 64, true, 128>(tile, src, 64, 0, 64);
    cp_async_commit();
    cp_async_wait<0>();
    if (fault != NO_PROXY_FENCE) wgmma::fence_proxy_async_shared();
    __syncthreads();
    float s[8][4];
    if (fault != NO_WGMMA_FENCE) wgmma::fence();
    mma_rows_by_rows<64>(s, smem_addr(tile), 64, 0, smem_addr(tile));
    wgmma::commit();
    wgmma::wait<0>();
    dst[threadIdx.x] = s[0][0];
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    int fault = -1;
    for (int f = 0; argc == 2 && f < (int)(sizeof FAULT_NAMES / sizeof *FAULT_NAMES); f++)
        if (!strcmp(argv[1], FAULT_NAMES[f])) fault = f;
    if (fault < 0) usage_error("usage: %s clean|in_flight|no_barrier|war|no_proxy_fence|no_wgmma_fence|divergence|deadlock|out_of_bounds", argv[0]);
    __nv_bfloat16 *src;
    float *dst;
    cudaMalloc((void **)&src, 64 * 64 * sizeof(__nv_bfloat16));
    cudaMalloc((void **)&dst, 128 * sizeof(float));
    for (int i = 0; i < 64 * 64; i++) src[i] = __float2bfloat16((float)(i % 7));
    if (fault != NO_PROXY_FENCE && fault != NO_WGMMA_FENCE) LLMC_LAUNCH(1, 64, 4096, 0, fault_kernel)(fault, src, dst);
    if (fault == CLEAN || fault == NO_PROXY_FENCE || fault == NO_WGMMA_FENCE)
        LLMC_LAUNCH(1, 128, 8192, 0, wgmma_fault_kernel)(fault, src, dst);
    printf("%s: no fault reported\n", FAULT_NAMES[fault]);
    return 0;
}
