#!/usr/bin/env bash
# Loss curves of the block matmul precisions: the same d12 run (B 16, T 1024, lr 6e-4 with 100
# warmup steps) in bf16, fp8 and int8 on the GPU, the training loss of every step joined into
# PREFIX.csv (step,bf16,fp8,int8), PREFIX.png when a python3 with matplotlib is at hand (else
# dev/bench/plot_curves.py makes it from the CSV elsewhere), and one summary line on stdout: the
# mean training loss of the last 50 steps per precision and its difference from bf16.
# Usage: dev/bench/loss_curves.sh TRAIN_GPTCU TRAIN_PATTERN VAL_PATTERN PREFIX [STEPS (1000)]
# Exits non-zero when a run fails or logs too few steps.
set -uo pipefail
[ $# -ge 4 ] || { echo "usage: $0 TRAIN_GPTCU TRAIN_PATTERN VAL_PATTERN PREFIX [STEPS]" >&2; exit 2; }
bin=$1 train=$2 val=$3 prefix=$4 steps=${5:-1000}
here=$(dirname "$0")
compgen -G "$train" >/dev/null || { echo "Loss curves: not run (no training shards match $train)"; exit 1; }
status=0
for m in bf16 fp8 int8; do
    "$bin" -i "$train" -j "$val" -e d12 -b 16 -t 1024 -x "$steps" -l 6e-4 -u 100 -q 0.1 -c 0.1 -v 250 -m 20 -s 0 \
        --matmul $m >"$prefix.$m.log" 2>&1 || { echo "loss curve $m: FAIL (exit $?):"; tail -n 3 "$prefix.$m.log"; status=1; }
    # "step    12/1000 | loss 5.123456 | ..." -> "12 5.123456"
    sed -n 's/^step *\([0-9]*\)\/[0-9]* | loss \([^ ]*\) .*/\1 \2/p' "$prefix.$m.log" >"$prefix.$m.txt"
done
{ echo "step,bf16,fp8,int8"
  join <(sort -k1,1 "$prefix.bf16.txt") <(sort -k1,1 "$prefix.fp8.txt") |
      join - <(sort -k1,1 "$prefix.int8.txt") | sort -n | tr ' ' ','; } >"$prefix.csv"
# Final loss: the mean training loss of the last 50 steps (one step's loss is noisy).
awk -F, 'NR > 1 { n++; for (i = 2; i <= 4; i++) v[n, i] = $i }
    END { if (n < 50) { print "Loss curves: too few steps logged (" n + 0 ")"; exit 1 }
          for (i = 2; i <= 4; i++) { s[i] = 0; for (k = n - 49; k <= n; k++) s[i] += v[k, i]; s[i] /= 50 }
          printf "Loss curves (d12, %d steps, mean of the last 50): bf16 %.4f, fp8 %.4f (%+.2f%%), int8 %.4f (%+.2f%%)\n",
              n, s[2], s[3], 100 * (s[3] / s[2] - 1), s[4], 100 * (s[4] / s[2] - 1) }' "$prefix.csv" || status=1
for py in /usr/bin/python3 python3; do
    if "$py" -c 'import matplotlib' 2>/dev/null; then
        "$py" "$here/plot_curves.py" "$prefix.csv" "$prefix.png" && echo "plot: $prefix.png"
        break
    fi
done
exit $status
