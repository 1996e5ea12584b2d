"""Compares two training runs of train_gpt: the training and validation losses their main.log
has for steps FIRST..LAST, and the weights of their model checkpoints of step LAST.

usage: compare.py RUN_A RUN_B FIRST LAST LOSS_TOL WEIGHT_TOL
  RUN_A, RUN_B  output directories (-o) holding main.log and model_<LAST>.bin
  FIRST, LAST   both logs must hold a training loss for every step in [FIRST, LAST]
  LOSS_TOL      every logged loss: |a - b| <= LOSS_TOL |a|
  WEIGHT_TOL    every weight: |a - b| <= WEIGHT_TOL
  both 0        bit-identical losses and weights
Prints the largest differences; exits 1 when a check fails.
"""
import sys

import numpy as np


def losses(run, first, last):
    """{(kind, step): loss} of main.log for steps in [first, last], kind trl (training) or tel."""
    out = {}
    with open(f"{run}/main.log") as f:
        for line in f:
            fields = dict(kv.split(":", 1) for kv in line.split())
            step = int(fields["s"])
            for kind in ("trl", "tel"):
                if kind in fields and first <= step <= last:
                    out[(kind, step)] = float(fields[kind])
    return out


def weights(run, step):
    path = f"{run}/model_{step:08d}.bin"
    data = np.fromfile(path, dtype=np.int32)
    header = data[:256]
    if header[0] != 20240326 or header[1] != 3:
        sys.exit(f"{path}: not an fp32 model checkpoint")
    return data[256:].view(np.float32)


def main():
    a, b, first, last = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    loss_tol, weight_tol = float(sys.argv[5]), float(sys.argv[6])
    la, lb = losses(a, first, last), losses(b, first, last)
    ok = True
    train_steps = sorted(s for kind, s in la if kind == "trl")
    if la.keys() != lb.keys() or train_steps != list(range(first, last + 1)):
        print(f"FAIL: the logs hold different steps: {sorted(la)} vs {sorted(lb)}")
        ok = False
    worst_loss = max((abs(la[k] - lb[k]) / abs(la[k]) for k in la.keys() & lb.keys()), default=0.0)
    wa, wb = weights(a, last), weights(b, last)
    if wa.shape != wb.shape:
        sys.exit(f"FAIL: the checkpoints hold {wa.size} and {wb.size} weights")
    diff = float(np.max(np.abs(wa.astype(np.float64) - wb)))
    identical = np.array_equal(wa.view(np.uint32), wb.view(np.uint32))
    print(f"{a} vs {b}: {len(la)} losses, max rel diff {worst_loss:.3g}, weights max abs diff {diff:.3g}"
          f"{' (bit-identical)' if identical else ''}; tolerances {loss_tol:g}, {weight_tol:g}")
    if loss_tol == 0 and weight_tol == 0:
        ok = ok and identical and worst_loss == 0
    else:
        ok = ok and worst_loss <= loss_tol and diff <= weight_tol
    if not ok:
        print("FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
