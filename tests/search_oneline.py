#!/usr/bin/env python3
"""The one-line search: `prism search --model M --hw H --gpus LIST --gbs N`
writes the sweep file it runs (results/M-H.cfg, or --sweep-file) and runs
it; the file run again is the same sweep (resumed, nothing added); what
it cannot make is refused.

usage: search_oneline.py PRISM
"""
import os
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check, prism

PRISM = os.path.abspath(sys.argv[1])

with tempfile.TemporaryDirectory() as d:
    r = subprocess.run([PRISM, "search", "--model", "gpt-small", "--hw", "h100-dgx", "--gpus",
                        "8,16", "--gbs", "32", "--tokens", "1e9", "--price", "2.5", "--threads",
                        "1"], capture_output=True, text=True, cwd=d)
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    cfg = os.path.join(d, "results", "gpt-small-h100-dgx.cfg")
    db = os.path.join(d, "results", "gpt-small-h100-dgx.db")
    check(r.stderr.startswith("prism search: wrote the sweep results/gpt-small-h100-dgx.cfg\n"),
          r.stderr)
    with open(cfg) as f:
        text = f.read()
    for line in ('name = "gpt-small-h100-dgx";', 'model = "gpt-small";', 'hw = "h100-dgx";',
                 "gpus = [8, 16];", "global_batch = 32;", "tokens = 1000000000;",
                 "price_per_gpu_hour = 2.5;", "  tp = [1, 2, 4, 8];", "  zero = [0, 1];"):
        check(line in text.splitlines(), f"{line!r} not in the sweep file:\n{text}")
    # 2 counts x tp 4 x pp 4 x mbs 3 x (1f1b, interleaved vp 2) x recompute 3
    # x zero 2 x sp 2, less sp 1 with tp 1 (the same candidate as sp 0):
    # 2304 - 2 x 4 x 3 x 2 x 3 x 2 = 2016.
    con = sqlite3.connect(db)
    n, tokens, price = con.execute("SELECT (SELECT COUNT(*) FROM candidate), tokens, "
                                   "price_per_gpu_hour FROM sweep").fetchone()
    con.close()
    check((n, tokens, price) == (2016, 1e9, 2.5), f"{n} rows, tokens {tokens}, price {price}")
    # The file it wrote is the sweep it ran.
    r = prism(PRISM, "search", cfg, "--db", db)
    check("2016 stored before: resuming), 0 to evaluate" in r.stderr, r.stderr)
    # --sweep-file and --name; a model given by path is written absolute.
    model = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "configs", "models", "gpt-small.cfg")
    own = os.path.join(d, "own.cfg")
    r = subprocess.run([PRISM, "search", "--model", os.path.relpath(model, d), "--hw",
                        "h100-dgx", "--gpus", "8", "--gbs", "8", "--name", "mine",
                        "--sweep-file", own, "--db", os.path.join(d, "own.db")],
                       capture_output=True, text=True, cwd=d)
    check(r.returncode == 0, r.stderr)
    with open(own) as f:
        text = f.read()
    check(f'model = "{model}";' in text and 'name = "mine";' in text, text)
    # Refused: half the settings, a sweep file as well, a bad list.
    for args, want in (
            (["--model", "gpt-small", "--gpus", "8"],
             "prism: --model needs --hw, --gpus and --gbs (prism search --help)\n"),
            (["x.cfg", "--model", "gpt-small"],
             "prism search: give a SWEEP file, or --model with --hw, --gpus and --gbs (not "
             "both)\n"),
            (["--model", "gpt-small", "--hw", "h100-dgx", "--gpus", "8,", "--gbs", "8"],
             "prism: --gpus '8,': a count after each comma\n"),
            (["--model", "gpt-small", "--hw", "h100-dgx", "--gpus", "8,x", "--gbs", "8"],
             "prism: --gpus 'x': expected a whole number in 1..16777216\n")):
        r = subprocess.run([PRISM, "search", *args], capture_output=True, text=True, cwd=d)
        check(r.returncode == 2 and r.stderr == want, f"{args}: {r.returncode} {r.stderr!r}")
print("search: the one-line search writes the sweep it runs; run again, it resumes")
