#!/usr/bin/env bash
# Runs on the GPU machine from the bundle of scripts/gpu_bundle.sh: the GPU trainer's checks against
# the CPU reference, every kernel harness (attention beside PyTorch's SDPA), compute-sanitizer, the
# d12 benchmark, the recompute checks and d12's memory/speed table (phase recompute; d48's table:
# phase recompute_d48), the ZeRO checks
# (phase zero: scripts/gpu_zero_check.sh, PASS/FAIL lines in the zero step's log), the throughput of
# every block-matmul precision, and bf16's MFU, at d12 and d48, d48 with 4 micro-steps per step
# (bf16 against all-FP8), with where a step's time goes in bf16 and FP8 by train_gptcu --profile
# (phase bench), the same at d24 and d36 (phase bench3), d48 at B 8 (bf16 against all-FP8), and
# --gelu-fusion 0/1/2 at d12 (phase bench2), train_gptcu beside PyTorch at d12 B 64, 16 and 32, also
# with the fastest --attention mode whose checks passed, and with it and PyTorch's optimizer (no
# clipping) (phase torch), the attention kernels' stall reasons and pipe use at T 1024 HS 64 under
# Nsight Compute ($OUT/profile_attention.txt: at the end of phase checks, else of profile), where a
# training step's time goes, kernel by kernel, under Nsight Compute (phase profile:
# $OUT/profile.md, d12 bf16 and d48 bf16/fp8), and the d12 loss
# curves of bf16, fp8 and int8 over 1000 steps of the nlp-corpus shards (phase curves:
# $OUT/curves.csv, and .png when the machine's python3 has matplotlib; else
# dev/bench/plot_curves.py makes it from the CSV). Each step has a time limit. $OUT (or
# build/gpu_run) receives at most 7 files (the device tool returns 8):
# device.txt (the GPU, the bundle's commit, the machine's kernel and torch), summary.md (a row per
# step, and the tables: the checks phase's attention table pairs each --attention mode's kernels
# at T 1024 HS 64 with SDPA's and d12's tokens/s), logs.tar.gz (every step's log, the ZeRO runs'
# outputs and logs, ncu's raw CSVs), and the phases' results (profile_attention.txt, profile.md, curves.csv, curves.png). Bulky work (ZeRO
# checkpoints, the curves' per-run logs) stays in $WORK (/tmp/gpu_run_work). WGMMA=0 skips the
# steps of the wgmma attention (see wgmma_step below).
# The script keeps its own deadline, BUNDLE_SECONDS (default 570) after it starts: a step is sent
# SIGTERM there and, if deaf to it (a program in a hung kernel), killed 10 s later; a step that
# would start with less than 20 s left is recorded as SKIPPED; so the logs are packed and returned
# before the device tool's limit (600 s a call) kills the call. (An outer `timeout` cannot do
# this: it signals bash, which waits for the step in progress, since each step runs under its own
# timeout in another process group.) Give a call that the device
# runs under a shorter limit (less device time left) BUNDLE_SECONDS = that limit - 30.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu_run} work=${WORK:-/tmp/gpu_run_work}
mkdir -p "$out" "$work/logs"
# The phases to run, in the order written below: any of checks, sanitize, recompute, recompute_d48,
# zero, bench, bench2, bench3, torch, profile, curves, or all (the default). Measured on an H200
# (2026-11-27, c95ef56): checks 1.1, zero 0.6, torch 2.1 (before its three no-clipping rows, ~0.7
# more), bench 4.3 (before its four fp8 --gelu-fusion rows, ~1.4 more, and its three d48
# accumulation rows, ~1 more), sanitize 4.7 minutes (without initcheck, cut by the call's deadline;
# the two d12 checks are 3.6 of it); on an H100 (2026-11-23) curves 2.5; estimated: recompute ~7
# (5 steps per policy, d12's 10 runs), recompute_d48 ~6 (8 runs of ~45 s), bench3 ~5.5 (~7.5 with
# the fast-accumulation rows), bench2 ~6 (d48 B 8, fast accumulation); profile not yet timed (its
# step limits add up to 1020 s: it ends at the deadline, and profile.md grows table by table, d12
# first).
phases=" ${*:-all} "
for p in $phases; do
    case $p in checks | sanitize | recompute | recompute_d48 | zero | bench | bench2 | bench3 | torch | profile | curves | all) ;;
    *) echo "gpu_run_bundle.sh: no phase '$p' (checks sanitize recompute recompute_d48 zero bench bench2 bench3 torch profile curves all)" >&2
       exit 2 ;;
    esac
done
# ATTENTION: the --attention mode of the phases after checks (below, attention_mode), instead of
# the one this machine's checks chose.
attention_modes=" mma mma-rt2 mma-rdq wgmma wgmma-fwd wgmma-rdq wgmma-ws "
if [ -n "${ATTENTION:-}" ] && [[ $attention_modes != *" $ATTENTION "* ]]; then
    echo "gpu_run_bundle.sh: ATTENTION=$ATTENTION is not an --attention mode (${attention_modes# })" >&2; exit 2
