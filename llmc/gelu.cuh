// GELU (tanh approximation, as GPT-2) forward and backward, elementwise on bf16, math in fp32.
//
// STATUS: verified on an H100 at commit ad0f582 and on an H200 at c95ef56 (2026-11-27; dev/gpu_report.md:
// its harness in dev/cuda/ and test_gptcu pass). The forward with FP8 codes (gelu_forward_codes,
// 2026-11-28) has NOT RUN on a GPU: in the CPU emulator its harness gives the cast's bytes, and
// train_gptcu the bits of the GELU followed by the cast.
//
// Layout: flat arrays of n bf16, n % 8 == 0; one thread per 8 elements (one 128-bit load/store).
// With FP8 codes of the output (gelu_forward_codes): llmc/quant.cuh's 64 x 64 tiles.
//   gelu(x)  = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
//   gelu'(x) = 0.5 (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
#ifndef LLMC_GELU_CUH
#define LLMC_GELU_CUH

#include "cuda_common.cuh"
#include "quant.cuh"

#define GELU_SQRT_2_OVER_PI 0.7978845608028654f

__device__ __forceinline__ float gelu_f(float x) {
    const float u = GELU_SQRT_2_OVER_PI * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

__device__ __forceinline__ float gelu_grad_f(float x) {
    const float u = GELU_SQRT_2_OVER_PI * (x + 0.044715f * x * x * x);
    const float th = tanhf(u), sech2 = 1.0f - th * th;
    return 0.5f * (1.0f + th) + 0.5f * x * sech2 * GELU_SQRT_2_OVER_PI * (1.0f + 3.0f * 0.044715f * x * x);
}

__global__ void gelu_forward_kernel(bf16 *out, const bf16 *inp, int64_t n) {
    const int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (i >= n) return;
    const x128 x = load128cs(inp + i);
    x128 o;
#pragma unroll
    for (int j = 0; j < 8; j++) o[j] = to_bf16(gelu_f(__bfloat162float(x[j])));
    store128(out + i, o);
}

// d = d * gelu'(inp), in place.
__global__ void gelu_backward_inplace_kernel(bf16 *d, const bf16 *inp, int64_t n) {
    const int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (i >= n) return;
    const x128 x = load128cs(inp + i);
    x128 g = load128(d + i);
#pragma unroll
    for (int j = 0; j < 8; j++) g[j] = to_bf16(__bfloat162float(g[j]) * gelu_grad_f(__bfloat162float(x[j])));
    store128(d + i, g);
}

static inline void gelu_forward(bf16 *out, const bf16 *inp, int64_t n, cudaStream_t stream) {
    if (n % 8 != 0) die("gelu_forward: %lld elements is not a multiple of 8", (long long)n);
    const int block = 256;
    LLMC_LAUNCH(ceil_div(n / 8, block), block, 0, stream, gelu_forward_kernel)(out, inp, n);
    kernelCheck();
}

// gelu_forward_kernel's value of one element, the bf16 it stores, as a float (llmc/quant.cuh's ops).
struct GeluForwardOp {
    static constexpr bool binary = false;
    __device__ __forceinline__ float operator()(float x, float) const { return __bfloat162float(to_bf16(gelu_f(x))); }
};
// gelu_backward_inplace_kernel's value of one element from d and the pre-activation x, likewise.
struct GeluBackwardOp {
    static constexpr bool binary = true;
    __device__ __forceinline__ float operator()(float d, float x) const {
        return __bfloat162float(to_bf16(d * gelu_grad_f(x)));
    }
};

// The forward of inp (rows, cols) with the FP8 codes of its output for the fc projection that reads
// it (--matmul fp8 with delayed scaling, llmc/matmul_lowp.cuh's lowp_producer_codes): out (NULL:
// not written) as gelu_forward writes it, codes.q, codes.qt and codes.amax as
// quant_transpose_gpu makes them of out, in one pass (llmc/quant.cuh's kernel with this op).
static inline void gelu_forward_codes(bf16 *out, const QuantCodesOut &codes, const bf16 *inp, int rows, int cols,
                                      cudaStream_t stream) {
    quant_op_transpose_gpu(out, codes.q, codes.qt, codes.amax, codes.colsum, inp, (const bf16 *)nullptr, rows, cols,
                           quant_scale_given(codes.scale), codes.target, GeluForwardOp{}, stream);
}

// The backward of d (rows, cols), the gradient of the GELU's output, as FP8 codes of d * gelu'(inp)
// for the fc layer's backward (--matmul fp8 --fp8-wgrad 1 with delayed scaling, llmc/matmul_lowp.cuh's
// lowp_gradient_producer_codes): codes.q, codes.qt, codes.amax and codes.colsum (the bias
// gradient's partial sums) as quant_transpose_gpu makes them of gelu_backward_inplace's output, in
// one pass; d is left as it was (the bf16 result is not written: nothing reads it).
static inline void gelu_backward_codes(const QuantCodesOut &codes, const bf16 *d, const bf16 *inp, int rows, int cols,
                                       cudaStream_t stream) {
    quant_op_transpose_gpu((bf16 *)nullptr, codes.q, codes.qt, codes.amax, codes.colsum, d, inp, rows, cols,
                           quant_scale_given(codes.scale), codes.target, GeluBackwardOp{}, stream);
}

static inline void gelu_backward_inplace(bf16 *d, const bf16 *inp, int64_t n, cudaStream_t stream) {
    if (n % 8 != 0) die("gelu_backward: %lld elements is not a multiple of 8", (long long)n);
    const int block = 256;
    LLMC_LAUNCH(ceil_div(n / 8, block), block, 0, stream, gelu_backward_inplace_kernel)(d, inp, n);
    kernelCheck();
}

#endif  // LLMC_GELU_CUH
