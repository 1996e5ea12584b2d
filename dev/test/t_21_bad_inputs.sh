#!/usr/bin/env bash
# Bad inputs give one clear line and a non-zero exit (2 for bad flags, 1 for bad files), never a
# crash: every case runs the trainer built with AddressSanitizer and UndefinedBehaviorSanitizer
# (build/san/train_gpt), and any sanitizer report fails the test.
set -u
cd "$(dirname "$0")/../.."
bin=build/san/train_gpt
dir=build/test/bad
rm -rf "$dir" && mkdir -p "$dir"
export OMP_NUM_THREADS=2 ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1
fails=0

# expect CODE PATTERN -- ARGS...: the exit status is CODE, stderr is one line matching PATTERN, no
# sanitizer report. A refusal comes before any work: a case still running after 60 s has started
# to train instead (timeout's exit status 124 then fails it). The trainer answers timeout's SIGTERM
# by finishing its step, which at the default d12 under the sanitizers takes far longer: KILL 5 s
# later ends it (exit status 137).
expect() {
    local code=$1 pattern=$2; shift 3
    timeout -k 5 60 "$bin" "$@" > "$dir/out" 2> "$dir/err"
    local rc=$?
    if [ $rc -ne "$code" ] || [ "$(wc -l < "$dir/err")" -ne 1 ] || ! grep -qE -e "$pattern" "$dir/err" ||
        grep -qE "Sanitizer|runtime error" "$dir/err"; then
        echo "FAIL: $* -> exit $rc (want $code), stderr:"; sed 's/^/      /' "$dir/err" | head -5
        fails=$((fails + 1))
    else
        echo "ok   exit $rc: $(head -1 "$dir/err")"
    fi
}

tiny=(-e L1C32NH2 --vocab-size 300 --max-seq-len 16 -b 2 -t 8 -v 0 -s 0)
/usr/bin/python3 dev/test/make_shard.py "$dir/good.bin" 400 300 7

# Flags.
expect 2 "unknown flag" -- --no-such-flag 1
expect 2 "-b \(--batch\): '0' is not an integer in \[1," -- -b 0
expect 2 "-l \(--lr\): 'abc' is not a number" -- -l abc
expect 2 "-k \(--schedule\): 'bogus' is not one of" -- -k bogus
expect 2 "needs a value" -- -x
expect 2 "-t \(--seq-len\): 32 is larger than the model's maxT 16" -- "${tiny[@]}" -t 32 -i "$dir/good.bin"
expect 2 "-d \(--total-batch\): 100 is not a multiple of B\*T\*ranks = 16" -- "${tiny[@]}" -d 100 -i "$dir/good.bin"
expect 2 "-e \(--model\) 'L2C30NH4'" -- -e L2C30NH4
expect 2 "needs an output directory" -- "${tiny[@]}" -y 1 -i "$dir/good.bin"
expect 2 "--gelu-fusion belongs to the GPU trainer" -- "${tiny[@]}" --gelu-fusion 2 -i "$dir/good.bin"
expect 2 "--gelu-fusion: .3. is not an integer in \[-1, 2\]" -- --gelu-fusion 3
expect 2 "--fp8-fast-accum belongs to the GPU trainer" -- "${tiny[@]}" --matmul fp8 --fp8-fast-accum 1 -i "$dir/good.bin"
expect 2 "--fp8-fast-accum: .3. is not an integer in \[0, 2\]" -- --fp8-fast-accum 3
# A number past int's range must not wrap into a valid model (4294967298 = 2^32 + 2).
expect 2 "-e \(--model\) 'L4294967298C32NH2': the number of layers" -- -e L4294967298C32NH2
expect 2 "-e \(--model\) 'd4294967298': the number of layers" -- -e d4294967298
expect 2 "'d\+2' is not d<depth>" -- -e d+2
# A nonzero value that fp32 holds as 0 would mean "off" for these flags.
expect 2 "--grad-clip: '1e-50' is below fp32's smallest normal number" -- --grad-clip 1e-50
expect 2 "-l \(--lr\): '1e-40' is below fp32's smallest normal number" -- -l 1e-40
# A flag where a value belongs, and arguments the shell made from an unquoted glob.
expect 2 "-o \(--out\) needs a value" -- "${tiny[@]}" -o --profile
expect 2 "-o \(--out\) needs a value" -- "${tiny[@]}" -o -s 0
expect 2 "unexpected argument 'b.bin' \(every flag takes one value; quote the globs" -- -i a.bin b.bin
expect 2 "--bench times a random model on random tokens and writes nothing: it does not resume" -- --bench -o "$dir/b" -y 1
expect 2 "--bench times a random model on random tokens and writes nothing: it takes no output directory \(-o $dir/b\)" -- \
    --bench -o "$dir/b"
