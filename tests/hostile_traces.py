#!/usr/bin/env python3
"""Traces made to overflow prism's arithmetic: times, durations and
baseTimeNanoseconds near the int64 limits, a job spanning more than 2^62 ns,
shapes, sizes, ids and annotations at their limits.  Each is refused with one
line naming the file and what is wrong (exit 2), or read and simulated
without an overflow: under the sanitizer build any signed overflow aborts
the run, so every case must end with its expected status and message.

usage: hostile_traces.py PRISM DATA   (DATA: tests/data)
"""
import copy
import json
import os
import sys
import tempfile

from sweeptest import check, prism

PRISM, DATA = sys.argv[1], sys.argv[2]
with open(os.path.join(DATA, "golden_2023.json")) as f:
    BASE = json.load(f)
with open(os.path.join(DATA, "layers_2024.json")) as f:
    LAYERS = json.load(f)
with open(os.path.join(DATA, "mismatch_2024.rank0.json")) as f:
    MISMATCH = json.load(f)

TMAX_US = (2**62 - 1) // 1000  # PRISM_TIME_MAX in microseconds, rounded down


def evs(d):
    return d["traceEvents"]


def shift(d, by):
    for e in evs(d):
        if "ts" in e:
            e["ts"] += by


def set_all(d, key, v):
    for e in evs(d):
        if key in e:
            e[key] = v


def ts_edges(d):
    """Half the events at -TMAX, half at +TMAX: the span is 2^63."""
    for i, e in enumerate(evs(d)):
        if "ts" in e:
            e["ts"] = TMAX_US - 1000 if i % 2 else -TMAX_US + 1000


def step_wide(d):
    """The first event far back: the same span, one event off."""
    evs(d)[0]["ts"] = -TMAX_US + 5


def comm(d, ranks=2**24):
    """Sizes at the int64 limit; groups of the most ranks a trace may state."""
    evs(d).append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1,
                   "ts": 111, "dur": 1, "args": {
                       "External id": 2, "Collective name": "allreduce",
                       "In msg nelems": 2**63 - 1, "Group size": ranks, "dtype": "Float",
                       "Process Group Name": "0", "Process Group Ranks": "[0]",
                       "Input Dims": [[99999999999, 99999999999], [99999999999999999999]]}})
    d["distributedInfo"]["pg_config"] = [{"pg_name": "0", "pg_size": ranks, "ranks": [0]}]
    d["distributedInfo"]["world_size"] = ranks


def nccl_group(d, size):
    """mismatch_2024's collective in a group of `size` ranks (2^40 reached
    calibrate's cost model as an int: a division by zero)."""
    for e in evs(d):
        if "Group size" in e.get("args", {}):
            e["args"]["Group size"] = size


def ids(d):
    for i, e in enumerate(evs(d)):
        a = e.get("args", {})
        for k in ("External id", "Sequence number", "Fwd thread id", "wait_on_stream",
                  "cbid", "bytes"):
            if k in a:
                a[k] = 2**63 - 1
        if "pid" in e and e.get("cat") not in ("kernel", "cuda_sync"):
            e["pid"] = 2**63 - 1


def two_halves(d):
    evs(d)[3]["dur"] = TMAX_US // 2 + 1000   # k_mm on stream 7
    evs(d)[10]["dur"] = TMAX_US // 2 + 1000  # g1, later on stream 7


def steps_apart(d):
    """Steps -2^63 + 1 and 2^63 - 1."""
    e = copy.deepcopy(evs(d)[0])
    e.update(name="ProfilerStep#9223372036854775807", ts=401, dur=10)
    evs(d)[0]["name"] = "ProfilerStep#-9223372036854775807"
    evs(d).append(e)


def annotate(d, name):
    evs(d).append({"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1,
                   "ts": 101, "dur": 5})


