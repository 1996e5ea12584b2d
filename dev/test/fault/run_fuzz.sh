#!/usr/bin/env bash
# Runs libFuzzer targets over their corpora and prints one line per target: inputs executed and
# whether it crashed. usage: run_fuzz.sh [LIBFUZZER_OPTION...] -- TARGET...
#   Corpus: build/fuzz/corpus/<target>/ (copied to a scratch corpus when FUZZ_SCRATCH is set, so
#   that a fixed-seed run is repeatable); findings (crashing inputs): build/fuzz/findings/<target>/;
#   logs: build/fuzz/logs/<target>.log. Exits 1 if any target crashed or failed to run.
set -u
cd "$(dirname "$0")/../../.."
options=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do options+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || { echo "usage: $0 [LIBFUZZER_OPTION...] -- TARGET..." >&2; exit 2; }
export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1
# The targets write each input to a file: in memory where possible, not on a busy disk, and in
# a directory of this run's own, removed at the end.
scratch_base=/tmp
[ -w /dev/shm ] && scratch_base=/dev/shm
TMPDIR=$(mktemp -d "$scratch_base/llmc_fuzz.XXXXXX") || exit 1
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
mkdir -p build/fuzz/logs
failed=0
for target in "$@"; do
    name=$(basename "$target")
    corpus=build/fuzz/corpus/$name
    mkdir -p "$corpus" "build/fuzz/findings/$name"
    if [ -n "${FUZZ_SCRATCH:-}" ]; then
        scratch=$FUZZ_SCRATCH/$name
        rm -rf "$scratch" && mkdir -p "$scratch" && cp -r "$corpus/." "$scratch/"
        corpus=$scratch
    fi
    log=build/fuzz/logs/$name.log
    "$target" "${options[@]}" -max_len=65536 -close_fd_mask=3 -print_final_stats=1 \
        -artifact_prefix="build/fuzz/findings/$name/" "$corpus" > "$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    if [ $rc -eq 0 ] && [ -n "$execs" ]; then
        printf 'ok    %-24s %9s inputs, no crash\n' "$name" "$execs"
    else
        printf 'FAIL  %-24s exit %d after %s inputs; log %s:\n' "$name" $rc "${execs:-?}" "$log"
        grep -E "ERROR|SUMMARY|runtime error|Test unit written|#[0-9]+ +(in|0x)" "$log" | head -20 | sed 's/^/      /'
        failed=1
    fi
done
exit $failed
