#!/usr/bin/env bash
# ZeRO on the GPU (train_gptcu -z 0..3), for a GPU session: about 0.5 minutes on an H100 (27 checks,
# 2026-11-23; 33 now).
#   usage: scripts/gpu_zero_check.sh BIN_DIR DATA_DIR OUT_DIR
# DATA_DIR holds train_00000{0,1}.bin and val_000000.bin (scripts/gpu_bundle.sh makes them with
# dev/test/make_shard.py: vocabulary 512). Prints one PASS/FAIL line per check; exits 1 on a FAIL.
# PYTHON: a python3 with numpy (default python3; dev/test/zero/compare.py judges the "close" runs).
#
# What must hold, and why (tiny model L2C128NH2: HS 64 as llmc/attention.cuh needs; 6 steps):
# - NCCL as one rank (LLMC_GPU_COMM=nccl, no mpirun): every collective of one rank is the identity,
#   so stages 0 and 1 do the one process's arithmetic (main.log, model and samples identical);
#   stages 2 and 3 add each micro-step's reduced segment gradient to the slice (2 micro-steps
#   here: another order of fp32 adds, as t_50_zero_equal.sh says), so they are identical to each
#   other and close to the one process (below). This runs the path through NCCL's calls and the
#   comm stream's events.
# - LLMC_GPU_COMM=mpi: 2 ranks share the one GPU through MPI staged in host memory, whose sums
#   have a fixed owner order (llmc/comm.h). One process running 2 micro-steps sees the same data
#   windows; step 1 is identical up to the order of the gradient sums (fp32 rounding), later steps
#   also by the bf16 weights such a difference flips under stochastic rounding (one bf16 ulp on a
#   few weights). "Close": every training loss and gradient norm within 1e-2 relative (the bf16
#   tolerance of DESIGN.md, 8), and the step-6 weights' mean absolute difference at most 5% of
#   how far the one process's weights moved over steps 4-6. On these random tokens the loss stays
#   near ln 512 = 6.24 whatever the weights (a run with lr 0 is within 6e-3 of it), so the loss
#   alone cannot fail; the norm measures the reduced gradient and the weights the updates.
# - Stages 1, 2 and 3 do the same arithmetic on the same bits at one micro-step per step (same
#   reductions, same update-clipping sums, scratch placed at the whole buffer's alignment so
#   cuBLASLt chooses the same kernels): main.log, the final model file and the samples (ZeRO-3
#   samples through gathered weights, one sequence of B=1) identical.
# - Resume at the same world size from the step-3 checkpoint: identical main.log, model, samples;
#   one process resuming the 2-rank checkpoint (re-sliced state) close to the 2-rank run.
# - 3 ranks (the slices need padding) against one process running 3 micro-steps: close, and
#   stages 1, 2 and 3 identical.
# - The output head in chunks (--head-chunk 24): the same, at 2 ranks and stages 1-3.
# - Stages 2 and 3 with LLMC_ZERO_DEBUG_DELAY_US (delays and NaN poison that only a missing
#   stream wait lets through) identical to the same runs without it.
set -u
bin=$1 data=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
failed=0
report() {  # report NAME OK(0/1) DETAIL
    if [ "$2" = 0 ]; then echo "PASS zero: $1 $3"; else echo "FAIL zero: $1 $3"; failed=1; fi
}
mpirun_cmd=$(command -v mpirun || true)
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
model=(-e L2C128NH2 --vocab-size 512 --max-seq-len 64 -b 2 -t 32)
args=("${model[@]}" -x 6 -l 1e-3 -u 2 -c 0.1 -i "$data/train_*.bin" -j "$data/val_*.bin" -v 3 -s 3 -g 6 -n 3)
# A run is its output directory DIR and its standard output DIR.out.
close() { "${PYTHON:-python3}" "$(dirname "$0")/../dev/test/zero/compare.py" --close "$1" "$2" 3 6; }  # close REF RUN: see the header
samples() { grep '^sample:' "$1.out"; }
same() {  # same RUN_A RUN_B: identical main.log, step-6 model and samples (2 of them)
    cmp -s "$1/main.log" "$2/main.log" && cmp -s "$1/model_00000006.bin" "$2/model_00000006.bin" &&
        [ "$(samples "$1" | wc -l)" = 2 ] && cmp -s <(samples "$1") <(samples "$2")
}

