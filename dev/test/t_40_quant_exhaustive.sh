#!/usr/bin/env bash
# llmc/quant.h equals NVIDIA's own conversions (cuda_fp8.h, cuda_bf16.h host code) for every one of
# the 2^32 fp32 inputs (fp32 -> E4M3, E5M2 with __NV_SATFINITE, and fp32 -> bf16 round-to-nearest)
# and for all 256 codes of each FP8 format. About 50 s on two cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=build/test/quant/fp8_exhaustive
[ -x "$bin" ] || { echo "missing $bin: run make test (it needs NVIDIA's cuda_fp8.h to build)" >&2; exit 1; }
"$bin"
