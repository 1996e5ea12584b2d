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
if [ -x ./train_gptcu ] && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    exec ./train_gptcu "${data[@]}" -o out/default -e d12 -b 16 -t 1024 -d 524288 -x 2000 -l 6e-4 -u 200 -q 0.1 \
        -c 0.1 -v 100 -m 20 -s 200 -g 128 -n 1000 "$@"
fi
# CPU: a 4-layer, 256-channel GPT-2 (18M parameters, most in the 50257-token embedding) on
# sequences of 128 tokens; a few minutes on two cores.
exec ./train_gpt "${data[@]}" -o out/default -e L4C256NH4 --max-seq-len 128 -b 8 -t 128 -x 400 -l 2e-3 -u 20 \
    -q 0.1 -c 0.1 -v 100 -m 10 -s 100 -g 48 -n 400 "$@"
