#!/usr/bin/env bash
# A full disk loses no checkpoint. Checkpoints every 2 steps of a 6-step run; the disk "fills"
# after the step-2 checkpoint: injected by LLMC_TEST_FAIL_WRITE_AFTER_BYTES (llmc/fileio.h) so
# that the model file of step 4 fails, or the state file of step 4 fails after its model was
# written; and, where user namespaces allow it, a real tmpfs of 1.7 checkpoints. Each time:
#   - the warning names the failed checkpoint and its first failure ("cannot write" and the
#     system's reason), and says the newest complete one is step 2;
#   - step 2's files are bit-identical to a fault-free run's, and no partial file of a failed
#     step remains (neither a temporary nor a complete model without its state);
#   - with -nf 0 training goes on to the end with the fault-free run's losses (exit 0); with
#     -nf 1 it stops with exit 1 after step 4; either way -y 1 then resumes from step 2.
# About 4 s.
cd "$(dirname "$0")/../.."
source dev/test/fault/common.sh
fault_setup disk_full
args=("${tiny[@]}" -x 6 -n 2)
./train_gpt "${args[@]}" -o "$dir/ref" > /dev/null
model_bytes=$(stat -c %s "$dir/ref/model_00000002.bin")
state_bytes=$(stat -c %s "$dir/ref/state_00000002_00000.bin")
# Bytes that pass through atomic_write for one checkpoint: model, its header patched with the
# checksum (1024 more), state.
ckpt_bytes=$((model_bytes + 1024 + state_bytes))

# expect_survived RUN_DIR CASE POLICY: the checks above for a run whose later checkpoints failed.
expect_survived() {
    local run=$1 case=$2 policy=$3
    check "$case: warns that step 4 was not written" grep -q "checkpoint at step 4 not written: cannot write (No space left on device)" "$run.err"
    check "$case: says step 2 is still the newest complete" grep -q "the newest complete checkpoint is still step 2" "$run.err"
    check "$case: step-2 model intact" cmp "$dir/ref/model_00000002.bin" "$run/model_00000002.bin"
    check "$case: step-2 state intact" cmp "$dir/ref/state_00000002_00000.bin" "$run/state_00000002_00000.bin"
    check "$case: only step 2's files remain" test "$(ls "$run" | grep -v main.log | tr '\n' ' ')" = \
        "DONE_00000002 model_00000002.bin state_00000002_00000.bin "
    if [ "$policy" = 0 ]; then
        check "$case: training went on with the same losses (-nf 0)" cmp "$dir/ref/main.log" "$run/main.log"
    else
        check "$case: stopped after step 4 (-nf 1)" test "$(losses "$run/main.log" | tail -1 | cut -d' ' -f1)" = s:4
        check "$case: says why it stopped" grep -q "stopping: the checkpoint at step 4 could not be written (-nf 1)" "$run.err"
    fi
    ./train_gpt "${args[@]}" -o "$run" -y 1 > "$run.resume" 2>&1
    check "$case: -y 1 resumes from step 2" grep -q "resumed from step 2 of" "$run.resume"
}

for policy in 0 1; do
    for where in model state; do
        case=$where-fails-nf$policy
        run=$dir/$case
        if [ $where = model ]; then limit=$((ckpt_bytes + model_bytes / 2)); else limit=$((ckpt_bytes + model_bytes + 1024 + state_bytes / 2)); fi
        LLMC_TEST_FAIL_WRITE_AFTER_BYTES=$limit ./train_gpt "${args[@]}" -nf $policy -o "$run" > "$run.out" 2> "$run.err"
        rc=$?
        check "$case: exit $policy (got $rc)" test $rc -eq $policy
        expect_survived "$run" "$case" $policy
    done
done

# A file-size limit (ulimit -f) between the model's and the state's sizes: every state write
# fails with EFBIG (SIGXFSZ, which killed the run without a word, is ignored), each checkpoint
# is reported and its model removed, and training goes on to the end with the same losses.
run=$dir/ulimit
limit_kib=$(((model_bytes + state_bytes) / 2 / 1024))
(ulimit -f $limit_kib && ./train_gpt "${args[@]}" -o "$run" > "$run.out" 2> "$run.err")
rc=$?
check "ulimit -f $limit_kib: exit 0 (got $rc)" test $rc -eq 0
check "ulimit -f: warns that step 2 was not written" grep -q "checkpoint at step 2 not written: cannot write (File too large)" "$run.err"
check "ulimit -f: no checkpoint file remains" test "$(ls "$run")" = main.log
check "ulimit -f: training went on with the same losses" cmp "$dir/ref/main.log" "$run/main.log"

