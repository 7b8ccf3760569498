#!/usr/bin/env python3
"""The GPU validation set (tests/data/gpu, recorded on an H100) as prism
reads it: the manifest names every trace and the fields the validation
issue asks for; every trace replays within 2 % (the replay goal); a step's
time is its GPU side where the host ran ahead: for the GPU-bound points
(hidden 4096) prism's traced step agrees with the step timed by CUDA events
without the profiler (an independent measurement), which the host spans
alone do not; the kernel sweep has every class; a microbatch edit of a
one-microbatch base adds the gradient accumulation its copies run.

Usage: gpu_set.py PRISM DATA_DIR
"""
import csv
import json
import os
import subprocess
import sys

FIELDS = ("layers", "hidden", "heads", "seq", "mbs", "microbatches", "compiled", "gpu",
          "driver", "torch", "cuda", "step_ms_median", "step_ms_p10", "step_ms_p90", "traces")


def op_kernels(trace):
    """The trace's events, and for a CPU op the GPU kernels its thread
    launched inside it (by correlation id)."""
    import bisect
    import gzip
    ev = json.load(gzip.open(trace))["traceEvents"]
    kern = {e["args"].get("correlation"): e for e in ev if e.get("cat") == "kernel"}
    launches = {}
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "aunch" in e["name"]:
            launches.setdefault(e["tid"], []).append(e)
    starts = {}
    for t, v in launches.items():
        v.sort(key=lambda e: e["ts"])
        starts[t] = [e["ts"] for e in v]

    def inside(o):
        ls = launches.get(o["tid"], [])
        i = bisect.bisect_left(starts.get(o["tid"], []), o["ts"])
        out = []
        while i < len(ls) and ls[i]["ts"] <= o["ts"] + o["dur"]:
            k = kern.get(ls[i]["args"].get("correlation"))
            if k:
                out.append(k)
            i += 1
        return out
    return ev, inside


def gemm_shapes(prism, trace):
    """prism calibrate --gemms against the trace read here another way:
    each aten::mm/addmm/bmm op's shapes and the one GEMM kernel its thread
    launched inside it (by correlation id), grouped by shape -- the same
    shapes, counts and median times (CUPTI microseconds, prism's whole
    nanoseconds), most measured time first; and prism kernels given the
    trace: the same shapes as rows, with calibrate's model times."""
    import statistics
    ev, inside = op_kernels(trace)
    want = {}
    for o in ev:
        if o.get("cat") != "cpu_op" or o["name"] not in ("aten::mm", "aten::addmm", "aten::bmm"):
            continue
        dims = o["args"].get("Input Dims")
        ks = [k for k in inside(o) if "gemm" in k["name"] or "nvjet" in k["name"]]
        if not dims or len(ks) != 1:
            continue
        a, w = (dims[1], dims[2]) if o["name"] == "aten::addmm" else (dims[0], dims[1])
        shape = (1, a[0], w[1], a[1]) if len(a) == 2 else (a[0], a[1], w[2], a[2])
        want.setdefault(shape, []).append(ks[0]["dur"])
    assert len(want) == 12, want.keys()
    out = json.loads(subprocess.run([prism, "calibrate", "--gemms", "--json", trace], check=True,
                                    capture_output=True, text=True).stdout)
    got = out["kernel_model"]["shapes"]
    assert out["kernel_model"]["gemms"] == sum(len(v) for v in want.values())
    assert {(g["b"], g["m"], g["n"], g["k"]): g["kernels"] for g in got} == \
        {k: len(v) for k, v in want.items()}, got
    for g in got:
        med = statistics.median(want[(g["b"], g["m"], g["n"], g["k"])])
        assert abs(g["measured_s"] * 1e6 - med) <= 0.002, (g, med)
    tot = [g["kernels"] * g["measured_s"] for g in got]
    assert tot == sorted(tot, reverse=True), tot
    # prism kernels on the trace: the same shapes as rows, each its
    # kernels' median time, the model's time calibrate's.
    rows = subprocess.run([prism, "kernels", "--rows", trace], check=True,
                          capture_output=True, text=True).stdout.splitlines()
    rows = [x.split(",") for x in rows if x.startswith("h100-dgx,gemm,bf16,")]
    assert len(rows) == len(got), rows
    for g, r in zip(got, rows):
        assert r[3] == f'"{trace}"' and r[4] == f"{g['b']}x{g['m']}x{g['n']}x{g['k']}|0x0x0x0|0", r
        med = statistics.median(want[(g["b"], g["m"], g["n"], g["k"])])
        assert abs(float(r[5]) - med) <= 0.002 and abs(g["model_s"] * 1e6 - float(r[6])) <= 0.001, \
            (g, r)


