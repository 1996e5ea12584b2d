#include "blas_kernels.h"

#include <cblas.h>
// Another BLAS's cblas.h (netlib's, from libblas-dev) found first would declare none of OpenBLAS's
// own functions used below.
#ifndef OPENBLAS_VERSION
#error "cblas.h is not OpenBLAS's: install libopenblas-dev (make deps)"
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The best OpenBLAS kernels this CPU runs, or NULL (libgcc checks the CPUID bits and that the
// operating system saves the registers).
static const char *cpu_coretype(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return "SKYLAKEX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "HASWELL";
    return NULL;
}

void blas_kernels_fix(char **argv) {
    if (getenv("OPENBLAS_CORETYPE") || strcmp(openblas_get_corename(), "Prescott") != 0) return;
    const char *coretype = cpu_coretype();
    // The program's own file by name, not /proc/self/exe: the process is named after the file
    // executed, and ps, pgrep and the tests look for train_gpt, not exe.
    char path[4096];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (!coretype || n <= 0 || n >= (ssize_t)sizeof path - 1) return;
    path[n] = '\0';
    if (setenv("OPENBLAS_CORETYPE", coretype, 1) != 0) return;
    fflush(NULL);
    execv(path, argv);
    unsetenv("OPENBLAS_CORETYPE");  // execv failed (the file was replaced): going on with Prescott
}

const char *blas_kernels_description(void) {
    static char text[128];
    const char *set = getenv("OPENBLAS_CORETYPE");
    if (set) snprintf(text, sizeof text, "OpenBLAS %s kernels (OPENBLAS_CORETYPE=%s)", openblas_get_corename(), set);
    else snprintf(text, sizeof text, "OpenBLAS %s kernels", openblas_get_corename());
    return text;
}
