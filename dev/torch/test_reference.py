#!/usr/bin/python3
"""Self-checks of the PyTorch reference (run with /usr/bin/python3; exits 1 on any failure):
  1. the functional model's forward equals an independent nn.Module GPT-2 on the same weights;
  2. autograd gradients equal central finite differences in float64 for every tensor;
  3. StableAdamW with update clipping off equals torch.optim.AdamW, and its update clipping
     follows the closed form on hand-made gradients;
  4. the checkpoint and case files round-trip, and bad files are refused;
  5. the `case` command writes a case file consistent with the model it describes.
"""
import math
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_reference  # noqa: E402
from case_file import ReferenceCase, read_case, write_case  # noqa: E402
from gpt2_checkpoint import (DECAYED, PARAM_ORDER, GPT2Config, flatten_params, random_params,  # noqa: E402
                             read_checkpoint, write_checkpoint, VERSION_BF16)
from gpt2_model import forward_logits, forward_loss  # noqa: E402
from stable_adamw import AdamWHParams, StableAdamW  # noqa: E402

failures = []


def check(ok, what):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def random_batch(cfg, B, T, rng):
    inputs = torch.from_numpy(rng.integers(0, cfg.V, size=(B, T))).long()
    targets = torch.from_numpy(rng.integers(0, cfg.V, size=(B, T))).long()
    return inputs, targets


class ModuleGPT2(nn.Module):
    """GPT-2 written the usual way, from nn.Embedding, nn.LayerNorm, nn.MultiheadAttention (whose
    in_proj is [q; k; v] with heads of contiguous channels, scale 1/sqrt(HS)) and nn.Linear."""

    def __init__(self, cfg, params):
        super().__init__()
        C, NH = cfg.C, cfg.NH
        self.wte = nn.Embedding(cfg.Vp, C)
        self.wpe = nn.Embedding(cfg.maxT, C)
        self.blocks = nn.ModuleList()
        for _ in range(cfg.L):
            block = nn.Module()
            block.ln1 = nn.LayerNorm(C, eps=1e-5)
            block.attn = nn.MultiheadAttention(C, NH, batch_first=True)
            block.ln2 = nn.LayerNorm(C, eps=1e-5)
            block.fc = nn.Linear(C, 4 * C)
            block.fcproj = nn.Linear(4 * C, C)
            self.blocks.append(block)
        self.lnf = nn.LayerNorm(C, eps=1e-5)
        with torch.no_grad():
            self.wte.weight.copy_(params["wte"])
            self.wpe.weight.copy_(params["wpe"])
            for l, b in enumerate(self.blocks):
                b.ln1.weight.copy_(params["ln1w"][l]), b.ln1.bias.copy_(params["ln1b"][l])
                b.attn.in_proj_weight.copy_(params["qkvw"][l]), b.attn.in_proj_bias.copy_(params["qkvb"][l])
                b.attn.out_proj.weight.copy_(params["attprojw"][l]), b.attn.out_proj.bias.copy_(params["attprojb"][l])
                b.ln2.weight.copy_(params["ln2w"][l]), b.ln2.bias.copy_(params["ln2b"][l])
                b.fc.weight.copy_(params["fcw"][l]), b.fc.bias.copy_(params["fcb"][l])
                b.fcproj.weight.copy_(params["fcprojw"][l]), b.fcproj.bias.copy_(params["fcprojb"][l])
            self.lnf.weight.copy_(params["lnfw"]), self.lnf.bias.copy_(params["lnfb"])

    @staticmethod
    def gelu(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))

    def forward(self, inputs):
        T = inputs.shape[1]
        future = torch.ones(T, T, dtype=torch.bool).triu(1)  # True = may not attend
        x = self.wte(inputs) + self.wpe(torch.arange(T))
        for b in self.blocks:
            h = b.ln1(x)
            x = x + b.attn(h, h, h, attn_mask=future, need_weights=False)[0]
            x = x + b.fcproj(self.gelu(b.fc(b.ln2(x))))
        return self.lnf(x) @ self.wte.weight.t()


