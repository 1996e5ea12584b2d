"""PyTorch's fused causal attention (F.scaled_dot_product_attention, bf16, which dispatches to its
flash/cuDNN kernels on an H100) timed at the shapes of dev/cuda/attention.cu's benchmark
(B*T = 16384 tokens, NH*HS = 2048), forward and forward+backward, median of 21 runs; TFLOP/s
with the harness's convention (forward 2 B NH T^2 HS causal, backward 2.5x forward).
"""
import torch
import torch.nn.functional as F

print("    T   HS   B  NH |   fwd ms TFLOP/s |   bwd ms TFLOP/s   (PyTorch %s SDPA)" % torch.__version__)
for T in (1024, 2048, 4096):
    for HS in (64, 128):
        B, NH = 16384 // T, 2048 // HS
        q, k, v = (torch.randn(B, NH, T, HS, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        dout = torch.randn(B, NH, T, HS, device="cuda", dtype=torch.bfloat16)

        def timed(fn, n=21):
            times = []
            for _ in range(n + 3):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end))
            times = sorted(times[3:])
            return times[len(times) // 2]

        fwd = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        bwd = timed(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True))
        flops = 2.0 * B * NH * T * T * HS
        print(f" {T:4d}  {HS:3d} {B:3d} {NH:3d} | {fwd:8.3f} {flops / fwd / 1e9:7.1f} | {bwd:8.3f} {2.5 * flops / bwd / 1e9:7.1f}")
