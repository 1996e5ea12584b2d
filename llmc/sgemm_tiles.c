// See sgemm_tiles.h.
#include "sgemm_tiles.h"

#include <cblas.h>

// A side of parts equal tiles over extent, rounded up to a multiple of 16.
static int tile_side(int extent, int parts) { return ((extent + parts - 1) / parts + 15) / 16 * 16; }

void sgemm_fixed_tiles(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc) {
    int parts_m = 1, parts_n = 1;
    while (tile_side(M, parts_m) > 512) parts_m *= 2;
    while (tile_side(N, parts_n) > 512) parts_n *= 2;
    while (parts_m * parts_n < 8) {
        const int side_m = tile_side(M, parts_m), side_n = tile_side(N, parts_n);
        if (side_m < 32 && side_n < 32) break;
        if (side_m >= side_n) parts_m *= 2;
        else parts_n *= 2;
    }
    const int size_m = tile_side(M, parts_m), size_n = tile_side(N, parts_n);
    const int tiles_m = (M + size_m - 1) / size_m, tiles_n = (N + size_n - 1) / size_n;  // rounding may empty parts
    #pragma omp parallel for schedule(dynamic)
    for (int tile = 0; tile < tiles_m * tiles_n; tile++) {
        const int i0 = tile / tiles_n * size_m, j0 = tile % tiles_n * size_n;
        const int m = M - i0 < size_m ? M - i0 : size_m, n = N - j0 < size_n ? N - j0 : size_n;
        const float *a = trans_a ? A + i0 : A + (size_t)i0 * lda;  // rows i0.. of op(A)
        const float *b = trans_b ? B + (size_t)j0 * ldb : B + j0;  // columns j0.. of op(B)
        cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, K,
                    1.0f, a, lda, b, ldb, beta, C + (size_t)i0 * ldc + j0, ldc);
    }
}
