#!/usr/bin/env python3
"""Measure on one GPU what prism's cost models still guess (issue 39).

Sections, each written row by row to its own CSV under --out, so a run
cut short keeps what it measured:
  sustained.csv  bf16 and fp8 GEMMs of training shapes run back to back for
                 tens of seconds: TFLOP/s per ~100 ms chunk, with the time it
                 ended (time.monotonic); clocks.csv holds the SM clock, power,
                 temperature and throttle reasons sampled every 100 ms over
                 the same clock (NVML in this process; nvidia-smi's own log
                 is kept beside it as a cross-check).  The power limit is
                 read, never changed.
  grouped.csv    grouped GEMMs (torch._grouped_mm, as torchtitan calls it;
                 a loop of torch.mm where it is absent) at tokens per expert
                 16-4096 and 8-128 experts, beside one dense GEMM of the same
                 total work.
  attention.csv  F.scaled_dot_product_attention forward and backward by
                 backend at head dims 64, 128, 192 and MLA's 192/128 q-k/v,
                 GQA ratios 1, 4, 8; then (section "windows", run last: it
                 compiles) sliding windows with FlexAttention's block-sparse
                 kernel beside its full causal mask.
  host.csv       a small GPT step (scripts/gpt_bench.py's model) eager and
                 replayed from a CUDA graph: wall time, GPU time, kernels
                 launched per step, CPU time per launch.
  mixed.csv      a step's mix at kernel level: a GEMM then a copy, back to
                 back for 25 s a dtype, the copy sized so the GEMM fills 73 %
                 of the pair (prism's compute share of a GPU-bound step);
                 each kernel timed between its own events.
  duty.csv       the same pair at GEMM shares 1 to 0.3, the filler a copy
                 (memory-bound) or a spin (a waiting collective), bf16 and
                 fp8, 8 s a case: the step clock against the compute share.
  phases.csv     the power balance's time scale: a settled GEMM stream, then
                 an idle phase of 10 ms to 1 s (the GPU idle, or spinning as
                 a waiting collective does), then 600 ms of the same GEMMs,
                 each timed between its own events: the first kernel's rate
                 says how far the clock recovered in the idle phase, the
                 rest how fast it falls back (whether a pipeline's fill and
                 drain, or an exposed collective, count as a step's waiting).
  optim.csv      fused AdamW steps over gpt_bench.py's parameter lists (bf16
                 and fp32 parameters), the step's kernels from the profiler
                 in optim_kernels.csv, beside a copy's rate: the optimizer's
                 multi-tensor-apply bandwidth.
  allocator.csv  max_memory_allocated vs max_memory_reserved after three
                 training steps of the GPU set's configurations, each setting
                 of PYTORCH_CUDA_ALLOC_CONF in a process of its own (default
                 and expandable_segments:True).
manifest.json names the GPU, driver, torch, CUDA, clocks and power limit and
what each section did; log.txt holds errors (a failing case is logged and
skipped, never fatal).

--dry-run runs the whole flow on the CPU on tiny sizes with short durations
(no CUDA, no NVML), to test the script before spending device time.
--budget S stops starting new work after S seconds (default 400).
--no-clocks leaves out the NVML sampler thread and nvidia-smi (for host
timings a process of its own).

Usage: gpu_probe.py --out DIR [--dry-run] [--budget S] [--only SECTIONS] [--no-clocks]
"""
import argparse
import csv
import gc
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import traceback

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SECTIONS = ["sustained", "grouped", "attention", "host", "allocator", "mixed", "duty", "phases",
            "optim", "windows"]


class Ctx:
    """Device, timing and the run's deadline and log."""

    def __init__(self, a):
        self.dry = a.dry_run
        self.dev = torch.device("cpu" if self.dry else "cuda")
        self.t0 = time.monotonic()
        self.budget = a.budget
        self.out = a.out
        self.log_f = open(os.path.join(a.out, "log.txt"), "a")

    def left(self):
        return self.budget - (time.monotonic() - self.t0)

    def log(self, msg):
        line = f"[{time.monotonic() - self.t0:7.1f}s] {msg}"
        print(line, flush=True)
        self.log_f.write(line + "\n")
        self.log_f.flush()

    def sync(self):
        if not self.dry:
            torch.cuda.synchronize()

    def run_ms(self, fn, n):
        """Milliseconds n back-to-back calls of fn take (CUDA events; the
        host's clock in a dry run), waited for."""
        if self.dry:
            t = time.perf_counter()
            for _ in range(n):
                fn()
            return (time.perf_counter() - t) * 1e3
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(n):
            fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e)

    def ms(self, fn, n=3, reps=3):
        """Milliseconds per call of fn, the median of reps runs of n calls."""
        fn()
        self.sync()
        return statistics.median(self.run_ms(fn, n) / n for _ in range(reps))

    def calls_for(self, fn, target_ms):
        """How many calls of fn make about target_ms (at least 1)."""
        t = self.ms(fn, n=1, reps=1)
        return max(1, min(2000, int(target_ms / max(t, 1e-3))))


class Writer:
    """A CSV written row by row (flushed), or appended to where it exists."""

    def __init__(self, path, fields, append=False):
        old = append and os.path.exists(path)
        self.f = open(path, "a" if old else "w", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=fields, extrasaction="ignore")
        if not old:
            self.w.writeheader()
        self.f.flush()
        self.n = 0

    def row(self, **kw):
        self.w.writerow(kw)
        self.f.flush()
        self.n += 1


# ---------------------------------------------------------------- clocks --

