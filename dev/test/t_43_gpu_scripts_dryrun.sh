#!/usr/bin/env bash
# The GPU session's script, dry: scripts/gpu_run_bundle.sh runs each of its phases in a copy of
# scripts/ and dev/ with stand-ins for the GPU programs and tools (dev/test/gpu_dryrun), so that a
# shell mistake (an unset variable, a wrong path, a table that cannot fill, a file not returned)
# shows here rather than in a session's few device minutes. The zero phase runs
# scripts/gpu_zero_check.sh for real, the CPU trainer standing in for train_gptcu (2 and 3 ranks
# under mpirun). Then the wgmma gate; beside all of it, the call's own deadline (a stand-in that
# sleeps). The stand-ins' figures are made up: this proves the plumbing, no GPU result. About 30 s.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
d=$root/build/test/gpu_dryrun
rm -rf "$d" && mkdir -p "$d/repo/gpu_carry" "$d/tools" "$d/carry/bin" "$d/carry/lib"
fails=0
check() {  # check NAME COMMAND...
    if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}

# The repository as the device tool copies it, and gpu_carry as scripts/gpu_bundle.sh makes it.
# -H: under make test-sanitize the root's scripts and dev are symlinks to the repository's
# (dev/test/fault/run_sanitized.sh); a copy of the links would let the stand-ins below overwrite
# the repository's own files.
cp -R -H scripts dev "$d/repo/"
echo 'print("PyTorch (dry run) d12 B=16 T=1024: 23456 tokens/s (median step 1.0 ms)")' > "$d/repo/dev/bench/torch_gpu_baseline.py"
cat > "$d/repo/dev/bench/torch_sdpa_bench.py" <<'EOF'
print("PyTorch (dry run) SDPA table")
print(" 1024   64  16  32 default       |    0.200   343.6 |    0.800   214.7 |    1.000")
print(" 1024   64  16  32 cudnn         |    0.180   381.8 |    0.700   245.4 |    0.880")
print(" 1024   64  16  32 deterministic | n/a: no deterministic backward")
EOF
for t in nvidia-smi compute-sanitizer ncu; do cp dev/test/gpu_dryrun/tool "$d/tools/$t"; done
for p in test_gptcu attention encoder layernorm gelu classifier optimizer matmul quant matmul_lowp; do
    cp dev/test/gpu_dryrun/tool "$d/carry/bin/$p"
done
cp dev/test/gpu_dryrun/train_gptcu "$d/carry/bin/"
tar -cf - -C "$d/carry" bin lib | xz -T1 -1 > "$d/repo/gpu_carry/programs.tar.xz"
echo "dryrun-commit" > "$d/repo/gpu_carry/commit.txt"
mkdir -p "$d/repo/gpu_carry/zero_data" "$d/nlpcorpus"
for i in 0 1; do /usr/bin/python3 dev/test/make_shard.py "$d/repo/gpu_carry/zero_data/train_00000$i.bin" 5000 512 $((70 + i)); done
/usr/bin/python3 dev/test/make_shard.py "$d/repo/gpu_carry/zero_data/val_000000.bin" 3000 512 72
for s in train_000000 val_000000; do /usr/bin/python3 dev/test/make_shard.py "$d/nlpcorpus/nlpcorpus_$s.bin" 2000 50257 73; done
tar -cJf "$d/repo/gpu_carry/nlpcorpus.tar.xz" -C "$d" nlpcorpus

