#!/usr/bin/env bash
# Non-finite gradients, the watchdog, shards damaged under a running job, spikes. About 15 s.
#   - LLMC_TEST_NAN_STEPS (llmc/fault.h) backpropagates a NaN loss scale at the listed steps, so
#     the backend's gradients are truly NaN: those updates are skipped, logged and counted, and
#     the weights after a skipped step are bit-identical to those before it;
#   - -sm K stops the run (exit 1) after K skipped updates in a row, and not after K - 1, also
#     when a resume falls between them;
#   - -w stops a step stuck in a checkpoint (writes slowed to 1.5 s) with exit 124 naming the
#     step and the phase, and leaves alone a healthy run whose steps take less, and all of them more;
#   - a shard truncated after the run opened it, and a token outside the vocabulary, are
#     reported with the shard's name and the token offset;
#   - -sl and -sg skip the updates of a loss / gradient-norm jump (and not without them), and
#     -nk 4 keeps exactly the newest 4 checkpoints; the z-score itself (test_model outlier).
cd "$(dirname "$0")/../.."
source dev/test/fault/common.sh
fault_setup skips

run=$dir/nan
LLMC_TEST_NAN_STEPS=3,5 ./train_gpt "${tiny[@]}" -x 6 -n 1 -sm 2 -o "$run" > "$run.out" 2>&1
rc=$?
check "NaN at steps 3 and 5: exit 0 (got $rc)" test $rc -eq 0
check "NaN: step 3 skipped on the console" grep -q "step 3: update skipped (non-finite loss or gradient" "$run.out"
check "NaN: steps 3 and 5 skipped in main.log" test "$(grep skip: "$run/main.log" | tr '\n' ' ')" = \
    "s:3 skip:non-finite loss or gradient s:5 skip:non-finite loss or gradient "
check "NaN: counted" grep -q "updates skipped: 2 non-finite, 0 spikes" "$run.out"
check "NaN: the skipped step 3 left the weights of step 2" cmp "$run/model_00000002.bin" "$run/model_00000003.bin"
check "NaN: the skipped step 5 left the weights of step 4" cmp "$run/model_00000004.bin" "$run/model_00000005.bin"
check "NaN: step 4 trained" bash -c "! cmp -s '$run/model_00000003.bin' '$run/model_00000004.bin'"
./train_gpt "${tiny[@]}" -x 2 -n 2 -o "$dir/clean" > /dev/null
check "NaN: steps 1-2 as a clean run" cmp "$dir/clean/model_00000002.bin" "$run/model_00000002.bin"
check "NaN: the final loss and norm are finite" grep -qE '^s:6 trl:[0-9]+\.[0-9]+ lr:[0-9.e+-]+ norm:[0-9]+\.[0-9]+$' "$run/main.log"

LLMC_TEST_NAN_STEPS=2,3,4 ./train_gpt "${tiny[@]}" -x 6 -sm 3 > "$dir/limit.out" 2> "$dir/limit.err"
rc=$?
check "3 NaN steps in a row with -sm 3: exit 1 (got $rc)" test $rc -eq 1
check "-sm 3: says why" grep -q "error: 3 updates in a row were skipped (the last at step 4: non-finite" "$dir/limit.err"
LLMC_TEST_NAN_STEPS=2,3,5,6 ./train_gpt "${tiny[@]}" -x 7 -sm 3 > "$dir/below.out" 2>&1
check "2 + 2 NaN steps with -sm 3: the count restarts after an update, exit 0" test $? -eq 0

# The count of skips in a row is in the training state: 2 skipped before a checkpoint and 1
# after the resume are 3 in a row (a restarted job gets no fresh -sm allowance).
LLMC_TEST_NAN_STEPS=2,3 ./train_gpt "${tiny[@]}" -x 3 -n 1 -sm 3 -o "$dir/streak" > /dev/null 2>&1
check "skips in a row before a checkpoint: exit 0" test $? -eq 0
LLMC_TEST_NAN_STEPS=4 ./train_gpt "${tiny[@]}" -x 6 -sm 3 -y 1 -o "$dir/streak" > "$dir/streak.out" 2> "$dir/streak.err"
rc=$?
check "skips in a row across a resume: exit 1 at the third (got $rc)" test $rc -eq 1
check "skips in a row across a resume: says why" grep -q "error: 3 updates in a row were skipped (the last at step 4" "$dir/streak.err"

LLMC_TEST_WRITE_DELAY_MS=1500 ./train_gpt "${tiny[@]}" -x 4 -n 1 -w 1 -o "$dir/stuck" > "$dir/stuck.out" 2> "$dir/stuck.err"
rc=$?
check "watchdog: exit 124 (got $rc)" test $rc -eq 124
check "watchdog: names the step and phase" grep -q "error: watchdog: step 1 has been in phase 'checkpoint' and has taken more than 1 s (-w)" "$dir/stuck.err"
check "watchdog: a stuck checkpoint stays incomplete" test ! -e "$dir/stuck/DONE_00000001"
# Healthy: each step's checkpoint (writes slowed to 30 ms) takes about 1.1 s, under -w 2, and the
# 4 steps about 4.5 s, over it: each step arms the watchdog afresh.
LLMC_TEST_WRITE_DELAY_MS=30 ./train_gpt "${tiny[@]}" -x 4 -n 1 -w 2 -o "$dir/healthy" > "$dir/healthy.out" 2>&1
check "watchdog: a healthy run of 4 steps of 1.1 s with -w 2 completes" test $? -eq 0