class ClockLog:
    """SM clock, power, temperature, throttle reasons every 100 ms (NVML)."""

    FIELDS = ["source", "mono_s", "sm_mhz", "mem_mhz", "power_w", "temp_c", "reasons"]

    def __init__(self, ctx, path, off=False):
        self.ctx, self.stop, self.thread, self.smi = ctx, threading.Event(), None, None
        self.w = Writer(path, self.FIELDS)
        self.info, self.nv, self.off = {}, None, off or ctx.dry
        if self.off:
            return
        try:
            import pynvml as nv
            nv.nvmlInit()
            self.nv, self.h = nv, nv.nvmlDeviceGetHandleByIndex(0)
            h = self.h
            self.info = {
                "power_limit_w": nv.nvmlDeviceGetPowerManagementLimit(h) / 1e3,
                "power_default_limit_w": nv.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1e3,
                "enforced_power_limit_w": nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3,
                "sm_max_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM),
                "mem_max_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM),
            }
            try:
                c = nv.nvmlDeviceGetPowerManagementLimitConstraints(h)
                self.info["power_limit_range_w"] = [c[0] / 1e3, c[1] / 1e3]
            except Exception:  # noqa: BLE001 - optional field
                pass
            try:
                self.info["app_sm_mhz"] = nv.nvmlDeviceGetApplicationsClock(h, nv.NVML_CLOCK_SM)
            except Exception:  # noqa: BLE001
                pass
        except Exception as err:  # noqa: BLE001 - NVML is optional
            ctx.log(f"clocks: NVML unavailable ({err}); nvidia-smi only")
            self.nv = None
        try:
            self.smi_path = os.path.join(ctx.out, "smi.tmp")
            self.smi = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,"
                 "temperature.gpu,clocks_event_reasons.active", "--format=csv,noheader,nounits",
                 "-lms", "100"], stdout=open(self.smi_path, "w"), stderr=subprocess.DEVNULL)
            self.smi_mono = time.monotonic()
            self.smi_wall = time.time()
        except OSError as err:
            ctx.log(f"clocks: nvidia-smi not started ({err})")

    def sample(self):
        nv, h = self.nv, self.h
        try:
            reasons = nv.nvmlDeviceGetCurrentClocksEventReasons(h)
        except Exception:  # noqa: BLE001 - older bindings
            reasons = nv.nvmlDeviceGetCurrentClocksThrottleReasons(h)
        self.w.row(source="nvml", mono_s=f"{time.monotonic():.3f}",
                   sm_mhz=nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                   mem_mhz=nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
                   power_w=f"{nv.nvmlDeviceGetPowerUsage(h) / 1e3:.1f}",
                   temp_c=nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
                   reasons=f"0x{reasons:x}")

    def run(self):
        while not self.stop.wait(0.1):
            try:
                self.sample()
            except Exception as err:  # noqa: BLE001
                self.ctx.log(f"clocks: sample failed: {err}")
                return

    def __enter__(self):
        if not self.off and self.nv is not None:
            self.thread = threading.Thread(target=self.run, daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        if self.thread:
            self.thread.join()
        if self.smi:
            self.smi.terminate()
            self.smi.wait()
            # nvidia-smi's wall-clock stamps onto this process's monotonic clock
            off = self.smi_mono - self.smi_wall
            import datetime
            with open(self.smi_path) as f:
                for line in f:
                    p = [x.strip() for x in line.split(",")]
                    if len(p) < 6:
                        continue
                    try:
                        t = datetime.datetime.strptime(p[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                    except ValueError:
                        continue
                    self.w.row(source="nvidia-smi", mono_s=f"{t + off:.3f}", sm_mhz=p[1],
                               mem_mhz=p[2], power_w=p[3], temp_c=p[4], reasons=p[5])
            os.remove(self.smi_path)


# -------------------------------------------------------------- sections --

def fp8_operands(ctx, m, n, k):
    """x (m x k) and w (n x k) in e4m3 with per-tensor scales, as TE casts."""
    x = torch.randn(m, k, device=ctx.dev, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=ctx.dev, dtype=torch.bfloat16)
    xs = (x.abs().max().float() / 448.0).reshape(())
    ws = (w.abs().max().float() / 448.0).reshape(())
    xq = (x.float() / xs).to(torch.float8_e4m3fn)
    wq = (w.float() / ws).to(torch.float8_e4m3fn)
    return xq, wq, xs, ws


def gemm_fn(ctx, dtype, m, n, k):
    """One call's function; "copy" moves m x n bf16 (k unused)."""
    if dtype == "copy":
        src = torch.randn(m, n, device=ctx.dev, dtype=torch.bfloat16)
        dst = torch.empty_like(src)
        return lambda: dst.copy_(src)
    if dtype == "bf16":
        x = torch.randn(m, k, device=ctx.dev, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=ctx.dev, dtype=torch.bfloat16)
        return lambda: torch.mm(x, w.t())
    xq, wq, xs, ws = fp8_operands(ctx, m, n, k)
    return lambda: torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=ws,
                                    out_dtype=torch.bfloat16)


def sustained(ctx):
    """GEMMs back to back, TFLOP/s per ~100 ms chunk against time."""
    if ctx.dry:
        cases = [("bf16", 256, 256, 256, 0.3), ("fp8", 256, 256, 256, 0.3),
                 ("copy", 256, 256, 0, 0.2)]
        idle = 0.1
    else:
        # A copy of 2 x 2 GiB (read + write) stands for memory-bound work.
        cases = [("bf16", 8192, 8192, 8192, 40), ("fp8", 8192, 8192, 8192, 25),
                 ("bf16", 16384, 28672, 8192, 25), ("copy", 32768, 32768, 0, 15)]
        idle = 3.0
    w = Writer(os.path.join(ctx.out, "sustained.csv"),
               ["test", "dtype", "M", "N", "K", "chunk", "start_mono_s", "end_mono_s",
                "calls", "ms_per_call", "tflops"])  # copy: tflops holds TB/s
    for dt, m, n, k, secs in cases:
        if ctx.left() < secs + 30:
            ctx.log(f"sustained {dt} {m}x{n}x{k}: skipped, budget")
            continue
        test = f"{dt}-{m}x{n}x{k}"
        try:
            fn = gemm_fn(ctx, dt, m, n, k)
            per = ctx.calls_for(fn, 100.0)
        except (RuntimeError, TypeError, AttributeError) as err:
            ctx.log(f"sustained {test}: {err}")
            continue
        time.sleep(idle)  # let the clock recover between tests
        flop = 2.0 * m * n * k if k else 4.0 * m * n  # copy: bytes moved
        end = time.monotonic() + secs
        i = 0
        while time.monotonic() < end:
            t_start = time.monotonic()
            ms = ctx.run_ms(fn, per)
            w.row(test=test, dtype=dt, M=m, N=n, K=k, chunk=i, start_mono_s=f"{t_start:.3f}",
                  end_mono_s=f"{time.monotonic():.3f}", calls=per,
                  ms_per_call=f"{ms / per:.4f}", tflops=f"{flop * per / ms / 1e9:.1f}")
            i += 1
        ctx.log(f"sustained {test}: {i} chunks of {per} calls")
        del fn
        gc.collect()
    return w.n


def pair_chunks(ctx, gemm, fill, pairs, secs):
    """A GEMM then a filler kernel, pairs of them a chunk, chunk after chunk
    for secs; each kernel timed between its own events (the host's clock in
    a dry run).  Yields (start, end, GEMM ms, filler ms) a chunk, summed
    over its pairs."""
    end = time.monotonic() + secs
    while time.monotonic() < end:
        t_start = time.monotonic()
        if ctx.dry:
            g = c = 0.0
            for _ in range(pairs):
                t = time.perf_counter()
                gemm()
                g += (time.perf_counter() - t) * 1e3
                t = time.perf_counter()
                fill()
                c += (time.perf_counter() - t) * 1e3
        else:
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(2 * pairs + 1)]
            ev[0].record()
            for j in range(pairs):
                gemm()
                ev[2 * j + 1].record()
                fill()
                ev[2 * j + 2].record()
            ev[-1].synchronize()
            g = sum(ev[2 * j].elapsed_time(ev[2 * j + 1]) for j in range(pairs))
            c = sum(ev[2 * j + 1].elapsed_time(ev[2 * j + 2]) for j in range(pairs))
        yield t_start, time.monotonic(), g, c


def copy_filler(ctx, t_g, phi):
    """A copy sized so that a GEMM of t_g ms fills phi of the pair (sized
    at the burst clock); its function and bytes moved."""
    pm = 256 if ctx.dry else 8192  # 2 x 128 MiB: past the L2
    t_c = ctx.ms(gemm_fn(ctx, "copy", pm, pm, 0), n=20)
    elems = max(1, int(pm * pm * t_g * (1 - phi) / phi / t_c))
    src = torch.randn(elems, device=ctx.dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    return (lambda: dst.copy_(src)), 4 * elems


def spin_filler(ctx, t_g, phi):
    """A kernel that spins on its SMs for a clock-cycle count (as a
    collective waiting on its peers does: resident, no math, little
    power), sized so a GEMM of t_g ms fills phi of the pair; its function
    and cycle count.  A dry run sleeps on the host instead."""
    ms = t_g * (1 - phi) / phi
    if ctx.dry:
        return (lambda: time.sleep(ms / 1e3)), 0
    cycles = int(ms * 1.98e6)  # at 1,980 MHz, then scaled by what it took
    t = ctx.ms(lambda: torch.cuda._sleep(cycles), n=5)
    cycles = max(1, int(cycles * ms / max(t, 1e-3)))
    return (lambda: torch.cuda._sleep(cycles)), cycles


def mixed(ctx):
    """A step's mix at kernel level: a GEMM then a copy, back to back, the
    copy sized so the GEMM fills PHI of the pair at the start; each kernel
    timed between its own events, ~100 ms chunks, 25 s a dtype.  The
    GEMM's settled rate over its first chunk's is the clock a step of that
    compute share settles at (prism's relation, 1 - (1 - stream) x phi)."""
    phi = 0.73
    if ctx.dry:
        cases, secs, idle, size = [("bf16", 256), ("fp8", 256)], 0.3, 0.1, 256
    else:
        cases, secs, idle, size = [("bf16", 8192), ("fp8", 8192)], 25, 3.0, 8192
    w = Writer(os.path.join(ctx.out, "mixed.csv"),
               ["test", "dtype", "M", "N", "K", "copy_bytes", "phi_target", "chunk",
                "start_mono_s", "end_mono_s", "pairs", "gemm_ms", "copy_ms", "gemm_share",
                "gemm_tflops"])
    for dt, n in cases:
        if ctx.left() < secs + 20:
            ctx.log(f"mixed {dt}: skipped, budget")
            continue
        try:
            fn = gemm_fn(ctx, dt, n, n, n)
            t_g = ctx.ms(fn, n=5)
            fill, nbytes = copy_filler(ctx, t_g, phi)
        except (RuntimeError, TypeError, AttributeError) as err:
            ctx.log(f"mixed {dt}: {err}")
            continue
        pairs = max(1, int(100.0 / (t_g / phi)))
        time.sleep(idle)
        flop = 2.0 * n * n * n
        i = 0
        for t0, t1, g, c in pair_chunks(ctx, fn, fill, pairs, secs):
            w.row(test=f"{dt}-{n}^3+copy", dtype=dt, M=n, N=n, K=n, copy_bytes=nbytes,
                  phi_target=phi, chunk=i, start_mono_s=f"{t0:.3f}", end_mono_s=f"{t1:.3f}",
                  pairs=pairs, gemm_ms=f"{g / pairs:.4f}", copy_ms=f"{c / pairs:.4f}",
                  gemm_share=f"{g / (g + c):.4f}", gemm_tflops=f"{flop * pairs / g / 1e9:.1f}")
            i += 1
        ctx.log(f"mixed {dt}: {i} chunks of {pairs} pairs, copy {nbytes >> 20} MiB a pair")
        del fn, fill
        gc.collect()
    return w.n


def duty(ctx):
    """The step clock against the compute share: mixed's pair at shares
    from 1 down to 0.3, the filler a copy (memory-bound: HBM power) or a
    spin (a waiting collective: little power), bf16 and fp8; 8 s a case
    after 1.5 s idle, the settled rate read from the case's last 5 s."""
    if ctx.dry:
        n, secs, idle = 256, 0.2, 0.05
    else:
        n, secs, idle = 8192, 8.0, 1.5
    cases = [("bf16", "copy", p) for p in (1.0, 0.85, 0.73, 0.6, 0.45, 0.3)]
    cases += [("bf16", "spin", p) for p in (0.73, 0.5, 0.3)]
    cases += [("fp8", "copy", p) for p in (1.0, 0.6, 0.4)]
    cases += [("fp8", "spin", 0.5)]
    w = Writer(os.path.join(ctx.out, "duty.csv"),
               ["test", "dtype", "filler", "N", "fill_size", "phi_target", "chunk",
                "start_mono_s", "end_mono_s", "pairs", "gemm_ms", "fill_ms", "gemm_share",
                "gemm_tflops"])
    fns = {}
    for dt, kind, phi in cases:
        if ctx.left() < secs + idle + 5:
            ctx.log(f"duty {dt} {kind} {phi}: skipped, budget")
            continue
        try:
            if dt not in fns:
                fn = gemm_fn(ctx, dt, n, n, n)
                fns[dt] = (fn, ctx.ms(fn, n=5))
            fn, t_g = fns[dt]
            if phi >= 1.0:
                fill, size = (lambda: None), 0
            elif kind == "copy":
                fill, size = copy_filler(ctx, t_g, phi)
            else:
                fill, size = spin_filler(ctx, t_g, phi)
        except (RuntimeError, TypeError, AttributeError) as err:
            ctx.log(f"duty {dt} {kind} {phi}: {err}")
            continue
        pairs = max(1, int(100.0 / (t_g / phi)))
        time.sleep(idle)
        flop = 2.0 * n * n * n
        test = f"{dt}-{n}^3+{kind}-{phi:.2f}"
        i = 0
        for t0, t1, g, c in pair_chunks(ctx, fn, fill, pairs, secs):
            w.row(test=test, dtype=dt, filler=kind, N=n, fill_size=size, phi_target=phi,
                  chunk=i, start_mono_s=f"{t0:.3f}", end_mono_s=f"{t1:.3f}", pairs=pairs,
                  gemm_ms=f"{g / pairs:.4f}", fill_ms=f"{c / pairs:.4f}",
                  gemm_share=f"{g / (g + c):.4f}", gemm_tflops=f"{flop * pairs / g / 1e9:.1f}")
            i += 1
        ctx.log(f"duty {test}: {i} chunks of {pairs} pairs, filler size {size}")
        del fill
        gc.collect()
    return w.n


def timed_calls(ctx, fn, n):
    """n calls of fn back to back, each timed between its own events (the
    host's clock in a dry run): (start offset ms, ms) a call, the offsets
    from the first call's start.  Nothing runs before the first call (no
    warm-up, no synchronisation): what the GPU was doing just before shows."""
    if ctx.dry:
        out, t0 = [], time.perf_counter()
        for _ in range(n):
            t = time.perf_counter()
            fn()
            out.append(((t - t0) * 1e3, (time.perf_counter() - t) * 1e3))
        return out
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    ev[0].record()
    for j in range(n):
        fn()
        ev[j + 1].record()
    ev[-1].synchronize()
    return [(ev[0].elapsed_time(ev[j]), ev[j].elapsed_time(ev[j + 1])) for j in range(n)]


def phases(ctx):
    """The power balance's time scale: a GEMM stream settled for SETTLE s,
    an idle phase of I ms (the GPU idle while the host sleeps, or spinning
    in torch.cuda._sleep as a waiting collective does), then BUSY ms of
    the same GEMM with every call timed.  A row per call after the idle
    phase (call 0 on); the settled stream's last 100 ms as rows of idle_ms
    -1 (calls -n to -1).  About 90 s on a GPU."""
    if ctx.dry:
        n, settle, busy, idles, dts = 256, 0.1, 0.05, [10, 30], ["bf16"]
    else:
        n, settle, busy, idles, dts = 8192, 2.0, 0.6, [10, 30, 100, 300, 1000], ["bf16", "fp8"]
    w = Writer(os.path.join(ctx.out, "phases.csv"),
               ["test", "dtype", "N", "idle_kind", "idle_ms", "rep", "call", "start_ms", "ms",
                "tflops"])
    flop = 2.0 * n * n * n
    for dt in dts:
        try:
            fn = gemm_fn(ctx, dt, n, n, n)
            t_g = ctx.ms(fn, n=5)
            spin, _ = spin_filler(ctx, t_g, 0.5)  # one GEMM's length a call
            t_sp = ctx.ms(spin, n=1, reps=1)
        except (RuntimeError, TypeError, AttributeError) as err:
            ctx.log(f"phases {dt}: {err}")
            continue
        kinds = ["idle", "spin"] if dt == "bf16" else ["idle"]
        for kind in kinds:
            for idle_ms in idles:
                for rep in range(2):
                    need = settle + idle_ms / 1e3 + busy + 2
                    if ctx.left() < need:
                        ctx.log(f"phases {dt} {kind} {idle_ms}: skipped, budget")
                        continue
                    test = f"{dt}-{n}^3-{kind}-{idle_ms}ms"
                    rows = timed_calls(ctx, fn, max(1, int(settle * 1e3 / t_g)))
                    ref = [r for r in rows if r[0] >= rows[-1][0] - 100.0]
                    if kind == "idle":
                        ctx.sync()
                        time.sleep(idle_ms / 1e3)
                    else:
                        for _ in range(max(1, int(round(idle_ms / max(t_sp, 1e-3))))):
                            spin()
                    after = timed_calls(ctx, fn, max(1, int(busy * 1e3 / t_g)))
                    for i, (t0, ms) in [(j - len(ref), r) for j, r in enumerate(ref)] + list(
                            enumerate(after)):
                        w.row(test=test, dtype=dt, N=n, idle_kind=kind,
                              idle_ms=idle_ms if i >= 0 else -1, rep=rep, call=i,
                              start_ms=f"{t0:.4f}", ms=f"{ms:.4f}",
                              tflops=f"{flop / ms / 1e9:.1f}")
                    settled = statistics.median(r[1] for r in ref)
                    ctx.log(f"phases {test} rep {rep}: {len(after)} calls after, first "
                            f"{after[0][1]:.4f} ms, settled {settled:.4f}")
        del fn, spin
        gc.collect()
    return w.n


def gpt_param_shapes(layers, h, vocab=32768, seq=1024):
    """The parameter shapes of scripts/gpt_bench.py's model (its order)."""
    shapes = [(vocab, h), (seq, h)]
    for _ in range(layers):
        shapes += [(h,), (h,), (3 * h, h), (3 * h,), (h, h), (h,)]
        shapes += [(h,), (h,), (4 * h, h), (4 * h,), (h, 4 * h), (h,)]
    return shapes + [(h,), (h,), (vocab, h)]


def optim(ctx):
    """The optimizer's multi-tensor-apply kernels: PyTorch's fused AdamW
    (fused=True, as gpt_bench.py runs it) over gpt_bench's parameter lists
    at three sizes, parameters in bf16 (14 bytes a parameter: parameter,
    first and second moments read and written, gradient read) and in fp32
    (28 bytes); each step between events, the median of 10, and the kernels
    of one step from the profiler (name, microseconds).  Beside it a
    2 x 1 GiB copy, the same HBM's rate in the same run."""
    if ctx.dry:
        sizes = [(2, 64)]
    else:
        sizes = [(2, 1024), (8, 2048), (8, 4096)]
    w = Writer(os.path.join(ctx.out, "optim.csv"),
               ["test", "dtype", "layers", "hidden", "params", "tensors", "bytes", "step_ms",
                "kernels", "kernel_us_sum", "kernel_us_median"])
    wk = Writer(os.path.join(ctx.out, "optim_kernels.csv"), ["test", "kernel", "us"])
    pm = 256 if ctx.dry else 16384
    t_c = ctx.ms(gemm_fn(ctx, "copy", pm, pm, 0), n=10)
    w.row(test="copy", dtype="bf16", bytes=4 * pm * pm, step_ms=f"{t_c:.4f}")
    for layers, h in sizes:
        for dt, per in (("bf16", 14), ("fp32", 28)):
            if ctx.left() < 20:
                ctx.log(f"optim l{layers}-h{h} {dt}: skipped, budget")
                continue
            test = f"adamw-l{layers}-h{h}-{dt}"
            try:
                dtype = torch.bfloat16 if dt == "bf16" else torch.float32
                ps = [torch.nn.Parameter(torch.randn(s, device=ctx.dev, dtype=dtype) * 0.01)
                      for s in gpt_param_shapes(layers, h)]
                for p in ps:
                    p.grad = torch.randn_like(p) * 1e-3
                opt = torch.optim.AdamW(ps, lr=1e-4, fused=not ctx.dry)
                ms = ctx.ms(opt.step, n=1, reps=10)
                names = []
                if not ctx.dry:
                    from torch.profiler import profile, ProfilerActivity
                    with profile(activities=[ProfilerActivity.CUDA]) as prof:
                        opt.step()
                        torch.cuda.synchronize()
                    tmp = os.path.join(ctx.out, "optim.tmp.json")
                    prof.export_chrome_trace(tmp)
                    with open(tmp) as f:
                        evs = json.load(f).get("traceEvents", [])
                    os.remove(tmp)
                    names = [(e.get("name", ""), float(e.get("dur", 0))) for e in evs
                             if e.get("cat") == "kernel"]
                for nm, us in names:
                    wk.row(test=test, kernel=nm[:120], us=f"{us:.2f}")
                n = sum(p.numel() for p in ps)
                us = [u for _, u in names]
                w.row(test=test, dtype=dt, layers=layers, hidden=h, params=n, tensors=len(ps),
                      bytes=per * n, step_ms=f"{ms:.4f}", kernels=len(us),
                      kernel_us_sum=f"{sum(us):.1f}",
                      kernel_us_median=f"{statistics.median(us):.2f}" if us else "")
                ctx.log(f"optim {test}: {ms:.3f} ms a step, {n} parameters, {len(us)} kernels")
                del ps, opt
            except Exception as err:  # noqa: BLE001 - the next size still runs
                ctx.log(f"optim {test}: {type(err).__name__}: {err}")
            gc.collect()
            if not ctx.dry:
                torch.cuda.empty_cache()
    return w.n


def grouped(ctx):
    """Grouped GEMMs by tokens per expert and experts, beside dense."""
    if ctx.dry:
        shapes = [("small", 64, 32)]
        experts, tpes = [2, 4], [16, 32]
    else:
        # (name, K = model dim, N = expert FFN dim): DeepSeek-V3's and
        # Mixtral 8x7B's expert up-projections (fc1 of one expert).
        shapes = [("dsv3-fc1", 7168, 2048), ("mixtral-fc1", 4096, 14336)]
        experts, tpes = [8, 32, 128], [16, 64, 256, 1024, 4096]
    w = Writer(os.path.join(ctx.out, "grouped.csv"),
               ["shape", "K", "N", "experts", "tokens_per_expert", "op", "ms", "tflops",
                "calls"])
    have = hasattr(torch, "_grouped_mm") and not ctx.dry
    for name, k, n in shapes:
        for e in experts:
            if name.startswith("mixtral") and e > 32:
                continue  # 128 experts of 4096 x 14336 is 15 GB of weights
            wt = torch.randn(e, n, k, device=ctx.dev, dtype=torch.bfloat16)
            for tpe in tpes:
                if ctx.left() < 20:
                    ctx.log("grouped: stopped, budget")
                    return w.n
                t = e * tpe
                flop = 2.0 * t * n * k
                x = torch.randn(t, k, device=ctx.dev, dtype=torch.bfloat16)
                offs = torch.arange(1, e + 1, device=ctx.dev, dtype=torch.int32) * tpe
                xs = x.view(e, tpe, k)
                dense_w = wt[0]
                fns = [("dense", lambda: torch.mm(x, dense_w.t())),
                       ("loop", lambda: [torch.mm(xs[i], wt[i].t()) for i in range(e)])]
                if have:
                    fns.append(("grouped_mm", lambda: torch._grouped_mm(
                        x, wt.transpose(-2, -1), offs=offs, out_dtype=torch.bfloat16)))
                for op, fn in fns:
                    try:
                        per = ctx.calls_for(fn, 20.0)
                        ms = ctx.ms(fn, n=per)
                    except (RuntimeError, TypeError) as err:
                        ctx.log(f"grouped {name} e{e} t{tpe} {op}: {err}")
                        continue
                    w.row(shape=name, K=k, N=n, experts=e, tokens_per_expert=tpe, op=op,
                          ms=f"{ms:.4f}", tflops=f"{flop / ms / 1e9:.1f}", calls=per)
                del x, xs, fns
            del wt
            gc.collect()
            if not ctx.dry:
                torch.cuda.empty_cache()
    ctx.log(f"grouped: {w.n} rows")
    return w.n


def attn_flop(b, hq, sq, dqk, dv, causal, window=0):
    """Forward FLOPs: QK^T and PV over the unmasked (query, key) pairs."""
    if window:
        pairs = sum(min(i + 1, window) for i in range(sq))
    elif causal:
        pairs = sq * (sq + 1) / 2
    else:
        pairs = sq * sq
    return 2.0 * b * hq * pairs * (dqk + dv)


ATTN_FIELDS = ["op", "backend", "pass", "batch", "heads_q", "heads_kv", "seq", "dqk", "dv",
               "causal", "window", "flop", "ms", "tflops"]


def math_sdpa(q, k, v, is_causal=False, enable_gqa=False):
    """SDPA by its definition: the dry run's stand-in on torch < 2.0."""
    if enable_gqa:
        r = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)
    a = (q @ k.transpose(-2, -1)) / q.shape[-1] ** 0.5
    if is_causal:
        s = q.shape[-2]
        a = a.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    return a.softmax(-1) @ v


def fwd_bwd_ms(ctx, fwd, inputs):
    """Milliseconds of an attention call's forward (5 calls a run) and of
    its backward to inputs (3; the graph kept between them)."""
    ms_f = ctx.ms(fwd, n=5)
    o = fwd()
    g = torch.randn_like(o)
    ms_b = ctx.ms(lambda: torch.autograd.grad(o, inputs, g, retain_graph=True), n=3)
    return ms_f, ms_b


def attention(ctx):
    """SDPA by backend, head dim, GQA."""
    sdpa = F.scaled_dot_product_attention
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backends = {"default": None, "flash": SDPBackend.FLASH_ATTENTION,
                    "cudnn": getattr(SDPBackend, "CUDNN_ATTENTION", None),
                    "efficient": SDPBackend.EFFICIENT_ATTENTION}
    except ImportError as err:
        ctx.log(f"attention: default backend only ({err})")
        backends = {"default": None}
    if ctx.dry:
        cases = [(1, 4, 4, 128, 64, 64), (1, 4, 1, 128, 32, 16)]
        backends = {"default": None}
    else:
        # (batch, q heads, kv heads, seq, qk head dim, v head dim): 16384
        # tokens a microbatch; 32 query heads (Llama-3 8B's per GPU at tp 1),
        # GQA 4 and 8; MLA's 192/128 at DeepSeek-V3's 128 heads / tp 8.
        cases = [(4, 32, 32, 4096, 64, 64), (4, 32, 32, 4096, 128, 128),
                 (4, 16, 16, 4096, 192, 192), (4, 16, 16, 4096, 192, 128),
                 (4, 32, 8, 4096, 128, 128), (4, 32, 4, 4096, 128, 128),
                 (2, 32, 8, 8192, 128, 128), (4, 64, 8, 4096, 64, 64)]
    w = Writer(os.path.join(ctx.out, "attention.csv"), ATTN_FIELDS)
    for b, hq, hkv, s, dqk, dv in cases:
        q = torch.randn(b, hq, s, dqk, device=ctx.dev, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(b, hkv, s, dqk, device=ctx.dev, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(b, hkv, s, dv, device=ctx.dev, dtype=torch.bfloat16, requires_grad=True)
        kw = {"is_causal": True}
        if hkv != hq:
            kw["enable_gqa"] = True
        flop = attn_flop(b, hq, s, dqk, dv, True)
        for be, kind in backends.items():
            if ctx.left() < 20:
                ctx.log("attention: stopped, budget")
                return w.n
            if be != "default" and kind is None:
                continue

            def fwd():
                if kind is None:
                    return sdpa(q, k, v, **kw)
                with sdpa_kernel([kind]):
                    return sdpa(q, k, v, **kw)
            try:
                ms_f, ms_b = fwd_bwd_ms(ctx, fwd, (q, k, v))
            except (RuntimeError, TypeError) as err:
                ctx.log(f"attention {be} b{b} h{hq}/{hkv} s{s} d{dqk}/{dv}: "
                        f"{str(err).splitlines()[0][:200]}")
                continue
            for ps, ms, fl in (("fwd", ms_f, flop), ("bwd", ms_b, 2.5 * flop)):
                w.row(op="sdpa", backend=be, **{"pass": ps}, batch=b, heads_q=hq, heads_kv=hkv,
                      seq=s, dqk=dqk, dv=dv, causal=1, window=0, flop=f"{fl:.0f}",
                      ms=f"{ms:.4f}", tflops=f"{fl / ms / 1e9:.1f}")
        del q, k, v
        gc.collect()
    ctx.log(f"attention: {w.n} rows")
    return w.n


def windows(ctx):
    """Sliding windows: FlexAttention's block-sparse kernel, compiled once
    (the window is a tensor the mask reads, so each window reuses it)."""
    if ctx.dry:
        wins, wseq, whq, whd = [32], 128, 4, 32
    else:
        wins, wseq, whq, whd = [128, 1024, 4096], 8192, 32, 128
    w = Writer(os.path.join(ctx.out, "attention.csv"), ATTN_FIELDS, append=True)
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except ImportError as err:
        ctx.log(f"windows: no FlexAttention ({err})")
        return w.n
    if ctx.left() < 60:
        ctx.log("windows: skipped, budget")
        return w.n
    flex = flex_attention if ctx.dry else torch.compile(flex_attention, dynamic=False)
    b = 1 if ctx.dry else 2
    q = torch.randn(b, whq, wseq, whd, device=ctx.dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(b, whq // 4, wseq, whd, device=ctx.dev, dtype=torch.bfloat16,
                    requires_grad=True)
    v = torch.randn(b, whq // 4, wseq, whd, device=ctx.dev, dtype=torch.bfloat16,
                    requires_grad=True)
    width = torch.tensor(wseq, device=ctx.dev)

    def mask(bi, h, qi, ki):
        return (qi >= ki) & (qi - ki < width)
    for win in [0] + wins:
        if ctx.left() < 30:
            ctx.log("windows: stopped, budget")
            break
        width.fill_(win or wseq)
        try:
            bm = create_block_mask(mask, None, None, wseq, wseq, device=str(ctx.dev))

            def fwd(bm=bm):
                return flex(q, k, v, block_mask=bm, enable_gqa=True)
            ms_f, ms_b = fwd_bwd_ms(ctx, fwd, (q, k, v))
        except Exception as err:  # noqa: BLE001 - compile errors vary
            ctx.log(f"windows {win}: {str(err).splitlines()[0][:200]}")
            continue
        flop = attn_flop(b, whq, wseq, whd, whd, True, win)
        for ps, ms, fl in (("fwd", ms_f, flop), ("bwd", ms_b, 2.5 * flop)):
            w.row(op="flex", backend="flex", **{"pass": ps}, batch=b, heads_q=whq,
                  heads_kv=whq // 4, seq=wseq, dqk=whd, dv=whd, causal=1, window=win,
                  flop=f"{fl:.0f}", ms=f"{ms:.4f}", tflops=f"{fl / ms / 1e9:.1f}")
    ctx.log(f"windows: {w.n} rows")
    return w.n


def count_launches(ctx, step):
    """Kernels, launch calls and ATen ops (nested ones too) in one step."""
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([] if ctx.dry else [ProfilerActivity.CUDA])
    with profile(activities=acts) as prof:
        step()
        ctx.sync()
    kernels = launches = aten = 0
    for ev in prof.events():
        name = ev.name
        if not ctx.dry and ev.device_type == torch.autograd.DeviceType.CUDA:
            kernels += 1
        if name.startswith("aten::"):
            aten += 1
        if name in ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                    "cuLaunchKernelEx", "cudaGraphLaunch"):
            launches += 1
    return kernels, launches, aten


def build_gpt(dev, *args):
    """scripts/gpt_bench.py's GPT in bf16, its weights made on dev."""
    from gpt_bench import GPT
    torch.manual_seed(0)
    try:
        with torch.device(dev):
            model = GPT(*args)
    except (AttributeError, TypeError):  # torch < 2.0: no device context
        model = GPT(*args).to(dev)
    return model.to(torch.bfloat16)


def host(ctx):
    """A small GPT step eager vs replayed from a CUDA graph."""
    if ctx.dry:
        cfgs = [(2, 64, 4, 32, 1, 512)]
    else:
        # (layers, hidden, heads, seq, microbatch, vocab): host-bound to
        # GPU-bound.
        cfgs = [(2, 256, 4, 128, 1, 8192), (4, 1024, 8, 512, 1, 32768),
                (4, 2048, 16, 1024, 2, 32768), (8, 4096, 32, 1024, 2, 32768)]
    w = Writer(os.path.join(ctx.out, "host.csv"),
               ["layers", "hidden", "heads", "seq", "mbs", "vocab", "mode", "steps",
                "wall_ms_per_step", "gpu_ms_per_step", "kernels_per_step",
                "launches_per_step", "aten_ops_per_step", "host_us_per_launch"])
    for L, h, nh, s, mb, vocab in cfgs:
        if ctx.left() < 25:
            ctx.log("host: stopped, budget")
            break
        model = build_gpt(ctx.dev, L, h, nh, s, vocab)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4,
                                **({} if ctx.dry else {"fused": True, "capturable": True}))
        idx = torch.randint(0, vocab, (mb, s), device=ctx.dev)
        tgt = torch.randint(0, vocab, (mb, s), device=ctx.dev)

        def step():
            loss = model(idx, tgt)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=False)
        modes = [("eager", step)]
        if not ctx.dry:
            try:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        step()
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    step()
                modes.append(("cuda_graph", graph.replay))
            except RuntimeError as err:
                ctx.log(f"host L{L} h{h}: graph capture failed: {str(err)[:200]}")
        for mode, fn in modes:
            try:
                for _ in range(3):
                    fn()
                ctx.sync()
                kernels, launches, aten = count_launches(ctx, fn)
                n = 3 if ctx.dry else 20
                t = time.perf_counter()
                gpu = ctx.ms(fn, n=n, reps=1)
                wall = (time.perf_counter() - t) * 1e3 / (n + 1)
            except RuntimeError as err:
                ctx.log(f"host L{L} h{h} {mode}: {str(err)[:200]}")
                continue
            w.row(layers=L, hidden=h, heads=nh, seq=s, mbs=mb, vocab=vocab, mode=mode, steps=n,
                  wall_ms_per_step=f"{wall:.4f}", gpu_ms_per_step=f"{gpu:.4f}",
                  kernels_per_step=kernels, launches_per_step=launches, aten_ops_per_step=aten,
                  host_us_per_launch=f"{wall * 1e3 / launches:.2f}" if launches else "")
        del model, opt, modes
        gc.collect()
        if not ctx.dry:
            torch.cuda.empty_cache()
    ctx.log(f"host: {w.n} rows")
    return w.n


# The GPU set's configurations (tests/data/gpu/): layers, hidden, microbatches.
ALLOC_CFGS = [(2, 1024, 1), (4, 2048, 4), (8, 2048, 1), (8, 4096, 1), (16, 2048, 4),
              (16, 4096, 4)]


def alloc_child(a):
    """One process: three training steps of each configuration."""
    dry = a.dry_run
    dev = torch.device("cpu" if dry else "cuda")
    rows = []
    cfgs = [(2, 64, 1)] if dry else ALLOC_CFGS
    seq, mbs, vocab = (32, 1, 512) if dry else (1024, 2, 32768)
    for L, h, m in cfgs:
        model = build_gpt(dev, L, h, max(1, h // 128), seq, vocab)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **({} if dry else {"fused": True}))
        data = torch.randint(0, vocab, (m, mbs, seq + 1), device=dev)
        if not dry:
            torch.cuda.reset_peak_memory_stats()
        for _ in range(3):
            for i in range(m):
                (model(data[i, :, :-1], data[i, :, 1:]) / m).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        r = {"layers": L, "hidden": h, "seq": seq, "mbs": mbs, "microbatches": m,
             "params": sum(p.numel() for p in model.parameters())}
        if not dry:
            torch.cuda.synchronize()
            st = torch.cuda.memory_stats()
            r.update(max_allocated=torch.cuda.max_memory_allocated(),
                     max_reserved=torch.cuda.max_memory_reserved(),
                     segments=st.get("segment.all.peak", 0),
                     alloc_retries=st.get("num_alloc_retries", 0),
                     inactive_split_peak=st.get("inactive_split_bytes.all.peak", 0))
        rows.append(r)
        del model, opt, data
        gc.collect()
        if not dry:
            torch.cuda.empty_cache()
    print("ROWS " + json.dumps(rows), flush=True)


def allocator(ctx):
    w = Writer(os.path.join(ctx.out, "allocator.csv"),
               ["alloc_conf", "layers", "hidden", "seq", "mbs", "microbatches", "params",
                "max_allocated", "max_reserved", "reserved_over_allocated", "segments",
                "alloc_retries", "inactive_split_peak"])
    for conf in ["", "expandable_segments:True"]:
        if ctx.left() < 40:
            ctx.log("allocator: stopped, budget")
            break
        env = dict(os.environ)
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        if conf:
            env["PYTORCH_CUDA_ALLOC_CONF"] = conf
        cmd = [sys.executable, os.path.abspath(__file__), "--alloc-child", "--out", ctx.out]
        if ctx.dry:
            cmd.append("--dry-run")
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                               timeout=max(30, ctx.left() - 10))
        except subprocess.TimeoutExpired:
            ctx.log(f"allocator {conf or 'default'}: timed out")
            continue
        line = [x for x in p.stdout.splitlines() if x.startswith("ROWS ")]
        if p.returncode or not line:
            ctx.log(f"allocator {conf or 'default'}: rc {p.returncode}: {p.stderr[-400:]}")
            continue
        for r in json.loads(line[-1][5:]):
            ratio = r["max_reserved"] / r["max_allocated"] if r.get("max_allocated") else ""
            w.row(alloc_conf=conf or "default", reserved_over_allocated=ratio and f"{ratio:.4f}",
                  **r)
    ctx.log(f"allocator: {w.n} rows")
    return w.n


def manifest(ctx, extra):
    m = {"recorded": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
         "torch": torch.__version__, "cuda": torch.version.cuda, "dry_run": ctx.dry,
         "python": sys.version.split()[0], "budget_s": ctx.budget}
    if not ctx.dry:
        p = torch.cuda.get_device_properties(0)
        m.update(gpu=p.name, sms=p.multi_processor_count, memory_bytes=p.total_memory,
                 capability=f"{p.major}.{p.minor}", cudnn=torch.backends.cudnn.version())
        try:
            q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,vbios_version,"
                                "power.limit,power.default_limit,clocks.max.sm,clocks.max.mem,"
                                "clocks.applications.graphics,persistence_mode,compute_mode",
                                "--format=csv"], capture_output=True, text=True, timeout=20)
            m["nvidia_smi"] = q.stdout.strip()
            q = subprocess.run(["nvidia-smi", "-q", "-d", "POWER,CLOCK,PERFORMANCE"],
                               capture_output=True, text=True, timeout=20)
            m["nvidia_smi_q"] = q.stdout.strip().splitlines()
        except (OSError, subprocess.TimeoutExpired) as err:
            m["nvidia_smi"] = f"failed: {err}"
    m.update(extra)
    with open(os.path.join(ctx.out, "manifest.json"), "w") as f:
        json.dump(m, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--out", required=True, help="folder for the CSVs (created)")
    ap.add_argument("--dry-run", action="store_true", help="tiny sizes on the CPU, no CUDA")
    ap.add_argument("--budget", type=float, default=400, help="seconds of work at most")
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    ap.add_argument("--no-clocks", action="store_true",
                    help="no NVML sampler thread or nvidia-smi beside the work (host timing)")
    ap.add_argument("--alloc-child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.dry_run and not hasattr(F, "scaled_dot_product_attention"):
        F.scaled_dot_product_attention = math_sdpa
    if a.alloc_child:
        return alloc_child(a)
    if not a.dry_run and not torch.cuda.is_available():
        sys.exit("gpu_probe.py: no CUDA device (use --dry-run to test the flow on the CPU)")
    only = a.only.split(",")
    bad = [s for s in only if s not in SECTIONS]
    if bad:
        sys.exit(f"gpu_probe.py: --only: unknown section {bad[0]!r} (sections: "
                 f"{', '.join(SECTIONS)})")
    ctx = Ctx(a)
    done = {}
    clocks = ClockLog(ctx, os.path.join(a.out, "clocks.csv"), a.no_clocks)
    manifest(ctx, {"power": clocks.info, "sections": {}})
    with clocks:
        for name in SECTIONS:
            if name not in only:
                continue
            t = time.monotonic()
            try:
                rows = globals()[name](ctx)
                done[name] = {"rows": rows, "seconds": round(time.monotonic() - t, 1)}
            except Exception:  # noqa: BLE001 - keep the other sections
                ctx.log(f"{name}: failed\n{traceback.format_exc()}")
                done[name] = {"failed": True, "seconds": round(time.monotonic() - t, 1)}
            manifest(ctx, {"power": clocks.info, "sections": done})
    ctx.log(f"done: {json.dumps(done)}")


if __name__ == "__main__":
    main()
