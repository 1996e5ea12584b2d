#!/usr/bin/env bash
# The tokenizer's round trip and safe printing, and the data preparation tool: shard format,
# inputs (text, directories, JSON lines), --val-fraction's split by input bytes, output
# independent of threads and chunking, and bad inputs (a clear one-line error, exit 2 for flags
# and 1 otherwise, no shard left behind under a final or temporary name), and terminating
# signals mid-run (taken by the main thread only; nothing left behind; none under nohup for
# SIGHUP); then bad arguments of the data and launch scripts (with mpirun and curl stubbed).
# Every run of the tool here is the AddressSanitizer/UBSan build.
# About 25 s on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/../.."
bash dev/data/nlpcorpus.sh > /dev/null || { echo "FAIL: dev/data/nlpcorpus.sh"; exit 1; }
make -s prepare_data build/san/prepare_data build/tokenizer_check || exit 1
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 OMP_NUM_THREADS=2
tool=build/san/prepare_data check=build/tokenizer_check vocab=data/gpt2
dir=build/test/tokenizer_data
rm -rf "$dir" && mkdir -p "$dir"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

echo "== round trip on random bytes (seeded)"
$check roundtrip $vocab 30 1000 || fail "round trip, seed 30"

echo "== the safe printer"
# expect_print HEX_WANTED TEXT_FOR_THE_LOG IDS...
expect_print() {
    local want=$1 what=$2; shift 2
    local got
    got=$($check print $vocab "$@" | xxd -p | tr -d '\n')
    if [ "$got" = "$want" ]; then echo "ok   $what"; else fail "printing $what: got $got, want $want"; fi
}
emoji=$(printf '\xf0\x9f\x98\x80' | xxd -p | $check encode $vocab)   # one character, several tokens
byte_ff=$(echo ff | $check encode $vocab)
escape=$(echo 1b5b33316d | $check encode $vocab)                        # ESC [ 3 1 m
expect_print "48656c6c6f2c20776f726c64" "plain text" 15496 11 995
# shellcheck disable=SC2086
expect_print "f09f9880" "a character split across tokens" $emoji
expect_print "efbfbd" "an unfinished character at the end" "${emoji%% *}"
expect_print "efbfbd" "an ill-formed byte" "$byte_ff"
expect_print "efbfbd41" "an ill-formed subpart of two bytes" "$(echo e2 | $check encode $vocab)" \
    "$(echo 82 | $check encode $vocab)" 32
# shellcheck disable=SC2086
expect_print "efbfbd5b33316d" "a terminal escape (ESC replaced)" $escape
# A UTF-16 surrogate (U+D800 as ED A0 80) is not UTF-8: three ill-formed bytes, one U+FFFD each.
# shellcheck disable=SC2086
expect_print "efbfbdefbfbdefbfbd" "a surrogate" $(echo eda080 | $check encode $vocab)
expect_print "0a093c7c656e646f66746578747c3e" "newline, tab, <|endoftext|>" 198 197 50256
expect_print "3c7c696e76616c696420746f6b656e2035303235377c3e3c7c696e76616c696420746f6b656e202d317c3e" \
    "ids outside the vocabulary" 50257 -1
# DEL and the C1 controls (U+0080-U+009F) are control characters too; U+00A0 is not.
# shellcheck disable=SC2086
expect_print "efbfbdefbfbdefbfbdc2a0" "DEL, U+0085 and U+009F replaced, U+00A0 kept" $(echo 7fc285c29fc2a0 | $check encode $vocab)
# An unfinished character ends where an id outside the vocabulary comes: its U+FFFD comes first.
expect_print "efbfbd3c7c696e76616c696420746f6b656e2035303235377c3e" "an unfinished character, then an id outside the vocabulary" \
    "${emoji%% *}" 50257