def test_forward_matches_modules():
    cfg = GPT2Config.make(L=2, C=48, NH=4, maxT=16, V=301)
    rng = np.random.default_rng(101)
    params = random_params(cfg, rng)
    inputs, targets = random_batch(cfg, 3, 13, rng)
    with torch.no_grad():
        logits, loss = forward_loss(cfg, params, inputs, targets)
        expected = ModuleGPT2(cfg, params).eval()(inputs)
        # cross-entropy over the first V columns, by hand
        logp = torch.log_softmax(expected[..., :cfg.V], dim=-1)
        expected_loss = -logp.gather(-1, targets.unsqueeze(-1)).mean()
    diff = (logits - expected).abs().max().item()
    check(logits.shape == (3, 13, cfg.Vp), f"forward: logits shape {tuple(logits.shape)} = (B, T, Vp)")
    check(diff <= 1e-6, f"forward: logits vs nn.Module GPT-2, max |diff| {diff:.2e} <= 1e-6 "
                        f"(max |logit| {expected.abs().max().item():.3f})")
    check(abs(loss.item() - expected_loss.item()) <= 1e-6,
          f"forward: loss {loss.item():.7f} vs {expected_loss.item():.7f} (padded logits excluded)")


def test_gradients_match_finite_differences():
    cfg = GPT2Config.make(L=2, C=8, NH=2, maxT=6, V=11)
    B, T = 2, 5
    rng = np.random.default_rng(202)
    params = {k: v.double().requires_grad_(True) for k, v in random_params(cfg, rng).items()}
    inputs, targets = random_batch(cfg, B, T, rng)
    _, loss = forward_loss(cfg, params, inputs, targets)
    grads = dict(zip(params, torch.autograd.grad(loss, list(params.values()))))
    check(grads["wte"][cfg.V:].abs().max().item() == 0.0, "gradients: padded rows of wte get exactly zero gradient")
    h = 1e-6
    worst = 0.0
    for name in PARAM_ORDER:
        p = params[name]
        rows = p.shape[0]
        picks = []
        for _ in range(4):
            index = [int(rng.integers(0, n)) for n in p.shape]
            if name == "wte":
                index[0] = int(rng.integers(0, cfg.V))   # rows that reach the loss
            elif name == "wpe":
                index[0] = int(rng.integers(0, T))       # positions in use
            picks.append(tuple(index))
        if name in ("wte", "wpe"):
            picks.append((rows - 1, int(rng.integers(0, cfg.C))))  # unused row: gradient 0
        for index in picks:
            with torch.no_grad():
                saved = p[index].item()
                p[index] = saved + h
                plus = forward_loss(cfg, params, inputs, targets)[1].item()
                p[index] = saved - h
                minus = forward_loss(cfg, params, inputs, targets)[1].item()
                p[index] = saved
            fd = (plus - minus) / (2 * h)
            ag = grads[name][index].item()
            err = abs(fd - ag) / max(1e-3, abs(ag))
            worst = max(worst, err)
            if err > 1e-5:
                check(False, f"gradients: {name}{list(index)} autograd {ag:.9e} vs finite difference {fd:.9e}")
    check(worst <= 1e-5, f"gradients: {len(PARAM_ORDER)} tensors x 4-5 coordinates, float64 central differences "
                         f"(h={h}), worst error {worst:.2e} relative (floor 1e-3) <= 1e-5")


def test_optimizer_matches_torch_adamw():
    cfg = GPT2Config.make(L=2, C=32, NH=2, maxT=16, V=301)
    rng = np.random.default_rng(303)
    start = random_params(cfg, rng)
    # Each step's gradients, with per-tensor scales spread over decades so that some tensors
    # sit near eps and the global norm exceeds the clip limit.
    steps = 6
    grad_seq = [{name: torch.from_numpy((rng.normal(0, 1, p.shape) * 10.0 ** rng.uniform(-9, 0)).astype(np.float32))
                 for name, p in start.items()} for _ in range(steps)]
    for grad_clip in (math.inf, 1.0):
        mine = {k: v.clone() for k, v in start.items()}
        hp = AdamWHParams(lr=1e-3, weight_decay=0.1, grad_clip=grad_clip, update_clip=False)
        opt = StableAdamW(mine, hp)
        ref = {k: v.clone().requires_grad_(True) for k, v in start.items()}
        torch_opt = torch.optim.AdamW(
            [{"params": [ref[n] for n in PARAM_ORDER if n in DECAYED], "weight_decay": hp.weight_decay},
             {"params": [ref[n] for n in PARAM_ORDER if n not in DECAYED], "weight_decay": 0.0}],
            lr=hp.lr, betas=(hp.b1, hp.b2), eps=hp.eps, foreach=False)
        norms = []
        for grads in grad_seq:
            norms.append(opt.step(grads))
            for n in PARAM_ORDER:
                ref[n].grad = grads[n].clone()
            if grad_clip != math.inf:
                torch.nn.utils.clip_grad_norm_(list(ref.values()), grad_clip)  # scale clip / (n + 1e-6)
            torch_opt.step()
        # fp32 rounding: weights are below 1.1 in magnitude, where one float32 ulp is at most 1.2e-7;
        # a wrong detail (decay on a bias: 1e-4 |p| per step; eps misplaced: tensors at 1e-9) is far above.
        diff = max((mine[n] - ref[n].detach()).abs().max().item() for n in PARAM_ORDER)
        moved = max((mine[n] - start[n]).abs().max().item() for n in PARAM_ORDER)
        check(diff <= 1.2e-7 and moved > 1e-3,
              f"optimizer: update clipping off, grad_clip {grad_clip} (norms {min(norms):.2f}..{max(norms):.2f}): "
              f"{steps} steps vs torch.optim.AdamW, max |diff| {diff:.1e} <= 1.2e-7, params moved up to {moved:.1e}")


