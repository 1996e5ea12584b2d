"""Writes a token shard in the common format (int32 header[256]: magic 20240520, version 1, count;
then uint16 tokens) filled with seeded random tokens in [0, vocab), except that each INDEX=TOKEN
argument sets the token at INDEX. For tests that need data without the tokenizer.

usage: make_shard.py PATH NUM_TOKENS VOCAB SEED [INDEX=TOKEN...]
"""
import sys

import numpy as np


def main():
    path, count, vocab, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    header = np.zeros(256, dtype=np.int32)
    header[0:3] = (20240520, 1, count)
    tokens = np.random.default_rng(seed).integers(0, vocab, size=count, dtype=np.uint16)
    for arg in sys.argv[5:]:
        index, token = (int(x) for x in arg.split("="))
        tokens[index] = token
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(tokens.tobytes())


if __name__ == "__main__":
    main()
