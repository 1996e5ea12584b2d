#!/usr/bin/env bash
# The build follows MPI's arrival (mk/zero.mk): an object built before mpicc was there (MPICC=
# stands for its absence) is built again once it is, with LLMC_HAVE_MPI, instead of being linked
# with MPI as it was; an unchanged state rebuilds nothing. In a build directory of its own (the
# change empties it). Under a second.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$PWD/build/test/build_mpi_state
rm -rf "$dir" && mkdir -p "$dir"
fails=0
check() {  # check NAME COMMAND...
    if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
command -v mpicc >/dev/null || { echo "FAIL no mpicc: scripts/install_deps.sh installs it"; exit 1; }
object=$dir/b/llmc/comm.o
make -s BUILD="$dir/b" MPICC= "$object"
check "built without MPI: recorded" grep -qx 'without MPI' "$dir/b/mpi"
# llmc/comm.c defines comm_init (one process) only without MPI; with it, llmc/comm_mpi.c does.
defines_comm_init() { nm "$object" | grep -q ' T comm_init$'; }
not() { ! "$@"; }
check "built without MPI: the one-process comm_init" defines_comm_init
make BUILD="$dir/b" "$object" > "$dir/with.out"
check "mpicc found: the object built again, with LLMC_HAVE_MPI" \
    grep -q -- '-DLLMC_HAVE_MPI .*-c llmc/comm.c' "$dir/with.out"
check "mpicc found: no one-process comm_init" not defines_comm_init
check "mpicc found: recorded" grep -qx 'with MPI' "$dir/b/mpi"
make BUILD="$dir/b" "$object" > "$dir/again.out"
check "unchanged: nothing built" grep -q 'is up to date' "$dir/again.out"
[ "$fails" = 0 ]
