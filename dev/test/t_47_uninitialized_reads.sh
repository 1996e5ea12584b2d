#!/usr/bin/env bash
# Reads of memory that nothing wrote, which AddressSanitizer (the other tests' sanitizer) does not
# look for: valgrind's memcheck reports one where its value decides a branch, an address or what is
# written to a file. Builds of mk/valgrind.mk (valgrind 3.19 decodes no AVX-512):
#   1. The emulator's self-test (dev/emu/selftest.cu): a kernel that branches on a global or a
#      shared word nothing wrote is reported, and the kernels that write them first are not. In the
#      emulator, cudaMalloc's memory and a launch's shared memory start undefined, so that what
#      follows is compute-sanitizer's initcheck without a GPU.
#   2. The CPU trainer: two micro-steps a step, validation, sampling, checkpoints and a resume, in
#      fp32, in FP8 with delayed scaling, FP8 weight gradients, a mixed recompute list and the
#      output head in chunks, and in int8 under ZeRO-3 over 2 MPI ranks.
#   3. The GPU trainer in the CPU emulator: the same in bf16 (where a step's first micro-step
#      writes each gradient and the second adds to it), in FP8 with the wgmma attention and
#      recompute, and in int8 under ZeRO-3 over 2 ranks of emulated NCCL (the padded shards and
#      scratches).
# A tiny model (L2 C64, vocabulary 256, B 1, T 32) on random tokens, so that each run takes seconds
# under valgrind. About a minute.
set -euo pipefail
cd "$(dirname "$0")/../.."
for bin in build/vg/train_gpt build/vg/emu/train_gptcu build/emu/selftest; do
    [ -x "$bin" ] || { echo "missing $bin: run make test (it needs the CUDA headers to build)" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "valgrind is missing: run scripts/install_deps.sh" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failed=0
check() {  # check <ok> <what>
    if [ "$1" = 1 ]; then echo "ok   $2"; else echo "FAIL $2"; failed=$((failed + 1)); fi
}
# OpenMPI's start-up sends bytes it never initialized (padding): its suppressions, and one for PMIx.
cat >"$dir/mpi.supp" <<'EOF'
{
   pmix_writev_of_padding
   Memcheck:Param
   writev(vector[...])
   fun:__writev
   fun:writev
   obj:*libpmix.so*
}
EOF
# (--track-origins=yes names the allocation an uninitialized value came from, at 4 times the time:
# add it to find one that this test reports.)
# --max-stackframe: the emulator's fibers switch between stacks 256 KiB apart (dev/emu/cuda_emu.h).
memcheck=(valgrind -q --error-exitcode=99 --max-stackframe=131072
          --suppressions=/usr/share/openmpi/openmpi-valgrind.supp --suppressions="$dir/mpi.supp")

# 1. The self-test: exit 99 and valgrind's report in uninit_kernel for each fault; none for clean.
rc=0
out=$("${memcheck[@]}" build/emu/selftest clean 2>&1) || rc=$?
[ "$rc" = 0 ] && ! grep -q '==[0-9]*==' <<<"$out" && ok=1 || ok=0
check "$ok" "emulator self-test under valgrind: the kernels that write before they read run clean"
for fault in uninit_global uninit_shared; do
    rc=0
    out=$("${memcheck[@]}" build/emu/selftest "$fault" 2>&1) || rc=$?
    [ "$rc" = 99 ] && grep -A1 'Conditional jump or move depends on uninitialised value' <<<"$out" | grep -q 'uninit_kernel' &&
        ok=1 || ok=0
    check "$ok" "emulator self-test under valgrind: $fault is reported in uninit_kernel (exit $rc)"
done

/usr/bin/python3 dev/test/make_shard.py "$dir/train_000.bin" 20000 256 4701
/usr/bin/python3 dev/test/make_shard.py "$dir/val_000.bin" 4000 256 4702
model=(-e L2C64NH1 --max-seq-len 64 --vocab-size 256 -i "$dir/train_*.bin" -j "$dir/val_*.bin" -b 1 -t 32 -l 1e-3
       -v 1 -m 1 -s 1 -g 2 -n 1)
# run <name> <ranks> <resume> <program> <flags...>: under memcheck, in the background (two runs at
# a time, one per core), one step (of two micro-steps) writing a checkpoint, then with <resume> 1
# a second step resumed from it. Its log is $dir/<name>.log, its exit status $dir/<name>.rc.
run() {
    local name=$1 ranks=$2 resume=$3
    shift 3
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || true; done
    local launch=()
    [ "$ranks" -gt 1 ] && launch=(mpirun --oversubscribe -np "$ranks" $([ "$(id -u)" = 0 ] && echo --allow-run-as-root))
    (
        rc=0
        OMP_NUM_THREADS=1 "${launch[@]}" "${memcheck[@]}" "$@" -d $((ranks * 64)) -x 1 -o "$dir/$name.out" \
            >"$dir/$name.log" 2>&1 || rc=$?
        if [ "$rc" = 0 ] && [ "$resume" = 1 ]; then
            OMP_NUM_THREADS=1 "${launch[@]}" "${memcheck[@]}" "$@" -d $((ranks * 64)) -x 2 -y 1 -o "$dir/$name.out" \
                >>"$dir/$name.log" 2>&1 || rc=$?
        fi
        echo "$rc" >"$dir/$name.rc"
    ) &
}
run gpu_bf16 1 1 build/vg/emu/train_gptcu "${model[@]}"
run gpu_fp8 1 0 build/vg/emu/train_gptcu "${model[@]}" --matmul fp8 --amax-history 4 --fp8-wgrad 1 --attention wgmma \
    --recompute 0-0:attn,1-1:block
run gpu_int8_zero3 2 0 build/vg/emu/train_gptcu "${model[@]}" --matmul int8 -z 3
run cpu_fp32 1 1 build/vg/train_gpt "${model[@]}"
run cpu_fp8 1 1 build/vg/train_gpt "${model[@]}" --matmul fp8 --amax-history 4 --fp8-wgrad 1 \
    --recompute 0-0:block,1-1:norm+gelu --head-chunk 24
run cpu_int8_zero3 2 1 build/vg/train_gpt "${model[@]}" --matmul int8 -z 3
wait

# Every run must exit 0 with no report of valgrind's (valgrind -q prints only errors), and have
# trained and validated (so that a run refused at start-up cannot pass).
for name in cpu_fp32 cpu_fp8 cpu_int8_zero3 gpu_bf16 gpu_fp8 gpu_int8_zero3; do
    rc=$(cat "$dir/$name.rc")
    reports=$(grep -c '^==[0-9]*== [A-Z]' "$dir/$name.log" || true)
    [ "$rc" = 0 ] && [ "$reports" = 0 ] && grep -q '^step  *[0-9]*/[0-9]* | loss' "$dir/$name.log" &&
        grep -q '^val loss' "$dir/$name.log" && ok=1 || ok=0
    check "$ok" "$name under valgrind: exit $rc, $reports report(s)"
    [ "$ok" = 1 ] || grep -E -A14 '^==[0-9]*== [A-Z]|error' "$dir/$name.log" | head -40
done
[ "$failed" = 0 ]