"$bin/train_gptcu" "${args[@]}" -d 128 -m 4 -o "$out/one" > "$out/one.out" 2>&1
report "one process runs" $? "(see $out/one.out)"

for z in 0 1 2 3; do
    LLMC_GPU_COMM=nccl "$bin/train_gptcu" "${args[@]}" -d 128 -m 4 -z $z -o "$out/nccl1_z$z" > "$out/nccl1_z$z.out" 2>&1
    report "nccl 1 rank stage $z runs" $? "(see $out/nccl1_z$z.out)"
done
for z in 0 1; do
    same "$out/one" "$out/nccl1_z$z"
    report "nccl 1 rank stage $z identical to one process" $? "(main.log, model_00000006.bin, samples)"
done
detail=$(close "$out/one" "$out/nccl1_z2")
report "nccl 1 rank stage 2 vs one process" $? "$detail"
same "$out/nccl1_z2" "$out/nccl1_z3"
report "nccl 1 rank stage 3 identical to stage 2" $? "(main.log, model_00000006.bin, samples)"
# Stream ordering made visible: LLMC_ZERO_DEBUG_DELAY_US delays every collective on the comm stream
# and the compute stream after it takes each gradient scratch, and fills reduced scratches and
# gather buffers with NaN (train_gpt.cu, zero_debug_delay). Correct events absorb it: the same
# bits (and a gradient that added to a scratch instead of overwriting it would be NaN).
for z in 2 3; do
    LLMC_ZERO_DEBUG_DELAY_US=300 LLMC_GPU_COMM=nccl "$bin/train_gptcu" "${args[@]}" -d 128 -m 4 -z $z \
        -o "$out/nccl1_z${z}_delayed" > "$out/nccl1_z${z}_delayed.out" 2>&1
    rc=$?
    same "$out/nccl1_z$z" "$out/nccl1_z${z}_delayed"
    report "nccl 1 rank stage $z with LLMC_ZERO_DEBUG_DELAY_US=300 identical" $((rc != 0 || $? != 0)) \
        "(main.log, model_00000006.bin, samples; see $out/nccl1_z${z}_delayed.out)"
done

if [ -z "$mpirun_cmd" ]; then
    echo "FAIL zero: mpirun not found on this machine: the 2- and 3-rank checks did not run (install Open MPI, or carry it)"
    exit 1
fi
mpi() { local np=$1; shift; LLMC_GPU_COMM=mpi "$mpirun_cmd" "${root[@]}" --oversubscribe --bind-to none -np "$np" "$@"; }
# ranks_vs_one NP TOTAL_BATCH REF STAGES...: NP staged-MPI ranks (one micro-step each) at each stage
# against the one-process run REF, then stages 2 and 3 (when run) bit-identical to stage 1.
ranks_vs_one() {
    local np=$1 total=$2 ref=$3 z rc shown detail; shift 3
    for z in "$@"; do
        mpi "$np" "$bin/train_gptcu" "${args[@]}" -d "$total" -m 2 -z "$z" -o "$out/np${np}_z$z" > "$out/np${np}_z$z.out" 2>&1
        rc=$?
        grep -q "^zero: stage $z ranks $np " "$out/np${np}_z$z.out"; shown=$?
        detail=$(close "$ref" "$out/np${np}_z$z")
        report "mpi-staged $np ranks stage $z vs one process" $((rc != 0 || shown != 0 || $? != 0)) "$detail"
    done
    for z in 2 3; do
        same "$out/np${np}_z1" "$out/np${np}_z$z"
        report "stage $z identical to stage 1 ($np ranks)" $? "(main.log, model_00000006.bin, samples)"
    done
}
ranks_vs_one 2 128 "$out/one" 0 1 2 3
LLMC_ZERO_DEBUG_DELAY_US=300 mpi 2 "$bin/train_gptcu" "${args[@]}" -d 128 -m 2 -z 3 -o "$out/np2_z3_delayed" \
    > "$out/np2_z3_delayed.out" 2>&1
