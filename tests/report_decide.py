#!/usr/bin/env python3
"""prism report for a decision, on a database with known rows: days,
GPU-hours and cost to train (worked by hand below), near-ties, the same
run under several names collapsed, --csv-all (gzipped when so named),
--json; prism search --json; nothing written but what was asked for, and
stdout and stderr in order when they share a pipe.

usage: report_decide.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import csv
import gzip
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check

PRISM, SWEEP = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
TOKENS, PRICE = 1e9, 2.5
# The near-tie threshold as scripts/tie_error.py prints it.
TIE = re.search(r"near-tie threshold: ([0-9.]+)", subprocess.run(
    [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts",
                                  "tie_error.py")],
    check=True, capture_output=True, text=True).stdout).group(1)

# key, gpus, tp, pp, dp, mbs, microbatches, schedule, recompute, zero,
# iteration s, tokens/s, memory GB.  Worked by hand, with 1e9 tokens at 2.5
# a GPU-hour:
#   8 GPUs, best a: 1e9 / 1e5 tokens/s = 10,000 s = 0.115741 days;
#     8 x 10,000 / 3600 = 22.2222 GPU-hours; x 2.5 = 55.5556.
#     a2 is a with selective recompute that changes nothing: collapsed.
#     b is 5 % slower: a near-tie (within TIE %); c 20 % slower: not.
#  16 GPUs, best d0: 1e9 / 2.5e5 = 4,000 s = 0.0462963 days;
#     16 x 4,000 / 3600 = 17.7778 GPU-hours; x 2.5 = 44.4444.
#     d1 is d0 with ZeRO 1 over dp = 1: collapsed into d0 (the simpler
#     name) although its key sorts first.  f and f2 are one run without a
#     pipeline (gpipe, 1f1b, one microbatch): f2 (1f1b) is kept; 16.7 %
#     slower than d0: not a near-tie.
ROWS = [
    ("a", 8, 1, 1, 8, 1, 4, "1f1b", "none", 0, 0.010, 1e5, 20.0),
    ("a2", 8, 1, 1, 8, 1, 4, "1f1b", "selective", 0, 0.010, 1e5, 20.0),
    ("b", 8, 2, 1, 4, 1, 8, "1f1b", "none", 0, 0.0105, 0.95e5, 18.0),
    ("c", 8, 1, 2, 4, 1, 8, "1f1b", "none", 0, 0.012, 0.8e5, 15.0),
    ("d0", 16, 8, 2, 1, 1, 32, "1f1b", "none", 0, 0.004, 2.5e5, 30.0),
    ("0-d1", 16, 8, 2, 1, 1, 32, "1f1b", "none", 1, 0.004, 2.5e5, 30.0),
    ("f", 16, 1, 1, 16, 2, 1, "gpipe", "none", 0, 0.00467, 2.1e5, 25.0),
    ("f2", 16, 1, 1, 16, 2, 1, "1f1b", "none", 0, 0.00467, 2.1e5, 25.0),
]
HAND = {8: (0.115741, 22.2222, 55.5556), 16: (0.0462963, 17.7778, 44.4444)}


def close(a, b, what):
    check(abs(a - b) <= 1e-5 * abs(b), f"{what}: {a}, worked by hand {b}")


def run(*args, cwd, code=0, **kw):
    r = subprocess.run([PRISM, *args], capture_output=True, text=True, cwd=cwd, **kw)
    check(r.returncode == code, f"prism {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r


def tree(top):
    out = []
    for root, dirs, files in os.walk(top):
        out += [os.path.relpath(os.path.join(root, x), top) for x in dirs + files]
    return sorted(out)


with tempfile.TemporaryDirectory() as d:
    work = os.path.join(d, "work")
    os.mkdir(work)
    db = os.path.join(d, "known.db")
    run("search", SWEEP, "--db", db, cwd=work)
    con = sqlite3.connect(db)
    (sid,) = con.execute("SELECT id FROM sweep").fetchone()
    con.execute("UPDATE sweep SET tokens=?, price_per_gpu_hour=?", (TOKENS, PRICE))
    con.execute("DELETE FROM candidate")
    for (key, gpus, tp, pp, dp, mbs, mb, sched, rc, zero, t, tps, mem) in ROWS:
        con.execute(
            "INSERT INTO candidate(sweep, key, gpus, tp, pp, dp, vp, mbs, microbatches,"
            " schedule, recompute, zero, sp, layers, hidden, status, iter_s, bubble,"
            " tokens_per_s, mfu, gpu_hours, mem_gb, fits) VALUES(?,?,?,?,?,?,1,?,?,?,?,?,0,"
            "8,1024,'simulated',?,0.1,?,0.4,?,?,1)",
            (sid, key, gpus, tp, pp, dp, mbs, mb, sched, rc, zero, t, tps, t * gpus / 3600,
             mem))
    con.execute("INSERT INTO candidate(sweep, key, gpus, status, reason) "
                "VALUES(?, 'bad', 8, 'invalid', 'made up, with a comma')", (sid,))
    con.commit()
    con.close()

    # Markdown, best.csv, every candidate gzipped; stdout and stderr in one
    # pipe, in order.
    out = os.path.join(d, "out")
    allgz = os.path.join(d, "all.csv.gz")
    r = subprocess.run([PRISM, "report", db, "-o", out, "--csv-all=" + allgz], cwd=work,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(r.returncode == 0, f"report: {r.stdout}")
    lines = r.stdout.splitlines()
    check(lines[-1].startswith("prism report: wrote ") and
          not any(l.startswith("prism report:") for l in lines[:-2]) and
          lines[0].startswith("# Sweep small"),
          f"stdout and stderr interleaved:\n{r.stdout}")
    check(tree(work) == [], f"report -o wrote into the working directory: {tree(work)}")
    check(set(os.listdir(out)) <= {"report.md", "best.csv", "pareto.svg"} and
          {"report.md", "best.csv"} <= set(os.listdir(out)), f"wrote {os.listdir(out)}")
    with open(os.path.join(out, "best.csv")) as f:
        best = {int(b["gpus"]): b for b in csv.DictReader(f)}
    for col in ("sp", "layers", "hidden", "vp", "schedule", "recompute", "zero"):
        check(col in best[8], f"best.csv has no {col}")
    check(best[8]["tp"] == "1" and best[8]["recompute"] == "none", f"8: {best[8]}")
    check(best[16]["tp"] == "8" and best[16]["zero"] == "0", f"16 (simpler name): {best[16]}")
    for g, (days, gpuh, cost) in HAND.items():
        close(float(best[g]["days_to_train"]), days, f"{g} GPUs days")
        close(float(best[g]["gpu_hours_to_train"]), gpuh, f"{g} GPUs GPU-hours")
        close(float(best[g]["cost_to_train"]), cost, f"{g} GPUs cost")
    check((best[8]["near_ties"], best[8]["same_runs"]) == ("1", "1"), f"8: {best[8]}")
    check((best[16]["near_ties"], best[16]["same_runs"]) == ("0", "1"), f"16: {best[16]}")
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    check("Training: 1,000,000,000 tokens at 2.5 per GPU-hour." in md, "training line")
    check("| 8 | tp 1 pp 1 dp 8, mbs 1 x 4, 1f1b, zero 0 | 10.000 | 100000 | 40.0% | 10.0% "
          "| 20.0 | 2.222e-05 | 0.12 | 22 | 56 | 1 | yes | yes |" in md, "8 GPUs row:\n" + md)
    check("| 16 | tp 8 pp 2 dp 1, mbs 1 x 32, 1f1b, zero 0 | 4.000 | 250000 |" in md,
          "16 GPUs row:\n" + md)
    check("+0.0%" not in md and "selective" not in md and "gpipe" not in md,
          "a collapsed run is listed:\n" + md)
    check("| 8 | tp 2 pp 1 dp 4, mbs 1 x 8, 1f1b, zero 0 | 10.500 | +5.0% | yes |" in md,
          "near-tie b")
    check("| 8 | tp 1 pp 2 dp 4, mbs 1 x 8, 1f1b, zero 0 | 12.000 | +20.0% | no |" in md,
          "not a tie: c")
    check(f"{TIE} %" in md and "docs/VALIDATION.md" in md, "the uncertainty and its source")
    check("1 differing only in ZeRO stage (dp = 1), 1 only in recompute setting, 1 only in "
          "schedule (no pipeline)" in md, "collapsed counts:\n" + md)
    with gzip.open(allgz, "rt") as f:
        rows = list(csv.DictReader(io.StringIO(f.read())))
    check(len(rows) == len(ROWS) + 1, f"all.csv: {len(rows)} rows")
    by = {x["key"]: x for x in rows}
    check(by["a2"]["same_as"] == "a" and by["0-d1"]["same_as"] == "d0" and
          by["f"]["same_as"] == "f2" and by["a"]["same_as"] == "", "same_as")
    check(by["b"]["near_tie"] == "1" and by["c"]["near_tie"] == "0", "near_tie")
    check(by["bad"]["reason"] == "made up, with a comma" and by["bad"]["status"] == "invalid",
          f"all.csv invalid row {by['bad']}")
    close(float(by["c"]["days_to_train"]), 1e9 / 0.8e5 / 86400, "c's days")
    print("ok: days, GPU-hours and cost to train as worked by hand; near-ties; the same run "
          "collapsed; all.csv.gz")

    # --json, and the training numbers from the command line.
    r = run("report", db, "-o", out, "--json", "--tokens", "2e9", "--price", "1", cwd=work)
    j = json.loads(r.stdout)
    b8 = j["best"][0]
    check(b8["gpus"] == 8 and b8["near_ties"] == 1 and b8["pareto_time"], f"json: {b8}")
    close(b8["best"]["days_to_train"], 2 * HAND[8][0], "json days (--tokens 2e9)")
    close(b8["best"]["cost_to_train"], 2 * HAND[8][1], "json cost (--price 1)")
    check(b8["runners_up"][0]["near_tie"] and not b8["runners_up"][1]["near_tie"], "json ties")
    check(j["same_run"] == {"zero": 1, "recompute": 1, "schedule": 1, "several": 0},
          f"json same_run {j['same_run']}")
    check(j["rejected"][0]["reason"] == "made up, with a comma", "json rejected")
    close(j["near_tie"]["fraction"], float(TIE) / 100, "json near-tie fraction")
    r = run("report", db, "-o", out, "--json", "--tie", "30", cwd=work)
    check(json.loads(r.stdout)["best"][1]["near_ties"] == 1, "--tie 30: f2 is a near-tie")
    print("ok: report --json parses; --tokens, --price and --tie")

    # A version 2 database (no tokens, no price), read-only: no cost.
    old = os.path.join(d, "v2.db")
    con = sqlite3.connect(db)
    con.execute("VACUUM INTO ?", (old,))
    con.close()
    con = sqlite3.connect(old)
    con.execute("ALTER TABLE sweep DROP COLUMN tokens")
    con.execute("ALTER TABLE sweep DROP COLUMN price_per_gpu_hour")
    for c in ("partition", "shard"):  # nor version 5's placement columns
        con.execute(f"ALTER TABLE candidate DROP COLUMN {c}")
    con.execute("PRAGMA user_version=2")
    con.commit()
    con.close()
    r = run("report", old, "-o", os.path.join(d, "old"), "--json", cwd=work)
    j = json.loads(r.stdout)
    check(j["tokens"] is None and "days_to_train" not in j["best"][0]["best"], "v2 database")
    print("ok: a version 2 database reports without cost")

    # prism search --json, with tokens and price in the sweep.
    with open(SWEEP) as f:
        text = f.read()
    priced = os.path.join(d, "priced.cfg")
    with open(priced, "w") as f:
        f.write(text.replace('name = "small";',
                             'name = "small";\ntokens = 1e9;\nprice_per_gpu_hour = 2.5;'))
    db2 = os.path.join(d, "priced.db")
    r = run("search", priced, "--db", db2, "--json", cwd=work)
    j = json.loads(r.stdout)
    check(j["sweep"] == "small" and j["tokens"] == 1e9 and len(j["best"]) == 2,
          f"search --json: {j}")
    check(sum(j["candidates"].values()) == 32 == sum(j["in_database"].values()),
          f"search --json counts {j['candidates']}")
    con = sqlite3.connect(db2)
    for b in j["best"]:
        (t, tps) = con.execute("SELECT MIN(iter_s), tokens_per_s FROM candidate WHERE "
                               "status='simulated' AND gpus=?", (b["gpus"],)).fetchone()
        close(b["iter_s"], t, "search --json best")
        close(b["days_to_train"], 1e9 / tps / 86400, "search --json days")
        close(b["cost_to_train"], b["gpus"] * 1e9 / tps / 3600 * 2.5, "search --json cost")
    con.close()
    check(tree(work) == [], f"search --db wrote into the working directory: {tree(work)}")
    print("ok: search --json parses, with days and cost to train")
