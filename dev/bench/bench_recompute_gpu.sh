#!/usr/bin/env bash
# Recomputation on the GPU: for d12 (B 16) and d48 (B 4) at T 1024, every uniform policy's
# activation memory (kept, as allocated, beside the plan's prediction; the shared recompute
# scratch; the device memory in use, cudaMemGetInfo after the run, which is the peak since
# train_gptcu allocates everything up front) and its speed (median step of --bench), as a table.
# Usage: dev/bench/bench_recompute_gpu.sh [path to train_gptcu]   (default ./train_gptcu)
# UNVERIFIED: written without a GPU; scripts/gpu_run_bundle.sh runs it.
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-./train_gptcu}
steps=${RECOMPUTE_BENCH_STEPS:-8}
fail=0  # a run that fails, or kept activations that differ from the prediction, fail the script
printf '| model | B | policy | kept MiB | predicted MiB | scratch MiB | device MiB | step ms | tokens/s | time vs none |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for run in "d12 16" "d48 4"; do
    set -- $run
    model=$1 B=$2 base=""
    for level in none gelu norm attn mlp block; do
        out=$("$bin" --bench -e "$model" -b "$B" -t 1024 -x "$steps" -r "$level" 2>&1)
        if [ $? -ne 0 ]; then
            printf '| %s | %s | %s | FAIL: %s |\n' "$model" "$B" "$level" "$(echo "$out" | tail -n 1)"
            fail=1
            continue
        fi
        # "activations: kept X MiB (predicted Y MiB), recompute scratch Z MiB"
        read -r kept predicted scratch < <(echo "$out" | awk '/^activations: kept/ {gsub(/[(),]/, ""); print $3, $6, $10}')
        device=$(echo "$out" | awk '/^device memory in use:/ {print $5}')
        ms=$(echo "$out" | awk '/^bench_median_step_ms/ {print $2}')
        tps=$(echo "$out" | awk '/^bench_tokens_per_s/ {print $2}')
        [ "$kept" = "$predicted" ] || { kept="$kept (FAIL: not the prediction)"; fail=1; }
        [ -z "$base" ] && base=$ms
        ratio=$(awk -v a="$ms" -v b="$base" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$model" "$B" "$level" "$kept" "$predicted" \
            "$scratch" "$device" "$ms" "$tps" "$ratio"
    done
done
exit $fail
