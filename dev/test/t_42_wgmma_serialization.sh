#!/usr/bin/env bash
# No wgmma attention kernel has its wgmma instructions serialized by ptxas (each waiting for the one
# before it, the tensor cores idle between them), which a build does not fail on: ptxas -v's
# "Potential Performance Loss: wgmma.mma_async instructions are serialized" notes over
# dev/test/cuda_host/wgmma_serialization.cu (every wgmma attention kernel, compiled for sm_90a, not
# run). The file's other half, a kernel written to be serialized (-DLLMC_SERIALIZED_WGMMA), shows
# that ptxas prints the note and that this test sees it. And the register count that the
# warp-specialized backward's setmaxnreg relies on. About 30 s of nvcc (2026-12-02).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v nvcc >/dev/null || PATH=/usr/local/cuda/bin:$PATH
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failed=0
check() {  # check <1|0> <what>
    if [ "$1" = 1 ]; then echo "ok   $2"; else echo "FAIL $2"; failed=$((failed + 1)); fi
}
for variant in plain serialized; do
    flags=()
    [ "$variant" = serialized ] && flags=(-DLLMC_SERIALIZED_WGMMA)
    nvcc -std=c++17 -O3 -arch=sm_90a -cubin -Xptxas -v "${flags[@]}" dev/test/cuda_host/wgmma_serialization.cu \
        -o "$dir/$variant.cubin" >"$dir/$variant.log" 2>&1 &
done
wait
note='Potential Performance Loss: wgmma.mma_async instructions are serialized'
kernels=$(grep -c "Compiling entry function '_ZN16attention_detail[0-9]*attention_.*wgmma_kernel" "$dir/plain.log" || true)
notes=$(grep -c "$note" "$dir/plain.log" || true)
check "$([ "$kernels" -ge 19 ] && [ "$notes" = 0 ] && echo 1 || echo 0)" \
    "ptxas: $kernels wgmma attention kernels (forward, also pipelined and warp-specialized; dK/dV with and without codes or dQ by reduction, dQ; 1 and 2 warpgroups; warp-specialized), $notes serialized"
[ "$notes" = 0 ] || grep "$note" "$dir/plain.log" | head -5
# setmaxnreg moves registers within what the CTA launched with: the warp-specialized backward's
# consumers raise to 240 a thread on the premise that its 384 threads launch with 65536 / 384
# rounded down to a multiple of 8 = 168 (llmc/attention.cuh's bwd_ws); a kernel that ptxas gave
# fewer would hang in its first setmaxnreg.inc.
k=attention_backward_kv_ws_wgmma_kernel
used=$(awk -v k="$k" '/Compiling entry function/ { on = index($0, k) > 0 } on && /Used [0-9]+ registers/ { print $5; exit }' "$dir/plain.log")
check "$([ "$used" = 168 ] && echo 1 || echo 0)" "ptxas: $k launches with 168 registers a thread, what its setmaxnreg assumes (got ${used:-none})"
planted=$(grep "$note" "$dir/serialized.log" | grep -c serialized_wgmma_kernel || true)
check "$([ "$planted" -ge 1 ] && echo 1 || echo 0)" \
    "ptxas: the kernel written to be serialized is reported ($planted note(s) naming it)"
echo "$failed check(s) failed"
[ "$failed" = 0 ]
