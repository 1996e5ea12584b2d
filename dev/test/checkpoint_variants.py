"""From a checkpoint this project wrote (fp32, version 3, summed header and payload), writes the
same model in the other layouts a checkpoint may come in, each with the weights rounded to bf16
(nearest, ties to even) so that all of them hold the same values:
  f32.bin         version 3 without a checksum (as other trainers write it)
  bf16.bin        version 5 (bf16 weights) without a checksum
  f32_csum.bin    version 3 with the older payload-only checksum (header [10] "CSUM")
  bf16_csum.bin   version 5 with the payload-only checksum
and damaged ones:
  bf16_csum_flip.bin   bf16_csum.bin with one payload byte changed
  f32_long.bin         f32.bin with 4 bytes more than its header describes
  v4.bin               f32.bin with version 4 in its header (no such layout)

usage: checkpoint_variants.py MODEL.bin OUTDIR
"""
import os
import sys

import numpy as np

from file_hash import fnv1a64

PAYLOAD_SUM_MARK = 0x4D555343  # "CSUM"


def write(path, header, payload, summed):
    header = header.copy()
    header[10:13] = 0
    if summed:
        h = fnv1a64(payload)
        header[10] = PAYLOAD_SUM_MARK
        header[11:13] = np.array([h & 0xFFFFFFFF, h >> 32], dtype=np.uint32).view("<i4")
    with open(path, "wb") as f:
        f.write(header.tobytes() + payload)


def main():
    src, out = sys.argv[1], sys.argv[2]
    data = open(src, "rb").read()
    header = np.frombuffer(data, dtype="<i4", count=256).copy()
    assert header[0] == 20240326 and header[1] == 3, f"{src}: not an fp32 checkpoint"
    bits = np.frombuffer(data, dtype="<u4", offset=1024).astype(np.uint64)
    bf16 = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")
    f32 = (bf16.astype("<u4") << 16).tobytes()
    h5 = header.copy()
    h5[1] = 5
    write(os.path.join(out, "f32.bin"), header, f32, False)
    write(os.path.join(out, "bf16.bin"), h5, bf16.tobytes(), False)
    write(os.path.join(out, "f32_csum.bin"), header, f32, True)
    write(os.path.join(out, "bf16_csum.bin"), h5, bf16.tobytes(), True)
    flipped = bytearray(open(os.path.join(out, "bf16_csum.bin"), "rb").read())
    flipped[1024 + 2 * (len(bf16) // 2)] ^= 0x10
    open(os.path.join(out, "bf16_csum_flip.bin"), "wb").write(flipped)
    write(os.path.join(out, "f32_long.bin"), header, f32 + b"\0\0\0\0", False)
    h4 = header.copy()
    h4[1] = 4
    write(os.path.join(out, "v4.bin"), h4, f32, False)


if __name__ == "__main__":
    main()
