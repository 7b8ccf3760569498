#!/usr/bin/env python3
"""prism search from a trace base.  A sweep whose base is an annotated
trace rebuilds every candidate with kernel and host costs fitted on that
trace: from a trace synthesised with default costs it must equal the sweep
from the model itself, candidate by candidate; from one with other costs,
the candidate at the trace's own layout must equal the trace's replay.  A
base that changes under a stored sweep, and a trace without a run
description, are errors.

usage: search_trace_base.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import json
import os
import sys
import tempfile

from sweeptest import check, prism, times

PRISM, SWEEP = sys.argv[1], sys.argv[2]
LAYOUT = ["--dp", "8", "--mbs", "1", "--microbatches", "4"]  # gpus 8 in SWEEP
KEY = ("gpus=8;tp=1;pp=1;dp=8;vp=1;mbs=1;mb=4;sched=1f1b;rc=none;zero=0;sp=0;"
       "layers=8;hidden=1024")


def run(*args, code=0):
    return prism(PRISM, *args, code=code)



with tempfile.TemporaryDirectory() as d:
    with open(SWEEP) as f:
        text = f.read()
    check('model = "gpt-small";' in text, f"{SWEEP} does not name gpt-small")

    def sweep(base, name):
        path = os.path.join(d, name + ".cfg")
        with open(path, "w") as f:
            f.write(text.replace('model = "gpt-small";', f'base = "{base}";')
                    .replace('name = "small";', f'name = "{name}";'))
        return path

    run("search", SWEEP, "--db", os.path.join(d, "model.db"), "--exhaustive")
    model = times(os.path.join(d, "model.db"))
    # Default costs: the fit recovers them, and the sweeps agree.
    run("synth", "gpt-small", "--hw", "h100-dgx", *LAYOUT, "-o", os.path.join(d, "a.json"))
    run("search", sweep("a.json", "from-a"), "--db", os.path.join(d, "a.db"), "--exhaustive")
    a = times(os.path.join(d, "a.db"))
    check(len(a) == len(model) > 0, f"{len(a)} candidates from the trace, {len(model)} from the model")
    worst = max(abs(a[k] / model[k] - 1) for k in model)
    check(worst < 1e-6, f"trace-based and model-based sweeps differ by {worst:.2e}")
    # Other costs: the candidate at the trace's layout is its replay.
    b_json = os.path.join(d, "b.json")
    run("synth", "gpt-small", "--hw", "h100-dgx", *LAYOUT, "--eff", "gemm=0.45,attention=0.3",
        "--host-us", "20,8", "-o", b_json)
    rep = json.loads(run("replay", b_json, "--json").stdout)
    measured = rep["iterations"][-1]["measured_ns"] * 1e-9
    b_cfg = sweep("b.json", "from-b")
    run("search", b_cfg, "--db", os.path.join(d, "b.db"), "--exhaustive")
    b = times(os.path.join(d, "b.db"))
    check(abs(b[KEY] / measured - 1) < 0.005,
          f"own layout {b[KEY]:.6f} s against the replay's {measured:.6f} s")
    check(abs(b[KEY] / model[KEY] - 1) > 0.05, "the fitted costs made no difference")
    # The base changes under the stored sweep: an error, nothing resumed.
    run("synth", "gpt-small", "--hw", "h100-dgx", *LAYOUT, "--eff", "gemm=0.5", "-o", b_json)
    r = run("search", b_cfg, "--db", os.path.join(d, "b.db"), code=2)
    check("was run on another base" in r.stderr and r.stderr.count("\n") == 1, r.stderr)
    # A trace without a run description cannot be a base.
    plain = os.path.join(os.path.dirname(os.path.abspath(SWEEP)), "..", "golden_2023.json")
    r = run("search", sweep(os.path.abspath(plain), "plain"), "--db",
            os.path.join(d, "p.db"), code=2)
    check("no prism::model# run description" in r.stderr, r.stderr)
    print(f"trace base: {len(a)} candidates equal the model's (worst {worst:.1e}); "
          f"fitted costs give the replay at the trace's layout "
          f"({b[KEY] * 1e3:.3f} ms against {measured * 1e3:.3f} ms)")
