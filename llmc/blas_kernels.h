// OpenBLAS's choice of kernels. OpenBLAS picks them once, when it is loaded, from the CPU's model
// number; a release older than the CPU (Debian 12's 0.3.21 on a newer Xeon, "Intel(R) Xeon(R)
// Processor" under a hypervisor) falls back to its Prescott (SSE3) kernels, which made this
// project's CPU matmuls 3-4x slower than the CPU's AVX-512 allows.
#ifndef LLMC_BLAS_KERNELS_H
#define LLMC_BLAS_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

// First thing in main: where OpenBLAS fell back to Prescott on a CPU with AVX-512 (F, BW, VL and
// DQ) or with AVX2 and FMA, runs the program again (execv of the file /proc/self/exe names: the
// same process id, arguments and environment, before MPI starts) with OPENBLAS_CORETYPE=SKYLAKEX
// or HASWELL, which OpenBLAS reads at load time. An OPENBLAS_CORETYPE already set (the user's, or
// after the re-run) is left as it is. Where the re-run fails, the program goes on with the slow
// kernels.
void blas_kernels_fix(char **argv);

// For the startup line: "OpenBLAS SkylakeX kernels", with " (OPENBLAS_CORETYPE=...)" when set.
const char *blas_kernels_description(void);

#ifdef __cplusplus
}
#endif
#endif