echo "== shards: format and contents"
head -n 3000 data/nlpcorpus/nlpcorpus.jsonl > "$dir/small.jsonl"
node -e '
const fs = require("fs");
const lines = fs.readFileSync(process.argv[1], "utf8").split("\n").filter(l => l !== "");
fs.writeFileSync(process.argv[2], lines.map(l => Buffer.from(JSON.parse(l).text).toString("hex")).join("\n") + "\n");
fs.writeFileSync(process.argv[3], lines.map(l => JSON.parse(l).text).join("\n") + "\n");
' "$dir/small.jsonl" "$dir/small.hex" "$dir/small.txt"
$check encode $vocab < "$dir/small.hex" > "$dir/small.ids"
$tool -i "$dir/small.jsonl" -o "$dir/a" --shard-tokens 20000 > /dev/null 2> "$dir/log" || fail "prepare_data on JSON lines: $(tail -1 "$dir/log")"
node dev/test/tokenizer/check_shards.js "$dir/small.ids" "$dir/a" || fail "JSON lines shards"
ls "$dir"/a_val_*.bin | wc -l | grep -qx 1 || fail "the first shard alone should be validation"
# --shard-tokens 20000: every shard but the last holds exactly 20000 (the header's count, int32 [2]).
counts=$(for f in "$dir"/a_val_*.bin "$dir"/a_train_*.bin; do od -An -t d4 -j 8 -N 4 "$f"; done | tr -s ' \n' ' ')
[[ "$counts" =~ ^(\ 20000)+\ [0-9]+\ $ ]] || fail "shard token counts '$counts': want 20000 in each but the last"
grep -q "documents, .* tokens, .* M tokens/s" "$dir/log" || fail "no progress line"
# --val-fraction F: validation is the documents with less than F of the input's bytes before them
# (counted here from the lines' byte lengths). Blank lines (20,000 spaces) and empty records
# (1,000) hold no document but count as input, about 8% of it.
{ printf '%20000s\n' ''; for i in $(seq 1000); do echo '{"text": ""}'; done; head -n 1500 "$dir/small.jsonl"
  printf '\n\n'; tail -n +1501 "$dir/small.jsonl"; } > "$dir/small_blank.jsonl"
val_docs=$(LC_ALL=C awk -v total="$(stat -c %s "$dir/small_blank.jsonl")" '{
    if ($0 !~ /^ *$/ && $0 != "{\"text\": \"\"}" && before < 0.3 * total) n++; before += length($0) + 1 }
    END { print n + 0 }' "$dir/small_blank.jsonl")
[ "$val_docs" -gt 0 ] || fail "--val-fraction 0.3 of small_blank.jsonl should hold documents, counted $val_docs"
$tool -i "$dir/small_blank.jsonl" -o "$dir/f" --shard-tokens 20000 -v 0.3 > /dev/null 2>&1 || fail "--val-fraction 0.3"
node dev/test/tokenizer/check_shards.js "$dir/small.ids" "$dir/f" "$val_docs" || fail "--val-fraction 0.3"

echo "== the same shards on 1 thread and with 16-byte pieces"
OMP_NUM_THREADS=1 $tool -i "$dir/small.jsonl" -o "$dir/b" --shard-tokens 20000 > /dev/null 2>&1 || fail "1 thread"
for f in "$dir"/a_*.bin; do cmp -s "$f" "${f/\/a_/\/b_}" || fail "1 thread differs: $f"; done
# A text file is one document; pieces of 16 bytes cut only where the tokens cannot change.
xxd -p "$dir/small.txt" | tr -d '\n' > "$dir/whole.hex" && echo >> "$dir/whole.hex"
$check encode $vocab < "$dir/whole.hex" > "$dir/whole.ids"
$tool -i "$dir/small.txt" -o "$dir/c" -v 0 --chunk-bytes 16 > /dev/null 2>&1 || fail "text file in 16-byte pieces"
node dev/test/tokenizer/check_shards.js "$dir/whole.ids" "$dir/c" 0 || fail "text file in 16-byte pieces"
# Line breaks next to other white space, where a cut can change the tokens ("\n\n\nx" is "\n\n"
# (628) and "\n" whole, three "\n" (198) cut after the first): the same 16-byte pieces.
LC_ALL=C awk 'NR <= 600 { split("\n| \n|\n  |\n\n\n|\t\n|\n \n|  \n\n |\n\t|\n\n  ", sep, "|"); printf "%s%s", $0, sep[NR % 9 + 1] }' \
    "$dir/small.txt" > "$dir/spaced.txt"
