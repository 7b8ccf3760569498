#!/usr/bin/env python3
"""prism report on a database made by hand, as an attacker would: the
sweep's name is text from outside and must never become a program.

1. Names that would run a shell command if pasted into gnuplot's program
   (`system "..."`, a newline then `!cmd`, backquotes) draw the chart with
   the name shown as harmless text, and run nothing: each tries to create
   a marker file, which must not exist afterwards.  gnuplot is run through
   a recording wrapper, so the program it is given is checked too (and
   that check alone still runs where gnuplot is not installed).
2. Without gnuplot the report is still written, says there is no chart,
   and does not claim a pareto.svg.

usage: report_hostile.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile

from sweeptest import check

PRISM, SWEEP = os.path.abspath(sys.argv[1]), sys.argv[2]
GNUPLOT = shutil.which("gnuplot")
if not GNUPLOT:
    print("note: gnuplot not installed: the program prism gives it is checked, "
          "not what gnuplot would do with it (scripts/deps installs gnuplot-nox)")


def with_name(db, name):
    """Set the name of db's one sweep."""
    con = sqlite3.connect(db)
    con.execute("UPDATE sweep SET name=?", (name,))
    con.commit()
    con.close()


with tempfile.TemporaryDirectory() as d:
    db = os.path.join(d, "hostile.db")
    r = subprocess.run([PRISM, "search", SWEEP, "--db", db], capture_output=True, text=True)
    check(r.returncode == 0, f"search exited {r.returncode}: {r.stderr}")
    # A gnuplot that records its program, then hands it to the real one.
    bindir = os.path.join(d, "bin")
    os.mkdir(bindir)
    record = os.path.join(d, "program.gp")
    wrapper = os.path.join(bindir, "gnuplot")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\ncat > '{record}'\n")
        f.write(f"exec '{GNUPLOT}' < '{record}'\n" if GNUPLOT else "exit 0\n")
    os.chmod(wrapper, stat.S_IRWXU)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))

    m1, m2, m3 = (os.path.join(d, f"pwned{i}") for i in (1, 2, 3))
    # (what, name, the name as the report shows it)
    CASES = [
        ("gnuplot system()", f"x'; system \"touch {m1}\"; print '",
         "x?? system ?" + f"touch {m1}".replace("/", "?") + "?? print ?"),
        ("newline then !cmd", f"x'\n!touch {m2} #",
         "x???touch " + m2.replace("/", "?") + " ?"),
        ("backquotes", f"`touch {m3}`", "?touch " + m3.replace("/", "?") + "?"),
    ]
    for what, name, shown in CASES:
        with_name(db, name)
        out = os.path.join(d, "report")
        shutil.rmtree(out, ignore_errors=True)
        if os.path.exists(record):
            os.remove(record)
        r = subprocess.run([PRISM, "report", db, "-o", out], capture_output=True, text=True,
                           cwd=d, env=env)
        check(r.returncode == 0, f"{what}: report exited {r.returncode}: {r.stderr}")
        for m in (m1, m2, m3):
            check(not os.path.exists(m), f"{what}: a shell command ran ({m} exists)")
        with open(record) as f:
            program = f.read()
        # The name shows only inside the title's quotes, and carries none.
        check(name not in program and '"' not in program and "`" not in program
              and not any(l.startswith("!") for l in program.splitlines()),
              f"{what}: the name reached gnuplot's program:\n{program}")
        check(f"set title 'Sweep {shown}: best iteration time per GPU count' noenhanced\n"
              in program, f"{what}: title line of\n{program}")
        # gnuplot runs in the output folder: its program names no path.
        check(d not in program, f"{what}: a path in gnuplot's program:\n{program}")
        with open(os.path.join(out, "report.md")) as f:
            head = f.readline()
        check(head == f"# Sweep {shown} (id 1)\n", f"{what}: report.md begins {head!r}")
        if GNUPLOT:
            with open(os.path.join(out, "pareto.svg")) as f:
                svg = f.read()
            title = f"<text>Sweep {shown}: best iteration time per GPU count</text>"
            check(title in svg, f"{what}: no {title} in pareto.svg")
        print(f"ok: {what}: nothing ran; shown as {shown!r}")

    # No gnuplot on the PATH: the report without its chart, said so.
    out = os.path.join(d, "nochart")
    r = subprocess.run([PRISM, "report", db, "-o", out], capture_output=True, text=True, cwd=d,
                       env=dict(os.environ, PATH=os.path.join(d, "empty")))
    check(r.returncode == 0, f"no gnuplot: report exited {r.returncode}: {r.stderr}")
    check(r.stderr == "prism report: gnuplot failed; no chart (install gnuplot-nox)\n"
          f"prism report: wrote {out}/report.md, best.csv\n", f"no gnuplot: stderr {r.stderr!r}")
    check(sorted(os.listdir(out)) == ["best.csv", "report.md"],
          f"no gnuplot: wrote {sorted(os.listdir(out))}")
    print("ok: no gnuplot: report and best.csv, no chart, said so")

    # 3. --sweep takes a sweep id, nothing else: "2x" was read as 2 and
    # "abc" as 0 (the latest sweep), with exit 0.
    for bad in ("2x", "abc", "0", "-1", "99999999999"):
        r = subprocess.run([PRISM, "report", db, "--sweep", bad, "-o", os.path.join(d, "x")],
                           capture_output=True, text=True, cwd=d)
        check(r.returncode == 2 and r.stderr == f"prism: --sweep '{bad}': expected a whole "
              "number in 1..2147483647\n", f"--sweep {bad}: {r.returncode} {r.stderr!r}")
    print("ok: --sweep refuses what is not a sweep id")
