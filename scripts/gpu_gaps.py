#!/usr/bin/env python3
"""Where a trace's GPU waited, straight from the trace (no prism involved).

  gpu_gaps.py TRACE [MIN_US]
      device-wide idle gaps of at least MIN_US (default 1000): when, how
      long, the task after the gap, and the call that launched it (a
      cudaGraphLaunch, or none when the launch preceded the window).
  gpu_gaps.py TRACE --late NAME [MIN_US]
      GPU tasks whose name contains NAME that began at least MIN_US
      (default 1000) after both their launch call and their stream's
      previous task ended, with the task on another stream that was running
      when they began: its name, how long after their start it ended, and
      its "blocks per SM".

Times are ms from the trace's first GPU task.  docs/MODEL.md and
docs/VALIDATION.md quote its output for the torchrec and DLRM traces.
"""
import bisect
import gzip
import json
import sys

GPU = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")
HOST = ("cuda_runtime", "cuda_driver", "Runtime")


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)["traceEvents"]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    late = "--late" in sys.argv
    if not args or (late and len(args) < 2):
        sys.exit(__doc__)
    ev = load(args[0])
    prefix = args[1] if late else None
    thr = float(args[2 if late else 1]) if len(args) > (2 if late else 1) else 1000.0
    launch = {e["args"].get("correlation"): e for e in ev
              if e.get("ph") == "X" and e.get("cat") in HOST}
    gpu = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") in GPU),
                 key=lambda e: e["ts"])
    t0 = gpu[0]["ts"]
    if not late:
        end = gpu[0]["ts"]
        for e in gpu:
            if e["ts"] - end >= thr:
                c = launch.get(e["args"].get("correlation"))
                how = (f"{c['name']} at {(c['ts'] - t0) / 1e3:.3f} ms on thread {c['tid']}"
                       if c else "a launch before the window")
                print(f"{(e['ts'] - t0) / 1e3:10.3f} ms  idle {(e['ts'] - end) / 1e3:8.3f} ms "
                      f"before {e['name'][:40]} (stream {e['args'].get('stream')}), "
                      f"launched by {how}")
            end = max(end, e["ts"] + e["dur"])
        return
    streams = {}
    for e in gpu:
        streams.setdefault(e["args"].get("stream"), []).append(e)
    starts = {s: [e["ts"] for e in v] for s, v in streams.items()}
    for s, tasks in streams.items():
        for prev, e in zip([None] + tasks[:-1], tasks):
            c = launch.get(e["args"].get("correlation"))
            if not c or prefix not in e["name"]:
                continue
            ready = max(c["ts"] + c["dur"], prev["ts"] + prev["dur"] if prev else 0)
            if e["ts"] - ready < thr:
                continue
            best = None
            for s2, v in streams.items():
                i = bisect.bisect_right(starts[s2], e["ts"]) - 1
                if s2 != s and i >= 0 and v[i]["ts"] + v[i]["dur"] > e["ts"]:
                    k = v[i]
                    if best is None or k["ts"] + k["dur"] < best["ts"] + best["dur"]:
                        best = k
            held = (f"while {best['name'][:40]} (stream {best['args'].get('stream')}, "
                    f"{best['args'].get('blocks per SM', '?')} blocks per SM) ran, ending "
                    f"{best['ts'] + best['dur'] - e['ts']} us after it began"
                    if best else "with nothing running on another stream")
            print(f"{(e['ts'] - t0) / 1e3:10.3f} ms  {e['name'][:30]} (stream {s}) began "
                  f"{(e['ts'] - ready) / 1e3:.3f} ms late, {held}")


if __name__ == "__main__":
    main()
