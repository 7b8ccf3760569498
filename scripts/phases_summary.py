#!/usr/bin/env python3
"""Summarise gpu_probe.py's phases.csv: the power balance's time scale.

For each GEMM dtype, idle kind (the GPU idle, or spinning as a waiting
collective does) and idle length, over the repetitions: the settled
stream's median call (the last 100 ms before the idle phase), the first
call after the idle phase against it (how far the clock recovered while
the GPU idled), and how long after the idle phase five calls in a row
are back within 1 % of the settled one (either way) (how fast a busy GPU falls to its limit
again).  What it decides (docs/MODEL.md, "A step's own mix"): whether a
pipeline's fill and drain, or an exposed collective, of that length count
as waiting in a step's power balance, or pass too quickly to move the
clock.

Usage: phases_summary.py PHASES_CSV [--markdown]
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict


def summarise(rows):
    """{(dtype, kind, idle_ms): [(settled, first, back_ms), ...]} a rep."""
    runs = defaultdict(lambda: {"ref": [], "after": []})
    for r in rows:
        key = (r["dtype"], r["idle_kind"], r["test"], r["rep"])
        (runs[key]["ref"] if int(r["call"]) < 0 else runs[key]["after"]).append(
            (float(r["start_ms"]), float(r["ms"]), int(r["idle_ms"])))
    out = defaultdict(list)
    for (dt, kind, _test, _rep), v in runs.items():
        if not v["ref"] or not v["after"]:
            continue
        settled = statistics.median(x[1] for x in v["ref"])
        after = sorted(v["after"])
        idle = after[0][2]
        back = None
        for i, (t, ms, _) in enumerate(after):
            if all(abs(m - settled) <= 0.01 * settled for _, m, _ in after[i:i + 5]):
                back = t
                break
        out[(dt, kind, idle)].append((settled, after[0][1], back))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("csv", help="phases.csv from scripts/gpu_probe.py --only phases")
    ap.add_argument("--markdown", action="store_true", help="a markdown table")
    a = ap.parse_args()
    try:
        with open(a.csv, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as err:
        sys.exit(f"phases_summary.py: {a.csv}: {err.strerror}")
    need = {"dtype", "idle_kind", "test", "rep", "call", "start_ms", "ms", "idle_ms"}
    if not rows or not need <= set(rows[0]):
        sys.exit(f"phases_summary.py: {a.csv}: not a phases.csv (columns {sorted(need)})")
    s = summarise(rows)
    head = ["dtype", "idle", "idle ms", "reps", "settled ms", "first after / settled",
            "back within 1 % after (ms)"]
    lines = []
    for (dt, kind, idle) in sorted(s):
        v = s[(dt, kind, idle)]
        settled = statistics.median(x[0] for x in v)
        first = statistics.median(x[1] / x[0] for x in v)
        backs = [x[2] for x in v if x[2] is not None]
        back = f"{statistics.median(backs):.1f}" if backs else "not in the phase"
        lines.append([dt, kind, str(idle), str(len(v)), f"{settled:.4f}", f"{first:.4f}", back])
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for ln in lines:
            print("| " + " | ".join(ln) + " |")
    else:
        print("\t".join(head))
        for ln in lines:
            print("\t".join(ln))


if __name__ == "__main__":
    main()