fi
deadline=${BUNDLE_SECONDS:-570}
[[ $deadline =~ ^[0-9]+$ ]] || { echo "gpu_run_bundle.sh: BUNDLE_SECONDS=$deadline is not a number of seconds" >&2; exit 2; }
wants() { [[ $phases == *" $1 "* || $phases == *" all "* ]]; }  # wants PHASE
# The programs and their libraries, unpacked once per machine from gpu_bundle.sh's archive.
if [ ! -x "$work/carry/bin/train_gptcu" ] || [ gpu_carry/programs.tar.xz -nt "$work/carry/bin/train_gptcu" ]; then
    rm -rf "$work/carry" && mkdir -p "$work/carry" && xz -dc gpu_carry/programs.tar.xz | tar -xf - -C "$work/carry" ||
        { echo "cannot unpack gpu_carry/programs.tar.xz (run scripts/gpu_bundle.sh here, carry gpu_carry)" >&2; exit 1; }
fi
# (PYTHONUNBUFFERED: a Python step cut by its time limit still leaves what it printed in its log)
export LD_LIBRARY_PATH="$work/carry/lib:${LD_LIBRARY_PATH:-}" OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} PYTHONUNBUFFERED=1
bin=$work/carry/bin
# NCCL (linked by train_gptcu and test_gptcu; 218 MB, too large to carry): the system's, else the
# one PyTorch's pip package nvidia-nccl-cu13 installs.
if ! ldconfig -p | grep -q 'libnccl\.so\.2' && ! ls /usr/local/cuda*/lib*/libnccl.so.2 > /dev/null 2>&1; then
    nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
    [ -n "$nccl_dir" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$nccl_dir"
else
    for d in /usr/local/cuda*/lib*; do [ -f "$d/libnccl.so.2" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d" && break; done
fi
ldd $bin/train_gptcu | grep -q 'libnccl.so.2 => not found' && echo "warning: libnccl.so.2 not found: train_gptcu and test_gptcu cannot start"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
summary="$out/summary.md"
{ echo "| step | result | seconds |"; echo "|---|---|---|"; } > "$summary"
step() {  # step NAME LIMIT_SECONDS COMMAND...: LIMIT_SECONDS, or what is left before the deadline
    local name=$1 limit=$2; shift 2
    local left=$(( deadline - SECONDS ))
    if (( left < 20 )); then
        echo "| $name | SKIPPED (call deadline) | 0 |" >> "$summary"; echo "== $name: SKIPPED (call deadline)"
        echo "SKIPPED (call deadline: BUNDLE_SECONDS=$deadline)" > "$work/logs/$name.log"
        return 0
    fi
    (( limit > left )) && limit=$left
    local t0=$(date +%s)
    # KILL 10 s after the TERM: the trainers answer TERM by finishing their step, which a hung
    # kernel never does.
    timeout -k 10 "$limit" "$@" > "$work/logs/$name.log" 2>&1
    local rc=$? result=PASS secs=$(( $(date +%s) - t0 ))
    if [ $rc -eq 124 ] || { [ $rc -eq 137 ] && (( secs >= limit )); }; then result="TIMEOUT (${limit}s)"
    elif [ $rc -ne 0 ]; then result="FAIL (exit $rc)"; fi
    echo "| $name | $result | $secs |" >> "$summary"
    echo "== $name: $result"; tail -n 25 "$work/logs/$name.log"
    return $rc
}
# The wgmma attention had never run when these steps were written. Once its harness
# (attention_wgmma) has not passed on this machine, or with WGMMA=0 in the environment, the steps
# that use it are recorded as SKIPPED instead of run: a kernel that hangs then costs one time
# limit, not ten. (The flag lives in $WORK, which a fresh machine does not have: after a failure
# there, give the next calls WGMMA=0.)
wgmma_gate=$work/wgmma_did_not_pass
skipped() {  # skipped NAME WHY: the step recorded as skipped
    echo "| $1 | SKIPPED ($2) | 0 |" >> "$summary"; echo "== $1: SKIPPED ($2)"
    echo "SKIPPED ($2)" > "$work/logs/$1.log"  # no earlier call's figures in this call's tables
}
wgmma_step() {  # wgmma_step NAME LIMIT COMMAND...: step, unless the wgmma kernels are known not to work
    local why=""
    [ "${WGMMA:-1}" = 0 ] && why="WGMMA=0"
    [ -e "$wgmma_gate" ] && why="attention_wgmma did not pass on this machine"
    if [ -n "$why" ]; then skipped "$1" "$why"; return 0; fi
    step "$@"
}
tokens_per_s() { awk '/^bench_tokens_per_s/ {print $2}' "$work/logs/$1.log" 2>/dev/null; }  # tokens_per_s STEP_NAME
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", a / b; else print "-" }'; }  # ratio A B: A / B
# MFU of a --bench step: tokens/s * mfu_flops_per_token / mfu_peak_flops (train_gptcu prints both at startup)
mfu() { awk '/^mfu_flops_per_token/ {f=$2} /^mfu_peak_flops/ {p=$2} /^bench_tokens_per_s/ {t=$2}
             END { if (t > 0 && p > 0) printf "%.1f%%", 100 * t * f / p }' "$work/logs/$1.log" 2>/dev/null; }  # mfu STEP_NAME
with_mfu() { local t=$(tokens_per_s "$1"); [ -n "$t" ] && echo "$t ($(mfu "$1"))" || echo "-"; }  # with_mfu STEP_NAME
# What ran where: the GPU, the commit the bundle was built from (gpu_bundle.sh), the kernel (4.4.0 is
# gVisor, where compute-sanitizer and ncu do not work), torch, and any library the programs lack.
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "bundle built from: $(cat gpu_carry/commit.txt 2>/dev/null || echo unknown)"
  echo "kernel: $(uname -r)"
  echo "torch: $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1 | tail -n 1)"
  ldd $bin/* 2>/dev/null | grep 'not found' | sort -u | sed 's/^\s*/missing library: /'; } | tee "$out/device.txt"
# d48's micro-batch in the bench phase: issue 4 asks for the largest that fits, and issue 8's FP8
# ratio is that of the GEMMs' real size. B 16 keeps about 39 GiB of activations beside 26 GiB of
# parameters, gradients and AdamW state (d48 B 4 kept 9.8 GiB on an H100): 16 on a GPU of 120 GiB
# or more (H200), else 8 (scripts/run_gpt2.sh's cap for 80 GB).
gpu_mib=$(awk -F', ' 'NR == 1 { print $3 + 0 }' "$out/device.txt")
d48_b=8; (( ${gpu_mib:-0} >= 120 * 1024 )) && d48_b=16
# Every step's log, and the ZeRO runs' outputs and logs and ncu's raw CSVs (what a FAIL line
# points to), come back even when the deadline or the device call's limit ends this script.
trap '(cd "$work" && find logs zero profile_*.csv \( -name "*.log" -o -name "*.out" -o -name "*.csv" \) 2>/dev/null |
      tar -czf "$out/logs.tar.gz" -T -)' EXIT
trap 'exit 143' TERM
# attention_table: each --attention mode's kernels at T 1024, HS 64 (issue 5's goal) as the harness
# timed them in this call (its "attention_ms T HS NAME MS" lines; a mode's forward and backward are
# read from one run where they can be), PyTorch's SDPA rows beside them (torch_sdpa, same call), and
# d12's step with each mode (bench_d12_quick*): the figures the next defaults are chosen by, into
# summary.md. "-": not measured in this call.
harness_ms() {  # harness_ms STEP NAME: NAME's time at T 1024, HS 64 in STEP's log
    awk -v n="$2" '$1 == "attention_ms" && $2 == 1024 && $3 == 64 && $4 == n { v = $5 } END { if (v != "") print v }' \
        "$work/logs/$1.log" 2>/dev/null
}
sum_ms() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", a + b; else print "-" }'; }
attention_table() {
    local sdpa base row f b t
    sdpa=$(awk '$1 == 1024 && $2 == 64 && $5 == "default" && $7 ~ /^[0-9.]+$/ { print $7 + $10; exit }' \
        "$work/logs/torch_sdpa.log" 2>/dev/null)
    base=$(tokens_per_s bench_d12_quick)
    { echo; echo "| --attention, T 1024 HS 64 | forward ms | backward ms | fwd+bwd ms | speed vs SDPA default | d12 B 16 tokens/s | vs mma |"
      echo "|---|---|---|---|---|---|---|"
      # MODE FORWARD BACKWARD BENCH: FORWARD and BACKWARD as STEP:NAME
      for row in "mma attention:mma_fwd attention:mma_bwd bench_d12_quick" \
                 "mma-rt2 attention:mma_fwd attention:mma_rt2_bwd bench_d12_quick_rt2" \
                 "mma-rdq attention:mma_fwd attention:mma_rdq_bwd bench_d12_quick_rdq" \
                 "wgmma attention_wgmma:wgmma_fwd attention_wgmma:wgmma_bwd bench_d12_quick_wgmma" \
                 "wgmma-fwd attention_wgmma:wgmma_fwd attention_wgmma:mma_bwd bench_d12_quick_wgmma_fwd" \
                 "wgmma-rdq attention_wgmma:wgmma_fwd attention_wgmma:wgmma_rdq_bwd bench_d12_quick_wgmma_rdq" \
                 "wgmma-ws attention_wgmma_ws:wgmma_ws_fwd attention_wgmma_ws:wgmma_ws_bwd bench_d12_quick_wgmma_ws" \
                 "(pipelined-wgmma-forward) attention_wgmma_ws:wgmma_pipelined_fwd - -"; do
          set -- $row
          f=$(harness_ms "${2%%:*}" "${2#*:}")
          b=; [ "$3" = - ] || b=$(harness_ms "${3%%:*}" "${3#*:}")
          t=; [ "$4" = - ] || t=$(tokens_per_s "$4")
          echo "| $1 | ${f:--} | ${b:--} | $(sum_ms "$f" "$b") | $(ratio "$sdpa" "$(sum_ms "$f" "$b")") | ${t:--} | $(ratio "$t" "$base") |"
      done
      awk -v sdpa="$sdpa" '$1 == 1024 && $2 == 64 && $7 ~ /^[0-9.]+$/ {
          r = (sdpa > 0 && $13 > 0) ? sprintf("%.3f", sdpa / $13) : "-"
          printf "| SDPA %s | %s | %s | %s | %s | - | - |\n", $5, $7, $10, $13, r }' "$work/logs/torch_sdpa.log" 2>/dev/null
    } >> "$summary"
}
# choose_attention_mode: of the --attention modes whose checks passed in this call (the trainer
# against the CPU reference, test_gptcu tiny MODE, and the harness of its kernels against fp64),
# the one of most d12 B 16 tokens/s (bench_d12_quick*), into $work/attention_mode for the later
# phases of this call and of later calls on this machine, and into summary.md. A mode that failed
# or did not run in this call is never chosen; none measured: nothing is written.
passed() { grep -q "^| $1 | PASS |" "$summary"; }  # passed STEP: STEP passed in this call
choose_attention_mode() {
    local row s t ok best= best_t=0
    # MODE BENCH_STEP CHECK_STEPS...
    for row in "mma bench_d12_quick test_gptcu_tiny attention" \
               "mma-rt2 bench_d12_quick_rt2 test_gptcu_tiny_rt2 attention" \
               "mma-rdq bench_d12_quick_rdq test_gptcu_tiny_rdq attention" \
               "wgmma bench_d12_quick_wgmma test_gptcu_tiny_wgmma attention_wgmma" \
               "wgmma-fwd bench_d12_quick_wgmma_fwd test_gptcu_tiny_wgmma_fwd attention_wgmma" \
               "wgmma-rdq bench_d12_quick_wgmma_rdq test_gptcu_tiny_wgmma_rdq attention_wgmma" \
               "wgmma-ws bench_d12_quick_wgmma_ws test_gptcu_tiny_wgmma_ws attention_wgmma_ws"; do
        set -- $row
        ok=1; for s in "${@:2}"; do passed "$s" || ok=0; done
        t=$(tokens_per_s "$2")
        if (( ok )) && [ -n "$t" ] && awk -v a="$t" -v b="$best_t" 'BEGIN { exit !(a > b) }'; then best=$1 best_t=$t; fi
    done
    if [ -n "$best" ]; then
        echo "$best" > "$work/attention_mode"
        { echo; echo "attention mode of the later phases: $best (d12 B 16: $best_t tokens/s, $(ratio "$best_t" "$(tokens_per_s bench_d12_quick)") x mma; checks passed in this call)"; } >> "$summary"
    fi
}
# The attention kernels (issue 5: the backward is most of the gap to SDPA) under Nsight Compute,
# each once at T 1024 HS 64: where their time goes (stall reasons, pipe use, occupancy,
# shared-memory traffic), into $out/profile_attention.txt; about half a minute. At the end of
# checks (a call that runs checks always returns it: the figures a session without a GPU can
# work from), else in phase profile.
profile_attention_step() {
    if [ -z "$ncu" ]; then echo "| ncu | not found | 0 |" >> "$summary"; return 0; fi
    local wg=--wgmma
    { [ "${WGMMA:-1}" = 0 ] || [ -e "$wgmma_gate" ]; } && wg=
    # the warp-specialized backward and forward and the pipelined forward, once their harness passed here
    [ -n "$wg" ] && [ -e "$work/ws_passed" ] && wg="$wg --ws --pipelined"
    step profile_attention 120 "$ncu" --clock-control none --kernel-name regex:attention_ --section SpeedOfLight \
        --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
        --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis $bin/attention --profile-once $wg
    cp "$work/logs/profile_attention.log" "$out/profile_attention.txt"
}
if wants checks; then
    step test_gptcu_tiny 90 $bin/test_gptcu tiny
    step test_gptcu_small 120 $bin/test_gptcu small
    # the attention backward with 2 row tiles per warp (--attention mma-rt2; mma's bits), never run on a GPU
    step test_gptcu_tiny_rt2 90 $bin/test_gptcu tiny mma-rt2
    # the backward with dQ by integer reduction in its dK/dV kernel (--attention mma-rdq), never run on a GPU
    step test_gptcu_tiny_rdq 90 $bin/test_gptcu tiny mma-rdq
    step attention 120 $bin/attention
    wgmma_step attention_wgmma 150 $bin/attention --wgmma || touch "$wgmma_gate"  # the wgmma kernels (sm_90a) alone
    # the trainer with them (--attention wgmma) against the CPU reference, and recompute's bits
    wgmma_step test_gptcu_tiny_wgmma 90 $bin/test_gptcu tiny wgmma
    # the wgmma forward with the mma.sync backward (--attention wgmma-fwd): each ran here, the pair not yet
    wgmma_step test_gptcu_tiny_wgmma_fwd 90 $bin/test_gptcu tiny wgmma-fwd
    wgmma_step test_gptcu_tiny_recompute_wgmma 150 $bin/test_gptcu tiny recompute wgmma
    # the wgmma backward with dQ by integer reduction (--attention wgmma-rdq), never run on a GPU
    wgmma_step test_gptcu_tiny_wgmma_rdq 90 $bin/test_gptcu tiny wgmma-rdq
    # the same warp-specialized, and the forward too (--attention wgmma-ws: producer threads, two
    # consumer warpgroups, mbarriers), never run on a GPU: the harness first, in a run of its own (a
    # fault in their protocol hangs until the step's limit), whose failure skips only the steps of
    # these kernels; the pipelined wgmma forward (harness only, never run on a GPU) in the same run
    ws_why=
    wgmma_step attention_wgmma_ws 150 $bin/attention --wgmma --ws --pipelined || ws_why="attention_wgmma_ws did not pass"
    [ -z "$ws_why" ] && [ -s "$work/logs/attention_wgmma_ws.log" ] && ! grep -q '^SKIPPED' "$work/logs/attention_wgmma_ws.log" &&
        touch "$work/ws_passed"  # profile's ncu looks at it then
    if [ -z "$ws_why" ]; then wgmma_step test_gptcu_tiny_wgmma_ws 90 $bin/test_gptcu tiny wgmma-ws
    else skipped test_gptcu_tiny_wgmma_ws "$ws_why"; fi
    step torch_sdpa 120 python3 dev/bench/torch_sdpa_bench.py  # issue 5's baseline, same call as the harness's table
    for h in encoder layernorm gelu classifier optimizer matmul quant matmul_lowp; do step "harness_$h" 30 $bin/$h; done
    step bench_d12_quick 60 $bin/train_gptcu --bench -e d12 -b 16 -t 1024 -x 12
    step bench_d12_quick_rt2 60 $bin/train_gptcu --bench -e d12 -b 16 -t 1024 -x 12 --attention mma-rt2
    step bench_d12_quick_rdq 60 $bin/train_gptcu --bench -e d12 -b 16 -t 1024 -x 12 --attention mma-rdq
    wgmma_step bench_d12_quick_wgmma 60 $bin/train_gptcu --bench -e d12 -b 16 -t 1024 -x 12 --attention wgmma
    # the wgmma forward (1.28x mma.sync's on the H200) with the mma.sync backward (the wgmma one is 0.79x)
    wgmma_step bench_d12_quick_wgmma_fwd 60 $bin/train_gptcu --bench -e d12 -b 16 -t 1024 -x 12 --attention wgmma-fwd
    wgmma_step bench_d12_quick_wgmma_rdq 60 $bin/train_gptcu --bench -e d12 -b 16 -t 1024 -x 12 --attention wgmma-rdq
    if [ -z "$ws_why" ]; then
        wgmma_step bench_d12_quick_wgmma_ws 60 $bin/train_gptcu --bench -e d12 -b 16 -t 1024 -x 12 --attention wgmma-ws
    else skipped bench_d12_quick_wgmma_ws "$ws_why"; fi
    attention_table
    choose_attention_mode
    profile_attention_step
fi
# The --attention mode of the phases below (ours beside PyTorch, the precision and --profile
# tables, Nsight Compute): $ATTENTION, else the one this machine's checks chose (in this call or an
# earlier one), else mma (the trainer's default). A wgmma mode's steps pass the wgmma gate.
attention_mode=${ATTENTION:-$(cat "$work/attention_mode" 2>/dev/null)}
attention_mode=${attention_mode:-mma}
att=(--attention "$attention_mode")
attention_step() {  # attention_step NAME LIMIT COMMAND...: a step that runs with $att
    if [[ $attention_mode == wgmma* ]]; then wgmma_step "$@"; else step "$@"; fi
}
if wants sanitize; then  # compute-sanitizer's short runs first, then the d12 checks (minutes each)
    if [ -n "$sanitizer" ]; then
        step memcheck_test_tiny 300 "$sanitizer" --tool memcheck --error-exitcode 1 $bin/test_gptcu tiny
        # reads of device memory that nothing wrote (t_47 runs the same check in the CPU emulator)
        step initcheck_test_tiny 300 "$sanitizer" --tool initcheck --error-exitcode 1 $bin/test_gptcu tiny
        step memcheck_attention 100 "$sanitizer" --tool memcheck --error-exitcode 1 $bin/attention --check
        step racecheck_attention 120 "$sanitizer" --tool racecheck --error-exitcode 1 $bin/attention --check-small
        wgmma_step memcheck_attention_wgmma 150 "$sanitizer" --tool memcheck --error-exitcode 1 $bin/attention --wgmma --check
        wgmma_step racecheck_attention_wgmma 150 "$sanitizer" --tool racecheck --error-exitcode 1 $bin/attention --wgmma --check-small
        # the warp-specialized backward (mbarriers) and the pipelined forward, only after their harness
        # passed in this call's checks
        for tool in memcheck racecheck; do
            if [ -e "$work/ws_passed" ]; then
                wgmma_step ${tool}_attention_wgmma_ws 150 "$sanitizer" --tool $tool --error-exitcode 1 \
                    $bin/attention --wgmma --ws --pipelined --check-small
            else skipped ${tool}_attention_wgmma_ws "attention_wgmma_ws has not passed in this call (phase checks first)"; fi
        done
    else
        echo "| compute-sanitizer | not found | 0 |" >> "$summary"
    fi
    step test_gptcu_d12 400 $bin/test_gptcu d12
    wgmma_step test_gptcu_d12_wgmma 400 $bin/test_gptcu d12 wgmma
fi
# recompute_table NAME MODEL: bench_recompute_gpu.sh's table for MODEL, also into summary.md
recompute_table() {
    step "$1" 560 dev/bench/bench_recompute_gpu.sh $bin/train_gptcu "$2"
    { echo; cat "$work/logs/$1.log"; } >> "$summary"
}
if wants recompute; then  # selective recomputation
    step test_gptcu_recompute_small 150 $bin/test_gptcu small recompute
    if [ -n "$sanitizer" ]; then
        step memcheck_recompute_tiny 300 "$sanitizer" --tool memcheck --error-exitcode 1 $bin/test_gptcu tiny recompute
    fi
    recompute_table bench_recompute_d12 d12
fi
if wants recompute_d48; then recompute_table bench_recompute_d48 d48; fi
if wants zero; then
    step zero 300 bash scripts/gpu_zero_check.sh $bin gpu_carry/zero_data "$work/zero"
fi
# precision_table "MODEL B"...: tokens/s of each block-matmul precision at each size, T 1024, and
# bf16's MFU (issue 4's figure; issue 8's ratios), same settings as gpu_report.md's table
precision_table() {
    local sizes=("$@") run m
    for run in "${sizes[@]}"; do
        set -- $run
        for m in bf16 fp8 int8; do attention_step "bench_$1_$m" 90 $bin/train_gptcu --bench -e "$1" -b "$2" -t 1024 -x 12 "${att[@]}" --matmul $m; done
        # delayed scaling: the cast records the amax, so no separate amax pass reads each operand
        attention_step "bench_$1_fp8delayed" 90 $bin/train_gptcu --bench -e "$1" -b "$2" -t 1024 -x 12 "${att[@]}" --matmul fp8 --amax-history 16
        # and the weight gradient in FP8 too: three of the three block matmuls (issue 8's 1.3x goal
        # cannot be reached with the bf16 weight gradient's third left at bf16 speed)
        attention_step "bench_$1_fp8wgrad" 90 $bin/train_gptcu --bench -e "$1" -b "$2" -t 1024 -x 12 "${att[@]}" --matmul fp8 --amax-history 16 --fp8-wgrad 1
        # and every FP8 GEMM without promoting its partial sums (cuBLASLt's fast accumulation)
        attention_step "bench_$1_fp8fast" 90 $bin/train_gptcu --bench -e "$1" -b "$2" -t 1024 -x 12 "${att[@]}" --matmul fp8 --amax-history 16 \
            --fp8-wgrad 1 --fp8-fast-accum 2
        # and the GELU in FP8 GEMMs' epilogues: its backward (level 1, bf16's default), then the fc
        # forward's too (level 2); fp8's default stays 0 until these columns are measured
        for f in 1 2; do
            attention_step "bench_$1_fp8gelu$f" 90 $bin/train_gptcu --bench -e "$1" -b "$2" -t 1024 -x 12 "${att[@]}" --matmul fp8 \
                --amax-history 16 --fp8-wgrad 1 --fp8-fast-accum 2 --gelu-fusion $f
        done
    done
    { echo; echo "| model (--attention $attention_mode) | B | bf16 tokens/s | bf16 MFU | fp8 tokens/s | int8 tokens/s | fp8, --amax-history 16 | fp8, history 16, --fp8-wgrad 1 | the same, --fp8-fast-accum 2 | the same, --gelu-fusion 1 | the same, --gelu-fusion 2 |"
      echo "|---|---|---|---|---|---|---|---|---|---|---|"
      for run in "${sizes[@]}"; do
          set -- $run
          row="| $1 | $2 | $(tokens_per_s "bench_$1_bf16") | $(mfu "bench_$1_bf16") |"
          for m in fp8 int8 fp8delayed fp8wgrad fp8fast fp8gelu1 fp8gelu2; do row+=" $(tokens_per_s "bench_$1_$m") |"; done
          echo "$row"
      done; } >> "$summary"
}
# profile_table "MODEL B PRECISION"...: where a step's time goes, ms per step by part
# (train_gptcu --profile: CUDA events in the compute stream, llmc/profile.h), the runs side by
# side, into summary.md. Unlike the ncu phase (profile) it times the kernels as they run, without
# serializing them, so the device's idle gaps show too (part "host (loop, idle)"); fp8 is the
# fastest FP8 setting measured (--amax-history 16 --fp8-wgrad 1). Separate runs from the
# precision table's, whose tokens/s stay free of the events' cost.
profile_table() {
    local run logs=() header="| ms per step (--attention $attention_mode) |" rule="|---|"
    for run in "$@"; do
        set -- $run
        local flags=(--matmul $3)
        [ $3 = fp8 ] && flags+=(--amax-history 16 --fp8-wgrad 1)
        attention_step "profile_events_$1_$3" 120 $bin/train_gptcu --bench -e "$1" -b "$2" -t 1024 -x 10 --profile "${att[@]}" "${flags[@]}"
        logs+=("$work/logs/profile_events_$1_$3.log") header+=" $1 B $2 $3 |" rule+="---|"
    done
    { echo; echo "$header"; echo "$rule"
      # (every run prints every part in one order, "all parts" last; a skipped run's cells are -)
      awk 'FNR == 1 { f++ }
           /^profile  / { p = substr($0, 10, 20); sub(/ +$/, "", p); ms[p, f] = p == "all parts" ? $4 : $(NF - 1)
                          if (!(p in seen)) { seen[p] = 1; name[++n] = p } }
           END { for (i = 1; i <= n; i++) {
                     row = "| " name[i] " |"
                     for (j = 1; j <= f; j++) row = row " " ((name[i], j) in ms ? ms[name[i], j] : "-") " |"
                     print row } }' "${logs[@]}"; } >> "$summary"
}
# d48_ratio_table RUN LABEL ARGS...: d48 with ARGS in bf16, in fp8 (history 16, --fp8-wgrad 1) and
# the same with --fp8-fast-accum 2, and their ratios, as a one-row table into summary.md.
d48_ratio_table() {
    local run=$1 label=$2 m flags; shift 2
    for m in bf16 fp8wgrad fp8fast; do
        case $m in
        bf16) flags="--matmul bf16" ;;
        fp8wgrad) flags="--matmul fp8 --amax-history 16 --fp8-wgrad 1" ;;
        fp8fast) flags="--matmul fp8 --amax-history 16 --fp8-wgrad 1 --fp8-fast-accum 2" ;;
        esac
        attention_step "bench_d48_${run}_$m" 150 $bin/train_gptcu --bench -e d48 -t 1024 "${att[@]}" "$@" $flags
    done
    local a=$(tokens_per_s "bench_d48_${run}_bf16") b=$(tokens_per_s "bench_d48_${run}_fp8wgrad") \
          c=$(tokens_per_s "bench_d48_${run}_fp8fast")
    { echo; echo "| d48 (--attention $attention_mode) | bf16 tokens/s | fp8, history 16, --fp8-wgrad 1 | ratio | the same, --fp8-fast-accum 2 | ratio |"
      echo "|---|---|---|---|---|---|"
      echo "| $label | $a | $b | $(ratio "$b" "$a") | $c | $(ratio "$c" "$a") |"; } >> "$summary"
}
if wants bench; then
    # d48 first, all of it: issue 8's goal is set there, and a call's deadline cuts what comes last
    precision_table "d48 $d48_b"
    # With 4 micro-steps per optimizer step (-d 4 B T), as real training accumulates (GPT-2's 0.5 M
    # tokens a step are 128 micro-steps of d48 B 4): one step's AdamW and gradient norm (about 30
    # bytes per parameter, ~15 ms at d48) otherwise dilute whatever the matmul precision changes,
    # and the micro-steps after the first keep the weights' FP8 codes (llmc/matmul_lowp.cuh).
    d48_ratio_table accum4 "B 4, 4 micro-steps per step" -b 4 -d 16384 -x 6
    profile_table "d48 $d48_b bf16" "d48 $d48_b fp8"  # where FP8's time goes, for the next change
    precision_table "d12 16"
    profile_table "d12 16 bf16" "d12 16 fp8"
