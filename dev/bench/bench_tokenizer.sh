#!/usr/bin/env bash
# Encoding throughput: prepare_data (C, OpenMP) beside the reference JavaScript GPT-2 encoder (npm
# gpt-3-encoder on node) on the same text, the 100,000 sentences of nlp-corpus (about 9 MB),
# each as one document. Both sides are timed end to end (wall clock, loading the vocabulary
# included; prepare_data also parses the JSON lines and writes shards). The reference runs as
# two node processes on the two halves of the input, so that both sides use both cores.
#   bash dev/bench/bench_tokenizer.sh      (make bench-tokenizer)
set -euo pipefail
cd "$(dirname "$0")/../.."
bash dev/data/nlpcorpus.sh > /dev/null
make -s prepare_data
dir=build/bench/tokenizer
rm -rf "$dir" && mkdir -p "$dir"
input=data/nlpcorpus/nlpcorpus.jsonl
now() { date +%s.%N; }

# The text's size in bytes (UTF-8), and the two halves for the reference.
bytes=$(node -e '
const fs = require("fs");
const lines = fs.readFileSync(process.argv[1], "utf8").split("\n").filter(l => l);
const half = Math.ceil(lines.length / 2);
fs.writeFileSync(process.argv[2], lines.slice(0, half).join("\n") + "\n");
fs.writeFileSync(process.argv[3], lines.slice(half).join("\n") + "\n");
console.log(lines.reduce((n, l) => n + Buffer.byteLength(JSON.parse(l).text), 0));
' $input "$dir/half0.jsonl" "$dir/half1.jsonl")

encode_js='
const { encode } = require(require("path").resolve(process.argv[1], "gpt-3-encoder"));
let tokens = 0;
for (const l of require("fs").readFileSync(process.argv[2], "utf8").split("\n")) if (l) tokens += encode(JSON.parse(l).text).length;
console.log(tokens);
'
start=$(now)
node -e "$encode_js" data/npm/node_modules "$dir/half0.jsonl" > "$dir/js0" &
node -e "$encode_js" data/npm/node_modules "$dir/half1.jsonl" > "$dir/js1" &
wait
js_s=$(awk -v a="$start" -v b="$(now)" 'BEGIN { print b - a }')

c_run() {  # threads -> seconds
    rm -f "$dir"/c_*.bin
    local s
    s=$(now)
    OMP_NUM_THREADS=$1 ./prepare_data -i $input -o "$dir/c" --shard-tokens 100000000 -v 0 > /dev/null 2> "$dir/c$1.log"
    awk -v a="$s" -v b="$(now)" 'BEGIN { print b - a }'
}
c2_s=$(c_run 2)
c1_s=$(c_run 1)
js_tokens=$(( $(cat "$dir/js0") + $(cat "$dir/js1") ))
c_tokens=$(grep -o '[0-9]* training tokens' "$dir/c2.log" | cut -d' ' -f1)
[ "$c_tokens" -eq $(( js_tokens + 100000 )) ] || echo "warning: token counts differ: C $c_tokens (with 100000 <|endoftext|>), JS $js_tokens"

awk -v f=$input -v b="$bytes" -v t="$js_tokens" \
    'BEGIN { printf "input: %s, %.2f MB of text, %d tokens (+ one <|endoftext|> per document)\n", f, b / 1e6, t }'
printf '%-44s %8s %9s %8s\n' encoder seconds "MB/s" ratio
awk -v b="$bytes" -v js="$js_s" -v c2="$c2_s" -v c1="$c1_s" 'BEGIN {
    printf "%-44s %8.2f %9.2f %7.1fx\n", "gpt-3-encoder (node), 2 processes", js, b / js / 1e6, 1
    printf "%-44s %8.2f %9.2f %7.1fx\n", "prepare_data (C), 1 thread", c1, b / c1 / 1e6, js / c1
    printf "%-44s %8.2f %9.2f %7.1fx\n", "prepare_data (C), 2 threads", c2, b / c2 / 1e6, js / c2
}'

# One word of 1 MB (random lowercase letters, no space: one piece of the split), as minified or
# base64-like data can hold: Encoder.js's BPE rescans the word after every merge step (quadratic;
# it is not run here), llmc/tokenizer.c keeps the ranked pairs in a heap (n log n).
make -s build/tokenizer_check
awk 'BEGIN { srand(7); for (i = 0; i < 1000000; i++) printf "%02x", 97 + int(rand() * 26); print "" }' > "$dir/word.hex"
s=$(now)
./build/tokenizer_check encode data/gpt2 < "$dir/word.hex" > "$dir/word.ids"
awk -v a="$s" -v b="$(now)" -v n="$(wc -w < "$dir/word.ids")" \
    'BEGIN { printf "one 1 MB word (tokenizer_check, vocabulary load included): %.2f s, %d tokens\n", b - a, n }'
