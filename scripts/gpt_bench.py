#!/usr/bin/env python3
"""A small GPT trained on random tokens: prism's validation runs on a GPU.

Plain PyTorch, nothing downloaded.  For one configuration it
  1. times at least --steps training steps with CUDA events (median and
     spread of the step time);
  2. times each layer's forward and backward, and each submodule
     (attention, MLP) with CUDA events from hooks: the layer and submodule
     granularities;
  3. records a Kineto trace of a few steps with scripts/collect_trace.py
     (layer, phase and microbatch ranges, CUDA sync events): the kernel
     granularity, and what prism ingests;
and appends one JSON line describing it all to OUT/manifest.jsonl.

Usage: gpt_bench.py --layers 4 --hidden 2048 --heads 16 --seq 1024 --mbs 4
                    --accum 1 [--compile] [--steps 30] --out tests/data/gpu
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collect_trace import PrismProfiler  # noqa: E402


class Block(nn.Module):
    def __init__(self, h, heads, ffn):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.ln2 = nn.LayerNorm(h)
        self.up = nn.Linear(h, ffn)
        self.down = nn.Linear(ffn, h)

    def attention(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, s, h))

    def mlp(self, x):
        return self.down(F.gelu(self.up(self.ln2(x))))

    def forward(self, x):
        x = x + self.attention(x)
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
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


class EventTimer:
    """CUDA-event spans from module hooks, read after the step ends."""

    def __init__(self):
        self.open, self.done = {}, []

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

        module.register_forward_pre_hook(start("forward"))
        module.register_forward_hook(stop("forward"))
        module.register_full_backward_pre_hook(start("backward"))
        module.register_full_backward_hook(stop("backward"))

    def collect(self):
        out = {}
        for name, kind, s, e in self.done:
            out.setdefault(f"{name}.{kind}", []).append(s.elapsed_time(e))
        self.done = []
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--mbs", type=int, default=4, help="microbatch size")
    ap.add_argument("--accum", type=int, default=1, help="microbatches per step")
    ap.add_argument("--steps", type=int, default=30, help="timed steps (at least 20)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--out", default="tests/data/gpu")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpt_bench: needs a CUDA GPU")
    if a.steps < 20:
        sys.exit("gpt_bench: --steps must be at least 20")
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = GPT(a.layers, a.hidden, a.heads, a.seq, a.vocab).to(dev, torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    timer = EventTimer()
    if not a.compile:  # hooks would break graphs under torch.compile
        for i, blk in enumerate(model.blocks):
            timer.hooks(blk, f"layer{i}")
        timer.hooks(model.blocks[0].qkv, "layer0.qkv")
        timer.hooks(model.blocks[0].up, "layer0.mlp_up")
    run = torch.compile(model) if a.compile else model
    data = torch.randint(0, a.vocab, (a.accum, a.mbs, a.seq + 1), device=dev)

    def train_step(prof=None):
        for i in range(a.accum):
            idx, tgt = data[i, :, :-1], data[i, :, 1:]
            ctx_f = prof.microbatch(i) if prof else torch.autograd.profiler.record_function("mb")
            with ctx_f:
                with (prof.phase("forward") if prof else torch.autograd.profiler.record_function("f")):
                    loss = run(idx, tgt) / a.accum
                with (prof.phase("backward") if prof else torch.autograd.profiler.record_function("b")):
                    loss.backward()
        with (prof.phase("optimizer") if prof else torch.autograd.profiler.record_function("o")):
            opt.step()
            opt.zero_grad(set_to_none=True)

    for _ in range(5):  # warm-up (and compilation)
        train_step()
    torch.cuda.synchronize()
    timer.collect()
    times, spans = [], {}
    for _ in range(a.steps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        train_step()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
        for k, v in timer.collect().items():
            spans.setdefault(k, []).extend(v)

    tag = (f"l{a.layers}-h{a.hidden}-s{a.seq}-b{a.mbs}-m{a.accum}"
           + ("-compiled" if a.compile else "-eager"))
    out_dir = os.path.join(a.out, tag)
    prof = PrismProfiler(out_dir, wait=1, warmup=1, active=3)
    if not a.compile:
        prof.mark_layers(model.blocks)
    gpu = torch.cuda.get_device_name()
    hw = next((p for k, p in (("H200", "h200-dgx"), ("H100", "h100-dgx"), ("H800", "h800-hgx"),
                              ("B200", "b200-dgx"), ("A100", "a100-80gb-dgx"),
                              ("V100", "v100-dgx1")) if k in gpu), "h100-dgx")
    prof.describe(name=f"gpt-bench-{tag}", layers=a.layers, hidden=a.hidden, heads=a.heads,
                  ffn=4 * a.hidden, seq=a.seq, vocab=a.vocab, tp=1, pp=1, dp=1, vp=1,
                  mbs=a.mbs, microbatches=a.accum, schedule="1f1b", recompute="none", sp=0,
                  zero=0, dtype="bf16", hw=hw)
    with prof:
        for _ in range(5):
            train_step(prof)
            prof.step()
    times.sort()
    q = lambda p: times[min(len(times) - 1, int(p * len(times)))]
    rec = {
        "tag": tag, "layers": a.layers, "hidden": a.hidden, "heads": a.heads,
        "seq": a.seq, "vocab": a.vocab, "mbs": a.mbs, "microbatches": a.accum,
        "compiled": a.compile, "dtype": "bf16",
        "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
        "cuda": torch.version.cuda, "steps": a.steps,
        "step_ms_median": statistics.median(times), "step_ms_p10": q(0.1),
        "step_ms_p90": q(0.9),
        "spans_ms_median": {k: statistics.median(v) for k, v in sorted(spans.items())},
        "traces": [os.path.relpath(f, a.out) for f in prof.files],
        "recorded": time.strftime("%Y-%m-%d"),
    }
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "manifest.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(f"{tag}: median {rec['step_ms_median']:.3f} ms "
          f"(p10 {rec['step_ms_p10']:.3f}, p90 {rec['step_ms_p90']:.3f}), "
          f"{len(prof.files)} trace file(s)")
    assert math.isfinite(rec["step_ms_median"])


if __name__ == "__main__":
    main()
