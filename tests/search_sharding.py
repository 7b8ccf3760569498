#!/usr/bin/env python3
"""prism search explores placement and sharding (issue 17): sharding.cfg
sweeps ZeRO 0..3, even and balanced partitions, the whole data-parallel
group or hybrid groups of 8, prefetch 1 and 0.  Checked: each candidate once,
knobs that do not apply not enumerated twice (partition with pp 1, shard
without ZeRO, prefetch below ZeRO-3); ZeRO 1, 2 and 3 give three different
step times for one layout (2 reduce-scatters every microbatch, 3 gathers
every layer twice); ZeRO-3 without prefetch is slower than with it; a
balanced two-stage pipeline stores its layers per stage; every candidate
with a layout stores its memory breakdown, and the sharded ones need less.

usage: search_sharding.py PRISM SWEEP   (SWEEP: tests/data/sweeps/sharding.cfg)
"""
import os
import sqlite3
import sys
import tempfile

from sweeptest import check, prism, rows

PRISM, SWEEP = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as d:
    db = os.path.join(d, "s.db")
    prism(PRISM, "search", SWEEP, "--db", db, "--exhaustive")
    all_rows = rows(db)
    con = sqlite3.connect(db)
    q = lambda sql: con.execute(sql).fetchall()
    # pp 1: zero 0 x 1 + zero 1, 2 x 2 shards + zero 3 x 2 shards x 2
    # prefetch = 1 + 4 + 4 = 9; pp 2: twice that for the partitions.
    check(len(all_rows) == 27, f"{len(all_rows)} candidates, want 27")
    t = {}
    for z, it in q("SELECT zero, iter_s FROM candidate WHERE pp=1 AND shard=16 AND prefetch=1 "
                   "AND status='simulated'"):
        t[z] = it
    check(set(t) == {0, 1, 2, 3}, f"ZeRO stages simulated: {sorted(t)}")
    check(len({round(t[z], 9) for z in (1, 2, 3)}) == 3, f"ZeRO 1, 2, 3 alike: {t}")
    check(t[3] > t[1], f"ZeRO-3 not slower than ZeRO-1: {t}")
    p0 = q("SELECT iter_s FROM candidate WHERE pp=1 AND zero=3 AND shard=16 AND prefetch=0")
    check(p0 and p0[0][0] > t[3], f"ZeRO-3 without prefetch {p0} not slower than with {t[3]}")
    parts = [r[0] for r in q("SELECT DISTINCT partition FROM candidate WHERE pp=2")]
    check("even" in parts and any("," in p for p in parts), f"partitions stored: {parts}")
    nomem = q("SELECT COUNT(*) FROM candidate WHERE status!='invalid' AND mem_weights_gb IS NULL")
    check(nomem[0][0] == 0, f"{nomem[0][0]} candidates without a memory breakdown")
    m = dict(q("SELECT zero, mem_weights_gb + mem_grads_gb + mem_optimizer_gb FROM candidate "
               "WHERE pp=1 AND shard=16 AND prefetch=1"))
    check(m[0] > m[1] > m[2] > m[3], f"model states by ZeRO stage: {m}")
    hyb = q("SELECT mem_optimizer_gb FROM candidate WHERE pp=1 AND zero=1 AND shard=8")
    full = q("SELECT mem_optimizer_gb FROM candidate WHERE pp=1 AND zero=1 AND shard=16")
    check(hyb and full and abs(hyb[0][0] / full[0][0] - 2) < 1e-9,
          f"hybrid sharding over 8 holds {hyb} of optimizer state, the whole group {full}")
    con.close()
    print(f"sharding: {len(all_rows)} candidates; ZeRO 0..3 "
          + ", ".join(f"{t[z] * 1e3:.3f} ms" for z in sorted(t)))
