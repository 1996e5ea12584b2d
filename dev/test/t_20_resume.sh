#!/usr/bin/env bash
# Resume is bit-exact: 20 steps straight, against 10 steps + checkpoint + resume + 10 steps,
# must give identical losses (also validation losses and samples) and an identical final
# checkpoint, in fp32 and in emulated FP8 with delayed scaling (whose amax history the state file
# carries), and from a state file of the older version 1; so is another OpenMP thread count, and
# a resume given another --seed (the run keeps its own).
# Also checks that the checkpoint a run writes loads back (round trip) and that an interrupted
# checkpoint (no DONE marker) is never picked for resume.
set -eu
cd "$(dirname "$0")/../.."
dir=build/test/resume
rm -rf "$dir" && mkdir -p "$dir/data"
for i in 0 1; do /usr/bin/python3 dev/test/make_shard.py "$dir/data/train_00000$i.bin" 3000 512 $((40 + i)); done
/usr/bin/python3 dev/test/make_shard.py "$dir/data/val_000000.bin" 2000 512 50
export OMP_NUM_THREADS=2
args=(-e L2C64NH4 --vocab-size 512 --max-seq-len 64 -b 2 -t 32 -d 128 -x 20 -l 1e-3 -u 3 -q 0.1 -c 0.1
      -i "$dir/data/train_*.bin" -j "$dir/data/val_*.bin" -v 5 -m 2 -s 5 -g 4 -n 10)
# run NAME EXTRA...: 20 steps straight (NAME_a) against 10 + resume + 10 (NAME_b).
run() {
    local n=$1; shift
    local a="$dir/${n}_a" b="$dir/${n}_b"
    ./train_gpt "${args[@]}" "$@" -o "$a" > "$a.out"
    test -f "$a/DONE_00000010"  # (not "a && b": set -e does not stop at a failing a)
    test -f "$a/DONE_00000020"
    # Resume from a copy of run a's step-10 checkpoint, plus a torn step-15 checkpoint (no marker),
    # and a's whole log, as if the run had gone on to step 20 and died before its checkpoint: the
    # resume keeps the log's lines up to step 10 (but step 10's validation, which it repeats).
    mkdir -p "$b"
    cp "$a/model_00000010.bin" "$a/state_00000010_00000.bin" "$a/DONE_00000010" "$a/main.log" "$b/"
    head -c 5000 "$a/model_00000020.bin" > "$b/model_00000015.bin"
    ./train_gpt "${args[@]}" "$@" -o "$b" -y 1 > "$b.out" 2> "$b.err"
    grep -q "resumed from step 10" "$b.out"
    ! grep -q "not bit-exact" "$b.err"
    grep -E '^s:(1[1-9]|20) trl:' "$a/main.log" > "$a.losses"
    grep -E '^s:(1[1-9]|20) trl:' "$b/main.log" > "$b.losses"
    test "$(wc -l < "$a.losses")" -eq 10
    diff "$a.losses" "$b.losses"
    # Validation and sampling resume too: each evaluation reads the same windows (steps 10, 15
    # and 20), and the sampler's random stream goes on where the checkpoint left it.
    grep -E '^s:(1[0-9]|20) tel:' "$a/main.log" > "$a.val"
    grep -E '^s:(1[0-9]|20) tel:' "$b/main.log" > "$b.val"
    test "$(wc -l < "$a.val")" -eq 3
    diff "$a.val" "$b.val"
    test "$(grep -c '^sample:' "$b.out")" -eq 3
    diff <(grep '^sample:' "$a.out" | tail -3) <(grep '^sample:' "$b.out")
    diff "$a/main.log" "$b/main.log"
    cmp "$a/model_00000020.bin" "$b/model_00000020.bin"
    cmp "$a/state_00000020_00000.bin" "$b/state_00000020_00000.bin"
    echo "resume ($n): losses, validation losses and samples of steps 11-20, the whole log, and the step-20 model and state are bit-identical"
}
run fp32
# A resume with another --seed keeps the run's own (state header word [17]): the note, and the
# step-20 model and state of the run that went straight through.
s7="$dir/fp32_seed7"
mkdir -p "$s7" && cp "$dir/fp32_a/model_00000010.bin" "$dir/fp32_a/state_00000010_00000.bin" "$dir/fp32_a/DONE_00000010" "$s7/"
./train_gpt "${args[@]}" -o "$s7" -y 1 --seed 7 > "$s7.out"
grep -q "note: the run started with --seed 1337, which it keeps; --seed 7 is not used" "$s7.out"
cmp "$dir/fp32_a/model_00000020.bin" "$s7/model_00000020.bin"
cmp "$dir/fp32_a/state_00000020_00000.bin" "$s7/state_00000020_00000.bin"
echo "resume with --seed 7: the run keeps its seed 1337 (the note; step 20's model and state bit-identical)"
# A version-1 state file (the same state as this project wrote it before its checksum covered the
# header, without the run's seed or the model file's checksum) resumes to the same bits, the seed
# taken from --seed (the run's, 1337 by default).
v1="$dir/fp32_v1"
mkdir -p "$v1" && cp "$dir/fp32_a/model_00000010.bin" "$dir/fp32_a/DONE_00000010" "$v1/"
/usr/bin/python3 dev/test/edit_state.py "$dir/fp32_a/state_00000010_00000.bin" "$v1/state_00000010_00000.bin" \
    1=1 17=0 19=0 20=0 --sum v1
