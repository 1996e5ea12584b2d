#!/usr/bin/env bash
# The GPU suite, one command on a GPU machine (about 8 minutes on an H100):
#   1. builds every CUDA target for sm_90 (NVCC_ARCH overrides) with warnings as errors
#   2. make test-gpu: test_gptcu (small odd config, d12), the kernel harnesses, the attention
#      harness, compute-sanitizer memcheck and racecheck on test_gptcu's tiny config
#   3. benchmarks: train_gptcu --bench at d12 T=1024 (micro-batch B_D12, default 32), d24, d36,
#      d48, with tokens/s and MFU; and PyTorch on the same GPU (bf16 autocast, torch.compile,
#      F.scaled_dot_product_attention) at d12 when torch with CUDA is importable
#   4. appends a dated section (date, commit, device, results) to dev/gpu_report.md
# Exits non-zero when any check failed; the report says which step.
set -u
cd "$(dirname "$0")/.."
ARCH=${NVCC_ARCH:-sm_90}
B_D12=${B_D12:-32}
LOG=build/gpu_suite
mkdir -p "$LOG"
status=0
declare -A result

step() {  # step NAME COMMAND...: runs it, logs to $LOG/NAME.log, records PASS/FAIL
    local name=$1; shift
    echo "== $name: $*"
    if "$@" >"$LOG/$name.log" 2>&1; then result[$name]=PASS; else result[$name]=FAIL; status=1; fi
    tail -n 5 "$LOG/$name.log"
}

step build make -j8 NVCC_ARCH="$ARCH" train_gptcu test_gptcu cuda
step test_gpu make NVCC_ARCH="$ARCH" test-gpu

# Training throughput: train_gptcu prints mfu_flops_per_token and mfu_peak_flops at startup and
# bench_tokens_per_s (median step) at the end; MFU = tokens/s * FLOPs per token / peak.
bench_row() {  # bench_row MODEL B
    local out="$LOG/bench_$1.log"
    if ./train_gptcu -e "$1" -b "$2" -t 1024 --bench -x 12 >"$out" 2>&1; then
        awk -v m="$1" -v b="$2" '/^mfu_flops_per_token/ {f=$2} /^mfu_peak_flops/ {p=$2} /^bench_tokens_per_s/ {t=$2}
            END { if (t == "") { print "| " m " | " b " | failed | |"; exit }
                  printf "| %s | %d | %.0f | %s |\n", m, b, t, p > 0 ? sprintf("%.1f%%", 100 * t * f / p) : "peak unknown" }' "$out"
    else
        echo "| $1 | $2 | failed: $(tail -n 1 "$out") | |"
    fi
}
echo "== benchmarks"
bench_table="| model | B | tokens/s | MFU |
|---|---|---|---|"
for spec in "d12 $B_D12" "d24 16" "d36 8" "d48 4"; do
    row=$(bench_row $spec); echo "$row"; bench_table+=$'\n'"$row"
done

# PyTorch baseline: GPT-2 of the same shape, bf16 autocast, torch.compile, SDPA (causal), AdamW.
torch_line="PyTorch baseline: not run (no python3 with CUDA-enabled torch)"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    torch_line=$(B="$B_D12" timeout 300 python3 - <<'PY' 2>"$LOG/torch.log" || echo "PyTorch baseline: failed (see $LOG/torch.log)"
import os, time, torch, torch.nn as nn, torch.nn.functional as F
B, T, L, C, NH, V = int(os.environ["B"]), 1024, 12, 768, 12, 50304
class Block(nn.Module):
    def __init__(s):
        super().__init__(); s.ln1, s.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        s.qkv, s.proj, s.fc, s.fcproj = nn.Linear(C, 3 * C), nn.Linear(C, C), nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
    def forward(s, x):
        q, k, v = s.qkv(s.ln1(x)).view(B, T, 3, NH, C // NH).permute(2, 0, 3, 1, 4)
        x = x + s.proj(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C))
        return x + s.fcproj(F.gelu(s.fc(s.ln2(x)), approximate="tanh"))
class GPT(nn.Module):
    def __init__(s):
        super().__init__(); s.wte, s.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        s.blocks, s.lnf = nn.ModuleList(Block() for _ in range(L)), nn.LayerNorm(C)
    def forward(s, idx, tgt):
        x = s.wte(idx) + s.wpe.weight[:T]
        for b in s.blocks: x = b(x)
        return F.cross_entropy((s.lnf(x) @ s.wte.weight.T).float().view(-1, V), tgt.view(-1))
model = GPT().cuda(); opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
step = torch.compile(model)
idx = torch.randint(0, 50257, (B, T), device="cuda"); tgt = torch.randint(0, 50257, (B, T), device="cuda")
times = []
for i in range(15):
    torch.cuda.synchronize(); t0 = time.time()
    with torch.autocast("cuda", dtype=torch.bfloat16): loss = step(idx, tgt)
    loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize(); times.append(time.time() - t0)
med = sorted(times[5:])[len(times[5:]) // 2]
print(f"PyTorch {torch.__version__} d12 B={B} T={T}: {B * T / med:.0f} tokens/s (median step {med * 1e3:.1f} ms)")
PY
)
fi
echo "$torch_line"

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain 2>/dev/null | grep -q . && echo " (with uncommitted changes)")
device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
{
    echo
    echo "## $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit$dirty, ${device:-unknown device}"
    echo
    echo "| step | result |"
    echo "|---|---|"
    for name in build test_gpu; do echo "| $name | ${result[$name]:-not run} |"; done
    echo
    echo "$bench_table"
    echo
    echo "$torch_line"
} >>dev/gpu_report.md
echo "appended to dev/gpu_report.md; logs in $LOG"
exit $status
