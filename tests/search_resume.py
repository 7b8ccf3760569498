#!/usr/bin/env python3
"""prism search: every candidate stored once, resume skips what is stored,
a kill -9 mid-sweep loses at most the batch in flight, and the resumed
database equals an uninterrupted one row for row; threads do not change
results.

usage: search_resume.py PRISM SWEEP
"""
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check

PRISM, SWEEP = sys.argv[1], sys.argv[2]
EXPECTED = 2 * 2 * 2 * 2 * 2  # gpus x tp x pp x mbs x schedule in the sweep


def search(db, *extra):
    r = subprocess.run([PRISM, "search", SWEEP, "--db", db, "--exhaustive", *extra],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"FAIL: search exited {r.returncode}: {r.stderr}")
    return r.stderr


def rows(db):
    con = sqlite3.connect(db)
    out = con.execute("SELECT key, status, reason, iter_s, bubble, mfu FROM candidate "
                      "ORDER BY key").fetchall()
    ver = con.execute("PRAGMA user_version").fetchone()[0]
    con.close()
    if ver != 8:
        sys.exit(f"FAIL: user_version {ver}")
    return out


with tempfile.TemporaryDirectory() as d:
    a = os.path.join(d, "a.db")
    search(a, "--threads", "2")
    ra = rows(a)
    check(len(ra) == EXPECTED, f"{len(ra)} rows, expected {EXPECTED}")
    check(len({r[0] for r in ra}) == EXPECTED, "duplicate keys")
    check(all(r[1] in ("simulated", "invalid", "oom", "failed") for r in ra), "bad status")
    check(any(r[1] == "simulated" for r in ra), "nothing simulated")
    # Resume: nothing left to do, nothing added.
    err = search(a)
    check("0 to evaluate" in err and "resuming" in err, "rerun did not resume: " + err)
    check(rows(a) == ra, "rerun changed the database")
    # One thread gives the same numbers as two.
    b = os.path.join(d, "b.db")
    search(b, "--threads", "1")
    check(rows(b) == ra, "one thread and two disagree")
    # kill -9 after the first batch, then resume.  On a loaded machine the
    # sweep can finish before the kill lands (this script is not scheduled
    # between its reading the line and its signal): then it starts again
    # from nothing, as search_crash.py does, rather than fail.
    c = os.path.join(d, "c.db")
    for attempt in range(20):
        for f in (c, c + "-wal", c + "-shm", c + "-journal"):
            if os.path.exists(f):
                os.remove(f)
        p = subprocess.Popen([PRISM, "search", SWEEP, "--db", c, "--exhaustive", "--batch",
                              "1", "--threads", "1"], stderr=subprocess.PIPE, text=True)
        for line in p.stderr:
            if "evaluated" in line:
                break
        p.send_signal(signal.SIGKILL)
        p.wait()
        partial = rows(c)
        if len(partial) < EXPECTED:
            break
    check(len(partial) < EXPECTED, "the kill came too late to test anything, 20 times")
    search(c)
    check(rows(c) == ra, "resumed database differs from the uninterrupted one")
    # A typo in a sweep file is an error naming the file, line and setting.
    bad = os.path.join(d, "bad.cfg")
    with open(SWEEP) as f:
        text = f.read()
    with open(bad, "w") as f:
        f.write(text.replace("  mbs = [1, 2];", "  mbz = [1, 2];"))
    r = subprocess.run([PRISM, "search", bad, "--db", os.path.join(d, "x.db")],
                       capture_output=True, text=True)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "mbs =" in l)
    check(r.returncode == 2 and r.stderr == f"prism: {bad}:{line}: unknown setting 'space.mbz'\n",
          f"bad sweep gave {r.returncode}: {r.stderr!r}")
    # The same settings with other comments and spacing: the same sweep
    # (resumed, nothing added); another value is another sweep.
    commented = os.path.join(d, "commented.cfg")
    with open(commented, "w") as f:
        f.write("# the same sweep, commented\n" +
                text.replace("  mbs = [1, 2];", "  mbs = [ 1,2 ];   # two sizes"))
    r = subprocess.run([PRISM, "search", commented, "--db", a, "--exhaustive"],
                       capture_output=True, text=True)
    check(r.returncode == 0 and "0 to evaluate" in r.stderr and "resuming" in r.stderr,
          f"a comment made another sweep: {r.stderr}")
    check(rows(a) == ra, "a commented sweep file changed the database")
    other = os.path.join(d, "other.cfg")
    with open(other, "w") as f:
        f.write(text.replace("  mbs = [1, 2];", "  mbs = [1, 4];"))
    r = subprocess.run([PRISM, "search", other, "--db", a, "--exhaustive"],
                       capture_output=True, text=True)
    check(r.returncode == 0 and "resuming" not in r.stderr, f"mbs [1, 4] resumed: {r.stderr}")
    print(f"search: {EXPECTED} candidates; resume, kill -9 ({len(partial)} stored when "
          f"killed) and threads all give the same database")
