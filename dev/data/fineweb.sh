#!/usr/bin/env bash
# A sample of FineWeb (HuggingFaceFW/fineweb, config sample-10BT: English web text, ODC-By) as
# token shards. The documents come from the Hugging Face dataset viewer's rows API (100 per
# request, JSON), so nothing beyond curl and Python's standard library is needed; for billions of
# tokens download the parquet files instead and give their text to prepare_data as JSON lines.
#   bash dev/data/fineweb.sh [DOCUMENTS]     (default 20000 documents, about 20M tokens)
#   data/fineweb/fineweb_val_000000.bin      the first 1% of the text
#   data/fineweb/fineweb_train_%06d.bin      the rest, 10M tokens per shard
# Needs internet (curl); idempotent: pages already downloaded are kept. Not run by the tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
documents=${1:-20000}
# At most 9 digits: bash's arithmetic silently wraps a count past 2^63.
[ $# -le 1 ] && [[ "$documents" =~ ^[1-9][0-9]{0,8}$ ]] || { echo "usage: $0 [DOCUMENTS, 1 to 999999999]" >&2; exit 2; }
out=data/fineweb
pages=$out/pages
api="https://datasets-server.huggingface.co/rows?dataset=HuggingFaceFW%2Ffineweb&config=sample-10BT&split=train"
if [ -f $out/fineweb_val_000000.bin ]; then
    echo "fineweb: $out already prepared (remove it to prepare again)"
    exit 0
fi
mkdir -p $pages
for ((offset = 0; offset < documents; offset += 100)); do
    page=$pages/$(printf '%09d' $offset).json
    [ -f "$page" ] && continue
    length=$(( documents - offset < 100 ? documents - offset : 100 ))
    curl --fail --location --retry 5 --retry-delay 2 --silent --show-error \
        -o "$page.tmp" "$api&offset=$offset&length=$length"
    mv "$page.tmp" "$page"
    printf '\rfineweb: %d of %d documents downloaded' $((offset + length)) "$documents" >&2
done
echo >&2
[ -f data/gpt2/encoder.json ] && [ -f data/gpt2/vocab.bpe ] || bash dev/data/nlpcorpus.sh > /dev/null
# The pages' rows as JSON lines, in order.
/usr/bin/env python3 - $pages $out/fineweb.jsonl "$documents" <<'PY'
import json, os, sys
pages, target, documents = sys.argv[1], sys.argv[2], int(sys.argv[3])
n = 0
with open(target + ".tmp", "w", encoding="utf-8") as f:
    for name in sorted(os.listdir(pages)):
        if not name.endswith(".json") or n >= documents:
            continue
        for row in json.load(open(os.path.join(pages, name), encoding="utf-8"))["rows"]:
            f.write(json.dumps({"text": row["row"]["text"]}, ensure_ascii=False) + "\n")
            n += 1
os.replace(target + ".tmp", target)
print(f"fineweb: {n} documents", file=sys.stderr)
PY
make -s prepare_data
./prepare_data -i $out/fineweb.jsonl -o $out/fineweb --val-fraction 0.01 --shard-tokens 10000000
