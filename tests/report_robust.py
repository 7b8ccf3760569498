#!/usr/bin/env python3
"""prism report's decisions on a database with known rows: the best of
each family (with or without a pipeline, ZeRO stage, TP degree) per GPU
count, and whether the best stays best when kernels run 10 % slower or
communication overlaps 20 % less, re-timed from each row's breakdown --
every figure worked by hand below -- in report.md and --json; the chart's
cost axis from zero and its days-to-train labels.

usage: report_robust.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import csv
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check, sweep_for

PRISM, SWEEP = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])

# key, gpus, tp, pp, dp, zero, iteration ms, and the breakdown in ms
# (exposed compute, exposed communication, overlap, idle; None: not
# stored).  By hand, kernels +10 %: t + 0.1 (compute + overlap + idle);
# overlap -20 %: t + 0.2 overlap.
#   8 GPUs  a: 10 + 0.1 x 9 = 10.9;   10 + 0.2 x 3    = 10.6
#           b: 10.5 + 1.05  = 11.55;  10.5 + 0.2 x .25 = 10.55  <- wins
#           c: 12 + 1.2     = 13.2;   12
#     kernels: a stays, 11.55 / 10.9 - 1 = 5.963 % ahead;
#     overlap: b best, a 10.6 / 10.55 - 1 = 0.474 % behind it.
#  16 GPUs  d: 4 + 0.3 = 4.3;  4 + 0.1 = 4.1
#           e: 4.2 + 0.42 = 4.62;  4.2
#     d stays: 4.62 / 4.3 - 1 = 7.442 %, 4.2 / 4.1 - 1 = 2.439 % ahead.
#  32 GPUs  g: no breakdown: n/a.
# Families: 8 GPUs no pipeline a, pipeline c (+20 %); ZeRO 0 a, 1 c;
# tp 1 a, tp 2 b (+5 %).  16 GPUs pipeline d, no pipeline e (+5 %); ZeRO 0
# d, 1 e; tp 8 d, tp 2 e.  32 GPUs one of each: none.
ROWS = [
    ("a", 8, 1, 1, 8, 0, 10.0, (6, 1, 3, 0)),
    ("b", 8, 2, 1, 4, 0, 10.5, (9, 0, 0.25, 1.25)),
    ("c", 8, 1, 2, 4, 1, 12.0, (6, 0, 0, 6)),
    ("d", 16, 8, 2, 1, 0, 4.0, (2, 1, 0.5, 0.5)),
    ("e", 16, 2, 1, 8, 1, 4.2, (4.2, 0, 0, 0)),
    ("g", 32, 1, 1, 32, 0, 2.0, None),
]


def close(a, b, what, tol=1e-6):
    check(abs(a - b) <= tol * abs(b), f"{what}: {a}, worked by hand {b}")


with tempfile.TemporaryDirectory() as d:
    db = os.path.join(d, "known.db")
    subprocess.run([PRISM, "search", SWEEP, "--db", db, "--quiet"], check=True, cwd=d,
                   capture_output=True)
    con = sqlite3.connect(db)
    (sid,) = con.execute("SELECT id FROM sweep").fetchone()
    con.execute("UPDATE sweep SET tokens=1e9, price_per_gpu_hour=2")
    con.execute("DELETE FROM candidate")
    for key, gpus, tp, pp, dp, zero, ms, br in ROWS:
        t = ms / 1e3
        br = [x / 1e3 for x in br] if br else [None] * 4
        con.execute(
            "INSERT INTO candidate(sweep, key, gpus, tp, pp, dp, vp, mbs, microbatches,"
            " schedule, recompute, zero, sp, layers, hidden, status, iter_s, bubble,"
            " tokens_per_s, mfu, gpu_hours, mem_gb, fits, exposed_compute_s, exposed_comm_s,"
            " overlap_s, idle_s) VALUES(?,?,?,?,?,?,1,1,8,'1f1b','none',?,0,8,1024,"
            "'simulated',?,0.1,?,0.4,?,10,1,?,?,?,?)",
            (sid, key, gpus, tp, pp, dp, zero, t, 32 * 2048 / t, t * gpus / 3600, *br))
    con.commit()
    con.close()

    out = os.path.join(d, "out")
    r = subprocess.run([PRISM, "report", db, "-o", out], capture_output=True, text=True)
    check(r.returncode == 0, f"report: {r.stderr}")
    md = r.stdout
    for row in ("| 8 | no pipeline | tp 1 pp 1 dp 8, mbs 1 x 8, 1f1b, zero 0 | 10.000 | the best |",
                "| 8 | pipeline | tp 1 pp 2 dp 4, mbs 1 x 8, 1f1b, zero 1 | 12.000 | +20.0% |",
                "| 8 | ZeRO 1 | tp 1 pp 2 dp 4, mbs 1 x 8, 1f1b, zero 1 | 12.000 | +20.0% |",
                "| 8 | tp 2 | tp 2 pp 1 dp 4, mbs 1 x 8, 1f1b, zero 0 | 10.500 | +5.0% |",
                "| 16 | pipeline | tp 8 pp 2 dp 1, mbs 1 x 8, 1f1b, zero 0 | 4.000 | the best |",
                "| 16 | no pipeline | tp 2 pp 1 dp 8, mbs 1 x 8, 1f1b, zero 1 | 4.200 | +5.0% |",
                "| 8 | tp 1 pp 1 dp 8, mbs 1 x 8, 1f1b, zero 0 | stays best (+6.0% ahead) | "
                "**tp 2 pp 1 dp 4, mbs 1 x 8, 1f1b, zero 0** best, by 0.5% |",
                "| 16 | tp 8 pp 2 dp 1, mbs 1 x 8, 1f1b, zero 0 | stays best (+7.4% ahead) | "
                "stays best (+2.4% ahead) |",
                "| 32 | tp 1 pp 1 dp 32, mbs 1 x 8, 1f1b, zero 0 | n/a (no breakdown stored) | "
                "n/a (no breakdown stored) |"):
        check(row in md, f"report.md has no row\n{row}\n{md}")
    check("| 32 | ZeRO" not in md and "| 32 | tp 1 |" not in md, "a family of one value listed")
    best = [l for l in md.splitlines() if re.match(r"\| (8|16|32) \| tp ", l)][:3]
    check([b.rsplit("|", 2)[1].strip() for b in best] == ["no (overlap -20 %)", "yes", "n/a"],
          f"robust column: {best}")
    print("ok: best of each family and robustness in report.md, as worked by hand")
    with open(os.path.join(out, "best.csv")) as f:
        rob = [(int(b["gpus"]), b["robust"]) for b in csv.DictReader(f)]
    check(rob == [(8, "overlap"), (16, "yes"), (32, "")], f"best.csv robust: {rob}")

    r = subprocess.run([PRISM, "report", db, "-o", out, "--json"], capture_output=True,
                       text=True)
    j = {b["gpus"]: b for b in json.loads(r.stdout)["best"]}
    k8, o8 = j[8]["robust"]["kernels_10pct_slower"], j[8]["robust"]["overlap_20pct_less"]
    check(k8["stays"] and k8["best_key"] == "a" and not o8["stays"] and o8["best_key"] == "b",
          f"json robust 8: {j[8]['robust']}")
    close(k8["margin"], 11.55 / 10.9 - 1, "kernels margin")
    close(k8["best_iter_s"], 10.9e-3, "kernels a")
    close(o8["margin"], 10.6 / 10.55 - 1, "overlap margin")
    close(o8["best_iter_s"], 10.55e-3, "overlap b")
    close(j[16]["robust"]["overlap_20pct_less"]["margin"], 4.2 / 4.1 - 1, "16 overlap margin")
    check(j[32]["robust"] == {"kernels_10pct_slower": None, "overlap_20pct_less": None},
          f"json robust 32 {j[32]['robust']}")
    fam = [(f["family"], f["value"], f["key"]) for f in j[16]["families"]]
    check(fam == [("pipeline", 1, "d"), ("pipeline", 0, "e"), ("zero", 0, "d"), ("zero", 1, "e"),
                  ("tp", 8, "d"), ("tp", 2, "e")], f"json families 16: {fam}")
    close(j[8]["families"][1]["vs_best"], 0.2, "json vs_best")
    print("ok: families and robustness in --json")

    # The chart: cost from zero, days to train beside the time axis
    # (1e9 tokens at 65,536 an iteration: 1.7661e-4 days per ms).
    svg = os.path.join(out, "pareto.svg")
    if shutil.which("gnuplot"):
        with open(svg) as f:
            texts = re.findall(r'<tspan font-family="[^"]*" >([^<]*)', f.read())
        check("10 (0.00177 d)" in texts and "1 (0.000177 d)" in texts,
              f"days to train beside the time ticks: {texts}")
        check("iteration time, ms (days to train), log scale" in texts, f"ylabel: {texts}")
        check("0.0" in texts, f"the cost axis does not start at zero: {texts}")
        print("ok: the chart's cost axis from zero, days to train beside its times")
    else:
        print("skip: the chart (no gnuplot)")

# The first-order estimate against a re-simulation: the small sweep's best
# at each GPU count with every kernel class 10 % slower (synth --eff), its
# time within 1 % of the report's kernels_10pct_slower (measured when
# written: 0.1-0.6 % on the small sweep's layouts).  The sweep's space on
# GPT-3 1.3B, whose steps the GPU decides: the rule lengthens the idle
# time with the kernels, which a host-bound step's is not (gpt-small's at
# eager's 26.6 us a kernel: 1.4 % over its re-simulation at 8 GPUs).
with tempfile.TemporaryDirectory() as d:
    big, _ = sweep_for(SWEEP, "gpt3-1.3b", d, "big.cfg")
    db = os.path.join(d, "big.db")
    subprocess.run([PRISM, "search", big, "--db", db, "--quiet"], check=True, cwd=d,
                   capture_output=True)
    r = subprocess.run([PRISM, "report", db, "-o", os.path.join(d, "big"), "--json"],
                       check=True, capture_output=True, text=True)
    slow = ",".join(f"{c}={1 / 1.1:.9f}" for c in ("gemm", "attention", "norm", "softmax",
                                                   "elementwise", "embedding", "optimizer"))
    for b in json.loads(r.stdout)["best"]:
        k = b["robust"]["kernels_10pct_slower"]
        lay = b["best"]["layout"] if k["stays"] else None
        check(lay, f"{b['gpus']} GPUs: the small sweep's best flips: {k}")
        args = [f"--{x}={lay[x]}" for x in ("tp", "pp", "dp", "mbs", "microbatches", "schedule")]
        s = subprocess.run([PRISM, "synth", "gpt3-1.3b", "--hw", "h100-dgx", "--json", "--eff",
                            slow, *args], check=True, capture_output=True, text=True)
        resim = json.loads(s.stdout)["iteration_s"]
        close(k["best_iter_s"], resim, f"{b['gpus']} GPUs: first order against re-simulated",
              tol=0.01)
        print(f"{b['gpus']} GPUs: first order {k['best_iter_s'] * 1e3:.3f} ms, "
              f"re-simulated {resim * 1e3:.3f} ms")
    print("ok: kernels 10 % slower, first order within 1 % of a re-simulation")
    # At 8 GPUs GPipe and 1F1B without a pipeline run in the same time (more
    # memory: not collapsed): the best stays best by the tie alone.  With
    # each layer a CUDA graph launch: under eager's host, once GH100's bf16
    # GEMMs took their device fixed cost (docs/MODEL.md), 1F1B's F B F B
    # idles 31 us more than GPipe's F F B B at this small model (GPipe
    # 0.2 % ahead, a tie no longer); with graphs both run 16.267 ms.
    graphs = os.path.join(d, "small-graphs.cfg")
    with open(SWEEP) as f, open(graphs, "w") as g:
        g.write(f.read().replace("space = {", 'space = {\n  exec = ["graphs"];', 1))
    db = os.path.join(d, "small.db")
    subprocess.run([PRISM, "search", graphs, "--db", db, "--quiet"], check=True, cwd=d,
                   capture_output=True)
    subprocess.run([PRISM, "report", db, "-o", os.path.join(d, "out")], check=True,
                   capture_output=True, text=True)
    with open(os.path.join(d, "out", "report.md")) as f:
        md = f.read()
    check("| 8 | tp 1 pp 1 dp 8, mbs 2 x 2, 1f1b, zero 0 | stays best (tied with the next) |"
          in md, "a tie kept by order alone is not said:\n" + md)
    print("ok: a best kept by a tie says so")
