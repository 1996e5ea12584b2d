#!/usr/bin/env bash
# Per-rank memory printed at start-up against the formula of llmc/zero.h, recomputed here from
# the model shape: at every stage on 3 ranks (padding), and at stages 0 and 3 on 4 ranks for a
# 24-layer model, where stage 3 must keep close to a quarter of stage 0's parameters, gradients
# and optimizer state: (S + M + 2C) + (S + E + Mb) + 2S against 4 Np, i.e. 1/4 plus the gathered
# scratch and the gradient scratch of one layer each (M = Mb, Mb / Np ~ 4%) and of the embeddings
# (E / Np ~ 1.5%): between 0.25 and 0.28. About 8 s.
set -eu
cd "$(dirname "$0")/../.."
source dev/test/zero/common.sh
dir=build/test/zero_memory
rm -rf "$dir" && mkdir -p "$dir"

# check_formula OUT L C V MAXT: the "zero:" line of OUT against the formula.
check_formula() {
    /usr/bin/python3 - "$@" <<'PY'
import re, sys
out, L, C, V, T = sys.argv[1], *map(int, sys.argv[2:])
line = next(l for l in open(out) if l.startswith("zero:"))
f = dict(zip(("stage", "ranks", "params", "padded", "slice", "max_segment", "p", "g", "o"),
             map(int, re.findall(r"\d+", line))))
z, W = f["stage"], f["ranks"]
Vp = (V + 127) // 128 * 128
layer = 12 * C * C + 13 * C
N = Vp * C + T * C + L * layer + 2 * C
unit = W * 64
Np = (N + unit - 1) // unit * unit
S = Np // W
E = Vp * C + T * C
M = max(E, layer)
want = {"params": N, "padded": Np, "slice": S, "max_segment": M,
        "p": Np if z < 3 else S + M + 2 * C, "g": Np if z < 2 else S + E + layer, "o": 2 * (Np if z < 1 else S)}
bad = {k: (f[k], v) for k, v in want.items() if f[k] != v}
print(f"stage {z}, {W} ranks: params {f['p']} grads {f['g']} optimizer {f['o']} floats per rank",
      "ok" if not bad else f"MISMATCH (printed, formula): {bad}")
sys.exit(1 if bad else 0)
PY
}

tiny=("${model[@]}" --bench -x 1)
for z in 0 1 2 3; do
    mpi 3 ./train_gpt "${tiny[@]}" -z $z > "$dir/np3_z$z.out"
    check_formula "$dir/np3_z$z.out" 2 64 512 64
done

deep=(-e L24C128NH4 --vocab-size 512 --max-seq-len 64 -b 1 -t 8 --bench -x 1)
for z in 0 3; do
    mpi 4 ./train_gpt "${deep[@]}" -z $z > "$dir/np4_z$z.out"
    check_formula "$dir/np4_z$z.out" 24 128 512 64
done
/usr/bin/python3 - "$dir/np4_z0.out" "$dir/np4_z3.out" <<'PY'
import re, sys
def total(path):
    line = next(l for l in open(path) if l.startswith("zero:"))
    return sum(map(int, re.findall(r"\d+", line.split("|")[1])))
ratio = total(sys.argv[2]) / total(sys.argv[1])
print(f"stage 3 / stage 0 per-rank params+grads+optimizer on 4 ranks: {ratio:.4f} (want 0.25..0.28)")
sys.exit(0 if 0.25 <= ratio <= 0.28 else 1)
PY
grep -h "^memory per rank" "$dir"/np4_z*.out
