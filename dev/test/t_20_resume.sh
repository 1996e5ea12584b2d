#!/usr/bin/env bash
# Resume is bit-exact: 20 steps straight, against 10 steps + checkpoint + resume + 10 steps,
# must give identical losses and an identical final checkpoint. Also checks that the checkpoint
# a run writes loads back (round trip) and that an interrupted checkpoint (no DONE marker) is
# never picked for resume.
set -eu
cd "$(dirname "$0")/../.."
dir=build/test/resume
rm -rf "$dir" && mkdir -p "$dir/data"
for i in 0 1; do /usr/bin/python3 dev/test/make_shard.py "$dir/data/train_00000$i.bin" 3000 512 $((40 + i)); done
/usr/bin/python3 dev/test/make_shard.py "$dir/data/val_000000.bin" 2000 512 50
export OMP_NUM_THREADS=2
args=(-e L2C64NH4 --vocab-size 512 --max-seq-len 64 -b 2 -t 32 -d 128 -x 20 -l 1e-3 -u 3 -q 0.1 -c 0.1
      -i "$dir/data/train_*.bin" -j "$dir/data/val_*.bin" -v 5 -m 2 -s 0 -n 10)
./train_gpt "${args[@]}" -o "$dir/a" > "$dir/a.out"
test -f "$dir/a/DONE_00000010" && test -f "$dir/a/DONE_00000020"

# Resume from a copy of run a's step-10 checkpoint, plus a torn step-15 checkpoint (no marker).
mkdir -p "$dir/b"
cp "$dir/a/model_00000010.bin" "$dir/a/state_00000010_00000.bin" "$dir/a/DONE_00000010" "$dir/b/"
head -c 5000 "$dir/a/model_00000020.bin" > "$dir/b/model_00000015.bin"
./train_gpt "${args[@]}" -o "$dir/b" -y 1 > "$dir/b.out"
grep -q "resumed from step 10" "$dir/b.out"

grep -E '^s:(1[1-9]|20) trl:' "$dir/a/main.log" > "$dir/a.losses"
grep -E '^s:(1[1-9]|20) trl:' "$dir/b/main.log" > "$dir/b.losses"
test "$(wc -l < "$dir/a.losses")" -eq 10
diff "$dir/a.losses" "$dir/b.losses"
cmp "$dir/a/model_00000020.bin" "$dir/b/model_00000020.bin"
cmp "$dir/a/state_00000020_00000.bin" "$dir/b/state_00000020_00000.bin"
echo "resume: losses of steps 11-20 and the step-20 model and state are bit-identical"

# Round trip: the written checkpoint loads as a model (-e FILE) and gives the same loss as the
# run that wrote it had at its next step (same weights, same data position is not needed here:
# just that it loads and trains).
./train_gpt -e "$dir/a/model_00000020.bin" -b 2 -t 32 -x 1 -i "$dir/data/train_*.bin" -v 0 -s 0 > "$dir/c.out"
grep -q "model: L=2 C=64 NH=4 maxT=64 V=512 Vp=512" "$dir/c.out"
echo "round trip: the step-20 checkpoint loads"
