#!/usr/bin/env python3
"""prism against scripts/gpu_probe.py's allocator and host recordings
(issue 39, items 4 and 5; tests/data/gpu/probe-h100 and probe-h200): the
tables of docs/VALIDATION.md, "Allocator reserve and host overhead
measured".  Nothing here is fitted: each figure is predicted by `prism
synth` from the run's shape.

  allocator  allocator.csv: torch.cuda.max_memory_allocated and
             max_memory_reserved after three training steps of the GPU
             set's configurations (gpt_bench.py's GPT, seq 1024,
             microbatch 2, pure bf16 fused AdamW, no clipping), with the
             default allocator and with expandable_segments:True.
             Predicted allocated: scripts/memory_check.py's mapping of the
             bench (bench_allocated: prism's activations and working
             memory, the bench's own states and fp32 logit gradient).
             Predicted reserve: prism's allocator reserve
             (memory_fragmentation_bytes, mem_alloc_reserved) of the same
             shape as recorded (AS_RECORDED, and
             --expandable-segments for the second setting); predicted
             reserved = predicted allocated + that reserve.
  host       host.csv: a small GPT step (forward, backward, fused AdamW)
             eager and replayed from one CUDA graph of the whole step, at
             four sizes; against prism synth of the same shape with
             --exec eager and --exec graphs (its second step in the
             written trace: kernels, the host thread's op time, the GPU's
             busy time).  Measured host time a kernel: the eager step over
             its kernels where the step is host-bound (eager 10 % or more
             over the graph replay, which leaves the GPU's own time).

DATA_DIR is one recording (gpu_probe.py --out DIR) or a folder of them
(probe-*; default tests/data/gpu: probe-h100 and probe-h200), each read
with prism's profile of its GPU (manifest.json); allocator rows identical
on every GPU are printed once.

Usage: probe_compare.py [PRISM] [DATA_DIR] [allocator] [host]
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from memory_check import bench_allocated  # noqa: E402

# prism's profile for a recording's GPU (manifest.json "gpu"), as
# gpt_bench.py's hw_profile picks it.
PROFILES = (("H200", "h200-dgx"), ("H100", "h100-dgx"), ("H800", "h800-hgx"),
            ("B200", "b200-dgx"), ("A100", "a100-80gb-dgx"))
# gpt_bench.py's model as recorded: pure bf16 fused AdamW, no clipping, plain
# PyTorch modules (nn.Linear's bias gradients apart) and no dropout (as
# validate_gpu.py's SYNTH_AS_RECORDED).
AS_RECORDED = ["--optimizer-dtype", "bf16", "--no-clip-grad", "--framework", "torch",
               "--no-dropout"]
HOST_BOUND = 1.10  # eager over graph replay from which a step is host-bound
MiB, GiB = 2**20, 2**30

CFG = """name = "gpt-bench";
layers = {layers};
hidden = {hidden};
heads = {heads};
seq = {seq};
vocab = {vocab};
tie_embeddings = false;
positions = "learned";
"""


def model_file(tmp, **kw):
    """gpt_bench.py's GPT (untied head, learned positions) as a model file."""
    path = os.path.join(tmp, "gpt-bench-{layers}-{hidden}-{heads}-{seq}-{vocab}.cfg".format(**kw))
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(CFG.format(**kw))
    return path


