#!/usr/bin/env python3
"""What-if on the shared real traces: DP x8 (every trace whose collectives
have sizes), and layers x2 where layers are found (prism::layer ranges, or
inferred from repeated op blocks: the found blocks' tasks are repeated).
Prints a Markdown table for docs/VALIDATION.md.

usage: scripts/whatif_real.py [PRISM] [TRACES_DIR]
"""
import glob
import json
import os
import subprocess
import sys

PRISM = sys.argv[1] if len(sys.argv) > 1 else "build/prism"
DIR = sys.argv[2] if len(sys.argv) > 2 else "../shared/traces"

JOBS = [
    ("param-dlrm-8rank-v100", "param-dlrm-8rank-v100/*.json.gz"),
    ("hta-ddp-resnet-a100-2rank", "hta-ddp-resnet-a100-2rank/*.json.gz"),
    ("hta-dlrm-a100-rank3of8", "hta-dlrm-a100-rank3of8/*.json.gz"),
    ("hta-torchrec-a100-rank0of16", "hta-torchrec-a100-rank0of16/*.json.gz"),
    ("hta-ddp-compile-v100-rank1of2", "hta-ddp-compile-v100-rank1of2/*.json.gz"),
    ("hta-ddp-resnet-v100-nsres", "hta-ddp-resnet-v100-nsres/*.json.gz"),
    ("deepseek-v3-train-h800", "deepseek-v3-train-h800/*.json.gz"),
    ("kineto-resnet50-v100-torch19", "kineto-resnet50-v100-torch19/*.json.gz"),
]


def prism(*args):
    r = subprocess.run([PRISM, *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def whatif(files, *args):
    rc, out, err = prism("whatif", *files, "--json", *args)
    if rc:
        return None, err.strip()
    return json.loads(out), None


def change(w):
    return f"{w['iteration_s']*1e3:.3f} | {(w['iteration_s'] / w['base_iteration_s'] - 1) * 100:+.1f}%"


def main():
    if not os.path.isdir(DIR):
        print(f"skip: {DIR} is absent")
        return
    print("| job | ranks | layers found | world size | base ms | DP x8 ms | change | "
          "collectives re-timed | layers x2 ms | change | tasks added |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, pat in JOBS:
        files = sorted(glob.glob(os.path.join(DIR, pat)))
        if not files:
            continue
        rc, out, err = prism("ingest", "--json", *files)
        if rc:
            print(f"| {name} | {len(files)} | ingest failed: {err.strip()} | | | | | | | | |")
            continue
        cov = json.loads(out)["coverage"]
        n = cov["layers"]
        layers = (f"{n} ({cov['layer_source']}, {cov['layer_ops']} ops each, "
                  f"{cov['layer'] / max(cov['gpu_tasks'], 1) * 100:.0f}% of GPU tasks)"
                  if n else "no")
        base, err = whatif(files)
        if err:
            print(f"| {name} | {len(files)} | {layers} | | | | | {err} | | | |")
            continue
        dp = base["dp_from"]
        w, err = whatif(files, "--dp", str(dp * 8))
        cells = (f"{w['base_iteration_s']*1e3:.3f} | {change(w)} | {w['collectives_scaled']} "
                 f"({w['collectives_unsized']} without size)") if w else f" | | | {err}"
        lx = "n/a | | "
        if n:
            w2, err = whatif(files, "--layers", str(2 * n))
            lx = f"{change(w2)} | {w2['tasks_added']}" if w2 else f" | | {err}"
        print(f"| {name} | {len(files)} | {layers} | {dp} | {cells} | {lx} |")


main()
