#!/usr/bin/env bash
# Unit tests of the quantizers (scales, amax, int8 row-wise and tensor-wise, FP8 fake quantization,
# the CPU emulation entry point, bf16 stochastic rounding), optimized and under ASan/UBSan. < 1 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
for bin in build/test/quant/test_quant build/san/test/quant/test_quant; do
    [ -x "$bin" ] || { echo "missing $bin: run make test" >&2; exit 1; }
    echo "== $bin"
    "$bin"
done
