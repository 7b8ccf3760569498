#!/usr/bin/env python3
"""Hopper's sustained clock (configs/hw/h100-dgx.cfg, `gpu.sustained`),
grounded in our H100 sweep's long against short windows (docs/MODEL.md,
"Sustained rates"; docs/VALIDATION.md).

The sweep (tests/data/gpu/kernels.csv, scripts/kernel_sweep.py) times each
GEMM over one CUDA-graph replay of `calls` back-to-back calls: a window of
calls x time_us.  A window of 5 ms or more (flashinfer PR #2899's
threshold, hw.h's HW_SUSTAINED_AFTER_S) kept the GPU busy long enough to
settle at its power-limited clock; a shorter one ran nearer the burst
clock.  Each row's measured rate is taken relative to the kernel model's
burst time for its shape (rho = model / measured: shapes and tiles divided
out), over the compute-bound rows (100 us and more: the tiles' work is
nearly all of such a kernel's time).  The sustained factor is the
geometric mean of rho over the long windows over that of the short ones,
per dtype: the clock's effect on one card, whatever the profile's burst
rates are fitted on.  The model's burst times come from prism itself, run
with the profile's sustained factor set to 1 (a copy under
$PRISM_CONFIG_DIR).

usage: scripts/sustained_fit.py [PRISM]   (default build/prism)
"""
import csv
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..")
prism = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "prism")
sweep = os.path.join(root, "tests", "data", "gpu", "kernels.csv")
WINDOW_S = 5e-3  # hw.h: HW_SUSTAINED_AFTER_S

tmp = tempfile.mkdtemp()
try:
    os.makedirs(os.path.join(tmp, "hw"))
    prof = open(os.path.join(root, "configs", "hw", "h100-dgx.cfg")).read()
    prof = re.sub(r"\n\s*sustained\s*=[^;]*;", "\n  sustained = 1.0;", prof)
    open(os.path.join(tmp, "hw", "h100-dgx.cfg"), "w").write(prof)
    out = subprocess.run([prism, "kernels", "--rows", sweep], capture_output=True, text=True,
                         env=dict(os.environ, PRISM_CONFIG_DIR=tmp), check=True).stdout
finally:
    shutil.rmtree(tmp)

calls = {}
for r in csv.DictReader(open(sweep)):
    if r["class"] == "gemm":
        calls[(r["dtype"], int(r["M"]), int(r["N"]), int(r["K"]))] = int(r["calls"])


def gmean(x):
    return math.exp(sum(math.log(v) for v in x) / len(x)) if x else float("nan")


rows = list(csv.DictReader(out.split("\n\n")[0].splitlines()))
print("dtype  from    long windows (n, rho)   short windows (n, rho)   sustained")
for dt in ("bf16", "fp8"):
    for cut_us in (100, 300, 700):
        long_, short = [], []
        for r in rows:
            if r["class"] != "gemm" or r["dtype"] != dt:
                continue
            b, m, n, k = (int(float(x)) for x in r["shape"].split("|")[0].split("x"))
            t = float(r["measured_us"])
            if t < cut_us:
                continue
            rho = float(r["predicted_us"]) / t
            (long_ if calls[(dt, m, n, k)] * t * 1e-6 >= WINDOW_S else short).append(rho)
        print(f"{dt:5}  {cut_us:4} us  {len(long_):4} {gmean(long_):.3f}"
              f"              {len(short):4} {gmean(short):.3f}"
              f"               {gmean(long_) / gmean(short):.3f}")
