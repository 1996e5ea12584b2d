#!/usr/bin/env bash
# Builds the GPU programs here (sm_90, which mk/gpu.mk builds as sm_90a) and bundles them with the
# shared libraries the GPU machine lacks (json-c, pcre2, OpenMP OpenBLAS, Open MPI's libraries)
# into gpu_carry/ (ignored by git, under the device tool's 64 MiB limit with the repository), for
# scripts/gpu_run_bundle.sh on a machine that cannot build. NCCL comes from the GPU machine's CUDA
# toolkit (like cuBLAS: paths with "cuda" are not copied). Open MPI's launcher (mpirun, orted, its
# plugins and help files) is not carried, so the 2- and 3-rank ZeRO checks need mpirun installed
# there.
set -euo pipefail
cd "$(dirname "$0")/.."
# The C objects under build/bundle for x86-64-v3, not this CPU: built with -march=native on an
# AVX-512 machine they hold AVX-512 instructions, which a GPU machine's CPU without them stops at
# (SIGILL) in the first call. train_gptcu and test_gptcu go there too, not to the repository's root.
build=build/bundle
programs=($build/{train_gptcu,test_gptcu} $build/cuda/{quant,matmul_lowp}
          $build/dev/cuda/{attention,classifier,encoder,gelu,layernorm,matmul,optimizer})
make -j2 NVCC_ARCH=sm_90 HOST_ARCH=x86-64-v3 BUILD=$build GPU_BIN=$build "${programs[@]}"
# No AVX-512 (EVEX: zmm, the registers above 15, mask registers) in any of them. The bundles built
# with -march=native had them: train_gptcu 1231 such instructions, test_gptcu 2128 (an AVX-512 Xeon).
# (A failed objdump stops the script: its empty output would count 0.)
for p in "${programs[@]}"; do
    code=$(objdump -d --no-show-raw-insn "$p")
    n=$(grep -c -E '%zmm|%[xy]mm(1[6-9]|2[0-9]|3[01])\b|\{%k[1-7]\}' <<< "$code" || true)
    [ "$n" = 0 ] || { echo "gpu_bundle.sh: $p has $n AVX-512 instructions" >&2; exit 1; }
done
rm -rf gpu_carry && mkdir -p gpu_carry/bin gpu_carry/lib
git describe --always --dirty --abbrev=7 > gpu_carry/commit.txt  # into device.txt with every result
cp "${programs[@]}" gpu_carry/bin/
for b in gpu_carry/bin/*; do ldd "$b" | awk '/=>/ {print $3}'; done | sort -u |
    grep -v -E 'libc\.so|libm\.so|libstdc|libgcc_s|libdl|libpthread|librt|cuda|ld-linux|libcublas' |
    while read -r lib; do cp -L "$lib" gpu_carry/lib/; done
strip --strip-debug gpu_carry/bin/* gpu_carry/lib/*
# Programs and libraries travel xz-compressed (OpenBLAS alone is 36 MB; the whole goes from about
# 60 MiB to a fraction of it); gpu_run_bundle.sh unpacks them on the GPU machine.
tar -cf - -C gpu_carry bin lib | xz -T2 -6 > gpu_carry/programs.tar.xz
rm -rf gpu_carry/bin gpu_carry/lib
# Token shards for scripts/gpu_zero_check.sh, made here (the GPU machine has numpy too; this costs no device time).
mkdir -p gpu_carry/zero_data
for i in 0 1; do /usr/bin/python3 dev/test/make_shard.py gpu_carry/zero_data/train_00000$i.bin 5000 512 $((70 + i)); done
/usr/bin/python3 dev/test/make_shard.py gpu_carry/zero_data/val_000000.bin 3000 512 72
# The nlp-corpus token shards for the loss curves (scripts/gpu_run_bundle.sh curves), xz-compressed:
# 4.1 MB of tokens in 2.4 MB keep the carried tree (bundle + repository) under the tool's 64 MiB.
[ -f data/nlpcorpus/nlpcorpus_val_000000.bin ] || bash dev/data/nlpcorpus.sh
tar -cJf gpu_carry/nlpcorpus.tar.xz -C data nlpcorpus/nlpcorpus_train_000000.bin nlpcorpus/nlpcorpus_train_000001.bin \
    nlpcorpus/nlpcorpus_train_000002.bin nlpcorpus/nlpcorpus_train_000003.bin nlpcorpus/nlpcorpus_val_000000.bin
du -sh gpu_carry
total=$(( $(du -sb gpu_carry | cut -f1) + $(git ls-files -z | xargs -0 du -cb | tail -n 1 | cut -f1) ))
echo "bundle + tracked files: $(( total >> 20 )) MiB of the device tool's 64 MiB"
(( total < 64 << 20 )) || { echo "gpu_bundle.sh: the carried tree would exceed 64 MiB" >&2; exit 1; }
