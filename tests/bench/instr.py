#!/usr/bin/env python3
"""Instructions of one candidate (`prism synth`) by phase, counted by
valgrind's callgrind: load-independent, so two builds compare on a busy
machine.  The candidates are issue 38's deep pipelines (GPT-3 175B on DGX
H100s); the phases are where a folded candidate's work goes (the
hierarchical points' graphs built, written and settled), each also per
pipeline unit simulated (`unit` and `unit_pair` calls, every point's).

usage: tests/bench/instr.py PRISM [BASE_PRISM] [--quick]

With BASE_PRISM both builds run each candidate, side by side with their
ratio (BASE / PRISM), and their iteration lines must agree.  --quick: the
first candidate alone.  Needs valgrind (callgrind_annotate); without it,
says so and exits 0.  About 30 s a candidate and build."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

CANDIDATES = [
    ("tp 8 pp 16 dp 4 vp 6, 384 mb",
     "--tp 8 --pp 16 --dp 4 --vp 6 --schedule interleaved --microbatches 384"),
    ("tp 8 pp 16 dp 1 vp 6, 384 mb",
     "--tp 8 --pp 16 --dp 1 --vp 6 --schedule interleaved --microbatches 384"),
    ("tp 4 pp 32 dp 4 vp 3, 384 mb",
     "--tp 4 --pp 32 --dp 4 --vp 3 --schedule interleaved --microbatches 384"),
]

# (label, functions whose inclusive counts are summed; a nested call of two
# listed ones would count twice, and none of these nests in another).
PHASES = [
    ("whole process", ["PROGRAM TOTALS"]),
    ("build the points' graphs", ["synth_build_tpl"]),
    ("  first unit of each kind", ["unit_fwd", "unit_bwd", "sf_end"]),
    ("  replay the templates", ["fold_replay"]),
    ("  the writer's finish", ["se_finish"]),
    ("settle them", ["settle_run"]),
    ("  simulation (max-plus, hybrid)", ["sim_run_maxplus", "sim_run"]),
    ("  of it: the hybrid's queue", ["finish", "evq_pop", "evq_pop_heap"]),
    ("  bind (collectives matched)", ["sim_bind"]),
    ("the evaluator (hier.c point_eval)", ["synth_unit_eval"]),
    ("  the tails' maps (um_tail)", ["um_tail"]),
]

LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*?)\s*(?:\[.*\])?$")


def counts(prism, args, tmp):
    """Inclusive instructions by function name, units, the iteration line."""
    out = os.path.join(tmp, "cg.out")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, prism, "synth",
           "gpt3-175b", "--hw", "h100-dgx"] + args.split()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"instr.py: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    it = next((l for l in p.stdout.splitlines() if l.startswith("iteration")), "?")
    ann = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=yes", "--threshold=100", out],
                         capture_output=True, text=True).stdout
    inc = {}
    for line in ann.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        n = int(m.group(1).replace(",", ""))
        what = m.group(2)
        name = "PROGRAM TOTALS" if what.startswith("PROGRAM TOTALS") else \
            re.sub(r"(\.(part|constprop|isra|cold)\.\d+)+$", "", what.rsplit(":", 1)[-1])
        inc[name] = max(inc.get(name, 0), n)  # a function and its .part twin: once
    tree = subprocess.run(["callgrind_annotate", "--auto=no", "--tree=calling", "--threshold=100", out],
                          capture_output=True, text=True).stdout
    units = 0
    for line in tree.splitlines():
        m = re.search(r"\)\s+>\s+\S*step\.c:(unit|unit_pair) \(([\d,]+)x\)", line)
        if m:
            units += int(m.group(2).replace(",", ""))
    os.remove(out)
    return inc, units, it


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        sys.exit(__doc__)
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        print("instr.py: valgrind not found; instruction counts skipped")
        return
    prism, base = args[0], args[1] if len(args) > 1 else None
    cands = CANDIDATES[:1] if "--quick" in sys.argv else CANDIDATES
    with tempfile.TemporaryDirectory() as tmp:
        for label, cli in cands:
            new = counts(prism, cli, tmp)
            old = counts(base, cli, tmp) if base else None
            print(f"== {label}: prism synth gpt3-175b --hw h100-dgx {cli}")
            print(f"   {new[2]}; {new[1]:,} units simulated")
            if old and old[2] != new[2]:
                print(f"   BASE differs: {old[2]}")
            head = f"{'phase':<34} {'M instructions':>15} {'a unit':>8}"
            print(head + (f" {'BASE':>10} {'ratio':>7}" if old else ""))
            for name, funcs in PHASES:
                n = sum(new[0].get(f, 0) for f in funcs)
                row = f"{name:<34} {n / 1e6:15.1f} {n / max(new[1], 1):8.0f}"
                if old:
                    o = sum(old[0].get(f, 0) for f in funcs)
                    row += f" {o / 1e6:10.1f} {o / n if n else 0:6.3f}x"
                print(row)
            print(flush=True)


if __name__ == "__main__":
    main()
