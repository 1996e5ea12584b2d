#!/usr/bin/env bash
# CPU training throughput of train_gpt beside the PyTorch reference on the same configurations,
# both on 2 threads and measured in the same run, printed as a table with the ratio C / torch.
# PyTorch (Debian's python3-torch) calls whatever libblas.so.3 points to; against the reference
# BLAS it is ~20x slower, so the script refuses to run unless that is OpenBLAS (DESIGN.md section 9).
#   BENCH_STEPS  steps per run (default 15: train_gpt -x 15; torch times the last 12 after 3 warmup)
#   TRAIN_GPT    the C trainer (default ./train_gpt)
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON=/usr/bin/python3  # Debian's python, which has python3-torch
TRAIN_GPT=${TRAIN_GPT:-./train_gpt}
STEPS=${BENCH_STEPS:-15}
WARMUP=3
# Both programs get the same 2 threads: OpenMP in torch and train_gpt, and OpenBLAS's own pool.
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2

die() { echo "bench_cpu.sh: error: $*" >&2; exit 1; }

[[ "$STEPS" =~ ^[0-9]+$ ]] && (( STEPS > WARMUP )) || die "BENCH_STEPS=$STEPS must be an integer > $WARMUP"

check_openblas() {
    local link
    link=$(update-alternatives --display libblas.so.3-x86_64-linux-gnu 2>/dev/null |
           sed -n 's/^ *link currently points to //p') || true
    [[ "$link" == *openblas* ]] ||
        die "libblas.so.3 points to '${link:-nothing}', not OpenBLAS: a ratio against the reference BLAS is not a result" \
            "(install libopenblas0-pthread, or: update-alternatives --set libblas.so.3-x86_64-linux-gnu <openblas libblas.so.3>)"
    echo "BLAS: libblas.so.3 -> $link (OpenBLAS: ok)"
}

# The value of the last line "<key> <number>" of a program's output, or fail when there is none
# (or it is not a positive number): a missing measurement is an error, never a zero.
parse_metric() {
    local key=$1 text=$2 value
    value=$(awk -v k="$key" '$1 == k && NF == 2 { v = $2 } END { print v }' <<<"$text")
    awk -v v="$value" 'BEGIN { exit !(v ~ /^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ && v + 0 > 0) }' || return 1
    echo "$value"
}

# Usage of both measurers: L C NH maxT V B T; prints tokens/s. torch runs with the OpenBLAS
# kernels train_gpt ran with ($C_KERNELS, from its startup line; train_gpt sets OPENBLAS_CORETYPE
# itself where OpenBLAS does not know the CPU: llmc/blas_kernels.h), so the ratio compares the
# programs, not two BLAS kernels.
torch_tokens_per_s() {
    local out kernels
    # (an empty OPENBLAS_CORETYPE is not "unset": OpenBLAS 0.3.21 takes it for Cooperlake)
    out=$(env ${C_CORETYPE:+OPENBLAS_CORETYPE=$C_CORETYPE} "$PYTHON" dev/torch/gpt2_reference.py bench --L "$1" \
          --C "$2" --NH "$3" --maxT "$4" --V "$5" --B "$6" --T "$7" --steps $((STEPS - WARMUP)) --warmup "$WARMUP" \
          2>&1) ||
        die "PyTorch bench failed: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
    [[ $(awk '$1 == "torch_blas" { print $2 }' <<<"$out") == *openblas* ]] ||
        die "torch did not load OpenBLAS ($(grep '^torch_blas' <<<"$out" || echo 'no torch_blas line'))"
    kernels=$(awk '$1 == "torch_blas_kernels" { print $2 }' <<<"$out")
    [[ "$kernels" == "$C_KERNELS" ]] ||
        die "torch ran OpenBLAS's '${kernels:-unknown}' kernels, train_gpt its '$C_KERNELS': not a comparison"
    parse_metric torch_tokens_per_s "$out" ||
        die "PyTorch bench printed no 'torch_tokens_per_s <positive number>' line; it ended: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
}

c_tokens_per_s() {
    local out status=0
    [[ -x "$TRAIN_GPT" ]] || die "$TRAIN_GPT not found: run make train_gpt"
    # V is not a flag: train_gpt's -e models use the GPT-2 vocabulary (50257), as the table's configs do.
    out=$("$TRAIN_GPT" --bench -e "L$1C$2NH$3" --max-seq-len "$4" -b "$6" -t "$7" -x "$STEPS" 2>&1) || status=$?
    (( status == 0 )) || die "$TRAIN_GPT --bench exited with status $status: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
    # "OpenBLAS SkylakeX kernels (OPENBLAS_CORETYPE=SKYLAKEX)" -> the kernels and the variable
    C_KERNELS=$(sed -n 's/.*OpenBLAS \([^ ]*\) kernels.*/\1/p' <<<"$out" | head -1)
    C_CORETYPE=$(sed -n 's/.*OpenBLAS [^ ]* kernels (OPENBLAS_CORETYPE=\([^)]*\)).*/\1/p' <<<"$out" | head -1)
    [[ -n "$C_KERNELS" ]] || die "$TRAIN_GPT printed no 'OpenBLAS <name> kernels' in its startup line"
    parse_metric bench_tokens_per_s "$out" ||
        die "$TRAIN_GPT --bench printed no 'bench_tokens_per_s <positive number>' line; it ended: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
}

check_openblas
echo "threads: OMP_NUM_THREADS=$OMP_NUM_THREADS OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS; $STEPS steps per run" \
     "(torch: $WARMUP warmup + $((STEPS - WARMUP)) timed, median; torch.optim.AdamW(foreach=True), no update clipping)"

c_result=$(mktemp) && trap 'rm -f "$c_result"' EXIT
configs=(  # name | L C NH maxT V B T
    "d12 L12 C768 NH12 B4 T64 | 12 768 12 1024 50257 4 64"
    "L4 C256 NH4 B4 T256      | 4 256 4 256 50257 4 256")
rows=()
for config in "${configs[@]}"; do
    IFS='|' read -r name numbers <<<"$config"
    read -r -a words <<<"$name" && name="${words[*]}"  # trims the padding before '|'
    read -r -a args <<<"$numbers"
    echo "measuring $name (V=${args[4]}) ..."
    c_tokens_per_s "${args[@]}" > "$c_result"  # first: a broken trainer fails fast (and sets C_KERNELS)
    c_tps=$(cat "$c_result")
    torch_tps=$(torch_tokens_per_s "${args[@]}")
    rows+=("$(awk -v n="$name" -v t="$torch_tps" -v c="$c_tps" 'BEGIN { printf "%-28s %12.1f %12.1f %8.2fx", n, t, c, c / t }')")
done
echo "BLAS kernels: OpenBLAS $C_KERNELS in both${C_CORETYPE:+ (OPENBLAS_CORETYPE=$C_CORETYPE)}"
printf '%-28s %12s %12s %9s\n' "config" "torch tok/s" "C tok/s" "C/torch"
printf '%s\n' "${rows[@]}"
