#!/usr/bin/env bash
# Finite-difference check of every parameter tensor's gradient on tiny random models (3 seeds),
# the GELU and its derivative against their fp64 formulas, the statistics of GPT-2's
# initialization (test_model init), and the shapes and parameter counts of d12-d48 against
# GPT-2's published ones and the vocabulary's padding to a multiple of 128 (test_model sizes).
set -eu
cd "$(dirname "$0")/../.."
for seed in 5 6 7; do OMP_NUM_THREADS=2 ./build/test_model fd $seed; done
OMP_NUM_THREADS=2 ./build/test_model gelu 11
OMP_NUM_THREADS=2 ./build/test_model init 21
./build/test_model sizes
