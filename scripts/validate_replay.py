#!/usr/bin/env python3
"""Replay validation: every training trace in ../shared/traces with step
markers, replayed by prism, against its measured ProfilerStep times.

Prints the Markdown tables of docs/VALIDATION.md: per iteration the measured
and predicted times and the error; per trace the mean and worst |error|; and
the ablation (cross-stream event edges ignored; every inferred edge ignored).
The 8-rank DLRM set is replayed as one 8-rank job.

Usage: validate_replay.py [PRISM] [TRACES_DIR]
"""
import glob
import json
import os
import subprocess
import sys

JOBS = [
    ("deepseek-v3-train-h800", ["deepseek-v3-train-h800/train.json.gz"]),
    ("hta-ddp-compile-v100-rank1of2", ["hta-ddp-compile-v100-rank1of2/df_index_resolver.json.gz"]),
    ("hta-ddp-resnet-a100-2rank", ["hta-ddp-resnet-a100-2rank/nccl_data.json.gz"]),
    ("hta-ddp-resnet-v100-nsres", ["hta-ddp-resnet-v100-nsres/*.json.gz"]),
    ("hta-dlrm-a100-rank3of8", ["hta-dlrm-a100-rank3of8/control.json.gz"]),
    ("hta-torchrec-a100-rank0of16", ["hta-torchrec-a100-rank0of16/rank0.json.gz"]),
    ("kineto-resnet50-v100-torch19", ["kineto-resnet50-v100-torch19/*.json.gz"]),
    ("hta-sync-microbench-a100/cuda_event_sync", ["hta-sync-microbench-a100/cuda_event_sync/*.json.gz"]),
    ("param-dlrm-8rank-v100 (8 ranks, one job)", ["param-dlrm-8rank-v100/*.json.gz"]),
]
VARIANTS = [("all edges", []), ("no event edges", ["--no-event-edges"]),
            ("no shared-GPU edges", ["--no-share-edges"]),
            ("no inferred edges", ["--no-inferred-edges"])]


def replay(prism, files, extra):
    out = subprocess.run([prism, "replay", "--json", *extra, *files], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["iterations"]


def stats(its):
    errs = [abs(i["error_pct"]) for i in its]
    return sum(errs) / len(errs), max(errs)


def main():
    prism = sys.argv[1] if len(sys.argv) > 1 else "build/prism"
    root = sys.argv[2] if len(sys.argv) > 2 else "../shared/traces"
    if not os.path.isdir(root):
        print(f"{root} not found: the shared traces live beside the checkout")
        return 1
    results = {}
    for name, pats in JOBS:
        files = sorted(f for p in pats for f in glob.glob(os.path.join(root, p)))
        results[name] = {v: replay(prism, files, extra) for v, extra in VARIANTS}

    print("| trace | rank | step | measured ms | predicted ms | error | host ms | GPU ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        for it in r["all edges"]:
            side = lambda k: f"{it[k] / 1e6:.3f}" if k in it else ""
            print(f"| {name} | {it['rank']} | {it['step']} | {it['measured_ns'] / 1e6:.3f} | "
                  f"{it['predicted_ns'] / 1e6:.3f} | {it['error_pct']:+.2f}% | "
                  f"{side('host_ns')} | {side('gpu_ns')} |")
    print()
    print("| trace | iterations | " + " | ".join(f"{v}: mean / worst" for v, _ in VARIANTS)
          + " |")
    print("|---|---|" + "---|" * len(VARIANTS))
    every = {v: [] for v, _ in VARIANTS}
    for name, r in results.items():
        cells = []
        for v, _ in VARIANTS:
            m, w = stats(r[v])
            every[v] += r[v]
            cells.append(f"{m:.2f}% / {w:.2f}%")
        print(f"| {name} | {len(r['all edges'])} | " + " | ".join(cells) + " |")
    cells = []
    for v, _ in VARIANTS:
        m, w = stats(every[v])
        cells.append(f"**{m:.2f}% / {w:.2f}%**")
    print(f"| **all {len(every['all edges'])} iterations** | | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
