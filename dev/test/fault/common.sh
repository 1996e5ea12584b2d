# Shared by the fault-tolerance tests (dev/test/t_60_*.sh): a tiny model and seeded data, and
# the test hooks of llmc/fileio.h and llmc/fault.h. Source it from the repository root.
#   fault_setup NAME   creates build/test/NAME (in $dir) with one 20000-token shard (seed 61)
#   tiny=(...)         flags of a 2-layer model that trains in a few ms per step on one thread;
#                      a constant learning rate, so that runs with different -x agree step by step
#   losses FILE [N]    the s:<step> trl:... lines of a main.log (the first N)
#   check DESC CMD...  runs CMD; counts a failure with DESC when it fails
set -u
# One thread: the machine is shared, and a busy core makes OpenMP barriers slow by 100x.
export OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1
unset LLMC_TEST_NAN_STEPS LLMC_TEST_WRITE_DELAY_MS LLMC_TEST_FAIL_WRITE_AFTER_BYTES
fails=0

fault_setup() {
    dir=build/test/$1
    rm -rf "$dir" && mkdir -p "$dir/data"
    /usr/bin/python3 dev/test/make_shard.py "$dir/data/train_000000.bin" 20000 512 61
    tiny=(-e L2C64NH4 --vocab-size 512 --max-seq-len 64 -b 2 -t 32 -l 1e-3 -k constant -u 0 -c 0.1
          -i "$dir/data/train_*.bin" -v 0 -s 0)
}

losses() {
    if [ $# -gt 1 ]; then grep -E '^s:[0-9]+ trl:' "$1" | head -n "$2"; else grep -E '^s:[0-9]+ trl:' "$1"; fi
}

check() {
    local desc=$1; shift
    if "$@"; then echo "ok   $desc"; else echo "FAIL $desc"; fails=$((fails + 1)); fi
}

finish() {
    echo "$fails failure(s)"
    [ "$fails" -eq 0 ]
}
