// LayerNorm forward (optionally fused with the residual add that precedes it) and backward.
//
// STATUS: the forward verified on an H100 at commit ad0f582 and on an H200 at c95ef56 (2026-11-27;
// dev/gpu_report.md: its harness and test_gptcu pass), and so was the backward as it was then (a dx
// kernel, then colsum.cuh's column sums for dw and db). The backward in one kernel (2026-11-27,
// after that run) has NOT RUN on a GPU: in the CPU emulator its harness passes and train_gptcu
// gives the bits of the two-kernel version (main.log, model and state, with 1 and 2 micro-steps).
// The forward writing FP8 codes of its output (layernorm_forward_codes_kernel, 2026-11-28) has NOT
// RUN on a GPU: in the emulator its harness gives the cast's bytes, and train_gptcu the bits of
// the LayerNorm followed by the cast. The forward keeping its row in registers between its passes
// (2026-11-30; it read the row from memory, or L2, in each of three) has NOT RUN on a GPU: in the
// emulator train_gptcu gives the bits of the three-read version.
//
// Layouts (row-major, N = B*T rows of C channels, C % 8 == 0): x, out, residual, dout, dinp bf16
// (N, C); mean, rstd fp32 (N); w, b bf16 (C); dw, db fp32 (C).
// One warp per row; lane l handles the 8-channel chunks l, l+32, ... with 128-bit loads. Row
// statistics are fp32, two-pass (mean, then mean of squared deviations) as the CPU reference:
//   y = (x - mean) * rstd * w + b,  rstd = 1 / sqrt(var + 1e-5)
// Backward, with xhat = (x - mean) rstd and g = dout * w:
//   dx = rstd (g - mean(g) - xhat mean(g xhat))   added to dinp (the residual stream's gradient)
//   dw += sum over rows of dout xhat, db += sum of dout   (deterministic, no atomics)
// in one pass over dout and x: each CTA owns one of colsum.cuh's chunks of rows, and sums dw and db
// over it in the order colsum's column sums use (see layernorm_backward_kernel).
#ifndef LLMC_LAYERNORM_CUH
#define LLMC_LAYERNORM_CUH

#include "colsum.cuh"
#include "cuda_common.cuh"
#include "quant.cuh"

#define LAYERNORM_EPS 1e-5f
// 8-channel chunks a lane of the backward loads at once (C = 768: one batch). 3 compiles to 128
// registers (two CTAs of 256 threads per SM; nvcc 13, sm_90a), 4 to 162, 1 (no batch) to 60.
#define LAYERNORM_BATCH 3

// One row of the forward, by one warp (lane l: the 8-channel chunks l, l + 32, ...): with
// b != nullptr, residual = bf16(a + b) is written to residual_out and normalized (the statistics
// are of the rounded values, which the backward pass reads back); with b == nullptr, a is
// normalized and residual_out is unused. mean and rstd are written, and emit(c, y) receives each of
// the lane's chunks of the bf16 output (channels c..c+7), which the kernels below store.
// The lane's CHUNKS = ceil(C / 256) chunks stay in registers (a template argument, so that xv is
// registers, not local memory) through the three passes (sum, squared deviations, output): the
// row is read from memory once, and all of a lane's loads are issued before the first sum needs
// them. The sums run over the chunks in the order of c, whatever CHUNKS is.
template <int CHUNKS, typename Emit>
__device__ __forceinline__ void layernorm_forward_row(bf16 *residual_out, float *mean, float *rstd, const bf16 *a,
                                                      const bf16 *b, const bf16 *w, const bf16 *bias, int row, int C,
                                                      Emit emit) {
    const int lane = threadIdx.x % 32;
    const int64_t base = (int64_t)row * C;
    x128 xv[CHUNKS];
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < CHUNKS; k++) {
        const int c = lane * 8 + 256 * k;
        if (c >= C) break;
        if (b) {  // fused residual
            const x128 av = load128(a + base + c), bv = load128(b + base + c);
#pragma unroll
            for (int j = 0; j < 8; j++) xv[k][j] = to_bf16(__bfloat162float(av[j]) + __bfloat162float(bv[j]));
            store128(residual_out + base + c, xv[k]);
        } else {
            xv[k] = load128(a + base + c);
        }
#pragma unroll
        for (int j = 0; j < 8; j++) sum += __bfloat162float(xv[k][j]);
    }
    const float m = warp_sum(sum) / C;
    float var = 0.0f;
