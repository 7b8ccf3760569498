#!/usr/bin/env python3
"""The timeline as Perfetto draws it: one process_name record per process;
every track's slices nested within their parents (ProfilerStep, the
prism:: ranges, ops); a launch-to-kernel arrow (ac2g flow) from each
launching call to the GPU task it launched; the critical path marked, as
a track of its own whose slices follow one another and end with the run,
and on the tasks' own slices.  On a synthesised two-stage pipeline (two
ranks in one file) and the hand-made traces.

usage: timeline_shape.py PRISM DATA_DIR   (DATA_DIR: tests/data)
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

PRISM, DATA = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])


def check(cond, msg):
    if not cond:
        sys.exit("FAIL: " + msg)


def ns(v):
    return round(float(v) * 1000)


def shape(path, what):
    with open(path) as f:
        ev = json.load(f)["traceEvents"]
    names = collections.Counter(e["pid"] for e in ev
                                if e["ph"] == "M" and e["name"] == "process_name")
    check(names and max(names.values()) == 1, f"{what}: process_name records {names}")
    pids = {e["pid"] for e in ev if e["ph"] == "X"}
    check(pids <= set(names), f"{what}: processes without a name {pids - set(names)}")

    # Nesting, track by track: sorted by start (longest first), each slice
    # ends within the slice open around it.
    tracks = collections.defaultdict(list)
    for e in ev:
        if e["ph"] == "X":
            tracks[(e["pid"], e["tid"])].append(e)
    for key, xs in tracks.items():
        xs.sort(key=lambda e: (ns(e["ts"]), -ns(e["dur"])))
        stack = []
        for e in xs:
            a, b = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
            while stack and stack[-1][0] <= a:
                stack.pop()
            if stack and b > stack[-1][0]:
                check(False, f"{what}: {e['name']} [{a}, {b}) straddles {stack[-1][1]} "
                      f"ending at {stack[-1][0]} on {key}")
            stack.append((b, e["name"]))

    # Arrows: one start and one end per id; the start where a runtime call
    # starts on its thread, the end where a GPU task starts on its stream.
    starts = {(e["pid"], e["tid"], ns(e["ts"])) for e in ev
              if e["ph"] == "X" and e["cat"] == "cuda_runtime"}
    gpu = {(e["pid"], e["tid"], ns(e["ts"])) for e in ev
           if e["ph"] == "X" and e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")}
    s = {e["id"]: e for e in ev if e["ph"] == "s"}
    f = {e["id"]: e for e in ev if e["ph"] == "f"}
    check(len(s) == sum(e["ph"] == "s" for e in ev) and s.keys() == f.keys() and s,
          f"{what}: flow starts and ends do not pair")
    for i in s:
        check(s[i]["cat"] == "ac2g" and f[i]["bp"] == "e", f"{what}: flow {i}")
        check((s[i]["pid"], s[i]["tid"], ns(s[i]["ts"])) in starts,
              f"{what}: flow {i} starts at no runtime call")
        check((f[i]["pid"], f[i]["tid"], ns(f[i]["ts"])) in gpu,
              f"{what}: flow {i} ends at no GPU task")
    check(len(f) >= len(gpu) // 2, f"{what}: {len(f)} arrows for {len(gpu)} GPU tasks")

    # The critical path: its own process, slices back to back to the end
    # of the run; its tasks flagged where they are drawn.
    cp = [n["pid"] for n in ev if n["ph"] == "M" and n["name"] == "process_name" and
          n["args"]["name"] == "critical path"]
    check(len(cp) == 1, f"{what}: critical path process {cp}")
    path = sorted((e for e in ev if e["ph"] == "X" and e["pid"] == cp[0]),
                  key=lambda e: ns(e["ts"]))
    check(path and all(e["cat"] == "prism_critical_path" for e in path), f"{what}: path")
    for a, b in zip(path, path[1:]):
        check(ns(a["ts"]) + ns(a["dur"]) <= ns(b["ts"]), f"{what}: path slices overlap")
    last = max(ns(e["ts"]) + ns(e["dur"]) for e in ev
               if e["ph"] == "X" and e["cat"] in ("kernel", "cpu_op", "cuda_runtime",
                                                  "gpu_memcpy", "gpu_memset"))
    check(ns(path[-1]["ts"]) + ns(path[-1]["dur"]) == last,
          f"{what}: the path ends at {ns(path[-1]['ts']) + ns(path[-1]['dur'])}, the run at "
          f"{last}")
    flagged = sum(1 for e in ev if e["ph"] == "X" and e.get("args", {}).get("critical_path"))
    check(flagged > 0, f"{what}: no slice flagged critical_path")
    print(f"ok: {what}: {len(names)} processes named once, {len(tracks)} tracks nested, "
          f"{len(s)} launch arrows, critical path of {len(path)} tasks")


with tempfile.TemporaryDirectory() as d:
    def run(*args):
        r = subprocess.run([PRISM, *args], capture_output=True, text=True, cwd=d)
        check(r.returncode == 0, f"prism {' '.join(args)}: {r.stderr}")

    run("synth", "gpt-small", "--hw", "h100-dgx", "--pp", "2", "--microbatches", "4",
        "--layers", "4", "-o", "run.json")
    run("replay", "run.rank0.json", "run.rank1.json", "--timeline", "pipe.json")
    shape(os.path.join(d, "pipe.json"), "synthesised 2-stage pipeline, 2 ranks")
    shape(os.path.join(d, "run.rank0.json"), "synth's own trace, rank 0")
    for t in ("golden_2023.json", "ahead_2024.json"):
        run("replay", os.path.join(DATA, t), "--timeline", "t.json")
        shape(os.path.join(d, "t.json"), t)
