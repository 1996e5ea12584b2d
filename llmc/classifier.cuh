// The classifier's softmax and cross-entropy, fused, with the gradient written over the logits.
//
// STATUS: verified on an H100 at commit ad0f582 and on an H200 at c95ef56 (2026-11-27; dev/gpu_report.md:
// its harness in dev/cuda/ and test_gptcu pass).
//
// Layouts: logits bf16 (N, Vp) row-major, of which the first V columns are real tokens; targets
// int (N); losses fp32 (N). One block per row; thread i reads the 8-column chunks i, i + blockDim,
// ... with 128-bit loads (rows are Vp * 2 bytes, a multiple of 256, so every chunk is aligned and
// inside the row; columns >= V are masked, never part of the softmax).
//   pass 1: running (max, sum of exp) per thread, combined over the block:
//           M = max_j l_j, S = sum_{j<V} exp(l_j - M), loss = log S + M - l_target
//   pass 2 (with a gradient): l_j <- (exp(l_j - M) / S - [j == target]) * dloss for j < V, 0 for
//           j >= V, written in place; the probabilities exist only in registers.
#ifndef LLMC_CLASSIFIER_CUH
#define LLMC_CLASSIFIER_CUH

#include "cuda_common.cuh"

#define CLASSIFIER_BLOCK 1024

__global__ void __launch_bounds__(CLASSIFIER_BLOCK)
fused_classifier_kernel(bf16 *logits, float *losses, const int *targets, float dloss, int V, int Vp, int write_grad) {
    const int64_t row = blockIdx.x;
    bf16 *l = logits + row * Vp;
    const int target = targets[row];
    const float l_target = __bfloat162float(l[target]);  // read before pass 2 overwrites the row

    float m = -INFINITY, s = 0.0f;
    for (int c = threadIdx.x * 8; c < V; c += blockDim.x * 8) {
        const x128 v = load128(l + c);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            if (c + j >= V) break;
            const float x = __bfloat162float(v[j]);
            if (x > m) {
                s = s * expf(m - x) + 1.0f;  // rescale the running sum to the new max
                m = x;
            } else {
                s += expf(x - m);
            }
        }
    }
    const float M = block_max(m);
    const float S = block_sum(m == -INFINITY ? 0.0f : s * expf(m - M));  // block_sum synchronizes
    if (threadIdx.x == 0) losses[row] = logf(S) + M - l_target;
    if (!write_grad) return;
    const float inv_S = 1.0f / S;
    for (int c = threadIdx.x * 8; c < Vp; c += blockDim.x * 8) {
        const x128 v = load128(l + c);
        x128 g;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int col = c + j;
            const float p = col < V ? expf(__bfloat162float(v[j]) - M) * inv_S : 0.0f;
            g[j] = to_bf16((p - (col == target ? 1.0f : 0.0f)) * dloss);
        }
        store128(l + c, g);
    }
}

// losses[i] = cross-entropy of row i; with write_grad, logits become dlogits (dloss = d mean loss
// scaled: loss_scale / N).
static inline void fused_classifier(bf16 *logits, float *losses, const int *targets, float dloss, int N, int V, int Vp,
                                    bool write_grad, cudaStream_t stream) {
    if (Vp % 8 != 0) die("fused_classifier: Vp = %d is not a multiple of 8", Vp);
    LLMC_LAUNCH(N, CLASSIFIER_BLOCK, 0, stream, fused_classifier_kernel)(
        logits, losses, targets, dloss, V, Vp, write_grad);
    kernelCheck();
}

#endif  // LLMC_CLASSIFIER_CUH
