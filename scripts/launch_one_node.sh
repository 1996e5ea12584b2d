#!/usr/bin/env bash
# Data-parallel training on one node: NP ranks of the GPU trainer (one GPU each, picked from the
# node-local rank) when train_gptcu is built and GPUs are present, else of the CPU trainer.
#   scripts/launch_one_node.sh NP [trainer flags...]
# e.g. scripts/launch_one_node.sh 8 -e d12 -z 2 -b 16 -t 1024 -d 524288 -i 'data/.../train_*.bin' -o out/d12
# Environment (see README "Distributed training"):
#   TRAINER           ./train_gpt or ./train_gptcu (default: the GPU trainer when it is built and a GPU is visible)
#   ZERO              ZeRO stage when no -z is given (default 1)
#   LLMC_COMM_TIMEOUT seconds a rank waits in one collective before it stops the run (default 600)
#   OMP_NUM_THREADS   CPU threads per rank (default: the node's cores / NP)
#   MPIRUN_ARGS       extra mpirun options (e.g. "--oversubscribe" for more ranks than cores)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] && [[ $1 =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 NP [trainer flags...]" >&2; exit 2; }
np=$1; shift
. scripts/pick_trainer.sh
pick_trainer
threads=${OMP_NUM_THREADS:-$(( $(nproc) / np > 0 ? $(nproc) / np : 1 ))}
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
zero=(); [[ " $* " == *" -z "* || " $* " == *" --zero"* ]] || zero=(-z "${ZERO:-1}")
# shellcheck disable=SC2086
exec mpirun "${root[@]}" -np "$np" --bind-to none ${MPIRUN_ARGS:-} \
    -x OMP_NUM_THREADS="$threads" -x LLMC_COMM_TIMEOUT="${LLMC_COMM_TIMEOUT:-600}" \
    "$trainer" "${zero[@]}" "$@"
