#!/usr/bin/env bash
# Builds the GPU programs here (sm_90) and bundles them with the shared libraries the GPU machine
# lacks (json-c, pcre2, OpenMP OpenBLAS, Open MPI) into gpu_carry/ (ignored by git, under the
# device tool's 64 MiB carry limit), for scripts/gpu_run_bundle.sh on a machine that cannot build.
set -euo pipefail
cd "$(dirname "$0")/.."
make -j2 cuda NVCC_ARCH=sm_90
rm -rf gpu_carry && mkdir -p gpu_carry/bin gpu_carry/lib
cp train_gptcu test_gptcu build/dev/cuda/{attention,classifier,encoder,gelu,layernorm,matmul,optimizer} \
   build/cuda/{quant,matmul_lowp} gpu_carry/bin/
for b in gpu_carry/bin/*; do ldd "$b" | awk '/=>/ {print $3}'; done | sort -u |
    grep -v -E 'libc\.so|libm\.so|libstdc|libgcc_s|libdl|libpthread|librt|cuda|ld-linux|libcublas' |
    while read -r lib; do cp -L "$lib" gpu_carry/lib/; done
strip --strip-debug gpu_carry/bin/* gpu_carry/lib/*
du -sh gpu_carry
