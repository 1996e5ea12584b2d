#!/usr/bin/env bash
# OpenBLAS's kernels (llmc/blas_kernels.h): on a CPU with AVX2 and FMA, train_gpt never runs
# OpenBLAS's Prescott (SSE3) fallback, which OpenBLAS 0.3.21 chose on a newer Xeon and which made
# the matmuls 3-4x slower; the kernels that the CPU's flags call for are the ones named; an
# OPENBLAS_CORETYPE the user set is kept; and the process re-run with it is still named train_gpt
# (ps, pgrep and the MPI tests look for it). About 2 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=build/test/blas_kernels
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 dev/test/make_shard.py "$dir/shard.bin" 4000 300 14
fails=0
check() {  # check NAME COMMAND...
    if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
kernels() {  # kernels [VAR=VALUE...]: the startup line's "OpenBLAS ... kernels ..." of a 2-step run
    env -u OPENBLAS_CORETYPE "$@" ./train_gpt -e L1C32NH2 --vocab-size 300 --max-seq-len 16 -b 2 -t 8 \
        -i "$dir/shard.bin" -v 0 -s 0 -n 0 -x 2 2>&1 | grep -o 'OpenBLAS .* kernels.*' ||
        echo "(no OpenBLAS in the startup line)"
}
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { grep -qw "$1" <<< "$flags"; }
want=
if has avx512f && has avx512bw && has avx512vl && has avx512dq; then want="SkylakeX|Cooperlake|SapphireRapids|Zen"
elif has avx2 && has fma; then want="Haswell|Zen"; fi
own=$(kernels)
echo "this CPU: ${want:-no AVX2}; train_gpt: $own"
if [ -n "$want" ]; then
    check "not the Prescott fallback on a CPU with AVX2 and FMA" grep -qvw Prescott <<< "$own"
    check "kernels for the CPU's flags ($want)" grep -qE "OpenBLAS ($want) kernels" <<< "$own"
fi
check "the user's OPENBLAS_CORETYPE=HASWELL is kept" \
    grep -qx 'OpenBLAS Haswell kernels (OPENBLAS_CORETYPE=HASWELL)' <<< "$(kernels OPENBLAS_CORETYPE=HASWELL)"
# The process name after the re-run (the kernel names a process after the file executed).
env -u OPENBLAS_CORETYPE ./train_gpt -e L1C32NH2 --vocab-size 300 --max-seq-len 16 -b 2 -t 8 -i "$dir/shard.bin" \
    -v 0 -s 0 -n 0 -x 100000 > /dev/null 2>&1 &
pid=$!
sleep 1
name=$(cat "/proc/$pid/comm" 2> /dev/null || echo "(ended)")
kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null || true
check "the running process is named train_gpt (got $name)" [ "$name" = train_gpt ]
echo "$fails failed"
[ "$fails" = 0 ]
