#!/usr/bin/env python3
"""Random layouts, folded and extended (`prism synth`) against the kernel
level (`prism synth --full`): the step must be the same to the nanosecond,
the breakdown within 0.1 % of the step (the extension holds the breakdown
to its line only at the three points, hier.h).

    python3 tests/bench/hier_agree.py build/prism [N] [SEED]

Outside ctest (minutes of CPU); docs/MODEL.md, "Hierarchical simulation".
"""
import json
import random
import subprocess
import sys

MODELS = ["gpt-small", "gpt3-1.3b", "gpt3-6.7b"]
TOL = 1e-3  # of the step: the breakdown's parts may trade time past the points


def synth(prism, args, full):
    cmd = [prism, "synth"] + args + ["--json"] + (["--full"] if full else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr else "failed"
    return json.loads(p.stdout), None


def layout(rng):
    tp = rng.choice([1, 2, 4])
    pp = rng.choice([1, 2, 4])
    dp = rng.choice([1, 2, 4, 8])
    sched = rng.choice(["gpipe", "1f1b", "interleaved"])
    m = rng.choice([16, 24, 32, 48, 64, 96])
    args = [rng.choice(MODELS), "--hw", rng.choice(["h100-dgx", "a100-80gb-dgx"]),
            "--tp", str(tp), "--pp", str(pp), "--dp", str(dp), "--schedule", sched,
            "--microbatches", str(m),
            "--recompute", rng.choice(["none", "selective", "full"]),
            "--zero", str(rng.choice([0, 1, 2, 3]))]
    if sched == "interleaved":
        args += ["--vp", "2"]
    if tp > 1 and rng.random() < 0.5:
        args += ["--sp"]
    return args


def main():
    prism = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    done = bad = 0
    for _ in range(n):
        args = layout(rng)
        a, why = synth(prism, args, False)
        if a is None:
            continue
        b, _ = synth(prism, args, True)
        done += 1
        errs = []
        if a["iteration_s"] != b["iteration_s"] or a["tasks"] != b["tasks"]:
            errs.append("step %.9f vs %.9f" % (a["iteration_s"], b["iteration_s"]))
        for k in ["exposed_compute_s", "exposed_comm_s", "overlap_s", "idle_s"]:
            if abs(a[k] - b[k]) > TOL * b["iteration_s"] + 1e-9:
                errs.append("%s %.9f vs %.9f" % (k, a[k], b[k]))
        if errs:
            bad += 1
            print(" ".join(args), "--", "; ".join(errs))
    print("%d layouts, %d disagree" % (done, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
