#!/usr/bin/env python3
"""docs/VALIDATION.md's "Kernel efficiency fitted on the traces" table:
`prism calibrate --json` on every shared trace that records op shapes,
one row per kernel class with its fit, its leave-one-out error and
whether calibrate accepts the fit as a cost model (issue 36 item 5: fits
above the profile's peak or with a negative overhead are flagged, not
used).

With --gemms, instead: the kernel model on each trace's GEMMs whose ops
record their shapes (calibrate's `kernel_model`; the first file of each
folder), beside the flat model.

usage: scripts/calibrate_table.py [--gemms] [PRISM] [TRACES]
       (defaults build/prism, ../shared/traces)
"""
import glob
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
GEMMS = "--gemms" in args
if GEMMS:
    args.remove("--gemms")
if any(a.startswith("-") for a in args):
    sys.exit(__doc__.strip())
prism = args[0] if len(args) > 0 else os.path.join(here, "..", "build", "prism")
traces = args[1] if len(args) > 1 else os.path.join(here, "..", "..", "shared", "traces")
# The traces whose ops record shapes (`Input Dims`), in the table's order.
TRACES = ["kineto-resnet50-v100-torch19", "hta-dlrm-a100-rank3of8",
          "hta-torchrec-a100-rank0of16", "param-dlrm-8rank-v100",
          "tracelens-vllm-b200-tp8-rank0"]


def calibrate(t, files):
    r = subprocess.run([prism, "calibrate", "--json", *files], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{t}: prism calibrate exited {r.returncode}: {r.stderr.strip()}")
    d = json.loads(r.stdout)
    return d, os.path.basename(d["hw"]).removesuffix(".cfg")


def trace_files(t):
    files = sorted(glob.glob(os.path.join(traces, t, "*.json*")))
    if not files:
        sys.exit(f"{t}: no trace in {os.path.join(traces, t)}")
    return files


def gemms():
    print("| trace | profile | GEMMs | kernel model: mean / median / worst | signed mean "
          "| flat model: mean / median |")
    print("|---|---|---:|---:|---:|---:|")
    for t in sorted(TRACES):
        d, hw = calibrate(t, trace_files(t)[:1])
        k = d["kernel_model"]
        if not k["gemms"]:
            continue
        print(f"| {t} | {hw} | {k['gemms']} | {100 * k['mean']:.1f} % / {100 * k['median']:.1f} % "
              f"/ {100 * k['worst']:.1f} % | {100 * k['signed_mean']:+.1f} % "
              f"| {100 * k['flat_mean']:.1f} % / {100 * k['flat_median']:.1f} % |")


def classes():
    print("| trace | profile | class | kernels | efficiency (of peak) | overhead "
          "| leave-one-out mean / median | used |")
    print("|---|---|---|---|---|---|---|---|")
    for t in TRACES:
        d, hw = calibrate(t, trace_files(t))
        for cls, c in d["classes"].items():
            if not c["samples"]:
                continue
            unit = "FLOP/s" if c["by"] == "flops" else "HBM"
            used = "yes" if c["valid"] else "no: " + c["flag"].split(": ", 1)[1].split(":")[0]
            print(f"| {t} | {hw} | {cls} | {c['samples']} | {100 * c['efficiency']:.1f}% ({unit}) "
                  f"| {c['overhead_s'] * 1e6:.2f} us | {100 * c['loo_mean']:.1f}% / "
                  f"{100 * c['loo_median']:.1f}% | {used} |")


if GEMMS:
    gemms()
else:
    classes()
