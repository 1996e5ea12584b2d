#!/usr/bin/env bash
# The ZeRO shard plan and the MPI collectives (dev/test/zero/test_comm.c) as one process and
# under mpirun with 2 and 3 ranks: equal aligned slices for any size and world, segment splits,
# the memory formula, and reduce-scatter / all-gather / all-reduce bit for bit against the
# documented summation order. About 6 s.
set -eu
cd "$(dirname "$0")/../.."
source dev/test/zero/common.sh
./build/test/zero/test_comm
for np in 2 3; do mpi $np ./build/test/zero/test_comm; done
