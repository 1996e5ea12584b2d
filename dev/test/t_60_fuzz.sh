#!/usr/bin/env bash
# The parser fuzz targets (dev/fuzz/, built by mk/fuzz.mk with libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer) each run a fixed number of inputs with a fixed seed, from fresh
# seed corpora: checkpoint and training-state files, token shards, the tokenizer's vocabulary
# files, command lines. Any crash, sanitizer report or leak of the harness fails. About 15 s.
# `make fuzz` runs the same targets for a fixed time instead.
set -u
cd "$(dirname "$0")/../.."
bash dev/test/fault/fuzz_seeds.sh || { echo "FAIL: cannot make the seed corpora"; exit 1; }
rc=0
seed=601
# Inputs per target: the vocabulary loader compiles a regex per input, so it gets fewer.
for target in fuzz_checkpoint:20000 fuzz_state:20000 fuzz_shard:20000 fuzz_args:20000 fuzz_tokenizer_files:5000; do
    FUZZ_SCRATCH=build/test/fuzz bash dev/test/fault/run_fuzz.sh -runs=${target#*:} -seed=$seed -- "build/fuzz/${target%:*}" || rc=1
    seed=$((seed + 1))
done
exit $rc
