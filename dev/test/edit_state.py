"""Rewrites a training-state file (llmc/state.h): sets header words, the loss outlier window's
count, appends bytes, and sums it again, so that tests can make the files a resume must refuse or
read (an older version, values no real run writes).

usage: edit_state.py IN OUT [INDEX=VALUE ...] [--loss-count N] [--append BYTES] [--sum v1|v2]
  INDEX=VALUE   header word INDEX (int64) set to VALUE
  --loss-count  the loss outlier window's count (int32)
  --append      that many zero bytes after the end
  --sum         the checksum [13] computed again: v2 over the header (with [13] zero) and what
                follows, v1 over what follows the header only (the older files); without it [13]
                stays as it was
The version-1 file of a version-2 one (no run seed, no model checksum) is
  edit_state.py IN OUT 1=1 17=0 19=0 20=0 --sum v1
"""
import argparse

import numpy as np

from file_hash import fnv1a64


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("words", nargs="*")
    ap.add_argument("--loss-count", type=int)
    ap.add_argument("--append", type=int, default=0)
    ap.add_argument("--sum", choices=["v1", "v2"])
    a = ap.parse_args()
    data = open(a.src, "rb").read()
    header = np.frombuffer(data, dtype="<i8", count=128).copy()
    assert header[0] == 20241122, f"{a.src}: not a training-state file"
    payload = bytearray(data[1024:])
    if a.loss_count is not None:  # after m, v and the master weights (when [12])
        at = 4 * int(header[7] - header[6]) * (3 if header[12] else 2)
        payload[at:at + 4] = np.int32(a.loss_count).tobytes()
    payload += bytes(a.append)
    for w in a.words:
        index, value = (int(x) for x in w.split("="))
        header[index] = value
    if a.sum:
        header[13] = 0
        h = fnv1a64(header.tobytes()) if a.sum == "v2" else 0xCBF29CE484222325
        header[13] = np.array([fnv1a64(payload, h)], dtype=np.uint64).view("<i8")[0]
    open(a.dst, "wb").write(header.tobytes() + bytes(payload))


if __name__ == "__main__":
    main()
