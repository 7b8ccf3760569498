#!/usr/bin/env python3
"""An output named *.gz is written gzip-compressed, whole or not at all:
synth's traces (TRACE.json.gz -> TRACE.rankR.json.gz), replay's timeline;
prism reads both back.  A saved graph is never compressed: -o G.prism.gz is
refused and nothing is written.

usage: gz_outputs.py PRISM
"""
import gzip
import json
import os
import sys
import tempfile

from clitest import check, prism

PRISM = sys.argv[1]


def run(*args, code=0, cwd=None):
    return prism(PRISM, *args, code=code, cwd=cwd)


with tempfile.TemporaryDirectory() as d:
    run("synth", "gpt-small", "--hw", "h100-dgx", "--pp", "2", "--microbatches", "2",
        "--layers", "2", "-o", "run.json.gz", cwd=d)
    ranks = ["run.rank0.json.gz", "run.rank1.json.gz"]
    check(sorted(os.listdir(d)) == ranks, f"synth wrote {sorted(os.listdir(d))}")
    for r in ranks:
        with gzip.open(os.path.join(d, r)) as f:
            check("traceEvents" in json.load(f), f"{r}: not a trace")
    run("replay", *ranks, "--timeline", "tl.json.gz", cwd=d)
    with gzip.open(os.path.join(d, "tl.json.gz")) as f:
        events = json.load(f)["traceEvents"]
    check(len(events) > 100, "timeline: too few events")
    run("ingest", "tl.json.gz", cwd=d)
    r = run("ingest", *ranks, "-o", "g.prism.gz", code=2, cwd=d)
    check(r.stderr == "prism: g.prism.gz: a saved graph is not compressed: give a name "
          "without .gz\n", f"graph .gz: {r.stderr!r}")
    check(sorted(os.listdir(d)) == sorted(ranks + ["tl.json.gz"]),
          f"left behind: {sorted(os.listdir(d))}")
    print("ok: synth traces and a timeline written gzipped and read back; graph .gz refused")
