#!/usr/bin/env python3
"""prism search and report: expert and context parallelism as knobs
(issue 18).  A
small mixture-of-experts model (4 layers, 8 experts, top 2) on 8 GPUs with
ep = [1, 2, 4, 8] and etp = [1, 2]: every valid combination is stored once
with its ep and etp in their columns (ep x etp must divide tp x dp:
Megatron-LM's MoE parallel folding, stored invalid with the rule when not);
ep 1 etp 1 rows keep the keys of a sweep without the knobs; at a fixed
layout expert parallelism makes each rank hold fewer experts, so its
memory falls with ep; the report's CSV has the ep and etp columns and the
markdown names the layout's ep; a dense model's candidates with ep > 1 are
the same run and not enumerated twice; cp takes its ranks from dp; the
sweep's moe_imbalance slows the expert-parallel candidates.

usage: search_moe.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg,
only for its folder)
"""
import csv
import os
import sqlite3
import sys
import tempfile

from sweeptest import check, prism

PRISM = sys.argv[1]

MODEL = """name = "moe-small";
layers = 4; hidden = 1024; heads = 16; seq = 1024; vocab = 32000;
activation = "swiglu"; positions = "rope"; tie_embeddings = false;
experts = 8; top_k = 2; expert_ffn = 1024; shared_experts = 1; first_dense = 1;
"""

SWEEP = """name = "moe";
model = "{model}";
hw = "h100-dgx";
gpus = [8];
global_batch = 16;
space = {{
  tp = [1, 2];
  sp = [1];
  zero = [1];
  ep = [1, 2, 4, 8];
  etp = [1, 2];
}};
"""