def attn_rows(prism, trace):
    """prism kernels' attention rows of a trace against the trace read here:
    each cuDNN attention op (aten::_cudnn_attention_forward/backward) and
    every kernel its thread launched inside it (its flash kernel and, in
    the backward, the dO.O and dQ-conversion helpers), summed per op and
    averaged over the ops of one shape: forward and backward, b x heads x
    seq x seq x head dim from the query's dims."""
    ev, inside = op_kernels(trace)
    want = {}
    for o in ev:
        if o.get("cat") != "cpu_op" or not o["name"].startswith("aten::_cudnn_attention_"):
            continue
        total = sum(k["dur"] for k in inside(o))
        q = o["args"]["Input Dims"][0]
        cls = "attention bwd" if o["name"].endswith("backward") else "attention fwd"
        want.setdefault((cls, f"{q[0]}x0x0x0|{q[1]}x{q[2]}x{q[2]}x{q[3]}|0"), []).append(total)
    assert len(want) == 2, want.keys()
    rows = subprocess.run([prism, "kernels", "--rows", trace], check=True,
                          capture_output=True, text=True).stdout.splitlines()
    got = {(r[1], r[4]): float(r[5]) for r in (x.split(",") for x in rows)
           if r[0] == "h100-dgx" and r[1].startswith("attention")}
    assert got.keys() == want.keys(), (got, want.keys())
    for k, v in want.items():
        assert abs(got[k] - sum(v) / len(v)) <= 0.002 * len(v), (k, got[k], v)


