#!/usr/bin/env bash
# The whole GPU trainer (train_gpt.cu and every kernel, cuBLASLt call and collective it makes)
# runs on the CPU emulator of dev/emu, without a GPU (mk/emu.mk builds it with g++):
#   1. test_gpt.cu against the CPU reference on its tiny model: logits, loss and every gradient
#      (also with the output head in chunks), 10 steps, determinism, resume, the fp8 and int8
#      layers and models, the GELU epilogue levels (checks 1-6 and 8), with the default mma.sync
#      attention; then check 7, every recompute policy bit-identical to keeping everything, with
#      the wgmma attention. Run side by side (one core each), under AddressSanitizer and UBSan
#      (mk/emu.mk): a kernel's access past its cudaMalloc allocation, a misaligned access, and
#      device memory never freed are reported, as compute-sanitizer's memcheck and leak check would.
#   2. ZeRO in the GPU trainer over NCCL with 2 ranks (dev/emu/nccl.cc: NCCL's collectives over
#      MPI, one emulated GPU per process; a single H100 could never run this): stages 1 and 3
#      close to one process running both ranks' micro-steps (dev/test/zero/compare.py, as
#      scripts/gpu_zero_check.sh judges it), and stage 3 bit-identical to stage 1.
# What the emulator cannot show (timing, the hardware's agreement with dev/emu/ptx_isa.h and with
# cuBLASLt's documentation, races of plain loads and stores, stream ordering) still needs a GPU.
# About 95 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
for bin in build/emu/test_gptcu build/emu/train_gptcu; do
    [ -x "$bin" ] || { echo "missing $bin: run make test (it needs the CUDA headers to build)" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failed=0
check() {  # check <ok> <what>
    if [ "$1" = 1 ]; then echo "ok   $2"; else echo "FAIL $2"; failed=$((failed + 1)); fi
}

# 1. Each run must exit 0, end with "<case>: 0 check(s) failed" and have run at least the number
# of checks it runs today (so that a run cut short cannot pass). The trainer keeps its comm stream
# until the process ends (train_gpt.cu, gpu_model_free): that one leak is expected.
echo "leak:cudaStreamCreateWithFlags" >"$dir/lsan.supp"
declare -A min_checks=([tiny]=285 [tiny_recompute_wgmma]=26)
for run in tiny tiny_recompute_wgmma; do
    OMP_NUM_THREADS=1 LSAN_OPTIONS="suppressions=$dir/lsan.supp" build/emu/test_gptcu ${run//_/ } >"$dir/$run.log" 2>&1 &
    echo $! >"$dir/$run.pid"
done
for run in tiny tiny_recompute_wgmma; do
    rc=0
    wait "$(cat "$dir/$run.pid")" || rc=$?
    passed=$(grep -c '^ok ' "$dir/$run.log" || true)
    summary=$(tail -1 "$dir/$run.log")
    [ "$rc" = 0 ] && [[ "$summary" == *": 0 check(s) failed" ]] && [ "$passed" -ge "${min_checks[$run]}" ] && ok=1 || ok=0
    check "$ok" "emulated test_gptcu ${run//_/ }: $passed checks passed, '$summary'"
    [ "$ok" = 1 ] || grep -E -A12 '^FAIL|error|ERROR' "$dir/$run.log" | head -30
done

# 2. ZeRO over emulated NCCL, 2 ranks (the tiny model of scripts/gpu_zero_check.sh, 6 steps of 2
# micro-steps per rank; the one process runs 4 micro-steps: the same data windows).
for i in 0 1; do /usr/bin/python3 dev/test/make_shard.py "$dir/train_00000$i.bin" 5000 512 $((70 + i)); done
/usr/bin/python3 dev/test/make_shard.py "$dir/val_000000.bin" 3000 512 72
args=(-e L2C128NH2 --vocab-size 512 --max-seq-len 64 -b 2 -t 32 -x 6 -l 1e-3 -u 2 -c 0.1
      -i "$dir/train_*.bin" -j "$dir/val_*.bin" -v 3 -s 3 -g 6 -n 3)
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
rc=0
build/emu/train_gptcu "${args[@]}" -d 128 -m 4 -o "$dir/one" >"$dir/one.out" 2>&1 || rc=$?
check "$([ "$rc" = 0 ] && echo 1 || echo 0)" "emulated train_gptcu, one process, 6 steps"
for z in 1 3; do
    rc=0
    mpirun "${root[@]}" --oversubscribe --bind-to none -np 2 build/emu/train_gptcu "${args[@]}" -d 128 -m 2 -z $z \
        -o "$dir/np2_z$z" >"$dir/np2_z$z.out" 2>&1 || rc=$?
    grep -q "^memory per rank (ZeRO stage $z, 2 rank(s), nccl)" "$dir/np2_z$z.out" && shown=1 || shown=0
    detail=$(/usr/bin/python3 dev/test/zero/compare.py --close "$dir/one" "$dir/np2_z$z" 3 6 2>&1 | tr "\n" " ") &&
        close=1 || close=0
    check "$([ "$rc" = 0 ] && [ "$shown" = 1 ] && [ "$close" = 1 ] && echo 1 || echo 0)" \
        "emulated NCCL, 2 ranks, ZeRO stage $z close to one process: $detail"
    [ "$rc" = 0 ] || tail -5 "$dir/np2_z$z.out"
done
same() { cmp -s "$dir/np2_z1/$1" "$dir/np2_z3/$1"; }
same main.log && same model_00000006.bin && ok=1 || ok=0
check "$ok" "emulated NCCL, 2 ranks: stage 3 bit-identical to stage 1 (main.log, model_00000006.bin)"
echo "$failed check(s) failed"
[ "$failed" = 0 ]
