#!/usr/bin/env bash
# When the training loop (llmc/trainer.c) evaluates, samples and saves, and what its update is
# handed, on tiny runs of train_gpt: a validation loss before steps 0, v, 2v, ... and after the
# last step (-v); a sample after steps s, 2s, ... and after the last, none before training (-s);
# checkpoints after steps n, 2n, ... and after the last (-n), after the last alone with -n -1 and
# none with -n 0; and gradient-norm clipping applied to the update (--grad-clip 0.01, below every
# norm of these runs, changes the model; 1e9, above them all, gives the bits of 0, off; the norm
# the log shows is the one before clipping); a sample's length (-g, at most T - 1); the data
# position after each step through two shards and back to the first; the sampler draws each
# token as often as its probability; MFU's formula; the ETA's seconds, minutes and hours. The
# schedules' values are t_12's; the clipping's arithmetic is t_10's. About 3 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=build/test/training_loop
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 dev/test/make_shard.py "$dir/shard.bin" 4000 300 15
failed=0
check() {  # check <ok> <what>
    if [ "$1" = 1 ]; then echo "ok   $2"; else echo "FAIL $2"; failed=$((failed + 1)); fi
}
run() {  # run NAME ARGS...: a run of tiny steps into $dir/NAME (its stdout in $dir/NAME.out)
    local name=$1; shift
    OMP_NUM_THREADS=2 ./train_gpt -e L1C32NH2 --vocab-size 300 --max-seq-len 16 -b 2 -t 8 -i "$dir/shard.bin" \
        -j "$dir/shard.bin" -m 2 -g 4 -o "$dir/$name" "$@" > "$dir/$name.out" 2>&1
}
saved() { (cd "$dir/$1" && ls DONE_* 2>/dev/null | sed 's/DONE_0*//' | tr '\n' ' '); }  # saved NAME: steps

# Validation, samples and checkpoints every 4 steps of 9. Events in the order printed: V a
# validation, S a sample, a number the progress line of that step.
# (The long forms: --val-every starts with --val, the long form of -j.)
run cadence -x 9 --val-every 4 --sample-every 4 --ckpt-every 4
events=$(awk '/^val loss / {printf "V "} /^sample:/ {printf "S "} /^step +[0-9]+\/9 / {split($2, a, "/"); printf "%s ", a[1]}' \
         "$dir/cadence.out")
want="V 1 2 3 4 V S 5 6 7 8 V S 9 V S "
[ "$events" = "$want" ] && ok=1 || ok=0
check "$ok" "-x 9, every 4: validation before steps 1, 5, 9 and after 9, samples after 4, 8, 9 (printed: $events)"
logged=$(awk '/ tel:/ {sub("s:", "", $1); printf "%s ", $1}' "$dir/cadence/main.log")
[ "$logged" = "0 4 8 9 " ] && ok=1 || ok=0
check "$ok" "main.log: validation losses at steps 0 4 8 9 ($logged)"
[ "$(saved cadence)" = "4 8 9 " ] && ok=1 || ok=0
check "$ok" "-n 4: checkpoints after steps 4 8 9 ($(saved cadence))"
run last_only -x 5 -v 0 -s 0 -n -1
run never -x 5 -v 0 -s 0 -n 0
[ "$(saved last_only)" = "5 " ] && [ -z "$(saved never)" ] && [ -z "$(ls "$dir/never" | grep '\.bin$' || true)" ] &&
    ok=1 || ok=0
check "$ok" "-n -1: a checkpoint after the last step alone ($(saved last_only)); -n 0: none ($(saved never))"
# A new run in a directory without checkpoints (-n 0's) writes main.log anew, not after the old lines.
run never -x 5 -v 0 -s 0 -n 0
[ "$(grep -c ' trl:' "$dir/never/main.log")" = 5 ] && ok=1 || ok=0
check "$ok" "a second run into -n 0's directory: main.log holds its 5 steps alone ($(grep -c ' trl:' "$dir/never/main.log"))"

# Clipping: 4 steps at each threshold (every norm here is about 2.4).
for clip in 0 0.01 1e9; do run "clip_$clip" -x 4 -v 0 -s 0 -n -1 --grad-clip "$clip"; done
norm_of() { awk -v s="s:$2" '$1 == s && / trl:/ {sub("norm:", "", $4); print $4}' "$dir/clip_$1/main.log"; }  # norm_of CLIP STEP
! cmp -s "$dir/clip_0/model_00000004.bin" "$dir/clip_0.01/model_00000004.bin" &&
    [ "$(norm_of 0 1)" = "$(norm_of 0.01 1)" ] && [ "$(norm_of 0 2)" != "$(norm_of 0.01 2)" ] && ok=1 || ok=0
