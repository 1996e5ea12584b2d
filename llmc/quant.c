// Tensor-level quantizers and the CPU emulation of low-precision matmuls; see quant.h for the
// formats, the scale recipe and the math of the emulation.
#include "quant.h"

#include "utils.h"

// Below this many elements a loop is not worth waking the OpenMP team for.
#define QUANT_PARALLEL_MIN 32768

float quant_amax(const float *x, size_t n) {
    // For non-negative floats the bit patterns order like the values, and NaN patterns lie above
    // +Inf, so an integer max over |x|'s bits is an exact, order-independent, NaN-propagating amax.
    uint32_t max_bits = 0;
#pragma omp parallel for reduction(max : max_bits) if (n >= QUANT_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) {
        uint32_t b = quant_float_bits(x[i]) & 0x7FFFFFFFu;
        if (b > max_bits) max_bits = b;
    }
    return max_bits > 0x7F800000u ? NAN : quant_bits_float(max_bits);
}

void fp8_quantize(uint8_t *q, const float *x, size_t n, float scale, fp8_format format) {
#pragma omp parallel for if (n >= QUANT_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) q[i] = fp8_from_float(x[i] * scale, format);
}

// Dequantization multiplies by 1/scale (exact for power-of-two scales), as the GPU does through
// cuBLASLt's scale pointers, which hold 1/scale.
void fp8_dequantize(float *x, const uint8_t *q, size_t n, float scale, fp8_format format) {
    float inv_scale = 1.0f / scale;
#pragma omp parallel for if (n >= QUANT_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) x[i] = fp8_to_float(q[i], format) * inv_scale;
}

void fp8_fake_quantize(float *out, const float *in, size_t n, float scale, fp8_format format) {
    float inv_scale = 1.0f / scale;
#pragma omp parallel for if (n >= QUANT_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) out[i] = fp8_to_float(fp8_from_float(in[i] * scale, format), format) * inv_scale;
}

// Serial amax of one row (rows are the unit of parallel work in the row-wise quantizers).
static float row_amax(const float *x, size_t n) {
    uint32_t max_bits = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t b = quant_float_bits(x[i]) & 0x7FFFFFFFu;
        if (b > max_bits) max_bits = b;
    }
    return max_bits > 0x7F800000u ? NAN : quant_bits_float(max_bits);
}

void int8_quantize_rows(int8_t *q, float *scales, const float *x, size_t rows, size_t cols,
                        quant_scale_mode mode) {
#pragma omp parallel for if (rows * cols >= QUANT_PARALLEL_MIN)
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float scale = quant_scale(row_amax(xr, cols), (float)INT8_QMAX, mode);
        scales[r] = scale;
        for (size_t c = 0; c < cols; c++) q[r * cols + c] = int8_from_float(xr[c], scale);
    }
}

float int8_quantize_tensor(int8_t *q, const float *x, size_t n, quant_scale_mode mode) {
    float scale = quant_scale(quant_amax(x, n), (float)INT8_QMAX, mode);
#pragma omp parallel for if (n >= QUANT_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) q[i] = int8_from_float(x[i], scale);
    return scale;
}

void int8_dequantize_rows(float *x, const int8_t *q, const float *scales, size_t rows, size_t cols) {
#pragma omp parallel for if (rows * cols >= QUANT_PARALLEL_MIN)
    for (size_t r = 0; r < rows; r++) {
        float inv_scale = 1.0f / scales[r];
        for (size_t c = 0; c < cols; c++) x[r * cols + c] = (float)q[r * cols + c] * inv_scale;
    }
}

// out = dequant(quant(in)) in int8 with one scale per row of the (rows, cols) row-major input.
static void int8_fake_quantize_rows(float *out, const float *in, size_t rows, size_t cols,
                                    quant_scale_mode mode) {
#pragma omp parallel for if (rows * cols >= QUANT_PARALLEL_MIN)
    for (size_t r = 0; r < rows; r++) {
        const float *inr = in + r * cols;
        float *outr = out + r * cols;
        float scale = quant_scale(row_amax(inr, cols), (float)INT8_QMAX, mode);
        float inv_scale = 1.0f / scale;
        for (size_t c = 0; c < cols; c++) outr[c] = (float)int8_from_float(inr[c], scale) * inv_scale;
    }
}

float quant_emulate_operand(float *out, const float *in, size_t rows, size_t cols,
                            matmul_precision precision, quant_operand role, quant_scale_mode mode) {
    size_t n = rows * cols;
    switch (precision) {
    case MATMUL_FP32:
        if (out != in) memcpy(out, in, n * sizeof(float));
        return 0.0f;
    case MATMUL_BF16:
#pragma omp parallel for if (n >= QUANT_PARALLEL_MIN)
        for (size_t i = 0; i < n; i++) out[i] = bf16_to_float(bf16_from_float(in[i]));
        return 0.0f;
    case MATMUL_FP8: {
        fp8_format format = role == QUANT_GRADIENT ? FP8_E5M2 : FP8_E4M3;
        float qmax = format == FP8_E5M2 ? FP8_E5M2_MAX : FP8_E4M3_MAX;
        float scale = quant_scale(quant_amax(in, n), qmax, mode);
        fp8_fake_quantize(out, in, n, scale, format);
        return scale;
    }
    case MATMUL_INT8:
        if (role == QUANT_WEIGHT) {
            float scale = quant_scale(quant_amax(in, n), (float)INT8_QMAX, mode);
            float inv_scale = 1.0f / scale;
#pragma omp parallel for if (n >= QUANT_PARALLEL_MIN)
            for (size_t i = 0; i < n; i++) out[i] = (float)int8_from_float(in[i], scale) * inv_scale;
            return scale;
        }
        int8_fake_quantize_rows(out, in, rows, cols, mode);
        return 0.0f;
    }
    die("quant_emulate_operand: unknown matmul precision %d", (int)precision);
}
