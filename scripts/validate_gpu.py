#!/usr/bin/env python3
"""The GPU validation set (tests/data/gpu, recorded by scripts/gpu_grid on
an H100) against prism: the tables of docs/VALIDATION.md, "GPU validation
set".

  replay     prism replay of every recorded trace: error, and the traced
             step (under the profiler) against the same configuration's
             step timed with CUDA events without it;
  whatif     prism whatif from a base trace to every other eager point:
             error per kind of edit (layers, hidden, microbatches, and
             combinations), against the target's traced step and against
             its CUDA-event step;
  hidden-edit  every hidden-size pair as a graph edit (--method edit: the
             base's kernels re-timed from their shapes by the kernel model)
             rather than rebuilt, by target width;
  base-step  every single-knob pair with and without --base-step-ms (the
             base's CUDA-event step), against the target's CUDA-event step;
  grain      the three granularities as predictors of layer edits: whole
             layer and submodule spans (CUDA events from hooks) against
             prism's kernel-level what-if;
  compiled   eager against torch.compile, measured and as prism sees them;
  exec       prism synth of every point from its shape (gpt_bench's model
             and optimizer: pure bf16 fused AdamW, no clipping; default
             costs), eager and as the point ran (--exec compiled for the
             compiled ones), and the analytic estimate, against the
             CUDA-event step: the host model checked, nothing fitted to it;
  kernels    the kernel-efficiency model against the kernel sweep
             (`prism kernels --flat` on kernels.csv);
  launches   what a layer launches, per layer and microbatch, forward and
             backward, in each eager trace (kernels, memsets, launch
             calls) and in prism synth's trace of the same point (kernels,
             and launches: an op's host time past a one-launch op's is
             a launch more for each launch call's time); and a step's GPU
             time by kind of kernel, the
             trace's against synth's;
  step-kernels  kernel by kernel, each eager point's profiled step against
             synth's: kernels, GPU busy time, the GPU's idle time within
             the step, and for three points the same by kernel role;
  optimizer  the optimizer's multi-tensor-apply bandwidth (the profile's
             multi_tensor_eff) measured on the traces: each eager point's
             fused AdamW kernels in its second profiled step, by least
             squares with the elementwise kind's floor a kernel.

DATA_DIR (default tests/data/gpu) is a folder recorded by scripts/gpu_grid
or scripts/gpt_bench.py (manifest.jsonl, a folder of traces a point); prism
times it on the profile of the GPU its manifest names (GPU_PROFILES:
tests/data/gpu on h100-dgx, tests/data/gpu-h200 on h200-dgx).

The what-if bases and synth describe the runs as gpt_bench.py records them
(AS_RECORDED: optimizer_dtype bf16, clip_grad 0).

Usage: validate_gpu.py [PRISM] [DATA_DIR] [SECTION...]
"""
import glob
import json
import os
import statistics
import subprocess
import sys

BASES = ["l2-h1024-s1024-b2-m1-eager",   # the smallest point
         "l8-h2048-s1024-b2-m1-eager"]   # a middle one
KNOBS = ("layers", "hidden", "microbatches")


