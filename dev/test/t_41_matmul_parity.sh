#!/usr/bin/env bash
# Loss-curve parity of the emulated low-precision matmuls (--matmul bf16, fp8 with current and
# with delayed scaling, int8: the CPU twin of the GPU's) against fp32: a small GPT-2 trained for a
# few hundred steps on the packaged corpus must end with a validation loss within 2% of fp32's,
# after the loss has fallen well below its start (so the comparison is between models that
# learned something). First the twin's block linears against the recipe of
# llmc/matmul_lowp.cuh's table, bit for bit in every precision (test_model twin).
set -eu
cd "$(dirname "$0")/../.."
OMP_NUM_THREADS=2 ./build/test_model twin 41
bash dev/data/nlpcorpus.sh > /dev/null
dir=build/test/matmul_parity
rm -rf "$dir" && mkdir -p "$dir"
export OMP_NUM_THREADS=2
run() {  # run NAME MATMUL [EXTRA...]: prints the final validation loss
    local name=$1 mode=$2; shift 2
    ./train_gpt -e L2C64NH2 --max-seq-len 64 -b 4 -t 64 -x 250 -l 3e-3 -u 20 -q 0.1 -c 0.1 -v 250 -m 8 -s 0 \
        -i "data/nlpcorpus/nlpcorpus_train_*.bin" -j "data/nlpcorpus/nlpcorpus_val_*.bin" --matmul "$mode" "$@" > "$dir/$name.log"
    grep "^val loss" "$dir/$name.log" | tail -1 | awk '{print $3}'
}
fp32=$(run fp32 fp32)
fails=0
echo "fp32: val loss $fp32 (start ~10.83)"
awk -v l="$fp32" 'BEGIN { exit !(l < 8.0) }' || { echo "FAIL fp32 did not learn (val loss $fp32)"; fails=1; }
# fp8_delayed: FP8 with delayed scaling from the amaxes of the last 16 micro-steps.
for mode in bf16 fp8 fp8_delayed int8; do
    if [ $mode = fp8_delayed ]; then loss=$(run $mode fp8 --amax-history 16); else loss=$(run $mode $mode); fi
    rel=$(awk -v a="$loss" -v b="$fp32" 'BEGIN { d = (a - b) / b; printf "%.4f", d < 0 ? -d : d }')
    if awk -v r="$rel" 'BEGIN { exit !(r <= 0.02) }'; then
        echo "ok   $mode: val loss $loss, $rel relative to fp32 (<= 0.02)"
    else
        echo "FAIL $mode: val loss $loss, $rel relative to fp32 (> 0.02)"; fails=1
    fi
done
exit $fails
