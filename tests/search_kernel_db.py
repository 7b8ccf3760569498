#!/usr/bin/env python3
"""Kernel times from a kernel database.  A database whose GEMM rows lie on
the roofline 3 us + FLOPs / (peak x 35 %), 400 sizes from 1e6 to 1e16
FLOPs, must make `prism synth --db` look every GEMM up (interpolated
between rows) and predict a slower run than the kernel model (which puts
these GEMMs near 80 % of peak); a sweep naming it as
kernel_db must simulate no candidate faster than without it (the
launch-bound ones as fast) and most slower, and a
database changed under a stored sweep must refuse to resume.

usage: search_kernel_db.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import json
import os
import sqlite3
import sys
import tempfile

from sweeptest import check, prism, sweep_for, times

PRISM, SWEEP = sys.argv[1], sys.argv[2]
PEAK = 989.4e12  # configs/hw/h100-dgx.cfg, bf16 dense
LAYOUT = ["--tp", "2", "--dp", "4", "--microbatches", "4", "--mbs", "4"]  # GPU-bound


def run(*args, code=0):
    return prism(PRISM, *args, code=code)


def make_db(path, eff):
    con = sqlite3.connect(path)
    con.execute("DROP TABLE IF EXISTS kernel")
    con.execute("CREATE TABLE kernel (gpu TEXT, class TEXT, dtype TEXT, work REAL,"
                " time_s REAL, samples INTEGER, shape TEXT)")
    for i in range(400):
        w = 10 ** (6 + 10 * i / 399)
        con.execute("INSERT INTO kernel VALUES ('H100-SXM5-80GB', 'gemm', 'bf16', ?, ?, 1, '')",
                    (w, 3e-6 + w / (PEAK * eff)))
    con.commit()
    con.close()



with tempfile.TemporaryDirectory() as d:
    kdb = os.path.join(d, "kernels.db")
    make_db(kdb, 0.35)
    synth = ["synth", "gpt-small", "--hw", "h100-dgx", *LAYOUT, "--json"]
    with_db = json.loads(run(*synth, "--db", kdb).stdout)
    plain = json.loads(run(*synth).stdout)
    check(with_db["kdb_interpolated"] + with_db["kdb_exact"] > 0 and
          with_db["iteration_s"] > 1.2 * plain["iteration_s"],
          f"the database was not used: {with_db}")
    check(with_db["bound_s"] == 0, "a lower bound was claimed with measured kernel times")

    # The sweep's space on GPT-3 1.3B, whose GEMMs the GPU decides
    # (small.cfg's gpt-small is host-bound at eager's 26.6 us a kernel,
    # most of its candidates as fast with slower GEMMs).
    base, text = sweep_for(SWEEP, "gpt3-1.3b", d, "plain.cfg")
    cfg = os.path.join(d, "k.cfg")
    with open(cfg, "w") as f:
        f.write(text.replace("global_batch = 32;", 'global_batch = 32;\nkernel_db = "kernels.db";')
                .replace('name = "small";', 'name = "k";'))
    run("search", base, "--db", os.path.join(d, "plain.db"), "--exhaustive")
    run("search", cfg, "--db", os.path.join(d, "k.db"), "--exhaustive")
    a, b = times(os.path.join(d, "plain.db")), times(os.path.join(d, "k.db"))
    check(len(a) == len(b) > 0, f"{len(a)} candidates without the database, {len(b)} with it")
    faster = [k for k in a if b[k] < a[k] * (1 - 1e-9)]
    slower = sum(b[k] > a[k] * 1.01 for k in a)
    check(not faster, f"faster with 35 % GEMMs: {faster}")
    check(2 * slower > len(a), f"only {slower} of {len(a)} candidates slower with 35 % GEMMs")
    # Another database under the stored sweep: refused.
    make_db(kdb, 0.5)
    r = run("search", cfg, "--db", os.path.join(d, "k.db"), code=2)
    check("ran on other inputs (changed since: the kernel database)" in r.stderr and r.stderr.count("\n") == 1, r.stderr)
    # A database that is not one.
    with open(kdb, "w") as f:
        f.write("not sqlite")
    r = run(*synth, "--db", kdb, code=2)
    check(r.stderr.startswith(f"prism: {kdb}: not a prism kernel database"), r.stderr)
    print(f"kernel db: synth --db {with_db['iteration_s'] / plain['iteration_s']:.2f} x the "
          f"kernel model's time; "
          f"{slower} of {len(a)} sweep candidates slower, none faster; a changed database "
          "refuses to resume")