check "$ok" "--grad-clip 0.01 changes the update: step 1's norm $(norm_of 0.01 1) as without clipping ($(norm_of 0 1)), step 2's $(norm_of 0.01 2) not ($(norm_of 0 2))"
cmp -s "$dir/clip_0/model_00000004.bin" "$dir/clip_1e9/model_00000004.bin" && ok=1 || ok=0
check "$ok" "--grad-clip 1e9 (above every norm) gives the model of --grad-clip 0 bit for bit"
# A sample is -g tokens, at most T - 1 (token ids without a tokenizer).
run sample_g3 -x 1 -v 0 -n 0 -s 1 -g 3 --tokenizer "$dir/none"
run sample_g64 -x 1 -v 0 -n 0 -s 1 -g 64 --tokenizer "$dir/none"
ids() { awk '/^sample:/ {print NF - 1}' "$dir/$1.out"; }  # ids NAME: the sample's token count
[ "$(ids sample_g3)" = 3 ] && [ "$(ids sample_g64)" = 7 ] &&
    grep -q "note: samples are at most T - 1 = 7 tokens long (-g 64 asks for more)" "$dir/sample_g64.out" && ok=1 || ok=0
check "$ok" "samples of -g 3 and -g 64 at T 8: $(ids sample_g3) and $(ids sample_g64) tokens (3 and 7)"

# The data position after each step (state header words [8] shard, [9] position) over two shards
# of two micro-batches each (33 tokens: 2 x 16 + the last target): the shards in name order,
# then the first again. A shard is left when the next micro-step would not fit in it.
/usr/bin/python3 dev/test/make_shard.py "$dir/two_0.bin" 33 300 16
/usr/bin/python3 dev/test/make_shard.py "$dir/two_1.bin" 33 300 17
OMP_NUM_THREADS=2 ./train_gpt -e L1C32NH2 --vocab-size 300 --max-seq-len 16 -b 2 -t 8 -i "$dir/two_*.bin" -v 0 -s 0 \
    -x 6 -n 1 -o "$dir/wrap" > "$dir/wrap.out" 2>&1
positions=$(for k in 1 2 3 4 5 6; do
    /usr/bin/python3 -c 'import sys, numpy as np; h = np.fromfile(sys.argv[1], "<i8", 10); print(f"{h[8]}:{h[9]}", end=" ")' \
        "$dir/wrap/state_0000000${k}_00000.bin"; done)
[ "$positions" = "0:16 0:32 1:16 1:32 0:16 0:32 " ] && ok=1 || ok=0
check "$ok" "two shards of 2 micro-batches: shard:position after steps 1-6 $positions(0:16 0:32 1:16 1:32 0:16 0:32)"

# MFU in the progress line: (6 N + 12 L C T) FLOPs a token (llmc/trainer.c) x tokens/s over the peak
# (here 1e7 FLOP/s, so that the printed figures carry 5 digits), within their rounding (the
# attention's 12 L C T is 2% of this model's FLOPs). Steps slower than 1000 tokens/s print too few.
run mfu -x 4 -v 0 -s 0 -n 0 --peak-tflops 1e-5
mfu=$(awk '/parameters$/ {n = $(NF - 1)} / tok\/s \| MFU / {
        for (i = 1; i <= NF; i++) { if ($i == "tok/s") tps = $(i - 1); if ($i == "MFU") pct = $(i + 1) }
        sub("%", "", pct); if (tps + 0 < 1000) next
        want = (6 * n + 12 * 1 * 32 * 8) * tps / 1e7 * 100; d = pct / want - 1; if (d < 0) d = -d
        checked++; if (d > worst) worst = d }
      END { printf "%d %.2e", checked, worst; exit !(checked > 0 && worst < 3e-3) }' "$dir/mfu.out") && ok=1 || ok=0
check "$ok" "MFU at --peak-tflops 1e-5 = (6 N + 12 L C T) x tokens/s / peak (steps checked, worst relative difference: $mfu)"

# The sampler draws from the softmax of the logits (inverse transform: test_model sampler).
./build/test_model sampler 31 > "$dir/sampler.out" && ok=1 || ok=0
cat "$dir/sampler.out"
check "$ok" "rng_sample_softmax: each index as often as its probability"

# The progress line's ETA in each of its units (test_model duration).
./build/test_model duration > "$dir/duration.out" && ok=1 || ok=0
cat "$dir/duration.out"
check "$ok" "the ETA: s below a minute, m and s below an hour, h and m above, ? for no estimate"
echo "$failed check(s) failed"
[ "$failed" = 0 ]