def test_update_clipping_closed_form():
    """Step 1 has mhat = g and vhat = g^2, so each element contributes g^2 / max(g^2, eps^2) to the
    mean: 1 where |g| >= eps, (g / eps)^2 below it (tested with |g| = eps/2: 1/4), and its update is
    g / (|g| + eps). Step 2 with g2 = 10 g1 (all |g| >> eps): m = (0.09 + 1) g1, v = (0.0475 + 5) g1^2,
    so every element has g2^2 / vhat = 100 (1 - b2^2) / 5.0475 and rms = sqrt of that, about 1.39 > 1."""
    rng = np.random.default_rng(404)
    hp = AdamWHParams(lr=1e-2, weight_decay=0.1, grad_clip=math.inf, clip_threshold=0.5, update_clip=True)
    p0 = torch.from_numpy(rng.normal(0, 1, (7, 5)).astype(np.float32))
    g1 = torch.from_numpy((rng.choice([-1, 1], (7, 5)) * rng.uniform(0.1, 1.0, (7, 5))).astype(np.float32))
    g_mixed = g1.clone()
    g_mixed[4:] = torch.sign(g1[4:]) * hp.eps / 2  # rows 0-3: 20 large elements; rows 4-6: 15 of half eps
    params = {"wte": p0.clone(), "lnfb": p0[0].clone()}  # one decayed tensor, one not (both global)
    opt = StableAdamW(params, hp)
    opt.step({"wte": g_mixed, "lnfb": g1[0]})
    g = g_mixed.double()
    rms = math.sqrt((20 * 1.0 + 15 * 0.25) / 35)
    p1 = p0.double() - (hp.lr / (rms / 0.5)) * (g / (g.abs() + hp.eps) + hp.weight_decay * p0.double())
    err1 = (params["wte"].double() - p1).abs().max().item()
    err1_nodecay = (params["lnfb"].double() - (p0[0].double() - (hp.lr / 2) * torch.sign(g1[0].double()))).abs().max().item()
    check(err1 <= 1e-6 and err1_nodecay <= 1e-6 and opt.update_clipped == ["wte", "lnfb"],
          f"update clipping: step 1 at threshold 0.5 divides lr by 2 (all |g| >> eps) and by {rms / 0.5:.4f} "
          f"(15 of 35 |g| = eps/2), max |error| {max(err1, err1_nodecay):.1e} <= 1e-6")

    hp = AdamWHParams(lr=1e-2, weight_decay=0.0, grad_clip=math.inf, clip_threshold=1.0, update_clip=True)
    params = {"fcw": p0.clone()}
    opt = StableAdamW(params, hp)
    opt.step({"fcw": g1})
    after1 = params["fcw"].double().clone()
    opt.step({"fcw": 10 * g1})
    b1, b2 = hp.b1, hp.b2
    mhat = (b1 * (1 - b1) + (1 - b1) * 10) / (1 - b1 ** 2)        # in units of g1
    vhat = (b2 * (1 - b2) + (1 - b2) * 100) / (1 - b2 ** 2)       # in units of g1^2
    rms = math.sqrt(100 / vhat)
    expected = after1 - (hp.lr / rms) * mhat * torch.sign(g1.double()) / math.sqrt(vhat)
    err2 = (params["fcw"].double() - expected).abs().max().item()
    check(err2 <= 1e-6 and opt.update_clipped == [f"fcw[{l}]" for l in range(7)],
          f"update clipping: step 2 after a 10x gradient spike divides lr by rms {rms:.4f} "
          f"(max |error| {err2:.1e} <= 1e-6)")

    # Per layer: a stacked tensor's layers are separate instances. Layer 1 gets a 10x spike at
    # step 2, layer 0 the same gradient again (rms exactly 1, not clipped at threshold 1).
    params = {"fcw": p0[:2].clone()}
    opt = StableAdamW(params, hp)
    opt.step({"fcw": g1[:2]})
    after1 = params["fcw"].double().clone()
    spike = g1[:2].clone()
    spike[1] *= 10
    opt.step({"fcw": spike})
    layer1 = after1[1] - (hp.lr / rms) * mhat * torch.sign(g1[1].double()) / math.sqrt(vhat)
    err3 = (params["fcw"][1].double() - layer1).abs().max().item()
    check(err3 <= 1e-6 and opt.update_clipped == ["fcw[1]"],
          f"update clipping per layer: only the spiking layer's lr is divided (max |error| {err3:.1e} <= 1e-6)")


