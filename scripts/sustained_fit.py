#!/usr/bin/env python3
"""Hopper's stream clocks (configs/hw/h100-dgx.cfg, `gpu.stream`), grounded
in our H100 sweep's long against short kernels (docs/MODEL.md, "Sustained
rates"; docs/VALIDATION.md).

The sweep (tests/data/gpu/kernels.csv, scripts/kernel_sweep.py) times each
GEMM shape as a steady stream of one kernel: a few calls to size the run,
then four CUDA-graph replays of `calls` back-to-back calls (about 5 ms
each), the first discarded.  Each row's measured rate is taken relative to
the kernel model's burst time for its shape (rho = model / measured: shapes
and tiles divided out), over rows where the model's shape terms are a
small share (M and N 1024 or more, K 4096 or more, 80 us or more).  Short
kernels (80-200 us) run at the rate of the public burst rows the profile
is fitted on (rho about 1); kernels of 1 ms and more (hw.h's
HW_SETTLED_KERNEL_S) run slower, whatever their window.  The stream factor
of a dtype is the geometric mean of rho over its long kernels over that of
its short ones: the clock's effect on one card, whatever the profile's
burst rates are fitted on.  The model's burst times come from prism
itself, run with the profile's sustained and stream factors removed (a
copy under $PRISM_CONFIG_DIR).

Then the training steps (the h4096 runs of tests/data/gpu, GPU busy 98 %
of the step): their GEMMs' rho, time-weighted (`prism calibrate --gemms`
at the burst clock), against the share of the step their compute kernels
(GEMMs and attention) fill, phi, and the work-mix relation
1 - (1 - stream) x phi: a step that interleaves memory-bound kernels draws
less power than a stream of GEMMs and settles higher (gpu.sustained is
the most GEMM-heavy step's).

Since issue 39 the profiles' fp8 stream clock is not this script's ratio
(about 0.950) but our H100's settled 25 s stream (tests/data/gpu/probe-h100,
scripts/gpu_probe.py and probe_kernels.py): the sweep's windows of ~5 ms
are too short to settle by the probe's timeline.  Since session 26 (issue
33 item 2) that stream is taken against the card's true burst, 0.851 (its
last 5 s over probe-h100-mixed's first chunk, `--power` below prints both;
0.879 before, against the stream's own first 100 ms, already slowed), and
the sweep's fp8 GEMM rows are timed at their replays' clock (kbench.c,
sweep_clock), so their rho below is against the burst model whatever
their length.  Since session 27 (issue 33 item 1) bf16's too: its stream is
the probe's settled 8192^3 stream against the same kernel's true burst,
1.3890 / 1.6230 ms = 0.856 (the balance's, 1 - (941.8 - 700) / 1684.9 =
0.8565; `--power` prints it), its sweep rows are timed by the same rule,
and the ratio below (0.872 before GH100's bf16 GEMMs took their device
fixed cost, 0.887 since) is no longer the profile's: it takes the sweep's
80-200 us kernels as bursts, which by their replays' busy time ran at
~0.95 of the burst clock (the 8192^3 row: 0.956 against the probe's
burst).

Also prints rho by the kernel's length (the decline the rule is read
from) and by the window (calls x time, which does not order it).

`--power [DIR]` (no prism needed): the power balance that sets a step's
clock, fitted on the probe's duty cycles (DIR, default
tests/data/gpu/probe-h200-duty: a GEMM then a copy or a spin, back to back,
NVML's clock and power), each case predicted left one out, and H100's
terms derived from its own probe rows (probe-h100) and checked on
probe-h100-mixed: the profiles' `gpu.power` (docs/MODEL.md, "Sustained
rates"; docs/VALIDATION.md, "A step's clock from its power").

usage: scripts/sustained_fit.py [PRISM]   (default build/prism)
       scripts/sustained_fit.py --power [DIR]
"""
import csv
import glob
import gzip
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..")
prism = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "--power" else \
    os.path.join(root, "build", "prism")
sweep = os.path.join(root, "tests", "data", "gpu", "kernels.csv")
SETTLED_S = 1e-3  # hw.h: HW_SETTLED_KERNEL_S


