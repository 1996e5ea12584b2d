"""GPT-2 forward pass and loss as plain torch functions over the checkpoint-order parameter tensors.

Gradients land directly on the stacked tensors (layer index outermost), so they come out in the
checkpoint's order and layout, ready to compare with the C trainer's gradient buffer.
Activation shapes: x (B, T, C); q, k, v (B, NH, T, HS); logits (B, T, Vp).
Works in whatever dtype the parameters have (float32 for the reference, float64 for finite differences).
"""
import math

import torch
import torch.nn.functional as F

LN_EPS = 1e-5
PER_LAYER = ("ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb", "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb")


def gelu_tanh(x):
    # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    return F.gelu(x, approximate="tanh")


def causal_self_attention(qkv, NH):
    """qkv (B, T, 3C) holds [q | k | v], each C wide and split into NH heads of HS contiguous channels."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    HS = C // NH
    q, k, v = (t.view(B, T, NH, HS).transpose(1, 2) for t in qkv.split(C, dim=-1))
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(HS))  # (B, NH, T, T)
    future = torch.ones(T, T, dtype=torch.bool, device=qkv.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    y = F.softmax(scores, dim=-1) @ v  # (B, NH, T, HS)
    return y.transpose(1, 2).reshape(B, T, C)


def forward_logits(cfg, params, inputs):
    """inputs (B, T) int64 token ids in [0, V); returns logits (B, T, Vp) over every row of wte."""
    B, T = inputs.shape
    p = params
    C = cfg.C
    # unbind splits each stacked tensor into its layers once, so backward stacks the L layer
    # gradients in one copy (indexing p[name][l] per layer would add L full-size zero tensors).
    layer = {name: p[name].unbind(0) for name in PER_LAYER}
    x = p["wte"][inputs] + p["wpe"][:T]
    for l in range(cfg.L):
        h = F.layer_norm(x, (C,), layer["ln1w"][l], layer["ln1b"][l], LN_EPS)
        qkv = F.linear(h, layer["qkvw"][l], layer["qkvb"][l])
        x = x + F.linear(causal_self_attention(qkv, cfg.NH), layer["attprojw"][l], layer["attprojb"][l])
        h = F.layer_norm(x, (C,), layer["ln2w"][l], layer["ln2b"][l], LN_EPS)
        h = gelu_tanh(F.linear(h, layer["fcw"][l], layer["fcb"][l]))
        x = x + F.linear(h, layer["fcprojw"][l], layer["fcprojb"][l])
    x = F.layer_norm(x, (C,), p["lnfw"], p["lnfb"], LN_EPS)
    return x @ p["wte"].t()  # tied output head


def loss_from_logits(cfg, logits, targets):
    """Mean cross-entropy over the B*T positions, over the first V logits only:
    the padded logits [V, Vp) never enter the softmax."""
    return F.cross_entropy(logits[..., :cfg.V].reshape(-1, cfg.V), targets.reshape(-1))


def forward_loss(cfg, params, inputs, targets):
    logits = forward_logits(cfg, params, inputs)
    return logits, loss_from_logits(cfg, logits, targets)