# phase NAME STEPS...: runs the phase; it must exit 0, every one of its steps must be in
# summary.md with PASS, and no table cell may be empty (a figure the phase could not read).
bundle() {  # bundle OUT PHASE...: the script as the device runs it, with the stand-ins (WORK: its work directory)
    PATH="$d/tools:$PATH" OUT="$1" WORK="${WORK:-$d/work}" PYTHON=/usr/bin/python3 DRYRUN_TRAIN_GPT="$root/train_gpt" \
        OMP_NUM_THREADS=1 bash "$d/repo/scripts/gpu_run_bundle.sh" "${@:2}"
}
phase() {
    local name=$1 out=$d/out_$1; shift
    bundle "$out" "$name" > "$d/$name.log" 2>&1
    local rc=$?
    check "$name: exit 0 (got $rc; log $d/$name.log)" test $rc -eq 0
    local missing=() s
    for s in "$@"; do grep -q "^| $s | PASS |" "$out/summary.md" || missing+=("$s"); done
    check "$name: steps PASS: $*${missing:+ (not: ${missing[*]})}" test ${#missing[@]} -eq 0
    check "$name: no failed, timed-out or missing step" bash -c "! grep -E 'FAIL|TIMEOUT|not found' '$out/summary.md'"
    check "$name: every table cell filled" bash -c "! grep -E '\\|\\s*\\|' '$out/summary.md'"
    check "$name: logs.tar.gz and device.txt returned" test -s "$out/logs.tar.gz" -a -s "$out/device.txt"
    check "$name: device.txt names the bundle's commit" grep -q "^bundle built from: dryrun-commit$" "$out/device.txt"
}
returned() { tar -tzf "$d/out_$1/logs.tar.gz" | grep -q -x "$2"; }  # returned PHASE PATH: PATH is in logs.tar.gz
with_mode() {  # with_mode PHASE MODE: how many of PHASE's train_gptcu runs ran with --attention MODE (none if one did not)
    local s n=0
    for s in $(sed -n 's/^| \(bench_[a-z0-9_]*\|profile_events_[a-z0-9_]*\) | PASS .*/\1/p' "$d/out_$1/summary.md"); do
        tar -xzOf "$d/out_$1/logs.tar.gz" "logs/$s.log" | grep -q "^train_gptcu (dry run): .*--attention $2" || { echo 0; return; }
        n=$((n + 1))
    done
    echo $n
}
# The deadline: a step that outlasts BUNDLE_SECONDS is cut there (killed 10 s after the SIGTERM
# it ignores), the steps after it are skipped, and the logs still come back, well before a device
# call's limit. It mostly sleeps, so it runs beside the phases below, in a work directory of its
# own (checked at the end).
# (30 s: the first step starts once the script's preflight, up to 10 s on a loaded machine where
# python3 imports torch, is done, with at least 20 s left.)
(t0=$SECONDS
 WORK=$d/work_deadline DRYRUN_SLEEP=60 BUNDLE_SECONDS=30 bundle "$d/out_deadline" checks > "$d/deadline.log" 2>&1
 echo $((SECONDS - t0)) > "$d/deadline.seconds") &
deadline_pid=$!
# (wgmma-rdq the fastest mode: the later phases in this work directory run with it)
DRYRUN_ATTENTION_TOKENS="wgmma-rdq=13000 mma-rdq=12500" phase checks test_gptcu_tiny test_gptcu_small test_gptcu_tiny_rt2 \
    test_gptcu_tiny_rdq attention attention_wgmma test_gptcu_tiny_wgmma test_gptcu_tiny_wgmma_fwd test_gptcu_tiny_recompute_wgmma test_gptcu_tiny_wgmma_rdq attention_wgmma_ws test_gptcu_tiny_wgmma_ws torch_sdpa harness_encoder \
    harness_layernorm harness_gelu harness_classifier harness_optimizer harness_matmul harness_quant harness_matmul_lowp \
    bench_d12_quick bench_d12_quick_rt2 bench_d12_quick_rdq bench_d12_quick_wgmma bench_d12_quick_wgmma_fwd \
    bench_d12_quick_wgmma_rdq bench_d12_quick_wgmma_ws profile_attention
check "checks: the attention kernels' ncu report returned (ws and pipelined: their harness passed)" \
    grep -q "^attention (dry run): --profile-once --wgmma --ws --pipelined$" "$d/out_checks/profile_attention.txt"
check "checks: the attention table pairs each mode's kernels and divides by SDPA's" bash -c "
    grep -q '^| wgmma-ws | 0.21 | 0.75 | 0.960 | 1.042 | 12345 | 1.000 |' '$d/out_checks/summary.md' &&
    grep -q '^| wgmma-rdq | 0.25 | 0.9 | 1.150 | 0.870 | 13000 | 1.053 |' '$d/out_checks/summary.md' &&
    grep -q '^| mma-rt2 | 0.3 | 1.1 | 1.400 | 0.714 | 12345 | 1.000 |' '$d/out_checks/summary.md' &&
    grep -q '^| (pipelined-wgmma-forward) | 0.22 | - | - | - | - | - |' '$d/out_checks/summary.md' &&
    grep -q '^| SDPA cudnn | 0.180 | 0.700 | 0.880 | 1.136 | - | - |' '$d/out_checks/summary.md'"
# (the warp-specialized kernel's sanitizer steps run: its harness passed in checks, same work directory)
phase sanitize test_gptcu_d12 test_gptcu_d12_wgmma memcheck_test_tiny memcheck_attention racecheck_attention memcheck_attention_wgmma \
    racecheck_attention_wgmma memcheck_attention_wgmma_ws racecheck_attention_wgmma_ws initcheck_test_tiny
phase recompute test_gptcu_recompute_small memcheck_recompute_tiny bench_recompute_d12
check "recompute: d12's table with the head's other chunk sizes (and no d48 row) in summary.md" \
    bash -c "grep -q '^| d12 | 16 | block | 8192 |' '$d/out_recompute/summary.md' && grep -q '^| d12 | 16 | none | 16384 |' '$d/out_recompute/summary.md' \
             && grep -q '^| d12 | 16 | block | 4096 |' '$d/out_recompute/summary.md' && ! grep -q '^| d48 ' '$d/out_recompute/summary.md'"
phase recompute_d48 bench_recompute_d48
check "recompute_d48: d48's table and budget rows in summary.md" \
    bash -c "grep -q '^| d48 | 4 | block |' '$d/out_recompute_d48/summary.md' && grep -q '^| d48 | 4 | 3 |' '$d/out_recompute_d48/summary.md'"
phase zero zero
check "zero: gpu_zero_check.sh's 33 checks passed" test "$(tar -xzOf "$d/out_zero/logs.tar.gz" logs/zero.log | grep -c '^PASS zero:')" = 33
check "zero: the runs' outputs come back" returned zero zero/one.out
check "zero: the runs' logs come back" returned zero zero/one/main.log
DRYRUN_GPU_MIB=143771 phase bench bench_d12_bf16 bench_d12_fp8 bench_d12_int8 bench_d12_fp8delayed bench_d12_fp8wgrad bench_d48_bf16 \
    bench_d48_fp8 bench_d48_int8 bench_d48_fp8delayed bench_d48_fp8wgrad bench_d48_accum4_bf16 \
    bench_d48_accum4_fp8wgrad bench_d48_accum4_fp8fast profile_events_d12_bf16 \
    profile_events_d12_fp8 profile_events_d48_bf16 profile_events_d48_fp8
check "bench: the d48 accumulation ratios are computed" grep -q "^| B 4, 4 micro-steps per step | 12345 | 12345 | 1.000 |" "$d/out_bench/summary.md"
check "bench: the precision table has its figures (d48 B 16 on an H200's memory)" grep -q "^| d48 | 16 | 12345 | 1.2% | 12345 | 12345 | 12345 | 12345 |" "$d/out_bench/summary.md"
check "bench: its 23 runs with the mode checks chose" test "$(with_mode bench wgmma-rdq)" = 23
check "bench: the --profile tables have the parts of each run, d48's first" \
    bash -c "grep '^| ms per step ' '$d/out_bench/summary.md' | tr '\n' '/' |
                 grep -qx '| ms per step (--attention wgmma-rdq) | d48 B 16 bf16 | d48 B 16 fp8 |/| ms per step (--attention wgmma-rdq) | d12 B 16 bf16 | d12 B 16 fp8 |/' &&
             test \$(grep -c '^| quantize | 0.000 | 1.000 |$' '$d/out_bench/summary.md') = 2 &&
             test \$(grep -c '^| all parts | 10.000 | 10.000 |$' '$d/out_bench/summary.md') = 2"
check "bench: d48's precision row before d12's" \
    bash -c "grep -E '^\| d(12|48) \| 16 \|' '$d/out_bench/summary.md' | cut -c1-5 | tr '\n' ' ' | grep -qx '| d48 | d12 '"
phase bench2 bench_d48_b8_bf16 bench_d48_b8_fp8wgrad bench_d48_b8_fp8fast \
    bench_d12_bf16_gelu0 bench_d12_bf16_gelu1 bench_d12_bf16_gelu2
check "bench2: the d48 ratios are computed" grep -q "^| B 8 | 12345 | 12345 | 1.000 |" "$d/out_bench2/summary.md"
check "bench2: its 6 runs with the mode checks chose" test "$(with_mode bench2 wgmma-rdq)" = 6
phase bench3 bench_d24_bf16 bench_d24_fp8 bench_d24_int8 bench_d24_fp8delayed bench_d24_fp8wgrad bench_d36_bf16 \
    bench_d36_fp8 bench_d36_int8 bench_d36_fp8delayed bench_d36_fp8wgrad profile_events_d24_bf16 \
    profile_events_d24_fp8 profile_events_d36_bf16 profile_events_d36_fp8
check "bench3: the sizes' MFU is computed" grep -q "^| d36 | 8 | 12345 | 1.2% | 12345 | 12345 | 12345 | 12345 |" "$d/out_bench3/summary.md"
check "bench3: its 20 runs with the mode checks chose" test "$(with_mode bench3 wgmma-rdq)" = 20
phase torch bench_d12_bf16_b16 bench_d12_attention_b16 bench_d12_attention_noclip_b16 torch_d12_b16 bench_d12_bf16_b32 \
    bench_d12_attention_b32 bench_d12_attention_noclip_b32 torch_d12_b32 bench_d12_bf16_b64 bench_d12_attention_b64 \
    bench_d12_attention_noclip_b64 torch_d12_b64
check "torch: the ratios are computed, with the mode checks chose" \
    bash -c "grep -q '^| d12 bf16 T 1024 | train_gptcu tokens/s (MFU) | --attention wgmma-rdq (MFU) |' '$d/out_torch/summary.md' &&
             grep -q '^| B 32 | 12345 (1.2%) | 12345 (1.2%) | 12345 (1.2%) | 23456 | 0.526 | 0.526 | 0.526 |' '$d/out_torch/summary.md'"
check "torch: its attention columns ran with that mode" \
    bash -c "tar -xzOf '$d/out_torch/logs.tar.gz' logs/bench_d12_attention_b16.log logs/bench_d12_attention_noclip_b64.log |
             grep -c '^train_gptcu (dry run): .*--attention wgmma-rdq' | grep -qx 2"
check "torch: B 64 first" bash -c "grep -m1 '^| [a-z_0-9]*_b[0-9]* |' '$d/out_torch/summary.md' | grep -q '^| bench_d12_bf16_b64 |'"
phase profile profile_attention profile_d12_bf16 profile_summary_d12_bf16 profile_d48_bf16 profile_summary_d48_bf16 profile_d48_fp8 \
    profile_summary_d48_fp8
check "profile: the three kernel tables are returned in profile.md" \
    test "$(grep -c "matmul_kernel.* | 1 | 0.013 |" "$d/out_profile/profile.md")" = 3
check "profile: ncu's raw CSVs come back" returned profile profile_d48_fp8.csv
check "profile: the attention kernels' report, with the wgmma ones and (its harness passed in checks) the warp-specialized one" \
    grep -q "^attention (dry run): --profile-once --wgmma --ws --pipelined$" "$d/out_profile/profile_attention.txt"
phase curves curves
check "curves: curves.csv returned with 1000 steps" test "$(wc -l < "$d/out_curves/curves.csv")" = 1001
# The wgmma gate: once attention --wgmma fails, the later wgmma steps of this call and of later
# calls on the same machine are skipped, not run; WGMMA=0 skips them all.
DRYRUN_FAIL_WGMMA=1 bundle "$d/out_gate" checks torch > "$d/gate.log" 2>&1
check "wgmma gate: attention_wgmma's failure is recorded" grep -q "^| attention_wgmma | FAIL (exit 1) |" "$d/out_gate/summary.md"
check "wgmma gate: the other 10 wgmma steps of checks are skipped" \
    test "$(grep -c "^| [a-z0-9_]*wgmma[a-z0-9_]* | SKIPPED (attention_wgmma did not pass on this machine) |" "$d/out_gate/summary.md")" = 10
check "wgmma gate: checks choose mma again; torch runs it once, and no wgmma mode" \
    bash -c "grep -q '^attention mode of the later phases: mma ' '$d/out_gate/summary.md' &&
             grep -q '^| B 64 | 12345 (1.2%) | - | 12345 (1.2%) | 23456 | 0.526 | - | 0.526 |' '$d/out_gate/summary.md'"
# The choice: never a mode whose checks failed in the call (wgmma-rdq, the fastest, here); ATTENTION
# overrides it, and must be a mode.
WORK=$d/work_choice DRYRUN_ATTENTION_TOKENS="wgmma-rdq=30000 wgmma-ws=20000" DRYRUN_FAIL_TEST="tiny wgmma-rdq" \
    bundle "$d/out_choice" checks > "$d/choice.log" 2>&1
check "attention mode: not one whose test failed" \
    grep -q "^attention mode of the later phases: wgmma-ws (d12 B 16: 20000 tokens/s, 1.620 x mma" "$d/out_choice/summary.md"
WORK=$d/work_choice ATTENTION=mma-rt2 bundle "$d/out_override" torch > "$d/override.log" 2>&1
check "attention mode: ATTENTION overrides the choice" \
    grep -q "^| d12 bf16 T 1024 | train_gptcu tokens/s (MFU) | --attention mma-rt2 (MFU) |" "$d/out_override/summary.md"
WORK=$d/work_choice ATTENTION=flash bundle "$d/out_bad" torch > "$d/bad.log" 2>&1
bad_rc=$?
check "attention mode: ATTENTION=flash refused (exit 2, got $bad_rc)" \
    bash -c "test $bad_rc -eq 2 && grep -q 'ATTENTION=flash is not an --attention mode' '$d/bad.log'"
rm -f "$d/work/wgmma_did_not_pass"
WGMMA=0 bundle "$d/out_nowgmma" sanitize > "$d/nowgmma.log" 2>&1
check "WGMMA=0: sanitize's 5 wgmma steps are skipped, its 5 others pass" \
    test "$(grep -c "wgmma.* | SKIPPED (WGMMA=0) |" "$d/out_nowgmma/summary.md") $(grep -c "| PASS |" "$d/out_nowgmma/summary.md")" = "5 5"
wait "$deadline_pid"
check "deadline: the call ends at BUNDLE_SECONDS + the 10 s to KILL (took $(cat "$d/deadline.seconds") s of 40)" \
    test "$(cat "$d/deadline.seconds")" -lt 50
check "deadline: the step in progress is cut" grep -qE "^\| test_gptcu_tiny \| TIMEOUT \((2[0-9]|30)s\) \|" "$d/out_deadline/summary.md"
check "deadline: the 28 steps after it are skipped" test "$(grep -c "| SKIPPED (call deadline) |" "$d/out_deadline/summary.md")" = 28
check "deadline: logs.tar.gz returned" returned deadline logs/test_gptcu_tiny.log
echo "$fails failure(s)"
[ $fails -eq 0 ]