#pragma unroll
    for (int k = 0; k < CHUNKS; k++) {
        if (lane * 8 + 256 * k >= C) break;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float d = __bfloat162float(xv[k][j]) - m;
            var += d * d;
        }
    }
    const float s = 1.0f / sqrtf(warp_sum(var) / C + LAYERNORM_EPS);
#pragma unroll
    for (int k = 0; k < CHUNKS; k++) {
        const int c = lane * 8 + 256 * k;
        if (c >= C) break;
        const x128 wv = load128(w + c), bv = load128(bias + c);
        x128 o;
#pragma unroll
        for (int j = 0; j < 8; j++)
            o[j] = to_bf16((__bfloat162float(xv[k][j]) - m) * s * __bfloat162float(wv[j]) + __bfloat162float(bv[j]));
        emit(c, o);
    }
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = s;
    }
}

// Rows of a forward CTA: one per warp.
#define LAYERNORM_FORWARD_ROWS 8

// Byte j of each of four words, packed in their order (w0's in the low byte): of four rows of a
// byte matrix (4 columns each), column j.
__device__ __forceinline__ uint32_t byte_column(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3, int j) {
    const uint32_t pick = j | (j + 4) << 4;  // __byte_perm's selector: byte j of x, then byte j of y
    return __byte_perm(__byte_perm(w0, w1, pick), __byte_perm(w2, w3, pick), 0x5410);
}

template <int CHUNKS>
__global__ void __launch_bounds__(32 * LAYERNORM_FORWARD_ROWS)
layernorm_forward_kernel(bf16 *residual_out, bf16 *out, float *mean, float *rstd, const bf16 *a, const bf16 *b,
                         const bf16 *w, const bf16 *bias, int N, int C) {
    const int row = blockIdx.x * LAYERNORM_FORWARD_ROWS + threadIdx.x / 32;
    if (row >= N) return;
    layernorm_forward_row<CHUNKS>(residual_out, mean, rstd, a, b, w, bias, row, C,
                          [&](int c, const x128 &y) { store128(out + (int64_t)row * C + c, y); });
}

// The same rows, with the FP8 codes of the output for the block linear that reads it (--matmul
// fp8 with delayed scaling, whose scale exists before the output does; llmc/matmul_lowp.cuh's
// lowp_producer_codes): codes.q (N, C) and codes.qt (C, N) hold Q(y * scale) of each bf16 output y,
// the bytes quant_transpose_kernel makes of the stored output, and codes.amax accumulates max |y|;
// out (NULL: not written), residual, mean and rstd as above. One pass instead of the LayerNorm's
// bf16 store and a cast that reads it back (4 bytes an element less, and one launch).
// Each warp keeps its row's codes in shared memory, tile[r][c] (row r of the CTA's 8); then
// thread t takes the 4 channels 4k..4k+3 of the word column k = t, t + 256, ...: 8 words (rows)
// read conflict-free (a warp reads 32 consecutive words of a row), turned by byte permutes into 4
// runs of 8 bytes, one per channel, each one 8-byte store into its qt row (the 4 CTAs of a
// 32-byte sector write it at about the same time; L2 merges them).
template <int CHUNKS>
__global__ void __launch_bounds__(32 * LAYERNORM_FORWARD_ROWS)
layernorm_forward_codes_kernel(bf16 *residual_out, bf16 *out, float *mean, float *rstd, const bf16 *a, const bf16 *b,
                               const bf16 *w, const bf16 *bias, int N, int C, QuantCodesOut codes) {
    LLMC_DYNAMIC_SMEM(tile);  // [LAYERNORM_FORWARD_ROWS][C] codes
    const int r = threadIdx.x / 32, row0 = blockIdx.x * LAYERNORM_FORWARD_ROWS, row = row0 + r;
    const float scale = *codes.scale;
    unsigned int bits = 0;
    if (row < N)
        layernorm_forward_row<CHUNKS>(residual_out, mean, rstd, a, b, w, bias, row, C, [&](int c, const x128 &y) {
            const int64_t at = (int64_t)row * C + c;
            if (out) store128(out + at, y);
            uint8_t q[8];
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const float v = __bfloat162float(y[j]);
                q[j] = quant_to_byte(v, scale, codes.target);
                bits = max(bits, quant_abs_bits(v));
            }
            if (codes.q) quant_store8(codes.q + at, q);
            quant_store8(tile + (size_t)r * C + c, q);
        });
    if (codes.amax) quant_block_amax(codes.amax, bits);  // its barrier also publishes the tile
    else __syncthreads();
    if (!codes.qt) return;
    const int rows = min(LAYERNORM_FORWARD_ROWS, N - row0);
    const bool vector = rows == LAYERNORM_FORWARD_ROWS && N % 8 == 0 && quant_aligned(codes.qt, 8);
    for (int k = threadIdx.x; k < C / 4; k += blockDim.x) {
        uint32_t word[LAYERNORM_FORWARD_ROWS];
#pragma unroll
        for (int i = 0; i < LAYERNORM_FORWARD_ROWS; i++)
            word[i] = i < rows ? reinterpret_cast<const uint32_t *>(tile + (size_t)i * C)[k] : 0u;
#pragma unroll
        for (int j = 0; j < 4; j++) {  // channel 4k + j: byte j of each row's word
            const uint32_t lo = byte_column(word[0], word[1], word[2], word[3], j);
            const uint32_t hi = byte_column(word[4], word[5], word[6], word[7], j);
            uint8_t *dst = codes.qt + (int64_t)(4 * k + j) * N + row0;
            if (vector) {
                *reinterpret_cast<uint2 *>(dst) = make_uint2(lo, hi);
            } else {
                for (int i = 0; i < rows; i++) dst[i] = (uint8_t)((i < 4 ? lo : hi) >> (8 * (i % 4)));
            }
        }
    }
}

