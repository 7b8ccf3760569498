#!/usr/bin/env python3
"""A sweep over hardware profiles (each GPU at its own price) and sequence
length (space.seq): every candidate once, keyed by its profile and seq,
each row the time `prism synth` gives that profile and seq; the report
ranks each setting apart and compares them by throughput and cost per
token, each at its own price; a single-profile sweep keeps its keys; bad
lists are refused.

usage: search_hwseq.py PRISM SWEEP   (SWEEP: tests/data/sweeps/hwseq.cfg)
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check, prism, refused

PRISM, SWEEP = sys.argv[1], sys.argv[2]
PRICE = {"h100-dgx": 2.5, "b200-dgx": 4.0}
TOKENS, GBS = 1e9, 32

with tempfile.TemporaryDirectory() as d:
    db = os.path.join(d, "hs.db")
    prism(PRISM, "search", SWEEP, "--db", db, "--exhaustive")
    con = sqlite3.connect(db)
    rows = con.execute("SELECT key, hw, price_per_gpu_hour, seq, gpus, tp, dp, microbatches,"
                       " iter_s, tokens_per_s, status FROM candidate ORDER BY key").fetchall()
    hw_col = con.execute("SELECT hw FROM sweep").fetchone()[0]
    con.close()
    # 2 profiles x 2 counts x 2 seq x 2 tp, all simulated.
    check(len(rows) == 16 and all(r[10] == "simulated" for r in rows), f"{len(rows)} rows")
    check(hw_col == "h100-dgx,b200-dgx", f"sweep.hw {hw_col!r}")
    seen = set()
    for key, hw, price, seq, gpus, tp, dp, mb, it, tps, _ in rows:
        check(key.startswith(f"hw={hw};gpus={gpus};") and key.endswith(f";seq={seq}"), key)
        check(price == PRICE[hw], f"{key}: price {price}")
        seen.add((hw, seq, gpus, tp))
        # tokens/s: the global batch's tokens over the step.
        check(abs(tps - GBS * seq / it) <= 1e-6 * tps, f"{key}: {tps} tokens/s, step {it}")
    check(len(seen) == 16, "a setting or layout missing")
    # Screening compares a candidate with its own setting's best only: the
    # default mode and --optimise find every setting's exhaustive best at
    # every count (a B200's time screened no H100 candidate).
    def best(path):
        con = sqlite3.connect(path)
        out = dict(((hw, seq, g), t) for hw, seq, g, t in con.execute(
            "SELECT hw, seq, gpus, MIN(iter_s) FROM candidate WHERE status='simulated'"
            " GROUP BY hw, seq, gpus"))
        con.close()
        return out
    want = best(db)
    check(len(want) == 8, str(want))
    for mode in ([], ["--optimise"]):
        sdb = os.path.join(d, f"screen{len(mode)}.db")
        prism(PRISM, "search", SWEEP, "--db", sdb, *mode)
        check(best(sdb) == want, f"{mode or 'default'}: {best(sdb)} against {want}")
    # search --json: the best of each setting at each count.
    js = json.loads(prism(PRISM, "search", SWEEP, "--db", db, "--exhaustive", "--json").stdout)
    got = {(b["hw"], b["seq"], b["gpus"]): b["iter_s"] for b in js["best"]}
    check(got.keys() == want.keys() and
          all(abs(got[k] / want[k] - 1) < 1e-8 for k in want), str(js["best"]))
    for b in js["best"]:
        cost = TOKENS / b["tokens_per_s"] * b["gpus"] / 3600 * PRICE[b["hw"]]
        check(abs(b["cost_to_train"] / cost - 1) < 1e-5, f"{b}: by hand {cost}")
    # Each row is the step synth gives that profile and seq, to the ns.
    for hw, seq in (("b200-dgx", 2048), ("h100-dgx", 1024)):
        key, *_, gpus, tp, dp, mb, it, _, _ = next(
            r for r in rows if r[1] == hw and r[3] == seq and r[4] == 8 and r[5] == 2)
        s = json.loads(prism(PRISM, "synth", "gpt-small", "--hw", hw, "--seq", str(seq), "--tp",
                             str(tp), "--dp", str(dp), "--microbatches", str(mb),
                             "--json").stdout)
        check(abs(s["iteration_s"] - it) < 1.5e-9, f"{key}: {it} s, synth {s['iteration_s']}")

    # The report: each setting ranked apart, each at its own price.
    out = os.path.join(d, "rep")
    rep = json.loads(prism(PRISM, "report", db, "-o", out, "--json").stdout)
    best = rep["best"]
    check(len(best) == 8, f"{len(best)} best rows")
    for b in best:
        r = b["best"]
        hw, seq = r["hw"], r["layout"]["seq"]
        mine = [x for x in rows if x[1] == hw and x[3] == seq and x[4] == b["gpus"]]
        check(abs(r["iter_s"] / min(x[8] for x in mine) - 1) < 1e-8, f"{hw} seq {seq} {b['gpus']}: not the best")
        cost = TOKENS / r["tokens_per_s"] * b["gpus"] / 3600 * PRICE[hw]
        check(r["price_per_gpu_hour"] == PRICE[hw] and abs(r["cost_to_train"] / cost - 1) < 1e-6,
              f"{hw}: cost {r['cost_to_train']}, by hand {cost}")
        # The time front is per setting: its smallest count is on it.
        check(b["pareto_time"] or b["gpus"] != 8, f"{hw} seq {seq}: 8 GPUs off its front")
    md = prism(PRISM, "report", db, "-o", out).stdout
    table = md.split("## Settings compared")[1].split("\n\n")[1].splitlines()[2:]
    check(len(table) == 8, "\n".join(table))
    # At 16 GPUs the fastest by throughput is first, at +0.0 %.
    at16 = [l for l in table if l.startswith("| 16 |")]
    fast = max((b["best"] for b in best if b["gpus"] == 16), key=lambda r: r["tokens_per_s"])
    check(f"| {fast['hw']}, seq {fast['layout']['seq']} |" in at16[0] and "| +0.0% |" in at16[0],
          at16[0])
    with open(os.path.join(out, "best.csv")) as f:
        head, first = f.readline().strip().split(","), f.readline().strip().split(",")
    check(head[-3:] == ["hw", "price_per_gpu_hour", "robust"] and "seq" in head, str(head))

    # --export: each setting's best, named, with its sequence length.
    ex = prism(PRISM, "report", db, "-o", out, "--export", "megatron", "--gpus", "8").stdout
    for hw in PRICE:
        for seq in (1024, 2048):
            head = f"# prism report: the best layout of hwseq ({hw}, seq {seq}) at 8 GPUs"
            check(head in ex, head + "\n" + ex[:800])
            block = ex.split(head)[1].split("# prism report:")[0]
            check(f"--seq-length {seq} " in block, block)

    # A one-profile sweep keeps its keys: no profile, no seq in them.
    small = os.path.join(os.path.dirname(SWEEP), "small.cfg")
    sdb = os.path.join(d, "s.db")
    prism(PRISM, "search", small, "--db", sdb, "--exhaustive")
    con = sqlite3.connect(sdb)
    keys = [k for (k,) in con.execute("SELECT key FROM candidate")]
    con.close()
    check(all(k.startswith("gpus=") and "seq=" not in k for k in keys), keys[0])

    # Refused: a price list that does not match, a profile twice.
    with open(SWEEP) as f:
        text = f.read()
    bad = os.path.join(d, "bad.cfg")
    line = next(i for i, l in enumerate(text.splitlines(), 1) if l.startswith("price_per"))
    with open(bad, "w") as f:
        f.write(text.replace("[2.5, 4.0]", "[2.5]"))
    r = subprocess.run([PRISM, "search", bad, "--db", os.path.join(d, "x.db")],
                       capture_output=True, text=True)
    refused(r, f"prism: {bad}:{line}: 'price_per_gpu_hour' lists 1 prices for 2 profiles in "
            "'hw' (one for each, or one number for all)\n", "price list")
    with open(bad, "w") as f:
        f.write(text.replace('"b200-dgx"]', '"h100-dgx"]'))
    r = subprocess.run([PRISM, "search", bad, "--db", os.path.join(d, "x.db")],
                       capture_output=True, text=True)
    refused(r, f"prism: {bad}: 'hw' lists the profile h100-dgx twice\n", "profile twice")
print("search: a hardware x seq sweep keys, prices and ranks each setting apart")
