#!/usr/bin/env bash
# Learning-rate schedules (-k cosine|linear|constant|wsd, -u warmup, -q final fraction): the lr the
# trainer logs at every step of a tiny run equals the formulas of llmc/schedule.h computed here
# in double precision (the trainer's are float: 2e-6 relative allowed, main.log prints 7 digits).
# A warmup longer than the run is capped at the run's length (llmc/trainer.c).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=build/test/schedule
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 dev/test/make_shard.py "$dir/shard.bin" 4000 300 12
run() {  # run NAME ARGS...: main.log of a 12-step run
    local name=$1; shift
    OMP_NUM_THREADS=2 ./train_gpt -e L1C32NH2 --vocab-size 300 --max-seq-len 16 -b 2 -t 8 -i "$dir/shard.bin" \
        -v 0 -s 0 -n 0 -x 12 -l 1e-3 -o "$dir/$name" "$@" > "$dir/$name.out" 2>&1
}
for k in cosine linear constant wsd; do run "$k" -k "$k" -u 3 -q 0.1; done
run long_warmup -k cosine -u 20 -q 0.1
run no_warmup -k linear -u 0 -q 0
python3 - "$dir" <<'PY'
import math, sys
d = sys.argv[1]
def expected(kind, step, lr, warmup, total, final):
    if step < warmup:
        return lr * (step + 1) / warmup
    lo, n = lr * final, total - warmup
    p = min((step - warmup) / (n - 1), 1.0) if n > 1 else 1.0
    if kind == "cosine": return lo + (lr - lo) * (1 + math.cos(math.pi * p)) / 2
    if kind == "linear": return lr - (lr - lo) * p
    if kind == "wsd": return lr if p <= 0.8 else lr - (lr - lo) * (p - 0.8) / 0.2
    return lr
cases = [(k, k, 3, 0.1) for k in ("cosine", "linear", "constant", "wsd")]
cases += [("long_warmup", "cosine", 12, 0.1), ("no_warmup", "linear", 0, 0.0)]
fails = 0
for name, kind, warmup, final in cases:
    lrs = {}
    for line in open(f"{d}/{name}/main.log"):
        f = dict(kv.split(":", 1) for kv in line.split())
        if "lr" in f:
            lrs[int(f["s"])] = float(f["lr"])
    worst = 0.0
    for s in range(1, 13):
        want = expected(kind, s - 1, 1e-3, warmup, 12, final)
        got = lrs.get(s, float("nan"))
        diff = abs(got - want) / want if want else abs(got)
        worst = diff if diff != diff else max(worst, diff)  # a missing step (NaN) stays NaN: fails
    ok = worst <= 2e-6
    fails += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name}: 12 steps, max relative lr difference {worst:.2e} "
          f"(first {lrs.get(1, 0):.6e}, last {lrs.get(12, 0):.6e})")
sys.exit(1 if fails else 0)
PY