# A two-shard run; the second shard is cut short once the run is under way (step 1's checkpoint
# is done; the run reaches shard 2 at step 4, more than 1 s later with writes slowed).
mkdir -p "$dir/two"
/usr/bin/python3 dev/test/make_shard.py "$dir/two/train_000000.bin" 200 512 62
/usr/bin/python3 dev/test/make_shard.py "$dir/two/train_000001.bin" 2000 512 63
two=("${tiny[@]}" -i "$dir/two/train_*.bin")
LLMC_TEST_WRITE_DELAY_MS=15 ./train_gpt "${two[@]}" -x 8 -n 1 -o "$dir/cut" > "$dir/cut.out" 2> "$dir/cut.err" &
pid=$!
for _ in $(seq 2000); do [ -e "$dir/cut/DONE_00000001" ] && break; sleep 0.01; done
truncate -s 1100 "$dir/two/train_000001.bin"
wait $pid; rc=$?
check "shard truncated mid-run: exit 1 (got $rc)" test $rc -eq 1
check "shard truncated mid-run: names the shard and offset" grep -q \
    "shard '$dir/two/train_000001.bin' became unreadable during the run: cannot read 65 tokens at token offset 0 (byte 1024): the file is now shorter than its header says" "$dir/cut.err"
check "shard truncated mid-run: refused at open time on the next start" bash -c \
    "./train_gpt ${two[*]@Q} -x 1 2>&1 | grep -q \"train_000001.bin' is truncated: 1100 bytes, its header's 2000 tokens need 5024\""

# A token outside the vocabulary at token 150 of the first shard: found at step 3 (tokens 128-192).
/usr/bin/python3 dev/test/make_shard.py "$dir/two/train_000001.bin" 2000 512 63
printf '\xff\xff' | dd of="$dir/two/train_000000.bin" bs=1 seek=$((1024 + 2 * 150)) conv=notrunc 2> /dev/null
./train_gpt "${two[@]}" -x 4 > "$dir/vocab.out" 2> "$dir/vocab.err"
check "bad token: exit 1 and names the shard and offset" grep -q \
    "shard '$dir/two/train_000000.bin': token 65535 at offset 150 is outside the model's vocabulary (V=512)" "$dir/vocab.err"
check "bad token: found at step 3, after two good steps" test "$(grep -c '^step ' "$dir/vocab.out")" -eq 2

# Spikes: 200 steps of a repeating pattern (the loss falls below 0.01), then random tokens (the
# loss jumps to ~6.7, and the gradient norm with it). Checkpoints every step, pruned by -nk 4.
mkdir -p "$dir/spike"
/usr/bin/python3 - "$dir/spike/train_000000.bin" << 'PY'
import sys
import numpy as np
n = 200 * 64 + 1  # exactly 200 batches of B*T = 64 (+1 for the last target)
header = np.zeros(256, np.int32)
header[:3] = (20240520, 1, n)
open(sys.argv[1], "wb").write(header.tobytes() + (np.arange(n) % 32 * 7 % 512).astype(np.uint16).tobytes())
PY
/usr/bin/python3 dev/test/make_shard.py "$dir/spike/train_000001.bin" 2000 512 64
spike=("${tiny[@]}" -i "$dir/spike/train_*.bin" -x 203 -n 1 -nk 4)
for flag in sl sg; do
    run=$dir/spike_$flag
    if [ $flag = sl ]; then reason="loss spike"; else reason="grad-norm spike"; fi
    ./train_gpt "${spike[@]}" -$flag 3 -o "$run" > "$run.out" 2>&1
    rc=$?
    check "-$flag 3: exit 0 (got $rc)" test $rc -eq 0
    check "-$flag 3: steps 201-203 skipped as a $reason in main.log" test "$(grep skip: "$run/main.log" | tr '\n' ' ')" = \
        "s:201 skip:$reason s:202 skip:$reason s:203 skip:$reason "
    check "-$flag 3: counted" grep -q "updates skipped: 0 non-finite, 3 spikes" "$run.out"
    check "-$flag 3: the skipped steps left the weights of step 200" bash -c \
        "cmp '$run/model_00000200.bin' '$run/model_00000201.bin' && cmp '$run/model_00000200.bin' '$run/model_00000203.bin'"
    check "-nk 4: exactly the newest 4 checkpoints kept" test "$(ls "$run" | grep -v main.log | tr '\n' ' ')" = \
        "DONE_00000200 DONE_00000201 DONE_00000202 DONE_00000203 model_00000200.bin model_00000201.bin model_00000202.bin model_00000203.bin state_00000200_00000.bin state_00000201_00000.bin state_00000202_00000.bin state_00000203_00000.bin "
done
./train_gpt "${spike[@]}" -o "$dir/spike_off" > /dev/null 2>&1
check "no -sl/-sg: the same steps train" bash -c "! grep -q skip: '$dir/spike_off/main.log' &&
    ! cmp -s '$dir/spike_off/model_00000200.bin' '$dir/spike_off/model_00000201.bin'"
check "no -sl/-sg: identical up to step 200" cmp "$dir/spike_off/model_00000200.bin" "$dir/spike_sl/model_00000200.bin"
check "z-scores: none before 16 values, then against the window's own deviation" ./build/test_model outlier
finish
