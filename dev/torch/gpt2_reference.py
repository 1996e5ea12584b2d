#!/usr/bin/python3
"""PyTorch reference for the C GPT-2 trainer (run with Debian's /usr/bin/python3: torch 1.13 CPU).

  case   write PREFIX.bin (a checkpoint of seeded random weights) and PREFIX.case (one batch, the
         logits, loss and gradients on it, and the losses and weights over a few optimizer steps:
         see case_file.py), all in float32, the model reading its weights back from PREFIX.bin.
  bench  train on random tokens with torch.optim.AdamW and print `torch_tokens_per_s <float>`,
         the median over the timed steps (forward + backward + optimizer step).
"""
import argparse
import ctypes
import statistics
import sys
import time

import numpy as np
import torch

from case_file import HPARAM_FIELDS, ReferenceCase, write_case
from gpt2_checkpoint import DECAYED, GPT2Config, flatten_params, random_params, read_checkpoint, write_checkpoint
from gpt2_model import forward_loss
from stable_adamw import AdamWHParams, StableAdamW

NUM_THREADS = 2


def config_from_args(args):
    try:
        cfg = GPT2Config.make(args.L, args.C, args.NH, args.maxT, args.V)
    except ValueError as e:
        sys.exit(f"gpt2_reference.py: {e}")
    if not 1 <= args.T <= cfg.maxT:
        sys.exit(f"gpt2_reference.py: T={args.T} must be in [1, maxT={cfg.maxT}]")
    if args.B < 1:
        sys.exit(f"gpt2_reference.py: B={args.B} must be >= 1")
    return cfg


def run_case(args):
    cfg = config_from_args(args)
    if args.steps < 1:
        sys.exit(f"gpt2_reference.py: --steps {args.steps} must be >= 1")
    rng = np.random.default_rng(args.seed)
    write_checkpoint(args.out + ".bin", cfg, random_params(cfg, rng))
    # Read the weights back through the same reader a C-written checkpoint would go through.
    cfg_read, params = read_checkpoint(args.out + ".bin")
    assert cfg_read == cfg, (cfg_read, cfg)
    inputs = torch.from_numpy(rng.integers(0, cfg.V, size=(args.B, args.T))).long()
    targets = torch.from_numpy(rng.integers(0, cfg.V, size=(args.B, args.T))).long()

    hp = AdamWHParams(lr=args.lr, b1=args.b1, b2=args.b2, eps=args.eps, weight_decay=args.weight_decay,
                      grad_clip=args.grad_clip, clip_threshold=args.clip_threshold,
                      update_clip=bool(args.update_clip))
    for p in params.values():
        p.requires_grad_(True)
    optimizer = StableAdamW(params, hp)
    losses = []
    for step in range(args.steps):
        logits, loss = forward_loss(cfg, params, inputs, targets)
        grads = dict(zip(params, torch.autograd.grad(loss, list(params.values()))))
        if step == 0:
            logits0, loss0, grads0 = logits.detach(), loss.item(), flatten_params(grads)
        losses.append(loss.item())
        norm = optimizer.step(grads)
        print(f"step {step + 1}: loss {loss.item():.6f}, grad norm {norm:.6f}"
              f"{' (clipped)' if norm > hp.grad_clip else ''}, "
              f"update clipped: {' '.join(optimizer.update_clipped) or 'none'}")

    write_case(args.out + ".case", ReferenceCase(
        B=args.B, T=args.T, L=cfg.L, NH=cfg.NH, C=cfg.C, maxT=cfg.maxT, V=cfg.V, Vp=cfg.Vp,
        update_clip=hp.update_clip, hparams={k: getattr(hp, k) for k in HPARAM_FIELDS},
        inputs=inputs.numpy().astype(np.int32), targets=targets.numpy().astype(np.int32),
        logits=logits0.numpy(), loss=loss0, grads=grads0.numpy(),
        losses=np.asarray(losses, dtype=np.float32), params_after=flatten_params(params).numpy()))
    print(f"wrote {args.out}.bin and {args.out}.case: {cfg}, P={cfg.num_params()}, B={args.B} T={args.T}, "
          f"{args.steps} steps, update clipping {'on' if hp.update_clip else 'off'}")


def loaded_blas_paths():
    """Paths of the BLAS libraries this process has mapped (torch calls whatever libblas.so.3 points to)."""
    with open("/proc/self/maps") as f:
        return sorted({line.split()[-1] for line in f if "blas" in line.lower() and "/" in line})


