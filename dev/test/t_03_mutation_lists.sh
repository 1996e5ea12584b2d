#!/usr/bin/env bash
# The mutation lists (dev/mutation/*.json, run by dev/mutation/run.py in the audits, not here) still
# fit the code: every mutant's text occurs exactly once in its file, names the list's steps and
# says killed or equivalent (an equivalent with its reason). A change that moves a mutant's text
# otherwise leaves the list stale until the next audit's runner refuses it. Then a list with one
# mutant of each fault must be refused, each fault named. Under a second.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failed=0
check() {  # check <ok> <what>
    if [ "$1" = 1 ]; then echo "ok   $2"; else echo "FAIL $2"; failed=$((failed + 1)); fi
}
out=$(/usr/bin/python3 dev/mutation/run.py --check dev/mutation/*.json 2>&1) && ok=1 || ok=0
check "$ok" "the mutation lists fit the code: $(tr '\n' ' ' <<<"$out")"
# A copy of the first list's first mutant with each fault.
/usr/bin/python3 - "$dir/stale.json" <<'PY'
import copy, json, sys
plan = json.load(open("dev/mutation/gpu_trainer.json"))
good = plan["mutants"][0]
faults = {"moved": {"old": good["old"] + "no such text"}, "twice": {"old": ""}, "no_step": {"steps": ["nowhere"]},
          "bad_expect": {"expect": "maybe"}, "no_reason": {"expect": "equivalent", "reason": ""}}
plan["mutants"] = [dict(copy.deepcopy(good), id=name, **change) for name, change in faults.items()]
json.dump(plan, open(sys.argv[1], "w"))
PY
rc=0
out=$(/usr/bin/python3 dev/mutation/run.py --check "$dir/stale.json" 2>&1) || rc=$?
named=0
for want in "moved: its text occurs 0 times" "twice: its text occurs" "no_step: no step nowhere" \
            "bad_expect: expect 'maybe'" "no_reason: expect 'equivalent' without a reason"; do
    grep -qF "$want" <<<"$out" && named=$((named + 1))
done
check "$([ "$rc" = 1 ] && [ "$named" = 5 ] && echo 1 || echo 0)" \
    "a list with 5 faulty mutants is refused (exit $rc), $named of 5 faults named"
echo "$failed check(s) failed"
[ "$failed" = 0 ]
