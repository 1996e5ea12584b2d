// Single-precision matmuls on the CPU whose bits do not depend on the thread count.
#ifndef LLMC_SGEMM_TILES_H
#define LLMC_SGEMM_TILES_H

// C (M, N) = op(A) op(B) + beta C, row-major, op(X) = X or X^T, with bits that do not depend on the
// thread count. A threaded OpenBLAS sgemm splits C among its threads at boundaries that follow
// their number, and its edge kernels sum in another order than its main one, so its bits follow
// the thread count (seen on an AVX-512 machine: 3 threads gave other bits than 1, 2 and 4). Here C
// is cut into tiles fixed by the shape alone, each one single-threaded sgemm over the whole of K
// (OpenBLAS's OpenMP build runs single-threaded inside a parallel region).
// The tiles: rows and columns are each cut into a power of two of equal parts, a multiple of 16
// (aligned rows for the kernels), so that 2, 4, 8... threads get equal shares. Each tile packs its
// own m x K panel of A and K x n panel of B, a cost per multiply-add of about 1/m + 1/n that
// OpenBLAS's threading shares between its threads; hence tiles as large as possible: sides of at
// most 512, halving the longer side until there are at least 8 tiles (or both sides are under 32),
// which keeps 8 threads busy on the smallest matmuls. make bench-tiles times this beside OpenBLAS's
// own threading (README, "CPU speed").
void sgemm_fixed_tiles(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc);

#endif
