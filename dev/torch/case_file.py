"""The reference case file: one batch, the model's outputs and gradients on it, and a few
optimizer steps, for the C trainer's test to reproduce.

Layout (little endian):
  int32 header[256]: magic 20241123, version 1, B, T, V, Vp, nsteps, update_clip (1/0), P
                     (parameter floats, as in the checkpoint payload), L, NH, C, maxT, then zeros
  float32 hparams[16]: lr, b1, b2, eps, weight_decay, grad_clip, clip_threshold, then zeros
  int32 inputs[B*T], int32 targets[B*T]
  float32 logits[B*T*Vp] (all Vp columns), float32 loss
  float32 grads[P] (checkpoint order, at the initial weights)
  float32 losses[nsteps] (loss of the forward pass before update k, same batch every step)
  float32 params_after[P] (after nsteps updates, checkpoint order)
"""
import os
from dataclasses import dataclass

import numpy as np

CASE_MAGIC = 20241123
CASE_VERSION = 1
HEADER_INTS = 256
HPARAM_FLOATS = 16
HPARAM_FIELDS = ("lr", "b1", "b2", "eps", "weight_decay", "grad_clip", "clip_threshold")


@dataclass
class ReferenceCase:
    B: int
    T: int
    L: int
    NH: int
    C: int
    maxT: int
    V: int
    Vp: int
    update_clip: bool
    hparams: dict         # HPARAM_FIELDS -> float
    inputs: np.ndarray    # (B, T) int32
    targets: np.ndarray   # (B, T) int32
    logits: np.ndarray    # (B, T, Vp) float32
    loss: float
    grads: np.ndarray     # (P,) float32
    losses: np.ndarray    # (nsteps,) float32
    params_after: np.ndarray  # (P,) float32


def write_case(path, case):
    P = case.grads.size
    header = np.zeros(HEADER_INTS, dtype="<i4")
    header[:13] = (CASE_MAGIC, CASE_VERSION, case.B, case.T, case.V, case.Vp, case.losses.size,
                   int(case.update_clip), P, case.L, case.NH, case.C, case.maxT)
    hparams = np.zeros(HPARAM_FLOATS, dtype="<f4")
    hparams[:len(HPARAM_FIELDS)] = [case.hparams[k] for k in HPARAM_FIELDS]
    sections = [header, hparams,
                np.asarray(case.inputs, dtype="<i4").reshape(-1),
                np.asarray(case.targets, dtype="<i4").reshape(-1),
                np.asarray(case.logits, dtype="<f4").reshape(-1),
                np.asarray([case.loss], dtype="<f4"),
                np.asarray(case.grads, dtype="<f4").reshape(-1),
                np.asarray(case.losses, dtype="<f4").reshape(-1),
                np.asarray(case.params_after, dtype="<f4").reshape(-1)]
    expected_sizes = [HEADER_INTS, HPARAM_FLOATS, case.B * case.T, case.B * case.T,
                      case.B * case.T * case.Vp, 1, P, case.losses.size, P]
    for section, size in zip(sections, expected_sizes):
        assert section.size == size, (section.size, size)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        for section in sections:
            f.write(section.tobytes())
    os.replace(tmp, path)


def read_case(path):
    """Parse a case file; raises ValueError naming the path when it is not one or has the wrong size."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 4 * (HEADER_INTS + HPARAM_FLOATS):
        raise ValueError(f"{path}: {len(data)} bytes is too short for a case file header")
    header = np.frombuffer(data, dtype="<i4", count=HEADER_INTS)
    if header[0] != CASE_MAGIC or header[1] != CASE_VERSION:
        raise ValueError(f"{path}: magic/version {header[0]}/{header[1]}, expected {CASE_MAGIC}/{CASE_VERSION}")
    B, T, V, Vp, nsteps, update_clip, P, L, NH, C, maxT = (int(x) for x in header[2:13])
    offset = 4 * HEADER_INTS

    def take(dtype, count):
        nonlocal offset
        if offset + 4 * count > len(data):
            raise ValueError(f"{path}: truncated at byte {len(data)} (header says B={B} T={T} Vp={Vp} P={P} nsteps={nsteps})")
        out = np.frombuffer(data, dtype=dtype, count=count, offset=offset).copy()
        offset += 4 * count
        return out

    hparams = take("<f4", HPARAM_FLOATS)
    case = ReferenceCase(
        B=B, T=T, L=L, NH=NH, C=C, maxT=maxT, V=V, Vp=Vp, update_clip=bool(update_clip),
        hparams={k: float(hparams[i]) for i, k in enumerate(HPARAM_FIELDS)},
        inputs=take("<i4", B * T).reshape(B, T),
        targets=take("<i4", B * T).reshape(B, T),
        logits=take("<f4", B * T * Vp).reshape(B, T, Vp),
        loss=float(take("<f4", 1)[0]),
        grads=take("<f4", P),
        losses=take("<f4", nsteps),
        params_after=take("<f4", P))
    if offset != len(data):
        raise ValueError(f"{path}: {len(data) - offset} bytes after the last section")
    return case
