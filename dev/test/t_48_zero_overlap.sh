#!/usr/bin/env bash
# ZeRO's overlap of its collectives with the kernels in the GPU trainer, which one GPU cannot show
# (the NCCL collectives of 2 ranks): the emulated train_gptcu over 2 ranks (dev/emu/nccl.cc, as in
# t_45) writes the emulator's overlap report (LLMC_EMU_OVERLAP, dev/emu/cuda_runtime.cc), which
# counts for each collective the kernels that CUDA's order (the streams, the events waited for, the
# host's synchronizations) lets run beside it, whatever the speeds. Stages 0-3, 3 layers, 2 steps
# of 2 micro-steps (--bench). The collectives exposed (no kernel beside them) must be those of the
# design, once a step: the reduction of the embeddings' gradient, which the encoder finishes last
# (in the last micro-step's backward at stages 0-1; at stages 2-3 in every micro-step's, but the
# next micro-step's forward runs beside the earlier ones); at stages 1-2 the all-gather of the
# updated embeddings (the rest of the update's all-gather, segment by segment, runs beside the
# next forward, which waits for each segment where it first uses it; the last step's has no
# forward to run beside); at stage 3 the first micro-step's gather of the embeddings, its first
# weights (a later micro-step's are gathered beside layer 0's backward in the one before). Every
# layer's gather (stage 3: prefetched a layer ahead; layer 0's beside the encoder) and reduction
# (stages 0-1: in place as the backward completes it; 2-3: two scratches in turn) may run beside
# another part's kernels; a prefetch missing, one scratch for all, or a wait for the whole update
# exposes more (dev/mutation/gpu_trainer.json).
# dev/test/zero/overlap.py sums the reports. About 6 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/emu/train_gptcu ] ||
    { echo "missing build/emu/train_gptcu: run make test (it needs the CUDA headers to build)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failed=0
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
# The model's elements: the embeddings' segment (wte and wpe), and all (3 layers and the final LayerNorm).
embed=$(((512 + 64) * 128)) params=$(((512 + 64) * 128 + 3 * (12 * 128 * 128 + 13 * 128) + 2 * 128))
# The bytes exposed by design, gathers (bf16) and reductions (fp32), on each rank: 2 steps, 4 micro-steps.
declare -A exposed=([0]="0 $((2 * 4 * embed))" [1]="$((2 * embed + 2 * params)) $((2 * 4 * embed))"
                    [2]="$((2 * embed + 2 * params)) $((2 * 4 * embed))" [3]="$((2 * 2 * embed)) $((2 * 4 * embed))")
for z in 0 1 2 3; do
    mkdir "$dir/overlap$z"
    rc=0
    # timeout: ranks that reached different collectives would wait for each other forever.
    LLMC_EMU_OVERLAP="$dir/overlap$z" LLMC_GPU_COMM=nccl timeout -k 10 300 mpirun "${root[@]}" --oversubscribe \
        --bind-to none -np 2 -x LLMC_EMU_OVERLAP -x LLMC_GPU_COMM build/emu/train_gptcu -e L3C128NH2 --vocab-size 512 \
        --max-seq-len 64 -b 2 -t 32 -d 256 -x 2 --bench -z "$z" >"$dir/overlap$z.out" 2>&1 || rc=$?
    # shellcheck disable=SC2086  # the expected bytes of the gathers and of the reductions
    detail=$(/usr/bin/python3 dev/test/zero/overlap.py "$dir/overlap$z" ${exposed[$z]} 2>&1) && ok=1 || ok=0
    if [ "$rc" = 0 ] && [ "$ok" = 1 ]; then echo "ok   ZeRO stage $z, 2 ranks: exposed collectives as designed"
    else echo "FAIL ZeRO stage $z, 2 ranks: exit $rc, exposed collectives not as designed"; failed=$((failed + 1)); fi
    echo "$detail" | sed 's/^/     /'
    [ "$rc" = 0 ] || tail -3 "$dir/overlap$z.out"
done
echo "$failed check(s) failed"
[ "$failed" = 0 ]