xxd -p "$dir/spaced.txt" | tr -d '\n' > "$dir/spaced.hex" && echo >> "$dir/spaced.hex"
$check encode $vocab < "$dir/spaced.hex" > "$dir/spaced.ids"
$tool -i "$dir/spaced.txt" -o "$dir/g" -v 0 --chunk-bytes 16 > /dev/null 2>&1 || fail "white space around line breaks in 16-byte pieces"
node dev/test/tokenizer/check_shards.js "$dir/spaced.ids" "$dir/g" 0 || fail "white space around line breaks in 16-byte pieces"
# The same with a vocabulary that merges a space and a line break both ways (GPT-2's merges none:
# there a cut after " \n", which splits the pre-tokens " " and "\n" of "x \nY" differently, still
# gives the same ids; here " \n" at a piece's end is one token).
sv=$dir/space_vocab && mkdir -p "$sv"
node -e 'const fs = require("fs"), e = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
e["\u0120\u010a"] = 50257; e["\u010a\u0120"] = 50258; fs.writeFileSync(process.argv[2], JSON.stringify(e));' \
    $vocab/encoder.json "$sv/encoder.json"
{ head -n 1 $vocab/vocab.bpe; printf '\xc4\xa0 \xc4\x8a\n\xc4\x8a \xc4\xa0\n'; tail -n +2 $vocab/vocab.bpe; } > "$sv/vocab.bpe"
$check encode "$sv" < "$dir/spaced.hex" > "$dir/spaced_sv.ids"
$tool -i "$dir/spaced.txt" -o "$dir/h" -t "$sv" -v 0 --chunk-bytes 16 > /dev/null 2>&1 || fail "a vocabulary merging spaces and line breaks"
node dev/test/tokenizer/check_shards.js "$dir/spaced_sv.ids" "$dir/h" 0 || fail "a vocabulary merging spaces and line breaks"
grep -qw 50257 "$dir/spaced_sv.ids" || fail "the text never gives the merged token, so the check above proves nothing"

echo "== a directory of text files: one document each, sorted by path"
mkdir -p "$dir/docs/sub" && printf 'first doc\n' > "$dir/docs/a.txt" && printf 'third doc' > "$dir/docs/sub/c.txt"
printf 'second  doc \xff' > "$dir/docs/b.txt" && printf 'hidden' > "$dir/docs/.hidden"
printf '%s\n' 666972737420646f630a 7365636f6e642020646f6320ff 746869726420646f63 | $check encode $vocab > "$dir/docs.ids"
$tool -i "$dir/docs" -o "$dir/d" > /dev/null 2> "$dir/d.err" || fail "directory input"
node dev/test/tokenizer/check_shards.js "$dir/docs.ids" "$dir/d" || fail "directory input"
grep -q "warning: all 13 tokens went to the validation split" "$dir/d.err" || fail "no warning that no token is for training"
# -v 0.5 of its 32 bytes: a.txt (10) and b.txt (13, 10 before it) are validation, c.txt (23 before it) not.
$tool -i "$dir/docs" -o "$dir/e" -v 0.5 > /dev/null 2> "$dir/e.err" || fail "directory input, -v 0.5"
grep -q "warning" "$dir/e.err" && fail "a warning where training has tokens: $(cat "$dir/e.err")"
node dev/test/tokenizer/check_shards.js "$dir/docs.ids" "$dir/e" 2 || fail "directory input, -v 0.5"