# ---------------------------------------------------------------------------
# --power: the power balance behind a step's clock (docs/MODEL.md, "Sustained
# rates"; docs/VALIDATION.md, "A step's clock from its power").  Needs no
# prism: the probe's duty section alone (scripts/gpu_probe.py `duty`).

def _mean(x):
    return sum(x) / len(x)


def _solve(a, b):
    """x of the square system a x = b (Gauss-Jordan, partial pivoting);
    None where a is singular."""
    n = len(a)
    m = [list(a[i]) + [b[i]] for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-9:
            return None
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[i][n] / m[i][i] for i in range(n)]


def _lstsq(rows, ys):
    """Least squares by the normal equations; None where rank-deficient."""
    n = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    b = [sum(r[i] * y for r, y in zip(rows, ys)) for i in range(n)]
    return _solve(a, b)


def duty_cases(d, last_s=5.0):
    """Each case of a duty recording (duty.csv, clocks.csv under d): its
    dtype, filler, GEMM and filler ms (pair-weighted), the GEMM's share,
    NVML's SM clock and power, over its last last_s seconds."""
    rows = list(csv.DictReader(open(os.path.join(d, "duty.csv"))))
    clk = [c for c in csv.DictReader(open(os.path.join(d, "clocks.csv")))
           if c["source"] == "nvml"]
    by = {}
    for r in rows:
        by.setdefault(r["test"], []).append(r)
    out = []
    for test, rs in by.items():
        end = float(rs[-1]["end_mono_s"])
        sel = [r for r in rs if float(r["start_mono_s"]) >= end - last_s]
        pairs = sum(int(r["pairs"]) for r in sel)
        g = sum(int(r["pairs"]) * float(r["gemm_ms"]) for r in sel) / pairs
        f = sum(int(r["pairs"]) * float(r["fill_ms"]) for r in sel) / pairs
        t0 = float(sel[0]["start_mono_s"])
        cs = [c for c in clk if t0 <= float(c["mono_s"]) <= end]
        out.append(dict(test=test, dt=rs[0]["dtype"], fill=rs[0]["filler"], g=g, f=f,
                        share=g / (g + f), mhz=_mean([float(c["sm_mhz"]) for c in cs]),
                        w=_mean([float(c["power_w"]) for c in cs])))
    return out


def power_fit(cases, fmax):
    """The terms from cases: the burst per dtype (its fastest GEMM at fmax,
    under the limit), each case's GEMM rate against it; least squares over
    every case's NVML power, phi P_gemm,d(r) + (1 - phi) P_fill = W, with
    P_gemm,d(r) = P_d - k_d (1 - r) linear in the GEMM's rate r (unknowns
    P_wait, P_copy, P_d, k_d per dtype); the rate's knee per dtype (r =
    min(1, f / knee), least squares over its capped cases); the limit as
    NVML reads it (the mean power of the cases held below fmax).  None where
    the cases do not determine them."""
    dts = sorted({c["dt"] for c in cases})
    fit = {}
    for d in dts:
        free = [c["g"] for c in cases if c["dt"] == d and c["mhz"] >= fmax - 1]
        if not free:
            return None
        fit["burst_" + d] = min(free)
    cols = ["wait", "copy"] + [f"P_{d}" for d in dts] + [f"k_{d}" for d in dts]
    rows, ys = [], []
    for c in cases:
        r = [0.0] * len(cols)
        rate = fit["burst_" + c["dt"]] / c["g"]
        r[cols.index("wait" if c["fill"] == "spin" else "copy")] = 1 - c["share"]
        r[cols.index("P_" + c["dt"])] = c["share"]
        r[cols.index("k_" + c["dt"])] = -c["share"] * (1 - rate)
        rows.append(r)
        ys.append(c["w"])
    x = _lstsq(rows, ys)
    if x is None:
        return None
    fit.update(zip(cols, x))
    capped = [c for c in cases if c["mhz"] < fmax - 1]
    fit["cap"] = _mean([c["w"] for c in capped])
    for d in dts:
        pts = [(c["mhz"], fit["burst_" + d] / c["g"]) for c in capped if c["dt"] == d]
        if not pts:
            return None
        fit["knee_" + d] = min(range(1000, fmax + 1), key=lambda k: sum(
            (min(1, f / k) - r) ** 2 for f, r in pts))
    return fit


