#!/usr/bin/env bash
# Recomputation on the GPU: for d12 (B 16) and d48 (B 4) at T 1024, every uniform policy's
# activation memory (kept, as allocated, beside the plan's prediction; the shared recompute
# scratch; the device memory in use, cudaMemGetInfo after the run, which is the peak since
# train_gptcu allocates everything up front) and its speed (median step of --bench), as a table;
# then --mem-budget plans beside the fastest uniform policy that fits the same budget (the
# planner must be no slower: a row more than 2% slower, beyond run-to-run noise, says SLOWER).
# Every level runs the output head in chunks of 8192 rows (llmc/trainer.h's default); POLICY/ROWS
# runs it in chunks of ROWS ("all": one chunk). At d12 (16384 rows) "none/all" prices the chunks,
# and none/4096 and block/4096 price a smaller chunk, whose logits are most of what block's
# activations allocate beside the kept ones. "activations MiB" is all of them as allocated (kept,
# the head's chunk of logits and, sharing its memory, the backward's buffers and the recompute
# scratch); "x less" divides none's figures (8192 rows) by the row's.
# Usage: dev/bench/bench_recompute_gpu.sh [path to train_gptcu [d12|d48 ...]]   (default ./train_gptcu,
# both models; d48's 8 runs take about 6 minutes on an H100, so a GPU session runs one per call)
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-./train_gptcu}
models=" ${*:2} "; [ "$models" = "  " ] && models=" d12 d48 "
for m in $models; do [[ $m == d12 || $m == d48 ]] || { echo "bench_recompute_gpu.sh: no model '$m' (d12, d48)" >&2; exit 2; }; done
wanted() { [[ $models == *" $1 "* ]]; }  # wanted MODEL
steps=${RECOMPUTE_BENCH_STEPS:-8}
fail=0  # a run that fails, or kept activations that differ from the prediction, fail the script
printf '| model | B | policy | head rows | kept MiB | predicted MiB | scratch MiB | activations MiB | kept x less | activations x less | device MiB | step ms | tokens/s | time vs none |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
ratio() { awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { if (b > 0) printf f, a / b; else print "-" }'; }  # ratio A B FORMAT
declare -A kept_of ms_of  # "model level" -> kept MiB, step ms (the uniform levels, for the budget rows)
for run in "d12 16" "d48 4"; do
    set -- $run
    model=$1 B=$2 base="" base_kept="" base_all=""
    wanted "$model" || continue
    for level in none none/all gelu norm attn mlp block none/4096 block/4096; do
        policy=${level%/*} rows=8192
        [[ $level == */* ]] && rows=${level#*/}
        [[ $rows == all ]] && rows=$((B * 1024))
        [[ $level == */* && $((B * 1024)) -le 8192 ]] && continue  # 8192 rows or fewer in all: not a chunk size of its own
        out=$("$bin" --bench -e "$model" -b "$B" -t 1024 -x "$steps" -r "$policy" --head-chunk "$rows" 2>&1)
        if [ $? -ne 0 ]; then
            printf '| %s | %s | %s | %s | FAIL: %s |\n' "$model" "$B" "$policy" "$rows" "$(echo "$out" | tail -n 1)"
            fail=1
            continue
        fi
        # "activations: kept X MiB (predicted Y MiB), recompute scratch Z MiB, output head ..."
        read -r kept predicted scratch < <(echo "$out" | awk '/^activations: kept/ {gsub(/[(),]/, ""); print $3, $6, $10}')
        # "memory per rank (...): params ... MiB (bf16), ..., activations A MiB"
        all=$(echo "$out" | awk '/^memory per rank/ {print $(NF - 1)}')
        rows=$(echo "$out" | sed -n 's/^activations: .*output head \([0-9]*\) rows at a time.*/\1/p')
        device=$(echo "$out" | awk '/^device memory in use:/ {print $5}')
        ms=$(echo "$out" | awk '/^bench_median_step_ms/ {print $2}')
        tps=$(echo "$out" | awk '/^bench_tokens_per_s/ {print $2}')
        [[ $level == */* ]] || kept_of["$model $level"]=$kept ms_of["$model $level"]=$ms  # the default chunk, for the budget rows
        [ -z "$base" ] && base=$ms base_kept=$kept base_all=$all
        [ "$kept" = "$predicted" ] || { kept="$kept (FAIL: not the prediction)"; fail=1; }
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$model" "$B" "$policy" "$rows" \
            "$kept" "$predicted" "$scratch" "$all" "$(ratio "$base_kept" "${kept%% *}" %.1fx)" "$(ratio "$base_all" "$all" %.1fx)" \
            "$device" "$ms" "$tps" "$(ratio "$ms" "$base" %.2fx)"
    done
done
printf '\n| model | B | --mem-budget GiB | plan | kept MiB | step ms | fastest uniform level that fits | its ms | plan vs it |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for run in "d12 16 4" "d48 4 6" "d48 4 3"; do
    set -- $run
    model=$1 B=$2 budget=$3
    wanted "$model" || continue
    out=$("$bin" --bench -e "$model" -b "$B" -t 1024 -x "$steps" --mem-budget "$budget" 2>&1)
    if [ $? -ne 0 ]; then
        printf '| %s | %s | %s | FAIL: %s |\n' "$model" "$B" "$budget" "$(echo "$out" | tail -n 1)"
        fail=1
        continue
    fi
    plan=$(echo "$out" | awk -F' [|] ' '/^recompute: / {sub(/^recompute: /, "", $1); print $1}')
    kept=$(echo "$out" | awk '/^activations: kept/ {print $3}')
    ms=$(echo "$out" | awk '/^bench_median_step_ms/ {print $2}')
    best="" best_ms=""
    for level in none gelu norm attn mlp block; do
        k=${kept_of["$model $level"]:-} m=${ms_of["$model $level"]:-}
        [ -n "$k" ] && [ -n "$m" ] && awk -v k="$k" -v b="$budget" 'BEGIN { exit !(k + 0 <= b * 1024) }' || continue
        if [ -z "$best_ms" ] || awk -v a="$m" -v b="$best_ms" 'BEGIN { exit !(a + 0 < b + 0) }'; then best=$level best_ms=$m; fi
    done
    verdict=$(awk -v a="$ms" -v b="$best_ms" 'BEGIN { if (b > 0) printf "%.3fx%s", a / b, (a > 1.02 * b ? " SLOWER" : ""); else print "-" }')
    awk -v k="$kept" -v b="$budget" 'BEGIN { exit !(k + 0 <= b * 1024) }' || { kept="$kept (FAIL: over the budget)"; fail=1; }
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$model" "$B" "$budget" "$plan" "$kept" "$ms" \
        "${best:--}" "${best_ms:--}" "$verdict"
done
exit $fail
