#!/usr/bin/env python3
"""Kernel times on this GPU, to check prism's kernel-efficiency model.

Classes, each a row per shape in OUT/kernels.csv:
  gemm       y = x @ w.T (nn.Linear's forward), M x K times K x N, M, N, K in
             {256, ..., 16384}; bf16 (torch.mm) and fp8 e4m3 with per-tensor
             scales and bf16 output (torch._scaled_mm, as Transformer Engine
             and torchao call cuBLASLt);
  attention  F.scaled_dot_product_attention, forward and backward separately,
             by sequence length, head dim, causal or not and backend (the
             default choice, flash, cuDNN, memory-efficient), heads x head dim
             = 2048 and batch x sequence = 16384 tokens, bf16;
  memory     copy, add, GELU, LayerNorm forward, and what an FP8 GEMM's
             inputs cost in eager PyTorch (amax of |x|; the cast to e4m3),
             by bytes.

Times are per kernel call: GEMMs and memory-bound kernels are replayed from a
CUDA graph (so a small kernel is not timed at the host's launch rate),
attention is timed with CUDA events around back-to-back calls; the median
of three timed runs each.  No L2 flush: operands are as warm as in a training
step's back-to-back kernels.  Also writes OUT/kernels.pt.trace.json.gz, a
Kineto trace with one call of every GEMM shape (kernel names, CUPTI times),
and one manifest line (the GPU, driver, torch, CUDA) to OUT/manifest.jsonl.

Usage: kernel_sweep.py --out DIR [--quick]
"""
import argparse
import csv
import json
import os
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_bench import environment  # noqa: E402

SIZES = [256, 512, 1024, 2048, 4096, 8192, 16384]
FIELDS = ["class", "op", "dtype", "backend", "pass", "M", "N", "K", "batch", "heads",
          "seq", "head_dim", "causal", "bytes", "flop", "time_us", "tflops", "GBps",
          "calls", "timing"]


def graph_time(fn, target_ms=5.0):
    """Microseconds per call of fn, replayed from a CUDA graph of n calls."""
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(3):
        fn()
    e.record()
    torch.cuda.synchronize()
    est = max(s.elapsed_time(e) / 3, 1e-3)
    n = int(min(max(target_ms / est, 3), 500))
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()  # warm the allocator on the side stream
        torch.cuda.current_stream().wait_stream(stream)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(n):
                fn()
        runs, how = [], "graph"
        for _ in range(4):
            s.record()
            g.replay()
            e.record()
            torch.cuda.synchronize()
            runs.append(s.elapsed_time(e) * 1e3 / n)
        runs = runs[1:]
        del g
    except RuntimeError:
        runs, how = event_runs(fn, n), "events"
    return statistics.median(runs), n, how


def event_runs(fn, n):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    runs = []
    for _ in range(3):
        s.record()
        for _ in range(n):
            fn()
        e.record()
        torch.cuda.synchronize()
        runs.append(s.elapsed_time(e) * 1e3 / n)
    return runs


def event_time(fn, target_ms=10.0):
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    torch.cuda.synchronize()
    n = int(min(max(target_ms / max(s.elapsed_time(e), 1e-3), 3), 200))
    return statistics.median(event_runs(fn, n)), n, "events"


def fp8(x):
    """Per-tensor scaled e4m3 copy of x and its inverse scale (float32)."""
    amax = x.abs().amax().float().clamp(min=1e-12)
    scale = 448.0 / amax
    return (x.float() * scale).to(torch.float8_e4m3fn), (1.0 / scale).reshape(())


def gemms(rows, sizes, dtypes, trace_dir):
    dev = "cuda"
    shapes = [(m, n, k) for m in sizes for n in sizes for k in sizes]
    ops = {}
    for dt in dtypes:
        for m, n, k in shapes:
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
            if dt == "bf16":
                def fn(x=x, w=w):
                    return torch.mm(x, w.t())
            else:
                xq, xs = fp8(x)
                wq, ws = fp8(w)
                del x, w

                def fn(xq=xq, wq=wq, xs=xs, ws=ws):
                    return torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=ws,
                                            out_dtype=torch.bfloat16)
            try:
                us, calls, how = graph_time(fn)
            except RuntimeError as err:
                print(f"gemm {dt} {m}x{n}x{k}: {err}", file=sys.stderr)
                continue
            flop = 2.0 * m * n * k
            size = 2 if dt == "bf16" else 1
            nbytes = size * (m * k + n * k) + 2 * m * n
            rows.append(dict(zip(FIELDS, ["gemm", "linear", dt, "cublas", "fwd", m, n, k, 1, "",
                                          "", "", "", nbytes, flop, round(us, 3),
                                          round(flop / us / 1e6, 2),
                                          round(nbytes / us / 1e3, 1), calls, how])))
            if m == n == k or (m, n, k) in ((4096, 16384, 4096), (4096, 4096, 16384)):
                ops[(dt, m, n, k)] = fn
            torch.cuda.empty_cache()
        print(f"gemm {dt}: {len(shapes)} shapes done", flush=True)
    # One call of a few shapes under the profiler: kernel names as prism sees them.
    from torch.profiler import ProfilerActivity, profile, record_function
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 record_shapes=True) as prof:
        for (dt, m, n, k), fn in ops.items():
            with record_function(f"gemm#{dt}#{m}x{n}x{k}"):
                fn()
        torch.cuda.synchronize()
    prof.export_chrome_trace(os.path.join(trace_dir, "kernels.pt.trace.json.gz"))


