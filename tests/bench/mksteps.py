#!/usr/bin/env python3
"""A trace of N tiny steps (a step range, one launch, one kernel each), to
time what grows with the step count: replay's per-step breakdowns.

usage: mksteps.py N OUT.json
"""
import json
import sys


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    ev, t = [], 0
    for i in range(n):
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}",
                   "pid": 1, "tid": 1, "ts": t, "dur": 50})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": t + 5, "dur": 5, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": t + 12,
                   "dur": 30, "args": {"correlation": i + 1, "stream": 7, "device": 0}})
        t += 50
    with open(out, "w") as f:
        json.dump({"traceEvents": ev}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