// The forward's widest row: the backward's limit on sm_90 (layernorm_require_supported).
#define LAYERNORM_FORWARD_MAX_CHUNKS 14

// The kernels for rows of CHUNKS = ceil(C / 256) chunks of 256 channels (the last may be partial):
// this instantiation's, or the next one up's. codes.q == NULL and codes.qt == NULL: the plain
// forward.
template <int CHUNKS>
static inline void layernorm_launch_chunks(bf16 *residual_out, bf16 *out, float *mean, float *rstd, const bf16 *a,
                                           const bf16 *b, const bf16 *w, const bf16 *bias, int N, int C,
                                           const QuantCodesOut &codes, cudaStream_t stream) {
    if constexpr (CHUNKS < LAYERNORM_FORWARD_MAX_CHUNKS) {
        if (ceil_div(C, 256) > CHUNKS) {
            layernorm_launch_chunks<CHUNKS + 1>(residual_out, out, mean, rstd, a, b, w, bias, N, C, codes, stream);
            return;
        }
    } else if (ceil_div(C, 256) > CHUNKS) {
        die("layernorm_forward: C = %d is wider than the %d channels the forward takes", C, 256 * CHUNKS);
    }
    const int grid = ceil_div(N, LAYERNORM_FORWARD_ROWS), block = 32 * LAYERNORM_FORWARD_ROWS;
    if (codes.q || codes.qt)
        LLMC_LAUNCH(grid, block, (size_t)LAYERNORM_FORWARD_ROWS * C, stream, layernorm_forward_codes_kernel<CHUNKS>)(
            residual_out, out, mean, rstd, a, b, w, bias, N, C, codes);
    else
        LLMC_LAUNCH(grid, block, 0, stream, layernorm_forward_kernel<CHUNKS>)(residual_out, out, mean, rstd, a, b, w,
                                                                              bias, N, C);
    kernelCheck();
}

static inline void layernorm_launch(bf16 *residual_out, bf16 *out, float *mean, float *rstd, const bf16 *a,
                                    const bf16 *b, const bf16 *w, const bf16 *bias, int N, int C,
                                    const QuantCodesOut &codes, cudaStream_t stream) {
    if (codes.colsum) die("layernorm_forward: the codes' column sums are not computed here");
    layernorm_launch_chunks<1>(residual_out, out, mean, rstd, a, b, w, bias, N, C, codes, stream);
}