def attention(rows, seqs, dims):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = {"default": None, "flash": SDPBackend.FLASH_ATTENTION,
                "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    for d in dims:
        heads = 2048 // d
        for s in seqs:
            b = max(1, 16384 // s)
            for causal in (True, False):
                q, k, v = (torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16,
                                       requires_grad=True) for _ in range(3))
                g = torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16)
                # FLOPs as FlashAttention counts them: 4 b h s^2 d forward, halved
                # when causal; backward 2.5x the forward.
                fwd_flop = 4.0 * b * heads * s * s * d / (2 if causal else 1)
                for name, be in backends.items():
                    try:
                        with (sdpa_kernel([be]) if be is not None else _Null()):
                            def fwd():
                                with torch.no_grad():
                                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                            t_f, n_f, how = event_time(fwd)
                            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                            def bwd():
                                return torch.autograd.grad(out, (q, k, v), g, retain_graph=True)
                            t_b, n_b, _ = event_time(bwd)
                            del out
                    except RuntimeError as err:
                        print(f"attention {name} s={s} d={d} causal={causal}: "
                              f"{str(err).splitlines()[0][:120]}", file=sys.stderr)
                        continue
                    for pas, t, n, flop in (("fwd", t_f, n_f, fwd_flop),
                                            ("bwd", t_b, n_b, 2.5 * fwd_flop)):
                        rows.append(dict(zip(FIELDS, [
                            "attention", "sdpa", "bf16", name, pas, "", "", "", b, heads, s, d,
                            int(causal), 4 * 2 * b * heads * s * d, flop, round(t, 3),
                            round(flop / t / 1e6, 2), "", n, how])))
                del q, k, v, g
                torch.cuda.empty_cache()
        print(f"attention d={d} done", flush=True)


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *_):
        return False


def memory_bound(rows, exps):
    for e in exps:
        nbytes = 2 ** e
        n = nbytes // 2  # bf16 elements per tensor
        h = 4096
        x = torch.randn(n // h, h, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        z = torch.randn_like(x)
        ln = torch.nn.LayerNorm(h, device="cuda", dtype=torch.bfloat16)
        amax = torch.zeros((), device="cuda", dtype=torch.bfloat16)
        q = torch.empty(x.shape, device="cuda", dtype=torch.float8_e4m3fn)
        cases = {
            "copy": (lambda: y.copy_(x), 2 * nbytes),
            "add": (lambda: torch.add(x, z, out=y), 3 * nbytes),
            "gelu": (lambda: F.gelu(x), 2 * nbytes),
            "layernorm_fwd": (lambda: ln(x), 2 * nbytes),
            # FP8 inputs in eager PyTorch: |x| then its amax (two kernels), and
            # the cast to e4m3 (Transformer Engine fuses all three).
            "fp8_amax_eager": (lambda: torch.amax(x.abs(), out=amax), 3 * nbytes),
            "fp8_cast": (lambda: q.copy_(x), nbytes + nbytes // 2),
        }
        for op, (fn, moved) in cases.items():
            with torch.no_grad():
                try:
                    us, calls, how = graph_time(fn)
                except RuntimeError as err:
                    print(f"memory {op} {nbytes}: {err}", file=sys.stderr)
                    continue
            rows.append(dict(zip(FIELDS, ["memory", op, "bf16", "torch", "fwd", n // h, h, "",
                                          "", "", "", "", "", moved, "", round(us, 3), "",
                                          round(moved / us / 1e3, 1), calls, how])))
        del x, y, z, q
        torch.cuda.empty_cache()
    print("memory-bound done", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="tests/data/gpu")
    ap.add_argument("--quick", action="store_true", help="a few shapes of each class")
    ap.add_argument("--classes", default="memory,attention,gemm",
                    help="comma-separated classes to measure (default: all)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("kernel_sweep: needs a CUDA GPU")
    os.makedirs(a.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    env = environment()
    t0, rows = time.time(), []
    sizes = [256, 4096] if a.quick else SIZES
    for name, run in (
            ("memory", lambda: memory_bound(rows, [20, 26] if a.quick else range(20, 31))),
            ("attention", lambda: attention(
                rows, [1024] if a.quick else [512, 1024, 2048, 4096, 8192, 16384],
                [128] if a.quick else [64, 128, 256])),
            ("gemm", lambda: gemms(rows, sizes, ["bf16", "fp8"], a.out))):
        if name not in a.classes.split(","):
            continue
        try:  # a class that fails must not lose the others
            run()
        except Exception:
            traceback.print_exc()
            print(f"kernel sweep: class {name} failed", flush=True)
    path = os.path.join(a.out, "kernels.csv" if a.classes == ap.get_default("classes")
                        else f"kernels-{a.classes.replace(',', '-')}.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    rec = {"tag": "kernel-sweep", "file": os.path.basename(path), "rows": len(rows),
           "trace": "kernels.pt.trace.json.gz" if "gemm" in a.classes else None, **env,
           "wall_s": round(time.time() - t0, 1), "recorded": time.strftime("%Y-%m-%d")}
    with open(os.path.join(a.out, "manifest.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(f"kernel sweep: {len(rows)} rows in {rec['wall_s']} s -> {path}", flush=True)


if __name__ == "__main__":
    main()
