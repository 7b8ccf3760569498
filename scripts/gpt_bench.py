#!/usr/bin/env python3
"""A small GPT trained on random tokens: prism's validation runs on a GPU.

Plain PyTorch, nothing downloaded.  For one configuration it
  1. times --steps training steps with CUDA events, no hooks and no
     profiler (median and spread of the step time, steps back to back as in
     a training loop: step i is the time from its start to step i+1's);
  2. times each layer's forward and backward, and layer 0's attention and
     MLP submodules, with CUDA events from module hooks (the layer and
     submodule granularities), in steps of their own;
  3. records a Kineto trace of --active steps with scripts/collect_trace.py
     (layer, phase and microbatch ranges, CUDA sync events, the run's
     description): the kernel granularity, and what prism ingests;
and appends one JSON line describing it all to OUT/manifest.jsonl.

Usage: gpt_bench.py --layers 4 --hidden 2048 --heads 16 --seq 1024 --mbs 2
                    --accum 1 [--compile] [--steps 30] --out tests/data/gpu
       gpt_bench.py --grid [--deadline S] --out DIR   (the validation grid)
"""
import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collect_trace import PrismProfiler  # noqa: E402


class Attention(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.ln = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln(x)).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, s, h))


class MLP(nn.Module):
    def __init__(self, h, ffn):
        super().__init__()
        self.ln = nn.LayerNorm(h)
        self.up = nn.Linear(h, ffn)
        self.down = nn.Linear(ffn, h)

    def forward(self, x):
        return self.down(F.gelu(self.up(self.ln(x))))


class Block(nn.Module):
    def __init__(self, h, heads, ffn):
        super().__init__()
        self.attn = Attention(h, heads)
        self.mlp = MLP(h, ffn)

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.mlp(x)


class GPT(nn.Module):
    def __init__(self, layers, h, heads, seq, vocab):
        super().__init__()
        self.tok = nn.Embedding(vocab, h)
        self.pos = nn.Embedding(seq, h)
        self.blocks = nn.ModuleList(Block(h, heads, 4 * h) for _ in range(layers))
        self.ln = nn.LayerNorm(h)
        self.head = nn.Linear(h, vocab, bias=False)

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.reshape(-1))


class EventTimer:
    """CUDA-event spans from module hooks, read after the steps end."""

    def __init__(self):
        self.open, self.done, self.handles = {}, [], []

    def hooks(self, module, name):
        def start(kind):
            def f(*_):
                e = torch.cuda.Event(enable_timing=True)
                e.record()
                self.open[(name, kind)] = e
            return f

        def stop(kind):
            def f(*_):
                e = torch.cuda.Event(enable_timing=True)
                e.record()
                s = self.open.pop((name, kind), None)
                if s is not None:
                    self.done.append((name, kind, s, e))
            return f

        self.handles += [module.register_forward_pre_hook(start("forward")),
                         module.register_forward_hook(stop("forward")),
                         module.register_full_backward_pre_hook(start("backward")),
                         module.register_full_backward_hook(stop("backward"))]

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    def collect(self):
        torch.cuda.synchronize()
        out = {}
        for name, kind, s, e in self.done:
            out.setdefault(f"{name}.{kind}", []).append(s.elapsed_time(e))
        self.done = []
        return out


def hw_profile(gpu):
    return next((p for k, p in (("H200", "h200-dgx"), ("H100", "h100-dgx"), ("H800", "h800-hgx"),
                                ("B200", "b200-dgx"), ("A100", "a100-80gb-dgx"),
                                ("V100", "v100-dgx1")) if k in gpu), "h100-dgx")


def environment():
    """What the manifest records of the machine, once per process."""
    p = torch.cuda.get_device_properties(0)
    env = {"gpu": p.name, "sms": p.multi_processor_count,
           "gpu_memory_GiB": round(p.total_memory / 2**30, 1),
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version()}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,power.limit",
                            "--format=csv,noheader,nounits"], capture_output=True, text=True,
                           timeout=20).stdout.strip().split(", ")
        env.update(driver=q[0], sm_clock_max_MHz=float(q[1]), power_limit_W=float(q[2]))
    except (OSError, IndexError, ValueError, subprocess.SubprocessError):
        env["driver"] = "unknown"
    return env


def tag_of(a):
    return (f"l{a.layers}-h{a.hidden}-s{a.seq}-b{a.mbs}-m{a.accum}"
            + ("-compiled" if a.compile else "-eager")
            + ("" if a.profile == PROFILE_ALL else "-p" + (a.profile.replace(",", "+") or "plain")))


