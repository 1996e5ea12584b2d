"""The GPT-2 model configuration, its parameter tensors in checkpoint order, and the checkpoint file.

File layout (llm.c's, little endian): int32 header[256] = magic 20240326, version (3: float32
params, 5: bfloat16 params), maxT, V, L, NH, C, Vp, then zeros; then every parameter tensor in
PARAM_ORDER, flattened row-major, each stacked over layers with the layer index outermost and
linear weights stored (out, in) like torch.nn.Linear.weight.
"""
import os
from dataclasses import dataclass

import numpy as np
import torch

CHECKPOINT_MAGIC = 20240326
VERSION_FP32 = 3
VERSION_BF16 = 5
HEADER_INTS = 256
VOCAB_PAD = 128  # Vp = V rounded up to a multiple of this, for fast matmuls

PARAM_ORDER = ("wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
               "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb")
# Tensors that get weight decay: the matrices (embeddings and linear weights), not biases or norms.
DECAYED = frozenset(("wte", "wpe", "qkvw", "attprojw", "fcw", "fcprojw"))
# Tensors stacked over layers (layer index outermost): each layer's copy is its own tensor instance
# for update clipping, as the C trainer's ParamSlots (llmc/model.h).
LAYERED = frozenset(("ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
                     "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb"))


def padded_vocab(V):
    return (V + VOCAB_PAD - 1) // VOCAB_PAD * VOCAB_PAD


@dataclass(frozen=True)
class GPT2Config:
    L: int     # layers
    C: int     # channels
    NH: int    # heads; head size HS = C / NH
    maxT: int  # longest sequence (rows of wpe)
    V: int     # vocabulary; the loss sees only these logits
    Vp: int    # vocabulary padded to a multiple of VOCAB_PAD (rows of wte)

    @classmethod
    def make(cls, L, C, NH, maxT, V):
        cfg = cls(L, C, NH, maxT, V, padded_vocab(V))
        cfg.validate()
        return cfg

    def validate(self):
        for name in ("L", "C", "NH", "maxT", "V", "Vp"):
            if getattr(self, name) < 1:
                raise ValueError(f"config: {name} must be >= 1, got {getattr(self, name)}")
        if self.C % self.NH:
            raise ValueError(f"config: C={self.C} is not divisible by NH={self.NH}")
        if self.Vp < self.V or self.Vp % VOCAB_PAD:
            raise ValueError(f"config: Vp={self.Vp} must be a multiple of {VOCAB_PAD} and >= V={self.V}")

    def param_shapes(self):
        """Shape of each parameter tensor, in checkpoint order."""
        L, C = self.L, self.C
        return {
            "wte": (self.Vp, C), "wpe": (self.maxT, C),
            "ln1w": (L, C), "ln1b": (L, C),
            "qkvw": (L, 3 * C, C), "qkvb": (L, 3 * C),
            "attprojw": (L, C, C), "attprojb": (L, C),
            "ln2w": (L, C), "ln2b": (L, C),
            "fcw": (L, 4 * C, C), "fcb": (L, 4 * C),
            "fcprojw": (L, C, 4 * C), "fcprojb": (L, C),
            "lnfw": (C,), "lnfb": (C,),
        }

    def num_params(self):
        return sum(int(np.prod(shape)) for shape in self.param_shapes().values())


def random_params(cfg, rng):
    """Seeded float32 weights with nothing zero, so every gradient path is exercised:
    matrices and biases normal(0, 0.02), LayerNorm weights 1 + normal(0, 0.1) and biases
    normal(0, 0.1). The padded rows of wte are random too (they reach only the padded logits)."""
    params = {}
    for name, shape in cfg.param_shapes().items():
        if name in ("ln1w", "ln2w", "lnfw"):
            values = 1.0 + rng.normal(0.0, 0.1, shape)
        elif name in ("ln1b", "ln2b", "lnfb"):
            values = rng.normal(0.0, 0.1, shape)
        else:
            values = rng.normal(0.0, 0.02, shape)
        params[name] = torch.from_numpy(values.astype(np.float32))
    return params


def flatten_params(params):
    """All parameters as one float32 vector in checkpoint order (the checkpoint payload)."""
    return torch.cat([params[name].detach().reshape(-1).float() for name in PARAM_ORDER])


def unflatten_params(cfg, flat):
    shapes = cfg.param_shapes()
    params, offset = {}, 0
    for name in PARAM_ORDER:
        shape = shapes[name]
        n = int(np.prod(shape))
        params[name] = flat[offset:offset + n].reshape(shape).clone()
        offset += n
    assert offset == flat.numel()
    return params


def float32_to_bf16_bits(values):
    """Round float32 to bfloat16 (nearest, ties to even) and return the raw uint16 bits."""
    bits = values.astype("<f4").view("<u4").astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype("<u2")


def bf16_bits_to_float32(bits):
    return (bits.astype("<u4") << 16).view("<f4")


def write_checkpoint(path, cfg, params, version=VERSION_FP32):
    """Write to a temporary name and rename, so a crash never leaves a half-written file."""
    if version not in (VERSION_FP32, VERSION_BF16):
        raise ValueError(f"checkpoint version must be {VERSION_FP32} or {VERSION_BF16}, got {version}")
    header = np.zeros(HEADER_INTS, dtype="<i4")
    header[:8] = (CHECKPOINT_MAGIC, version, cfg.maxT, cfg.V, cfg.L, cfg.NH, cfg.C, cfg.Vp)
    payload = flatten_params(params).numpy().astype("<f4")
    if version == VERSION_BF16:
        payload = float32_to_bf16_bits(payload)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(header.tobytes())
        f.write(payload.tobytes())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_checkpoint(path):
    """Return (config, params as float32 tensors). Raises ValueError naming the path on a bad file."""
    with open(path, "rb") as f:
        data = f.read()
    header_bytes = 4 * HEADER_INTS
    if len(data) < header_bytes:
        raise ValueError(f"{path}: {len(data)} bytes is shorter than the {header_bytes}-byte header")
    header = np.frombuffer(data, dtype="<i4", count=HEADER_INTS)
    if header[0] != CHECKPOINT_MAGIC:
        raise ValueError(f"{path}: bad magic {header[0]} (expected {CHECKPOINT_MAGIC}): not a GPT-2 checkpoint")
    version = int(header[1])
    if version not in (VERSION_FP32, VERSION_BF16):
        raise ValueError(f"{path}: unsupported version {version} (expected {VERSION_FP32} or {VERSION_BF16})")
    maxT, V, L, NH, C, Vp = (int(x) for x in header[2:8])
    cfg = GPT2Config(L=L, C=C, NH=NH, maxT=maxT, V=V, Vp=Vp)
    try:
        cfg.validate()
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    bytes_per_param = 4 if version == VERSION_FP32 else 2
    expected = header_bytes + bytes_per_param * cfg.num_params()
    if len(data) != expected:
        raise ValueError(f"{path}: {len(data)} bytes, expected {expected} for this config "
                         f"(L={L} C={C} NH={NH} maxT={maxT} V={V} Vp={Vp}, version {version})")
    if version == VERSION_FP32:
        payload = np.frombuffer(data, dtype="<f4", offset=header_bytes).copy()
    else:
        payload = bf16_bits_to_float32(np.frombuffer(data, dtype="<u2", offset=header_bytes))
    return cfg, unflatten_params(cfg, torch.from_numpy(payload))
