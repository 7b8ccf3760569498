#!/usr/bin/env python3
"""Which candidates a screening sweep screens depends on its --batch (the
best time is updated between batches) and its mode; a sweep resumed with
another --batch or mode stored the rows of no run, with exit 0.  The
database records both: a resume with another --batch or mode is refused,
one without --batch takes the sweep's own and ends with the rows of an
uninterrupted run; a database of version 5 (which did not record them) is
upgraded and records them on its next run, and so is one of the branch
that first recorded them as version 3 (version 2 with mode and batch).

usage: search_batch.py PRISM SWEEP   (SWEEP: tests/data/sweeps/modes.cfg)
"""
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check, prism, rows

PRISM, SWEEP = sys.argv[1], sys.argv[2]


V7_COLUMNS = (
    "partition", "shard", "prefetch", "bucket_mb", "overlap_grad", "overlap_param",
    "tp_overlap", "pp_overlap", "mem_stage", "mem_weights_gb", "mem_grads_gb",
    "mem_optimizer_gb", "mem_buffers_gb", "mem_activations_gb", "mem_transient_gb",
    "mem_fragmentation_gb", "ep", "etp", "cp")  # what versions 7 and 8 added
V7 = "".join(f"ALTER TABLE candidate DROP COLUMN {c};" for c in V7_COLUMNS)

def search(db, *extra, code=0):
    return prism(PRISM, "search", SWEEP, "--db", db, "--threads", "1", *extra, code=code)


def killed_after_a_batch(db, *extra):
    p = subprocess.Popen([PRISM, "search", SWEEP, "--db", db, "--threads", "1", *extra],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "evaluated" in line:
            break
    p.send_signal(signal.SIGKILL)
    p.wait()


with tempfile.TemporaryDirectory() as d:
    ref = os.path.join(d, "ref.db")
    search(ref, "--batch", "4")
    want = rows(ref)
    # Alike since the batches ramp up (search/batch.h): each GPU count's
    # best estimate, simulated first, is its best simulated time, so every
    # later candidate is judged against that whatever the batch; which
    # batches a resume walks is test_batch's test_unstored.
    other = os.path.join(d, "other.db")
    search(other, "--batch", "64")
    check(rows(other) == want, "--batch 4 and 64 screen differently")

    db = os.path.join(d, "db.db")
    killed_after_a_batch(db, "--batch", "4")
    check(0 < len(rows(db)) < len(want), "the kill came too late to test anything")
    r = search(db, "--batch", "32", code=2)
    check(r.stderr == f"prism: {db}: sweep modes was run with --batch 4; which candidates it "
          "screens depends on it: resume with --batch 4 (or no --batch), or give another "
          "--db\n", r.stderr)
    r = search(db, "--optimise", code=2)
    check(r.stderr == f"prism: {db}: sweep modes was run in the default mode; its screened "
          "rows depend on it: resume it the same way, or give another --db\n", r.stderr)
    r = search(db)
    check("resuming with --batch 4, as it ran" in r.stderr, r.stderr)
    check(rows(db) == want, "the resumed sweep's rows differ from an uninterrupted run's")

    # Exhaustive: the batch changes nothing, any resumes.
    ex = os.path.join(d, "ex.db")
    killed_after_a_batch(ex, "--exhaustive", "--batch", "2")
    search(ex, "--exhaustive", "--batch", "16")
    r = search(ex, code=2)
    check("was run in --exhaustive" in r.stderr, r.stderr)

    # A version 5 database: upgraded, and the run recorded.
    old = os.path.join(d, "old.db")
    killed_after_a_batch(old, "--batch", "4")
    con = sqlite3.connect(old)
    con.executescript(V7 + "ALTER TABLE sweep DROP COLUMN mode; ALTER TABLE sweep DROP COLUMN batch;"
                      "PRAGMA user_version=5;")
    con.close()
    search(old, "--batch", "4")
    con = sqlite3.connect(old)
    ver = con.execute("PRAGMA user_version").fetchone()[0]
    run = con.execute("SELECT mode, batch FROM sweep").fetchall()
    con.close()
    check(ver == 8 and run == [("screen", 4)], f"version {ver}, recorded {run}")
    # Rows written before the upgrade lost version 7's columns with it
    # (NULL, as an older database's are): the rest must agree.
    check(rows(old, V7_COLUMNS) == rows(ref, V7_COLUMNS), "the upgraded sweep's rows differ")

    # The branch's version 3: version 2 (no tokens, price, dtype,
    # fp8_attention, flash, method) with mode and batch, which it keeps.
    br = os.path.join(d, "branch.db")
    killed_after_a_batch(br, "--batch", "4")
    con = sqlite3.connect(br)
    con.executescript(V7 + "ALTER TABLE sweep DROP COLUMN tokens;"
                      "ALTER TABLE sweep DROP COLUMN price_per_gpu_hour;"
                      "ALTER TABLE candidate DROP COLUMN dtype;"
                      "ALTER TABLE candidate DROP COLUMN fp8_attention;"
                      "ALTER TABLE candidate DROP COLUMN flash;"
                      "ALTER TABLE candidate DROP COLUMN method;"
                      "PRAGMA user_version=3;")
    con.close()
    r = search(br, "--batch", "32", code=2)
    check("was run with --batch 4" in r.stderr, r.stderr)
    search(br)
    con = sqlite3.connect(br)
    ver = con.execute("PRAGMA user_version").fetchone()[0]
    run = con.execute("SELECT mode, batch FROM sweep").fetchall()
    con.close()
    check(ver == 8 and run == [("screen", 4)], f"version {ver}, recorded {run}")
    dropped = V7_COLUMNS + ("dtype", "fp8_attention", "flash", "method")
    check(rows(br, dropped) == rows(ref, dropped), "the branch database's rows differ")
print("search: --batch and the mode are recorded; a resume that differs is refused")
