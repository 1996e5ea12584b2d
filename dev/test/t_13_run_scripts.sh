#!/usr/bin/env bash
# The run scripts: scripts/run_gpt2.sh's hyperparameters for each GPT-2 size, rank count and
# hostfile (stand-ins for the trainer and mpirun print their arguments, so the flags are read back
# exactly), its refusals, the trainer choice of scripts/pick_trainer.sh (a stand-in nvidia-smi that
# answers or not), and real runs of train_gpt through it (one rank, then two under mpirun): flags
# given after the size win, paths in TRAIN, VAL and OUT are the caller's, and the same command run
# again resumes from the newest checkpoint; then scripts/run_default.sh's choice between a fresh
# out/default and a resume. About 5 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
dir=$root/build/test/run_scripts
rm -rf "$dir" && mkdir -p "$dir/data" "$dir/caller"
/usr/bin/python3 dev/test/make_shard.py "$dir/data/train_000000.bin" 6000 300 31
/usr/bin/python3 dev/test/make_shard.py "$dir/data/val_000000.bin" 2000 300 32
# Stand-ins that print their arguments: the trainer, and an mpirun (a real one starting dozens of
# ranks that exit at once, without MPI, hung once in twenty runs here; the real mpirun runs
# train_gpt below).
mkdir -p "$dir/bin" "$dir/mpi"
printf '#!/bin/sh\nprintf "%%s\\n" "$*"\n' > "$dir/bin/args"
printf '#!/bin/sh\nprintf "mpirun %%s\\n" "$*"\n' > "$dir/mpi/mpirun"
chmod +x "$dir/bin/args" "$dir/mpi/mpirun"
fails=0
check() {  # check NAME COMMAND...
    if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
export TRAIN="$dir/data/train_*.bin" VAL="$dir/data/val_*.bin" MPIRUN_ARGS=--oversubscribe

# flags_of SIZE [NP] [FLAGS...]: the flags run_gpt2.sh gives the trainer (with NP > 1, mpirun's
# and the trainer's)
flags_of() { PATH="$dir/mpi:$PATH" TRAINER="$dir/bin/args" OUT=o bash scripts/run_gpt2.sh "$@"; }
# has NAME "FLAGS" -x V...: every "-x V" pair is in FLAGS as written
has() {
    local name=$1 line=" $2 "; shift 2
    local missing=()
    while [ $# -ge 2 ]; do [[ $line == *" $1 $2 "* ]] || missing+=("$1 $2"); shift 2; done
    check "$name${missing:+ (missing: ${missing[*]}; got:$line)}" test ${#missing[@]} -eq 0
}
# GPT-3's table 2.1 (lr, tokens per step), warmup over 375M tokens, 10B tokens by default; the
# micro-batch the largest power of two up to the size's cap that divides the step's rows per rank.
has "d12: lr, batch, steps, warmup" "$(flags_of d12)" -e d12 -t 1024 -b 64 -d 524288 -x 19074 -u 715 -l 6e-4 \
    -k cosine -q 0.1 -c 0.1 --grad-clip 1 -nk 2 -y 1 -o "$root/o"
has "d24" "$(flags_of d24)" -e d24 -b 32 -d 524288 -x 19074 -u 715 -l 3e-4
has "d36" "$(flags_of d36)" -e d36 -b 16 -d 524288 -x 19074 -u 715 -l 2.5e-4
has "d48" "$(flags_of d48)" -e d48 -b 8 -d 1048576 -x 9537 -u 358 -l 2e-4
has "TOKENS rounds the steps up" "$(TOKENS=1000000 flags_of d12)" -x 2
# NP > 1: launch_one_node.sh, ZeRO 1 by default, the micro-batch shrinking to split the rows.
has "d12 over 16 ranks: B 32, ZeRO 1" "$(flags_of d12 16)" -np 16 "$dir/bin/args" -z -z 1 -b 32 -d 524288
has "d48 over 256 ranks: B 4" "$(flags_of d48 256)" -np 256 -b 4 -d 1048576
has "ZERO picks the stage" "$(ZERO=3 flags_of d12 2)" -z 3 -b 64
# HOSTFILE: launch_multi_node.sh, which starts the trainer by its absolute path and gives mpirun
# the hostfile's real path (under make test-sanitize, build/ is a symbolic link).
echo "localhost slots=2" > "$dir/hosts"
has "a hostfile: launch_multi_node.sh" "$(HOSTFILE=$dir/hosts flags_of d12 2)" \
    --hostfile "$(realpath "$dir/hosts")" -np 2 \
    "$dir/bin/args" -z -z 1 -b 64 -d 524288
has "later flags win" "$(flags_of d12 -x 5 -b 2)" -x 5 -b 2

refused() {  # refused NAME STATUS WORDS COMMAND...: exits STATUS, printing WORDS on stderr
    local name=$1 want=$2 words=$3; shift 3
    local rc=0
    "$@" > "$dir/refused.out" 2> "$dir/refused.err" || rc=$?
    check "$name: exit $want (got $rc)" test $rc -eq "$want"
    check "$name: says '$words'" grep -q -- "$words" "$dir/refused.err"
}
export TRAINER="$dir/bin/args"
refused "unknown size" 2 usage bash scripts/run_gpt2.sh d13
refused "no size" 2 usage bash scripts/run_gpt2.sh
refused "NP 0" 2 usage bash scripts/run_gpt2.sh d12 0
refused "rows that do not split" 2 "do not split over 3 ranks" bash scripts/run_gpt2.sh d12 3
refused "rows that do not split, -b alone" 2 "do not split over 3 ranks" bash scripts/run_gpt2.sh d12 3 -b 4
# With both -b and -d (in either form) the split is the trainer's to check.
has "3 ranks with -b and -d" "$(flags_of d12 3 -b 4 -d 98304)" -np 3 -b 4 -d 98304
has "3 ranks with -b and --total-batch=" "$(flags_of d12 3 -b 4 --total-batch=98304)" -np 3 -b 4
refused "TOKENS not a number" 2 "TOKENS must be" env TOKENS=1e9 bash scripts/run_gpt2.sh d12
refused "no shards" 1 "no training shards" env TRAIN="$dir/none_*.bin" bash scripts/run_gpt2.sh d12
refused "trainer not built" 1 "is not built" env TRAINER=./no_such_trainer bash scripts/run_gpt2.sh d12
unset TRAINER

# pick_trainer: TRAINER wins; else train_gptcu where it is built and nvidia-smi lists a GPU.
mkdir -p "$dir/bin/gpu" "$dir/bin/nogpu"
printf '#!/bin/sh\nexit 0\n' > "$dir/bin/gpu/nvidia-smi"
printf '#!/bin/sh\necho "NVIDIA-SMI has failed" >&2; exit 9\n' > "$dir/bin/nogpu/nvidia-smi"
chmod +x "$dir/bin"/*/nvidia-smi
mkdir -p "$dir/pick" && touch "$dir/pick/train_gpt" && chmod +x "$dir/pick/train_gpt"
picked() {  # picked PATH_DIR [TRAINER]: what pick_trainer sets, in a checkout with train_gpt (and train_gptcu if present)
    (cd "$dir/pick"; PATH="$dir/bin/$1:$PATH"; if [ -n "${2:-}" ]; then TRAINER=$2; else unset TRAINER; fi
     . "$root/scripts/pick_trainer.sh"; pick_trainer; echo "$trainer")
}
check "no train_gptcu: train_gpt" test "$(picked gpu)" = "$dir/pick/train_gpt"
touch "$dir/pick/train_gptcu" && chmod +x "$dir/pick/train_gptcu"
check "train_gptcu and a GPU: train_gptcu" test "$(picked gpu)" = "$dir/pick/train_gptcu"
check "train_gptcu, nvidia-smi fails: train_gpt" test "$(picked nogpu)" = "$dir/pick/train_gpt"
check "TRAINER wins over the GPU" test "$(picked gpu ./train_gpt)" = "$dir/pick/train_gpt"
check "an absolute TRAINER stays as it is" test "$(picked gpu "$dir/bin/args")" = "$dir/bin/args"

# Real runs of train_gpt: from another directory (so OUT and the shard globs are the caller's),
# a tiny model in place of d12's by later flags; then the same command with more steps resumes.
tiny=(-e L2C32NH2 --vocab-size 300 --max-seq-len 16 -t 16 -b 2 -d 64 -u 2 -v 3 -m 1 -s 0 -n 3 -g 4)
export TRAINER=./train_gpt OMP_NUM_THREADS=1
(cd "$dir/caller" && TRAIN="../data/train_*.bin" VAL="../data/val_*.bin" OUT=one \
    bash "$root/scripts/run_gpt2.sh" d12 "${tiny[@]}" -x 6 > "$dir/one_a.out" 2>&1)
check "one rank: ran 6 steps into the caller's OUT" test -f "$dir/caller/one/DONE_00000006"
check "one rank: a fresh directory starts from scratch" grep -q "starting from scratch" "$dir/one_a.out"
check "-nk 2 keeps two checkpoints" test "$(ls "$dir/caller/one" | grep -c '^DONE_')" -eq 2
(cd "$dir/caller" && TRAIN="../data/train_*.bin" VAL="../data/val_*.bin" OUT=one \
    bash "$root/scripts/run_gpt2.sh" d12 "${tiny[@]}" -x 9 > "$dir/one_b.out" 2>&1)
check "the same command resumes" grep -q "resumed from step 6 of $dir/caller/one" "$dir/one_b.out"
check "and trains on to step 9" test -f "$dir/caller/one/DONE_00000009"
# Two ranks: the 2 micro-steps of one rank's step become one on each rank.
OUT="$dir/two" bash scripts/run_gpt2.sh d12 2 "${tiny[@]}" -b 1 -x 3 > "$dir/two.out" 2>&1
check "two ranks: ZeRO 1 over mpirun" grep -q "^zero: stage 1 ranks 2 " "$dir/two.out"
check "two ranks: 3 steps" test -f "$dir/two/DONE_00000003"

# scripts/run_default.sh (make run's job), in a copy of the checkout's layout so that its fixed
# out/default is the test's: each run starts out/default afresh unless its arguments resume
# (-y N, --resume N or --resume=N, N not 0) or name another directory (-o). A tiny model by
# later flags.
unset TRAINER
bash dev/data/nlpcorpus.sh > /dev/null
r=$dir/default_root && mkdir -p "$r/scripts" "$r/dev/data"
for f in scripts/run_default.sh scripts/pick_trainer.sh dev/data/nlpcorpus.sh; do ln -s "$root/$f" "$r/$f"; done
ln -s "$root/data" "$r/data" && ln -s "$root/train_gpt" "$r/train_gpt"
run_default() {  # run_default NAME FLAGS...: its output in $dir/default_NAME.out (a failure's status too)
    local name=$1; shift
    bash "$r/scripts/run_default.sh" -e L1C32NH2 --max-seq-len 16 -t 16 -b 2 -v 0 -s 0 "$@" > "$dir/default_$name.out" 2>&1 ||
        echo "exit $?" >> "$dir/default_$name.out"
}
d=$r/out/default
run_default first -x 2 -n 2
check "run_default.sh: trains into out/default" test -f "$d/DONE_00000002"
check "run_default.sh: on the corpus of dev/data/nlpcorpus.sh" grep -q "^nlpcorpus: data/nlpcorpus already prepared" "$dir/default_first.out"
run_default y1 -x 3 -n 0 -y 1
check "run_default.sh -y 1 resumes" grep -q "resumed from step 2 of" "$dir/default_y1.out"
run_default resume1 -x 3 -n 0 --resume=1
check "run_default.sh --resume=1 resumes" grep -q "resumed from step 2 of" "$dir/default_resume1.out"
run_default resume_1 -x 3 -n 0 --resume 1
check "run_default.sh --resume 1 resumes" grep -q "resumed from step 2 of" "$dir/default_resume_1.out"
touch "$d/mine"
run_default elsewhere -x 1 -n 0 -o "$dir/default_elsewhere"
check "run_default.sh -o DIR leaves out/default as it was" test -f "$d/mine" -a -f "$d/DONE_00000002"
run_default y0 -x 1 -n 0 -y 0
check "run_default.sh -y 0 starts out/default afresh" test ! -e "$d/mine" -a ! -e "$d/DONE_00000002"
run_default again -x 2 -n 2; touch "$d/mine"; run_default plain -x 1 -n 0
check "run_default.sh without a resume starts out/default afresh" test ! -e "$d/mine" -a ! -e "$d/DONE_00000002"
run_default again2 -x 2 -n 2; run_default resume0 -x 1 -n 0 --resume=0
check "run_default.sh --resume=0 starts out/default afresh" test ! -e "$d/DONE_00000002"

echo "$fails failed"
[ $fails -eq 0 ]