def power_rate(fit, d, share_burst, p_fill, cap):
    """The GEMM rate r (of the burst) by the balance for a GEMM of dtype d
    whose burst time fills share_burst of a pair whose filler draws p_fill:
    the largest r <= 1 whose power phi(r) P_gemm(r) + (1 - phi(r)) p_fill is
    within cap, phi(r) the GEMM's share once it runs at r.  Closed form (the
    model's, hw.h): with g = share_burst / (1 - share_burst) the GEMM's
    burst time over the filler's, r = g (P - k - cap) / (cap - p_fill - g k)."""
    P, k = fit["P_" + d], fit["k_" + d]
    if share_burst * P + (1 - share_burst) * p_fill <= cap:
        return 1.0
    if share_burst >= 1:
        return 1 - (P - cap) / k
    g = share_burst / (1 - share_burst)
    return g * (P - k - cap) / (cap - p_fill - g * k)


def power_predict(fit, c, fmax):
    """The GEMM rate and SM clock c settles at by the balance (power_rate),
    from its GEMM's burst time and its filler's measured time; the clock
    rate x knee, fmax where the rate is 1."""
    d = c["dt"]
    tb = fit["burst_" + d]
    r = power_rate(fit, d, tb / (tb + c["f"]), fit["wait" if c["fill"] == "spin" else "copy"],
                   fit["cap"])
    return (fmax if r >= 1 else min(fmax, r * fit["knee_" + d])), r


def _last(rows, col, last_s=5.0):
    end = float(rows[-1]["end_mono_s"])
    return _mean([float(r[col]) for r in rows if float(r["start_mono_s"]) >= end - last_s])


def power_profile(fit, limit, dts):
    """The profile's `gpu.power` lines: every term x limit / the limit as read."""
    x = limit / fit["cap"]
    g = " ".join(f"{d} = {{ w = {fit['P_' + d] * x:.1f}; k_w = {fit['k_' + d] * x:.1f}; }};"
                 for d in dts)
    print(f"- as a profile states it (x {x:.4f}): `power = {{ gemm = {{ {g} }}; "
          f"memory_w = {fit['copy'] * x:.1f}; wait_w = {fit['wait'] * x:.1f}; }};`")


