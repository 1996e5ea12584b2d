#!/usr/bin/env bash
# The index arithmetic of the attention and quantization kernels, checked on the host (no GPU):
# the dK/dV kernel's first query tile per key block and the transpose's shared-memory swizzle
# (dev/test/cuda_host/kernel_indexing.cu). Built by nvcc; a second or two.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=build/test/cuda_host/kernel_indexing
[ -x "$bin" ] || { echo "missing $bin: run make test (it needs nvcc to build)" >&2; exit 1; }
"$bin"