def synth(prism, model, *args):
    r = subprocess.run([prism, "synth", model, *args], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"prism synth {model} {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def recordings(data):
    """(GPU, folder, prism profile) of each gpu_probe.py recording: data
    itself where it holds one (its manifest.json), else its probe-*
    folders in name order."""
    dirs = [data] if os.path.exists(os.path.join(data, "manifest.json")) else sorted(
        os.path.join(data, d) for d in os.listdir(data) if d.startswith("probe-")
        and os.path.exists(os.path.join(data, d, "manifest.json")))
    out = []
    for d in dirs:
        with open(os.path.join(d, "manifest.json")) as f:
            man = json.load(f)
        if man.get("dry_run"):
            print(f"probe_compare.py: {d}: a --dry-run recording (CPU, tiny sizes): skipped",
                  file=sys.stderr)
            continue
        gpu = man.get("gpu", "")
        short, hw = next(((k, p) for k, p in PROFILES if k in gpu), (gpu or "?", "h100-dgx"))
        out.append((short, d, hw))
    return out


def read_csv(folder, name):
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return list(csv.DictReader(f))


def pct(pred, truth):
    return 100.0 * (pred / truth - 1)


# ------------------------------------------------------------- allocator --

ALLOC_KEYS = ("max_allocated", "max_reserved")


def allocator(prism, data, tmp):
    rows = {}  # (conf, layers, hidden, microbatches) -> {gpu: row}
    order = []
    for gpu, sub, _ in recordings(data):
        for r in read_csv(sub, "allocator.csv") or []:
            key = (r["alloc_conf"], int(r["layers"]), int(r["hidden"]), int(r["microbatches"]))
            if key not in rows:
                rows[key] = {}
                order.append(key)
            rows[key][gpu] = r
    print("| allocator | run | GPU | allocated GiB: measured / prism | error | "
          "reserved GiB: measured / prism | error | reserve MiB: measured / prism | "
          "reserved / allocated: measured / prism |")
    print("|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for key in sorted(order, key=lambda k: (k[0] != "default", k[1], k[2], k[3])):
        conf, layers, hidden, m = key
        byg = rows[key]
        same = len({tuple(r[k] for k in ALLOC_KEYS) for r in byg.values()}) == 1
        shown = [("=".join(byg) if len(byg) > 1 else next(iter(byg)), next(iter(byg.values())))] \
            if same else list(byg.items())
        for gpu, r in shown:
            seq, mbs, params = int(r["seq"]), int(r["mbs"]), int(r["params"])
            model = model_file(tmp, layers=layers, hidden=hidden, heads=max(1, hidden // 128),
                               seq=seq, vocab=32768)
            args = ["--hw", "h100-dgx", "--mbs", str(mbs), "--microbatches", str(m), "--steps",
                    "1", "--json", *AS_RECORDED]
            if conf != "default":
                args.append("--expandable-segments")
            j = json.loads(synth(prism, model, *args))
            alloc = bench_allocated(j, params, seq, mbs, 32768, m)
            reserve = j["memory_fragmentation_bytes"]
            ma, mr = int(r["max_allocated"]), int(r["max_reserved"])
            ea, er = pct(alloc, ma), pct(alloc + reserve, mr)
            s = summary.setdefault(conf, [])
            s.append((ea, er, (mr - ma) / MiB, reserve / MiB, mr / ma, ma >= 4 * GiB))
            print(f"| {conf} | l{layers}-h{hidden}-m{m} | {gpu} | {ma / GiB:.3f} / "
                  f"{alloc / GiB:.3f} | {ea:+.1f}% | {mr / GiB:.3f} / "
                  f"{(alloc + reserve) / GiB:.3f} | {er:+.1f}% | {(mr - ma) / MiB:.0f} / "
                  f"{reserve / MiB:.0f} | {mr / ma:.3f} / {(alloc + reserve) / alloc:.3f} |")
    set_peak = {}
    if os.path.exists(os.path.join(data, "manifest.jsonl")):
        with open(os.path.join(data, "manifest.jsonl")) as f:
            for line in f:
                r = json.loads(line)
                if not r.get("compiled") and "peak_memory_GiB" in r:
                    set_peak[(r["layers"], r["hidden"], r["microbatches"])] = \
                        r["peak_memory_GiB"]
    if set_peak:
        agree = [round(int(next(iter(rows[k].values()))["max_allocated"]) / GiB, 3)
                 == set_peak.get(k[1:]) for k in order]
        print(f"\nmax_memory_allocated equals the GPU set's peak (manifest.jsonl, "
              f"peak_memory_GiB to 3 decimals) in {sum(agree)} of {len(agree)} rows.")
    print("\n| allocator | runs | allocated: mean abs error | reserved: mean abs error "
          "(worst of 4 GiB or more) | reserve MiB, measured: range (mean) | reserve MiB, "
          "prism: range (mean) | reserved / allocated, measured |")
    print("|---|---|---|---|---|---|---|")
    for conf, s in summary.items():
        n = len(s)
        mres, pres, ratio = [x[2] for x in s], [x[3] for x in s], [x[4] for x in s]
        print(f"| {conf} | {n} | {sum(abs(x[0]) for x in s) / n:.1f}% | "
              f"{sum(abs(x[1]) for x in s) / n:.1f}% "
              f"({max((x[1] for x in s if x[5]), key=abs, default=0):+.1f}%) | "
              f"{min(mres):.0f}-{max(mres):.0f} "
              f"({sum(mres) / n:.0f}) | {min(pres):.0f}-{max(pres):.0f} ({sum(pres) / n:.0f}) | "
              f"{min(ratio):.3f}-{max(ratio):.3f} |")


# ------------------------------------------------------------------ host --

def synth_step(prism, model, hw, mbs, exec_mode, tmp):
    """prism synth's second step of the written trace: kernels, the host
    thread's op time and the GPU's busy time (us), and the step (us)."""
    out = os.path.join(tmp, "host.json")
    synth(prism, model, "--hw", hw, "--mbs", str(mbs), "--microbatches", "1", "--exec",
          exec_mode, *AS_RECORDED, "-o", out)
    with open(out) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in ev if e["name"].startswith("ProfilerStep")), key=lambda e: e["ts"])
    st = steps[1] if len(steps) > 1 else steps[0]
    lo, hi = st["ts"], st["ts"] + st["dur"]
    inside = [e for e in ev if lo <= e["ts"] < hi]
    kernels = [e for e in inside if e.get("cat") == "kernel"]
    ops = [e for e in inside if e.get("cat") == "cpu_op"]
    return {"kernels": len(kernels), "host_us": sum(e["dur"] for e in ops),
            "gpu_us": sum(e["dur"] for e in kernels), "step_us": st["dur"]}


def host(prism, data, tmp):
    print("| GPU (recording) | run (layers x hidden, seq x mbs, vocab) | measured a step: kernels / "
          "launches / ATen ops | prism kernels | eager ms: measured / prism | error | "
          "graph ms: measured / prism --exec graphs / prism GPU busy | host us a kernel: "
          "measured / prism | host-bound: measured / prism |")
    print("|---|---|---|---|---|---|---|---|---|")
    per_kernel = []
    for gpu, sub, hw in recordings(data):
        rows = read_csv(sub, "host.csv") or []
        cfgs = {}
        for r in rows:
            key = tuple(int(r[k]) for k in ("layers", "hidden", "heads", "seq", "mbs", "vocab"))
            cfgs.setdefault(key, {})[r["mode"]] = r
        for (layers, hidden, heads, seq, mbs, vocab), modes in cfgs.items():
            e, g = modes.get("eager"), modes.get("cuda_graph")
            if not e:
                continue
            model = model_file(tmp, layers=layers, hidden=hidden, heads=heads, seq=seq,
                               vocab=vocab)
            pe = synth_step(prism, model, hw, mbs, "eager", tmp)
            pg = synth_step(prism, model, hw, mbs, "graphs", tmp)
            ew, k = float(e["wall_ms_per_step"]), int(e["kernels_per_step"])
            gw = float(g["wall_ms_per_step"]) if g else None
            m_bound = gw is not None and ew >= HOST_BOUND * gw
            p_bound = pe["step_us"] >= HOST_BOUND * pe["gpu_us"]
            m_host = f"{ew * 1e3 / k:.1f}" if m_bound else f"< {ew * 1e3 / k:.1f}"
            p_host = pe["host_us"] / pe["kernels"]
            tag = f"{gpu}, {os.path.basename(os.path.normpath(sub))}"
            if m_bound:
                per_kernel.append((tag, ew * 1e3 / k, p_host))
            graph = f"{gw:.3f}" if gw is not None else "-"
            print(f"| {tag} | {layers} x {hidden}, {seq} x {mbs}, {vocab} | {k} / "
                  f"{e['launches_per_step']} / {e['aten_ops_per_step']} | "
                  f"{pe['kernels']} | {ew:.3f} / {pe['step_us'] / 1e3:.3f} | "
                  f"{pct(pe['step_us'] / 1e3, ew):+.1f}% | {graph} / "
                  f"{pg['step_us'] / 1e3:.3f} / {pe['gpu_us'] / 1e3:.3f} | {m_host} / "
                  f"{p_host:.1f} | {'yes' if m_bound else 'no'} / "
                  f"{'yes' if p_bound else 'no'} |")
    if per_kernel:
        print("\nHost-bound runs: measured host time a kernel "
              + ", ".join(f"{m:.1f} us ({gpu})" for gpu, m, _ in per_kernel)
              + f"; prism's {per_kernel[0][2]:.1f} us.")


SECTIONS = {"allocator": allocator, "host": host}


def main():
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__.strip())
        return
    args = sys.argv[1:]
    prism = args.pop(0) if args and args[0] not in SECTIONS else os.path.join(
        HERE, "..", "build", "prism")
    data = args.pop(0) if args and args[0] not in SECTIONS else os.path.join(
        HERE, "..", "tests", "data", "gpu")
    bad = [a for a in args if a not in SECTIONS]
    if bad:
        sys.exit(f"probe_compare.py: unknown section {', '.join(bad)} "
                 f"(sections: {', '.join(SECTIONS)})")
    if not os.path.isdir(data):
        sys.exit(f"probe_compare.py: {data}: no such folder")
    if not any(read_csv(sub, "allocator.csv") or read_csv(sub, "host.csv")
               for _, sub, _ in recordings(data)):
        sys.exit(f"probe_compare.py: {data}: no gpu_probe.py recording (a manifest.json "
                 "with allocator.csv or host.csv, there or in its probe-* folders)")
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(args or SECTIONS):
            if i:
                print()
            SECTIONS[name](prism, data, tmp)


if __name__ == "__main__":
    main()
