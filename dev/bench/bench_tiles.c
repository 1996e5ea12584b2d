// The matmuls of one training step (forward, input gradient, weight gradient of every linear
// layer and of the tied output head) through train_gpt's sgemm_fixed_tiles, beside one
// threaded OpenBLAS sgemm per matmul (its bits follow the thread count: llmc/sgemm_tiles.h), in
// alternating rounds on the same buffers; prints the median milliseconds of each and their ratio.
//   build/bench_tiles [B T L C rounds]    (default: 4 64 12 768 9, train_gpt's d12 at B 4, T 64)
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../llmc/blas_kernels.h"
#include "../../llmc/rng.h"
#include "../../llmc/sgemm_tiles.h"
#include "../../llmc/utils.h"

static void openblas_threaded(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B,
                              int ldb, float beta, float *C, int ldc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K,
                1.0f, A, lda, B, ldb, beta, C, ldc);
}

typedef void (*Sgemm)(int, int, int, int, int, const float *, int, const float *, int, float, float *, int);

// The three matmuls of a linear layer inp (N, IC) -> out (N, OC), as matmul_forward/_backward.
static void linear_layer(Sgemm sgemm, float *const buf[3], int N, int IC, int OC) {
    sgemm(0, 1, N, OC, IC, buf[0], IC, buf[1], IC, 0.0f, buf[2], OC);
    sgemm(0, 0, N, IC, OC, buf[0], OC, buf[1], IC, 0.0f, buf[2], IC);
    sgemm(1, 0, OC, IC, N, buf[0], OC, buf[1], IC, 1.0f, buf[2], IC);
}

static double step_ms(Sgemm sgemm, float *const buf[3], int N, int L, int C, int Vp) {
    double t = wall_time();
    for (int l = 0; l < L; l++) {
        linear_layer(sgemm, buf, N, C, 3 * C);
        linear_layer(sgemm, buf, N, C, C);
        linear_layer(sgemm, buf, N, C, 4 * C);
        linear_layer(sgemm, buf, N, 4 * C, C);
    }
    linear_layer(sgemm, buf, N, C, Vp);
    return (wall_time() - t) * 1e3;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof(double), compare_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
    blas_kernels_fix(argv);
    if (argc != 1 && argc != 6) die("usage: %s [B T L C rounds]", argv[0]);
    const int B = argc > 1 ? atoi(argv[1]) : 4, T = argc > 1 ? atoi(argv[2]) : 64;
    const int L = argc > 1 ? atoi(argv[3]) : 12, C = argc > 1 ? atoi(argv[4]) : 768;
    const int rounds = argc > 1 ? atoi(argv[5]) : 9, N = B * T, Vp = 50304;
    if (B < 1 || T < 1 || L < 0 || C < 1 || rounds < 1) die("B, T, C and rounds must be positive, L >= 0");
    // Large enough for every operand above: (N, Vp), (Vp, C) and (4C, C) floats.
    size_t floats = (size_t)Vp * (N > C ? N : C);
    if ((size_t)16 * C * C > floats) floats = (size_t)16 * C * C;
    float *buf[3];
    for (int i = 0; i < 3; i++) {
        buf[i] = (float *)malloc_check(floats * sizeof(float));
        for (size_t j = 0; j < floats; j++) buf[i][j] = rng_uniform(20261127, i, j) - 0.5f;  // no zeros, no denormals
    }
    printf("bench_tiles: N %d (B %d x T %d), L %d, C %d, Vp %d, %d threads, %s, %d rounds\n", N, B, T, L, C, Vp,
           omp_get_max_threads(), blas_kernels_description(), rounds);
    double *tiles_ms = (double *)malloc_check(rounds * sizeof(double));
    double *openblas_ms = (double *)malloc_check(rounds * sizeof(double));
    step_ms(sgemm_fixed_tiles, buf, N, L, C, Vp);  // warm-up: pages, OpenBLAS's buffers
    for (int r = 0; r < rounds; r++) {
        tiles_ms[r] = step_ms(sgemm_fixed_tiles, buf, N, L, C, Vp);
        openblas_ms[r] = step_ms(openblas_threaded, buf, N, L, C, Vp);
    }
    const double tiles = median(tiles_ms, rounds), openblas = median(openblas_ms, rounds);
    printf("matmuls of one step, median ms: sgemm_fixed_tiles %.1f, OpenBLAS threaded %.1f, ratio %.3f\n", tiles,
           openblas, tiles / openblas);
    for (int i = 0; i < 3; i++) free(buf[i]);
    free(tiles_ms);
    free(openblas_ms);
    return 0;
}
