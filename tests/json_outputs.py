#!/usr/bin/env python3
"""--json on list, kernels and collectives, and null (never 0) for what is
not known: each object parses, holds the figures its text shows (two
renderings of one computation), and an unknown figure (a profile's price, a
dtype without a tensor path, a group no leave-one-out fit reaches, a run's
MFU a database does not hold) is null in JSON and an empty CSV cell.

usage: json_outputs.py PRISM SOURCE_DIR
"""
import csv
import json
import os
import re
import sqlite3
import sys
import tempfile

from clitest import check, prism

PRISM, SRC = sys.argv[1], sys.argv[2]


def run(*args, code=0):
    return prism(PRISM, *args, code=code)


# list: every kind, or one.
every = json.loads(run("list", "--json").stdout)
check(sorted(every) == ["hw", "models", "sweeps"], str(every.keys()))
small = next(m for m in every["models"] if m["name"] == "gpt-small")
check((small["layers"], small["hidden"], small["heads"], small["kv_heads"], small["ffn"],
       small["seq"], small["vocab"], small["experts"], small["active_parameters"]) ==
      (8, 1024, 16, 16, 4096, 1024, 32000, 0, None), str(small))
h100 = next(h for h in every["hw"] if h["name"] == "h100-dgx")
check(h100["gpus_per_node"] == 8 and h100["peak_tflops"]["bf16"] == 989.4 and
      h100["peak_tflops"]["fp4"] is None and h100["price_per_gpu_hour"] is None, str(h100))
sw = next(s for s in every["sweeps"] if s["name"] == "gpt3-1.3b-h100")
check(sw["model"] == "gpt3-1.3b" and sw["hw"] == ["h100-dgx"] and sw["global_batch"] == 512,
      str(sw))
only = json.loads(run("list", "hw", "--json").stdout)
check(list(only) == ["hw"] and len(only["hw"]) == len(every["hw"]), str(only.keys()))

# kernels: the table's groups, as the text prints them.
data = os.path.join(SRC, "tests", "data", "kernels")
text = run("kernels", "--loso", data).stdout
js = json.loads(run("kernels", "--loso", "--json", data).stdout)
check(js["groups"] and js["rows_placed"] > 0, str(js)[:300])
for g in js["groups"]:
    dt = g["dtype"] or "-"
    m = re.search(rf"^{re.escape(g['profile'])}\s+{re.escape(g['class'])}\s+{re.escape(dt)}\s+"
                  rf"(\d+)\s+(\d+)\s+([\d.]+)% /\s+([\d.]+)%\s+(?:([\d.]+)%|-)", text, re.M)
    check(m is not None, f"{g} not in the table")
    check(int(m.group(1)) == g["rows"] and abs(float(m.group(3)) - 100 * g["mean"]) <= 0.051,
          f"{g}: table {m.group(0)}")
    check((m.group(5) is None) == (g["loso_mean"] is None), f"{g}: loso {m.group(5)}")
check(any(g["dtype"] is None for g in js["groups"]), "memory-bound dtype not null")
r = run("kernels", "--json", "--rows", data, code=2)
check(r.stderr == "prism kernels: --json prints the table alone: not with --rows\n", r.stderr)

with tempfile.TemporaryDirectory() as d:
    # collectives: one placed row, one left out, as the text says.
    ok = os.path.join(d, "c.csv")
    with open(ok, "w") as f:
        f.write("gpu,collective,tool,nodes,gpus_per_node,ranks,group_desc,interconnect,algo,"
                "dtype,size_bytes,time_us,busbw_GBps,source\n"
                "MI300X,all_reduce,x,1,8,8,,xGMI,,bf16,1048576,50,,a\n"
                "H100,all_reduce,x,1,8,8,,NVLink,,bf16,1048576,50,,b\n"
                "H100,all_reduce,x,1,8,8,,NVLink,,bf16,4194304,90,,b\n")
    text = run("collectives", ok).stdout
    js = json.loads(run("collectives", "--loso", "--json", ok).stdout)
    check(js["rows_placed"] == 2 and js["left_out"] == 1 and
          js["left_out_why"] == {"no profile for the GPU": 1}, str(js))
    g = js["groups"][0]
    m = re.search(r"^h100-dgx\s+b\s+all_reduce\s+(\d+)\s+([\d.]+)%", text, re.M)
    check(m and int(m.group(1)) == g["rows"] == 2 and
          abs(float(m.group(2)) - 100 * g["mean"]) <= 0.051, f"{g}\n{text}")
    # One source: none left to fit on without it.
    check(g["loso_mean"] is None and js["fitted"] is None, str(js))
    fit = json.loads(run("collectives", "--fit", "--json", ok).stdout)
    check(sorted(fit["fitted"]["h100-dgx"]) == sorted(
        ["nvlink_bus_eff", "nvlink_latency_us", "nvls_bus_eff", "network_bus_eff",
         "network_latency_us", "collective_base_us"]), str(fit["fitted"]))

    # A run whose MFU the database does not hold: null, an empty cell.
    db = os.path.join(d, "s.db")
    run("search", os.path.join(SRC, "tests", "data", "sweeps", "small.cfg"), "--db", db, "-q")
    con = sqlite3.connect(db)
    con.execute("UPDATE candidate SET mfu = NULL")
    con.commit()
    con.close()
    out = os.path.join(d, "rep")
    rep = json.loads(run("report", db, "-o", out, "--json").stdout)
    check(all(b["best"]["mfu"] is None and b["best"]["tokens_per_s"] > 0 for b in rep["best"]),
          str(rep["best"][0]["best"]))
    with open(os.path.join(out, "best.csv")) as f:
        rows = list(csv.DictReader(f))
    check(all(r["mfu"] == "" and float(r["iter_s"]) > 0 for r in rows), str(rows[0]))
print("--json on list, kernels, collectives; null for what is not known")
