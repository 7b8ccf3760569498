#!/usr/bin/env python3
"""prism search with each training trace of ../shared/traces as its base.

For every trace a sweep is written beside a temporary database: the base is
the trace (plain: no run description), the hardware its GPU's profile; the
GPU counts are 1, 2 and 4 times the data-parallel degree prism finds, the
global batch 4 times the trace's own (`global_batch_scale = 4`: a plain
trace does not say how many sequences a microbatch holds, so its global
batch is given relative to the traced one; every count's microbatches are
whole: 4, 2 and 1 times the traced ones), layers x1 and x2 where layers
are found, and 1 or 2 pipeline stages (dp = GPUs / pp).  Every candidate is a graph edit of
the trace or invalid with what the trace lacks.  Prints a Markdown table
for docs/VALIDATION.md: per trace, what was simulated, which knobs its
candidates could change and why the others could not, and the best time
per GPU count.

usage: scripts/search_real.py [PRISM] [TRACES_DIR]
"""
import glob
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

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


def main():
    if not os.path.isdir(DIR):
        print(f"skip: {DIR} is absent")
        return
    print("| job | base | candidates: simulated / invalid | knobs edited | why the others are "
          "invalid | best ms per GPU count |")
    print("|---|---|---|---|---|---|")
    for name, pat in JOBS:
        files = [os.path.abspath(f) for f in sorted(glob.glob(os.path.join(DIR, pat)))]
        if not files:
            continue
        r = subprocess.run([PRISM, "whatif", *files, "--json"], capture_output=True, text=True)
        if r.returncode:
            print(f"| {name} | {r.stderr.strip()} | | | | |")
            continue
        b = json.loads(r.stdout)
        dp, m, L = b["dp_from"], b["microbatches_from"], b["layers_from"]
        layers = f"\n  layers = [{L}, {2 * L}];" if L else ""
        with tempfile.TemporaryDirectory() as d:
            cfg = os.path.join(d, "s.cfg")
            base = ", ".join(f'"{f}"' for f in files)
            with open(cfg, "w") as f:
                f.write(f'name = "real";\nbase = [{base}];\nhw = "{b["hw_from"]}";\n'
                        f"gpus = [{dp}, {2 * dp}, {4 * dp}];\nglobal_batch_scale = 4;\n"
                        f"space = {{\n  pp = [1, 2];{layers}\n}};\n")
            db = os.path.join(d, "s.db")
            r = subprocess.run([PRISM, "search", cfg, "--db", db, "--exhaustive"],
                               capture_output=True, text=True)
            if r.returncode:
                msg = r.stderr.strip().splitlines()[-1][:200]
                print(f"| {name} | {b['base']} | 0 / all | | {msg} | |")
                continue
            con = sqlite3.connect(db)
            rows = con.execute("SELECT gpus, pp, layers, microbatches, status, reason, iter_s, "
                               "method FROM candidate").fetchall()
            con.close()
        sim = [x for x in rows if x[4] == "simulated"]
        bad = [x for x in rows if x[4] != "simulated"]
        knobs = set()
        for g, pp, lay, mb, *_ in sim:
            if g // pp != dp:
                knobs.add("dp")
            if pp != 1:
                knobs.add("pp")
            if lay != L:
                knobs.add("layers")
            if mb != m:
                knobs.add("microbatches")
        why = sorted({(x[5].split("(prism::model#): ", 1)[-1] if x[5] else x[4])[:110]
                      for x in bad})
        best = {}
        for g, pp, lay, mb, st, rs, t, meth in sim:
            if t and (g not in best or t < best[g]):
                best[g] = t
        bests = ", ".join(f"{g}: {best[g] * 1e3:.1f}" for g in sorted(best))
        print(f"| {name} | {b['base']} | {len(sim)} / {len(bad)} | "
              f"{', '.join(sorted(knobs)) or 'none'} | {'; '.join(why) or '-'} | {bests} |")


main()
