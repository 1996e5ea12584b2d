// Low-precision number formats and quantizers: FP8 (E4M3, E5M2), int8 and bf16.
//
// The scalar conversions below are bit-exact twins of NVIDIA's (cuda_fp8.h, cuda_bf16.h): the test
// dev/test/quant/fp8_exhaustive.cpp checks every one of the 2^32 fp32 inputs against
// __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...) and __float2bfloat16_rn. They are static inline and
// __host__ __device__ under nvcc, so the CPU trainer, the GPU kernels and the tests share one
// definition. The tensor-level quantizers (quant.c) are what the CPU trainer calls to emulate the
// FP8 and int8 matmuls of the GPU trainer: quantize, dequantize, then the ordinary fp32 matmul.
//
// Formats (s = sign, e = exponent, m = mantissa bits):
//   E4M3  s.eeee.mmm  bias 7,  max 448   (0x7E), min normal 2^-6,  min subnormal 2^-9,  NaN 0x7F/0xFF, no Inf
//   E5M2  s.eeeee.mm  bias 15, max 57344 (0x7B), min normal 2^-14, min subnormal 2^-16, Inf 0x7C, NaN 0x7D..0x7F
//   bf16  the high 16 bits of an fp32
// fp32 -> FP8 (== __NV_SATFINITE): round to nearest, ties to even, with an unbounded exponent, then
//   - a result beyond the largest finite value (including +-Inf) becomes +-max (448 or 57344);
//   - a magnitude at or below half the smallest subnormal becomes a zero of the input's sign;
//   - NaN (any sign or payload) becomes 0x7F, a positive NaN, in both formats.
#ifndef LLMC_QUANT_H
#define LLMC_QUANT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define QUANT_HOSTDEV __host__ __device__
#else
#define QUANT_HOSTDEV
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { FP8_E4M3 = 0, FP8_E5M2 = 1 } fp8_format;

#define FP8_E4M3_MAX 448.0f
#define FP8_E5M2_MAX 57344.0f
#define INT8_QMAX 127

