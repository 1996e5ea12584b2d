"""Writes a token shard (token_shard.py's format) filled with seeded random tokens in [0, vocab),
except that each INDEX=TOKEN argument sets the token at INDEX. For tests that need data without
the tokenizer.

usage: make_shard.py PATH NUM_TOKENS VOCAB SEED [INDEX=TOKEN...]
"""
import sys

import numpy as np

import token_shard


def main():
    path, count, vocab, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    tokens = np.random.default_rng(seed).integers(0, vocab, size=count, dtype=np.uint16)
    for arg in sys.argv[5:]:
        index, token = (int(x) for x in arg.split("="))
        tokens[index] = token
    token_shard.write(path, tokens)


if __name__ == "__main__":
    main()