def load(data):
    pts = {}
    with open(os.path.join(data, "manifest.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if "step_ms_median" in r:
                pts[r["tag"]] = r
    return pts


# The hardware profile (configs/hw) of the GPU a manifest names.
GPU_PROFILES = (("H200", "h200-dgx"), ("H100", "h100-dgx"))
HW = ["h100-dgx"]  # the set's profile: set by main from its manifest


def profile_of(pts):
    gpus = {p.get("gpu", "") for p in pts.values()}
    names = {next((hw for key, hw in GPU_PROFILES if key in g), None) for g in gpus}
    if len(names) != 1 or None in names:
        sys.exit(f"validate_gpu.py: no one profile for the set's GPUs {sorted(gpus)}")
    return names.pop()


def run_json(prism, args):
    out = subprocess.run([prism, *args, "--json"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def files(data, tag):
    return sorted(glob.glob(os.path.join(data, tag, "*.json.gz")))


# The runs as scripts/gpt_bench.py records them: bf16 parameters updated by
# PyTorch's fused AdamW (no fp32 master copy, bf16 gradients and moments),
# no gradient clipping -- prism's optimizer_dtype bf16 and clip_grad 0
# (docs/MODEL.md, "Optimizer precision"); and its untied output layer
# (gpt_bench's head is its own matrix), which its descriptions leave out.
# Its modules are plain PyTorch's (nn.Linear with biases, nn.LayerNorm,
# F.scaled_dot_product_attention) and it has no dropout: synth's framework
# torch and no_dropout (docs/MODEL.md, "The framework's modules").
# The set's traces were described before those knobs existed, so a what-if
# base is a copy of its trace with them added to its run description (a
# temporary folder, once a run).
AS_RECORDED = (("optimizer_dtype", "bf16"), ("clip_grad", "0"), ("untied", "1"))
SYNTH_AS_RECORDED = ["--optimizer-dtype", "bf16", "--no-clip-grad", "--framework", "torch",
                     "--no-dropout"]
_described = {}


def described(data, tag):
    """The point's trace files with the run description completed as the
    run was recorded (AS_RECORDED): the what-if bases."""
    import atexit
    import gzip
    import re
    import shutil
    import tempfile
    if tag in _described:
        return _described[tag]
    if "dir" not in _described:
        _described["dir"] = tempfile.mkdtemp(prefix="prism-gpu-")
        atexit.register(shutil.rmtree, _described["dir"], True)
    out = []
    for f in files(data, tag):
        with gzip.open(f, "rt") as fh:
            text = fh.read()

        def complete(mt):
            d = mt.group(0)
            return d + "".join(f";{k}={v}" for k, v in AS_RECORDED if f";{k}=" not in d)
        text = re.sub(r"prism::model#[^\"]*", complete, text)
        dst = os.path.join(_described["dir"], tag + "-" + os.path.basename(f))
        with gzip.open(dst, "wt", compresslevel=1) as fh:
            fh.write(text)
        out.append(dst)
    _described[tag] = out
    return out


def traced_step(prism, data, tag, cache={}):
    """The traced step time, prism's measure (the longer of host span and
    GPU side), over the steps after the first of the window."""
    if tag not in cache:
        its = run_json(prism, ["replay", *files(data, tag)])["iterations"]
        meas = [i["measured_ns"] / 1e6 for i in its]
        cache[tag] = (statistics.mean(meas[1:] if len(meas) > 1 else meas), its)
    return cache[tag]


GPU_BOUND_IDLE = 0.10


def gpu_bound(prism, data, tag):
    its = traced_step(prism, data, tag)[1]
    return statistics.mean(i["idle_ns"] / i["predicted_ns"] for i in its) < GPU_BOUND_IDLE


def pct(pred, truth):
    return 100.0 * (pred - truth) / truth


def mean_abs(xs):
    return statistics.mean(abs(x) for x in xs) if xs else float("nan")


def worst(xs):
    return max(xs, key=abs) if xs else float("nan")


def replay_table(prism, data, pts):
    print("| point | steps | replay mean / worst | traced step ms | CUDA-event step ms "
          "(p10-p90) | traced / events | GPU idle |")
    print("|---|---|---|---|---|---|---|")
    errs = []
    for tag in sorted(pts, key=order):
        r = pts[tag]
        step, its = traced_step(prism, data, tag)
        e = [i["error_pct"] for i in its]
        errs += e
        idle = statistics.mean(i["idle_ns"] / i["predicted_ns"] for i in its) * 100
        print(f"| {tag} | {len(its)} | {mean_abs(e):.2f}% / {abs(worst(e)):.2f}% | "
              f"{step:.2f} | {r['step_ms_median']:.2f} ({r['step_ms_p10']:.2f}-"
              f"{r['step_ms_p90']:.2f}) | {step / r['step_ms_median']:.2f} | {idle:.0f}% |")
    print(f"| **all {len(errs)} steps** | | **{mean_abs(errs):.2f}% / {abs(worst(errs)):.2f}%**"
          " | | | | |")


def order(tag):
    r = tag.split("-")
    return (r[-1], int(r[1][1:]), int(r[4][1:]), int(r[0][1:]))


def whatif(prism, data, base, t, *more):
    args = ["whatif", *described(data, base), "--layers", str(t["layers"]),
            "--hidden", str(t["hidden"]), "--heads", str(t["heads"]),
            "--ffn", str(4 * t["hidden"]), "--microbatches", str(t["microbatches"]), *more]
    return run_json(prism, args)["iteration_s"] * 1e3


def changed(b, t):
    return tuple(k for k in KNOBS if b[k] != t[k])


def whatif_table(prism, data, pts):
    eager = {k: v for k, v in pts.items() if not v["compiled"]}
    rows = {}
    for base in BASES:
        b = eager[base]
        print(f"\nFrom **{base}** (traced step {traced_step(prism, data, base)[0]:.2f} ms, "
              f"CUDA events {b['step_ms_median']:.2f} ms):\n")
        print("| target | edit | predicted ms | traced ms | error vs traced | "
              "CUDA-event ms | error vs events |")
        print("|---|---|---|---|---|---|---|")
        for tag in sorted(eager, key=order):
            if tag == base:
                continue
            t = eager[tag]
            p = whatif(prism, data, base, t)
            tr = traced_step(prism, data, tag)[0]
            kind = "+".join(changed(b, t))
            e1, e2 = pct(p, tr), pct(p, t["step_ms_median"])
            rows.setdefault((base, kind), []).append((e1, e2))
            print(f"| {tag} | {kind} | {p:.2f} | {tr:.2f} | {e1:+.1f}% | "
                  f"{t['step_ms_median']:.2f} | {e2:+.1f}% |")
    print("\nMean |error| by kind of edit (worst in brackets):\n")
    print("| base | edit | targets | vs traced step | vs CUDA-event step |")
    print("|---|---|---|---|---|")
    for (base, kind), v in sorted(rows.items(), key=lambda kv: (kv[0][0], len(kv[0][1]), kv[0][1])):
        a, b = [x[0] for x in v], [x[1] for x in v]
        print(f"| {base} | {kind} | {len(v)} | {mean_abs(a):.1f}% ({worst(a):+.1f}%) | "
              f"{mean_abs(b):.1f}% ({worst(b):+.1f}%) |")
    # Every single-knob pair of the grid, whichever base.
    single = {(k, g): ([], []) for k in KNOBS for g in (False, True)}
    for base, b in eager.items():
        for tag, t in eager.items():
            ch = changed(b, t)
            if len(ch) != 1:
                continue
            p = whatif(prism, data, base, t)
            g = gpu_bound(prism, data, base) and gpu_bound(prism, data, tag)
            for key in ((ch[0], False), (ch[0], True)) if g else ((ch[0], False),):
                single[key][0].append(pct(p, traced_step(prism, data, tag)[0]))
                single[key][1].append(pct(p, t["step_ms_median"]))
    print("\nEvery pair of eager points that differ in one knob (each point a base); "
          "GPU-bound: base and target both keep the GPU busy (idle under "
          f"{GPU_BOUND_IDLE:.0%} of the traced step):\n")
    print("| edit | pairs | vs traced step: mean (worst) | vs CUDA-event step: mean (worst) |")
    print("|---|---|---|---|")
    for (k, g), (a, b) in single.items():
        if a:
            print(f"| {k}{' (GPU-bound)' if g else ''} | {len(a)} | {mean_abs(a):.1f}% "
                  f"({worst(a):+.1f}%) | {mean_abs(b):.1f}% ({worst(b):+.1f}%) |")


def hidden_edit_table(prism, data, pts):
    """Hidden-size edits as graph edits (`--method edit`): the base's
    kernels re-timed from their shapes, its host kept."""
    eager = {k: v for k, v in pts.items() if not v["compiled"]}
    rows = {}
    for base, b in eager.items():
        for tag, t in eager.items():
            if changed(b, t) != ("hidden",):
                continue
            p = whatif(prism, data, base, t, "--method", "edit")
            kind = "wider" if t["hidden"] > b["hidden"] else "narrower"
            for key in (f"to hidden {t['hidden']}", kind, "all"):
                rows.setdefault(key, []).append(
                    (pct(p, traced_step(prism, data, tag)[0]), pct(p, t["step_ms_median"])))
    print("| hidden edits as graph edits | pairs | vs traced step: mean (worst) | "
          "vs CUDA-event step: mean (worst) |")
    print("|---|---|---|---|")
    for key in sorted(rows, key=lambda k: (k == "all", k)):
        a, b = [x[0] for x in rows[key]], [x[1] for x in rows[key]]
        print(f"| {key} | {len(a)} | {mean_abs(a):.1f}% ({worst(a):+.1f}%) | "
              f"{mean_abs(b):.1f}% ({worst(b):+.1f}%) |")


def grain_table(prism, data, pts):
    """Layer edits predicted from each base at three granularities."""
    eager = {k: v for k, v in pts.items() if not v["compiled"]}
    res = {g: [] for g in ("layer", "submodule", "kernel (prism)")}
    print("| base | target | CUDA-event ms | layer | submodule | kernel (prism) |")
    print("|---|---|---|---|---|---|")
    for base, b in sorted(eager.items(), key=lambda kv: order(kv[0])):
        s = b["spans_ms_median"]
        layer = statistics.median(s[f"layer{i}.forward"] + s[f"layer{i}.backward"]
                                  for i in range(b["layers"]))
        sub = sum(s[f"layer0.{m}.{d}"] for m in ("attn", "mlp") for d in ("forward", "backward"))
        for tag, t in sorted(eager.items(), key=lambda kv: order(kv[0])):
            if changed(b, t) != ("layers",):
                continue
            dl = (t["layers"] - b["layers"]) * b["microbatches"]
            truth = t["step_ms_median"]
            preds = {"layer": b["step_ms_median"] + dl * layer,
                     "submodule": b["step_ms_median"] + dl * sub,
                     "kernel (prism)": whatif(prism, data, base, t)}
            cells = []
            gb = gpu_bound(prism, data, base) and gpu_bound(prism, data, tag)
            for g, p in preds.items():
                res[g].append(pct(p, truth))
                if gb:
                    res.setdefault(g + ", GPU-bound pairs", []).append(pct(p, truth))
                cells.append(f"{pct(p, truth):+.1f}%")
            print(f"| {base} | {tag} | {truth:.2f} | " + " | ".join(cells) + " |")
    print("\n| granularity | layer edits | mean |error| | worst |")
    print("|---|---|---|---|")
    for g, v in res.items():
        print(f"| {g} | {len(v)} | {mean_abs(v):.1f}% | {worst(v):+.1f}% |")


def compiled_table(prism, data, pts):
    print("| point | eager ms | compiled ms | compiled / eager | compiled replay | "
          "prism from eager l8-h2048-m1 | error vs compiled |")
    print("|---|---|---|---|---|---|---|")
    base = "l8-h2048-s1024-b2-m1-eager"
    for tag, c in sorted(pts.items(), key=lambda kv: order(kv[0])):
        if not c["compiled"]:
            continue
        e = pts[tag.replace("-compiled", "-eager")]
        its = traced_step(prism, data, tag)[1]
        err = mean_abs([i["error_pct"] for i in its])
        p = whatif(prism, data, base, c)
        print(f"| {tag} | {e['step_ms_median']:.2f} | {c['step_ms_median']:.2f} | "
              f"{c['step_ms_median'] / e['step_ms_median']:.3f} | {err:.2f}% | {p:.2f} | "
              f"{pct(p, c['step_ms_median']):+.1f}% |")


def base_step_table(prism, data, pts):
    """Every single-knob pair of eager points as in `whatif`, with and
    without --base-step-ms (the base's CUDA-event step: its host tasks and
    lags scaled to it), against the target's CUDA-event step; pairs whose
    base cannot be matched (its GPU side alone is longer) are counted."""
    eager = {k: v for k, v in pts.items() if not v["compiled"]}
    res = {}
    for base, b in sorted(eager.items()):
        for tag, t in sorted(eager.items()):
            ch = changed(b, t)
            if len(ch) != 1:
                continue
            g = gpu_bound(prism, data, base) and gpu_bound(prism, data, tag)
            plain = whatif(prism, data, base, t)
            try:
                scaled = whatif(prism, data, base, t, "--base-step-ms",
                                f"{b['step_ms_median']:.6f}")
            except subprocess.CalledProcessError:
                scaled = None
            truth = t["step_ms_median"]
            for key in ((ch[0], "all"), (ch[0], "GPU-bound" if g else "host-bound")):
                r = res.setdefault(key, ([], [], [0]))
                if scaled is None:
                    r[2][0] += 1
                    continue
                r[0].append(pct(plain, truth))
                r[1].append(pct(scaled, truth))
    print("| edit | pairs | bases not matched | as traced: mean (worst) | "
          "--base-step-ms: mean (worst) |")
    print("|---|---|---|---|---|")
    for (k, which), (a, b, nm) in sorted(res.items()):
        print(f"| {k} ({which}) | {len(a)} | {nm[0]} | {mean_abs(a):.1f}% ({worst(a):+.1f}%) | "
              f"{mean_abs(b):.1f}% ({worst(b):+.1f}%) |")


# gpt_bench's model; heads = hidden / 128, each with its own keys and values
# (the file's heads, so that its key-value heads follow: --heads on the
# command line would keep the file's as kv_heads).
GPT_BENCH_CFG = """name = "gpt-bench";
layers = 2;
hidden = {hidden};
heads = {heads};
seq = 1024;
vocab = 32768;
tie_embeddings = false;
positions = "learned";
"""


def bench_cfg(tmp, p):
    """The point's model file (its width and heads) in folder tmp."""
    h = p["hidden"]
    cfg = os.path.join(tmp, f"gpt-bench-h{h}.cfg")
    if not os.path.exists(cfg):
        with open(cfg, "w") as f:
            f.write(GPT_BENCH_CFG.format(hidden=h, heads=h // 128))
    return cfg


def synth_point(prism, p, exec_mode, tmp):
    h = p["hidden"]
    return run_json(prism, ["synth", bench_cfg(tmp, p), "--hw", HW[0], "--layers",
                            str(p["layers"]), "--hidden", str(h), "--ffn", str(4 * h),
                            "--mbs", str(p["mbs"]), "--microbatches", str(p["microbatches"]),
                            "--exec", exec_mode, *SYNTH_AS_RECORDED])


def exec_table(prism, data, pts):
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        print("| point | CUDA-event ms | synth eager ms | error | synth as run ms | error | "
              "analytic as run ms | error |")
        print("|---|---|---|---|---|---|---|---|")
        errs = {}
        for tag, p in sorted(pts.items(), key=lambda kv: order(kv[0])):
            mode = "compiled" if p["compiled"] else "eager"
            e = synth_point(prism, p, "eager", tmp)
            r = synth_point(prism, p, mode, tmp) if mode != "eager" else e
            t = p["step_ms_median"]
            pe, pr, pa = (e["iteration_s"] * 1e3, r["iteration_s"] * 1e3,
                          r["analytic_s"] * 1e3)
            g = "GPU-bound" if gpu_bound(prism, data, tag) else "host-bound"
            for k, v in (("synth", pr), ("analytic", pa)):
                errs.setdefault((mode, g, k), []).append(pct(v, t))
            print(f"| {tag} | {t:.2f} | {pe:.2f} | {pct(pe, t):+.1f}% | {pr:.2f} | "
                  f"{pct(pr, t):+.1f}% | {pa:.2f} | {pct(pa, t):+.1f}% |")
        print("\n| points | n | synth as run: mean (worst) | analytic: mean (worst) |")
        print("|---|---|---|---|")
        for (mode, g) in sorted({(m, g) for m, g, _ in errs}):
            a, b = errs[(mode, g, "synth")], errs[(mode, g, "analytic")]
            print(f"| {mode}, {g} | {len(a)} | {mean_abs(a):.1f}% ({worst(a):+.1f}%) | "
                  f"{mean_abs(b):.1f}% ({worst(b):+.1f}%) |")


def kernel_table(prism, data, pts):
    """prism's kernel model (and the flat one before it) on the sweep."""
    out = subprocess.run([prism, "kernels", "--flat", "--markdown",
                          os.path.join(data, "kernels.csv")], check=True,
                         capture_output=True, text=True).stdout
    print(out.strip())



LAUNCH_CALLS = ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC",
                "cudaMemsetAsync")


def kind_of(name):
    """A kernel's kind, by its name (as the traces and synth name them)."""
    n = name.lower()
    for k, keys in (("memset", ("memset",)), ("gemm", ("nvjet", "gemm", "xmma")),
                    ("attention", ("sdpa", "flash", "cudnn", "fmha")),
                    ("optimizer", ("multi_tensor",)),
                    ("norm", ("layer_norm", "gammabeta", "rms")),
                    ("loss", ("cross_entropy", "softmax", "nll_loss"))):
        if any(x in n for x in keys):
            return k
    return "elementwise"


def step_launches(trace, synth):
    """Per phase: launches, kernels and memsets inside layer ranges, and
    the step's GPU time by kind, for the trace's second profiled step."""
    ev = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in ev if e["name"].startswith("ProfilerStep")),
                   key=lambda e: e["ts"])
    st = steps[1]
    lo, hi = st["ts"], st["ts"] + st["dur"]
    gpu = {}
    for e in ev:
        if e.get("cat") in ("kernel", "gpu_memset"):
            gpu.setdefault(e["args"].get("correlation"), []).append(e)
    ann = [e for e in ev if e.get("cat") == "user_annotation" and lo <= e["ts"] < hi]
    phases = [e for e in ann if e["name"].startswith("prism::phase#")]
    layers = [e for e in ann if e["name"].startswith("prism::layer#")]
    ops = sorted((e for e in ev if e.get("cat") == "cpu_op" and lo <= e["ts"] < hi),
                 key=lambda e: e["ts"])
    one_op = min((e["dur"] for e in ops), default=0)

    def inside(t, rs):
        return next((r for r in rs if r["ts"] <= t <= r["ts"] + r["dur"]), None)

    cnt, kinds, oi = {}, {}, 0
    for r in sorted((e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
                     and lo <= e["ts"] < hi and e["name"] in LAUNCH_CALLS),
                    key=lambda e: e["ts"]):
        ks = gpu.get(r["args"].get("correlation"), [])
        for k in ks:
            kd = kind_of(k["name"])
            kinds[kd] = kinds.get(kd, 0) + k["dur"]
        ph, ly = inside(r["ts"], phases), inside(r["ts"], layers)
        if not ph or not ly:
            continue
        c = cnt.setdefault(ph["name"].split("#")[1], {"kernels": 0, "memsets": 0, "launches": 0})
        n = 1
        if synth:  # the op around this launch: a one-launch op's time (the
            # step's shortest op), and the launch's own time a launch more
            while oi + 1 < len(ops) and ops[oi + 1]["ts"] <= r["ts"]:
                oi += 1
            if ops and ops[oi]["ts"] <= r["ts"] and r["dur"] > 0:
                n += max(0, round((ops[oi]["dur"] - one_op) / r["dur"]))
        c["launches"] += n
        for k in ks:
            c["memsets" if kind_of(k["name"]) == "memset" else "kernels"] += 1
    return cnt, kinds


def launch_table(prism, data, pts):
    import gzip
    import tempfile
    eager = sorted((t for t, p in pts.items() if not p["compiled"]), key=order)
    rows, kind_rows = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for tag in eager:
            p = pts[tag]
            with gzip.open(files(data, tag)[0], "rt") as f:
                real, rk = step_launches(json.load(f), False)
            h, out = p["hidden"], os.path.join(tmp, "s.json")
            subprocess.run([prism, "synth", bench_cfg(tmp, p), "--hw", HW[0], "--layers",
                            str(p["layers"]), "--hidden", str(h), "--ffn", str(4 * h), "--mbs", str(p["mbs"]), "--microbatches",
                            str(p["microbatches"]), *SYNTH_AS_RECORDED, "-o", out], check=True,
                           capture_output=True)
            with open(out) as f:
                syn, sk = step_launches(json.load(f), True)
            per = p["layers"] * p["microbatches"]
            cell = []
            for ph in ("forward", "backward"):
                a, b = real.get(ph, {}), syn.get(ph, {})
                cell.append(f"{a.get('kernels', 0) / per:.1f} + {a.get('memsets', 0) / per:.1f} / "
                            f"{a.get('launches', 0) / per:.1f}")
                cell.append(f"{b.get('kernels', 0) / per:.1f} / {b.get('launches', 0) / per:.1f}")
            rows.append(f"| {tag} | " + " | ".join(cell) + " |")
            kind_rows.append((tag, rk, sk))
    print("Per layer and microbatch.  Trace: kernels + memsets / launch calls; "
          "synth: kernels / launches.\n")
    print("| point | forward, trace | forward, synth | backward, trace | backward, synth |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    kinds = ("gemm", "attention", "norm", "elementwise", "loss", "optimizer", "memset")
    print("\nA step's GPU time by kind of kernel, ms: trace / synth.\n")
    print("| point | " + " | ".join(kinds) + " | all |")
    print("|---|" + "---|" * (len(kinds) + 1))
    for tag, rk, sk in kind_rows:
        cells = [f"{rk.get(k, 0) / 1e3:.2f} / {sk.get(k, 0) / 1e3:.2f}" for k in kinds]
        cells.append(f"{sum(rk.values()) / 1e3:.2f} / {sum(sk.values()) / 1e3:.2f}")
        print(f"| {tag} | " + " | ".join(cells) + " |")


# A kernel's role in gpt_bench's step, by its name as the traces (PyTorch,
# cuBLASLt, cuDNN) and synth (Megatron-LM's names) write it: first match.
ROLES = (("memset", ("memset",)),
         ("GEMM", ("nvjet", "gemm", "xmma")),
         ("attention bwd", ("bprop", "flash_bwd", "dot_do_o", "convert_dq")),
         ("attention fwd", ("fprop", "flash_fwd")),
         ("norm bwd", ("layer_norm_grad", "gammabeta")),
         ("norm fwd", ("layer_norm",)),
         ("GeLU bwd", ("gelubackward",)),
         ("GeLU fwd", ("gelu",)),
         ("optimizer", ("multi_tensor",)),
         ("loss", ("cross_entropy", "softmax", "nll_loss", "bfloat16_copy",
                   "unrolled_elementwise_kernel<at::native::direct_copy")),
         ("bias-gradient sums", ("sum_functor",)),
         ("QKV split bwd (cat)", ("catarray",)),
         ("fills (zeros)", ("fillfunctor", "<fill>")),
         ("adds (residual, accumulation)", ("add", "accumulation")),
         ("dropout", ("dropout",)),
         ("embedding", ("indexselect", "gather", "embedding", "arange")))


def role_of(name):
    n = name.lower()
    return next((r for r, keys in ROLES if any(k in n for k in keys)), "other")


def step_tasks(trace, idx=1):
    """The GPU tasks (kernels, memsets) launched inside the trace's
    profiled step idx (by correlation id), in start order."""
    ev = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in ev if e["name"].startswith("ProfilerStep")),
                   key=lambda e: e["ts"])
    lo, hi = steps[idx]["ts"], steps[idx]["ts"] + steps[idx]["dur"]
    corr = {e["args"].get("correlation") for e in ev
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and lo <= e["ts"] < hi}
    return sorted((e for e in ev if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")
                   and e["args"].get("correlation") in corr), key=lambda e: e["ts"])


def step_sums(tasks):
    """Per role: [kernels, us]; and the step's GPU busy and span, us."""
    by = {}
    for t in tasks:
        r = by.setdefault(role_of(t["name"]), [0, 0.0])
        r[0] += 1
        r[1] += t["dur"]
    busy = sum(t["dur"] for t in tasks)
    span = max(t["ts"] + t["dur"] for t in tasks) - tasks[0]["ts"]
    return by, busy, span


STEP_DETAIL = ("l8-h1024-s1024-b2-m4-eager", "l8-h4096-s1024-b2-m1-eager",
               "l8-h4096-s1024-b2-m4-eager")


def step_kernels_table(prism, data, pts):
    """Kernel by kernel: each eager point's second profiled step against
    prism synth's second step of the same point (as recorded): kernels,
    GPU busy time, and the GPU's idle time between the step's first and
    last task; then, for three points, the same by kernel role."""
    import gzip
    import tempfile
    eager = sorted((t for t, p in pts.items() if not p["compiled"]), key=order)
    detail = {}
    print("A step's GPU side, trace / synth: kernels (memsets apart), busy ms (every "
          "task's time), idle ms (the span from the first task's start to the last's end, "
          "less busy); the CUDA-event step and synth's step, ms.\n")
    print("| point | kernels + memsets | busy ms | idle ms | busy: synth - trace | "
          "CUDA-event step | synth step | synth - events |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for tag in eager:
            p, out = pts[tag], os.path.join(tmp, "s.json")
            with gzip.open(files(data, tag)[0], "rt") as f:
                rb, rbusy, rspan = step_sums(step_tasks(json.load(f)))
            h = p["hidden"]
            r = run_json(prism, ["synth", bench_cfg(tmp, p), "--hw", HW[0], "--layers",
                                 str(p["layers"]), "--hidden", str(h), "--ffn", str(4 * h),
                                 "--mbs", str(p["mbs"]), "--microbatches",
                                 str(p["microbatches"]), *SYNTH_AS_RECORDED, "-o", out])
            with open(out) as f:
                sb, sbusy, sspan = step_sums(step_tasks(json.load(f)))
            if tag in STEP_DETAIL:
                detail[tag] = (rb, sb, rbusy, sbusy)
            mem = rb.get("memset", [0])[0]
            rk = sum(v[0] for v in rb.values()) - mem
            sk = sum(v[0] for v in sb.values()) - sb.get("memset", [0])[0]
            ev, st = p["step_ms_median"], r["iteration_s"] * 1e3
            print(f"| {tag} | {rk:,} + {mem} / {sk:,} | {rbusy / 1e3:.2f} / {sbusy / 1e3:.2f} | "
                  f"{(rspan - rbusy) / 1e3:.2f} / {(sspan - sbusy) / 1e3:.2f} | "
                  f"{(sbusy - rbusy) / 1e3:+.2f} ({pct(sbusy, rbusy):+.1f}%) | {ev:.2f} | "
                  f"{st:.2f} | {pct(st, ev):+.1f}% |")
    roles = [r for r, _ in ROLES] + ["other"]
    for tag in STEP_DETAIL:
        if tag not in detail:
            continue
        rb, sb, rbusy, sbusy = detail[tag]
        print(f"\n**{tag}**, by kernel role: kernels and ms a step, trace / synth:\n")
        print("| role | kernels | ms | synth - trace, ms |")
        print("|---|---|---|---|")
        for ro in sorted(roles, key=lambda x: -max(rb.get(x, [0, 0])[1], sb.get(x, [0, 0])[1])):
            a, b = rb.get(ro, [0, 0.0]), sb.get(ro, [0, 0.0])
            if a[0] or b[0]:
                print(f"| {ro} | {a[0]:,} / {b[0]:,} | {a[1] / 1e3:.3f} / {b[1] / 1e3:.3f} | "
                      f"{(b[1] - a[1]) / 1e3:+.3f} |")
        print(f"| **all** | {sum(v[0] for v in rb.values()):,} / "
              f"{sum(v[0] for v in sb.values()):,} | {rbusy / 1e3:.3f} / {sbusy / 1e3:.3f} | "
              f"{(sbusy - rbusy) / 1e3:+.3f} |")


def profile_values(hw):
    """HBM GB/s, the elementwise kind's floor (us) and the multi-tensor
    efficiencies (2-byte, 4-byte; 0: none) as configs/hw/HW.cfg states them."""
    import re
    with open(os.path.join("configs", "hw", hw + ".cfg")) as f:
        text = f.read()
    hbm = float(re.search(r"^\s*hbm_bandwidth_GBps\s*=\s*([0-9.]+)", text, re.M).group(1))
    line = re.search(r"^\s*elementwise\s*=\s*\{([^}]*)\}", text, re.M).group(1)

    def val(key):
        m = re.search(r"(?:^|;)\s*" + key + r"\s*=\s*([0-9.]+)", line)
        return float(m.group(1)) if m else 0.0
    return hbm, val("overhead_us"), val("multi_tensor_eff"), val("multi_tensor_fp32_eff")


ADAM_KERNEL = "FusedAdamMathFunctor"
ADAM_BYTES = 14  # gpt_bench's pure-bf16 fused AdamW: 4 x 2 read, 3 x 2 written


def optimizer_table(prism, data, pts):
    """The fused AdamW kernels of each eager point's second profiled step
    (PyTorch's multi_tensor_apply_kernel<FusedAdamMathFunctor>, bf16
    parameters, gradients and moments): their time against t = kernels x
    the elementwise kind's floor + bytes / (HBM x eff), eff by least
    squares over the points (absolute)."""
    import gzip
    hbm, floor, mt, mt32 = profile_values(HW[0])
    rows = []
    for tag in sorted((t for t, p in pts.items() if not p["compiled"]), key=order):
        with gzip.open(files(data, tag)[0], "rt") as f:
            ks = [t for t in step_tasks(json.load(f)) if ADAM_KERNEL in t["name"]]
        rows.append((tag, len(ks), sum(t["dur"] for t in ks), pts[tag]["params"] * ADAM_BYTES))
    a = [b / (hbm * 1e3) for _, _, _, b in rows]  # us at the full bandwidth
    y = [us - k * floor for _, k, us, _ in rows]
    eff = sum(x * x for x in a) / sum(x * v for x, v in zip(a, y))
    print(f"{HW[0]}: HBM {hbm:.0f} GB/s, the elementwise kind's floor {floor:.3f} us a kernel; "
          f"bytes {ADAM_BYTES} a parameter.\n")
    print("| point | parameters | kernels | ms a step | TB/s | fitted ms | error |")
    print("|---|---|---|---|---|---|---|")
    for (tag, k, us, b), x in zip(rows, a):
        fit = k * floor + x / eff
        print(f"| {tag} | {b / ADAM_BYTES / 1e6:,.0f} M | {k} | {us / 1e3:.3f} | "
              f"{b / us / 1e6:.2f} | {fit / 1e3:.3f} | {pct(fit, us):+.1f}% |")
    print(f"\nmulti_tensor_eff by least squares: **{eff:.3f}** (the profile states "
          f"{mt:.3f}; multi_tensor_fp32_eff {mt32:.3f}).")


SECTIONS = {"replay": replay_table, "whatif": whatif_table, "hidden-edit": hidden_edit_table,
            "grain": grain_table, "base-step": base_step_table,
            "compiled": compiled_table, "exec": exec_table, "kernels": kernel_table,
            "launches": launch_table, "step-kernels": step_kernels_table,
            "optimizer": optimizer_table}


def main():
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__.strip())
        return 0
    prism = sys.argv[1] if len(sys.argv) > 1 else "build/prism"
    data = sys.argv[2] if len(sys.argv) > 2 else "tests/data/gpu"
    want = sys.argv[3:] or list(SECTIONS)
    pts = load(data)
    HW[0] = profile_of(pts)
    bad = [n for n in want if n not in SECTIONS]
    if bad:
        sys.exit(f"validate_gpu.py: no section {bad[0]!r} (sections: {', '.join(SECTIONS)})")
    for name in want:
        print(f"\n### {name}\n")
        SECTIONS[name](prism, data, pts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