static inline QUANT_HOSTDEV uint32_t quant_float_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline QUANT_HOSTDEV float quant_bits_float(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

// v / 2^shift rounded to nearest, ties to even (1 <= shift <= 31, v < 2^31).
static inline QUANT_HOSTDEV uint32_t quant_shift_rne(uint32_t v, uint32_t shift) {
    uint32_t odd = (v >> shift) & 1u;
    return (v + (1u << (shift - 1)) - 1u + odd) >> shift;
}

// fp32 -> FP8 code; the rules are in the header comment.
static inline QUANT_HOSTDEV uint8_t fp8_from_float(float x, fp8_format format) {
    const uint32_t mbits = format == FP8_E4M3 ? 3u : 2u;     // mantissa bits
    const int bias = format == FP8_E4M3 ? 7 : 15;
    const uint32_t max_code = format == FP8_E4M3 ? 0x7Eu : 0x7Bu;
    uint32_t bits = quant_float_bits(x);
    uint32_t sign = (bits >> 24) & 0x80u;
    uint32_t mag = bits & 0x7FFFFFFFu;
    if (mag > 0x7F800000u) return 0x7F;                      // NaN
    int exp = (int)(mag >> 23) - 127;                         // unbiased; fp32 subnormals land far below
    uint32_t code;
    if (exp >= 1 - bias) {
        // Normal in FP8. Rounding the fp32 bit pattern to mbits mantissa bits lets a mantissa carry
        // ripple into the exponent, which is exactly what rounding up to the next binade means;
        // then rebias the exponent from 127 to `bias`.
        code = quant_shift_rne(mag, 23u - mbits) - ((uint32_t)(127 - bias) << mbits);
    } else {
        // Subnormal in FP8: the value in units of the smallest subnormal 2^(1-bias-mbits) is
        // significand(24 bits, implicit 1) / 2^shift. A round up to 1 << mbits is the smallest normal.
        uint32_t shift = (23u - mbits) + (uint32_t)(1 - bias - exp);
        code = shift > 24u ? 0u : quant_shift_rne((mag & 0x7FFFFFu) | 0x800000u, shift);
    }
    if (code > max_code) code = max_code;                    // saturate (also +-Inf)
    return (uint8_t)(sign | code);
}

// FP8 code -> fp32 (exact). NaN codes give a positive quiet NaN.
static inline QUANT_HOSTDEV float fp8_to_float(uint8_t code, fp8_format format) {
    const uint32_t mbits = format == FP8_E4M3 ? 3u : 2u;
    const int bias = format == FP8_E4M3 ? 7 : 15;
    uint32_t sign = (uint32_t)(code & 0x80u) << 24;
    uint32_t mag = code & 0x7Fu;
    uint32_t exp_field = mag >> mbits, mant = mag & ((1u << mbits) - 1u);
    if (format == FP8_E4M3 ? mag == 0x7Fu : mag > 0x7Cu) return quant_bits_float(0x7FC00000u);
    if (format == FP8_E5M2 && mag == 0x7Cu) return quant_bits_float(sign | 0x7F800000u);
    if (exp_field == 0) {
        // subnormal: mant * 2^(1 - bias - mbits), exact in fp32 (a small integer times a power of two)
        float v = (float)mant * quant_bits_float((uint32_t)(127 + 1 - bias - (int)mbits) << 23);
        return quant_bits_float(sign | quant_float_bits(v));
    }
    return quant_bits_float(sign | ((exp_field + 127u - (uint32_t)bias) << 23) | (mant << (23u - mbits)));
}

// fp32 -> bf16, round to nearest, ties to even (== __float2bfloat16_rn). NaN -> 0x7FFF; values
// rounding beyond the largest finite bf16 become Inf, as IEEE rounding says.
static inline QUANT_HOSTDEV uint16_t bf16_from_float(float x) {
    uint32_t bits = quant_float_bits(x);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF;
    return (uint16_t)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// fp32 -> bf16 with stochastic rounding: rounds away from the truncated value with probability
// (low 16 bits of x) / 2^16, so E[bf16(x)] = x. `random` is a uniform 32-bit value (its low 16 bits
// are used); the same random gives the same result on the CPU and the GPU. NaN -> 0x7FFF; a value
// above the largest finite bf16 may round up to Inf (its upper neighbour).
static inline QUANT_HOSTDEV uint16_t bf16_from_float_stochastic(float x, uint32_t random) {
    uint32_t bits = quant_float_bits(x);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF;
    return (uint16_t)((bits + (random & 0xFFFFu)) >> 16);     // +-Inf has zero low bits: stays Inf
}

static inline QUANT_HOSTDEV float bf16_to_float(uint16_t h) { return quant_bits_float((uint32_t)h << 16); }

// fp32 -> int8 with a quantization multiplier: clamp(round_half_even(x * scale), -127, 127).
// NaN -> 0 (int8 has no NaN; quant_scale() turns a NaN amax into a NaN scale so it is not hidden).
static inline QUANT_HOSTDEV int8_t int8_from_float(float x, float scale) {
    float v = x * scale;
    if (!(v == v)) return 0;
    if (v >= (float)INT8_QMAX) return INT8_QMAX;
    if (v <= -(float)INT8_QMAX) return -INT8_QMAX;
    return (int8_t)(int)rintf(v);   // default rounding mode: ties to even (cvt.rni on the GPU)
}

// ---- scales -------------------------------------------------------------------------------------
// A scale is the multiplier applied before the cast: q = Q(x * scale), and x ~ q / scale.
// QUANT_SCALE_POW2 (default): the largest power of two 2^k with amax * 2^k <= qmax, so amax maps
//   into (qmax/2, qmax] and never saturates; dequantization q * 2^-k is exact. No further margin:
//   the power-of-two rounding already leaves up to a factor 2 of headroom. Pass qmax / 2^m for a
//   margin of m more binades (useful with delayed scaling, where the amax comes from history).
// QUANT_SCALE_EXACT: qmax / amax in fp32 (SwitchBack's 127 / absmax); uses the full range, and
//   dequantization is rounded.
// amax == 0 gives scale 1 (all values are zero). A non-finite amax (NaN or Inf, i.e. a diverged
// tensor) gives a NaN scale, so the NaN reaches the matmul output instead of being hidden.
// Scales are clamped to [2^-126, 2^126] so that the scale and 1/scale are finite normal floats.
// A qmax that is not positive and finite also gives NaN (callers pass the format constants).
typedef enum { QUANT_SCALE_POW2 = 0, QUANT_SCALE_EXACT = 1 } quant_scale_mode;

static inline QUANT_HOSTDEV float quant_scale(float amax, float qmax, quant_scale_mode mode) {
    if (!(qmax > 0.0f) || isinf(qmax) || !isfinite(amax)) return NAN;
    if (amax == 0.0f) return 1.0f;
    // Keep scale and 1/scale finite normal floats: 2^-126 <= scale <= 2^126.
    const int kmin = -126, kmax = 126;
    if (mode == QUANT_SCALE_POW2) {
        // amax = ma * 2^ea, qmax = mq * 2^eq with ma, mq in [0.5, 1). The largest k with
        // amax * 2^k <= qmax is eq - ea when ma <= mq, else one less.
        int ea, eq;
        float ma = frexpf(amax, &ea), mq = frexpf(qmax, &eq);
        int k = eq - ea - (ma > mq ? 1 : 0);
        k = k < kmin ? kmin : k > kmax ? kmax : k;
        return ldexpf(1.0f, k);
    }
    float scale = qmax / amax;
    return fminf(fmaxf(scale, ldexpf(1.0f, kmin)), ldexpf(1.0f, kmax));
}

// max |x| over n values; NaN if any is NaN (the comparison is on the bit patterns of |x|).
float quant_amax(const float *x, size_t n);

// ---- tensors (OpenMP over elements or rows) -----------------------------------------------------
void fp8_quantize(uint8_t *q, const float *x, size_t n, float scale, fp8_format format);
void fp8_dequantize(float *x, const uint8_t *q, size_t n, float scale, fp8_format format);

// Row-wise int8: row r of the (rows, cols) row-major x gets scales[r] from its own amax.
void int8_quantize_rows(int8_t *q, float *scales, const float *x, size_t rows, size_t cols,
                        quant_scale_mode mode);
// Tensor-wise int8: one scale from the amax of all n values; returns it.
float int8_quantize_tensor(int8_t *q, const float *x, size_t n, quant_scale_mode mode);
// x[r, c] = q[r, c] / scales[r]; tensor-wise is the case rows = 1.
void int8_dequantize_rows(float *x, const int8_t *q, const float *scales, size_t rows, size_t cols);

// ---- CPU emulation of the GPU's low-precision matmuls ----------------------------------------------
// The GPU computes out = (qa * qb) / (sa * sb) with exact products and wide accumulation; since
// dequantization distributes over the dot product, that equals the fp32 matmul of the dequantized
// operands dequant(qa) = qa / sa and dequant(qb) = qb / sb, up to accumulation order. So the CPU
// twin replaces each operand by dequant(quant(operand)) ("fake quantization") and then runs its
// ordinary fp32 matmul. The three roles and what each precision does to them:
//                activation (B*T, C) in     weight (OC, C)       gradient (B*T, OC) of the output
//   MATMUL_FP32  unchanged                  unchanged            unchanged
//   MATMUL_BF16  bf16 round-to-nearest      bf16 round-to-nearest bf16 round-to-nearest
//   MATMUL_FP8   E4M3, tensor scale         E4M3, tensor scale   E5M2, tensor scale
//   MATMUL_INT8  int8, a scale per row      int8, tensor scale   int8, a scale per row
// (forward: activation x weight; input gradient: gradient x weight; the weight gradient stays in
// the higher precision and needs no call). Scales are current scaling (from this tensor's amax)
// with `mode`. For delayed scaling, compute the scale from the amax history with quant_scale() and
// call fp8_fake_quantize() directly. out and in may be the same buffer.
typedef enum { MATMUL_FP32 = 0, MATMUL_BF16 = 1, MATMUL_FP8 = 2, MATMUL_INT8 = 3 } matmul_precision;
static inline const char *matmul_precision_name(matmul_precision p) {
    return p == MATMUL_FP32 ? "fp32" : p == MATMUL_BF16 ? "bf16" : p == MATMUL_FP8 ? "fp8" : "int8";
}
typedef enum { QUANT_ACTIVATION = 0, QUANT_WEIGHT = 1, QUANT_GRADIENT = 2 } quant_operand;

// The four linear layers of a block, and the index of each of their quantized operands (for
// scales and amax histories, on both trainers): (layer * NUM_BLOCK_LINEARS + linear) * 3 + role.
enum { LINEAR_QKV, LINEAR_ATTPROJ, LINEAR_FC, LINEAR_FCPROJ, NUM_BLOCK_LINEARS };
#define QUANT_ROLES 3
static inline QUANT_HOSTDEV int quant_operand_index(int layer, int linear, quant_operand role) {
    return (layer * NUM_BLOCK_LINEARS + linear) * QUANT_ROLES + (int)role;
}

// Returns the tensor scale used, or 0 where there is none (fp32, bf16, row-wise int8).
float quant_emulate_operand(float *out, const float *in, size_t rows, size_t cols,
                            matmul_precision precision, quant_operand role, quant_scale_mode mode);

// out = dequant(quant(in)) in FP8 with a given scale (the building block of the above).
void fp8_fake_quantize(float *out, const float *in, size_t n, float scale, fp8_format format);

#ifdef __cplusplus
}
#endif
#endif
