# Shared by the dev/test/t_50_zero_*.sh tests: the mpirun command line and the test model.
# Ranks are oversubscribed on a small machine (one OpenMP thread each, not bound to cores);
# --allow-run-as-root because CI containers run as root.
export OMP_NUM_THREADS=1
mpirun_cmd=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
mpi() {
    local np=$1; shift
    "${mpirun_cmd[@]}" -np "$np" "$@"
}
# The tiny model of the equality and resume tests: 136,960 parameters (not a multiple of
# 3 * ZERO_ALIGN, so 3 ranks need padding), B=2 sequences of T=32 tokens per rank.
model=(-e L2C64NH4 --vocab-size 512 --max-seq-len 64 -b 2 -t 32)
compare() { /usr/bin/python3 dev/test/zero/compare.py "$@"; }