def test_checkpoint_round_trip(tmp):
    cfg = GPT2Config.make(L=3, C=16, NH=4, maxT=10, V=130)  # Vp = 256
    params = random_params(cfg, np.random.default_rng(505))
    path = os.path.join(tmp, "model.bin")
    write_checkpoint(path, cfg, params)
    header = np.fromfile(path, dtype="<i4", count=256)
    check(list(header[:8]) == [20240326, 3, 10, 130, 3, 4, 16, 256] and not header[8:].any()
          and os.path.getsize(path) == 1024 + 4 * cfg.num_params(),
          f"checkpoint: header {list(header[:8])}, size {os.path.getsize(path)} = 1024 + 4 * {cfg.num_params()}")
    payload = np.fromfile(path, dtype="<f4", offset=1024)
    L, C, Vp, maxT = 3, 16, 256, 10
    spec = [("wte", Vp * C), ("wpe", maxT * C), ("ln1w", L * C), ("ln1b", L * C), ("qkvw", L * 3 * C * C),
            ("qkvb", L * 3 * C), ("attprojw", L * C * C), ("attprojb", L * C), ("ln2w", L * C), ("ln2b", L * C),
            ("fcw", L * 4 * C * C), ("fcb", L * 4 * C), ("fcprojw", L * C * 4 * C), ("fcprojb", L * C),
            ("lnfw", C), ("lnfb", C)]
    expected = np.concatenate([params[name].numpy().reshape(-1) for name, _ in spec])
    check(payload.size == sum(n for _, n in spec) and np.array_equal(payload, expected),
          f"checkpoint: payload is the 16 tensors in the spec's order and sizes ({payload.size} floats)")
    cfg2, params2 = read_checkpoint(path)
    check(cfg2 == cfg and all(torch.equal(params[n], params2[n]) for n in PARAM_ORDER),
          "checkpoint: version 3 (fp32) write then read is bit-identical")

    write_checkpoint(path, cfg, params, version=VERSION_BF16)
    cfg3, params3 = read_checkpoint(path)
    check(cfg3 == cfg and os.path.getsize(path) == 1024 + 2 * cfg.num_params()
          and all(torch.equal(params3[n], params[n].to(torch.bfloat16).float()) for n in PARAM_ORDER),
          "checkpoint: version 5 (bf16) read gives torch's round-to-nearest-even bf16 of every weight")

    write_checkpoint(path, cfg, params)
    data = open(path, "rb").read()
    bad_files = {"truncated": data[:-4], "header only": data[:1024], "short header": data[:100],
                 "bad magic": (12345).to_bytes(4, "little") + data[4:],
                 "version 4": data[:4] + (4).to_bytes(4, "little") + data[8:],
                 "C % NH != 0": data[:24] + (3).to_bytes(4, "little") + data[28:],
                 "extra bytes": data + b"\0\0\0\0"}
    for what, content in bad_files.items():
        with open(path, "wb") as f:
            f.write(content)
        try:
            read_checkpoint(path)
            check(False, f"checkpoint: {what} file was accepted")
        except ValueError as e:
            check(path in str(e), f"checkpoint: {what} file refused: {e}")


