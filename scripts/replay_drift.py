#!/usr/bin/env python3
"""Where does a replay drift from its trace?

Runs `prism replay --timeline` on one trace file, matches the timeline's
runtime calls and GPU tasks to the trace's by correlation id, and prints
the places where (simulated start - traced start) jumps by more than
THRESHOLD microseconds, biggest first: the first place to look when a
replay disagrees with its trace.

Usage: replay_drift.py PRISM TRACE [THRESHOLD_US] [N] [--by-time]
"""
import gzip
import json
import subprocess
import sys
import tempfile


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    prism, trace = args[0], args[1]
    thr = float(args[2]) if len(args) > 2 else 50
    top = int(args[3]) if len(args) > 3 else 20
    by_time = "--by-time" in sys.argv
    with tempfile.NamedTemporaryFile(suffix=".json") as tl:
        subprocess.run([prism, "replay", "--timeline", tl.name, trace], check=True,
                       stdout=subprocess.DEVNULL)
        sim = load(tl.name)
    doc = load(trace)
    host = ("cuda_runtime", "cuda_driver", "Runtime")
    gpu = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")
    base = doc.get("baseTimeNanoseconds", 0) / 1000
    orig, t0 = {}, None
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in host + gpu:
            key = (e["cat"] in host, e["args"]["correlation"], e.get("name"))
            orig.setdefault(key, e)
            ts = e["ts"] + base
            t0 = ts if t0 is None else min(t0, ts)
    rows = []
    for e in sim["traceEvents"]:
        if e.get("ph") != "X" or e["cat"] not in ("cuda_runtime", "kernel", "gpu_memcpy",
                                                  "gpu_memset"):
            continue
        key = (e["cat"] == "cuda_runtime", e["args"].get("correlation"), e["name"])
        o = orig.get(key)
        if o:
            rows.append((o["ts"] + base - t0, e["ts"], key[0], e["name"][:60], o["dur"],
                         e["dur"]))
    rows.sort()
    jumps = []
    for a, b in zip(rows, rows[1:]):
        d0, d1 = a[1] - a[0], b[1] - b[0]
        if abs(d1 - d0) > thr:
            jumps.append((abs(d1 - d0), d1 - d0, b))
    jumps.sort(key=(lambda j: j[2][0]) if by_time else None, reverse=not by_time)
    print(f"{len(rows)} tasks matched; {len(jumps)} drift jumps over {thr} us")
    for mag, delta, (t, s, is_host, name, d_tr, d_sim) in jumps[:top]:
        print(f"  at traced {t / 1e3:10.3f} ms: drift {delta:+10.1f} us  "
              f"{'host' if is_host else 'gpu '} {name}  dur {d_tr} -> {d_sim}")


if __name__ == "__main__":
    main()