// out = LayerNorm(x); with codes (see layernorm_forward_codes_kernel) also its FP8 codes, and out
// may be NULL.
static inline void layernorm_forward(bf16 *out, float *mean, float *rstd, const bf16 *x, const bf16 *w,
                                     const bf16 *bias, int N, int C, cudaStream_t stream,
                                     const QuantCodesOut &codes = QuantCodesOut{}) {
    layernorm_launch(nullptr, out, mean, rstd, x, nullptr, w, bias, N, C, codes, stream);
}

// residual = a + b, out = LayerNorm(residual); codes as above.
static inline void fused_residual_layernorm_forward(bf16 *residual, bf16 *out, float *mean, float *rstd, const bf16 *a,
                                                    const bf16 *b, const bf16 *w, const bf16 *bias, int N, int C,
                                                    cudaStream_t stream, const QuantCodesOut &codes = QuantCodesOut{}) {
    layernorm_launch(residual, out, mean, rstd, a, b, w, bias, N, C, codes, stream);
}

// Backward of one chunk of rows (colsum.cuh's chunks: rows_per_chunk = colsum_rows_per_chunk(N)):
// block (32, 8), warp w takes rows w, w + 8, ... of the chunk, one row at a time, and lane l the
// 8-channel chunks l, l + 32, ... of the row (columns 256 i + 8 l + j, j < 8), as in the forward:
//   dinp[row] += dx (two passes over the row: the means of g and g xhat, then dx);
//   each lane adds dout xhat and dout of its columns to its warp's sums in shared memory,
//   acc[k][w][i][j][l] (k 0: dw, 1: db), at index ((k 8 + w) G + i) 256 + 32 j + l with G =
//   ceil(C / 256): for a fixed j the 32 lanes touch 32 consecutive words (no bank conflicts).
// Then thread t (0..255) adds column 256 i + t's 8 warp sums in warp order into
// partial[chunk][k][col], and colsum_finish adds the chunks in order. Per column these are the
// sums, in the order, that colsum_partial_kernel computes for a bias (warp w's rows w, w + 8, ...
// of a chunk of the same rows): the shape alone fixes every sum's order. One read of dout and x
// from memory instead of two with a separate column-sum kernel (the second pass over a row reads
// it again from L1 where it fits: at C 768; at C 1600 two CTAs' 112 KiB of shared memory leave
// about 28 KB of L1 an SM, and it comes from L2).
__global__ void __launch_bounds__(256) layernorm_backward_kernel(bf16 *dinp, float *partial, const bf16 *dout,
                                                                 const bf16 *x, const bf16 *w, const float *mean,
                                                                 const float *rstd, int N, int C, int rows_per_chunk) {
    LLMC_DYNAMIC_SMEM(smem);
    float *acc = reinterpret_cast<float *>(smem);  // [2][8][G * 256]
    const int lane = threadIdx.x, warp = threadIdx.y;
    const int G = (C + 255) / 256;
    float *acc_dw = acc + (size_t)warp * G * 256, *acc_db = acc + (size_t)(8 + warp) * G * 256;
    for (int k = lane; k < G * 256; k += 32) acc_dw[k] = 0.0f, acc_db[k] = 0.0f;
    const int chunk = blockIdx.x, r_end = min(N, (chunk + 1) * rows_per_chunk);
    for (int row = chunk * rows_per_chunk + warp; row < r_end; row += 8) {
        const int64_t base = (int64_t)row * C;
        const float m = mean[row], s = rstd[row];
        float g_sum = 0.0f, gn_sum = 0.0f;
        // Each pass over the row loads LAYERNORM_BATCH chunks a lane before it uses them, so that
        // their memory latencies overlap (a warp takes several rows in turn, with few warps per SM).
        for (int c0 = lane * 8; c0 < C; c0 += 256 * LAYERNORM_BATCH) {
            x128 dv[LAYERNORM_BATCH], xv[LAYERNORM_BATCH], wv[LAYERNORM_BATCH];
#pragma unroll
            for (int u = 0; u < LAYERNORM_BATCH; u++)
                if (c0 + 256 * u < C) {
                    dv[u] = load128(dout + base + c0 + 256 * u), xv[u] = load128(x + base + c0 + 256 * u);
                    wv[u] = load128(w + c0 + 256 * u);
                }
#pragma unroll
            for (int u = 0; u < LAYERNORM_BATCH; u++)
                if (c0 + 256 * u < C) {
#pragma unroll
                    for (int j = 0; j < 8; j++) {
                        const float g = __bfloat162float(dv[u][j]) * __bfloat162float(wv[u][j]);
                        g_sum += g;
                        gn_sum += g * (__bfloat162float(xv[u][j]) - m) * s;
                    }
                }
        }
        const float g_mean = warp_sum(g_sum) / C, gn_mean = warp_sum(gn_sum) / C;
        for (int c0 = lane * 8; c0 < C; c0 += 256 * LAYERNORM_BATCH) {
            x128 di[LAYERNORM_BATCH];  // from memory; dout, x and w again, from L1 or L2 (above)
#pragma unroll
            for (int u = 0; u < LAYERNORM_BATCH; u++)
                if (c0 + 256 * u < C) di[u] = load128(dinp + base + c0 + 256 * u);
#pragma unroll
            for (int u = 0; u < LAYERNORM_BATCH; u++)
                if (c0 + 256 * u < C) {
                    const int c = c0 + 256 * u, at = (c / 256) * 256 + lane;  // its sums' group c / 256
                    const x128 dv = load128(dout + base + c), xv = load128(x + base + c), wv = load128(w + c);
#pragma unroll
                    for (int j = 0; j < 8; j++) {
                        const float d = __bfloat162float(dv[j]), g = d * __bfloat162float(wv[j]);
                        const float n = (__bfloat162float(xv[j]) - m) * s;
                        di[u][j] = to_bf16(__bfloat162float(di[u][j]) + s * (g - g_mean - n * gn_mean));
                        // (d (x - m)) s, not d n: colsum's rounding, so dw keeps its bits
                        acc_dw[at + 32 * j] += d * (__bfloat162float(xv[j]) - m) * s;
                        acc_db[at + 32 * j] += d;
                    }
                    store128(dinp + base + c, di[u]);
                }
        }
    }
    __syncthreads();
    const int t = warp * 32 + lane;
    for (int i = 0; i < G && 256 * i + t < C; i++) {
        const int at = i * 256 + 32 * (t % 8) + t / 8;  // column 256 i + t: lane t / 8, j = t % 8
        float sum_dw = 0.0f, sum_db = 0.0f;
#pragma unroll
        for (int v = 0; v < 8; v++) {
            sum_dw += acc[(size_t)v * G * 256 + at];
            sum_db += acc[(size_t)(8 + v) * G * 256 + at];
        }
        partial[((int64_t)chunk * 2 + 0) * C + 256 * i + t] = sum_dw;
        partial[((int64_t)chunk * 2 + 1) * C + 256 * i + t] = sum_db;
    }
}