expect 2 "-o \(--out\): the path is 4001 bytes" -- -o "$(printf 'd%.0s' $(seq 4001))"
# B*T past the int both trainers count a micro-batch's tokens in (it wrapped, undefined behaviour).
expect 2 "-b \(--batch\) 1048576 x -t \(--seq-len\) 1048576 = 1099511627776 tokens per micro-step: at most 2147483647" -- \
    -e L1C32NH2 --max-seq-len 1048576 -b 1048576 -t 1048576

# Files.
expect 2 "'missing.bin' is not d<depth>, L<layers>C<channels>NH<heads> or an existing checkpoint file" -- -e missing.bin
expect 2 "'L2C64' is not d<depth>, L<layers>C<channels>NH<heads> or an existing checkpoint file" -- -e L2C64
expect 2 "-x \(--steps\): 0 steps would train nothing" -- -x 0
expect 2 "--seed: ' -1' is not an integer" -- --seed " -1"
expect 2 "-d \(--total-batch\): 1000000000000 tokens would take 62500000000 micro-steps" -- "${tiny[@]}" -i "$dir/good.bin" -d 1000000000000
expect 1 "no token shard matches" -- "${tiny[@]}" -i "$dir/none_*.bin"
expect 1 "cannot create the output directory|not writable" -- "${tiny[@]}" -i "$dir/good.bin" -x 1 -o /dev/null/out

head -c 600 "$dir/good.bin" > "$dir/truncated.bin"
expect 1 "shard '.*truncated.bin' is truncated" -- "${tiny[@]}" -i "$dir/truncated.bin"
cp "$dir/good.bin" "$dir/magic.bin" && printf '\x01\x02\x03\x04' | dd of="$dir/magic.bin" conv=notrunc 2>/dev/null
expect 1 "is not a token shard: magic" -- "${tiny[@]}" -i "$dir/magic.bin"
/usr/bin/python3 dev/test/make_shard.py "$dir/small.bin" 10 300 8
expect 1 "has 10 tokens; one micro-step" -- "${tiny[@]}" -i "$dir/small.bin"
# B*T = 16 tokens are one token short of a micro-step: its last target is the 17th.
/usr/bin/python3 dev/test/make_shard.py "$dir/window.bin" 16 300 11
expect 1 "has 16 tokens; one micro-step of 1 rank\(s\) x B=2 x T=8 needs 17" -- "${tiny[@]}" -i "$dir/window.bin"
/usr/bin/python3 dev/test/make_shard.py "$dir/vocab.bin" 400 60000 9
expect 1 "token .* outside the model's vocabulary \(V=300\): the shard is corrupt or made for a larger" -- "${tiny[@]}" -i "$dir/vocab.bin" -x 1
# The check covers a window's last target too: token B*T = 16 of the first window, alone out of range.
/usr/bin/python3 dev/test/make_shard.py "$dir/last_target.bin" 400 300 10 16=300
expect 1 "token 300 at offset 16 is outside the model's vocabulary" -- "${tiny[@]}" -i "$dir/last_target.bin" -x 1
# A window that ends on a shard's last token is read: 33 tokens hold two micro-steps of 16 (+1 for
# the last target), so the second step reads tokens 16-32 of a.bin; the shard after it, whose
# first token is out of range, is not reached before step 3.
mkdir -p "$dir/exact" && /usr/bin/python3 dev/test/make_shard.py "$dir/exact/a.bin" 33 300 11
/usr/bin/python3 dev/test/make_shard.py "$dir/exact/b.bin" 33 300 12 0=300
if "$bin" "${tiny[@]}" -i "$dir/exact/*.bin" -x 2 > "$dir/out" 2> "$dir/err" &&
    ! "$bin" "${tiny[@]}" -i "$dir/exact/*.bin" -x 3 > "$dir/out" 2> "$dir/err" && grep -q "b.bin': token 300 at offset 0" "$dir/err"; then
    echo "ok   a shard of 2 x 16 + 1 tokens gives 2 micro-steps, the third reads the next shard"
