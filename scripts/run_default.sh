#!/usr/bin/env bash
# The default job (make run, after installing packages and building): prepare the default
# dataset (the nlp-corpus sentences, offline) if missing, and train a small GPT-2 on it, printing
# validation losses and samples. On a machine with an NVIDIA GPU and a built train_gptcu it
# trains there instead.
# Extra arguments are passed to the trainer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash dev/data/nlpcorpus.sh
data=(-i "data/nlpcorpus/nlpcorpus_train_*.bin" -j "data/nlpcorpus/nlpcorpus_val_*.bin")
# out/default is the default job's own directory: each run starts it afresh (a trainer refuses
# another run's checkpoints), unless the arguments name a resume or another directory.
fresh=1 previous=
for arg in "$@"; do
    case $previous in -y | --resume) [ "$arg" = 0 ] || fresh=0 ;; esac  # -y 0 is no resume
    case $arg in --resume=0) ;; --resume=* | -o | --out | --out=*) fresh=0 ;; esac
    previous=$arg
done
[ $fresh = 0 ] || rm -rf out/default
. scripts/pick_trainer.sh
if gpu_trainer_usable; then
    # d12 for about 2.5 epochs of the 1.95M-token corpus (300 steps of 16k tokens; more overfits):
    # on an H100 a run like it took validation from 10.9 to 5.93 in seconds (dev/gpu_report.md).
    exec ./train_gptcu "${data[@]}" -o out/default -e d12 -b 16 -t 1024 -x 300 -l 6e-4 -u 100 -q 0.1 \
        -c 0.1 -v 50 -m 20 -s 100 -g 128 -n 300 "$@"
fi
# CPU: a 4-layer, 128-channel GPT-2 (7.3M parameters, most in the 50257-token embedding, whose
# output head is 90% of the FLOPs) on sequences of 128 tokens; about 5 minutes on two cores.
# At about equal compute 128 channels for 800 steps beat 256 for 400 (validation 6.45 vs 6.51 at
# lr 1e-3, 6.59 at 2e-3; 2026-11-24). At 128 channels, validation after 800 steps by peak lr
# (2026-11-27): 1e-3 6.446, 2e-3 6.398, 3e-3 6.390, 5e-3 6.678; 2e-3 keeps a margin from the edge
# (and decaying to 0 instead of 10% of it gives 6.413).
exec ./train_gpt "${data[@]}" -o out/default -e L4C128NH2 --max-seq-len 128 -b 8 -t 128 -x 800 -l 2e-3 -u 20 \
    -q 0.1 -c 0.1 -v 200 -m 20 -s 200 -g 48 -n 800 "$@"
