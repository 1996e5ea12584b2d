#!/usr/bin/env bash
# --profile (llmc/profile.h): the time per step of each part, on the CPU trainer and on the GPU
# trainer in the CPU emulator (its CUDA events). Checks what can be checked without timing a
# GPU: every part the configuration runs has time and every other part 0 (quantize only with
# --matmul bf16/fp8/int8, recompute only with -r, zero comm only under ZeRO), the parts add up
# to the step time the training loop measured (they tile the same span: within 2% + 0.5 ms), and
# without the flag nothing is printed (and --bench's median is of the steps after the first 3).
# About 15 s.
set -u
cd "$(dirname "$0")/../.."
dir=build/test/profile
rm -rf "$dir" && mkdir -p "$dir"
export OMP_NUM_THREADS=2
fails=0
base=(-e L2C128NH2 --vocab-size 512 --max-seq-len 32 -b 2 -t 32 -x 6 --bench)
always="encoder|layernorm|matmul forward|matmul backward|attention forward|attention backward|output head|grad norm|optimizer"

# check NAME WANT_PARTS NOT_PARTS: the profile in $dir/NAME.out gives each part of WANT_PARTS
# time and each of NOT_PARTS 0.000 ('|'-separated), and its parts add up to the measured step time.
check() {
    local name=$1 want=$2 not=$3 out="$dir/$1.out" ok=1 part
    IFS='|' read -ra parts <<< "$want"
    for part in "${parts[@]}"; do
        awk -v p="$part" '$1 == "profile" && substr($0, 10, 20) ~ "^" p " *$" && $(NF - 1) + 0 > 0 { f = 1 } END { exit !f }' \
            "$out" || { echo "  $name: no '$part' time"; ok=0; }
    done
    IFS='|' read -ra parts <<< "$not"
    for part in "${parts[@]}"; do
        [ -z "$part" ] && continue
        awk -v p="$part" '$1 == "profile" && substr($0, 10, 20) ~ "^" p " *$" && $(NF - 1) == "0.000" { f = 1 } END { exit !f }' \
            "$out" || { echo "  $name: a '$part' time other than 0.000"; ok=0; }
    done
    local sums
    sums=$(awk '/^profile  all parts/ { print $4, $(NF - 2) }' "$out")
    awk -v s="$sums" 'BEGIN { split(s, a, " "); d = a[1] - a[2]; if (d < 0) d = -d; exit !(a[1] > 0 && d <= 0.02 * a[2] + 0.5) }' ||
        { echo "  $name: the parts add up to ${sums% *} ms, the loop measured ${sums#* } ms"; ok=0; }
    if [ $ok = 1 ]; then echo "ok   $name: $(grep -c '^profile  ' "$out") lines, all parts / measured: $sums ms"
    else echo "FAIL $name"; sed 's/^/      /' "$out" | grep -E "^      profile|rror" | head -20; fails=$((fails + 1)); fi
}

./train_gpt "${base[@]}" --profile > "$dir/cpu_fp32.out" 2>&1
check cpu_fp32 "$always|gelu" "quantize|recompute|zero comm"
./train_gpt "${base[@]}" --profile --matmul fp8 --amax-history 4 --fp8-wgrad 1 -r mlp > "$dir/cpu_fp8_recompute.out" 2>&1
check cpu_fp8_recompute "$always|gelu|quantize|recompute" "zero comm"
./train_gpt "${base[@]}" > "$dir/cpu_off.out" 2>&1
# The first 3 steps (warm-up: allocation, first touches) are not timed, so -x 6 times 3.
if grep -q '^bench_tokens_per_s' "$dir/cpu_off.out" && ! grep -q '^profile' "$dir/cpu_off.out" &&
    grep -q '^bench_median_step_ms .* over 3 timed steps$' "$dir/cpu_off.out"; then
    echo "ok   without --profile: no profile lines; the median of the last 3 of 6 steps"
else
    echo "FAIL without --profile: profile lines, no result or not 3 timed steps"; fails=$((fails + 1))
fi
if command -v mpirun > /dev/null; then
    root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
    OMP_NUM_THREADS=1 timeout -k 10 120 mpirun "${root[@]}" --oversubscribe --bind-to none -np 2 ./train_gpt "${base[@]}" \
        --profile -z 3 > "$dir/cpu_zero3.out" 2>&1
    check cpu_zero3 "$always|gelu|zero comm" "quantize|recompute"
fi

# The GPU trainer in the emulator: its parts come from CUDA events in the compute stream.
emu=build/emu/train_gptcu
"$emu" "${base[@]}" --profile --gelu-fusion 0 > "$dir/gpu_bf16.out" 2>&1
check gpu_bf16 "$always|gelu" "quantize|recompute|zero comm"
"$emu" "${base[@]}" --profile --gelu-fusion 2 > "$dir/gpu_bf16_gelu_fused.out" 2>&1
check gpu_bf16_gelu_fused "$always" "gelu|quantize|recompute|zero comm"
"$emu" "${base[@]}" --profile --matmul fp8 --amax-history 4 --fp8-wgrad 1 -r block > "$dir/gpu_fp8_recompute.out" 2>&1
check gpu_fp8_recompute "$always|gelu|quantize|recompute" "zero comm"
"$emu" "${base[@]}" --profile --matmul int8 -r gelu > "$dir/gpu_int8_recompute.out" 2>&1
check gpu_int8_recompute "$always|gelu|quantize|recompute" "zero comm"
exit $fails