// Bytes of shared memory layernorm_backward_kernel uses at width C: 16 KiB per 256 channels.
static inline size_t layernorm_backward_smem_bytes(int C) {
    return (size_t)2 * 8 * ceil_div(C, 256) * 256 * sizeof(float);
}

// The trainer calls this at startup: the backward's shared memory must fit one CTA's on this GPU
// (227 KiB on sm_90: C <= 3584; 163 KiB on sm_80: C <= 2560; GPT-2 d48 has C = 1600).
static inline void layernorm_require_supported(int C) {
    int device, optin;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (layernorm_backward_smem_bytes(C) > (size_t)optin)
        die("layernorm: C = %d needs %zu bytes of shared memory per CTA in the backward; this GPU has %d", C,
            layernorm_backward_smem_bytes(C), optin);
}

// dinp += dx (always accumulated: the residual stream's gradient), dw += ..., db += ... (= without
// accumulate); scratch: colsum_scratch_floats(N, C) floats.
static inline void layernorm_backward(bf16 *dinp, float *dw, float *db, float *scratch, const bf16 *dout, const bf16 *x,
                                      const bf16 *w, const float *mean, const float *rstd, int N, int C,
                                      bool accumulate, cudaStream_t stream) {
    const size_t smem = layernorm_backward_smem_bytes(C);
    cudaCheck(cudaFuncSetAttribute(layernorm_backward_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    LLMC_LAUNCH(colsum_chunks(N), dim3(32, 8), smem, stream, layernorm_backward_kernel)(
        dinp, scratch, dout, x, w, mean, rstd, N, C, colsum_rows_per_chunk(N));
    kernelCheck();
    colsum_finish<2>(dw, db, scratch, colsum_chunks(N), C, accumulate, stream);
}

#endif  // LLMC_LAYERNORM_CUH
