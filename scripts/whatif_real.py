#!/usr/bin/env python3
"""What-if on the shared real traces: DP x8 (every trace whose collectives
have sizes), and layers x2 where layers are found.  Prints a Markdown table
for docs/VALIDATION.md.

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


def main():
    if not os.path.isdir(DIR):
        print(f"skip: {DIR} is absent")
        return
    print("| job | ranks | layers found | world size | base ms | DP x8 ms | change | collectives re-timed |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for name, pat in JOBS:
        files = sorted(glob.glob(os.path.join(DIR, pat)))
        if not files:
            continue
        rc, out, err = prism("ingest", "--json", *files)
        if rc:
            print(f"| {name} | {len(files)} | ingest failed: {err.strip()} | | | | | |")
            continue
        cov = json.loads(out)["coverage"]
        layers = "yes" if cov["layer"] else "no"
        rc, out, err = prism("whatif", *files, "--json")
        if rc:
            print(f"| {name} | {len(files)} | {layers} | | | | | {err.strip()} |")
            continue
        base = json.loads(out)
        dp = base["dp_from"]
        rc, out, err = prism("whatif", *files, "--json", "--dp", str(dp * 8))
        if rc:
            print(f"| {name} | {len(files)} | {layers} | {dp} | | | | {err.strip()} |")
            continue
        w = json.loads(out)
        ch = (w["iteration_s"] / w["base_iteration_s"] - 1) * 100
        print(f"| {name} | {len(files)} | {layers} | {dp} | {w['base_iteration_s']*1e3:.3f} | "
              f"{w['iteration_s']*1e3:.3f} | {ch:+.1f}% | {w['collectives_scaled']} "
              f"({w['collectives_unsized']} without size) |")


main()
