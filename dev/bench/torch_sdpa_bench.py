"""PyTorch's fused causal attention (F.scaled_dot_product_attention, bf16) timed at the shapes of
dev/cuda/attention.cu's benchmark (B*T = 16384 tokens, NH*HS = 2048), forward and backward, median
of 21 runs; TFLOP/s with the harness's convention (forward 2 B NH T^2 HS causal, backward 2.5x
forward). One row per backend: PyTorch's own choice ("default"), then each fused backend forced
(torch.nn.attention.sdpa_kernel): FlashAttention-2, cuDNN (issue 5's yardstick: "at least as fast as
cuDNN's") and memory-efficient; and the default under torch.use_deterministic_algorithms, the
like-for-like row for our backward, which is deterministic. A backend that refuses a shape (or
this PyTorch) prints n/a and why.
"""
import torch
import torch.nn.functional as F

try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    FORCED = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
              ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
except ImportError as e:  # PyTorch before 2.3: the default row only
    FORCED, NO_FORCED = [], str(e)


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


def fwd_bwd_ms(q, k, v, dout):
    """Forward and backward medians in ms; the backward is the one the forward's backend recorded."""
    fwd = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    bwd = timed(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True))
    return fwd, bwd


print("    T   HS   B  NH backend       |   fwd ms TFLOP/s |   bwd ms TFLOP/s | fwd+bwd ms   (PyTorch %s SDPA)"
      % torch.__version__)
if not FORCED:
    print(f"(no forced-backend rows: {NO_FORCED})")
for T in (1024, 2048, 4096):
    for HS in (64, 128):
        B, NH = 16384 // T, 2048 // HS
        q, k, v = (torch.randn(B, NH, T, HS, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        dout = torch.randn(B, NH, T, HS, device="cuda", dtype=torch.bfloat16)
        flops = 2.0 * B * NH * T * T * HS
        rows = [("default", None, False)] + [(name, b, False) for name, b in FORCED] + [("deterministic", None, True)]
        for name, backend, deterministic in rows:
            label = f" {T:4d}  {HS:3d} {B:3d} {NH:3d} {name:13s}"
            try:
                torch.use_deterministic_algorithms(deterministic)
                if backend is None:
                    fwd, bwd = fwd_bwd_ms(q, k, v, dout)
                else:
                    with sdpa_kernel(backend):
                        fwd, bwd = fwd_bwd_ms(q, k, v, dout)
                print(f"{label} | {fwd:8.3f} {flops / fwd / 1e9:7.1f} | {bwd:8.3f} {2.5 * flops / bwd / 1e9:7.1f} |"
                      f" {fwd + bwd:8.3f}")
            except Exception as e:  # a backend that does not take this shape, or no deterministic backward
                print(f"{label} | n/a: {str(e).strip().splitlines()[0][:100]}")
            finally:
                torch.use_deterministic_algorithms(False)
        del q, k, v, dout
        torch.cuda.empty_cache()
