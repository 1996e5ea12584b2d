#!/usr/bin/env bash
# The harnesses of the kernels that write the gradients run their small cases on the CPU emulator
# of dev/emu (no GPU): dev/cuda/encoder.cu, layernorm.cu (the column sums of colsum.cuh) and
# matmul.cu (the cuBLASLt calls of llmc/matmul.cuh, against the emulator's cuBLASLt), each with
# --check-small. Besides their checks against CPU loops, each shows that a step's first write,
# which overwrites (onto NaN), gives the bits of adding to zeros, and that adding twice doubles
# the bits: the trainer writes its gradients so and no longer zeroes them. The cuBLASLt half (that
# beta = 0 gives the bits of beta = 1 onto zeros on the hardware) needs the GPU: the same harness
# there. About 10 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
failed=0
declare -A min_checks=([encoder]=10 [layernorm]=18 [matmul]=12)  # the checks each runs today
for h in encoder layernorm matmul; do
    bin=build/emu/$h
    [ -x "$bin" ] || { echo "missing $bin: run make test (it needs the CUDA headers to build)" >&2; exit 1; }
    rc=0
    out=$(OMP_NUM_THREADS=2 "$bin" --check-small 2>&1) || rc=$?
    summary=$(tail -1 <<<"$out")
    passed=$(grep -c '^ok ' <<<"$out" || true)
    # Exit 0, the harness's own "0 check(s) failed", and at least min_checks passed (not cut short).
    if [ "$rc" = 0 ] && [ "$summary" = "$h: 0 check(s) failed" ] && [ "$passed" -ge "${min_checks[$h]}" ]; then
        echo "ok   emulated dev/cuda/$h --check-small: $passed checks passed"
    else
        echo "FAIL emulated dev/cuda/$h --check-small (exit $rc, $passed checks passed, '$summary')"
        grep -v '^ok ' <<<"$out" | head -20
        failed=$((failed + 1))
    fi
done
echo "t_46: $failed failure(s)"
[ "$failed" = 0 ]
