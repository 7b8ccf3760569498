#!/usr/bin/env python3
"""Names, outputs and CSV cells, as an attacker or a careless colleague
would leave them (docs/FORMATS.md, "Names and outputs").

1. A FIFO where prism looks a name up (a bare --hw name in the working
   directory, a profile in $PRISM_CONFIG_DIR, report DB, --db, a trace)
   is refused with one line, never opened: opening it blocked for ever.
   prism list passes over it.
2. Standard output that cannot be written (/dev/full) is exit 1 with the
   reason, not 0 with a lost report.
3. synth -o writes its rank files as a set: one that cannot be written (a
   folder in its place, a full disk) leaves the previous set whole and no
   file behind; ingest refuses rank files of two runs.
4. Paths that do not fit prism's buffers are refused naming the option
   (report -o, --csv-all, synth -o, search --db), never cut short.
5. Links planted in a shared report folder (pareto.svg.tmp, pareto.svg,
   report.md) are replaced, never followed: the file they point to stays.
6. all.csv and best.csv: text cells a spreadsheet would run as formulas
   (=, +, -, @) begin with a single quote; numbers stay numbers.

Each refusal: exit 2 with one line on stderr, within 30 s.

usage: hostile_outputs.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import csv
import os
import re
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check, digest

PRISM, SWEEP = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, cwd=None, env=None, stdout=subprocess.PIPE, limit=None):
    """prism with args, killed after 30 s (a hang is a failure); limit: a
    file size limit in bytes (SIGXFSZ ignored: a write beyond it fails
    with EFBIG, as on a full disk)."""
    def fsize():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        return subprocess.run([PRISM, *args], stdout=stdout, stderr=subprocess.PIPE,
                              text=True, cwd=cwd, env=env, timeout=30,
                              preexec_fn=fsize if limit else None)
    except subprocess.TimeoutExpired:
        sys.exit(f"FAIL: prism {' '.join(args)} still running after 30 s")


def refused(r, want, what, code=2):
    """r exited code with one line on stderr: want, or (want ending in
    '...') one beginning with it."""
    line = r.stderr.rstrip("\n")
    ok = line.startswith(want[:-3]) if want.endswith("...") else line == want
    check(r.returncode == code and r.stderr.count("\n") == 1 and ok,
          f"{what}: exit {r.returncode}, stderr {r.stderr!r}, want {want!r}")
    print(f"ok: {what}: {line}")


def listing(top):
    return sorted(os.listdir(top))


with tempfile.TemporaryDirectory() as d:
    db = os.path.join(d, "small.db")
    check(run("search", SWEEP, "--db", db).returncode == 0, "search")

    # 1. FIFOs where names are looked up.
    work = os.path.join(d, "work")
    os.mkdir(work)
    fifo = os.path.join(work, "myhw")
    os.mkfifo(fifo)
    refused(run("synth", "gpt-small", "--hw", "myhw", cwd=work),
            "prism: myhw: not a regular file (a FIFO)", "synth --hw NAME, NAME a FIFO")
    refused(run("report", fifo, "-o", os.path.join(d, "rep")),
            f"prism: {fifo}: not a regular file (a FIFO)", "report FIFO")
    refused(run("search", SWEEP, "--db", fifo),
            f"prism: {fifo}: not a regular file (a FIFO)", "search --db FIFO")
    refused(run("synth", "gpt-small", "--hw", "h100-dgx", "--db", fifo),
            f"prism: {fifo}: not a regular file (a FIFO)", "synth --db FIFO")
    refused(run("ingest", fifo), f"prism: {fifo}: not a regular file (a FIFO)", "ingest FIFO")
    conf = os.path.join(d, "conf")
    os.makedirs(os.path.join(conf, "hw"))
    os.mkfifo(os.path.join(conf, "hw", "evil.cfg"))
    env = dict(os.environ, PRISM_CONFIG_DIR=conf)
    refused(run("synth", "gpt-small", "--hw", "evil", env=env),
            f"prism: {conf}/hw/evil.cfg: not a regular file (a FIFO)",
            "synth --hw NAME, $PRISM_CONFIG_DIR/hw/NAME.cfg a FIFO")
    r = run("list", "hw", env=env)
    check(r.returncode == 0 and "evil" not in r.stdout, f"list hw: {r.returncode} {r.stdout}")
    print("ok: list hw passes over a FIFO")
    check(not os.path.exists(os.path.join(d, "rep")), "report FIFO wrote")

    # 2. Standard output that cannot be written.
    with open("/dev/full", "w") as full:
        r = run("report", db, "-o", os.path.join(d, "rep"), "--json", stdout=full)
        check(r.returncode == 1 and r.stderr.endswith(
            "\nprism: standard output: write failed: No space left on device\n"),
            f"report --json > /dev/full: exit {r.returncode}, {r.stderr!r}")
        print("ok: report --json > /dev/full: exit 1, the reason said")
        shutil.rmtree(os.path.join(d, "rep"))
        r = run("list", stdout=full)
        refused(r, "prism: standard output: write failed: No space left on device",
                "list > /dev/full", code=1)

    # 3. Rank files as a set.
    synth = ["synth", "gpt-small", "--hw", "h100-dgx", "--pp", "4", "--microbatches"]
    out = os.path.join(d, "run.json")
    check(run(*synth, "4", "-o", out).returncode == 0, "synth -o")
    ranks = [os.path.join(d, f"run.rank{i}.json") for i in range(4)]
    before = [digest(p) for p in ranks]
    os.rename(ranks[2], ranks[2] + ".keep")
    os.mkdir(ranks[2])
    refused(run(*synth, "8", "-o", out), f"prism: -o {out}: {ranks[2]} is a folder",
            "synth -o, a rank file a folder")
    os.rmdir(ranks[2])
    os.rename(ranks[2] + ".keep", ranks[2])
    check([digest(p) for p in ranks] == before, "synth -o: a rank file was changed")
    names = listing(d)
    r = run(*synth, "8", "-o", out, limit=200000)
    check(r.returncode == 2 and "File too large" in r.stderr and r.stderr.count("\n") == 1,
          f"synth -o on a full disk: {r.returncode} {r.stderr!r}")
    check([digest(p) for p in ranks] == before, "synth -o on a full disk changed a rank file")
    check(listing(d) == names, f"synth -o on a full disk left {set(listing(d)) - set(names)}")
    print("ok: synth -o failing midway leaves the previous rank files whole, nothing else")
    other = os.path.join(d, "other.json")
    check(run(*synth, "8", "-o", other).returncode == 0, "synth -o other")
    refused(run("ingest", ranks[0], ranks[1], os.path.join(d, "other.rank2.json"), ranks[3]),
            f"prism: {d}/other.rank2.json: describes another run (prism::model#) than "
            f"{ranks[0]}'s: the files are not one run (give the ranks of one)",
            "ingest of rank files of two runs")

    # 4. Paths too long for prism's buffers.
    deep = os.path.join(d, "x" * 200, "y" * 200, "z" * 200, "w" * 200, "v" * 200, "u" * 200)
    for what, args, opt in [
        ("report -o", ["report", db, "-o", deep], "-o"),
        ("report --csv-all", ["report", db, "-o", os.path.join(d, "rep"), f"--csv-all={deep}"],
         "--csv-all"),
        ("synth -o", [*synth, "4", "-o", deep + ".json"], "-o"),
        ("search --db", ["search", SWEEP, "--db", deep], "--db"),
    ]:
        r = run(*args)
        refused(r, f"prism: {opt} {deep[:32]}...", f"{what} with a path of {len(deep)} bytes")
        check("too long a path" in r.stderr, r.stderr)
    check(not os.path.exists(os.path.join(d, "x" * 200)), "a cut path was written to")
    check(not os.path.exists(os.path.join(d, "rep")), "report --csv-all too long wrote")

    # 5. Links planted in the report folder.
    shared = os.path.join(d, "shared")
    os.mkdir(shared)
    victims = {}
    for name in ("pareto.svg.tmp", "pareto.svg", "report.md", "best.csv"):
        victim = os.path.join(d, f"victim-{name}")
        with open(victim, "w") as f:
            f.write("the user's own file\n")
        victims[name] = victim
        os.symlink(victim, os.path.join(shared, name))
    r = run("report", db, "-o", shared)
    check(r.returncode == 0, f"report into a folder with links: {r.stderr}")
    for name, victim in victims.items():
        with open(victim) as f:
            check(f.read() == "the user's own file\n", f"report wrote through the link {name}")
    for name in ("report.md", "best.csv"):
        check(not os.path.islink(os.path.join(shared, name)), f"{name} is still a link")
    print("ok: links planted in the report folder are replaced, never followed")

    # 6. Formulas in CSV cells.
    bad = os.path.join(d, "formula.db")
    shutil.copy(db, bad)
    con = sqlite3.connect(bad)
    con.execute("UPDATE candidate SET reason='=HYPERLINK(\"http://x\",\"y\")' "
                "WHERE status!='simulated'")
    con.execute("UPDATE candidate SET partition='+1+1' WHERE status='simulated'")
    con.execute("UPDATE candidate SET key='@SUM(1)' || key")
    con.execute("UPDATE candidate SET method='-2+3'")
    con.commit()
    con.close()
    rep = os.path.join(d, "formula")
    r = run("report", bad, "-o", rep, "--csv-all")
    check(r.returncode == 0, f"report of formulas: {r.stderr}")
    for name in ("all.csv", "best.csv"):
        with open(os.path.join(rep, name), newline="") as f:
            rows = list(csv.reader(f))
        cells = [c for row in rows[1:] for c in row]
        formulas = [c for c in cells if c and c[0] in "=+-@"
                    and not re.fullmatch(r"[-+]?[0-9.]+(e[-+]?[0-9]+)?", c)]
        check(not formulas, f"{name}: formula cells {formulas[:3]}")
        quoted = [c for c in cells if c.startswith("'")]
        check(quoted, f"{name}: no cell neutralised")
        print(f"ok: {name}: {len(quoted)} formula cells neutralised, e.g. {quoted[0]!r}")
    with open(os.path.join(rep, "all.csv"), newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["status"] == "simulated")
    check(float(row["iter_s"]) > 0 and not row["iter_s"].startswith("'"), f"iter_s {row}")
    print("ok: numbers stay numbers")
