#!/usr/bin/env python3
"""Other files are never clobbered, previous outputs never lost.

1. No output overwrites an input: ingest T -o T, replay T --timeline T,
   whatif --timeline onto one of its traces (also through the per-rank
   names TRACE.rankR.json), synth -o onto its model file.
2. A write that fails (the file size limit stands in for a full disk)
   keeps the previous output whole and leaves no temporary file: ingest -o,
   replay --timeline, report.

usage: outputs_safe.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check, digest, refused

PRISM, SWEEP = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(SRC, "tests", "data", "golden_2023.json")


def run(*args, cwd=None, limit=None):
    """prism with args; limit: a file size limit in bytes (SIGXFSZ ignored,
    so a write beyond it fails with EFBIG, as on a full disk)."""
    def fsize():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    return subprocess.run([PRISM, *args], capture_output=True, text=True, cwd=cwd,
                          preexec_fn=fsize if limit else None)


with tempfile.TemporaryDirectory() as d:
    # 1. Outputs over inputs.
    trace = os.path.join(d, "t.json")
    shutil.copy(GOLDEN, trace)
    before = digest(trace)
    refused(run("ingest", trace, "-o", trace),
            f"prism: -o {trace} would overwrite the input {trace}: give another file\n",
            "ingest T -o T")
    same = os.path.join(d, ".", "t.json")
    refused(run("replay", trace, "--timeline", same),
            f"prism: --timeline {same} would overwrite the input {trace}: give another file\n",
            "replay T --timeline T")
    check(digest(trace) == before, "the trace was changed")

    r = run("synth", "gpt-small", "--hw", "h100-dgx", "--pp", "2", "--microbatches", "4",
            "-o", os.path.join(d, "run.json"))
    check(r.returncode == 0, f"synth: {r.stderr}")
    ranks = [os.path.join(d, f"run.rank{i}.json") for i in (0, 1)]
    before = [digest(p) for p in ranks]
    refused(run("whatif", *ranks, "--tp", "2", "--timeline", os.path.join(d, "run.json")),
            f"prism: the output {ranks[0]} would overwrite the input {ranks[0]}: give another "
            "file\n", "whatif --timeline onto its traces' per-rank names")
    refused(run("whatif", *ranks, "--timeline", ranks[1]),
            f"prism: --timeline {ranks[1]} would overwrite the input {ranks[1]}: give another "
            "file\n", "whatif --timeline onto a trace")
    check([digest(p) for p in ranks] == before, "a rank's trace was changed")

    model = os.path.join(d, "m.cfg")
    shutil.copy(os.path.join(SRC, "configs", "models", "gpt-small.cfg"), model)
    before = digest(model)
    r = run("synth", model, "--hw", "h100-dgx", "-o", model)
    refused(r, f"prism: -o {model} would overwrite the input {model}: give another file\n",
            "synth -o onto its model")
    check(r.stdout == "", "synth -o onto its model predicted before refusing")
    check(digest(model) == before, "the model file was changed")

    # 2. Failed writes keep the previous output.
    for what, args, out in [
        ("ingest -o", ["ingest", GOLDEN, "-o"], os.path.join(d, "g.prism")),
        ("replay --timeline", ["replay", GOLDEN, "--timeline"], os.path.join(d, "tl.json")),
    ]:
        r = run(*args, out)
        check(r.returncode == 0, f"{what}: {r.stderr}")
        before = digest(out)
        listing = sorted(os.listdir(d))
        r = run(*args, out, limit=1024)
        refused(r, f"prism: {out}: write failed: File too large\n", f"{what} on a full disk")
        check(digest(out) == before, f"{what}: the previous {out} was damaged")
        check(sorted(os.listdir(d)) == listing, f"{what}: left {sorted(os.listdir(d))}")

    db = os.path.join(d, "fresh.db")
    check(run("search", SWEEP, "--db", db).returncode == 0, "search fresh.db")
    # Out of WAL mode, so that reading it needs no -shm file under the limit.
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=DELETE")
    con.close()
    rep = os.path.join(d, "report")
    check(run("report", db, "-o", rep).returncode == 0, "report")
    before = {f: digest(os.path.join(rep, f)) for f in os.listdir(rep)}
    r = run("report", db, "-o", rep, limit=512)
    refused(r, f"prism: {rep}/report.md: write failed: File too large\n",
            "report on a full disk")
    check({f: digest(os.path.join(rep, f)) for f in os.listdir(rep)} == before,
          f"report on a full disk changed {sorted(os.listdir(rep))}")
