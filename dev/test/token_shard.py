"""The token shard format of llmc/dataloader.h, for the test tools: an int32 header[256] (magic
20240520, version 1, token count), then the tokens as uint16."""
import sys

import numpy as np

MAGIC, VERSION = 20240520, 1


def read(path):
    """The shard's tokens (uint16); exits with a message on a file that is not a shard."""
    with open(path, "rb") as f:
        header = np.frombuffer(f.read(256 * 4), dtype=np.int32)
        if len(header) < 3 or header[0] != MAGIC or header[1] != VERSION:
            sys.exit(f"{path}: not a token shard (magic {header[:1]}, version {header[1:2]})")
        tokens = np.frombuffer(f.read(), dtype=np.uint16)
    if len(tokens) != header[2]:
        sys.exit(f"{path}: the header says {header[2]} tokens, the file holds {len(tokens)}")
    return tokens


def write(path, tokens):
    header = np.zeros(256, dtype=np.int32)
    header[0:3] = (MAGIC, VERSION, len(tokens))
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(tokens, dtype=np.uint16).tobytes())
