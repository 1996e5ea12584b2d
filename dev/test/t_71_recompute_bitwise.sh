#!/usr/bin/env bash
# Every recompute policy and a mixed per-layer list give bit-identical gradients, losses and
# weights to keeping everything, and allocate exactly the predicted activation memory; also in
# emulated FP8 with delayed scaling, through the trainer.
set -eu
cd "$(dirname "$0")/../.."
for seed in 3 4; do OMP_NUM_THREADS=2 ./build/test_model recompute $seed; done
# The trainer's flags: a plan is printed, bad values exit 2.
out=$(./train_gpt --bench -e L4C64NH4 --vocab-size 512 --max-seq-len 32 -b 2 -t 32 -x 2 --recompute 0-1:block,2-3:gelu)
echo "$out" | grep -q "^recompute: 0-1:block,2-3:gelu | predicted activations"
out=$(./train_gpt --bench -e L4C64NH4 --vocab-size 512 --max-seq-len 32 -b 2 -t 32 -x 2 --mem-budget 0.0012)
echo "$out" | grep "^recompute:"
# Through the trainer in emulated FP8 with delayed scaling (2 micro-steps a step): a recompute
# replays its forward's scales and records nothing, so losses and weights stay bit-identical
# (the output head in chunks of 24 of the 64 rows, as every policy shares the chunk size).
dir=build/test/recompute_fp8
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 dev/test/make_shard.py "$dir/train.bin" 3000 512 71
for r in none block 0-1:mlp,2-3:attn+norm; do
    flag=(-r "$r"); [[ $r == *:* ]] && flag=(--recompute "$r")
    ./train_gpt -e L4C64NH4 --vocab-size 512 --max-seq-len 32 -b 2 -t 32 -d 128 -x 6 -l 1e-3 -i "$dir/train.bin" \
        -v 0 -s 0 -n 6 --matmul fp8 --amax-history 3 --head-chunk 24 "${flag[@]}" -o "$dir/${r//[:,+]/_}" > /dev/null
done
for r in block 0-1_mlp_2-3_attn_norm; do
    diff <(grep trl "$dir/none/main.log") <(grep trl "$dir/$r/main.log")
    cmp "$dir/none/model_00000006.bin" "$dir/$r/model_00000006.bin"
done
echo "ok   fp8 with delayed scaling: block and a mixed list give the losses and weights of none, bit for bit"
set +e
./train_gpt -e L4C64NH4 -r fast 2>&1 | grep -q "is not a policy"; a=$?
./train_gpt -e L4C64NH4 --recompute 0-2:block 2>&1 | grep -q "layer 3 has no policy"; b=$?
./train_gpt -e L4C64NH4 --vocab-size 512 --max-seq-len 32 -b 2 -t 32 --mem-budget 0.000001 2>&1 | grep -q "cannot hold"; c=$?
./train_gpt -e L4C64NH4 -r gelu --mem-budget 1 2>&1 | grep -q "at most one"; d=$?
[ $a -eq 0 ] && [ $b -eq 0 ] && [ $c -eq 0 ] && [ $d -eq 0 ] && echo "ok   bad recompute flags are refused"
