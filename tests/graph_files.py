#!/usr/bin/env python3
"""Saved graph files are checked, not trusted: files made by hand with a
valid checksum but bad contents -- an index, count, string id, kind or time
out of range -- are refused with one line (exit 2) by every command, never
crash (an out-of-range rank path index crashed ingest, a processor range
overflowed a buffer in graph_check), hang (a bad step id hung whatif) or
write a timeline prism cannot read back.  Then many random damages, each
with its checksum made right: every one is refused, or ingests, replays
and writes a timeline that reads back.

usage: graph_files.py PRISM DATA   (DATA: tests/data)
"""
import os
import random
import struct
import subprocess
import sys
import tempfile

from sweeptest import check

PRISM, DATA = sys.argv[1], sys.argv[2]

HEADER = struct.Struct("<8sII7IIQq")  # magic .. n_strings, pad, str_bytes, t0_ns
# Per-node columns in file order: (name, struct format of one element).
NODE_COLS = [("start", "q"), ("dur", "q"), ("wait", "q"), ("lag", "q"), ("corr", "q"),
             ("proc", "I"), ("name", "I"), ("op", "I"), ("op_dims", "I"), ("op_types", "I"),
             ("src", "I"), ("coll", "I"), ("iter", "i"), ("layer", "i"), ("mb", "i"),
             ("phase", "B"), ("kind", "B"), ("flags", "B"), ("rtclass", "B")]
PROC = struct.Struct("<IB3xqqII")     # rank, gpu, pid, tid, first, n
RANK = struct.Struct("<qqIIq7Q")      # rank, world_size, path, device, device_mem, ...
ITER = struct.Struct("<IIqqq")        # rank, proc, step, start_ns, dur_ns
COLL = struct.Struct("<IB3xqqIIII")   # node, kind, bytes, group_size, pg, ranks, dtype, seq


