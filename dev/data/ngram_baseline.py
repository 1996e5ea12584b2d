#!/usr/bin/env python3
"""Count-based baselines for a token-shard dataset: the validation cross-entropy (nats per token) of
a unigram model and of a bigram model interpolated with it, both counted over ALL training tokens.
A language model that has seen only part of the training data rarely beats the bigram figure, so it
says how low a short run can be expected to go.

    /usr/bin/python3 dev/data/ngram_baseline.py "data/nlpcorpus/nlpcorpus_train_*.bin" \
        data/nlpcorpus/nlpcorpus_val_000000.bin

Shards are read by dev/test/token_shard.py (the format of llmc/dataloader.h).
"""
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test"))
import token_shard  # noqa: E402 (found through the path above)

V = 50257


def load(path):
    return token_shard.read(path).astype(np.int64)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: ngram_baseline.py TRAIN_GLOB VAL_GLOB")
    train = np.concatenate([load(p) for p in sorted(glob.glob(sys.argv[1]))])
    val = np.concatenate([load(p) for p in sorted(glob.glob(sys.argv[2]))])
    counts = np.bincount(train, minlength=V).astype(np.float64)
    unigram = (counts + 0.1) / (counts.sum() + 0.1 * V)  # add-0.1 smoothing: every token has mass
    print(f"train {len(train)} tokens, val {len(val)} tokens")
    print(f"unigram: {-np.log(unigram[val]).mean():.4f}")
    # Bigram counts through a sorted array of pair codes (prev * V + next).
    codes, pair_counts = np.unique(train[:-1] * V + train[1:], return_counts=True)
    queries = val[:-1] * V + val[1:]
    at = np.clip(np.searchsorted(codes, queries), 0, len(codes) - 1)
    seen = np.where(codes[at] == queries, pair_counts[at], 0).astype(np.float64)
    context = counts[val[:-1]]
    bigram = np.where(context > 0, seen / np.maximum(context, 1), 0.0)
    for lam in (0.3, 0.5, 0.7, 0.8):
        p = lam * bigram + (1 - lam) * unigram[val[1:]]
        print(f"bigram interpolated with the unigram, weight {lam}: {-np.log(p).mean():.4f}")


if __name__ == "__main__":
    main()
