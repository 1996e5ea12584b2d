#!/usr/bin/env python3
"""Where the GPU time goes: sums Nsight Compute's gpu__time_duration.sum per kernel name.

Usage: ncu_summary.py PROFILE.csv  (written by `ncu --metrics gpu__time_duration.sum --csv --log-file`)
Prints a markdown table, largest first: kernel, launches, total ms, share of all kernel time.
Kernel names are cut at their argument list, so the instances of one template stay apart.
"""
import csv
import sys
from collections import defaultdict


def main(path):
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own messages are not quoted
    total_ns, launches = defaultdict(float), defaultdict(int)
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = row["Kernel Name"].split("(")[0]
        unit = row.get("Metric Unit", "nsecond")
        scale = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}.get(unit)
        if scale is None:
            sys.exit(f"unknown time unit {unit!r} in {path}")
        total_ns[name] += float(row["Metric Value"].replace(",", "")) * scale
        launches[name] += 1
    if not total_ns:
        sys.exit(f"no gpu__time_duration.sum rows in {path}")
    all_ns = sum(total_ns.values())
    print(f"{sum(launches.values())} kernel launches, {all_ns / 1e6:.2f} ms of kernel time in all\n")
    print("| kernel | launches | ms | share |")
    print("|---|---|---|---|")
    for name, ns in sorted(total_ns.items(), key=lambda kv: -kv[1]):
        print(f"| `{name[:90]}` | {launches[name]} | {ns / 1e6:.3f} | {100 * ns / all_ns:.1f}% |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