rc=$?
same "$out/np2_z3" "$out/np2_z3_delayed"
report "mpi-staged 2 ranks stage 3 with LLMC_ZERO_DEBUG_DELAY_US=300 identical" $((rc != 0 || $? != 0)) \
    "(main.log, model_00000006.bin, samples)"
for z in 1 3; do
    r="$out/resume_z$z" && mkdir -p "$r"
    # the step-3 checkpoint and the log (a resume rewrites main.log up to its step)
    cp "$out/np2_z$z"/{model_00000003.bin,state_00000003_00000.bin,state_00000003_00001.bin,DONE_00000003,main.log} "$r/"
    mpi 2 "$bin/train_gptcu" "${args[@]}" -d 128 -m 2 -z $z -o "$r" -y 1 > "$r.out" 2>&1
    rc=$?
    same "$out/np2_z$z" "$r"
    report "stage $z resume at step 3 bit-exact (2 ranks)" $((rc != 0 || $? != 0)) "(main.log, model_00000006.bin, samples)"
done
# Re-slicing: one process (2 micro-steps, the same data windows) resumes the 2-rank stage-3
# checkpoint, reading the moments and master weights of [0, N) from both ranks' state files.
r="$out/reslice_np1"
mkdir -p "$r" && cp "$out/np2_z3"/{model_00000003.bin,state_00000003_00000.bin,state_00000003_00001.bin,DONE_00000003,main.log} "$r/"
"$bin/train_gptcu" "${args[@]}" -d 128 -m 4 -z 3 -o "$r" -y 1 > "$r.out" 2>&1
rc=$?
grep -q "resumed from step 3" "$r.out"; resumed=$?
detail=$(close "$out/np2_z3" "$r")
report "one process resumes the 2-rank stage 3 checkpoint" $((rc != 0 || resumed != 0 || $? != 0)) "$detail"

# The output head in chunks of 24 of each micro-step's 64 rows (the last one short; llmc/trainer.h):
# one process close to its one-chunk run (the head's d wte sums its rows per chunk), 2 ranks at
# stages 1-3 close to it, and stages 2 and 3 (the embeddings' gradient in its own scratch from the
# forward pass's head to the encoder) identical to stage 1.
chunk=(--head-chunk 24)
"$bin/train_gptcu" "${args[@]}" "${chunk[@]}" -d 128 -m 4 -o "$out/one_chunk" > "$out/one_chunk.out" 2>&1
rc=$?
detail=$(close "$out/one" "$out/one_chunk")
report "one process, head in chunks of 24 rows, vs one chunk" $((rc != 0 || $? != 0)) "$detail"
for z in 1 2 3; do
    mpi 2 "$bin/train_gptcu" "${args[@]}" "${chunk[@]}" -d 128 -m 2 -z $z -o "$out/np2_chunk_z$z" > "$out/np2_chunk_z$z.out" 2>&1
    rc=$?
    detail=$(close "$out/one_chunk" "$out/np2_chunk_z$z")
    report "mpi-staged 2 ranks stage $z, head in chunks, vs one process" $((rc != 0 || $? != 0)) "$detail"
done
for z in 2 3; do
    same "$out/np2_chunk_z1" "$out/np2_chunk_z$z"
    report "stage $z identical to stage 1 (2 ranks, head in chunks)" $? "(main.log, model_00000006.bin, samples)"
done

# 3 ranks: 470528 parameters are not a multiple of 3 x ZERO_ALIGN, so the last slice has padding.
"$bin/train_gptcu" "${args[@]}" -d 192 -m 6 -o "$out/one3" > "$out/one3.out" 2>&1
report "one process runs (3 micro-steps)" $? "(see $out/one3.out)"
ranks_vs_one 3 192 "$out/one3" 1 2 3
exit $failed
