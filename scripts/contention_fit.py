#!/usr/bin/env python3
"""The contention factors of the hardware profiles (configs/hw, `contention`),
fitted on measurements (docs/MODEL.md, "Contention"; docs/VALIDATION.md).

compute: how much slower a compute kernel runs while communication runs
beside it on its GPU.  `prism calibrate --json` times, in each trace, the
kernels of one name and size that ran both wholly beside a collective and
clear of one (model/calib.h, calib_contention); the groups of every shared
trace are pooled and their median is the factor.

comm: how much slower a collective runs beside compute, whose thread blocks
take SMs from it.  Proxy: DeepEP V2's all-to-all on SM100 measured with the
fewest SMs that reach its bandwidth (24) and with 64 (collectives.csv): the
bandwidth lost on fewer SMs, the mean over dispatch and combine.

usage: scripts/contention_fit.py [PRISM] [SHARED]   (defaults build/prism, ../shared)
"""
import csv
import json
import os
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
prism = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build", "prism")
shared = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "..", "shared")
traces = os.path.join(shared, "traces")
groups = []
for t in sorted(os.listdir(traces)):
    d = os.path.join(traces, t)
    if not os.path.isdir(d):
        continue
    files = sorted(os.path.join(d, f) for f in os.listdir(d) if ".json" in f)
    if not files:
        continue
    r = subprocess.run([prism, "calibrate", "--json", files[0]], capture_output=True, text=True)
    if r.returncode:
        print(f"{t}: prism calibrate exited {r.returncode}: {r.stderr.strip()}")
        continue
    c = json.loads(r.stdout).get("contention", {})
    g = c.get("group_slowdowns", [])
    groups += g
    if g:
        print(f"{t}: {len(g)} kernel groups, {c['pairs']} pairs, median {100 * c['compute_slowdown']:+.1f}%")
    else:
        print(f"{t}: no kernel timed both beside communication and clear of it")
if groups:
    print(f"compute: {len(groups)} groups pooled, median {100 * statistics.median(groups):+.1f}%")

rows = list(csv.DictReader(open(os.path.join(shared, "kernels", "collectives.csv"))))
ratios = []
for kind in ("dispatch", "combine"):
    sel = [r for r in rows if "DeepEP V2" in r["tool"] and kind in r["collective"]
           and r["gpu"].startswith("Blackwell") and r["nodes"] == "1"]
    lo = [float(r["other_value"]) for r in sel if "24" in r["algo"]]
    hi = [float(r["other_value"]) for r in sel if "64" in r["algo"]]
    if lo and hi:
        ratios.append(hi[0] / lo[0])
        print(f"DeepEP V2 SM100 {kind}: {lo[0]:.0f} GB/s on 24 SMs, {hi[0]:.0f} on 64")
if ratios:
    print(f"comm: {100 * (statistics.mean(ratios) - 1):+.1f}%")