def power_derived(h200, d100, mixed):
    """H100's terms from its own probe rows where they suffice (probe-h100:
    each dtype's stream, first chunk and settled, and the copy stream;
    the rate's slope k is the H200's, the same GH100 die), checked on
    probe-h100-mixed's GEMM + copy pairs, which fit nothing."""
    man = json.load(open(os.path.join(d100, "manifest.json")))
    limit = float(man["nvidia_smi"].split("\n")[1].split(", ")[2].split()[0])
    rows = list(csv.DictReader(open(os.path.join(d100, "sustained.csv"))))
    clk = list(csv.DictReader(open(os.path.join(d100, "clocks.csv"))))
    by = {}
    for r in rows:
        by.setdefault(r["test"], []).append(r)
    fit = {"wait": h200["wait"]}
    print()
    mrows = list(csv.DictReader(open(os.path.join(mixed, "mixed.csv"))))
    print(f"**{man['gpu']}** (`{os.path.relpath(d100, root)}`), derived: the burst the faster "
          f"first ~100 ms of the GEMM at 1,980 MHz (its stream's, or {os.path.basename(mixed)}'s "
          "first chunk: fp8's stream had already slowed in its first chunk, as the H200's had), "
          "the settled rate r_s the stream's last 5 s at the limit, so P = W + k (1 - r_s) with "
          "k the H200's (the same die); P_copy the copy stream alone at 1,980 MHz; P_wait the "
          "H200's (not measured here):")
    print()
    caps = []
    for dt in ("bf16", "fp8"):
        rs = by[f"{dt}-8192x8192x8192"]
        end = float(rs[-1]["end_mono_s"])
        w = _mean([float(c["power_w"]) for c in clk if end - 5 <= float(c["mono_s"]) <= end])
        caps.append(w)
        first = [float(r["gemm_ms"]) for r in mrows if r["dtype"] == dt and r["chunk"] == "0"]
        fit["burst_" + dt] = min([float(rs[0]["ms_per_call"])] + first)
        r_s = fit["burst_" + dt] / _last(rs, "ms_per_call")
        fit["k_" + dt] = h200["k_" + dt]
        fit["P_" + dt] = w + fit["k_" + dt] * (1 - r_s)
        print(f"- {dt}: burst {fit['burst_' + dt]:.4f} ms, settled r_s {r_s:.3f} at {w:.0f} W; "
              f"P_gemm(r) = {fit['P_' + dt]:.0f} - {fit['k_' + dt]:.0f} (1 - r) W")
    rs = by["copy-32768x32768x0"]
    end = float(rs[-1]["end_mono_s"])
    fit["copy"] = _mean([float(c["power_w"]) for c in clk if end - 5 <= float(c["mono_s"]) <= end])
    fit["cap"] = _mean(caps)
    print(f"- P_copy {fit['copy']:.0f} W, P_wait {fit['wait']:.0f} W; the limit as read "
          f"{fit['cap']:.0f} W")
    power_profile(fit, limit, ("bf16", "fp8"))
    print()
    print("| check (fits nothing) | GEMM share at burst | GEMM rate | predicted | error |")
    print("|---|---:|---:|---:|---:|")
    by = {}
    for r in mrows:
        by.setdefault(r["test"], []).append(r)
    for test, rs in by.items():
        dt = rs[0]["dtype"]
        tb = fit["burst_" + dt]
        share = tb / (tb + _last(rs, "copy_ms"))
        r = tb / _last(rs, "gemm_ms")
        rp = power_rate(fit, dt, share, fit["copy"], fit["cap"])
        print(f"| {os.path.basename(mixed)} {test} | {share:.3f} | {r:.3f} | {rp:.3f} | "
              f"{100 * (rp / r - 1):+.1f} % |")


