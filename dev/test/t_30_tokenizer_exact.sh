#!/usr/bin/env bash
# The C tokenizer against the reference JavaScript GPT-2 encoder (npm gpt-3-encoder, run with node):
#  1. the whole nlp-corpus (100,000 sentences) through prepare_data: the shards hold exactly
#     <|endoftext|> + the reference's ids of each sentence;
#  2. hard strings (dev/test/tokenizer/hard_strings.js), well-formed: the same ids;
#  3. the pre-tokenization split of every hard string, ill-formed UTF-8 included (where the
#     reference sees U+FFFD), equals the reference regex's, offset for offset;
#  4. every code point that PCRE2's Unicode assigns, between a letter, a digit, a symbol and a
#     space: the same split, so the letter/number/space classes agree everywhere;
#  5. ill-formed strings: decode(encode(x)) == x (tokenizer_check) and the reference decoder turns
#     our ids into the string node reads from x;
#  6. a synthetic vocabulary whose merges have commas in their symbols, run through Encoder.js
#     itself: its ranking of pairs by the string "first,second" is followed;
#  7. 90,000 distinct random words, twice, through one encoder: more than its word cache holds, so
#     the cache empties and refills, and still gives the reference's ids.
# About 30 s on 2 cores (the reference encoder takes most of it).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash dev/data/nlpcorpus.sh > /dev/null
make -s prepare_data build/tokenizer_check
export OMP_NUM_THREADS=2 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
modules=data/npm/node_modules vocab=data/gpt2 check=build/tokenizer_check js=dev/test/tokenizer
dir=build/test/tokenizer_exact
rm -rf "$dir" && mkdir -p "$dir"

# same NAME FILE_A FILE_B: the two files are equal, else show the first difference.
same() {
    if cmp -s "$2" "$3"; then
        echo "ok   $1: $(wc -l < "$2") lines equal"
    else
        echo "FAIL $1: first differing line:"
        diff "$2" "$3" | head -4 | cut -c1-300
        exit 1
    fi
}

echo "== 1. nlp-corpus through prepare_data against the reference"
node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(l => l !== "");
process.stdout.write(lines.map(l => Buffer.from(JSON.parse(l).text, "utf8").toString("hex")).join("\n") + "\n");
' data/nlpcorpus/nlpcorpus.jsonl > "$dir/corpus.hex"
half=$(( ($(wc -l < "$dir/corpus.hex") + 1) / 2 ))
split -l "$half" -d "$dir/corpus.hex" "$dir/corpus_part"  # the reference on both cores
for part in "$dir"/corpus_part0[01]; do node $js/js_encode.js $modules encode < "$part" > "$part.ids" & done
./prepare_data -i data/nlpcorpus/nlpcorpus.jsonl -o "$dir/corpus" --shard-tokens 500000 --val-fraction 0.05 > /dev/null 2> "$dir/prepare.log"
wait
cat "$dir"/corpus_part00.ids "$dir"/corpus_part01.ids > "$dir/corpus.js.ids"
node $js/check_shards.js "$dir/corpus.js.ids" "$dir/corpus"

echo "== 2. hard strings, well-formed: token ids"
node $js/hard_strings.js valid > "$dir/valid.hex"
node $js/hard_strings.js invalid > "$dir/invalid.hex"
node $js/js_encode.js $modules encode < "$dir/valid.hex" > "$dir/valid.js.ids"
$check encode $vocab < "$dir/valid.hex" > "$dir/valid.c.ids"
same "hard strings, token ids" "$dir/valid.js.ids" "$dir/valid.c.ids"

echo "== 3. hard strings, well-formed and ill-formed: the split"
cat "$dir/valid.hex" "$dir/invalid.hex" > "$dir/all.hex"
node $js/js_encode.js $modules split < "$dir/all.hex" > "$dir/all.js.ends"
$check split $vocab < "$dir/all.hex" > "$dir/all.c.ends"
same "hard strings, piece offsets" "$dir/all.js.ends" "$dir/all.c.ends"

echo "== 4. every assigned code point: the split"
$check codepoints > "$dir/codepoints.hex"
node $js/js_encode.js $modules split < "$dir/codepoints.hex" > "$dir/codepoints.js.ends"
$check split $vocab < "$dir/codepoints.hex" > "$dir/codepoints.c.ends"
same "code points, piece offsets" "$dir/codepoints.js.ends" "$dir/codepoints.c.ends"

echo "== 5. ill-formed UTF-8: round trip and the reference decoder"
$check encode $vocab < "$dir/invalid.hex" > "$dir/invalid.c.ids"
node $js/js_encode.js $modules decode-check "$dir/invalid.c.ids" < "$dir/invalid.hex"

echo "== 6. a synthetic vocabulary with commas in merge symbols, through Encoder.js itself"
node $js/comma_vocab.js $modules "$dir/synthetic" > "$dir/comma.hex"
node $js/js_encode.js "$dir/synthetic" encode < "$dir/comma.hex" > "$dir/comma.js.ids"
$check encode "$dir/synthetic/gpt-3-encoder" < "$dir/comma.hex" > "$dir/comma.c.ids"
same "synthetic vocabulary, token ids" "$dir/comma.js.ids" "$dir/comma.c.ids"
echo "== 7. more distinct words than one encoder's cache holds (65,536), twice: the cache empties and refills"
node -e '
let x = 20261130, out = [];  // a fixed linear congruential stream of letters
const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 8;
for (let i = 0; i < 90000; i++) {
    let w = " ";
    for (let n = 5 + next() % 5; n > 0; n--) w += String.fromCharCode(97 + next() % 26);
    out.push(Buffer.from(w, "latin1").toString("hex"));
}
process.stdout.write(out.concat(out).join("\n") + "\n");
' > "$dir/words.hex"
node $js/js_encode.js $modules encode < "$dir/words.hex" > "$dir/words.js.ids"
$check encode $vocab < "$dir/words.hex" > "$dir/words.c.ids"
same "180,000 words (90,000 distinct), token ids" "$dir/words.js.ids" "$dir/words.c.ids"
echo "all tokenizer exactness checks passed"
