#!/usr/bin/env bash
# `make test-sanitize`: the test suite (less the tests it would only repeat, below), once, with
# the trainer (and the data preparation tool) built with AddressSanitizer and
# UndefinedBehaviorSanitizer. The test scripts call ./train_gpt from the repository root, so they
# run in a shadow root, build/sanitize-root, whose entries link to the repository's, except
# ./train_gpt -> build/san/train_gpt and ./prepare_data -> build/san/prepare_data. build/ is
# shared, so the scripts find the other programs and write their files and logs
# (build/test-logs/) where they always do. A sanitizer report makes the reporting program exit
# non-zero (UBSan does not recover: -fno-sanitize-recover), which fails the test that ran it.
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
# Every symbol bound at load time, not at its first call: once (2026-11-27, CI) a rank of an MPI
# test died in the dynamic linker (SEGV in do_lookup_x) while ASan set up a new OpenMPI thread: a
# lazy binding, most likely racing with MPI_Init loading and unloading its components (430 runs by
# hand did not reproduce it). With LD_BIND_NOW the new thread makes no lazy lookup; startup is no slower
# measurably (python3 importing torch: the same 1.3-1.9 s).
export LD_BIND_NOW=1
echo "the test suite under AddressSanitizer and UndefinedBehaviorSanitizer (./train_gpt = build/san/train_gpt)"
# Without arguments, every test but those whose second run would repeat the first bit for bit:
# they run neither ./train_gpt nor ./prepare_data (t_45 only to write a checkpoint), and their own
# programs are the same here (the fuzz targets of t_30, the emulated CUDA of t_44, t_45 and t_46
# and the quantizer tests of t_40 are built with ASan and UBSan, or TSan, already; t_47 runs
# valgrind's builds; the others' are the plain builds of both passes). That saves about 7 of CI's
# minutes.
repeats=(t_02_build_mpi_state t_03_mutation_lists t_05_torch_reference t_10_model_vs_pytorch t_11_finite_differences
         t_30_tokenizer_fuzz t_40_quant_exhaustive t_40_quant_units t_42_kernel_indexing t_42_wgmma_serialization
         t_44_emulated_attention t_45_emulated_trainer t_46_emulated_harnesses t_47_uninitialized_reads
         t_48_zero_overlap t_50_zero_comm t_70_recompute_plan)
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
    for t in dev/test/t_*.sh; do
        name=$(basename "$t" .sh)
        case " ${repeats[*]} " in
            *" $name "*) echo "skipped $name: it would run what the first pass ran" ;;
            *) tests+=("$t") ;;
        esac
    done
fi
exec bash "$root/dev/test/run_all.sh" "${tests[@]}"
