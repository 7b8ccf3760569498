#!/usr/bin/env python3
"""`-` names standard input where prism reads a file: a model (synth -,
whatif -), a sweep (search -), a trace (ingest -, replay -).  Each gives
what the file by name gives; several ranks' traces cannot share stdin, and
a terminal on stdin is refused (exit 2).  The copy prism makes of stdin is
gone when it exits.

usage: stdin_dash.py PRISM
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

from sweeptest import check

PRISM = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "configs", "models", "gpt-small.cfg")
SWEEP = os.path.join(HERE, "data", "sweeps", "small.cfg")
TRACE = os.path.join(HERE, "data", "golden_2023.json")


def run(*args, stdin=None, code=0, env=None):
    r = subprocess.run([PRISM, *args], capture_output=True, input=stdin, env=env)
    check(r.returncode == code, f"prism {' '.join(args)}: exit {r.returncode}: {r.stderr!r}")
    return r


def read(path):
    with open(path, "rb") as f:
        return f.read()


with tempfile.TemporaryDirectory() as d:
    env = dict(os.environ, TMPDIR=d)
    # A model: the same prediction as the file by name.
    a = json.loads(run("synth", MODEL, "--hw", "h100-dgx", "--json").stdout)
    b = json.loads(run("synth", "-", "--hw", "h100-dgx", "--json", stdin=read(MODEL),
                       env=env).stdout)
    check(a["iteration_s"] == b["iteration_s"] and a["layers"] == b["layers"], f"{a} != {b}")
    # A trace: the same graph.
    a = run("ingest", TRACE, "--json").stdout
    b = run("ingest", "-", "--json", stdin=read(TRACE), env=env).stdout
    check(json.loads(a)["nodes"] == json.loads(b)["nodes"], "ingest - differs")
    # Several ranks cannot be one stdin.
    r = run("ingest", "-", TRACE, stdin=read(TRACE), code=2, env=env)
    check(b"standard input is one trace" in r.stderr, r.stderr)
    # A sweep: the same rows as the file.
    db1, db2 = os.path.join(d, "a.db"), os.path.join(d, "b.db")
    run("search", SWEEP, "--db", db1, "--quiet")
    run("search", "-", "--db", db2, "--quiet", stdin=read(SWEEP), env=env)
    import sqlite3
    rows = lambda p: sqlite3.connect(p).execute(
        "SELECT key, status, iter_s FROM candidate ORDER BY key").fetchall()
    check(rows(db1) == rows(db2) and len(rows(db1)) == 32, "search - differs from the file")
    # Nothing left behind in TMPDIR but the databases.
    left = glob.glob(os.path.join(d, "prism-stdin-*"))
    check(not left, f"stdin copies left: {left}")
    # A terminal on stdin: refused, not waited on.
    try:
        import pty
        m, s = pty.openpty()
        r = subprocess.run([PRISM, "synth", "-", "--hw", "h100-dgx"], stdin=s,
                           capture_output=True, timeout=30)
        os.close(m)
        os.close(s)
        check(r.returncode == 2 and b"standard input is a terminal" in r.stderr, r.stderr)
    except OSError:
        print("skip: no pseudo-terminal here")
print("ok")