PROFILE_ALL = "shapes,sync,layers"


def quantile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def bench(a, env):
    """One configuration: timing, spans, trace.  Returns its manifest record."""
    torch.manual_seed(0)
    dev = torch.device("cuda")
    t0 = time.time()
    model = GPT(a.layers, a.hidden, a.heads, a.seq, a.vocab).to(dev, torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    if a.compile:
        torch._dynamo.reset()
    run = torch.compile(model) if a.compile else model
    data = torch.randint(0, a.vocab, (a.accum, a.mbs, a.seq + 1), device=dev)

    def train_step(prof=None):
        rf = torch.autograd.profiler.record_function
        for i in range(a.accum):
            idx, tgt = data[i, :, :-1], data[i, :, 1:]
            with (prof.microbatch(i) if prof else rf("mb")):
                with (prof.phase("forward") if prof else rf("f")):
                    loss = run(idx, tgt) / a.accum
                with (prof.phase("backward") if prof else rf("b")):
                    loss.backward()
        with (prof.phase("optimizer") if prof else rf("o")):
            opt.step()
            opt.zero_grad(set_to_none=True)

    for _ in range(5):  # warm-up (and compilation)
        train_step()
    torch.cuda.synchronize()
    warm_s = time.time() - t0

    # 1. Step time: events at each step's start, back to back, no hooks.
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(a.steps + 1)]
    for i in range(a.steps):
        starts[i].record()
        train_step()
    starts[a.steps].record()
    torch.cuda.synchronize()
    times = [starts[i].elapsed_time(starts[i + 1]) for i in range(a.steps)]

    # 2. Layer and submodule spans (eager only: hooks break compiled graphs).
    spans = {}
    if not a.compile:
        timer = EventTimer()
        for i, blk in enumerate(model.blocks):
            timer.hooks(blk, f"layer{i}")
        timer.hooks(model.blocks[0].attn, "layer0.attn")
        timer.hooks(model.blocks[0].mlp, "layer0.mlp")
        for _ in range(a.span_steps):
            train_step()
        for k, v in timer.collect().items():
            spans[k] = statistics.median(v)
        timer.remove()

    # 3. The trace.
    tag = tag_of(a)
    out_dir = os.path.join(a.out, tag)
    prof = PrismProfiler(out_dir, wait=1, warmup=1, active=a.active,
                         record_shapes="shapes" in a.profile,
                         sync_events="sync" in a.profile)
    if not a.compile and "layers" in a.profile:
        prof.mark_layers(model.blocks)
    prof.describe(name=f"gpt-bench-{tag}", layers=a.layers, hidden=a.hidden, heads=a.heads,
                  ffn=4 * a.hidden, seq=a.seq, vocab=a.vocab, untied=1, tp=1, pp=1, dp=1, vp=1,
                  mbs=a.mbs, microbatches=a.accum, schedule="1f1b", recompute="none", sp=0,
                  zero=0, dtype="bf16", hw=hw_profile(env["gpu"]),
                  # bf16 parameters, fused AdamW on them, no clipping
                  optimizer_dtype="bf16", clip_grad=0)
    with prof:
        for _ in range(2 + a.active):
            train_step(prof)
            prof.step()
    torch.cuda.synchronize()
    prof.unmark_layers()
    rec = {
        "tag": tag, "layers": a.layers, "hidden": a.hidden, "heads": a.heads,
        "seq": a.seq, "vocab": a.vocab, "mbs": a.mbs, "microbatches": a.accum,
        "compiled": a.compile, "dtype": "bf16", "profile": a.profile,
        "params": sum(p.numel() for p in model.parameters()), **env,
        "steps": a.steps, "step_ms_median": statistics.median(times),
        "step_ms_p10": quantile(times, 0.1), "step_ms_p90": quantile(times, 0.9),
        "step_ms_min": min(times), "step_ms_max": max(times),
        "spans_ms_median": dict(sorted(spans.items())), "span_steps": a.span_steps,
        "peak_memory_GiB": round(torch.cuda.max_memory_allocated() / 2**30, 3),
        "warmup_s": round(warm_s, 1), "wall_s": round(time.time() - t0, 1),
        "traces": [os.path.relpath(f, a.out) for f in prof.files],
        "recorded": time.strftime("%Y-%m-%d"),
    }
    del model, opt, run, data, prof
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    if not math.isfinite(rec["step_ms_median"]):
        raise RuntimeError("step time is not finite")
    return rec