def power_main(d):
    man = json.load(open(os.path.join(d, "manifest.json")))
    smi = man["nvidia_smi"].split("\n")[1].split(", ")
    limit, fmax = float(smi[2].split()[0]), int(smi[4].split()[0])
    cases = duty_cases(d)
    fit = power_fit(cases, fmax)
    rel = os.path.relpath(d, root)
    print(f"**{man['gpu']}** (`{rel}`: a GEMM 8192^3 then a filler, back to back 8 s a case; "
          f"the last 5 s; {limit:.0f} W limit, {fmax} MHz max; NVML every 100 ms)")
    print()
    dts = sorted({c["dt"] for c in cases})
    print("Fitted on all cases: burst = the fastest GEMM at the maximum clock (under the limit); "
          "the GEMM's rate r against the SM clock f, r = min(1, f / knee) (not proportional to "
          "the clock: flat above the knee); power (W, as NVML reads it) "
          "phi P_gemm(r) + (1 - phi) P_fill, phi the GEMM's share at the settled clock, "
          "P_gemm linear in the rate (least squares over every case):")
    print()
    for dt in dts:
        pts = [(c["mhz"], fit["burst_" + dt] / c["g"]) for c in cases
               if c["dt"] == dt and c["mhz"] < fmax - 1]
        rms = math.sqrt(_mean([(min(1, f / fit["knee_" + dt]) - r) ** 2 for f, r in pts]))
        print(f"- {dt}: burst {fit['burst_' + dt]:.4f} ms; knee {fit['knee_' + dt]} MHz (rate "
              f"rms {100 * rms:.1f} %, {len(pts)} capped cases); P_gemm(r) = "
              f"{fit['P_' + dt]:.0f} - {fit['k_' + dt]:.0f} (1 - r) W")
    print(f"- P_copy {fit['copy']:.0f} W (a copy stream alone, probe-h200: 620 W at {fmax} MHz), "
          f"P_wait {fit['wait']:.0f} W (a resident spin: a collective waiting, idle)")
    old = os.path.join(os.path.dirname(d), "probe-h200", "sustained.csv")
    if os.path.exists(old):
        for dt in dts:
            rs = [r for r in csv.DictReader(open(old)) if r["test"] == f"{dt}-8192x8192x8192"]
            if rs:
                t = float(rs[0]["ms_per_call"])
                print(f"- {dt}: the older probe's first 100 ms of a stream (probe-h200, "
                      f"sustained.csv) {t:.4f} ms, {fit['burst_' + dt] / t:.3f} of this burst: "
                      f"already throttled")
    print(f"- the limit as NVML reads it, the capped cases' mean: {fit['cap']:.0f} W "
          f"({fit['cap'] / limit:.3f} of {limit:.0f})")
    power_profile(fit, limit, dts)
    print()
    print("Each case predicted with every term refitted without it (leave-one-out), from its "
          "GEMM's burst time and its filler's time (the share at the settled clock follows):")
    print()
    print("| case | GEMM share | SM MHz | predicted | GEMM rate | predicted | error | W |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    errs = []
    for i, c in enumerate(cases):
        loo = power_fit(cases[:i] + cases[i + 1:], fmax)
        r = fit["burst_" + c["dt"]] / c["g"]
        if loo is None:
            print(f"| {c['test']} | {c['share']:.3f} | {c['mhz']:.0f} | - | {r:.3f} | - | "
                  f"(defines a term) | {c['w']:.0f} |")
            continue
        f, rp = power_predict(loo, c, fmax)
        # the rate against the full fit's burst: the case's own GEMM time
        rp = loo["burst_" + c["dt"]] / fit["burst_" + c["dt"]] * rp
        errs.append(rp / r - 1)
        print(f"| {c['test']} | {c['share']:.3f} | {c['mhz']:.0f} | {f:.0f} | {r:.3f} | "
              f"{rp:.3f} | {100 * (rp / r - 1):+.1f} % | {c['w']:.0f} |")
    print()
    print(f"Leave-one-out GEMM rate: mean |error| {100 * _mean([abs(e) for e in errs]):.1f} %, "
          f"worst {100 * max(abs(e) for e in errs):.1f} % ({len(errs)} cases).")
    gpu = os.path.dirname(d)
    power_derived(fit, os.path.join(gpu, "probe-h100"), os.path.join(gpu, "probe-h100-mixed"))


if "--power" in sys.argv[1:]:
    i = sys.argv.index("--power")
    power_main(sys.argv[i + 1] if len(sys.argv) > i + 1 else
               os.path.join(root, "tests", "data", "gpu", "probe-h200-duty"))
    sys.exit(0)

tmp = tempfile.mkdtemp()
try:
    os.makedirs(os.path.join(tmp, "hw"))
    prof = open(os.path.join(root, "configs", "hw", "h100-dgx.cfg")).read()
    prof = re.sub(r"\n\s*sustained\s*=[^;]*;", "\n  sustained = 1.0;", prof)
    prof = re.sub(r"\n\s*stream\s*=\s*\{[^}]*\}\s*;", "", prof)
    # and the power balance, whose stream clock an unstated stream reads
    # (hw_stream): the burst model alone
    m = re.search(r"\n\s*power\s*=\s*\{", prof)
    if m:
        depth, i = 0, m.end() - 1
        while True:
            depth += {"{": 1, "}": -1}.get(prof[i], 0)
            i += 1
            if depth == 0:
                break
        prof = prof[:m.start()] + prof[prof.index(";", i) + 1:]
    open(os.path.join(tmp, "hw", "h100-dgx.cfg"), "w").write(prof)
    env = dict(os.environ, PRISM_CONFIG_DIR=tmp)
    out = subprocess.run([prism, "kernels", "--rows", sweep], capture_output=True, text=True,
                         env=env, check=True).stdout
    steps = {}
    for tr in sorted(glob.glob(os.path.join(root, "tests", "data", "gpu", "*-h4096-*"))):
        f = glob.glob(os.path.join(tr, "*.json.gz"))[0]
        cal = subprocess.run([prism, "calibrate", "--gemms", "--json", f], capture_output=True,
                             text=True, env=env, check=True).stdout
        steps[os.path.basename(tr)] = (f, json.loads(cal)["kernel_model"]["shapes"])
finally:
    shutil.rmtree(tmp)

calls = {}
for r in csv.DictReader(open(sweep)):
    if r["class"] == "gemm":
        calls[(r["dtype"], int(r["M"]), int(r["N"]), int(r["K"]))] = int(r["calls"])


def gmean(x):
    return math.exp(sum(math.log(v) for v in x) / len(x)) if x else float("nan")


rows = []
for r in csv.DictReader(out.split("\n\n")[0].splitlines()):
    if r["class"] != "gemm":
        continue
    b, m, n, k = (int(float(x)) for x in r["shape"].split("|")[0].split("x"))
    t = float(r["measured_us"]) * 1e-6
    if min(m, n) < 1024 or k < 4096 or t < 80e-6:
        continue
    rows.append(dict(dt=r["dtype"], t=t, win=calls[(r["dtype"], m, n, k)] * t,
                     rho=float(r["predicted_us"]) * 1e-6 / t))

print("rho = model (burst) / measured, by the kernel's length:")
bins = [(80e-6, 200e-6), (200e-6, 500e-6), (500e-6, 1e-3), (1e-3, 2.5e-3), (2.5e-3, 1)]
for dt in ("bf16", "fp8"):
    cells = []
    for lo, hi in bins:
        v = [r["rho"] for r in rows if r["dt"] == dt and lo <= r["t"] < hi]
        cells.append(f"{lo * 1e6:.0f}-{hi * 1e6:.0f} us: {len(v)} {gmean(v):.3f}")
    print(f"  {dt:5} " + " | ".join(cells))
print("and by the window (calls x time): in windows under 5 ms, short against long kernels;")
print("long kernels in windows under 5 ms against 5 ms or more:")
for dt in ("bf16", "fp8"):
    a = [r["rho"] for r in rows if r["dt"] == dt and r["t"] < 200e-6 and r["win"] < 5e-3]
    b = [r["rho"] for r in rows if r["dt"] == dt and r["t"] >= SETTLED_S and r["win"] < 5e-3]
    c = [r["rho"] for r in rows if r["dt"] == dt and r["t"] >= SETTLED_S and r["win"] >= 5e-3]
    print(f"  {dt:5} under 5 ms: 80-200 us {len(a)} {gmean(a):.3f}, 1 ms and more {len(b)} "
          f"{gmean(b):.3f} | 5 ms or more: 1 ms and more {len(c)} {gmean(c):.3f}")
print("stream factor = rho(1 ms and more) / rho(80-200 us):")
for dt in ("bf16", "fp8"):
    long_ = [r["rho"] for r in rows if r["dt"] == dt and r["t"] >= SETTLED_S]
    short = [r["rho"] for r in rows if r["dt"] == dt and r["t"] < 200e-6]
    print(f"  {dt:5} {len(long_):3} long {gmean(long_):.3f}  {len(short):3} short "
          f"{gmean(short):.3f}  stream {gmean(long_) / gmean(short):.3f}")

bf16_stream = gmean([r["rho"] for r in rows if r["dt"] == "bf16" and r["t"] >= SETTLED_S]) / \
    gmean([r["rho"] for r in rows if r["dt"] == "bf16" and r["t"] < 200e-6])
print("training steps (bf16): phi = GEMMs and attention / step; rho of their GEMMs;")
print("1 - (1 - stream) x phi with the bf16 stream factor above:")
COMPUTE = ("nvjet", "gemm", "cutlass", "xmma", "sm90_", "flash", "fmha", "cudnn")
for tag, (f, shapes) in steps.items():
    ev = [e for e in json.load(gzip.open(f))["traceEvents"] if e.get("cat") == "kernel"]
    span = max(e["ts"] + e["dur"] for e in ev) - min(e["ts"] for e in ev)
    busy = sum(e["dur"] for e in ev) / span
    phi = sum(e["dur"] for e in ev if any(c in e["name"].lower() for c in COMPUTE)) / span
    rho = sum(x["kernels"] * x["model_s"] for x in shapes) / \
        sum(x["kernels"] * x["measured_s"] for x in shapes)
    print(f"  {tag:32} busy {busy:.2f}  phi {phi:.2f}  rho {rho:.3f}  "
          f"relation {1 - (1 - bf16_stream) * phi:.3f}")
