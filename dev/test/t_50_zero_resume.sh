#!/usr/bin/env bash
# Resume under ZeRO. Run A trains 6 steps on 2 ranks at stage 2, with checkpoints at steps 3
# and 6: state_<step>_<rank>.bin holds each rank's slice of the AdamW moments. From a copy of
# A's step-3 checkpoint:
#   B resumes on the same 2 ranks at stage 2: steps 4-6, the step-6 model and both state files
#     are bit-identical to A's;
#   C resumes on 3 ranks at stage 3 and D as one process: each re-slices the moments from A's
#     two state files (C's slices straddle them, D needs both whole) and must match A within
#     the reduction-order tolerances of t_50_zero_equal.sh (1e-5 relative on losses, 1e-5 on
#     weights); C writes 3 state files at step 6.
#   E: A with FP8 delayed scaling, resumed on the same 2 ranks: bit-identical (amax histories);
#   F: the same resumed on 3 ranks: each rank warns that its history restarts, and trains on.
#   G, H: A's state files with one of another rank or step in their place are refused.
#   A new run into A's directory is refused (one line, from rank 0), and A's files stay.
# The global batch, 384 tokens, is 3 micro-steps on 2 ranks, 2 on 3 and 6 in one process, so
# every run reads the same windows. About 10 s.
set -eu
cd "$(dirname "$0")/../.."
source dev/test/zero/common.sh
dir=build/test/zero_resume
rm -rf "$dir" && mkdir -p "$dir/data"
for i in 0 1; do /usr/bin/python3 dev/test/make_shard.py "$dir/data/train_00000$i.bin" 6000 512 $((80 + i)); done
args=("${model[@]}" -d 384 -x 6 -l 1e-3 -u 2 -c 0.1 -i "$dir/data/train_*.bin" -v 0 -s 0 -n 3)

mpi 2 ./train_gpt "${args[@]}" -z 2 -o "$dir/a" > "$dir/a.out"
for f in DONE_00000003 state_00000003_00001.bin DONE_00000006; do test -f "$dir/a/$f"; done
for run in b c d; do
    mkdir -p "$dir/$run"
    cp "$dir/a/model_00000003.bin" "$dir/a/state_00000003_0000"[01].bin "$dir/a/DONE_00000003" "$dir/$run/"
done

mpi 2 ./train_gpt "${args[@]}" -z 2 -o "$dir/b" -y 1 > "$dir/b.out"
grep -q "resumed from step 3" "$dir/b.out"
compare "$dir/a" "$dir/b" 4 6 0 0
for r in 0 1; do cmp "$dir/a/state_00000006_0000$r.bin" "$dir/b/state_00000006_0000$r.bin"; done

mpi 3 ./train_gpt "${args[@]}" -z 3 -o "$dir/c" -y 1 > "$dir/c.out"
grep -q "resumed from step 3" "$dir/c.out"
compare "$dir/a" "$dir/c" 4 6 1e-5 1e-5
test -f "$dir/c/state_00000006_00002.bin"

./train_gpt "${args[@]}" -o "$dir/d" -y 1 > "$dir/d.out"
grep -q "resumed from step 3" "$dir/d.out"
compare "$dir/a" "$dir/d" 4 6 1e-5 1e-5

# FP8 with delayed scaling: each rank's amax history (of its own activations and gradients) is in
# its own state file, so E resumed on the same 2 ranks is bit-identical to the uninterrupted A'.
fp8=(--matmul fp8 --amax-history 2)
mpi 2 ./train_gpt "${args[@]}" -z 2 "${fp8[@]}" -o "$dir/a8" > "$dir/a8.out"
mkdir -p "$dir/e"
cp "$dir/a8/model_00000003.bin" "$dir/a8/state_00000003_0000"[01].bin "$dir/a8/DONE_00000003" "$dir/e/"
mpi 2 ./train_gpt "${args[@]}" -z 2 "${fp8[@]}" -o "$dir/e" -y 1 > "$dir/e.out" 2> "$dir/e.err"
grep -q "resumed from step 3" "$dir/e.out"
! grep -q "not bit-exact" "$dir/e.err"
compare "$dir/a8" "$dir/e" 4 6 0 0
for r in 0 1; do cmp "$dir/a8/state_00000006_0000$r.bin" "$dir/e/state_00000006_0000$r.bin"; done
# On 3 ranks (F) the histories, each of its own rank's micro-batches, no longer fit: every rank
# warns that delayed scaling restarts (rank 2 has no file of its own), and the run goes on.
mkdir -p "$dir/f"
cp "$dir/a8/model_00000003.bin" "$dir/a8/state_00000003_0000"[01].bin "$dir/a8/DONE_00000003" "$dir/f/"
mpi 3 ./train_gpt "${args[@]}" -z 2 "${fp8[@]}" -o "$dir/f" -y 1 > "$dir/f.out" 2> "$dir/f.err"
grep -q "resumed from step 3" "$dir/f.out"
test -f "$dir/f/DONE_00000006"
for r in 0 1 2; do grep -q "holds no FP8 amax history of this shape for rank $r of 3: delayed scaling restarts" "$dir/f.err"; done
# State files that do not belong together are refused: rank 1's file under rank 0's name, and
# another step's file under rank 1's (each passes its own checksum).
# refused DIR PATTERN: resuming from DIR on 2 ranks fails with PATTERN on stderr.
refused() {
    local rc=0
    mpi 2 ./train_gpt "${args[@]}" -z 2 -o "$1" -y 1 > "$1.out" 2> "$1.err" || rc=$?
    test $rc -ne 0 && grep -q "$2" "$1.err"
}
mkdir -p "$dir/g" "$dir/h"
cp "$dir/a/model_00000003.bin" "$dir/a/DONE_00000003" "$dir/g/" && cp "$dir/g/"* "$dir/h/"
cp "$dir/a/state_00000003_00001.bin" "$dir/g/state_00000003_00000.bin"
cp "$dir/a/state_00000003_00001.bin" "$dir/g/state_00000003_00001.bin"
refused "$dir/g" "state_00000003_00000.bin' holds rank 1's state, not rank 0's"
cp "$dir/a/state_00000003_00000.bin" "$dir/h/state_00000003_00000.bin"
cp "$dir/a/state_00000006_00001.bin" "$dir/h/state_00000003_00001.bin"
refused "$dir/h" "state_00000003_00001.bin' (step 6 of 2 ranks) does not belong with '.*state_00000003_00000.bin' (step 3 of 2 ranks)"
# A new run (no -y 1) into A's directory is refused: exit 1, rank 0's one line, A untouched.
before=$(cd "$dir/a" && md5sum ./* | sort)
rc=0
mpi 2 ./train_gpt "${args[@]}" -z 2 -o "$dir/a" > "$dir/again.out" 2> "$dir/again.err" || rc=$?
test $rc -ne 0
test "$(grep -c "error: '$dir/a' holds the checkpoints of an earlier run (the newest at step 6)" "$dir/again.err")" = 1
test "$(cd "$dir/a" && md5sum ./* | sort)" = "$before"
echo "zero resume: same world size bit-exact (also FP8 with delayed scaling, which restarts its histories on 3 ranks); files of another rank or step refused; 2 -> 3 ranks (stage 2 -> 3) and 2 -> 1 re-slice and match"
