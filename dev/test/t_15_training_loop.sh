#!/usr/bin/env bash
# When the training loop (llmc/trainer.c) evaluates, samples and saves, and what its update is
# handed, on tiny runs of train_gpt: a validation loss before steps 0, v, 2v, ... and after the
# last step (-v); a sample after steps s, 2s, ... and after the last, none before training (-s);
# checkpoints after steps n, 2n, ... and after the last (-n), after the last alone with -n -1 and
# none with -n 0; and gradient-norm clipping applied to the update (--grad-clip 0.01, below every
# norm of these runs, changes the model; 1e9, above them all, gives the bits of 0, off; the norm
# the log shows is the one before clipping); the sampler draws each token as often as its
# probability. The schedules' values are t_12's; the clipping's arithmetic is t_10's. About 2 s.
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
run cadence -x 9 -v 4 -s 4 -n 4
events=$(awk '/^val loss / {printf "V "} /^sample:/ {printf "S "} /^step +[0-9]+\/9 / {split($2, a, "/"); printf "%s ", a[1]}' \
         "$dir/cadence.out")
want="V 1 2 3 4 V S 5 6 7 8 V S 9 V S "
[ "$events" = "$want" ] && ok=1 || ok=0
check "$ok" "-x 9 -v 4 -s 4: validation before steps 1, 5, 9 and after 9, samples after 4, 8, 9 (printed: $events)"
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

# Clipping: 4 steps at each threshold (every norm here is about 2.4).
for clip in 0 0.01 1e9; do run "clip_$clip" -x 4 -v 0 -s 0 -n -1 --grad-clip "$clip"; done
norm_of() { awk -v s="s:$2" '$1 == s && / trl:/ {sub("norm:", "", $4); print $4}' "$dir/clip_$1/main.log"; }  # norm_of CLIP STEP
! cmp -s "$dir/clip_0/model_00000004.bin" "$dir/clip_0.01/model_00000004.bin" &&
    [ "$(norm_of 0 1)" = "$(norm_of 0.01 1)" ] && [ "$(norm_of 0 2)" != "$(norm_of 0.01 2)" ] && ok=1 || ok=0
check "$ok" "--grad-clip 0.01 changes the update: step 1's norm $(norm_of 0.01 1) as without clipping ($(norm_of 0 1)), step 2's $(norm_of 0.01 2) not ($(norm_of 0 2))"
cmp -s "$dir/clip_0/model_00000004.bin" "$dir/clip_1e9/model_00000004.bin" && ok=1 || ok=0
check "$ok" "--grad-clip 1e9 (above every norm) gives the model of --grad-clip 0 bit for bit"
# The sampler draws from the softmax of the logits (inverse transform: test_model sampler).
./build/test_model sampler 31 > "$dir/sampler.out" && ok=1 || ok=0
cat "$dir/sampler.out"
check "$ok" "rng_sample_softmax: each index as often as its probability"
echo "$failed check(s) failed"
[ "$failed" = 0 ]