else
    echo "FAIL: the micro-steps of a shard of 2 x 16 + 1 tokens"; sed 's/^/      /' "$dir/err" | head -5; fails=$((fails + 1))
fi
# Not regular files: a FIFO would block the open until a writer came, a directory fail later.
mkfifo "$dir/fifo.bin"
expect 1 "cannot open '.*fifo.bin' for reading: it is not a regular file" -- "${tiny[@]}" -i "$dir/fifo.bin"
expect 1 "cannot open '.*fifo.bin' for reading: it is not a regular file" -- -e "$dir/fifo.bin"
mkdir -p "$dir/dir.bin"
expect 1 "cannot open '.*dir.bin' for reading: it is a directory" -- "${tiny[@]}" -i "$dir/dir.bin"

# A checkpoint and state to damage.
"$bin" "${tiny[@]}" -i "$dir/good.bin" -x 2 -n 2 -o "$dir/run" > /dev/null 2>&1 || { echo "FAIL: could not train the tiny model"; exit 1; }
model="$dir/run/model_00000002.bin"
cp "$model" "$dir/model2.bak"
head -c 3000 "$model" > "$dir/trunc_model.bin"
expect 1 "trunc_model.bin' is truncated" -- -e "$dir/trunc_model.bin"
cp "$model" "$dir/flip_model.bin" && printf '\x55' | dd of="$dir/flip_model.bin" bs=1 seek=5000 conv=notrunc 2>/dev/null
expect 1 "flip_model.bin' is corrupt: checksum" -- -e "$dir/flip_model.bin" -b 2 -t 8 -i "$dir/good.bin" -v 0 -s 0
# A header that still describes a valid model (NH 2 -> 4 divides C = 32): only the checksum,
# which covers the header, can tell.
cp "$model" "$dir/nh_model.bin" && printf '\x04' | dd of="$dir/nh_model.bin" bs=1 seek=20 conv=notrunc 2>/dev/null
expect 1 "nh_model.bin' is corrupt: checksum" -- -e "$dir/nh_model.bin" -b 2 -t 8 -i "$dir/good.bin" -v 0 -s 0
# A header value past a range (maxT, int32 [2], bytes 8..11: 2^20 + 1) is named before the file's
# size, which follows from the header, is judged.
cp "$model" "$dir/maxt_model.bin" && printf '\x01\x00\x10\x00' | dd of="$dir/maxt_model.bin" bs=1 seek=8 conv=notrunc 2>/dev/null
expect 1 "maxt_model.bin': corrupt checkpoint header: maxT must be in \[1, 1048576\]" -- -e "$dir/maxt_model.bin"
head -c 1000 "$dir/good.bin" > "$dir/nomodel.bin"
expect 1 "is not a model checkpoint" -- -e "$dir/nomodel.bin"

state="$dir/run/state_00000002_00000.bin"
cp "$state" "$dir/state.bak"
head -c 2000 "$dir/state.bak" > "$state"
expect 1 "state_00000002_00000.bin' is truncated" -- "${tiny[@]}" -i "$dir/good.bin" -x 4 -o "$dir/run" -y 1
cp "$dir/state.bak" "$state" && printf '\x55' | dd of="$state" bs=1 seek=1500 conv=notrunc 2>/dev/null
expect 1 "state_00000002_00000.bin' is corrupt" -- "${tiny[@]}" -i "$dir/good.bin" -x 4 -o "$dir/run" -y 1
# The header's data position (int64 [9], bytes 72..79) passes every range check: the checksum
# covers the header, so a resume cannot silently read other data.
cp "$dir/state.bak" "$state" && printf '\x07' | dd of="$state" bs=1 seek=72 conv=notrunc 2>/dev/null
expect 1 "state_00000002_00000.bin' is corrupt" -- "${tiny[@]}" -i "$dir/good.bin" -x 4 -o "$dir/run" -y 1
# Values no run writes, in files whose size and checksum agree with them (dev/test/edit_state.py):
# each is refused before a read past a buffer (which the sanitizers would report) or an overflow.
params=$(od -An -t d8 -j 40 -N 8 "$dir/state.bak" | tr -d ' ')
/usr/bin/python3 dev/test/edit_state.py "$dir/state.bak" "$state" 7=$((params + 1)) --append 8 --sum v2
expect 1 "state_00000002_00000.bin' is corrupt: impossible values in the header" -- "${tiny[@]}" -i "$dir/good.bin" -x 4 -o "$dir/run" -y 1
/usr/bin/python3 dev/test/edit_state.py "$dir/state.bak" "$state" 5=$((1 << 62)) 7=$((1 << 62)) --sum v2
expect 1 "state_00000002_00000.bin' is truncated: .* its header's slice of 4611686018427387904 parameters needs more" -- \
    "${tiny[@]}" -i "$dir/good.bin" -x 4 -o "$dir/run" -y 1