with tempfile.TemporaryDirectory() as d:
    model = os.path.join(d, "moe-small.cfg")
    with open(model, "w") as f:
        f.write(MODEL)
    cfg = os.path.join(d, "moe.cfg")
    with open(cfg, "w") as f:
        f.write(SWEEP.format(model=model))
    db = os.path.join(d, "moe.db")
    prism(PRISM, "search", cfg, "--db", db, "--exhaustive")
    con = sqlite3.connect(db)
    rows = con.execute("SELECT tp, ep, etp, status, reason, mem_gb, key FROM candidate "
                       "ORDER BY tp, ep, etp").fetchall()
    check(len(rows) == 16, f"{len(rows)} rows, want 2 tp x 4 ep x 2 etp")
    sim = [r for r in rows if r[3] == "simulated"]
    bad = [r for r in rows if r[3] == "invalid"]
    # tp 1: ep x etp must divide dp 8 (ep 8 etp 2 does not); tp 2, dp 4:
    # it must divide 8 too.
    check(len(bad) == 2 and all("must divide tp" in r[4] for r in bad),
          f"invalid rows: {bad}")
    check(len(sim) == 14, f"{len(sim)} simulated")
    plain = [r for r in rows if r[1] == 1 and r[2] == 1]
    check(all(";ep=" not in r[6] for r in plain), "ep 1 etp 1 keys changed")
    check(all(f";ep={r[1]};etp={r[2]}" in r[6] for r in rows if r[1] > 1 or r[2] > 1),
          "ep and etp missing from keys")
    mem = {(r[0], r[1], r[2]): r[5] for r in sim}
    check(mem[(1, 1, 1)] > mem[(1, 2, 1)] > mem[(1, 4, 1)] > mem[(1, 8, 1)],
          f"memory does not fall with ep: {mem}")
    con.close()
    out = os.path.join(d, "report")
    prism(PRISM, "report", db, "--csv-all=" + os.path.join(d, "all.csv"), "-o", out)
    with open(os.path.join(d, "all.csv")) as f:
        head = next(csv.reader(f))
    check("ep" in head and "etp" in head, f"CSV header without ep, etp: {head}")
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    check(", ep " in md, "the report's layouts do not name ep")
    # The sweep's moe_imbalance loads the busiest expert for every
    # candidate: slower wherever experts are spread (ep > 1).  On the
    # model at hidden 4096 and 4,096 tokens a sequence, whose experts the
    # GPU decides (moe-small's steps are host-bound at eager's 26.6 us a
    # kernel: the busiest expert's extra work hides under the launches).
    big = os.path.join(d, "moe-big.cfg")
    with open(big, "w") as f:
        f.write(MODEL.replace("hidden = 1024; heads = 16; seq = 1024;",
                              "hidden = 4096; heads = 32; seq = 4096;").replace(
                                  "expert_ffn = 1024;", "expert_ffn = 4096;"))
    plain_cfg = os.path.join(d, "plain.cfg")
    with open(plain_cfg, "w") as f:
        f.write(SWEEP.format(model=big).replace('name = "moe"', 'name = "plain"'))
    dbp = os.path.join(d, "plain.db")
    prism(PRISM, "search", plain_cfg, "--db", dbp, "--exhaustive")
    imb = os.path.join(d, "imb.cfg")
    with open(imb, "w") as f:
        f.write(SWEEP.format(model=big).replace('name = "moe"', 'name = "imb"').replace(
            "global_batch = 16;", "global_batch = 16; moe_imbalance = 1.5;"))
    dbi = os.path.join(d, "imb.db")
    prism(PRISM, "search", imb, "--db", dbi, "--exhaustive")
    q = ("SELECT key, iter_s FROM candidate WHERE status = 'simulated' AND ep = 8 "
         "AND etp = 1 AND tp = 1")
    a = dict(sqlite3.connect(dbp).execute(q).fetchall())
    b = dict(sqlite3.connect(dbi).execute(q).fetchall())
    check(len(a) == 1 and a.keys() == b.keys() and all(b[k] > a[k] for k in a),
          f"imbalance 1.5 not slower: {a} {b}")
    print(f"ok: imbalance 1.5 slows ep 8 from {list(a.values())[0] * 1e3:.3f} to "
          f"{list(b.values())[0] * 1e3:.3f} ms")
    # A dense model: ep lists past their first value are the same run.
    dense = os.path.join(d, "dense.cfg")
    with open(dense, "w") as f:
        f.write(SWEEP.format(model="gpt-small").replace('name = "moe"', 'name = "dense"'))
    db2 = os.path.join(d, "dense.db")
    prism(PRISM, "search", dense, "--db", db2, "--exhaustive")
    n = sqlite3.connect(db2).execute("SELECT COUNT(*) FROM candidate").fetchone()[0]
    check(n == 2, f"{n} dense rows, want 2 (tp 1 and 2)")
    # Context parallelism: cp ranks come from dp (dp = gpus / (tp x pp x
    # cp)); stored, keyed, reported; the activations per GPU halve with cp 2.
    cpc = os.path.join(d, "cp.cfg")
    with open(cpc, "w") as f:
        f.write(SWEEP.format(model="gpt-small").replace('name = "moe"', 'name = "cp"').replace(
            "ep = [1, 2, 4, 8];", "cp = [1, 2, 4];").replace("etp = [1, 2];", ""))
    db3 = os.path.join(d, "cp.db")
    prism(PRISM, "search", cpc, "--db", db3, "--exhaustive")
    con = sqlite3.connect(db3)
    rows = con.execute("SELECT tp, cp, dp, status, key, mem_activations_gb FROM candidate "
                       "ORDER BY tp, cp").fetchall()
    con.close()
    check(len(rows) == 6 and all(r[3] == "simulated" for r in rows), f"cp rows: {rows}")
    check(all(r[0] * r[1] * r[2] == 8 for r in rows), f"dp not gpus / (tp x cp): {rows}")
    check(all((";cp=" in r[4]) == (r[1] > 1) for r in rows), "cp in the keys")
    act = {(r[0], r[1]): r[5] for r in rows}
    check(abs(act[(1, 2)] - act[(1, 1)] / 2) < 1e-6 * act[(1, 1)],
          f"activations with cp 2: {act}")
    out = os.path.join(d, "cpreport")
    prism(PRISM, "report", db3, "--csv-all=" + os.path.join(d, "cp.csv"), "-o", out)
    with open(os.path.join(d, "cp.csv")) as f:
        check("cp" in next(csv.reader(f)), "no cp column in the CSV")
print("search: ep, etp and cp swept, stored, keyed and reported")
