#!/usr/bin/env python3
"""`-` names standard output where prism writes a file (it used to write a
file named "-"): synth -o -, ingest -o -, whatif --timeline -, report
--csv-all=- each write their file's bytes alone on stdout (what the command
also prints goes to stderr) and the same bytes as to a file; what cannot
share stdout (several ranks' traces, --json beside it, report's folder) is
refused before any work.

usage: stdout_dash.py PRISM
"""
import json
import os
import subprocess
import sys
import tempfile

from sweeptest import check

PRISM = os.path.abspath(sys.argv[1])
SWEEP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sweeps", "small.cfg")


def run(*args, code=0, cwd=None):
    r = subprocess.run([PRISM, *args], capture_output=True, cwd=cwd)
    check(r.returncode == code, f"prism {' '.join(args)}: exit {r.returncode}: {r.stderr!r}")
    return r


with tempfile.TemporaryDirectory() as d:
    f = os.path.join(d, "t.json")
    run("synth", "gpt-small", "--hw", "h100-dgx", "-o", f)
    r = run("synth", "gpt-small", "--hw", "h100-dgx", "-o", "-", cwd=d)
    with open(f, "rb") as g:
        check(r.stdout == g.read(), "synth -o - differs from synth -o FILE")
    check(b"model      gpt-small" in r.stderr, "synth -o -: no prediction on stderr")
    check(not os.path.exists(os.path.join(d, "-")), "a file named '-' was written")
    json.loads(r.stdout)
    # Several ranks, or --json beside it: refused.
    r = run("synth", "gpt-small", "--hw", "h100-dgx", "--pp", "2", "--microbatches", "4", "-o",
            "-", code=2)
    check(r.stderr == b"prism synth: -o - writes one trace to standard output: --pp > 1 "
          b"writes one per stage (give -o FILE)\n" and not r.stdout, repr(r.stderr))
    r = run("synth", "gpt-small", "--hw", "h100-dgx", "-o", "-", "--json", code=2)
    check(r.stderr == b"prism: -o - and --json would share standard output: give -o FILE\n"
          and not r.stdout, repr(r.stderr))

    # ingest -o -: the graph file's bytes.
    gf = os.path.join(d, "g.graph")
    run("ingest", f, "-o", gf)
    r = run("ingest", f, "-o", "-")
    with open(gf, "rb") as g:
        check(r.stdout == g.read(), "ingest -o - differs from ingest -o FILE")
    check(b"graph saved to -" in r.stderr, repr(r.stderr[-200:]))

    # whatif --timeline -: a Perfetto trace, the prediction on stderr.
    tl = os.path.join(d, "tl.json")
    run("whatif", "gpt-small", "--hw", "h100-dgx", "--dp", "2", "--timeline", tl)
    r = run("whatif", "gpt-small", "--hw", "h100-dgx", "--dp", "2", "--timeline", "-")
    with open(tl, "rb") as g:
        check(r.stdout == g.read(), "whatif --timeline - differs from a file")
    check(b"change " in r.stderr, repr(r.stderr[-200:]))
    run("whatif", "gpt-small", "--hw", "h100-dgx", "--timeline", "-", "--json", code=2)

    # report --csv-all=-: the CSV alone; -o - refused.
    db = os.path.join(d, "s.db")
    run("search", SWEEP, "--db", db, "-q")
    out = os.path.join(d, "rep")
    r = run("report", db, "-o", out, "--csv-all=-")
    run("report", db, "-o", out, "--csv-all")
    with open(os.path.join(out, "all.csv"), "rb") as g:
        check(r.stdout == g.read(), "--csv-all=- differs from all.csv")
    for other in (["--json"], ["--export", "megatron"]):
        r = run("report", db, "--csv-all=-", *other, code=2)
        check(r.stderr == f"prism: --csv-all=- and {other[0]} would share standard output: "
              "give --csv-all=FILE\n".encode(), repr(r.stderr))
    r = run("report", db, "-o", "-", code=2)
    check(r.stderr.startswith(b"prism report: -o - : the report is a folder"), repr(r.stderr))
    check(not os.path.exists("-"), "report -o - made a folder named '-'")
print("'-' is standard output for synth -o, ingest -o, whatif --timeline, report --csv-all")
