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

usage: scripts/contention_fit.py [--markdown] [PRISM] [SHARED]
       (defaults build/prism, ../shared; --markdown prints docs/VALIDATION.md's table)
"""
import csv
import json
import os
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
markdown = "--markdown" in args
if markdown:
    args.remove("--markdown")
if any(a.startswith("-") for a in args):
    sys.exit(__doc__.strip())
prism = args[0] if len(args) > 0 else os.path.join(here, "..", "build", "prism")
shared = args[1] if len(args) > 1 else os.path.join(here, "..", "..", "shared")
table = []  # (source, groups (pairs), slowdown) for --markdown


def say(line):
    if not markdown:
        print(line)


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
        sys.exit(f"{t}: prism calibrate exited {r.returncode}: {r.stderr.strip()}")
    c = json.loads(r.stdout).get("contention", {})
    g = c.get("group_slowdowns", [])
    groups += g
    if g:
        say(f"{t}: {len(g)} kernel groups, {c['pairs']} pairs, median {100 * c['compute_slowdown']:+.1f}%")
        table.append((t, f"{len(g)} ({c['pairs']})", f"{100 * c['compute_slowdown']:+.1f} %"))
    else:
        say(f"{t}: no kernel timed both beside communication and clear of it")
if groups:
    say(f"compute: {len(groups)} groups pooled, median {100 * statistics.median(groups):+.1f}%")
    table.append(("pooled, compute (`contention.compute`)", f"{len(groups)}",
                  f"**{100 * statistics.median(groups):+.1f} %**"))

rows = list(csv.DictReader(open(os.path.join(shared, "kernels", "collectives.csv"))))
ratios = []
for kind in ("dispatch", "combine"):
    sel = [r for r in rows if "DeepEP V2" in r["tool"] and kind in r["collective"]
           and r["gpu"].startswith("Blackwell") and r["nodes"] == "1"]
    lo = [float(r["other_value"]) for r in sel if "24" in r["algo"]]
    hi = [float(r["other_value"]) for r in sel if "64" in r["algo"]]
    if lo and hi:
        ratios.append(hi[0] / lo[0])
        say(f"DeepEP V2 SM100 {kind}: {lo[0]:.0f} GB/s on 24 SMs, {hi[0]:.0f} on 64")
        table.append((kind, lo[0], hi[0]))
if ratios:
    say(f"comm: {100 * (statistics.mean(ratios) - 1):+.1f}%")
if markdown:
    print("| source | groups (pairs) | slowdown |")
    print("|---|---:|---:|")
    deepep = [r for r in table if isinstance(r[1], float)]
    for src, n, slow in (r for r in table if not isinstance(r[1], float)):
        print(f"| {src} | {n} | {slow} |")
    if ratios:
        parts = ", ".join(f"{k} {lo:.0f}/{hi:.0f}" for k, lo, hi in deepep)
        print(f"| DeepEP V2 SM100 on 24 against 64 SMs ({parts} GB/s), comm "
              f"(`contention.comm`) | {len(ratios)} | **{100 * (statistics.mean(ratios) - 1):+.1f} %** |")
