#!/usr/bin/env python3
"""prism search: precision and attention as knobs.  small.cfg with
dtype = ["bf16", "fp8"], fp8_attention = [0, 1] and flash = [1, 0] stores
each combination once, its dtype, fp8_attention and flash in their columns;
the bf16 flash rows keep the keys a sweep without the knobs stores (so old
databases resume); and no fp8 candidate runs twice as fast as its bf16
twin (attention, norms and casts stay bf16).  gpt-small's GEMMs are small
(hidden 768): its fp8 candidates run slower than bf16, the cast kernels and
their launches costing more than the GEMMs save, as torchao measures for
small linears (0.80x at 1024 x 2048 x 1024, ../shared/kernels/other.csv).
And fp8_recipe = ["delayed", "current", "blockwise"] with dtype ["bf16",
"fp8"]: bf16 keeps one candidate (the recipe does not apply), each fp8
recipe its own, keyed fp8r= where not delayed, current scaling (an amax
pass and a scale kernel more per cast) slower than delayed on every pair.

usage: search_knobs.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import os
import sqlite3
import sys
import tempfile

from sweeptest import check, prism, rows

PRISM, SWEEP = sys.argv[1], sys.argv[2]
with open(SWEEP) as f:
    TEXT = f.read()

with tempfile.TemporaryDirectory() as d:
    cfg = os.path.join(d, "knobs.cfg")
    with open(cfg, "w") as f:
        f.write(TEXT.replace('name = "small";', 'name = "knobs";').replace(
            "  mbs = [1, 2];", '  mbs = [1, 2]; dtype = ["bf16", "fp8"]; fp8_attention = [0, 1];'
            " flash = [1, 0];"))
    plain, knobs = os.path.join(d, "plain.db"), os.path.join(d, "knobs.db")
    prism(PRISM, "search", SWEEP, "--db", plain, "--exhaustive")
    prism(PRISM, "search", cfg, "--db", knobs, "--exhaustive")
    a, b = rows(plain), rows(knobs)
    check(len(b) == 8 * len(a), f"{len(b)} rows with the knobs, {len(a)} without")
    con = sqlite3.connect(knobs)
    combos = con.execute("SELECT DISTINCT dtype, fp8_attention, flash FROM candidate").fetchall()
    check(len(combos) == 8, f"combinations stored: {combos}")
    old = {r[0] for r in sqlite3.connect(plain).execute("SELECT key FROM candidate")}
    same = {r[0] for r in con.execute("SELECT key FROM candidate WHERE dtype='bf16' AND "
                                      "fp8_attention=0 AND flash=1")}
    check(old == same, "the bf16 flash keys differ from a sweep without the knobs")
    pairs = con.execute(
        "SELECT a.iter_s, b.iter_s FROM candidate a JOIN candidate b ON "
        "a.gpus=b.gpus AND a.tp=b.tp AND a.pp=b.pp AND a.mbs=b.mbs AND a.schedule=b.schedule "
        "WHERE a.status='simulated' AND b.status='simulated' AND a.dtype='bf16' AND "
        "b.dtype='fp8' AND a.fp8_attention=0 AND b.fp8_attention=0 AND a.flash=1 AND "
        "b.flash=1").fetchall()
    con.close()
    check(pairs, "no simulated bf16/fp8 pairs")
    ratios = [x / y for x, y in pairs]
    check(all(0.5 < r < 2 for r in ratios) and any(abs(r - 1) > 0.01 for r in ratios),
          f"fp8 speed-ups out of (0.5, 2) or all 1: {ratios}")
    print(f"knobs: {len(b)} rows, 8 combinations; fp8 speed-up "
          f"{min(ratios):.3f}..{max(ratios):.3f} over {len(pairs)} pairs")

    rec = os.path.join(d, "recipes.cfg")
    with open(rec, "w") as f:
        f.write(TEXT.replace('name = "small";', 'name = "recipes";').replace(
            "  mbs = [1, 2];", '  mbs = [1, 2]; dtype = ["bf16", "fp8"];'
            ' fp8_recipe = ["delayed", "current", "blockwise"];'))
    rdb = os.path.join(d, "recipes.db")
    prism(PRISM, "search", rec, "--db", rdb, "--exhaustive")
    con = sqlite3.connect(rdb)
    counts = dict(((r[0], r[1]), r[2]) for r in con.execute(
        "SELECT dtype, fp8_recipe, COUNT(*) FROM candidate GROUP BY 1, 2"))
    check(set(counts) == {("bf16", "delayed"), ("fp8", "delayed"), ("fp8", "current"),
                          ("fp8", "blockwise")} and len(set(counts.values())) == 1,
          f"recipe rows: {counts}")
    keys = [r[0] for r in con.execute("SELECT key FROM candidate WHERE fp8_recipe='current'")]
    check(keys and all(";fp8r=current" in k for k in keys), f"current keys: {keys[:2]}")
    slower = con.execute(
        "SELECT a.iter_s, b.iter_s FROM candidate a JOIN candidate b ON a.gpus=b.gpus AND "
        "a.tp=b.tp AND a.pp=b.pp AND a.mbs=b.mbs AND a.schedule=b.schedule WHERE "
        "a.status='simulated' AND b.status='simulated' AND a.dtype='fp8' AND b.dtype='fp8' "
        "AND a.fp8_recipe='delayed' AND b.fp8_recipe='current'").fetchall()
    con.close()
    check(slower and all(y > x for x, y in slower), f"current not slower: {slower[:3]}")
    print(f"recipes: {sum(counts.values())} rows; current over delayed "
          f"{min(y / x for x, y in slower):.3f}..{max(y / x for x, y in slower):.3f}")
