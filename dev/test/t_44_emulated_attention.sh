#!/usr/bin/env bash
# The attention kernels of llmc/attention.cuh run on the CPU emulator of dev/emu (no GPU): the
# harness dev/cuda/attention.cu, built by g++ against dev/emu/cuda_emu.h, runs its small cases
# (--check-small: T = 1 .. 1000, HS 64 and 128, against fp64, identical bits over runs and across
# the variants) for the default mma.sync kernels, which passed on an H100, and for the wgmma
# kernels, which have not run on a GPU (their building blocks first, exactly). The emulator also
# checks the kernels' synchronization (cp.async waits, barriers, fence.proxy.async, wgmma.fence,
# collectives); first its self-test shows each of those checks firing on a kernel with that fault,
# and what its stream orders do with a missing wait between streams.
# What the emulator cannot show (the hardware's agreement with dev/emu/ptx_isa.h, timing, plain
# loads and stores) still needs a GPU. About 50 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
for bin in build/emu/selftest build/emu/attention; do
    [ -x "$bin" ] || { echo "missing $bin: run make test (it needs the CUDA headers to build)" >&2; exit 1; }
done
failed=0
check() {  # check <ok> <what>
    if [ "$1" = 1 ]; then echo "ok   $2"; else echo "FAIL $2"; failed=$((failed + 1)); fi
}

# Each fault ends the run with exit 1 and the emulator's line saying what it found.
out=$(build/emu/selftest clean 2>&1) && ok=1 || ok=0
check "$ok" "emulator self-test: the kernels without faults run clean ($out)"
while IFS='|' read -r fault message; do
    rc=0
    out=$(build/emu/selftest "$fault" 2>&1) || rc=$?
    [ "$rc" = 1 ] && grep -q "emulator: .*$message" <<<"$out" && ok=1 || ok=0
    check "$ok" "emulator self-test: $fault is reported ($out)"
done <<'FAULTS'
in_flight|ldmatrix reads shared byte 0 while a cp.async to it (thread 0) is in flight
no_barrier|which thread 0's cp.async wrote since the last __syncthreads
war|cp.async overwrites shared byte 0, which another warp read since the last __syncthreads
no_proxy_fence|written by thread 0's cp.async without fence.proxy.async
no_wgmma_fence|wgmma.mma_async without a wgmma.fence since the last wgmma.wait_group
divergence|divergence: arrives at shfl.sync.bfly while its group waits at ldmatrix.x4
deadlock|deadlock: thread 0 waits at __syncthreads
out_of_bounds|outside the launch's 4096 bytes of dynamic shared memory
FAULTS

# The stream orders (dev/emu/cuda_runtime.cc): a consumer that waits for its producer's stream
# always sees the write; one that does not sees it under the order that runs the producer first
# (enqueue, first) and misses it under the one that prefers the consumer's stream (last); a host
# read of a pinned copy before synchronizing sees the write only when work runs at once.
while IFS='|' read -r order expected; do
    out=$(LLMC_EMU_STREAM_ORDER=$order build/emu/selftest streams 2>&1) || true
    [ "$out" = "streams: $expected" ] && ok=1 || ok=0
    check "$ok" "emulator stream order $order: $out"
done <<'ORDERS'
enqueue|consumer with wait 1, without wait 1; host read before sync 1, after 1
first|consumer with wait 1, without wait 1; host read before sync -1, after 1
last|consumer with wait 1, without wait 0; host read before sync -1, after 1
ORDERS

# The kernels: every check of the harness passes, and it says how many ran.
for mode in "" "--wgmma"; do
    log=$(mktemp)
    rc=0
    LLMC_EMU_STREAM_ORDER=last build/emu/attention $mode --check-small >"$log" 2>&1 || rc=$?  # work deferred: reads must synchronize
    summary=$(grep -E '^checks: ' "$log" || echo "no summary line")
    expected=13
    [ -n "$mode" ] && expected=14  # + the wgmma building blocks
    [ "$rc" = 0 ] && [ "$summary" = "checks: $expected passed, 0 failed" ] && ok=1 || ok=0
    check "$ok" "emulated attention ${mode:-(default mma.sync kernels)} --check-small: $summary"
    [ "$ok" = 1 ] || { grep -E 'FAIL|error' "$log" | head -20; }
    rm -f "$log"
done
echo "$failed check(s) failed"
[ "$failed" = 0 ]