def fnv(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


class Graph:
    """A graph file as offsets of its fields, to damage one and re-sum."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.b = bytearray(f.read())
        h = HEADER.unpack_from(self.b, 0)
        (self.nn, self.ne, self.np, self.nr, self.ni, self.nc, self.ns) = h[3:10]
        self.str_bytes = h[11]
        off = HEADER.size
        self.col = {}
        for name, fmt in NODE_COLS:
            self.col[name] = (off, fmt)
            off += self.nn * struct.calcsize(fmt)
        self.col["out_off"] = (off, "I")
        off += 4 * (self.nn + 1)
        self.col["out_dst"] = (off, "I")
        off += 4 * self.ne
        self.col["out_kind"] = (off, "B")
        off += self.ne
        self.procs, self.ranks, self.iters, self.colls = off, 0, 0, 0
        off += PROC.size * self.np
        self.ranks = off
        off += RANK.size * self.nr
        self.iters = off
        off += ITER.size * self.ni
        self.colls = off
        off += COLL.size * self.nc
        self.stats = off
        self.strings = len(self.b) - 8 - self.str_bytes
        self.meta = self.strings - 4
        check(self.meta > self.stats, f"{path}: layout not understood")

    def node(self, name, u, v):
        off, fmt = self.col[name]
        struct.pack_into("<" + fmt, self.b, off + u * struct.calcsize(fmt), v)

    def get(self, name, u):
        off, fmt = self.col[name]
        return struct.unpack_from("<" + fmt, self.b, off + u * struct.calcsize(fmt))[0]

    def rec(self, base, st, i, field, v):
        vals = list(st.unpack_from(self.b, base + i * st.size))
        vals[field] = v
        st.pack_into(self.b, base + i * st.size, *vals)

    def write(self, path):
        struct.pack_into("<Q", self.b, len(self.b) - 8, fnv(self.b[:-8]))
        with open(path, "wb") as f:
            f.write(self.b)


def run(*args):
    return subprocess.run([PRISM, *args], capture_output=True, text=True, timeout=60)


def blocking(g):
    for u in range(g.nn):
        if g.get("flags", u) & 1:
            return u
    check(False, "no blocking call in the base graph")


with tempfile.TemporaryDirectory() as d:
    base = os.path.join(d, "base.prism")
    for trace in ("golden_2023.json", "alltoall_2023.json"):
        r = run("ingest", os.path.join(DATA, trace), "-o", base + "." + trace)
        check(r.returncode == 0, f"ingest {trace}: {r.stderr}")
    g0 = Graph(base + ".golden_2023.json")
    c0 = Graph(base + ".alltoall_2023.json")
    check(c0.nc > 0 and g0.ni > 0, "the base graphs have collectives and iterations")
    last = g0.nn - 1
    INCONS = "inconsistent graph file: graph: "
    # (what, graph, damage, the message's end)
    cases = [
        ("rank path index", g0, lambda g: g.rec(g.ranks, RANK, 0, 2, 0x7FFFFFF0),
         INCONS + "rank 0 names a string out of range"),
        ("rank device index", g0, lambda g: g.rec(g.ranks, RANK, 0, 3, 0xFFFFFFFF),
         INCONS + "rank 0 names a string out of range"),
        ("processor range", g0, lambda g: g.rec(g.procs, PROC, 0, 5, 0xFFFFFFF0),
         "holds 4294967280 nodes, beyond the"),
        ("processor rank", g0, lambda g: g.rec(g.procs, PROC, 0, 0, 7), "on rank 7 out of range"),
        ("processor kind", g0, lambda g: g.rec(g.procs, PROC, 0, 1, 9), "out of range"),
        ("iteration processor", g0, lambda g: g.rec(g.iters, ITER, 0, 1, 4000),
         "iteration 0 on rank 0 or processor 4000 out of range"),
        ("iteration rank", g0, lambda g: g.rec(g.iters, ITER, 0, 0, 3), "out of range"),
        ("iteration time", g0, lambda g: g.rec(g.iters, ITER, 0, 4, -5),
         "iteration 0 has a time beyond"),
        ("iteration end", g0, lambda g: g.rec(g.iters, ITER, 0, 3, 2**62),
         "iteration 0 has a time beyond"),
        ("node kind", g0, lambda g: g.node("kind", 3, 200), "node 3 has kind 200"),
        ("node processor", g0, lambda g: g.node("proc", 3, 99), "node 3 on processor 99"),
        ("node name", g0, lambda g: g.node("name", 3, 10**6), "names string 1000000 out of range"),
        ("node op dims", g0, lambda g: g.node("op_dims", 3, 10**6), "out of range"),
        ("node time", g0, lambda g: g.node("start", 3, 2**62), "node 3 has a time beyond"),
        ("node end", g0, lambda g: g.node("dur", 3, 2**62 - 1), "node 3 has a time beyond"),
        ("node lag", g0, lambda g: g.node("lag", 3, -1), "node 3 has a negative duration"),
        ("layer", g0, lambda g: g.node("layer", 3, 2**31 - 1), "node 3 has a bad annotation"),
        ("runtime class", g0, lambda g: g.node("rtclass", 3, 77), "node 3 has runtime class 77"),
        ("blocking last", g0, lambda g: g.node("flags", last, g.get("flags", last) | 1),
         f"blocking call {last} is not followed by its wait"),
        ("blocking without wait", g0, lambda g: g.node("kind", blocking(g) + 1, 0),
         "is not followed by its wait"),
        ("edge target", g0, lambda g: g.node("out_dst", 0, 10**6), "edge 0 targets node"),
        ("edge kind", g0, lambda g: g.node("out_kind", 0, 0x7f), "edge 0 targets node"),
        ("offsets", g0, lambda g: g.node("out_off", 1, 10**6), "CSR offsets"),
        ("collective kind", c0, lambda g: g.rec(g.colls, COLL, 0, 1, 99),
         "collective 0 has a kind or string out of range"),
        ("collective group", c0, lambda g: g.rec(g.colls, COLL, 0, 4, 10**6),
         "collective 0 has a kind or string out of range"),
        ("collective node", c0, lambda g: g.rec(g.colls, COLL, 0, 0, 10**6),
         "do not point at each other"),
        ("meta", g0, lambda g: struct.pack_into("<I", g.b, g.meta, 1),
         "not a run description"),
        ("string not UTF-8", g0, lambda g: g.b.__setitem__(g.strings + 1, 0xC0),
         "inconsistent graph file: string 1 is not UTF-8"),
        ("time 0", g0, lambda g: struct.pack_into("<q", g.b, 56, -2**63 + 5),
         "inconsistent graph file: its time 0 is beyond 4611686018427387903 ns"),
    ]
    for what, base_g, damage, msg in cases:
        g = Graph.__new__(Graph)
        g.__dict__.update(base_g.__dict__)
        g.b = bytearray(base_g.b)
        damage(g)
        path = os.path.join(d, "bad.prism")
        g.write(path)
        for cmd in (["ingest", path], ["replay", path],
                    ["whatif", path, "--dp", "2", "--base-hw", "h100-dgx"]):
            r = run(*cmd)
            check(r.returncode == 2 and msg in r.stderr and r.stderr.count("\n") == 1,
                  f"{what}: prism {cmd[0]} exited {r.returncode}: {r.stderr}")

    # A step id of 2^63 - 1 is a number like any other: whatif ends.
    g = Graph.__new__(Graph)
    g.__dict__.update(g0.__dict__)
    g.b = bytearray(g0.b)
    g.rec(g.iters, ITER, 0, 2, 2**63 - 1)
    path = os.path.join(d, "step.prism")
    g.write(path)
    r = run("whatif", path, "--hw", "a100-80gb-dgx", "--base-hw", "h100-dgx")
    check(r.returncode == 0, f"step 2^63 - 1: whatif exited {r.returncode}: {r.stderr}")

    # Random damage with the checksum made right: refused, or every
    # command runs and the timeline reads back.
    rng = random.Random(22)
    refused = accepted = 0
    for i in range(120):
        src = g0 if i % 2 else c0
        b = bytearray(src.b)
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(HEADER.size, len(b) - 8)
            b[k] = rng.choice([0, 0xFF, 0x80, 0x7F, rng.randrange(256)])
        g = Graph.__new__(Graph)
        g.__dict__.update(src.__dict__)
        g.b = b
        path = os.path.join(d, f"rand{i}.prism")
        g.write(path)
        r = run("ingest", path)
        check(r.returncode in (0, 2), f"random damage {i}: ingest exited {r.returncode}: "
              f"{r.stderr}")
        if r.returncode == 2:
            refused += 1
            continue
        accepted += 1
        tl = os.path.join(d, f"rand{i}.json")
        r = run("replay", path, "--timeline", tl)
        check(r.returncode in (0, 2), f"random damage {i}: replay exited {r.returncode}: "
              f"{r.stderr}")
        if r.returncode == 0:
            r = run("ingest", tl, "--allow-dangling")
            check(r.returncode in (0, 2) and "byte" not in r.stderr,
                  f"random damage {i}: its timeline does not read back: {r.stderr}")
print(f"{len(cases)} damaged graph files refused; {refused} random damages refused, "
      f"{accepted} read")
