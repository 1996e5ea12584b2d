#!/usr/bin/env bash
# Recomputation on the CPU: activation memory of every level at d12 and d48 (counted allocation
# beside the cost model's prediction), and the step-time overhead of each level on a small model
# measured side by side (median step of train_gpt --bench).
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s train_gpt build/test_model
./build/test_model memory d12 4 1024
./build/test_model memory d48 1 1024
# The recompute column is --profile's recompute part (ms a step): the overhead itself, steadier on
# a noisy machine than the step times' difference (llmc/recompute.c fits its CPU rates to it).
args=(--bench --profile -e L4C256NH4 --max-seq-len 256 -b 4 -t 256 -x 8)
printf '%-10s %12s %8s %14s\n' level "step ms" "vs none" "recompute ms"
base=""
for level in none gelu norm attn mlp block; do
    out=$(OMP_NUM_THREADS=2 ./train_gpt "${args[@]}" -r "$level")
    ms=$(awk '/^bench_median_step_ms/ {print $2}' <<<"$out")
    recompute=$(awk '$1 == "profile" && $2 == "recompute" {print $3}' <<<"$out")
    [ -z "$base" ] && base=$ms
    printf '%-10s %12s %8s %14s\n' "$level" "$ms" "$(awk -v a="$ms" -v b="$base" 'BEGIN { printf "%.2fx", a / b }')" "$recompute"
done
