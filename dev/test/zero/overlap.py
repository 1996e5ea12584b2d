#!/usr/bin/env python3
"""Sums the emulator's overlap reports (LLMC_EMU_OVERLAP, dev/emu/cuda_runtime.cc) of one run, each
rank's file on its own, and checks the bytes of the collectives no kernel may run beside.

usage: overlap.py DIR GATHERS REDUCTIONS
  DIR         the run's LLMC_EMU_OVERLAP directory (one overlap_<pid>.txt per rank)
  GATHERS     the bytes that every rank's exposed gathers (ncclAllGather, ncclBroadcast) must total
  REDUCTIONS  the same for its reductions (ncclReduceScatter, ncclReduce, ncclAllReduce)
A line of the report is `<function> <bytes> beside <kernels>`; exposed is `beside 0`. Prints one
line per rank and exits 1 when a rank's exposed bytes differ from the expected, or a report is
missing or malformed.
"""
import glob
import os
import sys

KIND = {"ncclAllGather": "gathers", "ncclBroadcast": "gathers",
        "ncclReduceScatter": "reductions", "ncclReduce": "reductions", "ncclAllReduce": "reductions"}


def summarize(path):
    """{kind: [collectives, bytes, exposed collectives, exposed bytes]} of one report."""
    sums = {"gathers": [0, 0, 0, 0], "reductions": [0, 0, 0, 0]}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            fields = line.split()
            if len(fields) != 4 or fields[0] not in KIND or fields[2] != "beside":
                sys.exit(f"{path}:{n}: not a line of the overlap report: {line.rstrip()}")
            s = sums[KIND[fields[0]]]
            nbytes, beside = int(fields[1]), int(fields[3])
            s[0] += 1
            s[1] += nbytes
            if beside == 0:
                s[2] += 1
                s[3] += nbytes
    return sums


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    directory, expected = sys.argv[1], {"gathers": int(sys.argv[2]), "reductions": int(sys.argv[3])}
    reports = sorted(glob.glob(os.path.join(directory, "overlap_*.txt")))
    if len(reports) < 2:
        sys.exit(f"{directory}: {len(reports)} overlap report(s); a run over 2 ranks writes 2")
    ok = True
    for path in reports:
        sums = summarize(path)
        parts = []
        for kind in ("gathers", "reductions"):
            count, nbytes, exposed, exposed_bytes = sums[kind]
            good = exposed_bytes == expected[kind]
            ok &= good
            parts.append(f"{kind} {count} ({nbytes} bytes), {exposed} exposed ({exposed_bytes} bytes"
                         f"{'' if good else f', expected {expected[kind]}'})")
        print(f"{os.path.basename(path)}: " + "; ".join(parts))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
