#!/usr/bin/env python3
"""prism search: screening is safe.  On a space small enough to simulate
exhaustively, the default (screened) run and the --optimise run find the
exhaustive run's best time, and its layout, at every GPU count; every
simulated time is at or above its candidate's proven lower bound; and the
pruned runs simulate fewer candidates.

usage: search_modes.py PRISM SWEEP
"""
import itertools
import os
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check

PRISM, SWEEP = sys.argv[1], sys.argv[2]


def run(db, *mode):
    r = subprocess.run([PRISM, "search", SWEEP, "--db", db, *mode], capture_output=True,
                       text=True)
    check(r.returncode == 0, f"search {' '.join(mode)} exited {r.returncode}: {r.stderr}")
    con = sqlite3.connect(db)
    best = {}
    for gpus, key, t in con.execute("SELECT gpus, key, iter_s FROM candidate WHERE "
                                    "status='simulated' ORDER BY gpus, iter_s, key"):
        best.setdefault(gpus, (t, key))
    n_sim = con.execute("SELECT COUNT(*) FROM candidate WHERE status='simulated'").fetchone()[0]
    below = con.execute("SELECT key, iter_s, bound_s FROM candidate WHERE status='simulated' "
                        "AND NOT (bound_s > 0 AND iter_s >= bound_s)").fetchall()
    total = con.execute("SELECT COUNT(*) FROM candidate").fetchone()[0]
    con.close()
    check(not below, f"{' '.join(mode)}: simulated below (or without) the bound: {below[:3]}")
    return best, n_sim, total


with tempfile.TemporaryDirectory() as d:
    ex, n_ex, total = run(os.path.join(d, "x.db"), "--exhaustive")
    # Every candidate of the space, each once, against a naive enumeration
    # of modes.cfg's lists (vp only with the interleaved schedule).
    if os.path.basename(SWEEP) == "modes.cfg":
        want = sorted((g, t, p, b, s, 2 if s == "interleaved" else 1, r)
                      for g, t, p, b, s, r in itertools.product(
                          [8, 16, 32], [1, 2, 4], [1, 2, 4], [1, 2],
                          ["gpipe", "1f1b", "interleaved"], ["none", "full"]))
        con = sqlite3.connect(os.path.join(d, "x.db"))
        got = sorted(con.execute("SELECT gpus, tp, pp, mbs, schedule, vp, recompute "
                                 "FROM candidate").fetchall())
        con.close()
        check(got == want, f"candidates: {len(got)} stored, the space has {len(want)}; "
              f"first differences {[x for x in got if x not in want][:3]}")
    check(len(ex) == 3, f"exhaustive run found bests at {sorted(ex)}, expected 3 GPU counts")
    for mode in ([], ["--optimise"]):
        best, n, t = run(os.path.join(d, f"m{len(mode)}.db"), *mode)
        name = " ".join(mode) or "default"
        check(t == total, f"{name}: {t} rows stored, exhaustive {total}")
        check(best == ex, f"{name}: best per GPU count {best} != exhaustive {ex}")
        check(n < n_ex, f"{name}: simulated {n}, no fewer than exhaustive {n_ex}")
        print(f"{name}: same best at {len(ex)} GPU counts as exhaustive, "
              f"{n} of {n_ex} candidates simulated")
