#!/usr/bin/env bash
# Checkpoints in the layouts other trainers and older versions of this one write load as the same
# model: fp32 (version 3) and bf16 (version 5) weights, without a checksum or with the older
# payload-only one. Each variant of one model (dev/test/checkpoint_variants.py: weights rounded
# to bf16, so all hold the same values) trains one step to the same bits. A payload-only checksum
# is verified, and a file longer than its header says is refused. The trainer runs under
# AddressSanitizer and UBSan, as in t_21.
set -eu
cd "$(dirname "$0")/../.."
bin=build/san/train_gpt
dir=build/test/checkpoint_formats
rm -rf "$dir" && mkdir -p "$dir"
export OMP_NUM_THREADS=2 ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1
tiny=(-b 2 -t 8 -v 0 -s 0 -l 1e-3)
/usr/bin/python3 dev/test/make_shard.py "$dir/train.bin" 400 300 23
"$bin" -e L2C32NH2 --vocab-size 300 --max-seq-len 16 "${tiny[@]}" -i "$dir/train.bin" -x 1 -n 1 -o "$dir/source" > /dev/null
/usr/bin/python3 dev/test/checkpoint_variants.py "$dir/source/model_00000001.bin" "$dir"
for v in f32 bf16 f32_csum bf16_csum; do
    "$bin" -e "$dir/$v.bin" "${tiny[@]}" -i "$dir/train.bin" -x 1 -n 1 -o "$dir/run_$v" > "$dir/$v.out" 2>&1 ||
        { echo "FAIL: $v.bin does not load:"; cat "$dir/$v.out"; exit 1; }
done
for v in bf16 f32_csum bf16_csum; do
    cmp "$dir/run_f32/model_00000001.bin" "$dir/run_$v/model_00000001.bin"
done
if cmp -s "$dir/run_f32/model_00000001.bin" "$dir/source/model_00000001.bin"; then
    echo "FAIL: a step from the rounded weights gave the source model back"; exit 1
fi
echo "ok   fp32 and bf16 checkpoints, without a checksum and with the payload-only one, train a step to the same bits"
# refused NAME PATTERN: loading NAME exits 1 with one line matching PATTERN and no sanitizer report.
refused() {
    local rc=0
    "$bin" -e "$dir/$1" "${tiny[@]}" -i "$dir/train.bin" -x 1 > "$dir/out" 2> "$dir/err" || rc=$?
    if [ $rc -ne 1 ] || [ "$(wc -l < "$dir/err")" -ne 1 ] || ! grep -q -e "$2" "$dir/err" ||
        grep -qE "Sanitizer|runtime error" "$dir/err"; then
        echo "FAIL: $1: exit $rc, stderr:"; head -5 "$dir/err"; exit 1
    fi
    echo "ok   $1 refused: $(cat "$dir/err")"
}
refused bf16_csum_flip.bin "bf16_csum_flip.bin' is corrupt: checksum mismatch"
refused f32_long.bin "f32_long.bin' is longer than its header says"
refused v4.bin "v4.bin.: checkpoint version 4 is not supported (3 = fp32, 5 = bf16)"
