"""AdamW with global-norm gradient clipping and optional StableAdamW update clipping, in fp32 torch ops.

This is the exact update the C trainer implements (DESIGN.md section 5), per step t = 1, 2, ...:
  n = sqrt(sum over all parameters of g^2);  if n > grad_clip: g *= grad_clip / n
  per tensor instance (each layer's copy of a stacked tensor separately, as the C trainer's ParamSlots):
               m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  mhat = m/(1-b1^t);  vhat = v/(1-b2^t)
    update clipping on:  rms = sqrt(mean(g^2 / max(vhat, eps^2)));  lr_t = lr / max(1, rms / clip_threshold)
    update clipping off: lr_t = lr
    p -= lr_t (mhat / (sqrt(vhat) + eps) + wd p),  wd = weight_decay for the matrices, 0 otherwise
"""
import math
from dataclasses import dataclass

import torch

from gpt2_checkpoint import DECAYED, LAYERED


@dataclass(frozen=True)
class AdamWHParams:
    lr: float = 1e-3
    b1: float = 0.9
    b2: float = 0.95
    eps: float = 1e-8
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    clip_threshold: float = 1.0
    update_clip: bool = True


class StableAdamW:
    def __init__(self, params, hp):
        """params: dict name -> tensor (updated in place); one m, v pair per tensor."""
        self.params = params
        self.hp = hp
        self.t = 0
        self.m = {name: torch.zeros_like(p) for name, p in params.items()}
        self.v = {name: torch.zeros_like(p) for name, p in params.items()}
        self.update_clipped = []  # names of the tensors whose lr update clipping lowered in the last step

    def global_grad_norm(self, grads):
        return torch.sqrt(sum(torch.sum(g * g) for g in grads.values()))

    @torch.no_grad()
    def step(self, grads):
        """Apply one update from grads (dict name -> tensor); returns the pre-clip global norm."""
        hp = self.hp
        self.t += 1
        norm = self.global_grad_norm(grads)
        scale = hp.grad_clip / norm.item() if norm.item() > hp.grad_clip else 1.0
        bias1 = 1.0 - hp.b1 ** self.t
        bias2 = 1.0 - hp.b2 ** self.t
        self.update_clipped = []
        for name, p in self.params.items():
            g = grads[name] * scale if scale != 1.0 else grads[name]
            m = self.m[name].mul_(hp.b1).add_(g, alpha=1.0 - hp.b1)
            v = self.v[name].mul_(hp.b2).add_(g * g, alpha=1.0 - hp.b2)
            mhat = m / bias1
            vhat = v / bias2
            lr_t = hp.lr
            if hp.update_clip:
                ratio = g * g / torch.clamp(vhat, min=hp.eps * hp.eps)
                # one rms per tensor instance: per layer for the stacked layer tensors
                rows = ratio.reshape(ratio.shape[0], -1) if name in LAYERED else ratio.reshape(1, -1)
                rms = torch.sqrt(rows.double().mean(dim=1)).float()
                divisor = torch.clamp(rms / hp.clip_threshold, min=1.0)
                for i in torch.nonzero(divisor > 1.0).flatten().tolist():
                    self.update_clipped.append(f"{name}[{i}]" if name in LAYERED else name)
                lr_t = (hp.lr / divisor).reshape(-1, *([1] * (p.dim() - 1))) if name in LAYERED else hp.lr / divisor.item()
            wd = hp.weight_decay if name in DECAYED else 0.0
            p.sub_(lr_t * (mhat / (torch.sqrt(vhat) + hp.eps) + wd * p))
        return norm.item()
