#!/usr/bin/env bash
# GPT-2 pretraining at one of its four sizes, on this node's GPUs (or on several nodes).
#   scripts/run_gpt2.sh SIZE [NP] [trainer flags...]
#     SIZE  d12 (124M), d24 (350M), d36 (774M) or d48 (1.5B parameters)
#     NP    ranks, one GPU each (default 1); more than 1 runs scripts/launch_one_node.sh, or with
#           HOSTFILE set scripts/launch_multi_node.sh (ZeRO stage: ZERO, default 1)
#   Later trainer flags win over the script's (e.g. -b 16 for a smaller micro-batch, -x 100).
# Hyperparameters: the GPT-3 paper's (Brown et al. 2020, table 2.1) for the model of nearest size:
# peak learning rate, tokens per optimizer step, warmup over its first 375M tokens, cosine decay to
# 10%, weight decay 0.1, gradient clipping at 1; sequences of 1024 tokens. The micro-batch per rank
# is the largest power of two (up to the size's cap, chosen to fit an 80 GB GPU without
# recomputation: d12 B 16 kept 6.2 GiB of activations on an H100 and d48 B 4 kept 9.8 GiB,
# dev/gpu_report.md; the caps of d24 and d36 are estimated from those) that divides the step's
# batch; the rest of the step is gradient accumulation.
# Every run resumes from the newest complete checkpoint in its output directory (-y 1), so the
# same command restarts a stopped job.
# Environment:
#   TRAIN, VAL  globs of token shards (default data/fineweb/fineweb_train_*.bin, ..._val_*.bin:
#               dev/data/fineweb.sh makes a small sample; ./prepare_data tokenizes any corpus)
#   TOKENS      training tokens (default 10000000000: FineWeb's sample-10BT)
#   OUT         output directory (default out/gpt2_SIZE)
#   HOSTFILE    an Open MPI hostfile: run NP ranks across its nodes
#   and those of the launch scripts (TRAINER, ZERO, MPIRUN_ARGS, ...; see README).
set -euo pipefail
# The paths in TRAIN, VAL, OUT and HOSTFILE are the caller's; the defaults are the checkout's.
from_caller() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
[ -z "${TRAIN:-}" ] || TRAIN=$(from_caller "$TRAIN")
[ -z "${VAL:-}" ] || VAL=$(from_caller "$VAL")
[ -z "${OUT:-}" ] || OUT=$(from_caller "$OUT")
[ -z "${HOSTFILE:-}" ] || HOSTFILE=$(from_caller "$HOSTFILE")
cd "$(dirname "$0")/.."
usage() { echo "usage: $0 d12|d24|d36|d48 [NP] [trainer flags...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
size=$1; shift
np=1
if [ $# -ge 1 ] && [[ $1 =~ ^[0-9]+$ ]]; then
    [[ $1 =~ ^[1-9][0-9]{0,5}$ ]] || usage
    np=$1; shift
fi
#                  peak lr  tokens per step  micro-batch cap (sequences per rank)
case $size in
    d12) lr=6e-4   step_tokens=524288  batch_cap=64 ;;
    d24) lr=3e-4   step_tokens=524288  batch_cap=32 ;;
    d36) lr=2.5e-4 step_tokens=524288  batch_cap=16 ;;
    d48) lr=2e-4   step_tokens=1048576 batch_cap=8 ;;
    *) usage ;;
esac
seq_len=1024
tokens=${TOKENS:-10000000000}
[[ $tokens =~ ^[1-9][0-9]{0,14}$ ]] || { echo "$0: TOKENS must be a positive whole number of tokens, not '$tokens'" >&2; exit 2; }
steps=$(( (tokens + step_tokens - 1) / step_tokens ))
warmup=$(( (375000000 + step_tokens / 2) / step_tokens ))
train=${TRAIN:-data/fineweb/fineweb_train_*.bin}
val=${VAL:-data/fineweb/fineweb_val_*.bin}
out=${OUT:-out/gpt2_$size}
compgen -G "$train" > /dev/null || {
    echo "$0: no training shards match '$train': set TRAIN (dev/data/fineweb.sh downloads a sample;" \
        "./prepare_data tokenizes any text)" >&2
    exit 1
}
# The micro-batch: sequences per rank that split the step's batch evenly, unless the flags give
# both -b and -d (the trainer then checks that they split).
given_b=0 given_d=0
for arg in "$@"; do
    case $arg in -b | --batch | --batch=*) given_b=1 ;; -d | --total-batch | --total-batch=*) given_d=1 ;; esac
done
rows=$(( step_tokens / seq_len )) batch=$batch_cap
if [ $given_b = 0 ] || [ $given_d = 0 ]; then
    [ $(( rows % np )) -eq 0 ] || {
        echo "$0: $size's $rows sequences per step do not split over $np ranks: use a power of two, or give both" \
            "-b and -d" >&2
        exit 2
    }
    while [ $(( rows / np % batch )) -ne 0 ]; do batch=$(( batch / 2 )); done
fi
flags=(-e "$size" -t "$seq_len" -b "$batch" -d "$step_tokens" -x "$steps" -l "$lr" -u "$warmup" -k cosine -q 0.1
       -c 0.1 --grad-clip 1 -i "$train" -j "$val" -v 250 -m 20 -s 1000 -g 128 -n 1000 -nk 2 -o "$out" -y 1)
if [ -n "${HOSTFILE:-}" ]; then
    exec bash scripts/launch_multi_node.sh "$HOSTFILE" "$np" "${flags[@]}" "$@"
elif [ "$np" -gt 1 ]; then
    exec bash scripts/launch_one_node.sh "$np" "${flags[@]}" "$@"
fi
. scripts/pick_trainer.sh
pick_trainer
exec "$trainer" "${flags[@]}" "$@"
