#!/usr/bin/env bash
# The index arithmetic of the attention and quantization kernels, checked on the host (no GPU):
# the dK/dV kernel's first query tile per key block and the transpose's shared-memory swizzle
# (dev/test/cuda_host/kernel_indexing.cu, built against the CPU emulator's CUDA: mk/emu.mk). Under
# a second.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=build/test/cuda_host/kernel_indexing
[ -x "$bin" ] || { echo "missing $bin: run make test (it needs the CUDA headers to build)" >&2; exit 1; }
"$bin"
