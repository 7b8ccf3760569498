#!/usr/bin/env python3
"""The trace reader's memory follows the work, not the text, and its time
is linear: 96 MB of whitespace between events, after the last or between
top-level keys, from a gzip file of 96 KB, streams past in a fixed amount
of memory (it was all held, and rescanned on every read: 256 MB took
17 s); names longer than 64 KiB, events longer than 16 MiB and top-level
values longer than 64 MiB are refused with one line naming the byte or the
event (exit 2); keys crafted to collide in its hash tables cost no more
than others.

usage: trace_streaming.py PRISM DATA   (DATA: tests/data)
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib

from sweeptest import check

PRISM, DATA = sys.argv[1], sys.argv[2]
with open(os.path.join(DATA, "golden_2023.json")) as f:
    EVENTS = [json.dumps(e) for e in json.load(f)["traceEvents"]]
MB = 1 << 20


def run(*args, code=0):
    """prism's stderr, wall time and peak RSS in MB (of this run alone)."""
    t = time.monotonic()
    p = subprocess.Popen([PRISM, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read().decode()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    check(p.returncode == code, f"prism {' '.join(args)} exited {p.returncode}: {err}")
    return err, time.monotonic() - t, ru.ru_maxrss / 1024


class Spaces:
    """n bytes of whitespace."""

    def __init__(self, n):
        self.n = n


_members = {}


def member(p):
    """p as one gzip member (concatenated members are one stream to prism);
    whitespace compressed a MB at a time, once per size (this process stays
    small: a child's peak RSS counts what it shared before exec)."""
    if not isinstance(p, Spaces):
        return gzip.compress(p.encode(), 6)
    if p.n not in _members:
        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        chunk = b" " * MB
        out = [z.compress(chunk) for _ in range(p.n // MB)]
        _members[p.n] = b"".join(out) + z.compress(b" " * (p.n % MB)) + z.flush()
    return _members[p.n]


def gz(path, *parts):
    with open(path, "wb") as f:
        for p in parts:
            f.write(member(p))
    return path


with tempfile.TemporaryDirectory() as d:
    _, _, base_rss = run("ingest", os.path.join(DATA, "golden_2023.json"))
    ws = Spaces(96 * MB)
    head = '{"traceEvents":['
    cases = [
        ("between", gz(os.path.join(d, "between.json.gz"), head, EVENTS[0], ",", ws,
                       ",".join(EVENTS[1:]), "]}")),
        ("after the last", gz(os.path.join(d, "after.json.gz"), head, ",".join(EVENTS), ws,
                              "]}")),
        ("between keys", gz(os.path.join(d, "keys.json.gz"), '{"schemaVersion": 1,', ws,
                            '"traceEvents":[', ",".join(EVENTS), "]", ws, "}")),
    ]
    for what, path in cases:
        err, t, rss = run("ingest", path)
        check(rss < base_rss + 48, f"whitespace {what}: {rss:.0f} MB held (a small trace: "
              f"{base_rss:.0f} MB)")
    # The bad byte is found past the whitespace, at its offset.
    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        f.write(head + EVENTS[0])
        for _ in range(9):
            f.write(" " * MB)
        f.write(" x]}")
    err, _, _ = run("ingest", bad, code=2)
    at = len(head) + len(EVENTS[0]) + 9 * MB + 1
    check(err == f"prism: {bad}: byte {at}: expected ',' or ']' after event 0\n", err)

    # Limits.
    long_name = dict(json.loads(EVENTS[3]), name="k" * 100000)
    path = os.path.join(d, "name.json")
    with open(path, "w") as f:
        f.write(head + ",".join(EVENTS + [json.dumps(long_name)]) + "]}")
    err, _, _ = run("ingest", path, code=2)
    check(f"event {len(EVENTS)} (byte " in err and "field \"name\": 100000 bytes long, more "
          "than 65536" in err, err)
    path = gz(os.path.join(d, "event.json.gz"), head, EVENTS[0], ',{"ph": "X",',
              Spaces(17 * MB), '"ts": 1, "dur": 1}]}')
    err, _, _ = run("ingest", path, code=2)
    at = len(head) + len(EVENTS[0]) + 1
    check(err == f"prism: {path}: byte {at}: event 1 is longer than 16777216 bytes\n", err)
    path = gz(os.path.join(d, "top.json.gz"), '{"junk": [', Spaces(65 * MB), '1],',
              '"traceEvents":[', EVENTS[0], "]}")
    err, _, _ = run("ingest", path, code=2)
    check(err == f"prism: {path}: byte 9: the value of a top-level key is longer than "
          "67108864 bytes\n", err)

    # Keys crafted to collide in the hash tables: correlation ids 2^47
    # apart (one slot chain: 50,000 launches took 11 s), and (pid, tid)
    # pairs with one 63-bit thread key (each event scanned every thread).
    # Each must take about as long as the same trace with plain keys.
    def events(corr, tid):
        ev = []
        for i in range(30000):
            c = corr(i)
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                       "pid": 1, "tid": 1, "ts": 10 * i, "dur": 2, "args": {"correlation": c}})
            ev.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                       "ts": 10 * i + 3, "dur": 2,
                       "args": {"correlation": c, "stream": 7, "device": 0}})
        for i in range(100000):
            ev.append({"ph": "X", "cat": "cpu_op", "name": "op", "pid": i + 2, "tid": tid(i + 2),
                       "ts": 10 * i, "dur": 1})
        return {"traceEvents": ev}

    C1, C2, M = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 2**64

    def tid_colliding(pid):
        t = ((12345 ^ (pid * C1 % M)) * pow(C2, -1, M)) % M
        return t - M if t >= 2**63 else t

    took = {}
    for what, corr, tid in (("plain", lambda i: i + 1, lambda pid: pid + 7),
                            ("crafted", lambda i: (i + 1) << 47, tid_colliding)):
        path = os.path.join(d, what + ".json")
        with open(path, "w") as f:
            json.dump(events(corr, tid), f)
        _, took[what], _ = run("ingest", path)
    check(took["crafted"] < 5 * max(took["plain"], 0.2),
          f"crafted keys: {took['crafted']:.2f} s, plain keys {took['plain']:.2f} s")
print("whitespace streams past; names, events and top-level values have limits; "
      "crafted keys do not collide")
