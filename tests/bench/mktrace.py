#!/usr/bin/env python3
"""Write a large Kineto trace by replicating a real one.

The events of SOURCE are written COPIES times; copy k has its timestamps
shifted by k x (the source's span + 1 ms) and its correlation, External id
and flow ids offset so they stay unique.  The result is a valid trace of one
rank whose every event is real, just repeated: what the ingest benchmark
reads.  Written with json.dumps per event, streamed, so memory stays small.

Usage: mktrace.py SOURCE.json[.gz] OUT.json MIN_MEGABYTES
"""
import gzip
import json
import sys


def main():
    src, out, min_mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rt") as f:
        doc = json.load(f)
    events = doc.pop("traceEvents")
    ts = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    span = max(ts) - min(ts) + 1000
    ids = [e.get("args", {}).get(k) for e in events
           for k in ("correlation", "External id") if isinstance(e.get("args"), dict)]
    ids += [e.get("id") for e in events]
    id_step = max(i for i in ids if isinstance(i, int)) + 1
    lines = [None] * len(events)
    written = 0
    with open(out, "w") as f:
        head = json.dumps(doc)[:-1]
        f.write(head + (", " if doc else "") + '"traceEvents": [\n')
        copy = 0
        first = True
        while written < min_mb * 1e6:
            for i, e in enumerate(events):
                e = dict(e)
                if isinstance(e.get("ts"), (int, float)):
                    e["ts"] = e["ts"] + copy * span
                if isinstance(e.get("id"), int):
                    e["id"] = e["id"] + copy * id_step
                if isinstance(e.get("args"), dict):
                    a = dict(e["args"])
                    for k in ("correlation", "External id"):
                        if isinstance(a.get(k), int) and a[k] > 0:
                            a[k] = a[k] + copy * id_step
                    e["args"] = a
                lines[i] = json.dumps(e)
            text = ("" if first else ",\n") + ",\n".join(lines)
            first = False
            f.write(text)
            written += len(text)
            copy += 1
        f.write("\n]}\n")
    print(f"{out}: {copy} copies of {len(events)} events, {written / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
