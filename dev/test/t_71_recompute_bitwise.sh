#!/usr/bin/env bash
# Every recompute policy and a mixed per-layer list give bit-identical gradients, losses and
# weights to keeping everything, and allocate exactly the predicted activation memory.
set -eu
cd "$(dirname "$0")/../.."
for seed in 3 4; do OMP_NUM_THREADS=2 ./build/test_model recompute $seed; done
# The trainer's flags: a plan is printed, bad values exit 2.
out=$(./train_gpt --bench -e L4C64NH4 --vocab-size 512 --max-seq-len 32 -b 2 -t 32 -x 2 --recompute 0-1:block,2-3:gelu)
echo "$out" | grep -q "^recompute: 0-1:block,2-3:gelu | predicted activations"
out=$(./train_gpt --bench -e L4C64NH4 --vocab-size 512 --max-seq-len 32 -b 2 -t 32 -x 2 --mem-budget 0.0012)
echo "$out" | grep "^recompute:"
set +e
./train_gpt -e L4C64NH4 -r fast 2>&1 | grep -q "is not a policy"; a=$?
./train_gpt -e L4C64NH4 --recompute 0-2:block 2>&1 | grep -q "layer 3 has no policy"; b=$?
./train_gpt -e L4C64NH4 --vocab-size 512 --max-seq-len 32 -b 2 -t 32 --mem-budget 0.000001 2>&1 | grep -q "cannot hold"; c=$?
./train_gpt -e L4C64NH4 -r gelu --mem-budget 1 2>&1 | grep -q "at most one"; d=$?
[ $a -eq 0 ] && [ $b -eq 0 ] && [ $c -eq 0 ] && [ $d -eq 0 ] && echo "ok   bad recompute flags are refused"