fi
if wants bench2; then  # d48 at B 8; GELU fusion at d12
    # d48 at B 8 (one micro-step of 8192 rows): B 4's GEMMs (N 4096 rows, K = C = 1600) are where
    # FP8 kernels stay furthest from their peak; both precisions at the same B.
    d48_ratio_table b8 "B 8" -b 8 -x 8
    # GELU in the cuBLASLt epilogues (--gelu-fusion: 0 off, 1 backward (the default), 2 both; see README)
    for f in 0 1 2; do
        attention_step "bench_d12_bf16_gelu$f" 90 $bin/train_gptcu --bench -e d12 -b 16 -t 1024 -x 12 "${att[@]}" --gelu-fusion $f
    done
    { echo; echo "| d12 B16 bf16 (--attention $attention_mode) | --gelu-fusion 0 | 1 | 2 |"; echo "|---|---|---|---|"
      row="| tokens/s |"
      for f in 0 1 2; do row+=" $(tokens_per_s "bench_d12_bf16_gelu$f") |"; done
      echo "$row"; } >> "$summary"
fi
if wants bench3; then  # issue 8 asks for d12, d24, d36 and d48
    precision_table "d24 16" "d36 8"
    profile_table "d24 16 bf16" "d24 16 fp8" "d36 8 bf16" "d36 8 fp8"
