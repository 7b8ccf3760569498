#!/usr/bin/env python3
"""The MI300X kernel rates against the project's H100-vs-MI300X evidence.

The kernel-level evidence for both GPUs in ../shared/kernels (its README,
"AMD MI300X"): ml-engineering's maximum achievable matmul FLOPS (MAMF,
gemm.csv), the best mean rate of torch.mm over a brute-force shape search
on each GPU (bf16 on both, fp8 on H100 only), by one method; and two RCCL
all-reduce points of MI300X (collectives.csv; the profile's bus
efficiency is their mean, in-sample: docs/VALIDATION.md).  No MI300X
trace is in ../shared/traces.

For each GPU and dtype with a MAMF row: the row against the kernel model
(prism kernels --rows, the shipped profiles), the model on the other GPU's
MAMF shape, and the model's best rate over a grid of shapes (M, N, K in
1K..16K, the MAMF shapes added) -- the model's own MAMF, which a search
like ml-engineering's would find; then the MI300X / H100 ratio measured
and modelled.  Prints Markdown for docs/VALIDATION.md.

usage: scripts/mi300x_h100.py [PRISM] [KERNELS_DIR]
"""
import csv
import os
import subprocess
import sys
import tempfile

PRISM = sys.argv[1] if len(sys.argv) > 1 else "build/prism"
DIR = sys.argv[2] if len(sys.argv) > 2 else "../shared/kernels"
GPUS = {"H100 SXM": ("NVIDIA H100 SXM", "h100-dgx"), "MI300X": ("AMD MI300X", "mi300x")}
GRID = [1024, 2048, 4096, 8192, 12288, 16384]


def main():
    path = os.path.join(DIR, "gemm.csv")
    if not os.path.exists(path):
        print(f"skip: {path} is absent")
        return
    with open(path, newline="") as f:
        rd = csv.DictReader(f)
        fields, rows = rd.fieldnames, list(rd)
    mamf = [r for r in rows if r["gpu"] in GPUS and r["section"].startswith("Maximum Achievable")
            and r["dtype"] in ("bf16", "fp8_e4m3fn")]
    shapes = {}  # dtype -> set of (M, N, K)
    for r in mamf:
        shapes.setdefault(r["dtype"], set()).add((int(r["M"]), int(r["N"]), int(r["K"])))
    out = []  # (gpu, dtype, M, N, K, measured tflops or None)
    for dt, sh in shapes.items():
        grid = set(sh) | {(m, n, k) for m in GRID for n in GRID for k in GRID}
        for g in GPUS:
            for (m, n, k) in sorted(grid):
                meas = [float(r["tflops"]) for r in mamf if r["gpu"] == g and r["dtype"] == dt
                        and (int(r["M"]), int(r["N"]), int(r["K"])) == (m, n, k)]
                out.append((g, dt, m, n, k, meas[0] if meas else None))
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "rows.csv")
        with open(p, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for g, dt, m, n, k, t in out:
                # a row without a measurement: a placeholder rate (its
                # error is not read), the prediction is what is wanted
                w.writerow({**{x: "" for x in fields}, "gpu": g, "gpu_detail": GPUS[g][0],
                            "dtype": dt, "out_dtype": dt, "op": "gemm", "batch": 1, "M": m,
                            "N": n, "K": k, "tflops": t if t else 1.0,
                            "implementation": "torch.mm", "source": f"grid:{g}",
                            "section": "grid"})
        r = subprocess.run([PRISM, "kernels", "--rows", p], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"prism kernels: {r.stderr}")
    pred = {}  # (profile, dtype, M, N, K) -> predicted TFLOP/s
    for line in csv.DictReader(r.stdout.split("\n\n")[0].splitlines()):
        m, n, k = (int(x) for x in line["shape"].split("|")[0].split("x")[1:])
        dt = "bf16" if line["dtype"] == "bf16" else "fp8_e4m3fn"
        pred[(line["profile"], dt, m, n, k)] = 2 * m * n * k / (float(line["predicted_us"]) * 1e6)

    print("| GPU | dtype | MAMF measured: shape, TFLOP/s | model there | model on the other GPU's "
          "MAMF shape | model's best over the grid (shape) |")
    print("|---|---|---|---|---|---|")
    best = {}
    for dt in sorted(shapes):
        for g, (_, prof) in GPUS.items():
            mine = [r for r in mamf if r["gpu"] == g and r["dtype"] == dt]
            other = [r for r in mamf if r["gpu"] != g and r["dtype"] == dt]
            cand = {s: v for s, v in ((key[2:], v) for key, v in pred.items()
                                      if key[0] == prof and key[1] == dt)}
            bs = max(cand, key=cand.get)
            best[(g, dt)] = cand[bs]
            if mine:
                r0 = mine[0]
                s0 = (int(r0["M"]), int(r0["N"]), int(r0["K"]))
                meas = f"{'x'.join(map(str, s0))}, {float(r0['tflops']):.1f}"
                there = f"{cand[s0]:.1f} ({cand[s0] / float(r0['tflops']) - 1:+.1%})"
            else:
                meas, there = "none", "-"
            if other:
                s1 = (int(other[0]["M"]), int(other[0]["N"]), int(other[0]["K"]))
                oth = f"{cand[s1]:.1f} at {'x'.join(map(str, s1))}"
            else:
                oth = "-"
            print(f"| {g} | {dt} | {meas} | {there} | {oth} | {cand[bs]:.1f} "
                  f"({'x'.join(map(str, bs))}) |")
    print()
    for dt in sorted(shapes):
        ms = {g: [float(r["tflops"]) for r in mamf if r["gpu"] == g and r["dtype"] == dt]
              for g in GPUS}
        if ms["H100 SXM"] and ms["MI300X"]:
            meas = ms["MI300X"][0] / ms["H100 SXM"][0]
            mod = best[("MI300X", dt)] / best[("H100 SXM", dt)]
            print(f"- {dt}: MI300X / H100, best rates: measured {meas:.3f}, model {mod:.3f} "
                  f"({mod / meas - 1:+.1%})")
        else:
            print(f"- {dt}: MI300X / H100: no MI300X measurement; model "
                  f"{best[('MI300X', dt)] / best[('H100 SXM', dt)]:.3f} (MI300X's fp8 rate is "
                  "derived, configs/hw/mi300x.cfg)")


main()