echo "== bad inputs"
# expect CODE PATTERN ARGS...: exit status CODE, stderr one line matching PATTERN, no sanitizer
# report, and no shard of the prefix -o $dir/bad under any name.
expect() {
    local code=$1 pattern=$2; shift 2
    rm -f "$dir"/bad_*
    $tool "$@" > "$dir/out" 2> "$dir/err"
    local rc=$? left
    left=$(ls "$dir"/bad_* 2> /dev/null | wc -l)
    if [ $rc -ne "$code" ] || ! grep -qE -e "$pattern" "$dir/err" || [ "$(grep -vc '^$' "$dir/err")" -ne 1 ] ||
        grep -qE "Sanitizer|runtime error" "$dir/err" || [ "$left" -ne 0 ]; then
        fail "$* -> exit $rc (want $code), $left shard files left, stderr:"; sed 's/^/      /' "$dir/err" | head -5
    else
        echo "ok   exit $rc: $(head -1 "$dir/err")"
    fi
}
out=(-o "$dir/bad")
expect 2 "unknown option '--bogus'" -i "$dir/small.jsonl" "${out[@]}" --bogus
expect 2 "--shard-tokens must be an integer" -i "$dir/small.jsonl" "${out[@]}" --shard-tokens 0
expect 2 "--val-fraction must be a number in \[0, 1\)" -i "$dir/small.jsonl" "${out[@]}" --val-fraction 1.5
expect 2 "--val-fraction must be a number in \[0, 1\), got '1'" -i "$dir/small.jsonl" "${out[@]}" --val-fraction 1
expect 2 "--format must be auto, text or jsonl" -i "$dir/small.jsonl" "${out[@]}" -f xml
expect 2 "option -i needs a value" "${out[@]}" -i
# A flag where a value belongs is the value missing, not an output named "-h" (in the current directory).
expect 2 "option -o needs a value" -i "$dir/small.jsonl" -o -h
expect 2 "option -s needs a value" -i "$dir/small.jsonl" "${out[@]}" -s --val-fraction 0.1
expect 2 "no output" -i "$dir/small.jsonl"
expect 2 "-o takes a path prefix" -i "$dir/small.jsonl" -o "$dir/"
expect 1 "cannot read input '.*missing.txt'" -i "$dir/missing.txt" "${out[@]}"
mkdir -p "$dir/empty_dir"  # no file to sort
expect 1 "the input holds no text" -i "$dir/empty_dir" "${out[@]}"
expect 1 "'.*a_(val|train)_0000[0-9]{2}.bin' already exists" -i "$dir/small.jsonl" -o "$dir/a"
# Any older shard of the prefix, not only the first: the trainer's glob would mix it in.
mkdir -p "$dir/old" && rm -f "$dir"/old/* && : > "$dir/old/x_train_000007.bin"
expect 1 "'.*old/x_train_000007.bin' already exists" -i "$dir/small.jsonl" -o "$dir/old/x"
rm -f "$dir"/old/* && : > "$dir/old/x_val_000003.bin"
expect 1 "'.*old/x_val_000003.bin' already exists" -i "$dir/small.jsonl" -o "$dir/old/x"
# An input named like a temporary shard is not overwritten (temporaries carry the process id).
rm -f "$dir"/old/* && head -n 10 "$dir/small.jsonl" | tee "$dir/old/x_val_000000.bin.tmp" > "$dir/tmp_input"
$tool -i "$dir/old/x_val_000000.bin.tmp" -f jsonl -o "$dir/old/x" > /dev/null 2>&1 &&
    cmp -s "$dir/tmp_input" "$dir/old/x_val_000000.bin.tmp" || fail "an input named PREFIX_val_000000.bin.tmp was overwritten"
expect 1 "cannot create shard '/dev/null/x_val_000000.bin.tmp.[0-9]+'" -i "$dir/small.jsonl" -o /dev/null/x
expect 1 "cannot create shard '.*no_such_dir/x_val_000000.bin.tmp.[0-9]+'" -i "$dir/small.jsonl" -o "$dir/no_such_dir/x"
# Past a file-size limit (ulimit -f 16: 16 KiB, less than a 20000-token shard) a write fails and
# is reported; SIGXFSZ killed the tool without a word (and left its temporaries).
printf '#!/bin/sh\nulimit -f 16 && exec %s "$@"\n' "$PWD/$tool" > "$dir/limited.sh" && chmod +x "$dir/limited.sh"
unlimited=$tool tool=$dir/limited.sh
expect 1 "writing '.*bad_val_000000.bin.tmp.[0-9]+' failed: File too large" -i "$dir/small.jsonl" "${out[@]}" --shard-tokens 20000
tool=$unlimited

: > "$dir/empty.txt"
expect 1 "the input holds no text" -i "$dir/empty.txt" "${out[@]}"
printf '{"text": ""}\n\n' > "$dir/empty.jsonl"
expect 1 "the input holds no text" -i "$dir/empty.jsonl" "${out[@]}"
# A malformed line after enough text for several shards: nothing may be left behind.
{ cat "$dir/small.jsonl"; echo '{"text": "unterminated'; } > "$dir/malformed.jsonl"
expect 1 "malformed.jsonl:3001: malformed JSON" -i "$dir/malformed.jsonl" "${out[@]}" --shard-tokens 1000
{ head -n 10 "$dir/small.jsonl"; echo '{"body": "x"}'; } > "$dir/nofield.jsonl"
expect 1 "nofield.jsonl:11: the record has no string field \"text\"" -i "$dir/nofield.jsonl" "${out[@]}"
expect 1 "nofield.jsonl:1: the record has no string field \"body\"" -i "$dir/nofield.jsonl" "${out[@]}" --jsonl-field body
{ head -n 2 "$dir/small.jsonl"; echo '{"text": "a"} trailing'; } > "$dir/trailing.jsonl"
expect 1 "trailing.jsonl:3: malformed JSON" -i "$dir/trailing.jsonl" "${out[@]}"

# Vocabulary files: missing, corrupt, truncated.
v=$dir/vocab && mkdir -p "$v"
expect 1 "cannot load the tokenizer: cannot open '.*vocab/encoder.json'" -i "$dir/small.jsonl" "${out[@]}" -t "$v"
cp $vocab/encoder.json "$v/" 
expect 1 "cannot load the tokenizer: cannot open '.*vocab/vocab.bpe'" -i "$dir/small.jsonl" "${out[@]}" -t "$v"
head -c 100000 $vocab/vocab.bpe > "$v/vocab.bpe"
expect 1 "vocab.bpe has no merge making token .* truncated file" -i "$dir/small.jsonl" "${out[@]}" -t "$v"
{ head -n 5 $vocab/vocab.bpe; echo 'one two three'; tail -n +6 $vocab/vocab.bpe; } > "$v/vocab.bpe"
expect 1 "vocab.bpe line 6: expected two symbols, found 3" -i "$dir/small.jsonl" "${out[@]}" -t "$v"
cp $vocab/vocab.bpe "$v/" && head -c 300000 $vocab/encoder.json > "$v/encoder.json"
expect 1 "encoder.json is not valid JSON" -i "$dir/small.jsonl" "${out[@]}" -t "$v"
echo '[1, 2, 3]' > "$v/encoder.json"
expect 1 "encoder.json is not a JSON object" -i "$dir/small.jsonl" "${out[@]}" -t "$v"
sed 's/"<|endoftext|>": 50256/"<|endoftext|>": 7/' $vocab/encoder.json > "$v/encoder.json"
expect 1 "has id 7, already taken|token .* has id 50256" -i "$dir/small.jsonl" "${out[@]}" -t "$v"

# A terminating signal mid-run (a scheduler's SIGTERM, ^C, a closed terminal): shards under
# neither name left behind, and the exit status of the signal. The signal comes once the first
# shards were written under temporary names, while none has its final name yet: the tool is
# stopped (SIGSTOP), its threads' signal masks are read, it is signalled, then continued, so the
# signal lands mid-run however fast the machine is. (env gives SIGINT and SIGHUP their default
# back, as a terminal's foreground job has: a background job of a script starts with SIGINT
# ignored, a run under nohup with SIGHUP ignored, and the tool respects both.)
for i in $(seq 40); do cat "$dir/small.jsonl"; done > "$dir/long.jsonl"
# start_tool [nohup]: starts the tool on long.jsonl in the background (with SIGHUP ignored under
# nohup); sets pid.
start_tool() {
    rm -f "$dir"/sig_*
    if [ "${1:-}" = nohup ]; then
        (trap '' HUP; exec $tool -i "$dir/long.jsonl" -o "$dir/sig" --shard-tokens 20000 > /dev/null 2> "$dir/err") &
    else
        env --default-signal=INT,HUP $tool -i "$dir/long.jsonl" -o "$dir/sig" --shard-tokens 20000 > /dev/null 2> "$dir/err" &
    fi
    pid=$!
}
# signal_mid_run SIG: waits (at most 30 s) for 2 temporary shards, stops the tool, and when it is
# still before its renames (no final shard; stopped, not ended) sends SIG and continues it, setting
# written. Otherwise continues it, waits for it and returns 1: the caller starts it again.
signal_mid_run() {
    local state=
    for _ in $(seq 600); do [ "$(ls "$dir"/sig_*.tmp.* 2> /dev/null | wc -l)" -ge 2 ] && break; sleep 0.05; done
    kill -STOP "$pid" 2> /dev/null
    for _ in $(seq 100); do  # until the stop has landed (or the tool has ended: a zombie, Z)
        state=$(awk '{ print $3 }' "/proc/$pid/stat" 2> /dev/null)
        [ "$state" = T ] || [ "$state" = Z ] || [ -z "$state" ] && break
        sleep 0.01
    done
    written=$(ls "$dir"/sig_*.tmp.* 2> /dev/null | wc -l)
    if [ "$state" != T ] || [ "$written" -lt 2 ] || ls "$dir"/sig_*.bin > /dev/null 2>&1; then
        kill -CONT "$pid" 2> /dev/null; wait "$pid" 2> /dev/null
        return 1
    fi
    # Only the main thread may take the signals (its handler walks the list of temporaries that
    # only it changes): every other thread blocks SIGHUP, SIGINT and SIGTERM (bits 0, 1 and 14).
    local task blocked
    for task in /proc/"$pid"/task/*; do
        [ "${task##*/}" = "$pid" ] && continue
        blocked=$(awk '/^SigBlk/ { print $2 }' "$task/status")
        (( (16#$blocked & 0x4003) == 0x4003 )) || fail "SIG$1: thread ${task##*/} of the tool takes the signals (SigBlk $blocked)"
    done
    kill -"$1" "$pid" && kill -CONT "$pid"
}
# signalled SIG [nohup]: the tool signalled mid-run (at most 5 starts); sets rc and fails when no
# start could be signalled mid-run.
signalled() {
    for _ in 1 2 3 4 5; do
        start_tool "${2:-}"
        if signal_mid_run "$1"; then
            { wait $pid; } 2> /dev/null  # (bash's own report of the signal)
            rc=$?
            return 0
        fi
    done
    fail "SIG$1: 5 runs of the tool each got past its first shards' renames before it could be stopped"
    return 1
}
for sig in TERM INT HUP; do
    signalled $sig || continue
    left=$(ls "$dir"/sig_* 2> /dev/null | wc -l) want=$((128 + $(kill -l $sig)))
    if [ $rc -ne $want ] || [ "$left" -ne 0 ]; then
        fail "SIG$sig mid-run: $written temporary shards before it, exit $rc (want $want), $left left after"
    else
        echo "ok   SIG$sig after $written temporary shards: exit $rc, none left"
    fi
done
# Under nohup (SIGHUP ignored) a hangup changes nothing: the run completes.
if signalled HUP nohup; then
    done=$(ls "$dir"/sig_*.bin 2> /dev/null | wc -l) left=$(ls "$dir"/sig_*.tmp.* 2> /dev/null | wc -l)
    if [ $rc -ne 0 ] || [ "$done" -lt 2 ] || [ "$left" -ne 0 ]; then
        fail "SIGHUP under nohup: exit $rc, $done shards, $left temporaries"
    else
        echo "ok   SIGHUP under nohup: exit 0, $done shards"
    fi
fi

echo "== the data and launch scripts: arguments"
# Stubs: mpirun prints its arguments, curl fails (no download is ever started here).
root=$PWD stubs=$dir/stubs
mkdir -p "$stubs" "$dir/call er" && echo "localhost slots=2" > "$dir/call er/hosts"
printf '#!/bin/sh\necho "$@"\n' > "$stubs/mpirun" && printf '#!/bin/sh\nexit 7\n' > "$stubs/curl" && chmod +x "$stubs"/*
# expect_script CODE PATTERN SCRIPT ARGS...: run from "$dir/call er" (a path with a space), exit
# status CODE and output matching PATTERN.
expect_script() {
    local code=$1 pattern=$2 script=$3 got rc; shift 3
    got=$(cd "$dir/call er" && PATH="$root/$stubs:$PATH" TRAINER=/bin/true bash "$root/$script" "$@" 2>&1)
    rc=$?
    if [ $rc -ne "$code" ] || ! grep -qE -e "$pattern" <<< "$got"; then
        fail "$script $* -> exit $rc (want $code): $(head -c 300 <<< "$got")"
    else
        echo "ok   exit $rc: $script $*"
    fi
}
# The hostfile is named from the caller's directory, not the checkout's (and passed on resolved:
# under make test-sanitize the checkout is a shadow of links).
expect_script 0 "--hostfile $(realpath "$dir/call er/hosts") -np 2 " scripts/launch_multi_node.sh hosts 2 -e d12
expect_script 1 "the hostfile 'nohosts' is not a readable file" scripts/launch_multi_node.sh nohosts 2
# Arguments a data script does not take are refused, not ignored.
expect_script 2 "usage: .*nlpcorpus.sh \(no arguments\)" dev/data/nlpcorpus.sh --force
expect_script 2 "usage: .*tinyshakespeare.sh \(no arguments\)" dev/data/tinyshakespeare.sh extra
expect_script 2 "usage: .*fineweb.sh \[DOCUMENTS" dev/data/fineweb.sh 10 extra
expect_script 2 "usage: .*fineweb.sh \[DOCUMENTS" dev/data/fineweb.sh 99999999999999999999

[ $fails -eq 0 ] && echo "all data tool checks passed"
[ $fails -eq 0 ]
