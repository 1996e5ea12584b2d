#!/usr/bin/env bash
# A rank that dies or hangs must end the whole run with a non-zero status within the
# collective timeout (LLMC_COMM_TIMEOUT, here 5 s), never hang it. Three ranks train at ZeRO-3
# (a collective per segment, so the others are always about to wait on the victim):
#   killed:  rank 1 gets SIGKILL mid-run; mpirun must exit non-zero;
#   hung:    rank 1 gets SIGSTOP mid-run (alive but silent); the others must give up with the
#            one-line "did not complete within 5 s" error and mpirun exit non-zero.
# Each case must end within 5 s + 15 s of slack. And a bad flag is reported by one rank, not
# by each, as are ranks that disagree on their arguments, model file or shards. About 20 s.
set -eu
cd "$(dirname "$0")/../.."
source dev/test/zero/common.sh
dir=build/test/zero_failure
rm -rf "$dir" && mkdir -p "$dir"
export LLMC_COMM_TIMEOUT=5
limit=20

# Whatever happens, the processes this test started do not outlive it.
launcher="" victim=""
stop_run() {
    [ -n "$victim" ] && kill -KILL "$victim" 2>/dev/null
    [ -n "$launcher" ] && kill -TERM "$launcher" 2>/dev/null && sleep 1 && kill -KILL "$launcher" 2>/dev/null
    return 0
}
trap stop_run EXIT

run_case() {  # run_case NAME SIGNAL
    local name=$1 signal=$2
    "${mpirun_cmd[@]}" -np 3 ./train_gpt "${model[@]}" --bench -x 1000000 -z 3 > "$dir/$name.out" 2> "$dir/$name.err" &
    launcher=$!
    for _ in $(seq 300); do grep -q "^step *3/" "$dir/$name.out" && break; sleep 0.1; done
    grep -q "^step *3/" "$dir/$name.out" || { echo "FAIL: $name: training did not start"; return 1; }
    # The ranks are mpirun's train_gpt children; rank order is start order.
    victim=$(ps -o pid=,comm= --ppid $launcher | awk '$2 == "train_gpt" { print $1 }' | sort -n | sed -n 2p)
    [ -n "$victim" ] || { echo "FAIL: $name: no rank process found under mpirun (pid $launcher)"; return 1; }
    kill -"$signal" "$victim"
    local start=$SECONDS
    while kill -0 $launcher 2>/dev/null && [ $((SECONDS - start)) -lt $limit ]; do sleep 0.2; done
    if kill -0 $launcher 2>/dev/null; then
        echo "FAIL: $name: the run still goes on $limit s after SIG$signal to rank pid $victim"
        return 1
    fi
    local rc=0
    wait $launcher || rc=$?
    echo "$name: SIG$signal to pid $victim: mpirun exited with status $rc after $((SECONDS - start)) s"
    head -3 "$dir/$name.err" | sed 's/^/    /'
    kill -KILL "$victim" 2>/dev/null || true
    launcher="" victim=""
    test $rc -ne 0
}

# A bad flag, found before MPI starts (-b 0) and after (-d not a multiple of B*T*ranks): every
# rank finds it, rank 0 reports it and the launcher ends the others (which would say theirs
# only after a 10 s pause).
for bad in "-b 0" "-d 100"; do
    rc=0 start=$SECONDS
    # shellcheck disable=SC2086
    "${mpirun_cmd[@]}" -np 3 ./train_gpt "${model[@]}" $bad > "$dir/flag.out" 2> "$dir/flag.err" || rc=$?
    test "$(grep -c "^train_gpt: -[bd] (--" "$dir/flag.err")" = 1 ||
        { echo "FAIL: a bad flag ($bad) under mpirun -np 3 is not reported exactly once:"; cat "$dir/flag.err"; exit 1; }
    test $rc -ne 0 || { echo "FAIL: a bad flag ($bad) under mpirun exited 0"; exit 1; }
    test $((SECONDS - start)) -lt 8 || { echo "FAIL: a bad flag ($bad) under mpirun took $((SECONDS - start)) s"; exit 1; }
    echo "bad flag $bad under mpirun: reported once, exit $rc after $((SECONDS - start)) s"
done

# Ranks started with other arguments (an MPMD launch), or reading other model files under one
# name (node-local copies; here each rank's own working directory): a rank with another -l would
# train a replica that drifts silently, one with another model would fail in its first collective.
# Rank 0 says so once, and the run exits 2.
expect_disagree() {  # NAME PATTERN, then mpirun's application contexts
    local name=$1 pattern=$2 rc=0; shift 2
    "${mpirun_cmd[@]}" "$@" > "$dir/$name.out" 2> "$dir/$name.err" || rc=$?
    test $rc -eq 2 && test "$(grep -c "$pattern: every rank must run the same command" "$dir/$name.err")" = 1 ||
        { echo "FAIL: $name: exit $rc, stderr:"; cat "$dir/$name.err"; exit 1; }
    echo "ranks that disagree ($name): reported once, exit $rc"
}
differ="1 of 2 ranks were started with other arguments than rank 0's, or read another model file"
expect_disagree "another -l" "$differ" -np 1 ./train_gpt "${model[@]}" --bench -x 2 : -np 1 ./train_gpt "${model[@]}" --bench -x 2 -l 1e-2
expect_disagree "another model" "$differ" -np 1 ./train_gpt "${model[@]}" --bench -x 2 : -np 1 ./train_gpt "${model[@]}" --bench -x 2 -e L1C64NH4
/usr/bin/python3 dev/test/make_shard.py "$dir/data.bin" 4000 512 1 > /dev/null
for seed in 1 2; do
    ./train_gpt "${model[@]}" -i "$dir/data.bin" -x 1 -v 0 -s 0 --seed $seed -o "$dir/ckpt$seed" > /dev/null
    mkdir -p "$dir/node$seed" && cp "$dir/ckpt$seed/model_00000001.bin" "$dir/node$seed/model.bin"
done
from_file=("$PWD/train_gpt" -e model.bin -b 2 -t 32 -i "$PWD/$dir/data.bin" -x 2 -v 0 -s 0)
expect_disagree "another model file" "$differ" -np 1 -wdir "$dir/node1" "${from_file[@]}" : -np 1 -wdir "$dir/node2" "${from_file[@]}"
cp "$dir/node1/model.bin" "$dir/node2/model.bin"
# Shards under one name that differ (here in size) would feed the ranks other data.
/usr/bin/python3 dev/test/make_shard.py "$dir/node1/shard.bin" 4000 512 2 > /dev/null
/usr/bin/python3 dev/test/make_shard.py "$dir/node2/shard.bin" 5000 512 2 > /dev/null
local_data=("$PWD/train_gpt" -e model.bin -b 2 -t 32 -i shard.bin -x 2 -v 0 -s 0)
expect_disagree "other training shards" "1 of 2 ranks see other training shards than rank 0 (their number or sizes)" \
    -np 1 -wdir "$dir/node1" "${local_data[@]}" : -np 1 -wdir "$dir/node2" "${local_data[@]}"
"${mpirun_cmd[@]}" -np 1 -wdir "$dir/node1" "${from_file[@]}" : -np 1 -wdir "$dir/node2" "${from_file[@]}" > "$dir/same.out" 2>&1 ||
    { echo "FAIL: ranks with equal model files under one name do not train:"; tail -3 "$dir/same.out"; exit 1; }

run_case killed KILL
run_case hung STOP
grep -q "did not complete within 5 s (LLMC_COMM_TIMEOUT): another rank has died or hangs" "$dir/hung.err"
echo "zero failure: a killed and a hung rank both end the run with an error"
