#!/usr/bin/env python3
"""The memory verdict in three states (docs/MODEL.md, "Memory"): fits, at
risk (within the model's uncertainty, 7 %, of the usable memory), out of
memory, in synth's text and --json, in the results database (mem_verdict,
mem_margin_gb) and in prism report (at-risk layouts marked, kept by the
search).  gpt-small on 8 GPUs of an H100 profile cut to 7.6 GB (3.6 GB
usable): microbatch 1 needs 3.05 GB (x 1.07 = 3.26: fits), 2 needs 3.64
(x 0.93 = 3.39 <= 3.6 < 3.64 x 1.07: at risk), 4 needs 4.56 (x 0.93 =
4.24 > 3.6: out of memory).  A profile still stating the old flat
allocator_fragmentation is refused, naming its file and line.

usage: memory_verdict.py PRISM
"""
import json
import os
import sqlite3
import sys
import tempfile

import clitest
from clitest import check, collect, done

PRISM = os.path.abspath(sys.argv[1])
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
U = 0.07  # MEM_UNCERTAINTY (model/cost/mem.h)
collect()


def run(*args):
    return clitest.run(PRISM, *args)


def verdict(total, capacity):
    if total * (1 + U) <= capacity:
        return "fits"
    return "oom" if total * (1 - U) > capacity else "at-risk"


with tempfile.TemporaryDirectory() as d:
    hw = os.path.join(d, "tight.cfg")
    with open(os.path.join(ROOT, "configs", "hw", "h100-dgx.cfg")) as f:
        text = f.read()
    check("hbm_capacity_GB = 85.0;" in text, "h100-dgx.cfg: no 85 GB capacity line")
    with open(hw, "w") as f:
        f.write(text.replace("hbm_capacity_GB = 85.0;", "hbm_capacity_GB = 7.6;"))

    # 1. synth: text and --json, each state.
    want = {1: "fits", 2: "at-risk", 4: "oom"}
    for mbs, state in want.items():
        r = run("synth", "gpt-small", "--hw", hw, "--dp", "8", "--mbs", str(mbs), "--json",
                "--steps", "1")
        check(r.returncode == 0, f"synth mbs {mbs}: {r.stderr}")
        j = json.loads(r.stdout)
        tot, cap = j["memory_bytes"], j["memory_capacity_bytes"]
        check(abs(cap - 3.6e9) < 1, f"capacity {cap}")
        check(j["memory_verdict"] == state == verdict(tot, cap),
              f"mbs {mbs}: {j['memory_verdict']}, want {state} ({tot} of {cap})")
        check(abs(j["memory_margin_bytes"] - (cap - tot)) < 1, f"mbs {mbs}: margin")
        check(abs(j["memory_uncertainty_bytes"] - U * tot) < 1, f"mbs {mbs}: band")
        check(j["fits"] == (state != "oom"), f"mbs {mbs}: fits {j['fits']}")
        r = run("synth", "gpt-small", "--hw", hw, "--dp", "8", "--mbs", str(mbs), "--steps",
                "1")
        shown = {"fits": ": fits\n", "at-risk": ": at risk\n", "oom": ": OUT OF MEMORY\n"}
        check(shown[state] in r.stdout and
              f"margin {(cap - tot) / 1e9:+.1f} GB, the model's uncertainty +/-"
              f"{U * tot / 1e9:.1f} GB (7 %)" in r.stdout, f"mbs {mbs} text:\n{r.stdout}")

    # Expandable segments: the same tensors, another reserve.
    a = json.loads(run("synth", "gpt-small", "--hw", hw, "--dp", "8", "--json", "--steps",
                       "1").stdout)
    b = json.loads(run("synth", "gpt-small", "--hw", hw, "--dp", "8", "--json", "--steps", "1",
                       "--expandable-segments").stdout)
    check(b.get("expandable_segments") == 1 and "expandable_segments" not in a,
          "--json shows expandable_segments where set")
    check(a["memory_activations_bytes"] == b["memory_activations_bytes"] and
          a["memory_fragmentation_bytes"] != b["memory_fragmentation_bytes"],
          "expandable segments change the reserve alone")

    # 2. The search keeps the at-risk layout and stores every verdict
    # (exhaustive: the ramp simulates mbs 2, the best estimate, first, and
    # its time screens mbs 1, whose verdict is stored all the same).
    sweep = os.path.join(d, "tight-sweep.cfg")
    with open(sweep, "w") as f:
        f.write(f'name = "tight";\nmodel = "gpt-small";\nhw = "{hw}";\ngpus = [8];\n'
                "global_batch = 32;\nspace = {\n  mbs = [1, 2, 4];\n};\n")
    db = os.path.join(d, "t.db")
    r = run("search", sweep, "--db", db, "--exhaustive")
    check(r.returncode == 0, f"search: {r.stderr}")
    con = sqlite3.connect(db)
    rows = con.execute("SELECT mbs, status, mem_verdict, mem_margin_gb, fits FROM candidate"
                       " ORDER BY mbs").fetchall()
    con.close()
    check([(m, s, v, f) for m, s, v, _, f in rows] ==
          [(1, "simulated", "fits", 1), (2, "simulated", "at-risk", 1), (4, "oom", "oom", None)],
          f"stored: {rows}")
    check(rows[1][3] < 0 < rows[0][3], f"margins {rows}")

    # 3. The report marks it (the best at 8 GPUs: microbatch 2 is faster).
    out = os.path.join(d, "rep")
    r = run("report", db, "-o", out)
    check(r.returncode == 0, f"report: {r.stderr}")
    md = open(os.path.join(out, "report.md")).read()
    check("| 3.6 (at risk) |" in md and "At risk: a layout whose memory is within" in md,
          f"report.md:\n{md}")
    j = json.loads(run("report", db, "-o", out, "--json").stdout)
    check(j["best"][0]["best"]["mem_at_risk"] is True, f"report --json best: {j['best'][0]}")

    # A database from before the verdict (its columns dropped): the report
    # reads it (nothing marked), and the search adds the columns back.
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE candidate DROP COLUMN mem_verdict")
    con.execute("ALTER TABLE candidate DROP COLUMN mem_margin_gb")
    con.commit()
    con.close()
    r = run("report", db, "-o", out)
    md = open(os.path.join(out, "report.md")).read()
    check(r.returncode == 0 and "| 3.6 |" in md and "At risk" not in md,
          f"report of an older database: {r.stderr}\n{md}")
    r = run("search", sweep, "--db", db, "--exhaustive")
    con = sqlite3.connect(db)
    cols = [c[1] for c in con.execute("PRAGMA table_info(candidate)")]
    con.close()
    check(r.returncode == 0 and "mem_verdict" in cols and "mem_margin_gb" in cols,
          f"reopened: {r.stderr} {cols}")

    # 4. The flat allocator share is gone: a profile stating it is refused.
    old = os.path.join(d, "old.cfg")
    with open(old, "w") as f:
        f.write(text.replace("memory_reserve_GB = 4.0;",
                             "memory_reserve_GB = 4.0;\n  allocator_fragmentation = 0.15;"))
    line = next(i + 1 for i, s in enumerate(open(old)) if "allocator_fragmentation" in s)
    r = run("synth", "gpt-small", "--hw", old)
    check(r.returncode != 0 and f"{old}:{line}: 'gpu.allocator_fragmentation' is no longer read"
          in r.stderr, f"old profile: rc {r.returncode}, {r.stderr}")

done()
