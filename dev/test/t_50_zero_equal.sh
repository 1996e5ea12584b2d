#!/usr/bin/env bash
# ZeRO stages 0..3 under mpirun with 2, 3 and 4 ranks (3: the slices need padding) against one
# process with the same global batch, and the stages against each other. About 30 s.
#
# What must hold, and why:
# - One process runs W micro-steps of B x T where W ranks run one each, on the same windows of
#   the same data (llmc/dataloader.h). The step-1 losses are bit-identical (same weights, same
#   tokens); after that the weights differ by the order in which the gradient is summed: one
#   process adds the micro-steps inside its kernels, W ranks add whole per-rank gradients in the
#   owner's rank order (llmc/comm.h). That is fp32 rounding (~1e-7 relative per element), which
#   AdamW's g / sqrt(v) turns into update differences only for the few elements whose gradient
#   is at the rounding-noise level. Tolerances: every logged loss within 1e-5 relative, every
#   weight within 1e-5 absolute (lr 1e-3, 6 steps; observed at most ~2e-6, on ~20 of 137k weights).
# - Stages 1, 2 and 3 at the same world size do the same arithmetic at one micro-step per step
#   (same reductions, same update-clipping sums), so they must be bit-identical: losses,
#   validation losses, weights and the sampled tokens (ZeRO-3 samples through gathered weights).
#   Stage 0 groups the update-clipping sums differently (whole model on every rank), so it is
#   checked against one process with the tolerances above.
# - With 2 micro-steps per rank, stages 1 and 2 sum micro-steps and ranks in different orders:
#   both are checked against one process with the tolerances above.
set -eu
cd "$(dirname "$0")/../.."
source dev/test/zero/common.sh
dir=build/test/zero_equal
rm -rf "$dir" && mkdir -p "$dir/data"
for i in 0 1; do /usr/bin/python3 dev/test/make_shard.py "$dir/data/train_00000$i.bin" 5000 512 $((70 + i)); done
/usr/bin/python3 dev/test/make_shard.py "$dir/data/val_000000.bin" 3000 512 72
# Validation: 2 micro-batches per rank, so one process evaluates 2 W to see the same windows.
args=("${model[@]}" -x 6 -l 1e-3 -u 2 -c 0.1 -i "$dir/data/train_*.bin" -j "$dir/data/val_*.bin" -v 3
      -s 3 -g 6 -n 6)
tol=(1e-5 1e-5)

for W in 2 3 4; do
    d=$((2 * 32 * W))
    ./train_gpt "${args[@]}" -d $d -m $((2 * W)) -o "$dir/one_$W" > "$dir/one_$W.out"
    for z in 0 1 2 3; do
        mpi $W ./train_gpt "${args[@]}" -d $d -m 2 -z $z -o "$dir/np${W}_z$z" > "$dir/np${W}_z$z.out"
        grep -q "^zero: stage $z ranks $W " "$dir/np${W}_z$z.out"
        compare "$dir/one_$W" "$dir/np${W}_z$z" 1 6 "${tol[@]}"
    done
    for z in 2 3; do
        compare "$dir/np${W}_z1" "$dir/np${W}_z$z" 1 6 0 0
        diff <(grep '^sample:' "$dir/np${W}_z1.out") <(grep '^sample:' "$dir/np${W}_z$z.out")
    done
    test "$(grep -c '^sample:' "$dir/np${W}_z3.out")" -eq 2
done

# Gradient accumulation: 2 micro-steps per rank on 2 ranks against 4 in one process.
./train_gpt "${args[@]}" -d 256 -m 4 -o "$dir/one_acc" > "$dir/one_acc.out"
for z in 1 2; do
    mpi 2 ./train_gpt "${args[@]}" -d 256 -m 2 -z $z -o "$dir/np2_acc_z$z" > "$dir/np2_acc_z$z.out"
    grep -q "2 micro-step(s), 2 rank(s)" "$dir/np2_acc_z$z.out"
    compare "$dir/one_acc" "$dir/np2_acc_z$z" 1 6 "${tol[@]}"
done
# The output head in chunks of 24 of each micro-step's 64 rows (the last one short): the
# embeddings' gradient, begun by the head in the forward pass and finished by the encoder, has
# a scratch of its own at stages 2-3. Against one process with the same chunks, and the chunked
# one process against the unchunked one (the head's weight gradient sums its rows per chunk).
chunk=(--head-chunk 24)
./train_gpt "${args[@]}" "${chunk[@]}" -d 128 -m 4 -o "$dir/one_chunk" > "$dir/one_chunk.out"
grep -q "output head: 24 rows at a time" "$dir/one_chunk.out"
compare "$dir/one_2" "$dir/one_chunk" 1 6 "${tol[@]}"
for z in 1 2 3; do
    mpi 2 ./train_gpt "${args[@]}" "${chunk[@]}" -d 128 -m 2 -z $z -o "$dir/np2_chunk_z$z" > "$dir/np2_chunk_z$z.out"
    compare "$dir/one_chunk" "$dir/np2_chunk_z$z" 1 6 "${tol[@]}"
done
for z in 2 3; do compare "$dir/np2_chunk_z1" "$dir/np2_chunk_z$z" 1 6 0 0; done
# Sampling reads its next token's logits from the last chunk: at lr 0 (the same weights) a sample
# of 30 tokens, whose last forward passes run in 2 chunks of 24 rows, equals the unchunked one.
sample=("${model[@]}" -x 1 -l 0 -i "$dir/data/train_*.bin" -v 0 -s 1 -g 30)
./train_gpt "${sample[@]}" "${chunk[@]}" > "$dir/sample_chunk.out"
./train_gpt "${sample[@]}" > "$dir/sample_whole.out"
test "$(grep -c '^sample:' "$dir/sample_whole.out")" -eq 1
diff <(grep '^sample:' "$dir/sample_chunk.out") <(grep '^sample:' "$dir/sample_whole.out")
echo "zero equal: stages 0-3 on 2, 3 and 4 ranks match one process; stages 1-3 bit-identical; also with the head in chunks, and sampling through them"
