#!/usr/bin/env bash
# Kernel harnesses run their small cases on the CPU emulator of dev/emu (no GPU), each with
# --check-small:
#   - those of the kernels that write the gradients: dev/cuda/encoder.cu, layernorm.cu (dw and db
#     summed beside dx in one kernel, in colsum.cuh's chunks) and matmul.cu (the cuBLASLt calls of
#     llmc/matmul.cuh, against the emulator's cuBLASLt, and colsum.cuh's bias sums). Besides their
#     checks against CPU loops, each shows that a step's first
#     write, which overwrites (onto NaN), gives the bits of adding to zeros, and that adding twice
#     doubles the bits: the trainer writes its gradients so and no longer zeroes them. The cuBLASLt
#     half (that beta = 0 gives the bits of beta = 1 onto zeros on the hardware) needs the GPU: the
#     same harness there.
#   - those of the FP8 and int8 path: quant.cu (every kernel of llmc/quant.cuh byte for byte
#     against llmc/quant.h, all 2^16 bf16 inputs; a cast that computes its scale from an amax must
#     store it and its inverse) and matmul_lowp.cu (the int8 and FP8 GEMM chains against the CPU,
#     with the emulator's cuBLASLt); layernorm.cu's forward with FP8 codes, with and without an
#     amax (the codes kernel's own barrier), byte for byte as the cast of its output.
#   - that of the optimizer, optimizer.cu's small model: AdamW (llmc/adamw.cuh: moments, update
#     clipping's per-tensor RMS and count, weight decay of the decayed tensors only, fp32 master
#     weights) against the CPU optimizer, the stochastic rounding bit for bit against llmc/quant.h
#     with rng_bits(seed, t, i), also on one ZeRO rank's range (i the global index: the one-pass
#     kernel's draws by the range's offset had passed every test), and the global norm
#     (llmc/global_norm.cuh). test_gptcu compares only
#     the losses of its steps, which none of these bugs moves beyond its tolerance.
#   - gelu.cu (forward and backward on inputs in [-6, 6]) and classifier.cu (softmax and cross-
#     entropy with random logits in the padded columns too), small sizes: test_gptcu's tiny model
#     feeds the GELU small values and its padded logits are small, so a wrong constant in the
#     GELU's derivative or a padded column let into the softmax stays inside its tolerances.
# Each harness runs twice side by side, with the CTAs and threads in the emulator's default order and
# in reverse (LLMC_EMU_SCHEDULE, dev/emu/cuda_emu.h), and must print the same lines both times: a
# kernel whose result depends on the order of its CTAs (one reading what another writes in the
# same launch) prints other errors, or fails, in one of them. The harnesses are built with UBSan's
# alignment check (mk/emu.mk): a vector access that would fault on a GPU ends the run. About 15 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failed=0
declare -A min_checks=([encoder]=10 [layernorm]=85 [matmul]=12 [quant]=114 [matmul_lowp]=9 [optimizer]=78 [gelu]=11 [classifier]=3)  # the checks each runs today
for h in encoder layernorm matmul quant matmul_lowp optimizer gelu classifier; do
    bin=build/emu/$h
    [ -x "$bin" ] || { echo "missing $bin: run make test (it needs the CUDA headers to build)" >&2; exit 1; }
    for schedule in forward reverse; do
        (rc=0
         OMP_NUM_THREADS=1 LLMC_EMU_SCHEDULE=$schedule "$bin" --check-small >"$dir/$schedule.out" 2>&1 || rc=$?
         echo "$rc" >"$dir/$schedule.rc") &
    done
    wait
    rc=$(cat "$dir/forward.rc")
    [ "$(cat "$dir/reverse.rc")" = 0 ] || rc="$rc, reverse $(cat "$dir/reverse.rc")"
    same=1
    cmp -s "$dir/forward.out" "$dir/reverse.out" || same=0
    out=$(cat "$dir/forward.out")
    summary=$(tail -1 <<<"$out")
    # A passed check's line begins with "ok " (dev/cuda/check.h) or has " ok" after its name.
    passed=$(grep -cE '^ok | ok( |$)' <<<"$out" || true)
    # Exit 0, the harness's own summary of no failure, and at least min_checks passed (not cut short).
    if [ "$rc" = 0 ] && [ "$same" = 1 ] && { [ "$summary" = "$h: 0 check(s) failed" ] || [ "$summary" = "$h: all checks passed" ]; } &&
       [ "$passed" -ge "${min_checks[$h]}" ]; then
        echo "ok   emulated dev/cuda/$h --check-small: $passed checks passed, the same lines in reverse"
    else
        echo "FAIL emulated dev/cuda/$h --check-small (exit $rc, $passed checks passed, '$summary'$([ "$same" = 1 ] || echo ", other lines in reverse"))"
        grep -vE '^ok | ok( |$)' <<<"$out" | head -20
        [ "$same" = 1 ] || diff "$dir/forward.out" "$dir/reverse.out" | head -10
        failed=$((failed + 1))
    fi
done
echo "t_46: $failed failure(s)"
[ "$failed" = 0 ]
