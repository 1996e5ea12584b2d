#!/usr/bin/env bash
# `make test-sanitize`: the whole test suite, once, with the trainer (and the data preparation
# tool) built with AddressSanitizer and UndefinedBehaviorSanitizer. The test scripts call
# ./train_gpt from the repository root, so they run in a shadow root, build/sanitize-root, whose
# entries link to the repository's, except ./train_gpt -> build/san/train_gpt and ./prepare_data
# -> build/san/prepare_data. build/ is shared, so the scripts find the other programs and write
# their files and logs (build/test-logs/) where they always do. A sanitizer report makes the
# reporting program exit non-zero (UBSan does not recover: -fno-sanitize-recover), which fails
# the test that ran it.
set -eu
cd "$(dirname "$0")/../../.."
repo=$(pwd)
root=build/sanitize-root
rm -rf "$root" && mkdir -p "$root"
for entry in * .[!.]*; do
    [ -e "$entry" ] || continue
    case "$entry" in train_gpt | prepare_data) continue ;; esac
    ln -s "$repo/$entry" "$root/$entry"
done
for program in train_gpt prepare_data; do
    [ -x "build/san/$program" ] || { echo "error: build/san/$program is missing: run make test-sanitize" >&2; exit 1; }
    ln -s "$repo/build/san/$program" "$root/$program"
done
ASAN_OPTIONS=help=1 "$root/train_gpt" -h 2>&1 | grep -q "Available flags for AddressSanitizer" ||
    { echo "error: $root/train_gpt is not an AddressSanitizer build" >&2; exit 1; }
# Leaks at exit are not what this run looks for (die() exits without freeing, by design).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
echo "the test suite under AddressSanitizer and UndefinedBehaviorSanitizer (./train_gpt = build/san/train_gpt)"
exec bash "$root/dev/test/run_all.sh" "$@"