/usr/bin/python3 dev/test/edit_state.py "$dir/state.bak" "$state" --loss-count 1000 --sum v2
expect 1 "state_00000002_00000.bin' is corrupt: bad outlier window" -- "${tiny[@]}" -i "$dir/good.bin" -x 4 -o "$dir/run" -y 1
cp "$dir/state.bak" "$state"
"$bin" "${tiny[@]}" -i "$dir/good.bin" -x 4 -o "$dir/run" -y 1 > "$dir/out" 2>&1 && grep -q "resumed from step 2" "$dir/out" \
    && echo "ok   the restored state resumes" || { echo "FAIL: the restored state does not resume"; fails=$((fails + 1)); }
# Resuming with another model than the checkpoint's.
expect 1 "model_00000004.bin. holds another model \(L 1 C 32 NH 2 maxT 16 V 300\) than the one being loaded \(L 2 C 32" -- -e L2C32NH2 --vocab-size 300 \
    --max-seq-len 16 -b 2 -t 8 -v 0 -s 0 -i "$dir/good.bin" -x 6 -o "$dir/run" -y 1
# A resume keeps the run's seed (the GPU's stochastic rounding is keyed by it) and says so.
"$bin" "${tiny[@]}" -i "$dir/good.bin" -x 4 -o "$dir/run" -y 1 --seed 99 > "$dir/out" 2>&1 &&
    grep -q "note: the run started with --seed 1337, which it keeps; --seed 99 is not used" "$dir/out" \
    && echo "ok   a resume with another --seed keeps the run's" || { echo "FAIL: a resume with another --seed"; fails=$((fails + 1)); }
# A resume of a run that has reached -x trains nothing, and says so.
"$bin" "${tiny[@]}" -i "$dir/good.bin" -x 4 -o "$dir/run" -y 1 > "$dir/out" 2>&1 &&
    grep -q "note: the checkpoint is at step 4, and the run has 4 steps: nothing to train" "$dir/out" \
    && echo "ok   a resume at -x says there is nothing to train" || { echo "FAIL: a resume at -x"; fails=$((fails + 1)); }
# A model file copied over another step's passes its own checksum; the state records the one it
# was written with.
cp "$dir/run/model_00000004.bin" "$dir/model4.bak" && cp "$dir/model2.bak" "$dir/run/model_00000004.bin"
expect 1 "model_00000004.bin' is not the model file written with '.*state_00000004_00000.bin': it was replaced" -- \
    "${tiny[@]}" -i "$dir/good.bin" -x 6 -o "$dir/run" -y 1
cp "$dir/model4.bak" "$dir/run/model_00000004.bin"
# A checkpoint's shape stands; --max-seq-len for another one is named as unused.
"$bin" -e "$model" --max-seq-len 64 -b 2 -t 8 -i "$dir/good.bin" -x 1 -v 0 -s 0 > "$dir/out" 2>&1 &&
    grep -q "note: the checkpoint's model has maxT 16 and V 300; --max-seq-len and --vocab-size describe a random model" "$dir/out" \
    && echo "ok   --max-seq-len with a checkpoint is named as unused" || { echo "FAIL: --max-seq-len with a checkpoint"; fails=$((fails + 1)); }

