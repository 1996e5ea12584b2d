#!/usr/bin/env python3
"""Plots the loss curves CSV of dev/bench/loss_curves.sh (columns step, bf16, fp8, int8) to a PNG.

Usage: plot_curves.py CURVES.csv OUT.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)


def main(csv_path, png_path):
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{csv_path}: no rows")
    steps = [int(r["step"]) for r in rows]
    for precision in ("bf16", "fp8", "int8"):
        plt.plot(steps, [float(r[precision]) for r in rows], label=precision, linewidth=0.8)
    plt.xlabel("step")
    plt.ylabel("training loss")
    plt.title("GPT-2 d12, block matmuls by precision")
    plt.legend()
    plt.grid(alpha=0.3)
    plt.savefig(png_path, dpi=120)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