def grid():
    """The validation grid, most useful first: every eager point of
    layers {2,4,8,16} x hidden {1024,2048,4096} x microbatches {1,4}, then
    compiled points (whatever the deadline leaves)."""
    pts = []
    for h in (1024, 2048, 4096):
        for m in (1, 4):
            for l in (2, 4, 8, 16):
                pts.append(dict(layers=l, hidden=h, heads=h // 128, accum=m, compile=False))
    for l, h in ((4, 2048), (16, 2048), (8, 1024), (8, 4096)):
        pts.append(dict(layers=l, hidden=h, heads=h // 128, accum=4, compile=True))
    return pts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--mbs", type=int, default=2, help="microbatch size")
    ap.add_argument("--accum", type=int, default=1, help="microbatches per step")
    ap.add_argument("--steps", type=int, default=30, help="timed steps (at least 20)")
    ap.add_argument("--span-steps", type=int, default=5, help="steps timed with hooks")
    ap.add_argument("--active", type=int, default=3, help="steps in the trace")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--profile", default=PROFILE_ALL,
                    help="what the trace records beyond CPU and CUDA activity, of "
                         "shapes (record_shapes), sync (CUDA sync events), layers "
                         "(prism::layer ranges from hooks); '' for none")
    ap.add_argument("--grid", action="store_true", help="run the validation grid")
    ap.add_argument("--deadline", type=float, default=0,
                    help="with --grid: stop starting points after this many seconds")
    ap.add_argument("--out", default="tests/data/gpu")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpt_bench: needs a CUDA GPU")
    if a.steps < 20:
        sys.exit("gpt_bench: --steps must be at least 20")
    if a.hidden % a.heads:
        sys.exit("gpt_bench: --hidden must be a multiple of --heads")
    os.makedirs(a.out, exist_ok=True)
    if a.grid:
        return run_grid(a)
    env = environment()
    cfg = argparse.Namespace(**vars(a))
    t = time.time()
    try:
        rec = bench(cfg, env)
    except Exception as e:  # recorded, so that a grid knows what failed
        traceback.print_exc()
        rec = {"tag": tag_of(cfg), "error": f"{type(e).__name__}: {e}"[:500], **env}
    with open(os.path.join(a.out, "manifest.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")
    if "error" in rec:
        sys.exit(f"{rec['tag']}: FAILED {rec['error']}")
    print(f"{rec['tag']}: median {rec['step_ms_median']:.3f} ms "
          f"(p10 {rec['step_ms_p10']:.3f}, p90 {rec['step_ms_p90']:.3f}), "
          f"{len(rec['traces'])} trace file(s), {time.time() - t:.1f} s", flush=True)


def run_grid(a):
    """Each point in a process of its own: in one process, points after the
    first ran up to 1.6x slower on the host (l2-h1024-m4: 14.5 ms alone,
    23.5 ms as the grid's fifth point), so nothing carries over."""
    t_start, last = time.time(), 0.0
    pts = grid() + [dict(p, out=os.path.join(a.out, "repeat")) for p in repeats()]
    for p in pts:
        cfg = argparse.Namespace(**{**vars(a), **p})
        elapsed = time.time() - t_start
        if a.deadline and elapsed + 1.5 * last > a.deadline:
            print(f"{tag_of(cfg)}: skipped, {elapsed:.0f} s of {a.deadline:.0f} used", flush=True)
            continue
        cmd = [sys.executable, os.path.abspath(__file__), "--out", cfg.out,
               "--layers", str(cfg.layers), "--hidden", str(cfg.hidden),
               "--heads", str(cfg.heads), "--seq", str(cfg.seq), "--vocab", str(cfg.vocab),
               "--mbs", str(cfg.mbs), "--accum", str(cfg.accum), "--steps", str(cfg.steps),
               "--span-steps", str(cfg.span_steps), "--active", str(cfg.active)]
        if cfg.compile:
            cmd.append("--compile")
        t = time.time()
        subprocess.run(cmd, check=False)
        last = time.time() - t


def repeats():
    """Host-bound points measured again at the end: the run-to-run spread."""
    return [dict(layers=l, hidden=1024, heads=8, accum=m, compile=False)
            for l, m in ((2, 1), (2, 4), (16, 1))]


if __name__ == "__main__":
    main()
