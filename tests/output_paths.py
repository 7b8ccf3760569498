#!/usr/bin/env python3
"""prism writes only where it is told: a sweep's name names its database
(results/NAME.db) and its report folder (results/NAME/), so a name must be
one file name, whether it comes from a sweep file or from a database made
by hand.

1. prism search refuses a sweep file named "../../escaped" (one line
   naming the file, the line and the setting; exit 2) and creates nothing,
   run from a folder two levels down where ../../escaped.db would land.
   The longest name allowed (63 bytes, with a space and a quote) works.
2. prism report refuses a database whose sweep is named "../../victim",
   "..", "." or NULL unless -o says where to write (exit 2, nothing
   written); with -o it writes there and shows the name harmlessly.

usage: output_paths.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import os
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check

PRISM, SWEEP = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
with open(SWEEP) as f:
    TEXT = f.read()
NAME_LINE = next(i for i, l in enumerate(TEXT.splitlines(), 1) if l == 'name = "small";')


def run(*args, cwd):
    return subprocess.run([PRISM, *args], capture_output=True, text=True, cwd=cwd)


def tree(top):
    """Every path under top, relative, sorted."""
    out = []
    for root, dirs, files in os.walk(top):
        out += [os.path.relpath(os.path.join(root, x), top) for x in dirs + files]
    return sorted(out)


def sweep_named(d, name):
    """A copy of SWEEP in d with its name set to name."""
    p = os.path.join(d, "named.cfg")
    with open(p, "w") as f:
        f.write(TEXT.replace('name = "small";', f'name = "{name}";'))
    return p


def db_named(src, dst, name):
    """A copy of database src whose sweep is named name (None: NULL, in a
    schema made by hand without NOT NULL)."""
    con = sqlite3.connect(src)
    schema = [s for (s,) in con.execute("SELECT sql FROM sqlite_master WHERE type='table'")]
    sweeps = con.execute("SELECT * FROM sweep").fetchall()
    cands = con.execute("SELECT * FROM candidate").fetchall()
    con.close()
    out = sqlite3.connect(dst)
    for s in schema:
        out.execute(s.replace("name TEXT NOT NULL", "name TEXT"))
    for r in sweeps:
        out.execute(f"INSERT INTO sweep VALUES({','.join('?' * len(r))})", r)
    for r in cands:
        out.execute(f"INSERT INTO candidate VALUES({','.join('?' * len(r))})", r)
    out.execute("UPDATE sweep SET name=?", (name,))
    out.commit()
    out.close()


with tempfile.TemporaryDirectory() as d:
    deep = os.path.join(d, "a", "b")
    os.makedirs(deep)

    # 1. The sweep file's name.
    bad = sweep_named(d, "../../escaped")
    r = run("search", bad, cwd=deep)
    want = (f"prism: {bad}:{NAME_LINE}: 'name' must be one file name: 1 to 63 bytes, "
            "no '/', no leading '.', no control characters\n")
    check(r.returncode == 2 and r.stderr == want,
          f"search ../../escaped: exit {r.returncode}, stderr {r.stderr!r}, want {want!r}")
    check(tree(d) == ["a", "a/b", "named.cfg"], f"search ../../escaped wrote {tree(d)}")
    print("ok: search refuses the name ../../escaped and writes nothing")

    longest = "it's " + "x" * 58
    r = run("search", sweep_named(d, longest), cwd=deep)
    check(r.returncode == 0, f"search {longest!r}: exit {r.returncode}: {r.stderr}")
    db = os.path.join(deep, "results", longest + ".db")
    check(os.path.exists(db), f"search {longest!r}: no {db}; wrote {tree(d)}")
    print("ok: a 63-byte name with a space and a quote names results/NAME.db")

    # 2. The database's name, made by hand.
    for name, shown in [("../../victim", "..?..?victim"), ("..", ".."), (".", "."),
                        (None, "")]:
        hostile = os.path.join(d, "hostile.db")
        if os.path.exists(hostile):
            os.remove(hostile)
        db_named(db, hostile, name)
        before = tree(d)
        r = run("report", hostile, cwd=deep)
        want = (f"prism: {hostile}: sweep 1 is named '{shown}', which is not one file name: "
                "give -o DIR\n")
        check(r.returncode == 2 and r.stderr == want and r.stdout == "",
              f"report {name!r}: exit {r.returncode}, stderr {r.stderr!r}, want {want!r}")
        check(tree(d) == before, f"report {name!r} wrote {set(tree(d)) - set(before)}")
        out = os.path.join(d, "chosen")
        r = run("report", hostile, "-o", out, cwd=deep)
        check(r.returncode == 0, f"report {name!r} -o: exit {r.returncode}: {r.stderr}")
        with open(os.path.join(out, "report.md")) as f:
            head = f.readline()
        check(head == f"# Sweep {shown} (id 1)\n", f"report {name!r} -o: heading {head!r}")
        print(f"ok: report refuses the name {name!r} without -o; with -o shows {shown!r}")