fi
if wants torch; then  # issue 4's comparison: PyTorch on the same GPU in the same call
    # up to B 64: issue 4 asks for the largest micro-batch that fits (first, before a deadline can
    # cut it); with the output head in chunks d12 B 64 should keep about 19 GB of activations here
    # (a failed step shows which side ran out). Ours with the default attention (mma), with
    # $attention_mode (not again where that is mma), and with it and the baseline's optimizer:
    # AdamW without gradient or update clipping (one pass, llmc/adamw.cuh).
    for B in 64 16 32; do
        step "bench_d12_bf16_b$B" 90 $bin/train_gptcu --bench -e d12 -b $B -t 1024 -x 12
        if [ "$attention_mode" != mma ]; then
            attention_step "bench_d12_attention_b$B" 90 $bin/train_gptcu --bench -e d12 -b $B -t 1024 -x 12 "${att[@]}"
        else skipped "bench_d12_attention_b$B" "the attention mode is mma: the column before"; fi
        attention_step "bench_d12_attention_noclip_b$B" 90 $bin/train_gptcu --bench -e d12 -b $B -t 1024 -x 12 "${att[@]}" \
            --grad-clip 0 --update-clip 0
        step "torch_d12_b$B" 300 env B=$B python3 dev/bench/torch_gpu_baseline.py
    done
    { echo; echo "| d12 bf16 T 1024 | train_gptcu tokens/s (MFU) | --attention $attention_mode (MFU) | $attention_mode, no clipping (MFU) | PyTorch (torch.compile, SDPA, no clipping) tokens/s | ratio | $attention_mode ratio | no clipping ratio |"
      echo "|---|---|---|---|---|---|---|---|"
      for B in 16 32 64; do
          ours=$(tokens_per_s "bench_d12_bf16_b$B") mode=$(tokens_per_s "bench_d12_attention_b$B")
          nc=$(tokens_per_s "bench_d12_attention_noclip_b$B")
          theirs=$(sed -n 's/.*: \([0-9]*\) tokens\/s.*/\1/p' "$work/logs/torch_d12_b$B.log")
          echo "| B $B | $(with_mfu "bench_d12_bf16_b$B") | $(with_mfu "bench_d12_attention_b$B") |" \
               "$(with_mfu "bench_d12_attention_noclip_b$B") | ${theirs:--} | $(ratio "$ours" "$theirs") | $(ratio "$mode" "$theirs") |" \
               "$(ratio "$nc" "$theirs") |"
      done; } >> "$summary"
    # (issue 4's d24, d36 and d48 tokens/s and MFU: phases bench and bench3)
