"""Writes copies of token shards (token_shard.py's format) with the vocabulary cut to VOCAB tokens:
the VOCAB - 1 most frequent tokens of the training shards (those whose name holds "_train_";
ties broken by the lower token id) become 0 .. VOCAB - 2 in that order, every other token VOCAB - 1.
A real corpus for a small model whose time would otherwise go to a 50257-way output head.

usage: remap_vocab.py VOCAB OUT_DIR SHARD...   (each copy keeps its shard's file name)
"""
import os
import sys

import numpy as np

import token_shard


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    vocab, out_dir, paths = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    if not 2 <= vocab <= 65536:
        sys.exit(f"remap_vocab.py: VOCAB {vocab}: expected 2 .. 65536")
    shards = {path: token_shard.read(path) for path in paths}
    counts = np.zeros(65536, dtype=np.int64)
    for path, tokens in shards.items():
        if "_train_" in os.path.basename(path):
            counts += np.bincount(tokens, minlength=65536)
    if not counts.any():
        sys.exit("remap_vocab.py: no training shard (a name with _train_) among the shards")
    ranked = np.argsort(-counts, kind="stable")  # stable: equal counts keep the lower id first
    mapping = np.full(65536, vocab - 1, dtype=np.uint16)
    mapping[ranked[: vocab - 1]] = np.arange(vocab - 1, dtype=np.uint16)
    os.makedirs(out_dir, exist_ok=True)
    for path, tokens in shards.items():
        token_shard.write(os.path.join(out_dir, os.path.basename(path)), mapping[tokens])


if __name__ == "__main__":
    main()
