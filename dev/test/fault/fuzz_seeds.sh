#!/usr/bin/env bash
# Seed corpora of the parser fuzz targets (mk/fuzz.mk) in build/fuzz/corpus/<target>/, made
# fresh from the current code so they stay valid as formats evolve: a checkpoint (fp32 and a
# bf16 copy) and a training state of a tiny model written by ./train_gpt, token shards, command
# lines, and a minimal GPT-2 vocabulary (256 byte tokens, one merge, <|endoftext|>). Deterministic.
set -eu
cd "$(dirname "$0")/../../.."
out=build/fuzz/corpus
work=build/fuzz/seed-work
rm -rf "$out" "$work" && mkdir -p "$out"/{fuzz_checkpoint,fuzz_state,fuzz_shard,fuzz_args,fuzz_tokenizer_files} "$work"

/usr/bin/python3 dev/test/make_shard.py "$work/train.bin" 400 16 71
OMP_NUM_THREADS=1 ./train_gpt -e L1C8NH2 --vocab-size 16 --max-seq-len 4 -b 1 -t 4 -x 2 -n 2 -v 0 -s 0 \
    -i "$work/train.bin" -o "$work/run" > /dev/null
cp "$work/run/model_00000002.bin" "$out/fuzz_checkpoint/fp32.bin"
cp "$work/run/state_00000002_00000.bin" "$out/fuzz_state/state.bin"
/usr/bin/python3 dev/test/make_shard.py "$out/fuzz_shard/small.bin" 9 300 72
/usr/bin/python3 dev/test/make_shard.py "$out/fuzz_shard/medium.bin" 100 300 73

/usr/bin/python3 - "$out" <<'PY'
import json, struct, sys
import numpy as np
out = sys.argv[1]

# bf16 checkpoint (version 5): the top halves of the fp32 parameters, no checksum mark.
raw = open(f"{out}/fuzz_checkpoint/fp32.bin", "rb").read()
header = np.frombuffer(raw[:1024], dtype=np.int32).copy()
header[1] = 5
header[10:13] = 0
params = np.frombuffer(raw[1024:], dtype=np.uint32)
open(f"{out}/fuzz_checkpoint/bf16.bin", "wb").write(header.tobytes() + (params >> 16).astype(np.uint16).tobytes())

lines = [
    ["-b", "4", "-t", "32", "-k", "wsd", "-l", "1e-3"],
    ["--lr=0.5", "-x", "-1", "--seed", "18446744073709551615", "--bench"],
    ["-sm", "3", "-nk", "2", "-nf", "1", "-w", "10", "-sl", "3.5", "-sg", "4"],
    ["-i", "data/*.bin", "-o", "out", "-y", "1", "-d", "1048576", "--beta2=0.99"],
]
for i, argv in enumerate(lines):
    open(f"{out}/fuzz_args/line{i}", "wb").write(b"\0".join(a.encode() for a in argv))

# GPT-2's byte-to-unicode map: printable bytes stand for themselves, the others move to 256+.
printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
chars, extra = {}, 0
for b in range(256):
    if b in printable:
        chars[b] = chr(b)
    else:
        chars[b] = chr(256 + extra)
        extra += 1
encoder = {chars[b]: b for b in range(256)}
encoder[chars[32] + "t"] = 256
encoder["<|endoftext|>"] = 257
vocab = "#version: 0.2\n" + chars[32] + " t\n"
blob = json.dumps(encoder, ensure_ascii=False).encode() + b"\0" + vocab.encode()
open(f"{out}/fuzz_tokenizer_files/minimal", "wb").write(blob)
PY
rm -rf "$work"
