#!/usr/bin/env bash
# Runs every test script dev/test/t_*.sh in name order (or those named on the command line).
# A test script passes when it exits 0; its output is kept in build/test-logs/<name>.log and
# shown when it fails. Ends with the plain "N passed, N failed" line that CI reads.
set -u
cd "$(dirname "$0")/../.."
mkdir -p build/test-logs
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=(dev/test/t_*.sh)
passed=0; failed=0; failed_names=()
for t in "${tests[@]}"; do
    name=$(basename "$t" .sh)
    log=build/test-logs/$name.log
    start=$(date +%s.%N)
    if bash "$t" >"$log" 2>&1; then
        status=PASS; passed=$((passed + 1))
    else
        status=FAIL; failed=$((failed + 1)); failed_names+=("$name")
    fi
    secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
    printf '%-4s %-40s %7.1fs\n' "$status" "$name" "$secs"
    if [ "$status" = FAIL ]; then
        sed 's/^/    | /' "$log" | tail -n 40
    fi
done
[ $failed -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