# -g beyond what the context holds is cut to T - 1 tokens (more would run the model past maxT).
"$bin" "${tiny[@]}" -i "$dir/good.bin" -x 1 -s 1 -g 100 > "$dir/out" 2> "$dir/err" && grep -q "^sample:" "$dir/out" &&
    ! grep -qE "Sanitizer|runtime error" "$dir/err" \
    && echo "ok   -g 100 with -t 8 samples within the context" || { echo "FAIL: -g 100 with -t 8"; fails=$((fails + 1)); }
# --peak-tflops is not ignored on the CPU: it is the CPU's peak, and each step shows MFU.
"$bin" "${tiny[@]}" -i "$dir/good.bin" -x 1 --peak-tflops 1 > "$dir/out" 2>&1 && grep -q "^step .* | MFU [0-9.]*% | ETA" "$dir/out" \
    && echo "ok   --peak-tflops gives the CPU trainer's MFU" || { echo "FAIL: --peak-tflops on the CPU"; fails=$((fails + 1)); }

# -m beyond what the validation shards hold is cut to it (a second pass would count windows twice).
/usr/bin/python3 dev/test/make_shard.py "$dir/val.bin" 49 300 8  # 3 micro-batches of 16 tokens
"$bin" "${tiny[@]}" -i "$dir/good.bin" -j "$dir/val.bin" -v 1 -m 20 -x 1 > "$dir/m20" 2>&1
"$bin" "${tiny[@]}" -i "$dir/good.bin" -j "$dir/val.bin" -v 1 -m 3 -x 1 > "$dir/m3" 2>&1
if grep -q "note: the validation shards hold 3 micro-batches of B\*T\*ranks = 16 tokens: -m 20 is cut to 3" "$dir/m20" &&
    [ "$(grep -c 'val loss' "$dir/m20")" = 2 ] && diff <(grep 'val loss' "$dir/m20") <(grep 'val loss' "$dir/m3") > /dev/null; then
    echo "ok   -m 20 over 3 validation batches is cut to 3 (same val losses as -m 3)"
else
    echo "FAIL: -m 20 over 3 validation batches"; sed 's/^/      /' "$dir/m20" | head -5; fails=$((fails + 1))
fi

# A shard of 48 tokens holds 2 such micro-batches, not 3: the third window's last target would
# be token 49 (dataloader_batches_per_pass counts (N - 1) / S, not N / S).
/usr/bin/python3 dev/test/make_shard.py "$dir/val48.bin" 48 300 8
"$bin" "${tiny[@]}" -i "$dir/good.bin" -j "$dir/val48.bin" -v 1 -m 20 -x 1 > "$dir/m20_48" 2>&1
if grep -q "note: the validation shards hold 2 micro-batches of B\*T\*ranks = 16 tokens: -m 20 is cut to 2" "$dir/m20_48"; then
    echo "ok   -m 20 over 48 validation tokens is cut to 2"
else
    echo "FAIL: -m 20 over 48 validation tokens"; sed 's/^/      /' "$dir/m20_48" | head -5; fails=$((fails + 1))
fi
# One batch more than the shards hold is cut too.
"$bin" "${tiny[@]}" -i "$dir/good.bin" -j "$dir/val48.bin" -v 1 -m 3 -x 1 > "$dir/m3_48" 2>&1
if grep -q "note: the validation shards hold 2 micro-batches of B\*T\*ranks = 16 tokens: -m 3 is cut to 2" "$dir/m3_48"; then
    echo "ok   -m 3 over 48 validation tokens is cut to 2"
else
    echo "FAIL: -m 3 over 48 validation tokens"; sed 's/^/      /' "$dir/m3_48" | head -5; fails=$((fails + 1))
fi

# The README's flag table is the one --help prints.
if diff <("$bin" -h | sed -n '/^  -i,/,/^  -h,/p') <(sed -n '/^  -i,/,/^  -h,/p' README.md) > "$dir/help.diff"; then
    echo "ok   README's flag table equals --help"
else
    echo "FAIL: README's flag table differs from --help:"; sed 's/^/      /' "$dir/help.diff"; fails=$((fails + 1))
fi

echo "$fails failure(s)"
[ $fails -eq 0 ]
