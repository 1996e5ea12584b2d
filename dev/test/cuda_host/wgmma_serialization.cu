// Compiled for sm_90a, never run (dev/test/t_42_wgmma_serialization.sh reads what ptxas says of it).
// ptxas serializes a kernel's wgmma instructions when a warpgroup can leave a divergent branch
// with a wgmma in flight (its "Potential Performance Loss: wgmma.mma_async instructions are
// serialized" notes, C7518-C7520): each wgmma then waits for the one before, so the tensor cores
// idle between them. A build succeeds all the same, so the test looks for the note. This file
// instantiates every wgmma attention kernel: those attention.cuh's public functions launch and the
// one-warpgroup variants dev/cuda/attention.cu times. With -DLLMC_SERIALIZED_WGMMA it holds, instead,
// only a kernel written to be serialized (a wgmma issued in a branch and waited for in another), so
// that the test shows ptxas printing the note it looks for (without compiling attention.cuh twice).
#ifdef LLMC_SERIALIZED_WGMMA
#include "../../../llmc/wgmma.cuh"

__global__ void serialized_wgmma_kernel(float *out, uint64_t desc_a, uint64_t desc_b, int warpgroups) {
    float d[8][4];
    wgmma::hold_registers<8>(d);
    wgmma::fence();
    if (threadIdx.x / 128 < warpgroups) {
        wgmma::mma_ss_n64(d, desc_a, desc_b, false);
        wgmma::commit();
    }
    __syncthreads();
    if (threadIdx.x / 128 < warpgroups) {
        wgmma::wait<0>();
        wgmma::hold_registers<8>(d);
    }
    for (int n = 0; n < 8; n++) out[8 * threadIdx.x + n] = d[n][0];
}
#else
#include "../../../llmc/attention.cuh"

using namespace attention_detail;

const void *const wgmma_kernels[] = {
    (const void *)attention_forward_wgmma_kernel<64, 1, false>,
    (const void *)attention_forward_wgmma_kernel<64, 1, true>,
    (const void *)attention_forward_wgmma_kernel<64, 2, true>,
    (const void *)attention_forward_wgmma_kernel<128, 2, true>,
    (const void *)attention_forward_wgmma_kernel<128, 1, true>,
    (const void *)attention_backward_kv_wgmma_kernel<64, 1, false>,
    (const void *)attention_backward_kv_wgmma_kernel<64, 1, true>,
    (const void *)attention_backward_kv_wgmma_kernel<64, 1, false, DQ_BULK>,
    (const void *)attention_backward_dq_wgmma_kernel<64, 1, false>,
    (const void *)attention_backward_dq_wgmma_kernel<64, 1, true>,
    (const void *)attention_backward_kv_ws_wgmma_kernel<64>,
    (const void *)attention_forward_ws_wgmma_kernel<64>,
};
#endif
