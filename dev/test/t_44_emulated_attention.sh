#!/usr/bin/env bash
# The attention kernels of llmc/attention.cuh run on the CPU emulator of dev/emu (no GPU): the
# harness dev/cuda/attention.cu, built by g++ against dev/emu/cuda_emu.h, runs its small cases
# (--check-small: T = 1 .. 1000, HS 64 and 128, against fp64, identical bits over runs and across
# the variants) for the default mma.sync kernels and for the wgmma kernels (their building blocks
# first, exactly), both of which passed on an H200 (2026-11-27), with --ws the warp-specialized
# wgmma forward and backward and with --pipelined the pipelined wgmma forward too (never run on a
# GPU). The emulator also checks the kernels' synchronization (cp.async waits, barriers,
# fence.proxy.async after cp.async and after the stores that wgmma or a bulk reduction reads,
# wgmma.fence, collectives, mbarriers; shared memory starts as NaN bytes);
# first its self-test shows each of those checks firing on a kernel with that fault (and its
# AddressSanitizer build a plain store past the dynamic shared memory), what its stream orders do
# with a missing wait between streams, what its overlap report counts beside a collective, and
# what its reverse schedule does with a missing order between CTAs or threads. Last, the race
# build (dev/emu/race.h: ThreadSanitizer with each CUDA thread a fiber, racecheck's job) reports
# each race planted in its self-test (an mbarrier and a named barrier skipped among them) and none
# in the attention kernels' cases with T < 512.
# What the emulator cannot show (the hardware's agreement with dev/emu/ptx_isa.h, timing, orders
# of CTAs and threads other than its two) still needs a GPU. About 111 s alone on 2 cores (2026-12-03).
set -euo pipefail
cd "$(dirname "$0")/../.."
for bin in build/emu/selftest build/emu/asan/selftest build/emu/attention build/emu/race/selftest build/emu/race/attention; do
    [ -x "$bin" ] || { echo "missing $bin: run make test (it needs the CUDA headers to build)" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
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
no_store_fence|written by thread 0's st.shared without fence.proxy.async
no_wgmma_fence|wgmma.mma_async without a wgmma.fence since the last wgmma.wait_group
divergence|divergence: arrives at shfl.sync.bfly while its group waits at ldmatrix.x4
deadlock|deadlock: thread 0 waits at __syncthreads
out_of_bounds|outside the launch's 4096 bytes of dynamic shared memory
FAULTS
# A plain store past the launch's dynamic shared memory: the emulator poisons those bytes, so the
# AddressSanitizer build (as test_gptcu in t_45) reports it in the kernel's frame; the plain build
# cannot see plain stores.
out=$(build/emu/asan/selftest clean 2>&1) && ok=1 || ok=0
check "$ok" "AddressSanitizer build of the self-test: the kernels without faults run clean ($out)"
rc=0
out=$(build/emu/asan/selftest plain_out_of_bounds 2>&1) || rc=$?
[ "$rc" != 0 ] && grep -q 'AddressSanitizer: use-after-poison' <<<"$out" && grep -q ' bounds_kernel' <<<"$out" && ok=1 || ok=0
check "$ok" "AddressSanitizer build: plain_out_of_bounds is reported (exit $rc, $(grep -m1 -o 'AddressSanitizer: [a-z-]*' <<<"$out"))"

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

# The overlap report (LLMC_EMU_OVERLAP, dev/emu/cuda_runtime.cc) under each stream order: for each
# collective the kernels that CUDA's order lets run beside it, ordered by events, a host
# synchronization, the legacy stream and a device synchronization (selftest.cu's overlap()).
for order in enqueue first last; do
    mkdir "$dir/overlap_$order"
    LLMC_EMU_STREAM_ORDER=$order LLMC_EMU_OVERLAP="$dir/overlap_$order" build/emu/selftest overlap >/dev/null 2>&1 ||
        true
    out=$(cat "$dir"/overlap_"$order"/overlap_*.txt 2>/dev/null | tr "\n" " ")
    [ "$out" = "A beside 2 B beside 3 C beside 0 D beside 2 " ] && ok=1 || ok=0
    check "$ok" "emulator overlap report, stream order $order: $out"
done

# The schedules (dev/emu/cuda_emu.h, LLMC_EMU_SCHEDULE): a CTA that reads what an earlier CTA of
# the same launch writes, and a thread that reads a shared word another writes with no barrier
# between them, see the writes in the default order and miss them in reverse, so a kernel whose
# result depends on either order gives other bits under reverse (t_45 compares the trainer's).
while IFS='|' read -r schedule expected; do
    out=$(LLMC_EMU_SCHEDULE=$schedule build/emu/selftest schedule 2>&1) || true
    [ "$out" = "schedule: $expected" ] && ok=1 || ok=0
    check "$ok" "emulator schedule $schedule: $out"
done <<'SCHEDULES'
forward|CTA 1 saw CTA 0's global write 1, thread 32 saw thread 31's shared write 1
reverse|CTA 1 saw CTA 0's global write 0, thread 32 saw thread 31's shared write 0
SCHEDULES

# The race build. A planted race (selftest.cu's race_kernel: a shared word, a cp.async's bytes and
# a global word each read or written by a second thread with no order between them; its
# warpgroup_kernel: a shared word read by the other warpgroup after a warpgroup's barrier alone, and
# one read by another lane of the warp without __syncwarp) is
# reported with the kernel's frame and TSan's exit status 66; the kernels without them report nothing.
out=$(build/emu/race/selftest clean 2>&1) && rc=0 || rc=$?
[ "$rc" = 0 ] && ! grep -q ThreadSanitizer <<<"$out" && ok=1 || ok=0
check "$ok" "race build: the self-test's kernels without faults report no race ($(tail -1 <<<"$out"))"
for fault in race_shared race_cp_async race_global race_warpgroup race_mbarrier race_named_barrier race_syncwarp; do
    rc=0
    out=$(build/emu/race/selftest "$fault" 2>&1) || rc=$?
    [ "$rc" = 66 ] && grep -q 'WARNING: ThreadSanitizer: data race' <<<"$out" &&
        grep -qE ' (race|warpgroup|handoff)_kernel dev/emu/selftest.cu:' <<<"$out" &&
        ok=1 || ok=0
    check "$ok" "race build: $fault is reported ($(grep -m1 -A1 'WARNING' <<<"$out" | tail -1 | sed 's/^ *//'))"
done
# The kernels, in the AddressSanitizer build (the small cases, with the CTAs and threads in
# reverse: an access past an allocation, such as a bulk reduction of dq rows past T, ends the run)
# and in the race build (those with T < 512), with work deferred (reads must synchronize): every
# check of the harness passes, it says how many ran (the wgmma runs add their building blocks), and
# no race is reported. Two run at a time, a new one as soon as one ends (about 54, 52, 57 and 49 s
# on one core each, in this order: 109 s).
runs=("emu/race|--check-short|13|forward" "emu/race|--wgmma --ws --pipelined --check-short|14|forward"
      "emu|--check-small|15|reverse" "emu|--wgmma --ws --pipelined --check-small|16|reverse")
for i in "${!runs[@]}"; do
    IFS='|' read -r build args expected schedule <<<"${runs[$i]}"
    [ "$i" -lt 2 ] || wait -n || true  # a run's status is in its .rc file
    # (rc: under set -e a failing run would end the subshell before its status is written)
    # shellcheck disable=SC2086  # args is a list of flags
    (rc=0
     LLMC_EMU_STREAM_ORDER=last LLMC_EMU_SCHEDULE=$schedule build/$build/attention $args >"$dir/$i.log" 2>&1 || rc=$?
     echo "$rc" >"$dir/$i.rc") &
done
wait
for i in "${!runs[@]}"; do
    IFS='|' read -r build args expected schedule <<<"${runs[$i]}"
    summary=$(grep -E '^checks: ' "$dir/$i.log" || echo "no summary line")
    races=$(grep -c 'WARNING: ThreadSanitizer' "$dir/$i.log" || true)
    [ "$(cat "$dir/$i.rc")" = 0 ] && [ "$summary" = "checks: $expected passed, 0 failed" ] && [ "$races" = 0 ] && ok=1 || ok=0
    check "$ok" "build/$build/attention $args (schedule $schedule): $summary, $races race report(s)"
    [ "$ok" = 1 ] || { grep -E -A8 'FAIL|error|ERROR|WARNING' "$dir/$i.log" | head -40; }  # ERROR: a sanitizer's
done
echo "$failed check(s) failed"
[ "$failed" = 0 ]
