#!/usr/bin/env bash
# kill -9 at 50 seeded random moments while the trainer writes a checkpoint every step (each
# write slowed by LLMC_TEST_WRITE_DELAY_MS, so most of a run's time is spent inside checkpoint
# writing), each trial resuming the run the previous one killed (-y 1, -nk 2). After every kill:
#   - the newest complete checkpoint (DONE marker) has its model and state, and a run resumed
#     from it (in a copy of the directory) reports that step and trains the next step to exactly
#     the loss an uninterrupted run has there;
#   - the resumed run removed the killed writer's temporaries; at most 3 complete markers remain
#     (-nk 2, plus one if the kill fell between a marker and the pruning: the next start prunes
#     it, so kills in a row never leave more).
# Then a start removes a <checkpoint>.tmp.<pid> and keeps a file whose suffix is not a pid.
# It counts where the kills landed (inside a file being written, between the files of one
# checkpoint, elsewhere) and requires that most landed inside a checkpoint. About 30 s.
cd "$(dirname "$0")/../.."
source dev/test/fault/common.sh
fault_setup kill9
RANDOM=9  # seeds the kill times
trials=50
run=$dir/run
declare -A landed=([inside-a-file]=0 [between-files]=0 [elsewhere]=0)

newest_step() {  # the newest DONE_ step in $1, or -1
    local m
    m=$(ls "$1" 2>/dev/null | grep -E '^DONE_[0-9]{8}$' | sort | tail -1)
    if [ -n "$m" ]; then echo $((10#${m#DONE_})); else echo -1; fi
}

for trial in $(seq $trials); do
    LLMC_TEST_WRITE_DELAY_MS=2 ./train_gpt "${tiny[@]}" -x 100000 -n 1 -nk 2 -y 1 -o "$run" > "$dir/killed.out" 2>&1 &
    pid=$!
    sleep "0.$(printf %03d $((60 + RANDOM % 300)))"
    kill -9 $pid
    wait $pid 2> /dev/null
    s=$(newest_step "$run")
    if ls "$run" | grep -q '\.tmp\.'; then landed[inside-a-file]=$((landed[inside-a-file] + 1))
    elif ls "$run" | sed -n 's/^\(model\|state\)_\([0-9]\{8\}\).*/\2/p' | awk -v s="$s" '$1 + 0 > s { f = 1 } END { exit !f }'; then
        landed[between-files]=$((landed[between-files] + 1))
    else landed[elsewhere]=$((landed[elsewhere] + 1)); fi
    markers=$(ls "$run" | grep -cE '^DONE_[0-9]{8}$')  # complete ones: not a killed writer's DONE_*.tmp.*
    if [ "$s" -ge 0 ]; then
        p=$(printf %08d $s)
        [ -f "$run/model_$p.bin" ] && [ -f "$run/state_${p}_00000.bin" ] && [ "$markers" -le 3 ] ||
            { echo "FAIL trial $trial: checkpoint $s incomplete or $markers markers"; ls "$run"; fails=$((fails + 1)); continue; }
    fi
    rm -rf "$dir/verify" && cp -r "$run" "$dir/verify"
    ./train_gpt "${tiny[@]}" -x $((s + 1 > 0 ? s + 1 : 1)) -n 0 -y 1 -o "$dir/verify" > "$dir/verify.out" 2>&1 ||
        { echo "FAIL trial $trial: the resume from step $s failed:"; tail -3 "$dir/verify.out"; fails=$((fails + 1)); continue; }
    if [ "$s" -ge 0 ]; then
        grep -q "resumed from step $s of" "$dir/verify.out" ||
            { echo "FAIL trial $trial: did not resume from step $s"; fails=$((fails + 1)); }
    fi
    if ls "$dir/verify" | grep -q '\.tmp\.'; then echo "FAIL trial $trial: temporaries left after the resume"; fails=$((fails + 1)); fi
    # The resumed run rewrites main.log up to step s and appends the loss of step s + 1.
    grep -E "^s:$((s > 0 ? s + 1 : 1)) trl:" "$dir/verify/main.log" | tail -1 >> "$dir/resumed.losses" &&
        [ "$(grep -cE "^s:$((s > 0 ? s + 1 : 1)) trl:" "$dir/verify/main.log")" -eq 1 ] ||
        { echo "FAIL trial $trial: the resumed run logged no step $((s + 1))"; fails=$((fails + 1)); }
    echo "trial $trial: killed at step $s + part, markers $markers; resumed loss: $(tail -1 "$dir/resumed.losses")"
done

# The uninterrupted reference, as far as the trials got.
last=$(sed 's/^s:\([0-9]*\).*/\1/' "$dir/resumed.losses" | sort -n | tail -1)
./train_gpt "${tiny[@]}" -x "$last" -o "$dir/ref" > /dev/null
mismatches=0
while read -r line; do
    grep -qxF "$line" "$dir/ref/main.log" || { echo "FAIL resumed loss not in the reference: $line"; mismatches=$((mismatches + 1)); }
done < "$dir/resumed.losses"
check "$(wc -l < "$dir/resumed.losses") resumed losses equal the uninterrupted run's (steps up to $last)" test $mismatches -eq 0
check "$trials trials" test "$(wc -l < "$dir/resumed.losses")" -eq $trials
inside=$((landed[inside-a-file] + landed[between-files]))
echo "kills: ${landed[inside-a-file]} inside a file being written, ${landed[between-files]} between the files of a checkpoint, ${landed[elsewhere]} elsewhere"
check "most kills ($inside of $trials) landed inside checkpoint writing" test $inside -ge $((trials / 2))

# The start of a resumed run prunes to -nk by itself (here no checkpoint is written after it):
# the one a kill before the pruning left, and any more such kills in a row would add, go.
./train_gpt "${tiny[@]}" -x 4 -n 1 -o "$dir/extra" > /dev/null
./train_gpt "${tiny[@]}" -x 5 -n 0 -nk 2 -y 1 -o "$dir/extra" > /dev/null
check "a resumed run's start keeps the newest -nk 2 of 4 checkpoints" \
    test "$(ls "$dir/extra" | grep -v main.log | tr '\n' ' ')" = \
    "DONE_00000003 DONE_00000004 model_00000003.bin model_00000004.bin state_00000003_00000.bin state_00000004_00000.bin "
# A start removes a killed writer's temporary (<checkpoint>.tmp.<pid>), and nothing else that
# merely looks like one: the suffix must be a pid.
echo "in flight" > "$dir/extra/model_00000005.bin.tmp.99999"
echo "notes" > "$dir/extra/model_00000005.bin.tmp.mine"
./train_gpt "${tiny[@]}" -x 5 -n 0 -y 1 -o "$dir/extra" > /dev/null
check "a start removes <checkpoint>.tmp.<pid> and keeps <checkpoint>.tmp.mine" \
    test "$(ls "$dir/extra" | grep '\.tmp\.' | tr '\n' ' ')" = "model_00000005.bin.tmp.mine "
finish
