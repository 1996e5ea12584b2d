#!/usr/bin/env bash
# Loss-curve parity of the emulated low-precision matmuls (--matmul bf16, fp8 with current and
# with delayed scaling, int8: the CPU twin of the GPU's) against fp32: a small GPT-2 trained for a
# few hundred steps on the packaged corpus must end with a validation loss within 2% of fp32's,
# after the loss has fallen well below its start (so the comparison is between models that
# learned something). The corpus with its vocabulary cut to 4096 tokens (dev/test/remap_vocab.py:
# the 4095 most frequent, and one for the rest), so that the block linears, where the precisions
# differ, do a third of the work: with GPT-2's 50257 tokens and C 64 the fp32 output head and its
# optimizer took 94% of each step, and the test 170 s of CPU time instead of 45. First the twin's
# block linears against the recipe of llmc/matmul_lowp.cuh's table, bit for bit in every precision
# (test_model twin).
set -eu
cd "$(dirname "$0")/../.."
OMP_NUM_THREADS=2 ./build/test_model twin 41
bash dev/data/nlpcorpus.sh > /dev/null
dir=build/test/matmul_parity
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 dev/test/remap_vocab.py 4096 "$dir/data" data/nlpcorpus/nlpcorpus_*.bin
export OMP_NUM_THREADS=2
run() {  # run NAME MATMUL [EXTRA...]: prints the final validation loss
    local name=$1 mode=$2; shift 2
    ./train_gpt -e L2C128NH2 --vocab-size 4096 --max-seq-len 64 -b 4 -t 64 -x 250 -l 3e-3 -u 20 -q 0.1 -c 0.1 -v 250 \
        -m 8 -s 0 -i "$dir/data/nlpcorpus_train_*.bin" -j "$dir/data/nlpcorpus_val_*.bin" --matmul "$mode" "$@" \
        > "$dir/$name.log"
    grep "^val loss" "$dir/$name.log" | tail -1 | awk '{print $3}'
}
fp32=$(run fp32 fp32)
start=$(grep "^val loss" "$dir/fp32.log" | head -1 | awk '{print $3}')
fails=0
echo "fp32: val loss $start at the start, $fp32 after 250 steps"
awk -v l="$fp32" -v s="$start" 'BEGIN { exit !(l < s - 2) }' || { echo "FAIL fp32 did not learn 2 nats (val loss $start -> $fp32)"; fails=1; }
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
