"""Compares two training runs of train_gpt or train_gptcu: the losses (and grad norms) their
main.log has, and the weights of their fp32 model checkpoints.

usage: compare.py RUN_A RUN_B FIRST LAST LOSS_TOL WEIGHT_TOL
  RUN_A, RUN_B  output directories (-o) holding main.log and model_<LAST>.bin
  FIRST, LAST   both logs must hold a training loss for every step in [FIRST, LAST]
  LOSS_TOL      every logged loss: |a - b| <= LOSS_TOL |a|
  WEIGHT_TOL    every weight: |a - b| <= WEIGHT_TOL
  both 0        bit-identical losses and weights
usage: compare.py --close REF RUN EARLIER LAST
  runs that differ by rounding whose effect grows with training (bf16 stochastic rounding on the
  GPU; scripts/gpu_zero_check.sh says why): RUN's training losses and grad norms of steps 1..LAST
  within 1e-2 relative of REF's, and the mean |RUN - REF| of the step-LAST weights at most 5% of
  the mean distance REF's weights moved from step EARLIER to LAST (no NaN or Inf).
Prints the largest differences; exits 1 when a check fails.
"""
import sys

import numpy as np


def losses(run, first, last, kinds=("trl", "tel")):
    """{(kind, step): value} of main.log for steps in [first, last], kind trl (training loss), tel
    (validation loss) or norm (grad norm)."""
    out = {}
    with open(f"{run}/main.log") as f:
        for line in f:
            # "s:<step> skip:<reason>" lines have spaces in the reason: words without ':' are its rest
            fields = dict(kv.split(":", 1) for kv in line.split() if ":" in kv)
            step = int(fields["s"])
            for kind in kinds:
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


def close(ref, run, earlier, last):
    """--close: True when RUN is within rounding of REF (see the usage)."""
    lr, lb = losses(ref, 1, last, ("trl", "norm")), losses(run, 1, last, ("trl", "norm"))
    steps_ok = lr.keys() == lb.keys() and sorted(s for kind, s in lr if kind == "trl") == list(range(1, last + 1))
    worst = {kind: max((abs(lr[k] - lb[k]) / abs(lr[k]) for k in lr.keys() & lb.keys() if k[0] == kind), default=0.0)
             for kind in ("trl", "norm")}
    w_ref, w_run, w_before = (weights(r, s).astype(np.float64) for r, s in ((ref, last), (run, last), (ref, earlier)))
    if w_ref.shape != w_run.shape:
        sys.exit(f"FAIL: the checkpoints hold {w_ref.size} and {w_run.size} weights")
    finite = bool(np.all(np.isfinite(w_run)))
    diff, moved = float(np.mean(np.abs(w_run - w_ref))), float(np.mean(np.abs(w_ref - w_before)))
    ratio = diff / moved if moved > 0 else float("inf")
    print(f"({len(lr) // 2} steps, max rel diff: losses {worst['trl']:.2e}, norms {worst['norm']:.2e}; weights: mean "
          f"diff {diff:.2e}, {ratio:.2e} of the reference's steps {earlier + 1}-{last}{'' if finite else ', NOT finite'})")
    return steps_ok and worst["trl"] <= 1e-2 and worst["norm"] <= 1e-2 and finite and ratio <= 0.05


def main():
    if sys.argv[1] == "--close":
        ok = close(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        if not ok:
            print("FAIL")
        sys.exit(0 if ok else 1)
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
