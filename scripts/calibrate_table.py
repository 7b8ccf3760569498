#!/usr/bin/env python3
"""docs/VALIDATION.md's "Kernel efficiency fitted on the traces" table:
`prism calibrate --json` on every shared trace that records op shapes,
one row per kernel class with its fit, its leave-one-out error and
whether calibrate accepts the fit as a cost model (issue 36 item 5: fits
above the profile's peak or with a negative overhead are flagged, not
used).

usage: scripts/calibrate_table.py [PRISM] [TRACES]   (defaults build/prism, ../shared/traces)
"""
import glob
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
if any(a.startswith("-") for a in sys.argv[1:]):
    sys.exit(__doc__.strip())
prism = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build", "prism")
traces = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "..", "shared", "traces")
# The traces whose ops record shapes (`Input Dims`), in the table's order.
TRACES = ["kineto-resnet50-v100-torch19", "hta-dlrm-a100-rank3of8",
          "hta-torchrec-a100-rank0of16", "param-dlrm-8rank-v100",
          "tracelens-vllm-b200-tp8-rank0"]

print("| trace | profile | class | kernels | efficiency (of peak) | overhead "
      "| leave-one-out mean / median | used |")
print("|---|---|---|---|---|---|---|---|")
for t in TRACES:
    files = sorted(glob.glob(os.path.join(traces, t, "*.json*")))
    if not files:
        sys.exit(f"{t}: no trace in {os.path.join(traces, t)}")
    r = subprocess.run([prism, "calibrate", "--json", *files], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{t}: prism calibrate exited {r.returncode}: {r.stderr.strip()}")
    d = json.loads(r.stdout)
    hw = os.path.basename(d["hw"]).removesuffix(".cfg")
    for cls, c in d["classes"].items():
        if not c["samples"]:
            continue
        unit = "FLOP/s" if c["by"] == "flops" else "HBM"
        used = "yes" if c["valid"] else "no: " + c["flag"].split(": ", 1)[1].split(":")[0]
        print(f"| {t} | {hw} | {cls} | {c['samples']} | {100 * c['efficiency']:.1f}% ({unit}) "
              f"| {c['overhead_s'] * 1e6:.2f} us | {100 * c['loo_mean']:.1f}% / "
              f"{100 * c['loo_median']:.1f}% | {used} |")