./train_gpt "${args[@]}" -o "$v1" -y 1 > "$v1.out"
grep -q "resumed from step 10" "$v1.out"
cmp "$dir/fp32_a/model_00000020.bin" "$v1/model_00000020.bin"
cmp "$dir/fp32_a/state_00000020_00000.bin" "$v1/state_00000020_00000.bin"
echo "resume (fp32) from a version-1 state file: the step-20 model and state are bit-identical"
# Spike skipping (-sl, -sg) decides from the loss and norm windows the state file carries: at a
# z-score above 0.1 some of steps 17-20 are skipped (from 16 accepted values on), in both runs alike.
run spikes -sl 0.1 -sg 0.1 -sm 0
grep -qE '^s:(1[7-9]|20) skip:' "$dir/spikes_a/main.log"
# The thread count changes no bit: every OpenMP reduction sums fixed chunks in a fixed order, and
# the matmuls are OpenBLAS calls on tiles of C fixed by the shape (llmc/sgemm_tiles.h;
# OpenBLAS's own threading gave 3 threads other bits than 2 on an AVX-512 machine, and this test
# failed there). 4 steps of a model wider than the one above, whose products span several tiles
# (512 rows; 768 and 1024 columns), at 1, 2 and 3 threads; a bias-gradient sum split by thread fails it.
wide=(-e L2C256NH4 --vocab-size 512 --max-seq-len 128 -b 4 -t 128 -x 4 -l 1e-3 -i "$dir/data/train_*.bin"
      -j "$dir/data/val_*.bin" -v 2 -m 1 -s 0 -n 4)
for threads in 1 2 3; do OMP_NUM_THREADS=$threads ./train_gpt "${wide[@]}" -o "$dir/threads$threads" > /dev/null; done
for threads in 1 3; do
    diff <(grep -E 'trl:|tel:' "$dir/threads2/main.log") <(grep -E 'trl:|tel:' "$dir/threads$threads/main.log")
    cmp "$dir/threads2/model_00000004.bin" "$dir/threads$threads/model_00000004.bin"
    cmp "$dir/threads2/state_00000004_00000.bin" "$dir/threads$threads/state_00000004_00000.bin"
done
echo "threads: 1 and 3 OpenMP threads give the losses, model and state of 2, bit for bit"
# FP8 with delayed scaling: the amax history (2 micro-steps a step here) is in the state file;
# without it the resumed run would scale its first micro-step from current amaxes and differ.
run fp8_delayed --matmul fp8 --amax-history 3
# It is really in use: delayed scaling changes the losses against current scaling, and a resume
# with another history length warns that it restarts the history.
./train_gpt "${args[@]}" --matmul fp8 -n 0 -x 12 -o "$dir/fp8_current" > /dev/null
! diff -q <(grep -E '^s:12 trl:' "$dir/fp8_current/main.log") <(grep -E '^s:12 trl:' "$dir/fp8_delayed_a/main.log") > /dev/null
mkdir -p "$dir/fp8_other"
cp "$dir/fp8_delayed_a/model_00000010.bin" "$dir/fp8_delayed_a/state_00000010_00000.bin" "$dir/fp8_delayed_a/DONE_00000010" "$dir/fp8_other/"
./train_gpt "${args[@]}" --matmul fp8 --amax-history 5 -x 11 -o "$dir/fp8_other" -y 1 > /dev/null 2> "$dir/fp8_other.err"
grep -q "holds no FP8 amax history of this shape" "$dir/fp8_other.err"
echo "resume (fp8_delayed): the history changes the losses; another history length warns and restarts it"
# Evaluations record no amax into the history (test_model fp8eval: the ring before and after one).
./build/test_model fp8eval 1
# Evaluation changes nothing training computes: validation and a sample at every step against
# neither give the same step-6 model, and the same state past its header (whose sampler counter
# and checksum differ). With FP8 delayed scaling, where an evaluation that recorded its amaxes
# would move the next steps' scales (train_gpt.c's cpu_forward_loss sets the evaluation phase).
eval_args=("${args[@]}" --matmul fp8 --amax-history 3 -x 6 -n 6)
./train_gpt "${eval_args[@]}" -v 0 -s 0 -o "$dir/no_eval" > /dev/null
./train_gpt "${eval_args[@]}" -v 1 -s 1 -g 4 -o "$dir/every_eval" > /dev/null
cmp "$dir/no_eval/model_00000006.bin" "$dir/every_eval/model_00000006.bin"
cmp <(tail -c +1025 "$dir/no_eval/state_00000006_00000.bin") <(tail -c +1025 "$dir/every_eval/state_00000006_00000.bin")
echo "evaluation (fp8_delayed): validation and sampling at every step leave the model and optimizer state as without"
a="$dir/fp32_a"

# Round trip: the written checkpoint loads as a model (-e FILE) and gives the same loss as the
# run that wrote it had at its next step (same weights, same data position is not needed here:
# just that it loads and trains).
./train_gpt -e "$a/model_00000020.bin" -b 2 -t 32 -x 1 -i "$dir/data/train_*.bin" -v 0 -s 0 > "$dir/c.out"
grep -q "model: L=2 C=64 NH=4 maxT=64 V=512 Vp=512" "$dir/c.out"
echo "round trip: the step-20 checkpoint loads"
