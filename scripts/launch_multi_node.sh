#!/usr/bin/env bash
# Data-parallel training on several nodes listed in an Open MPI hostfile ("host slots=N" per
# line, N = GPUs or ranks on that host). Every node needs the same checkout, built, at the same
# path (for nodes of other CPUs, built with HOST_ARCH=x86-64-v3 or what they share: make builds for
# its own CPU by default), and the data and output directory on a shared file system (every rank
# reads the shards; each writes its own state file, rank 0 the model).
#   scripts/launch_multi_node.sh HOSTFILE NP [trainer flags...]
# Environment (see README "Distributed training"): as scripts/launch_one_node.sh (TRAINER is
# chosen on the launching node), plus
#   NCCL_SOCKET_IFNAME, NCCL_IB_HCA   the network NCCL uses between nodes (GPU trainer)
#   MPI_IFACE                         the interface MPI's own TCP traffic uses (e.g. eth0)
set -euo pipefail
[ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 HOSTFILE NP [trainer flags...]" >&2; exit 2; }
# HOSTFILE is named from the caller's directory, not the checkout's (the cd below).
[ -f "$1" ] && [ -r "$1" ] || { echo "$0: the hostfile '$1' is not a readable file" >&2; exit 1; }
hostfile=$(realpath -- "$1") np=$2; shift 2
cd "$(dirname "$0")/.."
. scripts/pick_trainer.sh
pick_trainer
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
zero=(); [[ " $* " == *" -z "* || " $* " == *" --zero"* ]] || zero=(-z "${ZERO:-1}")
net=(); [ -n "${MPI_IFACE:-}" ] && net=(--mca btl_tcp_if_include "$MPI_IFACE" --mca oob_tcp_if_include "$MPI_IFACE")
pass=(-x OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" -x LLMC_COMM_TIMEOUT="${LLMC_COMM_TIMEOUT:-600}")
for v in NCCL_SOCKET_IFNAME NCCL_IB_HCA NCCL_DEBUG; do [ -n "${!v:-}" ] && pass+=(-x "$v"); done
# shellcheck disable=SC2086
exec mpirun "${root[@]}" --hostfile "$hostfile" -np "$np" --map-by slot --bind-to none "${net[@]}" "${pass[@]}" \
    ${MPIRUN_ARGS:-} "$trainer" "${zero[@]}" "$@"
