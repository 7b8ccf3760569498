#!/usr/bin/env python3
"""Small inputs that ask for unbounded work are refused at once, with one
line (exit 2), or done in memory that does not grow with what they ask:
a run of more tasks than prism simulates (synth, whatif on a model, whatif
--layers on a plain trace), --gbs beyond the microbatch limit, a sweep
larger than prism enumerates, and a sweep of a million candidates, which
held 4.7 KB per candidate before any work (now a few bytes).

usage: unbounded_work.py PRISM
"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from sweeptest import check

PRISM = sys.argv[1]


def run(*args, code=0, seconds=30):
    """Run prism; its exit status, stderr, wall time and peak RSS (MB)."""
    t = time.monotonic()
    p = subprocess.Popen([PRISM, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        out, err = p.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        check(False, f"prism {' '.join(args)}: still running after {seconds} s")
    # ru_maxrss of the children so far: a run's own when it is the largest.
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    check(p.returncode == code, f"prism {' '.join(args)} exited {p.returncode}: {err}")
    return err, time.monotonic() - t, rss


# synth and whatif on a model: refused before building, by the least the
# run would need (65,536 layers x 65,536 microbatches held 3.8 GB in 20 s).
err, t, _ = run("synth", "gpt3-1.3b", "--hw", "h100-dgx", "--microbatches", "65536", "--pp",
                "256", "--layers", "65536", "--full", code=2)
check("make at least 412316860416 tasks, more than the 33554432 prism simulates" in err, err)
# Folded into units (hierarchical simulation, the default where no trace
# is written), a run is bounded by its units: 3 x 256 x 65536 x 2 of them
# are refused (three steps: not extended from a few microbatches,
# sim/hier.h), 57 million tasks of 8192 microbatches are simulated at once.
err, t, _ = run("synth", "gpt3-1.3b", "--hw", "h100-dgx", "--microbatches", "65536", "--pp",
                "256", "--layers", "65536", "--steps", "3", code=2)
check("3 steps x 256 stages x 1 chunks x 65536 microbatches make 100663296 pipeline units "
      "(1f1b), more than the 33554432 tasks prism simulates can hold" in err, err)
err, t, rss = run("whatif", "gpt3-1.3b", "--hw", "h100-dgx", "--microbatches", "8192",
                  "--layers", "48", code=0)
check(t < 10 and rss < 500, f"whatif of 8192 microbatches: {t:.1f} s, {rss:.0f} MB")
err, t, _ = run("whatif", "gpt3-1.3b", "--hw", "h100-dgx", "--microbatches", "8192",
                "--layers", "48", "--timeline", "/dev/null", code=2)
check("more than the 33554432 prism simulates" in err, err)
err, t, _ = run("synth", "gpt3-1.3b", "--hw", "h100-dgx", "--gbs", "16777216", code=2)
check(err == "prism: layout: microbatches 16777216 is not in 1..65536\n", err)

with tempfile.TemporaryDirectory() as d:
    # whatif --layers on a trace without a run description: the copies'
    # task count is checked before any is made (x8192 held 7 GB, 15 s).
    trace = os.path.join(d, "run.json")
    subprocess.run([PRISM, "synth", "gpt-small", "--hw", "h100-dgx", "--microbatches", "8",
                    "-o", trace], check=True, capture_output=True)
    with open(trace) as f:
        tr = json.load(f)
    tr["traceEvents"] = [e for e in tr["traceEvents"]
                         if not str(e.get("name", "")).startswith("prism::model#")]
    with open(trace, "w") as f:
        json.dump(tr, f)
    # (86115304 before Megatron-LM's gradient-buffer fill, one a layer and
    # the embedding's and head's: an op, a launch and a kernel each, in
    # each of the trace's 2 steps, 65538 x 3 x 2 more)
    err, t, _ = run("whatif", trace, "--layers", "65536", "--base-hw", "h100-dgx", code=2)
    check(err == "prism: reshape: 86508532 tasks, more than the 33554432 prism "
          "simulates\n", err)

    # A sweep beyond the candidates prism enumerates: refused at loading.
    big = os.path.join(d, "big.cfg")
    with open(big, "w") as f:
        f.write('name = "big";\nmodel = "gpt-small";\nhw = "h100-dgx";\n'
                'gpus = [8, 16, 32, 64, 128, 256, 512, 1024];\nglobal_batch = 7;\n'
                'space = {\n  tp = [1, 2, 4, 8];\n  pp = [1, 2, 4, 8, 16, 32, 64, 128];\n'
                '  mbs = [2, 3, 4, 5, 6, 8, 9, 10];\n  schedule = ["1f1b", "gpipe"];\n'
                '  recompute = ["none", "selective", "full"];\n  zero = [0, 1, 2, 3];\n'
                '  sp = [0, 1];\n  layers = [12, 24, 36, 48, 60, 72, 84, 96, 108, 120];\n'
                '  hidden = [768, 1024, 1280, 1536, 1792, 2048, 2304, 2560];\n};\n')
    err, t, _ = run("search", big, "--db", os.path.join(d, "big.db"), code=2)
    check(err == f"prism: {big}:6: the sweep has 7864320 candidates (the product of its "
          "lists), more than 4194304\n", err)
    # Smaller: 2.6 M candidates, all invalid (no dp x mbs divides 7),
    # enumerated one at a time in a few MB (it needed 12 GB).
    with open(big) as f:
        text = f.read()
    with open(big, "w") as f:
        f.write(text.replace("1280, 1536, 1792, 2048, 2304, 2560", "1280"))
    err, t, rss = run("search", big, "--db", os.path.join(d, "big.db"), code=2, seconds=120)
    check("no layout is possible with these GPU counts (2580480 candidates, all rejected"
          in err, err)
    check(rss < 200, f"a sweep of 2.6 M candidates held {rss:.0f} MB")
    check(not os.path.exists(os.path.join(d, "big.db")), "the refused sweep wrote a database")
print("unbounded work: refused at once, or done in bounded memory")