# A new run into a directory holding another run's complete checkpoints (seed 2) is refused:
# -nk would keep the other run's higher steps and delete this run's, and -y 1 would resume
# theirs. The other run's files stay as they were, even a temporary it may still be writing.
run=$dir/other
./train_gpt "${args[@]}" --seed 2 -o "$run" > /dev/null
echo "in flight" > "$run/model_00000008.bin.tmp.99999"  # as if that run were writing step 8
before=$(cd "$run" && md5sum ./* | sort)
./train_gpt "${args[@]}" -nk 1 -o "$run" > "$run.out" 2> "$run.err"
rc=$?
check "another run's directory: exit 1 (got $rc)" test $rc -eq 1
check "another run's directory: says why, naming its newest step" grep -q \
    "error: '$run' holds the checkpoints of an earlier run (the newest at step 6): resume it with -y 1" "$run.err"
check "another run's directory: its files untouched" test "$(cd "$run" && md5sum ./* | sort)" = "$before"

# A log that cannot be written (main.log a link to /dev/full, which fails every write with
# ENOSPC): the run goes on to the end and warns once, naming the log.
run=$dir/log_full
mkdir -p "$run" && ln -s /dev/full "$run/main.log"
./train_gpt "${args[@]}" -n 0 -o "$run" > "$run.out" 2> "$run.err"
rc=$?
check "unwritable main.log: exit 0 (got $rc)" test $rc -eq 0
check "unwritable main.log: warns once, naming it" test "$(grep -c "warning: cannot write the log '$run/main.log': No space left on device" "$run.err")" = 1
check "unwritable main.log: trained to the end" grep -q "step     6/6" "$run.out"
# Resumes whose log cannot be rewritten to the resumed step: main.log not a regular file (it
# read /dev/full's endless zeros and never started), and a rewrite that fails (its temporary
# name taken by a directory, as a full disk fails it): a warning, no log, training to the end.
./train_gpt "${args[@]}" -x 2 -n 2 -o "$dir/log_dev" > /dev/null
ln -sf /dev/full "$dir/log_dev/main.log"
timeout -k 5 30 ./train_gpt "${args[@]}" -o "$dir/log_dev" -y 1 > "$dir/log_dev.out" 2> "$dir/log_dev.err"
rc=$?
check "resume, main.log -> /dev/full: exit 0 (got $rc)" test $rc -eq 0
check "resume, main.log -> /dev/full: trained to the end" grep -q "step     6/6" "$dir/log_dev.out"
run=$dir/log_stuck
./train_gpt "${args[@]}" -x 2 -n 2 -o "$run" > /dev/null
cp "$run/main.log" "$run.log_before" && mkdir "$run/main.log.tmp"
./train_gpt "${args[@]}" -o "$run" -y 1 > "$run.out" 2> "$run.err"
rc=$?
check "resume, log not rewritable: exit 0 (got $rc)" test $rc -eq 0
check "resume, log not rewritable: warns" grep -q "warning: cannot rewrite the log '$run/main.log' for the resume: .*this run writes no log" "$run.err"
check "resume, log not rewritable: trained to the end" grep -q "step     6/6" "$run.out"
check "resume, log not rewritable: the log left as it was" cmp "$run.log_before" "$run/main.log"

# A real full disk: a tmpfs of 1.7 checkpoints (two models and one and a half states) in a private mount namespace (unshare -rm needs
# unprivileged user namespaces). Step 4's model fits, its state does not.
if unshare -rm true 2> /dev/null; then
    run=$dir/tmpfs
    mkdir -p "$run"
    kib=$(((2 * model_bytes + 3 * state_bytes / 2) / 1024))
    unshare -rm bash -c "mount -t tmpfs -o size=${kib}k tmpfs '$run' && ./train_gpt ${args[*]@Q} -o '$run' > '$run.out' 2> '$run.err'; \
        rc=\$?; cp -a '$run' '$run.saved'; exit \$rc"
    rc=$?
    rm -rf "$run" && mv "$run.saved" "$run"
    check "tmpfs of $kib KiB: exit 0 (got $rc)" test $rc -eq 0
    expect_survived "$run" "tmpfs" 0
else
    echo "note: unshare -rm is not permitted here: the real-tmpfs case was not run (the injected cases were)"
fi
finish
