#!/usr/bin/python3
"""Mutation audit: does some test fail when the code is wrong?

Each mutant of a list (JSON, below) replaces one exact piece of text in one file, once. In a clone
of this repository the runner applies it, builds the programs of the mutant's first step and runs
the step, then the next step, until one fails (the mutant is killed) or all pass (it lived), and
then restores the file. The run fails (exit 1) when a mutant the list expects killed lives, or
when a mutant's text no longer occurs exactly once (the code changed under the list: update the
mutant). An equivalent mutant, one that changes nothing a test can observe (the list says why), is
expected to live; one that is killed is reported, so that the list can say so.

usage: dev/mutation/run.py LIST [--repo DIR] [ID ...]
       dev/mutation/run.py --check LIST ...
  LIST        e.g. dev/mutation/kernels.json
  --check     nothing runs: in this working tree every mutant's text must occur exactly once in its
              file, its steps be the list's and its expectation killed or equivalent (an equivalent
              with its reason); exit 1 otherwise (make test: dev/test/t_03_mutation_lists.sh)
  --repo DIR  the clone to mutate (default: $TMPDIR or /tmp, then llmc-mutation), cloned from this
              repository when missing and checked out at its HEAD (committed code only); its build
              outputs are kept from run to run, so only the first run builds everything
  ID ...      only these mutants

The list: {"steps": {NAME: {"build": MAKE TARGETS, "run": COMMAND}, ...}, "mutants": [{"id", "file",
"old", "new", "why", "steps": [NAME, ...], "expect": "killed" or "equivalent", "reason" (an
equivalent's)}, ...]}. A step's command runs in the clone with bash; a nonzero status kills. Each
killed mutant's output is kept in DIR/mutation-logs/ID.log.
"""
import json
import os
import signal
import subprocess
import sys
import time

STEP_TIMEOUT_S = 900  # a step longer than this kills its mutant (a deadlock that the emulator missed)


def usage_error(message):
    sys.exit(f"run.py: {message}\n{__doc__.split('usage: ')[1].split('The list:')[0]}")


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def prepare_clone(root, repo):
    """The clone at root's HEAD, with no change of its own to any tracked file."""
    if not os.path.isdir(os.path.join(repo, ".git")):
        subprocess.run(["git", "clone", "-q", root, repo], check=True)
    if git(repo, "status", "--porcelain", "--untracked-files=no"):
        sys.exit(f"run.py: {repo} has changes to tracked files (an interrupted run?): "
                 f"git -C {repo} checkout . restores them")
    git(repo, "fetch", "-q", root, "HEAD")
    git(repo, "checkout", "-q", "--detach", "FETCH_HEAD")
    return git(repo, "rev-parse", "--short", "HEAD").strip()


def first_failure_line(output):
    """A test's first FAIL line, else the first line of a sanitizer's or the emulator's report."""
    lines = output.splitlines()
    for marks in (("FAIL",), ("emulator:", "ERROR", "WARNING", "error:", "runtime error")):
        for line in lines:
            if any(line.startswith(m) if m == "FAIL" else m in line for m in marks):
                return line.strip()[:200]
    return lines[-1].strip()[:200] if lines else "(no output)"


def run_step(repo, step):
    """(passed, output) of one step: its build, then its command."""
    build = subprocess.run(f"make -j2 {step['build']}", shell=True, cwd=repo, capture_output=True, text=True)
    if build.returncode != 0:
        return False, "build failed:\n" + build.stdout[-2000:] + build.stderr[-4000:]
    p = subprocess.Popen(["bash", "-c", step["run"]], cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    try:
        output, _ = p.communicate(timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        output, _ = p.communicate()
        return False, output + f"\nFAIL timeout after {STEP_TIMEOUT_S} s"
    return p.returncode == 0, output


def check_lists(paths):
    """--check: the problems of each list against the working tree, printed; True when none."""
    root = git(os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--show-toplevel").strip()
    problems = 0
    for list_path in paths:
        with open(list_path) as f:
            plan = json.load(f)
        before = problems
        for m in plan["mutants"]:
            wrong = []
            with open(os.path.join(root, m["file"])) as f:
                count = f.read().count(m["old"])
            if count != 1:
                wrong.append(f"its text occurs {count} times in {m['file']}")
            wrong += [f"no step {s}" for s in m["steps"] if s not in plan["steps"]]
            if m["expect"] not in ("killed", "equivalent") or (m["expect"] == "equivalent" and not m.get("reason")):
                wrong.append(f"expect {m['expect']!r}" + (" without a reason" if m["expect"] == "equivalent" else ""))
            for w in wrong:
                print(f"STALE {list_path}: {m['id']}: {w}")
            problems += len(wrong)
        print(f"{list_path}: {len(plan['mutants'])} mutants, {problems - before} problem(s)")
    return problems == 0


def main():
    args = sys.argv[1:]
    if args and args[0] == "--check":
        if len(args) < 2:
            usage_error("--check needs a list")
        sys.exit(0 if check_lists(args[1:]) else 1)
    repo = os.path.join(os.environ.get("TMPDIR", "/tmp"), "llmc-mutation")
    if "--repo" in args:
        i = args.index("--repo")
        if i + 1 >= len(args):
            usage_error("--repo needs a directory")
        repo = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    if not args or args[0].startswith("-"):
        usage_error("no list given" if not args else f"unknown option {args[0]}")
    with open(args[0]) as f:
        plan = json.load(f)
    steps, mutants, only = plan["steps"], plan["mutants"], set(args[1:])
    unknown = only - {m["id"] for m in mutants}
    if unknown:
        usage_error(f"no mutant {', '.join(sorted(unknown))} in {args[0]}")
    root = git(os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--show-toplevel").strip()
    head = prepare_clone(root, repo)
    logs = os.path.join(repo, "mutation-logs")
    os.makedirs(logs, exist_ok=True)
    print(f"mutants of {args[0]} at {head}, in {repo}", flush=True)
    unexpected = 0
    for m in mutants:
        if only and m["id"] not in only:
            continue
        path = os.path.join(repo, m["file"])
        with open(path) as f:
            source = f.read()
        if source.count(m["old"]) != 1:
            print(f"STALE {m['id']}: its text occurs {source.count(m['old'])} times in {m['file']}", flush=True)
            unexpected += 1
            continue
        start = time.time()
        verdict = "lived"
        try:
            with open(path, "w") as f:
                f.write(source.replace(m["old"], m["new"]))
            for name in m["steps"]:
                passed, output = run_step(repo, steps[name])
                if not passed:
                    verdict = f"killed by {name}: {first_failure_line(output)}"
                    with open(os.path.join(logs, m["id"] + ".log"), "w") as f:
                        f.write(output)
                    break
        finally:
            with open(path, "w") as f:
                f.write(source)
        expected = verdict.startswith("killed") if m["expect"] == "killed" else verdict == "lived"
        if m["expect"] == "killed" and not expected:
            unexpected += 1
        mark = "ok  " if expected else ("NOTE" if m["expect"] == "equivalent" else "FAIL")
        print(f"{mark} {m['id']}: {verdict} ({time.time() - start:.0f} s) [{m['file']}: {m['why']}]", flush=True)
    print(f"{unexpected} unexpected result(s)")
    sys.exit(1 if unexpected else 0)


if __name__ == "__main__":
    main()
