#!/usr/bin/env python3
"""prism search on a terminal and on Ctrl-C.  On a terminal (a pty, as
script(1) gives) the progress is one line rewritten in place from the
first candidate, after a hint that the same command resumes; Ctrl-C
(SIGINT) says what was kept and how to resume, exits 130, and leaves a
database that passes integrity_check and resumes.

usage: search_interrupt.py PRISM SWEEP   (SWEEP: a sweep of many candidates)
"""
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check

PRISM, SWEEP = sys.argv[1], sys.argv[2]

with tempfile.TemporaryDirectory() as d:
    db = os.path.join(d, "i.db")
    p = subprocess.Popen([PRISM, "search", SWEEP, "--db", db, "--threads", "1",
                          "--batch", "8"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "evaluated" in line:
            break
    p.send_signal(signal.SIGINT)
    rest = p.stderr.read()
    rc = p.wait()
    check(rc == 130, f"SIGINT: exit {rc}")
    check(rest.endswith("prism search: interrupted: every batch stored so far is kept; "
                        "run the same command again to resume\n"), repr(rest[-300:]))
    con = sqlite3.connect(db)
    ok = con.execute("PRAGMA integrity_check").fetchall()
    n = con.execute("SELECT COUNT(*) FROM candidate WHERE status='simulated'").fetchone()[0]
    con.close()
    # At least the first batch: each of the 7 GPU counts' best estimate
    # (the ramp: search/batch.h).
    check(ok == [("ok",)] and n >= 7, f"after SIGINT: integrity {ok}, {n} simulated stored")

    # On a terminal: the hint, then the line from 0 evaluated on, each
    # update starting with a carriage return.
    if not shutil.which("script"):
        print("search_interrupt: no script(1): the terminal line is not checked")
        sys.exit(0)
    small = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sweeps",
                         "small.cfg")
    cmd = f"{PRISM} search {small} --db {os.path.join(d, 't.db')} --threads 1"
    r = subprocess.run(["script", "-q", "-e", "-c", cmd, "/dev/null"], capture_output=True,
                       timeout=120)
    out = r.stdout.decode()  # bytes: text mode would turn each \r into \n
    check(r.returncode == 0, f"on a pty: exit {r.returncode}: {out}")
    check("(Ctrl-C stops it; the same command resumes)" in out, out)
    check("\r  0/32 evaluated, 0 simulated, 0 screened" in out, repr(out))
    check("\r  32/32 evaluated, 6 simulated, 26 screened" in out, repr(out))
print("search: Ctrl-C keeps what was stored and says how to resume; one line on a terminal")