def test_case_file_round_trip(tmp):
    rng = np.random.default_rng(606)
    B, T, Vp, P, nsteps = 2, 3, 128, 50, 4
    case = ReferenceCase(
        B=B, T=T, L=1, NH=2, C=4, maxT=8, V=100, Vp=Vp, update_clip=True,
        hparams={"lr": 1e-3, "b1": 0.9, "b2": 0.95, "eps": 1e-8, "weight_decay": 0.1,
                 "grad_clip": 1.0, "clip_threshold": 1.0},
        inputs=rng.integers(0, 100, (B, T)).astype(np.int32), targets=rng.integers(0, 100, (B, T)).astype(np.int32),
        logits=rng.normal(size=(B, T, Vp)).astype(np.float32), loss=4.5,
        grads=rng.normal(size=P).astype(np.float32), losses=rng.normal(size=nsteps).astype(np.float32),
        params_after=rng.normal(size=P).astype(np.float32))
    path = os.path.join(tmp, "x.case")
    write_case(path, case)
    back = read_case(path)
    same = all(np.array_equal(getattr(case, f), getattr(back, f))
               for f in ("inputs", "targets", "logits", "grads", "losses", "params_after"))
    same = same and all(getattr(case, f) == getattr(back, f)
                        for f in ("B", "T", "L", "NH", "C", "maxT", "V", "Vp", "update_clip", "loss"))
    same = same and all(abs(case.hparams[k] - back.hparams[k]) <= 1e-7 * abs(case.hparams[k]) for k in case.hparams)
    expected_size = 4 * (256 + 16 + 2 * B * T + B * T * Vp + 1 + 2 * P + nsteps)
    check(same and os.path.getsize(path) == expected_size,
          f"case file: write then read round-trips every field, size {os.path.getsize(path)} = {expected_size}")
    with open(path, "r+b") as f:
        f.truncate(expected_size - 4)
    try:
        read_case(path)
        check(False, "case file: truncated file was accepted")
    except ValueError as e:
        check(True, f"case file: truncated file refused: {e}")


def test_case_command(tmp):
    prefix = os.path.join(tmp, "ref")
    gpt2_reference.main(["case", "--L", "2", "--C", "32", "--NH", "2", "--maxT", "16", "--V", "301",
                         "--B", "2", "--T", "9", "--seed", "7", "--steps", "3", "--out", prefix])
    torch.set_num_threads(2)
    case = read_case(prefix + ".case")
    cfg, params = read_checkpoint(prefix + ".bin")
    inputs, targets = torch.from_numpy(case.inputs).long(), torch.from_numpy(case.targets).long()
    for p in params.values():
        p.requires_grad_(True)
    logits, loss = forward_loss(cfg, params, inputs, targets)
    grads = flatten_params(dict(zip(params, torch.autograd.grad(loss, list(params.values())))))
    # loss from the stored logits in float64: mean of logsumexp(first V) - logit[target]
    z = case.logits[..., :cfg.V].astype(np.float64)
    zmax = z.max(-1, keepdims=True)
    nll = np.log(np.exp(z - zmax).sum(-1)) + zmax[..., 0] - np.take_along_axis(z, case.targets[..., None], -1)[..., 0]
    check((case.B, case.T, case.Vp, case.grads.size, case.losses.size) == (2, 9, 384, cfg.num_params(), 3)
          and case.inputs.min() >= 0 and case.inputs.max() < cfg.V and case.targets.max() < cfg.V,
          "case command: header and token ranges match the arguments")
    check(abs(nll.mean() - case.loss) <= 1e-5 and case.loss == case.losses[0],
          f"case command: stored loss {case.loss:.6f} = losses[0] = float64 cross-entropy of stored logits {nll.mean():.6f}")
    check(np.abs(case.logits - logits.detach().numpy()).max() <= 1e-6
          and np.abs(case.grads - grads.numpy()).max() <= 1e-7,
          "case command: stored logits and gradients equal the model's on the stored checkpoint and batch")
    moved = np.abs(case.params_after - flatten_params(params).numpy()).max()
    check(case.losses[-1] < case.losses[0] and moved > 1e-3,
          f"case command: losses fall {case.losses[0]:.4f} -> {case.losses[-1]:.4f}, weights moved up to {moved:.2e}")


def main():
    torch.set_num_threads(2)
    test_forward_matches_modules()
    test_gradients_match_finite_differences()
    test_optimizer_matches_torch_adamw()
    test_update_clipping_closed_form()
    with tempfile.TemporaryDirectory() as tmp:
        test_checkpoint_round_trip(tmp)
        test_case_file_round_trip(tmp)
        test_case_command(tmp)
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