fi
if wants profile; then  # GPU time per kernel over two steps (ncu serializes kernels), into $out/profile.md
    # d12 B 16 bf16, issue 4's comparison with PyTorch; d48 at the bench phase's B, where issue 8's goal (fp8 1.3x
    # bf16) is set: bf16 against the fastest FP8 setting measured (delayed scaling, the weight
    # gradient in FP8 too: 1.05x on 2026-11-23).
    wants checks || profile_attention_step  # (the attention kernels first, unless checks did it)
    if [ -n "$ncu" ]; then
        : > "$out/profile.md"
        for run in "d12 16 bf16" "d48 $d48_b bf16" "d48 $d48_b fp8"; do
            set -- $run
            name="$1_$3" flags=(--matmul $3); [ $3 = fp8 ] && flags+=(--amax-history 16 --fp8-wgrad 1)
            attention_step "profile_$name" 280 "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv \
                --log-file "$work/profile_$name.csv" $bin/train_gptcu --bench -e "$1" -b "$2" -t 1024 -x 2 "${att[@]}" "${flags[@]}"
            step "profile_summary_$name" 60 bash -c "python3 dev/bench/ncu_summary.py '$work/profile_$name.csv' > '$work/profile_$name.md'"
            { echo "## $1 B $2 $3 ${flags[*]} ${att[*]}, two steps"; echo; cat "$work/profile_$name.md"; echo; } >> "$out/profile.md"
            head -n 30 "$work/profile_$name.md"
        done
    fi  # (no ncu: profile_attention_step said so)
fi
if wants curves; then  # d12 loss curves, 1000 steps, bf16 / fp8 / int8 (about 3 minutes)
    # the shards travel xz-compressed (the carried tree's 64 MiB limit); tarfile reads xz without the xz tool
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' gpu_carry/nlpcorpus.tar.xz "$work"
    step curves 400 bash dev/bench/loss_curves.sh $bin/train_gptcu "$work/nlpcorpus/nlpcorpus_train_*.bin" \
        "$work/nlpcorpus/nlpcorpus_val_*.bin" "$work/curves" 1000
    for f in csv png; do [ -f "$work/curves.$f" ] && cp "$work/curves.$f" "$out/curves.$f"; done
fi
cat "$summary"