def main():
    prism, data = sys.argv[1], sys.argv[2]
    pts = [json.loads(l) for l in open(os.path.join(data, "manifest.jsonl"))]
    runs = [p for p in pts if "traces" in p]
    eager = [p for p in runs if not p["compiled"]]
    assert len(eager) == 24 and len(runs) == 28, (len(eager), len(runs))
    assert {(p["layers"], p["hidden"], p["microbatches"]) for p in eager} == {
        (l, h, m) for l in (2, 4, 8, 16) for h in (1024, 2048, 4096) for m in (1, 4)}
    errs = []
    for p in runs:
        missing = [f for f in FIELDS if f not in p]
        assert not missing, (p["tag"], missing)
        assert p["step_ms_p10"] <= p["step_ms_median"] <= p["step_ms_p90"], p["tag"]
        files = [os.path.join(data, t) for t in p["traces"]]
        out = subprocess.run([prism, "replay", "--json", *files], check=True,
                             capture_output=True, text=True).stdout
        its = json.loads(out)["iterations"]
        assert len(its) == 3, (p["tag"], len(its))
        errs += [abs(i["error_pct"]) for i in its]
        if p["hidden"] == 4096 and not p["compiled"]:
            step = sum(i["measured_ns"] for i in its[1:]) / 2 / 1e6
            ratio = step / p["step_ms_median"]
            assert 0.95 <= ratio <= 1.16, (p["tag"], step, p["step_ms_median"])
            if p["tag"] == "l8-h4096-s1024-b2-m1-eager":
                # The host runs ahead: its spans are about half the step.
                host = sum(i["host_ns"] for i in its[1:]) / 2 / 1e6
                assert host < 0.6 * p["step_ms_median"], (host, p["step_ms_median"])
    mean = sum(errs) / len(errs)
    assert mean <= 2.0, mean
    rows = list(csv.DictReader(open(os.path.join(data, "kernels.csv"))))
    count = {}
    for r in rows:
        key = (r["class"], r["dtype"])
        count[key] = count.get(key, 0) + 1
    assert count[("gemm", "bf16")] == 343 and count[("gemm", "fp8")] == 343, count
    assert count[("attention", "bf16")] >= 200 and count[("memory", "bf16")] == 66, count
    # --base-step-ms: a host-bound base's host and latencies scaled to its
    # step timed without the profiler.  The base's replay then takes that
    # step, and layer edits between the host-bound points (hidden 1024 and
    # 2048, one microbatch) land far closer to the targets' CUDA-event
    # steps than from the host as traced (mean 94 % off over all pairs in
    # docs/VALIDATION.md).
    by = {(p["layers"], p["hidden"]): p for p in eager if p["microbatches"] == 1}
    plain, scaled = [], []
    for h in (1024, 2048):
        for lb in (2, 4, 8, 16):
            b = by[(lb, h)]
            bfiles = [os.path.join(data, t) for t in b["traces"]]
            for lt in (2, 4, 8, 16):
                if lt == lb:
                    continue
                truth = by[(lt, h)]["step_ms_median"]
                for extra, out in (([], plain),
                                   (["--base-step-ms", repr(b["step_ms_median"])], scaled)):
                    r = json.loads(subprocess.run(
                        [prism, "whatif", *bfiles, "--layers", str(lt), "--json", *extra],
                        check=True, capture_output=True, text=True).stdout)
                    out.append(abs(r["iteration_s"] * 1e3 / truth - 1))
                    if extra:
                        base = r["base_iteration_s"] * 1e3
                        assert abs(base / b["step_ms_median"] - 1) <= 1e-3, (b["tag"], base)
                        assert 0 < r["base_host_scale"] < 1, (b["tag"], r["base_host_scale"])
    mp, ms = sum(plain) / len(plain), sum(scaled) / len(scaled)
    assert len(scaled) == 24 and ms < 0.25 * mp, (mp, ms)
    # Microbatches 1 -> 4 of the GPU-bound l16-h4096 base: its copies add
    # the gradients its first microbatch took (a graph edit), and a rebuild
    # (hidden changed too) adds each weight's; against the m4 point's
    # CUDA-event step the edit is within 5 % (10.4 % fast without the adds).
    tags = {(p["layers"], p["hidden"], p["microbatches"]): p for p in eager}
    b, t = tags[(16, 4096, 1)], tags[(16, 4096, 4)]
    files = [os.path.join(data, x) for x in b["traces"]]
    r = json.loads(subprocess.run([prism, "whatif", *files, "--microbatches", "4", "--json"],
                                  check=True, capture_output=True, text=True).stdout)
    assert "gradient accumulations added" in r["how"], r["how"]
    assert abs(r["iteration_s"] * 1e3 / t["step_ms_median"] - 1) < 0.05, r["iteration_s"]
    r = json.loads(subprocess.run([prism, "whatif", *files, "--microbatches", "4", "--hidden",
                                   "2048", "--heads", "16", "--ffn", "8192", "--json"],
                                  check=True, capture_output=True, text=True).stdout)
    assert r["how"].endswith("microbatches after the first add their parameters' gradients, as "
                             "the base's did"), r["how"]
    gemm_shapes(prism, os.path.join(data, tags[(2, 1024, 1)]["traces"][0]))
    attn_rows(prism, os.path.join(data, tags[(2, 1024, 1)]["traces"][0]))
    print(f"{len(runs)} points, {len(errs)} steps replayed: mean |error| {mean:.2f}%; "
          f"{len(rows)} kernel rows; layer edits from host-bound bases {100 * mp:.0f}% off "
          f"as traced, {100 * ms:.0f}% with --base-step-ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