def loaded_blas():
    return ",".join(loaded_blas_paths()) or "none"


def openblas_kernels():
    """OpenBLAS's kernels in this process ("SkylakeX"; OPENBLAS_CORETYPE chooses them), or "none"."""
    for path in loaded_blas_paths():
        try:
            corename = ctypes.CDLL(path).openblas_get_corename
        except (OSError, AttributeError):
            continue
        corename.restype = ctypes.c_char_p
        return corename().decode()
    return "none"


def run_bench(args):
    cfg = config_from_args(args)
    if args.steps < 1 or args.warmup < 0:
        sys.exit("gpt2_reference.py: need --steps >= 1 and --warmup >= 0")
    torch.manual_seed(args.seed)
    params = {name: p.requires_grad_(True) for name, p in random_params(cfg, np.random.default_rng(args.seed)).items()}
    groups = [{"params": [p for n, p in params.items() if n in DECAYED], "weight_decay": args.weight_decay},
              {"params": [p for n, p in params.items() if n not in DECAYED], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=args.lr, betas=(args.b1, args.b2), eps=args.eps, foreach=True)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, {cfg}, "
          f"{cfg.num_params()} params, B={args.B} T={args.T}")
    print("optimizer: torch.optim.AdamW(foreach=True) without update clipping or grad-norm clipping")
    tokens_per_s = []
    for step in range(args.warmup + args.steps):
        inputs = torch.randint(0, cfg.V, (args.B, args.T))
        targets = torch.randint(0, cfg.V, (args.B, args.T))
        start = time.perf_counter()
        _, loss = forward_loss(cfg, params, inputs, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        seconds = time.perf_counter() - start
        timed = step >= args.warmup
        if timed:
            tokens_per_s.append(args.B * args.T / seconds)
        print(f"step {step + 1}{'' if timed else ' (warmup)'}: loss {loss.item():.4f} {seconds * 1e3:.1f} ms")
    print(f"torch_blas {loaded_blas()}")
    print(f"torch_blas_kernels {openblas_kernels()}")
    print(f"torch_tokens_per_s {statistics.median(tokens_per_s):.2f}")


def add_model_args(p, L, C, NH, maxT, V, B, T):
    p.add_argument("--L", type=int, default=L, help="layers")
    p.add_argument("--C", type=int, default=C, help="channels")
    p.add_argument("--NH", type=int, default=NH, help="heads")
    p.add_argument("--maxT", type=int, default=maxT, help="max sequence length")
    p.add_argument("--V", type=int, default=V, help="vocabulary size (padded to a multiple of 128)")
    p.add_argument("--B", type=int, default=B, help="batch size")
    p.add_argument("--T", type=int, default=T, help="sequence length")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--b1", type=float, default=0.9)
    p.add_argument("--b2", type=float, default=0.95)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--weight-decay", type=float, default=0.1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    case = sub.add_parser("case", help="write a reference checkpoint and case file")
    add_model_args(case, L=2, C=96, NH=3, maxT=32, V=301, B=3, T=20)
    case.add_argument("--seed", type=int, required=True)
    case.add_argument("--steps", type=int, default=10, help="optimizer steps to record")
    case.add_argument("--update-clip", type=int, choices=(0, 1), default=1, help="StableAdamW update clipping")
    case.add_argument("--grad-clip", type=float, default=1.0, help="global gradient norm limit")
    case.add_argument("--clip-threshold", type=float, default=1.0, help="update clipping RMS threshold")
    case.add_argument("--out", required=True, help="output prefix: writes PREFIX.bin and PREFIX.case")
    bench = sub.add_parser("bench", help="time training steps with torch.optim.AdamW")
    add_model_args(bench, L=12, C=768, NH=12, maxT=1024, V=50257, B=4, T=64)
    bench.add_argument("--steps", type=int, default=10, help="timed steps")
    bench.add_argument("--warmup", type=int, default=2, help="untimed steps before them")
    bench.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(NUM_THREADS)
    try:
        run_case(args) if args.command == "case" else run_bench(args)
    except (OSError, ValueError) as e:  # unwritable output, unreadable or bad checkpoint
        sys.exit(f"gpt2_reference.py: error: {e}")


if __name__ == "__main__":
    main()
