#!/usr/bin/env python3
"""prism report on a database with known rows: the best layout of each GPU
count, the Pareto front of iteration time against GPU count (a count is on
it when its best is faster than every smaller count's: non-dominated), and
the chart, which must convert to PNG with rsvg-convert.

usage: report_pareto.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import csv
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check

PRISM, SWEEP = sys.argv[1], sys.argv[2]

# gpus, tp, pp, iteration s: the best of each count is the first listed.
ROWS = [
    (8, 1, 1, 0.010), (8, 2, 1, 0.012), (8, 1, 2, 0.0125),
    (16, 2, 1, 0.006), (16, 1, 1, 0.007),
    (32, 4, 1, 0.007), (32, 1, 2, 0.009),   # slower than 16: dominated
    (64, 2, 2, 0.003), (64, 1, 1, 0.0031),
    (128, 8, 1, 0.0035),                    # slower than 64: dominated
]
BEST = {8: (1, 1), 16: (2, 1), 32: (4, 1), 64: (2, 2), 128: (8, 1)}
FRONT = {8, 16, 64}
FRONT_HOURS = {8}  # GPU-hours grow with the count here: only the smallest


with tempfile.TemporaryDirectory() as d:
    db = os.path.join(d, "known.db")
    r = subprocess.run([PRISM, "search", SWEEP, "--db", db], capture_output=True, text=True)
    check(r.returncode == 0, f"search exited {r.returncode}: {r.stderr}")
    con = sqlite3.connect(db)
    (sid,) = con.execute("SELECT id FROM sweep").fetchone()
    con.execute("DELETE FROM candidate")
    for i, (gpus, tp, pp, t) in enumerate(ROWS):
        dp = gpus // (tp * pp)
        con.execute(
            "INSERT INTO candidate(sweep, key, gpus, tp, pp, dp, vp, mbs, microbatches,"
            " schedule, recompute, zero, sp, layers, hidden, status, iter_s, bubble,"
            " tokens_per_s, mfu, gpu_hours, mem_gb, fits) VALUES(?,?,?,?,?,?,1,1,4,'1f1b',"
            "'none',0,0,8,1024,'simulated',?,0.1,?,0.4,?,20,1)",
            (sid, f"row{i}", gpus, tp, pp, dp, t, 32 * 1024 / t, t * gpus / 3600))
    con.execute("INSERT INTO candidate(sweep, key, gpus, status, reason) "
                "VALUES(?, 'bad', 8, 'invalid', 'made up')", (sid,))
    con.commit()
    con.close()
    out = os.path.join(d, "report")
    r = subprocess.run([PRISM, "report", db, "-o", out], capture_output=True, text=True)
    check(r.returncode == 0, f"report exited {r.returncode}: {r.stderr}")
    with open(os.path.join(out, "best.csv")) as f:
        best = list(csv.DictReader(f))
    check([int(b["gpus"]) for b in best] == sorted(BEST), f"counts {[b['gpus'] for b in best]}")
    for b in best:
        g = int(b["gpus"])
        check((int(b["tp"]), int(b["pp"])) == BEST[g], f"{g} GPUs: best {b}")
    front = {int(b["gpus"]) for b in best if b["pareto_time"] == "1"}
    check(front == FRONT, f"time front {sorted(front)}, expected {sorted(FRONT)}")
    # Non-dominated, checked independently: no other count has at most as
    # many GPUs and a lower time.
    t = {int(b["gpus"]): float(b["iter_s"]) for b in best}
    for g in front:
        check(not any(h < g and t[h] <= t[g] for h in t), f"{g} GPUs is dominated")
    for g in set(t) - front:
        check(any(h < g and t[h] <= t[g] for h in t), f"{g} GPUs is left off but not dominated")
    hfront = {int(b["gpus"]) for b in best if b["pareto_gpu_hours"] == "1"}
    check(hfront == FRONT_HOURS, f"GPU-hours front {sorted(hfront)}")
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    check("Candidates: invalid 1; simulated 10;" in md, "report.md counts: " + md[:200])
    check("| 16 | tp 2 pp 1 dp 8, mbs 1 x 4, 1f1b, zero 0 | 6.000 |" in md,
          "report.md best row for 16 GPUs")
    svg = os.path.join(out, "pareto.svg")
    check(os.path.getsize(svg) > 1000, "pareto.svg missing or empty")
    if not shutil.which("rsvg-convert"):
        sys.exit("FAIL: rsvg-convert not installed (scripts/deps installs librsvg2-bin)")
    png = os.path.join(d, "pareto.png")
    r = subprocess.run(["rsvg-convert", "-o", png, svg], capture_output=True, text=True)
    check(r.returncode == 0, f"rsvg-convert: {r.stderr}")
    with open(png, "rb") as f:
        head = f.read(24)
    check(head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG")
    w, h = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    check((w, h) == (800, 500), f"PNG is {w}x{h}, the chart is 800x500")
    print(f"report: best of {len(BEST)} GPU counts, time front {sorted(FRONT)}, "
          f"GPU-hours front {sorted(FRONT_HOURS)}; chart converts to an {w}x{h} PNG")
