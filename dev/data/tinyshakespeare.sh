#!/usr/bin/env bash
# Tiny Shakespeare (about 1 MB of text, 338k GPT-2 tokens) as token shards, the way llm.c cuts it:
# each blank-line-separated section (a speech) is a document preceded by <|endoftext|> and keeps
# its trailing blank line.
#   data/tinyshakespeare/tinyshakespeare_val_000000.bin    the first 10% of the text
#   data/tinyshakespeare/tinyshakespeare_train_000000.bin  the rest
# Needs internet once (curl); idempotent. The tokenizer files come from dev/data/nlpcorpus.sh's
# npm step (run offline afterwards). Not run by the tests: the test machine has no internet.
set -euo pipefail
[ $# -eq 0 ] || { echo "usage: $0 (no arguments)" >&2; exit 2; }
cd "$(dirname "$0")/../.."
url=https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt
out=data/tinyshakespeare
if [ -f $out/tinyshakespeare_val_000000.bin ]; then
    echo "tinyshakespeare: $out already prepared"
    exit 0
fi
mkdir -p $out
if [ ! -f $out/input.txt ]; then
    curl --fail --location --retry 3 --silent --show-error -o $out/input.txt.tmp "$url"
    mv $out/input.txt.tmp $out/input.txt
fi
[ -f data/gpt2/encoder.json ] && [ -f data/gpt2/vocab.bpe ] || bash dev/data/nlpcorpus.sh > /dev/null
# Sections as JSON lines (Python's standard library only).
/usr/bin/env python3 - $out/input.txt $out/tinyshakespeare.jsonl <<'PY'
import json, sys
sections = open(sys.argv[1], encoding="utf-8").read().split("\n\n")
with open(sys.argv[2] + ".tmp", "w", encoding="utf-8") as f:
    for i, s in enumerate(sections):
        f.write(json.dumps({"text": s + "\n\n" if i < len(sections) - 1 else s}) + "\n")
PY
mv $out/tinyshakespeare.jsonl.tmp $out/tinyshakespeare.jsonl
make -s prepare_data
./prepare_data -i $out/tinyshakespeare.jsonl -o $out/tinyshakespeare --val-fraction 0.1
