#!/usr/bin/env bash
# Runs every test script dev/test/t_*.sh (or those named on the command line), TEST_JOBS at a time
# (default: the number of cores), each started in name order as a slot frees. A test script passes
# when it exits 0; its output is kept in build/test-logs/<name>.log and shown when it fails. Each
# test prints its line as it ends; the last line is the plain "N passed, N failed" that CI reads.
# Tests share the machine: none may depend on having it alone, or write where another writes
# (each keeps its files under build/test/<name>/ or a mktemp directory). Files that several tests
# read and the first would make (the packaged corpus) are made here first, one maker at a time.
set -u
# wait -n -p (below) came with bash 5.1.
((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 501)) || { echo "run_all.sh: needs bash 5.1 or later" >&2; exit 2; }
cd "$(dirname "$0")/../.."
mkdir -p build/test-logs
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=(dev/test/t_*.sh)
jobs=${TEST_JOBS:-$(nproc)}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "run_all.sh: TEST_JOBS=$jobs: expected a positive integer" >&2; exit 2; }
# OpenMP's threads wait for work by sleeping, not spinning: two tests' spinning threads on the same
# cores take turns at the scheduler's pace (a 0.3 s test took 4.6 s beside another).
[ "$jobs" -gt 1 ] && export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
bash dev/data/nlpcorpus.sh > build/test-logs/nlpcorpus.log 2>&1 ||
    echo "run_all.sh: dev/data/nlpcorpus.sh failed (build/test-logs/nlpcorpus.log); the tests that read the corpus will fail"
passed=0; failed=0; failed_names=()
declare -A name_of=() start_of=()
# Waits for one running test to end and reports it.
finish_one() {
    local pid rc=0 name secs
    wait -n -p pid || rc=$?
    name=${name_of[$pid]}
    secs=$(awk -v a="${start_of[$pid]}" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
    if [ $rc = 0 ]; then
        passed=$((passed + 1))
        printf '%-4s %-40s %7.1fs\n' PASS "$name" "$secs"
    else
        failed=$((failed + 1)); failed_names+=("$name")
        printf '%-4s %-40s %7.1fs\n' FAIL "$name" "$secs"
        sed 's/^/    | /' "build/test-logs/$name.log" | tail -n 40
    fi
    unset "name_of[$pid]"
}
for t in "${tests[@]}"; do
    [ ${#name_of[@]} -lt "$jobs" ] || finish_one
    name=$(basename "$t" .sh)
    bash "$t" > "build/test-logs/$name.log" 2>&1 &
    name_of[$!]=$name start_of[$!]=$(date +%s.%N)
done
while [ ${#name_of[@]} -gt 0 ]; do finish_one; done
[ $failed -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
