#!/usr/bin/env bash
# The whole GPU trainer (train_gpt.cu and every kernel, cuBLASLt call and collective it makes)
# runs on the CPU emulator of dev/emu, without a GPU (mk/emu.mk builds it with g++):
#   1. test_gpt.cu against the CPU reference on its tiny model: logits, loss and every gradient
#      (also with the output head in chunks), 10 steps, determinism, resume, the fp8 and int8
#      layers and models, the FP8 scales and amax ring bit for bit against the CPU twin's, the GELU
#      epilogue levels in bf16 and fp8 (checks 1-6 and 8), with the default mma.sync
#      attention; then check 7, every recompute policy bit-identical to keeping everything, with
#      the wgmma attention. Run side by side (one core each), under AddressSanitizer and UBSan
#      (mk/emu.mk): a kernel's access past its cudaMalloc allocation, a misaligned access, and
#      device memory never freed are reported, as compute-sanitizer's memcheck and leak check would.
#   2. ZeRO in the GPU trainer over NCCL with 2 ranks (dev/emu/nccl.cc: NCCL's collectives over
#      MPI, one emulated GPU per process; a single H100 could never run this): stages 0-3 under
#      deferred stream orders, and stage 3 over staged MPI, bit-identical within stages 0-1 and
#      within 2-3 (which sum the micro-steps in another order), and close to one process running
#      both ranks' micro-steps (dev/test/zero/compare.py, as scripts/gpu_zero_check.sh judges it).
#   3. The CTA and thread order (LLMC_EMU_SCHEDULE, dev/emu/cuda_emu.h): the trainer in bf16 with
#      both GELU fusions, a mixed recompute list and the wgmma forward with the mma.sync backward
#      (--attention wgmma-fwd), in FP8 (GELU level 1) with the wgmma attention, and in int8 with
#      the output head in chunks gives the same bits with the CTAs of every launch, and the
#      threads of every CTA, run in reverse; so do the ZeRO runs of part 2, and part 1's tiny case
#      runs in reverse. A kernel whose result depends on the order of CTAs
#      (one reading what another writes in the same launch) gives other bits or fails its checks
#      there; on a GPU that is a race no sanitizer reports. --attention mma-rt2 (the backward with
#      2 row tiles per warp) gives mma's bits in the bf16 and FP8 configurations; --attention
#      mma-rdq, wgmma-rdq and wgmma-ws (dQ by integer reduction, bits of their own) the same bits
#      forward and in reverse, and the FP8 configuration runs with mma-rdq (which writes no codes
#      of dqkv) to a validation loss close to wgmma's.
#   4. The trainer's race build (dev/emu/race.h: ThreadSanitizer, each CUDA thread a fiber, the job
#      of compute-sanitizer's racecheck and more): two steps each in bf16 with both GELU fusions,
#      a mixed recompute list and --attention wgmma-fwd, in FP8 (delayed scaling, FP8 weight
#      gradients, GELU level 1) with the wgmma attention, and in int8 with the output head in chunks: every kernel the
#      trainer launches, no race reported (dev/test/t_44 shows the build reporting planted ones).
#   5. What only the GPU trainer refuses (model shapes its kernels cannot run, --attention wgmma's
#      head size, a micro-batch past 32-bit indices, a GELU epilogue with int8): one line and
#      status 2, or 1 for a checkpoint, before the GPU is touched; parameters or activations past
#      the (emulated, 80 GiB) device's memory: one line naming the buffer and the flags that
#      shrink it, status 1.
#   6. A resume given another --seed keeps the run's stochastic rounding; a sample through the
#      output head in chunks equals the one without.
# Parts 1 and 2 run with the emulator's streams deferred (LLMC_EMU_STREAM_ORDER, dev/emu/
# cuda_runtime.cc): work runs only when the host must see it, in an order that favours one stream,
# so a missing wait between the compute and comm streams, or a host read of a copy not yet
# synchronized, changes the bits; under CUDA's order it would be a race a GPU shows only at times.
# What the emulator cannot show (timing, the hardware's agreement with dev/emu/ptx_isa.h and with
# cuBLASLt's documentation, stream orders other than the two deferred ones, CTA and thread orders
# other than forward and reverse) still needs a GPU. About 140 s alone on 2 cores (2026-12-01).
set -euo pipefail
cd "$(dirname "$0")/../.."
for bin in build/emu/test_gptcu build/emu/train_gptcu build/emu/race/train_gptcu train_gpt; do
    [ -x "$bin" ] || { echo "missing $bin: run make test (it needs the CUDA headers to build)" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failed=0
check() {  # check <ok> <what>
    if [ "$1" = 1 ]; then echo "ok   $2"; else echo "FAIL $2"; failed=$((failed + 1)); fi
}

# 1. Each run must exit 0, end with "<case>: 0 check(s) failed" and have run at least the number
# of checks it runs today (so that a run cut short cannot pass). One runs under each deferred
# stream order (part 2), where a host that reads a result without synchronizing reads it unwritten,
# and tiny with the CTAs and threads in reverse (part 3).
declare -A min_checks=([tiny]=429 [tiny_recompute_wgmma]=34) stream_order=([tiny]=first [tiny_recompute_wgmma]=last)
declare -A test_schedule=([tiny]=reverse [tiny_recompute_wgmma]=forward)
for run in tiny tiny_recompute_wgmma; do
    OMP_NUM_THREADS=1 LLMC_EMU_STREAM_ORDER=${stream_order[$run]} LLMC_EMU_SCHEDULE=${test_schedule[$run]} \
        build/emu/test_gptcu ${run//_/ } >"$dir/$run.log" 2>&1 &
    echo $! >"$dir/$run.pid"
done
for run in tiny tiny_recompute_wgmma; do
    rc=0
    wait "$(cat "$dir/$run.pid")" || rc=$?
    passed=$(grep -c '^ok ' "$dir/$run.log" || true)
    summary=$(tail -1 "$dir/$run.log")
    [ "$rc" = 0 ] && [[ "$summary" == *": 0 check(s) failed" ]] && [ "$passed" -ge "${min_checks[$run]}" ] && ok=1 || ok=0
    check "$ok" "emulated test_gptcu ${run//_/ } (schedule ${test_schedule[$run]}): $passed checks passed, '$summary'"
    [ "$ok" = 1 ] || grep -E -A12 '^FAIL|error|ERROR' "$dir/$run.log" | head -30
done
# --fp8-fast-accum 2 reaches the FP8 weight gradient's GEMM: promoted, the emulator's sum is exact
# (check 6a's error / bound 0.000 on its fp32 output); under its model of fast accumulation it is
# not (dev/emu/cublaslt.cc).
worst() { awk -v m="$1" '$2 == m && $5 == "dweight" { print $NF }' "$dir/tiny.log" | sort -g | tail -1; }
promoted=$(worst fp8+wgrad) fast=$(worst fp8+wgrad+fast2)
check "$([ "$promoted" = 0.000 ] && [ -n "$fast" ] && [ "$fast" != 0.000 ] && echo 1 || echo 0)" \
    "emulated test_gptcu tiny: FP8 weight gradient's worst error / bound promoted $promoted, fast accumulation $fast"

# 2. ZeRO over emulated NCCL, 2 ranks (the tiny model of scripts/gpu_zero_check.sh, 6 steps of 2
# micro-steps per rank; the one process runs 4 micro-steps: the same data windows), with update
# clipping active so that its sums over the ranks matter. The runs defer the emulator's streams
# (LLMC_EMU_STREAM_ORDER, dev/emu/cuda_runtime.cc), where a missing wait between the streams, or a
# host read without a synchronization, changes the bits: every stage with the compute stream's
# work first (`first`: a compute-stream consumer that does not wait for a collective runs before
# it), stages 1 and 3 with the comm stream's first (`last`: a collective that does not wait for
# the gradient or weights it reads runs before they are written; the collectives wait alike at
# every stage), and stage 3 once more over MPI staged through host memory; the `last` runs with
# the CTAs and threads in reverse (part 3). Stages 0 and 1 reduce the step's gradient in the last
# micro-step's backward pass, (a1 + a2) + (b1 + b2) for ranks a and b; stages 2 and 3 each
# micro-step's, (a1 + b1) + (a2 + b2): the three runs of stages 0-1 must give the same bits, and so
# must the four of stages 2-3 (with 2 ranks every sum has one order), and each group be close to
# the one process. Without update clipping the optimizer is one kernel that returns without
# waiting for it (llmc/adamw.cuh): stage 1 with the comm stream first, whose all-gather of the
# updated weights must wait for it, close to one process without.

for i in 0 1; do /usr/bin/python3 dev/test/make_shard.py "$dir/train_00000$i.bin" 5000 512 $((70 + i)); done
/usr/bin/python3 dev/test/make_shard.py "$dir/val_000000.bin" 3000 512 72
args=(-e L2C128NH2 --vocab-size 512 --max-seq-len 64 -b 2 -t 32 -d 256 -x 6 -l 1e-3 -u 2 -c 0.1
      -i "$dir/train_*.bin" -j "$dir/val_*.bin" -v 3 -s 3 -g 6 -n 3)
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
for clip in 0.2 0; do
    rc=0
    name=one; [ "$clip" = 0 ] && name=one_noclip
    build/emu/train_gptcu "${args[@]}" --update-clip $clip -m 4 -o "$dir/$name" >"$dir/$name.out" 2>&1 || rc=$?
    check "$([ "$rc" = 0 ] && echo 1 || echo 0)" "emulated train_gptcu, one process, 6 steps, update clipping $clip"
done
zero_run() {  # zero_run <name> <stage> <stream order> <LLMC_GPU_COMM: nccl | mpi> [update clipping, 0.2]
    local clip=${5:-0.2}
    rc=0
    local shown_as=$4 schedule=forward
    [ "$4" = mpi ] && shown_as=mpi-staged
    [ "$3" = last ] && schedule=reverse
    # timeout: ranks that reached different collectives would wait for each other forever.
    LLMC_EMU_STREAM_ORDER=$3 LLMC_EMU_SCHEDULE=$schedule LLMC_GPU_COMM=$4 timeout -k 10 300 mpirun "${root[@]}" \
        --oversubscribe --bind-to none -np 2 -x LLMC_EMU_STREAM_ORDER -x LLMC_EMU_SCHEDULE -x LLMC_GPU_COMM \
        build/emu/train_gptcu "${args[@]}" --update-clip "$clip" -m 2 -z "$2" -o "$dir/$1" >"$dir/$1.out" 2>&1 ||
        rc=$?
    grep -q "^memory per rank (ZeRO stage $2, 2 rank(s), $shown_as)" "$dir/$1.out" && shown=1 || shown=0
    check "$([ "$rc" = 0 ] && [ "$shown" = 1 ] && echo 1 || echo 0)" \
        "emulated $shown_as, 2 ranks, ZeRO stage $2, stream order $3, schedule $schedule, update clipping $clip: ran"
    [ "$rc" = 0 ] || tail -5 "$dir/$1.out"
    return 0
}
for z in 0 1 2 3; do zero_run "z${z}_first" "$z" first nccl; done
for z in 1 3; do zero_run "z${z}_last" "$z" last nccl; done
zero_run z3_last_staged 3 last mpi
zero_run z1_last_noclip 1 last nccl 0
for pair in one:z1_first one:z3_last one_noclip:z1_last_noclip; do
    detail=$(/usr/bin/python3 dev/test/zero/compare.py --close "$dir/${pair%%:*}" "$dir/${pair#*:}" 3 6 2>&1 |
             tr "\n" " ") && close=1 || close=0
    check "$close" "emulated ZeRO ${pair#*:} close to one process (${pair%%:*}): $detail"
done
for group in "z1_first z0_first z1_last" "z3_first z2_first z3_last z3_last_staged"; do
    read -r -a runs <<<"$group"
    differ=()
    for run in "${runs[@]:1}"; do
        cmp -s "$dir/${runs[0]}/main.log" "$dir/$run/main.log" && cmp -s "$dir/${runs[0]}/model_00000006.bin" \
            "$dir/$run/model_00000006.bin" || differ+=("$run")
    done
    check "$([ ${#differ[@]} = 0 ] && echo 1 || echo 0)" "emulated ZeRO: ${runs[*]} bit-identical (main.log, \
model_00000006.bin)${differ[*]:+; differ from ${runs[0]}: ${differ[*]}}"
done
# z3_first resumed over its 2 ranks from step 3 (its step-6 checkpoint removed): each rank takes
# the training state from rank 0's state file and its slice of the moments and master weights
# from both ranks' files (gpu_load), and the resumed run ends with the straight run's step-6
# model and main.log.
cp -r "$dir/z3_first" "$dir/z3_resumed"
rm -f "$dir/z3_resumed/"*_00000006*
rc=0
LLMC_EMU_STREAM_ORDER=first LLMC_GPU_COMM=nccl timeout -k 10 300 mpirun "${root[@]}" --oversubscribe --bind-to none \
    -np 2 -x LLMC_EMU_STREAM_ORDER -x LLMC_GPU_COMM build/emu/train_gptcu "${args[@]}" --update-clip 0.2 -m 2 \
    -z 3 -y 1 -o "$dir/z3_resumed" >"$dir/z3_resumed.out" 2>&1 || rc=$?
cmp -s "$dir/z3_first/main.log" "$dir/z3_resumed/main.log" &&
    cmp -s "$dir/z3_first/model_00000006.bin" "$dir/z3_resumed/model_00000006.bin" && same=identical || same=differ
grep -q "^resumed from step 3 " "$dir/z3_resumed.out" && resumed=1 || resumed=0
check "$([ "$rc" = 0 ] && [ "$resumed" = 1 ] && [ "$same" = identical ] && echo 1 || echo 0)" \
    "emulated nccl, 2 ranks, ZeRO stage 3 resumed from step 3: exit $rc, main.log and step 6's model $same to z3_first's"
[ "$rc" = 0 ] || tail -3 "$dir/z3_resumed.out"

# 3. Each configuration of part 4's race build (below) forward and reverse, two runs at a time
# (about 3 s each): the same main.log and model bytes after 3 steps with validation and samples.
# T 64, so that the FP8 configuration's attention backward writes the qkv gradient's FP8 codes
# (whole 64-row tiles), as the LayerNorms and the GELU write theirs from the second step.
configs=("--matmul fp8 --amax-history 4 --fp8-wgrad 1 --fp8-fast-accum 2 --gelu-fusion 1 -r mlp --attention wgmma"
         "--matmul int8 -r norm --head-chunk 12"
         "--gelu-fusion 2 --recompute 0:block,1:attn+gelu --attention wgmma-fwd")
schedule_args=(-e L2C128NH2 --vocab-size 512 --max-seq-len 64 -b 2 -t 64 -x 3 -l 1e-3 -u 1 -i "$dir/train_*.bin"
               -j "$dir/val_*.bin" -v 3 -s 3 -g 6 -n 3 -m 2)
for i in "${!configs[@]}"; do
    for schedule in forward reverse; do
        # shellcheck disable=SC2086  # each config is a list of flags
        (rc=0
         OMP_NUM_THREADS=1 LLMC_EMU_SCHEDULE=$schedule build/emu/train_gptcu "${schedule_args[@]}" ${configs[$i]} \
             -o "$dir/s$i.$schedule" >"$dir/s$i.$schedule.out" 2>&1 || rc=$?
         echo "$rc" >"$dir/s$i.$schedule.rc") &
    done
    wait
    rcs="$(cat "$dir/s$i.forward.rc") $(cat "$dir/s$i.reverse.rc")"
    cmp -s "$dir/s$i.forward/main.log" "$dir/s$i.reverse/main.log" &&
        cmp -s "$dir/s$i.forward/model_00000003.bin" "$dir/s$i.reverse/model_00000003.bin" && same=identical ||
        same=differ
    check "$([ "$rcs" = "0 0" ] && [ "$same" = identical ] && echo 1 || echo 0)" \
        "emulated train_gptcu ${configs[$i]}: forward and reverse schedules exit $rcs, main.log and model $same"
done

# The FP8 configuration with FP8 weight gradients keeps a layer's linear inputs as their FP8 codes
# where its policy keeps them (all under none), and casts them again in the backward where it
# recomputes them (all under block): with none, block and a list that mixes both per layer, the
# same bits as with mlp above (recomputation gives the forward's bits; the codes are the same).
for policy in "-r none" "-r block" "--recompute 0:norm,1:attn+gelu"; do
    rc=0
    # shellcheck disable=SC2086  # a list of flags
    OMP_NUM_THREADS=1 build/emu/train_gptcu "${schedule_args[@]}" ${configs[0]/-r mlp/$policy} -o "$dir/codes" \
        >"$dir/codes.out" 2>&1 || rc=$?
    cmp -s "$dir/s0.forward/main.log" "$dir/codes/main.log" &&
        cmp -s "$dir/s0.forward/model_00000003.bin" "$dir/codes/model_00000003.bin" && same=identical || same=differ
    check "$([ "$rc" = 0 ] && [ "$same" = identical ] && echo 1 || echo 0)" \
        "emulated train_gptcu fp8 (FP8 weight gradients) $policy: exit $rc, main.log and model $same to -r mlp's"
    rm -rf "$dir/codes"
done

# --attention mma-rt2 (the mma.sync backward with 2 row tiles per warp) must give mma's bits: the
# FP8 configuration above (its attention backward writes the qkv gradient's FP8 codes) and the
# bf16 one, each with the mma.sync kernels instead of wgmma's, the two modes side by side.
for i in 0 2; do
    base=${configs[$i]/--attention wgmma-fwd/--attention mma}
    base=${base/--attention wgmma/--attention mma}
    for mode in mma mma-rt2; do
        # shellcheck disable=SC2086  # a list of flags
        (rc=0
         OMP_NUM_THREADS=1 build/emu/train_gptcu "${schedule_args[@]}" ${base/--attention mma/--attention $mode} \
             -o "$dir/rt.$mode" >"$dir/rt.$mode.out" 2>&1 || rc=$?
         echo "$rc" >"$dir/rt.$mode.rc") &
    done
    wait
    rcs="$(cat "$dir/rt.mma.rc") $(cat "$dir/rt.mma-rt2.rc")"
    cmp -s "$dir/rt.mma/main.log" "$dir/rt.mma-rt2/main.log" &&
        cmp -s "$dir/rt.mma/model_00000003.bin" "$dir/rt.mma-rt2/model_00000003.bin" && same=identical || same=differ
    check "$([ "$rcs" = "0 0" ] && [ "$same" = identical ] && echo 1 || echo 0)" \
        "emulated train_gptcu ${base/--attention mma/--attention mma-rt2}: exit $rcs, main.log and model $same to mma's"
    rm -rf "$dir/rt.mma" "$dir/rt.mma-rt2"
done

# --attention mma-rdq, wgmma-rdq and wgmma-ws (dQ by integer reduction in the dK/dV kernel) have dQ bits of
# their own, which must not depend on the order in which the CTAs add their shares: the bf16
# configuration with each gives the same bits with the CTAs and threads run in reverse, and its last
# validation loss is within 1e-3 of configuration 2's above (the same run with --attention
# wgmma-fwd: the wgmma forward and the default mma.sync backward).
last_val() { awk '$2 ~ /^tel:/ { v = substr($2, 5) } END { print v }' "$1"; }  # main.log: s:<step> tel:<loss>
for mode in mma-rdq wgmma-rdq wgmma-ws; do
    base=${configs[2]/--attention wgmma-fwd/--attention $mode}
    for schedule in forward reverse; do
        # shellcheck disable=SC2086  # a list of flags
        (rc=0
         OMP_NUM_THREADS=1 LLMC_EMU_SCHEDULE=$schedule build/emu/train_gptcu "${schedule_args[@]}" $base \
             -o "$dir/rdq.$schedule" >"$dir/rdq.$schedule.out" 2>&1 || rc=$?
         echo "$rc" >"$dir/rdq.$schedule.rc") &
    done
    wait
    rcs="$(cat "$dir/rdq.forward.rc") $(cat "$dir/rdq.reverse.rc")"
    cmp -s "$dir/rdq.forward/main.log" "$dir/rdq.reverse/main.log" &&
        cmp -s "$dir/rdq.forward/model_00000003.bin" "$dir/rdq.reverse/model_00000003.bin" && same=identical ||
        same=differ
    rdq_val=$(last_val "$dir/rdq.forward/main.log") mma_val=$(last_val "$dir/s2.forward/main.log")
    close=$(awk -v a="$rdq_val" -v b="$mma_val" 'BEGIN { d = a - b; print (a != "" && (d < 0 ? -d : d) <= 1e-3) ? 1 : 0 }')
    check "$([ "$rcs" = "0 0" ] && [ "$same" = identical ] && [ "$close" = 1 ] && echo 1 || echo 0)" \
        "emulated train_gptcu $base: exit $rcs, reverse schedule $same, last val loss $rdq_val (wgmma-fwd's $mma_val)"
    rm -rf "$dir/rdq.forward" "$dir/rdq.reverse"
done

# The FP8 configuration (FP8 weight gradients, T 64) with --attention mma-rdq, whose backward writes
# dqkv itself and refuses to write its FP8 codes: the trainer must not ask it for them. Exit 0, and
# the last validation loss within 1e-3 of the wgmma run's (dQ has bits of its own).
rc=0
# shellcheck disable=SC2086  # a list of flags
OMP_NUM_THREADS=1 build/emu/train_gptcu "${schedule_args[@]}" ${configs[0]/--attention wgmma/--attention mma-rdq} \
    -o "$dir/rdq_fp8" >"$dir/rdq_fp8.out" 2>&1 || rc=$?
rdq_val=$(last_val "$dir/rdq_fp8/main.log") wgmma_val=$(last_val "$dir/s0.forward/main.log")
close=$(awk -v a="$rdq_val" -v b="$wgmma_val" 'BEGIN { d = a - b; print (a != "" && (d < 0 ? -d : d) <= 1e-3) ? 1 : 0 }')
check "$([ "$rc" = 0 ] && [ "$close" = 1 ] && echo 1 || echo 0)" "emulated train_gptcu \
${configs[0]/--attention wgmma/--attention mma-rdq}: exit $rc, last val loss $rdq_val (wgmma's $wgmma_val)"
[ "$rc" = 0 ] || tail -3 "$dir/rdq_fp8.out"
rm -rf "$dir/rdq_fp8"

# 4. The race build, two runs at a time (one thread each: TSan cannot see OpenMP's own ordering),
# the longest first (about 14, 12 and 8 s), the third as soon as one of the first two ends.
race_args=(-e L2C128NH2 --vocab-size 512 --max-seq-len 64 -b 1 -t 32 -x 2 --bench)
for i in "${!configs[@]}"; do
    [ "$i" -lt 2 ] || wait -n || true  # a run's status is in its .rc file
    # (rc: under set -e a failing run would end the subshell before its status is written)
    # shellcheck disable=SC2086  # each config is a list of flags
    (rc=0
     OMP_NUM_THREADS=1 build/emu/race/train_gptcu "${race_args[@]}" ${configs[$i]} >"$dir/race$i.log" 2>&1 || rc=$?
     echo "$rc" >"$dir/race$i.rc") &
done
wait
for i in "${!configs[@]}"; do
    rc=$(cat "$dir/race$i.rc")
    grep -q '^bench_tokens_per_s ' "$dir/race$i.log" || rc="$rc, no result"
    races=$(grep -c 'WARNING: ThreadSanitizer' "$dir/race$i.log" || true)
    check "$([ "$rc" = 0 ] && [ "$races" = 0 ] && echo 1 || echo 0)" \
        "race build: train_gptcu ${configs[$i]}: exit $rc, $races race report(s)"
    [ "$races" = 0 ] || grep -E -A6 'WARNING: ThreadSanitizer' "$dir/race$i.log" | head -30
done

# 5. Refusals of the GPU trainer's own. LLMC_GPU_COMM=bad fails in comm_gpu_device, the trainer's
# first step on the GPU, with status 1: each refusal must come before it. A checkpoint of a shape
# the CPU trainer runs and the GPU trainer cannot comes from ./train_gpt.
refused() {  # refused <status> <pattern> <train_gptcu args...>
    local code=$1 pattern=$2 rc=0
    shift 2
    LLMC_GPU_COMM=${gpu_comm-bad} build/emu/train_gptcu "$@" >"$dir/refused.out" 2>"$dir/refused.err" || rc=$?
    [ "$rc" = "$code" ] && [ "$(wc -l <"$dir/refused.err")" = 1 ] && grep -qE -e "$pattern" "$dir/refused.err" &&
        ok=1 || ok=0
    check "$ok" "train_gptcu $*: exit $rc (want $code): $(head -1 "$dir/refused.err")"
}
small=(--vocab-size 512 --max-seq-len 16 -b 2 -t 8 -x 1 -v 0 -s 0 -i "$dir/train_*.bin")
refused 2 "-e \(--model\) 'L1C96NH1': C = 96 is not a multiple of 64" -e L1C96NH1 "${small[@]}"
refused 2 "-e \(--model\) 'L1C64NH2': head size C / NH = 32; train_gptcu's attention takes 64 or 128" \
    -e L1C64NH2 "${small[@]}"
refused 2 "--attention wgmma: head size C / NH = 128; its backward is written for 64 only" \
    -e L1C128NH1 --attention wgmma "${small[@]}"
refused 2 "--attention wgmma-rdq: head size C / NH = 128; its backward is written for 64 only" \
    -e L1C128NH1 --attention wgmma-rdq "${small[@]}"
refused 2 "--attention wgmma-ws: head size C / NH = 128; its backward is written for 64 only" \
    -e L1C128NH1 --attention wgmma-ws "${small[@]}"
refused 2 "-b \(--batch\) 524288 x -t \(--seq-len\) 16 = 8388608 rows: .* in 32 bits" -e L1C64NH1 "${small[@]}" \
    -b 524288 -t 16
refused 2 "-r \(--recompute-level\): 'bogus' is not a policy" -e L1C64NH1 "${small[@]}" -r bogus
refused 2 "--fp8-wgrad, --amax-history and --fp8-fast-accum apply to --matmul fp8 only" -e L1C64NH1 "${small[@]}" \
    --fp8-fast-accum 1
refused 2 "--gelu-fusion 1 needs bf16 or fp8 block matmuls: int8's GEMM ends in int32" -e L1C64NH1 "${small[@]}" \
    --matmul int8 --gelu-fusion 1
refused 2 "--fp8-wgrad 1 needs B\*T = 18 to be a multiple of 16" -e L1C64NH1 "${small[@]}" -t 9 --matmul fp8 \
    --fp8-wgrad 1
OMP_NUM_THREADS=1 ./train_gpt -e L1C32NH2 "${small[@]}" -o "$dir/c32" >/dev/null 2>&1
refused 1 "'.*/c32/model_00000001.bin' holds a model that train_gptcu cannot run: C = 32 is not a multiple of 64" \
    -e "$dir/c32/model_00000001.bin" "${small[@]}"
# Out of device memory (the emulator's device has 80 GiB): one line naming the buffer, its size and
# the flags that shrink it, status 1 (not cudaCheck's bare status). These runs reach the GPU
# (gpu_comm empty: the default communicator).
gpu_comm= refused 1 "out of device memory: the bf16 parameters need 98358.1 MiB, .* ZeRO stage 3 \(-z 3 under mpirun\)" \
    -e L1024C2048NH32 "${small[@]}"
gpu_comm= refused 1 "out of device memory: the activations need 102672.1 MiB, .* -r/--recompute/--mem-budget" \
    -e L12C1024NH16 "${small[@]}" --max-seq-len 1024 -b 256 -t 1024

# 6. Two decisions of the GPU trainer's host code: a resume given another --seed keeps the run's
# (the state file's), which seeds the stochastic rounding of the bf16 weights, so that step 4's
# model and state equal those of the run that went straight through; and a sample reads the last
# row of the output head's last chunk, so that its tokens (and the losses) with chunks of 4 rows
# equal those without chunks (test_gptcu's check 2b compares one such row's logits; this, the
# tokens the trainer prints).
p6=(-e L2C128NH2 --vocab-size 512 --max-seq-len 64 -b 2 -t 32 -x 4 -l 1e-3 -u 1 -i "$dir/train_*.bin" -v 0 -s 2 -g 12)
OMP_NUM_THREADS=1 build/emu/train_gptcu "${p6[@]}" -n 2 -o "$dir/seed_a" >"$dir/seed_a.out" 2>&1 || true
mkdir -p "$dir/seed_b" && { cp "$dir"/seed_a/*_00000002* "$dir/seed_b/" || true; }
OMP_NUM_THREADS=1 build/emu/train_gptcu "${p6[@]}" -n 2 --seed 7 -y 1 -o "$dir/seed_b" >"$dir/seed_b.out" 2>&1 || true
grep -q "note: the run started with --seed 1337, which it keeps; --seed 7 is not used" "$dir/seed_b.out" &&
    cmp -s "$dir/seed_a/model_00000004.bin" "$dir/seed_b/model_00000004.bin" &&
    cmp -s "$dir/seed_a/state_00000004_00000.bin" "$dir/seed_b/state_00000004_00000.bin" && ok=1 || ok=0
check "$ok" "emulated train_gptcu: a resume with --seed 7 keeps the run's 1337 (step 4's model and state bit-identical)"
OMP_NUM_THREADS=1 build/emu/train_gptcu "${p6[@]}" -n 0 --head-chunk 4 >"$dir/chunk4.out" 2>&1 || true
samples_losses() { awk '/^sample:/ {print} /^step / {print $5}' "$1"; }  # the samples and the step losses
[ "$(grep -c '^sample:' "$dir/chunk4.out")" = 2 ] && diff <(samples_losses "$dir/seed_a.out") \
    <(samples_losses "$dir/chunk4.out") >/dev/null && ok=1 || ok=0
check "$ok" "emulated train_gptcu: samples of 12 tokens and the losses with --head-chunk 4 equal those without chunks"

echo "$failed check(s) failed"
[ "$failed" = 0 ]
