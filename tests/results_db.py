#!/usr/bin/env python3
"""Results are never lost or damaged: prism search refuses, before writing
anything, a --db that would keep nothing ("" and ":memory:"), another
program's SQLite file (left byte for byte as it was, not turned to WAL), a
file that is not a database, and a results database with damaged pages
(PRAGMA quick_check); prism report refuses the damaged one too.

usage: results_db.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import hashlib
import os
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check, digest, refused

PRISM, SWEEP = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])


def run(*args, cwd=None):
    return subprocess.run([PRISM, *args], capture_output=True, text=True, cwd=cwd)


with tempfile.TemporaryDirectory() as d:
    # 1. Databases.
    cwd = os.path.join(d, "empty")
    os.mkdir(cwd)
    for name in ["", ":memory:"]:
        r = run("search", SWEEP, "--db", name, cwd=cwd)
        refused(r, f"prism: '{name}' is no file: the results would be lost (give a file "
                "name)\n", f"--db {name!r}")
        check(os.listdir(cwd) == [], f"--db {name!r} wrote {os.listdir(cwd)}")

    foreign = os.path.join(d, "notes.db")
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE notes(x)")
    con.execute("INSERT INTO notes VALUES ('keep me')")
    con.commit()
    con.close()
    before = digest(foreign)
    r = run("search", SWEEP, "--db", foreign)
    refused(r, f"prism: {foreign}: not a prism results database (it holds table notes): "
            "give another --db\n", "another program's database")
    check(digest(foreign) == before, "the foreign database was changed")
    check(sorted(os.listdir(d)) == ["empty", "notes.db"], f"left {sorted(os.listdir(d))}")

    text = os.path.join(d, "notes.txt")
    with open(text, "w") as f:
        f.write("not a database\n" * 100)
    r = run("search", SWEEP, "--db", text)
    refused(r, f"prism: {text}: not a prism results database (file is not a database)\n",
            "a text file as --db")
    check(digest(text) == hashlib.sha256(b"not a database\n" * 100).hexdigest(),
          "the text file was changed")

    db = os.path.join(d, "small.db")
    r = run("search", SWEEP, "--db", db)
    check(r.returncode == 0, f"search: {r.stderr}")
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name='candidate'").fetchone()
    (size,) = con.execute("PRAGMA page_size").fetchone()
    con.close()
    with open(db, "r+b") as f:
        # The candidate table's root page claims 65535 cells.
        f.seek((root - 1) * size + 3)
        f.write(b"\xff\xff")
    before = digest(db)
    damaged = (f"prism: {db}: the database is damaged (%s: *** in database main *** "
               f"Page {root}: btreeInitPage() returns error code 11): restore it or use "
               "another\n")
    refused(run("search", SWEEP, "--db", db), damaged % "integrity_check",
            "resuming into a damaged database")
    check(digest(db) == before, "the damaged database was written to")
    refused(run("report", db, "-o", os.path.join(d, "rep")), damaged % "quick_check",
            "a report of a damaged database")
    check(not os.path.exists(os.path.join(d, "rep")), "report of a damaged database wrote")
