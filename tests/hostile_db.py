#!/usr/bin/env python3
"""Databases made by hand, as an attacker or a careless colleague would:
prism accepts only what it writes (docs/RESULTS.md, "What prism accepts").

1. A results database whose schema is more than prism's tables and their
   automatic indexes is refused by search (left byte for byte) and report:
   a TRIGGER named candidate (it would rewrite every row stored), a
   candidate VIEW over an endless recursive query (report ran for ever),
   an extra index, a generated column.
2. A key changed by one byte passes PRAGMA quick_check but not
   integrity_check: search refuses to resume into it, the file unchanged.
3. Stored numbers prism could not have written (an iteration of 1e306 s,
   tp = 1e300, text for a time) are refused by report, naming the row.
4. A kernel database whose kernel table is a view over an endless query
   is refused by synth --db and whatif --db; so is one of more rows than
   prism writes (2^20).
5. A finished search leaves WAL mode, and a database still in WAL mode
   (with no log beside it) is reported on from a folder prism cannot
   write (as user nobody where this runs as root).

Each run: exit 2 with one line on stderr, within 30 s.

usage: hostile_db.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check, digest

PRISM, SWEEP = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])


def run(*args, cwd=None, pre=()):
    """prism with args (after pre, a command to run it through), killed
    after 30 s: a hang is a failure, not a stuck test."""
    try:
        return subprocess.run([*pre, PRISM, *args], capture_output=True, text=True, cwd=cwd,
                              timeout=30)
    except subprocess.TimeoutExpired:
        sys.exit(f"FAIL: prism {' '.join(args)} still running after 30 s")


def refused(r, start, what):
    """r exited 2 with one line on stderr beginning with start."""
    check(r.returncode == 2 and r.stderr.startswith(start) and r.stderr.count("\n") == 1,
          f"{what}: exit {r.returncode}, stderr {r.stderr!r}, want {start!r}...")
    print(f"ok: {what}: {r.stderr.strip()}")


def copy(src, dst, *sql):
    """dst: a copy of database src with the statements sql run on it."""
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    con.execute("PRAGMA journal_mode=DELETE")
    for s in sql:
        con.execute(s)
    con.commit()
    con.close()
    return dst


with tempfile.TemporaryDirectory() as d:
    db = os.path.join(d, "small.db")
    r = run("search", SWEEP, "--db", db)
    check(r.returncode == 0, f"search: {r.stderr}")
    con = sqlite3.connect(db)
    mode = con.execute("PRAGMA journal_mode").fetchone()[0]
    con.close()
    check(mode == "delete", f"a finished search left the database in {mode} mode")
    print("ok: a finished search leaves WAL mode")

    # 1. Schemas.
    endless = ("WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) "
               "SELECT rows.* FROM rows, r")
    for what, sql, holds in [
        ("a trigger named candidate",
         ["CREATE TRIGGER candidate AFTER INSERT ON candidate "
          "BEGIN UPDATE candidate SET iter_s = 1e-9; END"], "trigger candidate"),
        ("candidate a view over an endless query",
         ["ALTER TABLE candidate RENAME TO rows", f"CREATE VIEW candidate AS {endless}"], None),
        ("an extra index", ["CREATE INDEX fast ON candidate(iter_s)"], "index fast"),
    ]:
        bad = copy(db, os.path.join(d, "bad.db"), *sql)
        before = digest(bad)
        want = f"prism: {bad}: not a prism results database (it holds {holds or ''}"
        refused(run("search", SWEEP, "--db", bad), want, f"search into {what}")
        check(digest(bad) == before, f"search into {what}: the file was changed")
        refused(run("report", bad, "-o", os.path.join(d, "rep")), want, f"report of {what}")
        check(not os.path.exists(os.path.join(d, "rep")), f"report of {what} wrote")
        os.remove(bad)

    # A generated column: the schema's code too.
    bad = os.path.join(d, "gen.db")
    con = sqlite3.connect(db)
    schema = [s for (s,) in con.execute("SELECT sql FROM sqlite_master WHERE type='table'")]
    con.close()
    con = sqlite3.connect(bad)
    for s in schema:
        con.execute(s.replace("iter_s REAL,", "iter_s REAL AS (length(zeroblob(1e9))),"))
    con.commit()
    con.close()
    refused(run("report", bad, "-o", os.path.join(d, "rep")),
            f"prism: {bad}: not a prism results database (its table candidate has generated "
            "columns)", "report of a generated column")

    # 2. One byte of a stored key: quick_check passes, integrity_check not.
    bad = copy(db, os.path.join(d, "key.db"))
    con = sqlite3.connect(bad)
    (key,) = con.execute("SELECT key FROM candidate WHERE status='simulated' LIMIT 1").fetchone()
    (size,) = con.execute("PRAGMA page_size").fetchone()
    con.close()
    with open(bad, "r+b") as f:
        data = f.read()
        at = [i for i in range(len(data)) if data.startswith(key.encode(), i)]
        # The table's copy (a table leaf page, type 13), not the index's.
        leaf = [i for i in at if data[(i // size) * size + (100 if i < size else 0)] == 13]
        check(len(leaf) == 1, f"the key {key} in {len(leaf)} table pages")
        f.seek(leaf[0] + len(key) - 1)
        f.write(b"X")
    con = sqlite3.connect(bad)
    quick = con.execute("PRAGMA quick_check").fetchall()
    con.close()
    check(quick == [("ok",)], f"quick_check of the changed key: {quick}")
    before = digest(bad)
    refused(run("search", SWEEP, "--db", bad),
            f"prism: {bad}: the database is damaged (integrity_check: ",
            "resuming into a changed key (quick_check ok)")
    check(digest(bad) == before, "search resumed into a changed key")

    # 3. Numbers prism does not write.
    sim = "(SELECT MIN(rowid) FROM candidate WHERE status='simulated')"
    for what, sql, want in [
        ("iter_s 1e306", f"UPDATE candidate SET iter_s=1e306 WHERE rowid={sim}",
         "iter_s 1e+306 is outside 1e-09..4.61169e+09: not what prism writes"),
        ("tp 1e300", f"UPDATE candidate SET tp=1e300 WHERE rowid={sim}",
         "tp 1e+300 is outside 1..1024: not what prism writes"),
        ("iter_s as text", f"UPDATE candidate SET iter_s='fast' WHERE rowid={sim}",
         "iter_s is not a number: not what prism writes"),
    ]:
        bad = copy(db, os.path.join(d, "num.db"), sql)
        r = run("report", bad, "-o", os.path.join(d, "rep"))
        refused(r, f"prism: {bad}: sweep 1, candidate 'gpus=", f"report of {what}")
        check(r.stderr.endswith(want + "\n"), f"report of {what}: {r.stderr!r}, want {want!r}")
        check(not os.path.exists(os.path.join(d, "rep")), f"report of {what} wrote")
        os.remove(bad)

    # 4. A kernel database whose table is an endless view.
    kdb = os.path.join(d, "k.db")
    con = sqlite3.connect(kdb)
    con.execute("CREATE TABLE rows(gpu, class, dtype, work, time_s, samples, shape)")
    con.execute("INSERT INTO rows VALUES ('NVIDIA H100 80GB HBM3', 'gemm', 'bf16', 1e9, 1e-5, "
                "1, '')")
    con.execute(f"CREATE VIEW kernel AS {endless}")
    con.commit()
    con.close()
    want = f"prism: {kdb}: not a prism kernel database (it holds "
    refused(run("synth", "gpt-small", "--hw", "h100-dgx", "--db", kdb), want,
            "synth --db: kernel an endless view")
    refused(run("whatif", "gpt-small", "--hw", "h100-dgx", "--dp", "2", "--db", kdb), want,
            "whatif --db: kernel an endless view")

    # A kernel database of more rows than prism writes (2^20): the bound
    # on what is read.
    big = os.path.join(d, "big.db")
    con = sqlite3.connect(big)
    con.execute("CREATE TABLE kernel (gpu TEXT NOT NULL, class TEXT NOT NULL, dtype TEXT NOT "
                "NULL, work REAL NOT NULL, time_s REAL NOT NULL, samples INTEGER NOT NULL, "
                "shape TEXT, PRIMARY KEY (gpu, class, dtype, work))")
    con.execute("WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r LIMIT 1048577) "
                "INSERT INTO kernel SELECT 'G', 'gemm', 'bf16', x, 1e-5, 1, NULL FROM r")
    con.commit()
    con.close()
    refused(run("synth", "gpt-small", "--hw", "h100-dgx", "--db", big),
            f"prism: {big}: more than 1048576 rows: not what prism writes",
            "synth --db: a kernel database of 2^20 + 1 rows")
    os.remove(big)

    # 5. WAL mode, read from a folder prism cannot write.
    ro = os.path.join(d, "ro")
    os.mkdir(ro)
    wal = copy(db, os.path.join(ro, "wal.db"), "PRAGMA journal_mode=WAL")
    con = sqlite3.connect(wal)
    mode = con.execute("PRAGMA journal_mode").fetchone()[0]
    con.close()
    check(mode == "wal" and sorted(os.listdir(ro)) == ["wal.db"], f"{mode} {os.listdir(ro)}")
    out = os.path.join(d, "out")
    os.mkdir(out)
    pre = ()
    if os.geteuid() == 0:
        # root writes anywhere: run as nobody, who may write out/ alone.
        setpriv = shutil.which("setpriv")
        if not setpriv:
            print("note: no setpriv: the read-only folder is not checked as root")
            sys.exit(0)
        pre = (setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups")
        os.chmod(d, 0o755)
        os.chmod(out, 0o777)
        os.chmod(wal, 0o444)
    os.chmod(ro, 0o555)
    try:
        r = run("report", wal, "-o", os.path.join(out, "rep"), pre=pre)
    finally:
        os.chmod(ro, 0o755)
    check(r.returncode == 0, f"report from a read-only folder: exit {r.returncode}: {r.stderr}")
    check(os.path.exists(os.path.join(out, "rep", "report.md")), "no report.md")
    check(sorted(os.listdir(ro)) == ["wal.db"], f"left {sorted(os.listdir(ro))}")
    print("ok: a database in WAL mode is reported on from a read-only folder")
