"""PyTorch baseline for the GPU trainer: GPT-2 d12 of the same shape as train_gptcu's, bf16
autocast, torch.compile, F.scaled_dot_product_attention (causal), fused AdamW; prints the median
tokens/s over the timed steps. Run on the GPU machine: B=16 python3 dev/bench/torch_gpu_baseline.py
"""
import os, time, torch, torch.nn as nn, torch.nn.functional as F
B, T, L, C, NH, V = int(os.environ.get("B", "16")), 1024, 12, 768, 12, 50304
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