def scale_layers(d):
    """layers_2024 stretched to span 2^60 ns."""
    e = [x for x in evs(d) if "ts" in x]
    t0 = min(x["ts"] for x in e)
    span = max(x["ts"] + x.get("dur", 0) for x in e) - t0
    f = (2**60 // 1000) / span
    for x in e:
        x["ts"] = int((x["ts"] - t0) * f)
        if "dur" in x:
            x["dur"] = int(x["dur"] * f)


def big_corr(d):
    for e in evs(d):
        a = e.get("args", {})
        if "correlation" in a:
            a["correlation"] += 2**62


# (name, base, edit, command after the file, exit status, stderr substring)
TS = 'field "ts": value out of range (more than 4611686018427387 us)'
CASES = [
    ("ts_beyond", BASE, lambda d: shift(d, 2**63 // 1000 - 1000), ["ingest"], 2, TS),
    ("ts_before", BASE, lambda d: shift(d, -(2**63 // 1000) + 1000), ["ingest"], 2, TS),
    ("dur_beyond", BASE, lambda d: set_all(d, "dur", 2**63 // 1000 - 1000), ["ingest"], 2,
     'field "dur": value out of range'),
    ("end_beyond", BASE, lambda d: evs(d)[3].update(ts=TMAX_US - 10), ["ingest"], 2,
     "'k_mm': field \"dur\": the event ends beyond 4611686018427387 us"),
    ("base_beyond", BASE, lambda d: d.update(baseTimeNanoseconds=2**63 - 1000), ["ingest"], 2,
     'field "baseTimeNanoseconds": 9223372036854774808 is out of range'),
    ("base_plus_ts", BASE, lambda d: d.update(baseTimeNanoseconds=2**62 - 2000), ["ingest"], 2,
     'event 0: "ts" + "dur" + baseTimeNanoseconds is beyond 4611686018427387903 ns'),
    ("span", BASE, ts_edges, ["ingest"], 2, "the trace spans more than 4611686018427387903 ns"),
    ("span_one", BASE, step_wide, ["replay"], 2, "the trace spans more than"),
    # Within every limit, a kernel of 146 years: replayed as it was.
    ("dur_at_limit", BASE, lambda d: evs(d)[3].update(dur=TMAX_US - 200), ["replay"], 0, ""),
    # Two kernels of 73 years that overlapped in the trace run one after
    # the other on their stream: the simulation refuses to go past 2^62 ns.
    ("two_halves", BASE, two_halves, ["replay"], 2,
     "simulation: task 19 'g1' would end more than 4611686018427387903 ns"),
    ("two_halves_whatif", BASE, two_halves, ["whatif", "--dp", "4", "--base-hw", "h100-dgx"],
     2, "would end more than"),
    ("comm_sizes", BASE, comm, ["ingest"], 0, ""),
    # (A plain trace without gradient collectives takes no dp edit: the
    # hardware edit re-times its collectives.)
    ("comm_sizes_whatif", BASE, comm,
     ["whatif", "--hw", "a100-80gb-dgx", "--base-hw", "h100-dgx"], 0, ""),
    # Ranks beyond what a job may have (2^24, a layout's most GPUs): refused
    # where they are read, before a count of them becomes an int.
    ("group_beyond", MISMATCH, lambda d: nccl_group(d, 2**40), ["calibrate"], 2,
     "event 1 (byte 309) 'record_param_comms': field \"Group size\": 1099511627776 is out "
     "of range 0..16777216"),
    ("group_negative", MISMATCH, lambda d: nccl_group(d, -2), ["ingest"], 2,
     'field "Group size": -2 is out of range 0..16777216'),
    ("world_beyond", BASE, lambda d: comm(d, 2**63 - 1), ["ingest"], 2,
     'field "distributedInfo.world_size": 9223372036854775807 is out of range 0..16777216'),
    ("pg_size_beyond", BASE,
     lambda d: (comm(d), d["distributedInfo"]["pg_config"][0].update(pg_size=2**40)),
     ["ingest"], 2,
     'field "distributedInfo.pg_config[].pg_size": 1099511627776 is out of range 0..16777216'),
    ("rank_beyond", BASE, lambda d: d["distributedInfo"].update(rank=2**32), ["ingest"], 2,
     'field "distributedInfo.rank": 4294967296 is out of range 0..16777215'),
    ("ids", BASE, ids, ["replay"], 0, ""),
    ("layer_beyond", BASE, lambda d: annotate(d, "prism::layer#2147483648"), ["ingest"], 2,
     "'prism::layer#2147483648': layer 2147483648 out of range 0..65535"),
    ("microbatch_beyond", BASE, lambda d: annotate(d, "prism::microbatch#99999999999"),
     ["ingest"], 2, "microbatch 99999999999 out of range 0..65535"),
    ("wide_layers_x2", LAYERS, scale_layers, ["whatif", "--layers", "6"], 0, ""),
    ("wide_layers_x1000", LAYERS, scale_layers, ["whatif", "--layers", "3000"], 2,
     "would end more than 4611686018427387903 ns (146 years)"),
    ("corr_layers", LAYERS, big_corr, ["whatif", "--layers", "6"], 2,
     "correlation ids up to 4611686018427388003 leave no room to number the copies"),
    ("timeline_ids", BASE, ids, ["replay", "--timeline", "{dir}/t.json"], 0, ""),
    # Step numbers up to 2^63: whatif counted through every number up to
    # the largest, for ever.
    ("step_big", BASE, lambda d: evs(d)[0].update(name="ProfilerStep#9000000000000000000"),
     ["whatif", "--hw", "a100-80gb-dgx", "--base-hw", "h100-dgx"], 0, ""),
    ("step_beyond", BASE, lambda d: evs(d)[0].update(name="ProfilerStep#99999999999999999999"),
     ["whatif", "--hw", "a100-80gb-dgx", "--base-hw", "h100-dgx"], 0, ""),
    ("steps_apart", BASE, steps_apart,
     ["whatif", "--hw", "a100-80gb-dgx", "--base-hw", "h100-dgx"], 0, ""),
]

with tempfile.TemporaryDirectory() as tmp:
    for name, base, edit, cmd, code, msg in CASES:
        d = copy.deepcopy(base)
        edit(d)
        path = os.path.join(tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(d, f)
        args = [cmd[0], path] + [a.replace("{dir}", tmp) for a in cmd[1:]]
        r = prism(PRISM, *args, code=code)
        check(msg in r.stderr, f"{name}: expected '{msg}' in: {r.stderr}")
        check(code != 2 or r.stderr.count("\n") == 1, f"{name}: not one line: {r.stderr}")
    # A model whose kernels take longer than 2^63 ns on a slow GPU: the
    # times are held to 2^62 - 1 ns and the simulation refuses the run
    # (they wrapped negative and predicted 144,846,670,023 ms).
    hw = os.path.join(tmp, "slow.cfg")
    model = os.path.join(tmp, "big.cfg")
    with open(hw, "w") as f:
        f.write('name = "slow";\ngpu = { model = "slow"; peak_tflops = { fp32 = 0.001; '
                'tf32 = 0.001; bf16 = 0.001; fp16 = 0.001; fp8 = 0.001; };\n'
                'hbm_bandwidth_GBps = 1.0; hbm_capacity_GB = 100000.0; '
                'nvlink_bandwidth_GBps = 0.1; memory_reserve_GB = 0.0; };\n'
                'node = { gpus = 8; nics = 1; nic_bandwidth_Gbps = 0.1; '
                'nvlink_latency_us = 1000000.0; network_latency_us = 1000000.0; };\n')
    with open(model, "w") as f:
        f.write('name = "big";\nlayers = 256;\nhidden = 1048576;\nheads = 4096;\n'
                'seq = 4194304;\nvocab = 16777216;\nffn = 4194304;\n')
    r = prism(PRISM, "synth", model, "--hw", hw, code=2)
    check("would end more than 4611686018427387903 ns" in r.stderr, r.stderr)
print(f"{len(CASES) + 1} hostile inputs: refused or read without overflow")
