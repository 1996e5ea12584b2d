#!/usr/bin/env bash
# The GPU suite, one command on a GPU machine that can build the programs (about 8 minutes on an
# H100). Not for the device tool's machines: they lack the libraries the build links (json-c,
# pcre2, OpenBLAS, MPI) and return only $OUT, so there scripts/gpu_bundle.sh builds here and
# scripts/gpu_run_bundle.sh runs there.
#   1. builds every CUDA target for sm_90 (NVCC_ARCH overrides) with warnings as errors
#   2. make test-gpu: test_gptcu (small odd config, d12), the kernel harnesses, the attention
#      harness, compute-sanitizer memcheck, racecheck and initcheck on test_gptcu's tiny config
#   3. benchmarks: train_gptcu --bench at d12 T=1024 (micro-batch B_D12, default 32), d24, d36,
#      d48 (B_D48, default 8), with tokens/s and MFU; and PyTorch on the same GPU (bf16 autocast,
#      torch.compile, F.scaled_dot_product_attention) at d12 when torch with CUDA is importable
#   4. low-precision block matmuls: tokens/s of --matmul fp8 and int8 beside bf16 (step 3's runs)
#      at d12, d24, d36, d48, T=1024; and the loss curves of CURVE_STEPS (default 1000) d12 steps
#      in bf16, fp8 and int8 on the nlp-corpus shards (dev/data/nlpcorpus.sh; TRAIN_DATA and
#      VAL_DATA override), written to dev/gpu_report_curves.csv and, when /usr/bin/python3 has
#      matplotlib, plotted to dev/gpu_report_curves.png
#   5. appends a dated section (date, commit, device, results) to dev/gpu_report.md
# Exits non-zero when any check failed; the report says which step.
set -u
cd "$(dirname "$0")/.."
ARCH=${NVCC_ARCH:-sm_90}
B_D12=${B_D12:-32}
B_D48=${B_D48:-8}  # fits 80 GB (scripts/run_gpt2.sh's cap); 16 fits an H200
LOG=build/gpu_suite
mkdir -p "$LOG"
status=0
declare -A result

step() {  # step NAME COMMAND...: runs it, logs to $LOG/NAME.log, records PASS/FAIL
    local name=$1; shift
    echo "== $name: $*"
    if "$@" >"$LOG/$name.log" 2>&1; then result[$name]=PASS; else result[$name]=FAIL; status=1; fi
    tail -n 5 "$LOG/$name.log"
}

step build make -j8 NVCC_ARCH="$ARCH" train_gptcu test_gptcu cuda
step test_gpu make NVCC_ARCH="$ARCH" test-gpu

# Training throughput: train_gptcu prints mfu_flops_per_token and mfu_peak_flops at startup and
# bench_tokens_per_s (median step) at the end; MFU = tokens/s * FLOPs per token / peak.
bench_row() {  # bench_row MODEL B
    local out="$LOG/bench_$1.log"
    if ./train_gptcu -e "$1" -b "$2" -t 1024 --bench -x 12 >"$out" 2>&1; then
        awk -v m="$1" -v b="$2" '/^mfu_flops_per_token/ {f=$2} /^mfu_peak_flops/ {p=$2} /^bench_tokens_per_s/ {t=$2}
            END { if (t == "") { print "| " m " | " b " | failed | |"; exit }
                  printf "| %s | %d | %.0f | %s |\n", m, b, t, p > 0 ? sprintf("%.1f%%", 100 * t * f / p) : "peak unknown" }' "$out"
    else
        echo "| $1 | $2 | failed: $(tail -n 1 "$out") | |"
    fi
}
echo "== benchmarks"
bench_table="| model | B | tokens/s | MFU |
|---|---|---|---|"
for spec in "d12 $B_D12" "d24 16" "d36 8" "d48 $B_D48"; do
    row=$(bench_row $spec); echo "$row"; bench_table+=$'\n'"$row"
done

# Low-precision block matmuls beside bf16 at the same model and micro-batch.
tokens_per_s() { awk '/^bench_tokens_per_s/ {print $2}' "$1" 2>/dev/null; }
echo "== low-precision benchmarks"
lowp_table="| model | B | bf16 tokens/s | fp8 tokens/s (vs bf16) | int8 tokens/s (vs bf16) |
|---|---|---|---|---|"
for spec in "d12 $B_D12" "d24 16" "d36 8" "d48 $B_D48"; do
    set -- $spec
    bf=$(tokens_per_s "$LOG/bench_$1.log")
    row="| $1 | $2 | ${bf:-failed} |"
    for m in fp8 int8; do
        ./train_gptcu -e "$1" -b "$2" -t 1024 --bench -x 12 --matmul $m >"$LOG/bench_$1_$m.log" 2>&1
        t=$(tokens_per_s "$LOG/bench_$1_$m.log")
        if [ -z "$t" ]; then row+=" failed: $(tail -n 1 "$LOG/bench_$1_$m.log") |"; status=1
        elif [ -n "$bf" ]; then row+=$(awk -v t="$t" -v b="$bf" 'BEGIN { printf " %.0f (%.2fx) |", t, t / b }')
        else row+=" $t |"; fi
    done
    echo "$row"; lowp_table+=$'\n'"$row"
done

# Loss curves: the same d12 run in each precision; the training loss of every step.
TRAIN_DATA=${TRAIN_DATA:-data/nlpcorpus/nlpcorpus_train_*.bin}
VAL_DATA=${VAL_DATA:-data/nlpcorpus/nlpcorpus_val_*.bin}
echo "== loss curves: d12, ${CURVE_STEPS:-1000} steps, bf16 / fp8 / int8"
if curve_line=$(bash dev/bench/loss_curves.sh ./train_gptcu "$TRAIN_DATA" "$VAL_DATA" "$LOG/curves" "${CURVE_STEPS:-1000}"); then
    result[curves]=PASS
else
    result[curves]=FAIL; status=1
fi
for f in csv png; do [ -f "$LOG/curves.$f" ] && cp "$LOG/curves.$f" "dev/gpu_report_curves.$f"; done
echo "$curve_line"

# PyTorch baseline: GPT-2 of the same shape, bf16 autocast, torch.compile, SDPA (causal), AdamW.
torch_line="PyTorch baseline: not run (no python3 with CUDA-enabled torch)"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    torch_line=$(B="$B_D12" timeout -k 10 300 python3 dev/bench/torch_gpu_baseline.py 2>"$LOG/torch.log" ||
                 echo "PyTorch baseline: failed (see $LOG/torch.log)")
fi
echo "$torch_line"

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain 2>/dev/null | grep -q . && echo " (with uncommitted changes)")
device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
{
    echo
    echo "## $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit$dirty, ${device:-unknown device}"
    echo
    echo "| step | result |"
    echo "|---|---|"
    for name in build test_gpu; do echo "| $name | ${result[$name]:-not run} |"; done
    echo "| loss curves | ${result[curves]} |"
    echo
    echo "$bench_table"
    echo
    echo "Block matmuls in low precision (same runs' settings, --bench, T=1024):"
    echo
    echo "$lowp_table"
    echo
    echo "$curve_line"
    echo
    echo "$torch_line"
} >>dev/gpu_report.md
echo "appended to dev/gpu_report.md; logs in $LOG"
exit $status
