#!/usr/bin/env python3
"""The lower bound stays a bound on the default sweep: every candidate that
prism search simulates in configs/sweeps/gpt3-1.3b-h100.cfg has its
simulated time at or above synth_lower_bound (bound_s > 0 and iter_s >=
bound_s).  About 11 s on two cores; registered in the release build only.

usage: search_default_bound.py PRISM SWEEP
"""
import os
import sqlite3
import sys
import tempfile

from sweeptest import check, prism

PRISM, SWEEP = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as d:
    db = os.path.join(d, "default.db")
    prism(PRISM, "search", SWEEP, "--db", db)
    con = sqlite3.connect(db)
    n, lo, hi = con.execute("SELECT COUNT(*), MIN(bound_s / iter_s), MAX(bound_s / iter_s) "
                            "FROM candidate WHERE status='simulated'").fetchone()
    bad = con.execute("SELECT key, iter_s, bound_s FROM candidate WHERE status='simulated' "
                      "AND NOT (bound_s > 0 AND iter_s >= bound_s)").fetchall()
    con.close()
    check(n > 0, "nothing simulated")
    check(not bad, f"{len(bad)} candidates simulated below (or without) their bound: {bad[:3]}")
    print(f"default sweep: {n} candidates simulated, bound / simulated {lo:.3f} .. {hi:.3f}")
