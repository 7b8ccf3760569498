#!/usr/bin/env python3
"""The model's error between two layouts: prism report's near-tie threshold.

prism report ranks layouts against each other, so what decides whether it
can order two of them is not the error of each prediction alone (a bias
shared by both cancels) but the error of the predicted ratio of the two:

    pair error = |(predicted_a / predicted_b) / (measured_a / measured_b) - 1|

Over every pair of Megatron-LM's measured runs (Narayanan et al., SC21,
Table 1: ten runs on one cluster and one software stack, differing in
model and layout; docs/VALIDATION.md, "Megatron-LM's weak-scaling table")
the mean of it is the near-tie threshold (REPORT_TIE_PCT,
search/cmd_report.c; tests/tie_error.py checks the two agree).  It reads
the table as docs/VALIDATION.md records it, which
`scripts/megatron_table1.py build/prism --markdown` writes; give that
output on standard input ("-") to take a fresh run's.

With --gpu PRISM it also prints the same figure over our H100 set's pairs
of one model with one and four microbatches (tests/data/gpu), each point
predicted by `prism synth` from its shape and gpt_bench's optimizer (pure
bf16 fused AdamW, no clipping): not the threshold (see
docs/VALIDATION.md, "Near-tie threshold", for why).

usage: scripts/tie_error.py [VALIDATION.md | -] [--gpu PRISM [DATA_DIR]]
"""
import itertools
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")


def pair_errors(measured, predicted):
    """Each pair's |error of the predicted ratio| (fractions)."""
    n = len(measured)
    return [abs((predicted[i] / predicted[j]) / (measured[i] / measured[j]) - 1)
            for i, j in itertools.combinations(range(n), 2)]


def table1(lines):
    """(published, analytic, simulated TFLOP/s, params) per row of Table 1's
    Markdown table (megatron_table1.py --markdown's columns)."""
    rows = []
    for line in lines:
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) == 14 and c[0].endswith("B") and c[0][:-1].replace(".", "").isdigit():
            rows.append((float(c[7]), float(c[8]), float(c[10]), c[0]))
    return rows


def megatron(path):
    lines = sys.stdin.readlines() if path == "-" else open(path).readlines()
    if path != "-":
        # The table of the section "Megatron-LM's weak-scaling table".
        start = next(i for i, x in enumerate(lines) if x.startswith("## Megatron-LM's weak"))
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
        lines = lines[start:end]
    rows = table1(lines)
    if len(rows) < 2:
        sys.exit(f"tie_error.py: {path}: no Table 1 rows found")
    pub = [r[0] for r in rows]
    return rows, pair_errors(pub, [r[2] for r in rows]), pair_errors(pub, [r[1] for r in rows])


def gpu_pairs(prism, data):
    pts = [json.loads(x) for x in open(os.path.join(data, "manifest.jsonl"))]
    pts = {p["tag"]: p for p in pts if "step_ms_median" in p and not p.get("compiled")}
    pred = {}
    with tempfile.TemporaryDirectory() as d:
        for tag, r in pts.items():
            m = os.path.join(d, "bench.cfg")
            with open(m, "w") as f:
                f.write(f'name = "bench";\nlayers = {r["layers"]};\nhidden = {r["hidden"]};\n'
                        f'heads = {r["heads"]};\nseq = {r["seq"]};\nvocab = {r["vocab"]};\n'
                        "tie_embeddings = false;\n")
            # gpt_bench's optimizer (pure bf16 fused AdamW, no clipping),
            # its plain PyTorch modules and no dropout
            out = subprocess.run([prism, "synth", m, "--hw", "h100-dgx", "--json", "--mbs",
                                  str(r["mbs"]), "--microbatches", str(r["microbatches"]),
                                  "--optimizer-dtype", "bf16", "--no-clip-grad",
                                  "--framework", "torch", "--no-dropout"],
                                 check=True, capture_output=True, text=True).stdout
            pred[tag] = json.loads(out)["iteration_s"] * 1e3
    print("| model | measured m1 / m4 ms | predicted m1 / m4 ms | pair error | "
          "fixed part measured / predicted ms |")
    print("|---|---:|---:|---:|---:|")
    errs = []
    for a in sorted(pts, key=lambda t: (pts[t]["hidden"], pts[t]["layers"])):
        b = a.replace("-m1-", "-m4-")
        if a == b or b not in pts:
            continue
        ma, mb, pa, pb = pts[a]["step_ms_median"], pts[b]["step_ms_median"], pred[a], pred[b]
        e = pair_errors([ma, mb], [pa, pb])[0]
        errs.append(e)
        # one step = fixed + microbatches x per-microbatch: the fixed part
        fm, fp = (4 * ma - mb) / 3, (4 * pa - pb) / 3
        print(f"| {a.replace('-m1-eager', '')} | {ma:.2f} / {mb:.2f} | {pa:.2f} / {pb:.2f} | "
              f"{100 * e:.1f}% | {fm:.1f} / {fp:.1f} |")
    print(f"\nH100 set, one vs four microbatches: mean pair error {100 * sum(errs) / len(errs):.1f}%"
          f" over {len(errs)} pairs")


def main():
    args = sys.argv[1:]
    gpu = None
    if "--gpu" in args:
        i = args.index("--gpu")
        gpu = args[i + 1:i + 3]
        del args[i:i + 3]
    path = args[0] if args else os.path.join(ROOT, "docs", "VALIDATION.md")
    rows, es, ea = megatron(path)
    pairs = list(itertools.combinations([r[3] for r in rows], 2))
    w = pairs[es.index(max(es))]
    print(f"Megatron-LM SC21 Table 1, {len(rows)} runs, {len(es)} pairs: mean pair error "
          f"simulated {100 * sum(es) / len(es):.1f}% (worst {100 * max(es):.1f}%: {w[0]} "
          f"against {w[1]}), analytic {100 * sum(ea) / len(ea):.1f}% "
          f"(worst {100 * max(ea):.1f}%)")
    print(f"near-tie threshold: {100 * sum(es) / len(es):.1f}")
    if gpu:
        print()
        gpu_pairs(gpu[0], gpu[1] if len(gpu) > 1 else os.path.join(ROOT, "tests", "data", "gpu"))


if __name__ == "__main__":
    main()
