#!/usr/bin/env python3
"""Model vs measured for scripts/gpu_probe.py's kernel recordings (issue 39).

Reads a probe folder's sustained.csv, clocks.csv, grouped.csv and
attention.csv (tests/data/gpu/probe-h100, probe-h200), writes their rows in
../shared/kernels' schemas (gemm.csv's, attention.csv's) to a temporary
folder, has `prism kernels --rows` predict each with the hardware profile
of the recording's GPU, and prints Markdown tables:

  sustained  each GEMM stream's first ~100 ms and its last 10 s (TFLOP/s,
             SM clock, power) against the kernel model at the burst clock
             and at its dtype's stream clock (gpu.stream), and what the
             memory-bound stream (a copy) did to the clock;
  grouped    torch._grouped_mm, a loop of torch.mm an expert, and one dense
             GEMM of the same FLOPs, against prism's grouped GEMM (Transformer
             Engine's multi-stream form, kperf_grouped_s), its single GEMMs
             one after another, and its dense GEMM;
  mixed      a GEMM then a copy at a 73 % compute share for 25 s
             (tests/data/gpu/probe-h100-mixed): the GEMM's settled rate
             over its first chunk's against the step clock prism gives,
             1 - (1 - stream) x phi (hw.h), from the profile's gpu.stream;
  attention  SDPA by backend, head dim (64, 128, 192, MLA's 192/128), GQA,
             and FlexAttention's sliding windows, against kperf's attention;
  optim      PyTorch's fused AdamW (the optimizer's multi-tensor-apply
             kernels) over gpt_bench's parameter lists, bf16 and fp32, from
             the folders with an optim.csv (default: every
             tests/data/gpu/probe-*): its bandwidth against the profile's
             multi-tensor line, kernels x the elementwise floor + bytes /
             (HBM x multi_tensor_eff, or multi_tensor_fp32_eff over fp32),
             and each dtype's least-squares efficiency on the rows.

Each measured row states its calls in its notes ("N back-to-back calls
after W warmup"), so prism times it at the clock its busy time implies (hw.h,
HW_SUSTAINED_AFTER_S), as it does the public rows.

Usage: probe_kernels.py PRISM [PROBE_DIR...] [--only sustained,grouped,attention,mixed,optim]
       probe_kernels.py PRISM [PROBE_DIR...] --write DIR

--write DIR writes the converted rows to DIR/gemm.csv and DIR/attention.csv
and prints their paths instead of the tables (the grouped section's loop
of torch.mm left out: host-bound), each row's source its
recording's section ("scripts/gpu_probe.py probe-h200:grouped") and its key in
its notes; `prism kernels --loso ../shared/kernels DIR` then predicts them
beside the public rows, a section left out at a time.
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_compare import read_csv  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = [os.path.join(ROOT, "tests/data/gpu/probe-h100"),
        os.path.join(ROOT, "tests/data/gpu/probe-h200")]
GEMM_FIELDS = ["gpu", "gpu_detail", "dtype", "out_dtype", "op", "batch", "M", "N", "K",
               "implementation", "tflops", "time_ms", "metric2", "value2", "units2", "source",
               "section", "notes"]
ATTN_FIELDS = ["gpu", "kernel", "dtype", "pass", "causal", "batch", "seqlen_q", "seqlen_kv",
               "num_q_heads", "num_kv_heads", "head_dim_qk", "head_dim_v", "tflops", "time_ms",
               "flop_convention", "source", "section", "notes"]
KERNEL = {"default": "PyTorch SDPA default", "flash": "PyTorch SDPA flash (FA2)",
          "cudnn": "PyTorch SDPA cuDNN", "flex": "FlexAttention (Triton)"}


def gpu_of(d):
    import json
    with open(os.path.join(d, "manifest.json")) as f:
        name = json.load(f)["gpu"]
    return "H200" if "H200" in name else "H100 SXM" if "H100" in name else name


def read(d, name):
    """A recording's CSV as rows ([] where it has none)."""
    return read_csv(d, name) or []


def calls(n, warm):
    return f"{int(n)} back-to-back calls after {int(warm)} warmup"


def sustained_rows(d, gpu, tag):
    """Per stream: the first chunk and the last 10 s as gemm.csv rows."""
    out, info = [], []
    rows = read(d, "sustained.csv")
    clk = [c for c in read(d, "clocks.csv") if c["source"] == "nvml"]
    for test in dict.fromkeys(r["test"] for r in rows):
        rs = [r for r in rows if r["test"] == test]
        t0, t1 = float(rs[0]["start_mono_s"]), float(rs[-1]["end_mono_s"])

        def clock(a, b, field):
            x = [float(c[field]) for c in clk if a <= float(c["mono_s"]) <= b]
            return statistics.median(x) if x else float("nan")
        last = [r for r in rs if float(r["start_mono_s"]) >= t1 - 10]
        before = sum(int(r["calls"]) for r in rs if float(r["start_mono_s"]) < t1 - 10)
        first = rs[0]
        m, n, k = (int(rs[0][x]) for x in "MNK")
        work = 2.0 * m * n * k if k else 4.0 * m * n  # a copy: bytes read and written

        def rate(r, work=work):  # TFLOP/s (a copy: TB/s) from the row's unrounded time
            return work / float(r["ms_per_call"]) / 1e9
        below = [float(c["mono_s"]) - t0 for c in clk
                 if t0 < float(c["mono_s"]) <= t1 and float(c["sm_mhz"]) < 1900]
        i = dict(test=test, dtype=rs[0]["dtype"], secs=t1 - t0,
                 held=f"{below[0] * 1e3:.0f}" if below else "never",
                 first=rate(first), last=statistics.median(rate(r) for r in last),
                 clk0=clock(t0, float(first["end_mono_s"]), "sm_mhz"),
                 clk1=clock(t1 - 10, t1, "sm_mhz"), pw1=clock(t1 - 10, t1, "power_w"),
                 reasons=sorted({c["reasons"] for c in clk if t1 - 10 <= float(c["mono_s"]) <= t1}))
        info.append(i)
        if rs[0]["dtype"] == "copy":
            continue
        ms_last = statistics.median(float(r["ms_per_call"]) for r in last)
        for key, ms, note in (
                ("first", float(first["ms_per_call"]), ""),  # at the burst clock
                ("last", ms_last, calls(sum(int(r["calls"]) for r in last), before))):
            out.append(dict(gpu=gpu, dtype="bf16" if i["dtype"] == "bf16" else "fp8 e4m3",
                            op="linear", batch=1, M=m, N=n, K=k, time_ms=f"{ms:.6f}",
                            implementation="torch.mm" if i["dtype"] == "bf16"
                            else "torch._scaled_mm", source=f"{tag}:sustained:{test}:{key}",
                            notes=note))
    return out, info


def grouped_rows(d, gpu, tag):
    out = []
    for r in read(d, "grouped.csv"):
        e, t, ms, per = (int(r["experts"]), int(r["tokens_per_expert"]), float(r["ms"]),
                         int(r["calls"]))
        key = f"{tag}:grouped:{r['shape']}:{e}:{t}:{r['op']}"
        base = dict(gpu=gpu, dtype="bf16", op="linear", N=r["N"], K=r["K"],
                    notes=calls(per, per + 2), source=key)
        if r["op"] == "dense":
            out.append(dict(base, batch=1, M=e * t, time_ms=f"{ms:.6f}", implementation="torch.mm"))
        elif r["op"] == "loop":  # one expert's GEMM: the loop's time / experts
            out.append(dict(base, batch=1, M=t, time_ms=f"{ms / e:.6f}",
                            implementation="torch.mm"))
        else:  # prism's grouped GEMM model (general_grouped_gemm: TE's form)
            out.append(dict(base, batch=e, M=t, time_ms=f"{ms:.6f}",
                            implementation="torch._grouped_mm (as general_grouped_gemm)"))
    return out


def attention_rows(d, gpu, tag):
    out = []
    for r in read(d, "attention.csv"):
        if r["backend"] not in KERNEL:
            continue  # memory-efficient: not FlashAttention-style, not modelled
        win = int(r["window"])
        n = 5 if r["pass"] == "fwd" else 3
        note = calls(n, n + 1) + (f"; sliding window {win}" if win else "")
        out.append(dict(gpu=gpu, kernel=KERNEL[r["backend"]], dtype="bf16", **{"pass": r["pass"]},
                        causal="True", batch=r["batch"], seqlen_q=r["seq"], seqlen_kv=r["seq"],
                        num_q_heads=r["heads_q"], num_kv_heads=r["heads_kv"],
                        head_dim_qk=r["dqk"], head_dim_v=r["dv"], time_ms=r["ms"],
                        source=f"{tag}:attention:{r['backend']}:{r['pass']}:{r['batch']}:"
                        f"{r['heads_q']}:{r['heads_kv']}:{r['seq']}:{r['dqk']}:{r['dv']}:{win}",
                        notes=note))
    return out


def write_rows(folder, gemm, attn):
    """The rows as folder/gemm.csv and folder/attention.csv (../shared/kernels'
    schemas); the paths written."""
    files = []
    for name, fields, rows in (("gemm.csv", GEMM_FIELDS, gemm),
                               ("attention.csv", ATTN_FIELDS, attn)):
        if not rows:
            continue
        path = os.path.join(folder, name)
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
        files.append(path)
    return files


def predict(prism, gemm, attn):
    """{source: (measured_us, predicted_us)} from prism kernels --rows."""
    with tempfile.TemporaryDirectory() as tmp:
        files = write_rows(tmp, gemm, attn)
        p = subprocess.run([prism, "kernels", "--rows", *files], capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"probe_kernels.py: prism kernels failed: {p.stderr.strip()}")
    got = {}
    table = p.stdout.split("\n\n")[0]  # the summary table follows a blank line
    for r in csv.DictReader(io.StringIO(table)):
        got[r["source"].split(" (")[0]] = (float(r["measured_us"]), float(r["predicted_us"]),
                                          r["profile"])
    return got


def err(pred, meas):
    return f"{(pred - meas) / meas * 100:+.1f} %"


def sustained_table(info, got, tag, gpu):
    print(f"\n**{gpu}** (`{tag}`): TFLOP/s (copy: TB/s read + written); model = prism's "
          "kernel model at the burst clock (first ~100 ms) and at its dtype's stream clock "
          "(last 10 s)\n")
    print("| stream | s | first 100 ms | model (burst) | error | SM MHz | under 1900 MHz from "
          "(ms) | last 10 s | model (stream) | error | SM MHz | W | throttle | last / first | "
          "last / model burst | gpu.stream |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for i in info:
        t = i["test"]
        m0 = got.get(f"{tag}:sustained:{t}:first")
        m1 = got.get(f"{tag}:sustained:{t}:last")
        if m0 and m1:
            r0, r1 = i["first"] * m0[0] / m0[1], i["last"] * m1[0] / m1[1]
            mod0, mod1 = f"{r0:.0f}", f"{r1:.0f}"
            e0, e1 = err(r0, i["first"]), err(r1, i["last"])
            # the stream factor this stream implies, and the profile's
            imp, prof = f"{i['last'] / r0:.3f}", f"{r1 / r0:.3f}"
        else:
            mod0 = mod1 = e0 = e1 = imp = prof = "--"
        why = {"0x0": "none", "0x4": "SW power cap"}
        nd = 2 if i["dtype"] == "copy" else 0
        print(f"| {t} | {i['secs']:.0f} | {i['first']:.{nd}f} | {mod0} | {e0} | {i['clk0']:.0f} | "
              f"{i['held']} | {i['last']:.{nd}f} | {mod1} | {e1} | {i['clk1']:.0f} | "
              f"{i['pw1']:.0f} | {', '.join(why.get(x, x) for x in i['reasons'])} | "
              f"{i['last'] / i['first']:.3f} | {imp} | {prof} |")


def grouped_table(d, got, tag, gpu):
    print(f"\n**{gpu}** (`{tag}`): TFLOP/s measured / model (error); prism's grouped GEMM is "
          "Transformer Engine's multi-stream form\n")
    print("| shape | experts | tokens/expert | dense | _grouped_mm | model grouped | error | "
          "loop of mm | model loop | error |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = read(d, "grouped.csv")
    keys = dict.fromkeys((r["shape"], r["experts"], r["tokens_per_expert"]) for r in rows)
    errs = {"grouped_mm": [], "loop": [], "dense": []}
    for s, e, t in keys:
        cell = {}
        for r in rows:
            if (r["shape"], r["experts"], r["tokens_per_expert"]) != (s, e, t):
                continue
            g = got.get(f"{tag}:grouped:{s}:{e}:{t}:{r['op']}")
            meas = float(r["tflops"])
            mod = meas * g[0] / g[1] if g else None
            cell[r["op"]] = (meas, mod)
            if mod:
                errs[r["op"]].append(abs(mod - meas) / meas)

        def f(op, part):
            v = cell.get(op)
            if not v or v[part] is None:
                return "--"
            return f"{v[part]:.0f}"

        def e_(op):
            v = cell.get(op)
            return err(v[1], v[0]) if v and v[1] else "--"
        print(f"| {s} | {e} | {t} | {f('dense', 0)} | {f('grouped_mm', 0)} | "
              f"{f('grouped_mm', 1)} | {e_('grouped_mm')} | {f('loop', 0)} | {f('loop', 1)} | "
              f"{e_('loop')} |")
    print("\nmean |error|: " + ", ".join(
        f"{k} {statistics.mean(v) * 100:.1f} % ({len(v)})" for k, v in errs.items() if v))


def profile_clocks(path):
    """gpu.sustained and gpu.stream's entries of a profile file."""
    import re
    txt = open(path).read()
    sus = float(re.search(r"^\s*sustained = ([0-9.]+);", txt, re.M).group(1))
    grp = re.search(r"stream = \{(.*?)\};", txt, re.S).group(1)
    return sus, {k: float(v) for k, v in re.findall(r"(bf16|fp8) = ([0-9.]+);", grp)}


def mixed_table(d):
    rows = read(d, "mixed.csv")
    if not rows:
        return
    clk = [c for c in read(d, "clocks.csv") if c["source"] == "nvml"]
    sus, stream = profile_clocks(os.path.join(ROOT, "configs/hw/h100-dgx.cfg"))
    phi = 0.73  # HW_STEP_COMPUTE_SHARE (hw.h)
    print(f"\n**{gpu_of(d)}** (`{os.path.basename(d)}`): a GEMM (8192^3) then a copy, back to "
          "back 25 s; GEMM ms first chunk / last 10 s; configs/hw/h100-dgx.cfg's clocks\n")
    print("| pair | GEMM share first / settled | GEMM first | settled | settled / first | SM MHz "
          "| W | relation at the measured share | profile's step clock |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for test in dict.fromkeys(r["test"] for r in rows):
        rs = [r for r in rows if r["test"] == test]
        t1 = float(rs[-1]["end_mono_s"])
        last = [r for r in rs if float(r["start_mono_s"]) >= t1 - 10]
        g0 = float(rs[0]["gemm_ms"])
        g1 = statistics.median(float(r["gemm_ms"]) for r in last)
        sh = statistics.median(float(r["gemm_share"]) for r in last)
        ck = [float(c["sm_mhz"]) for c in clk if t1 - 10 <= float(c["mono_s"]) <= t1]
        pw = [float(c["power_w"]) for c in clk if t1 - 10 <= float(c["mono_s"]) <= t1]
        dt = rs[0]["dtype"]
        rel = 1 - (1 - stream[dt]) * sh
        step = sus if dt == "bf16" else 1 - (1 - stream[dt]) * phi
        print(f"| {test} | {float(rs[0]['gemm_share']):.3f} / {sh:.3f} | {g0:.4f} | {g1:.4f} | "
              f"{g0 / g1:.3f} | {statistics.median(ck):.0f} | {statistics.median(pw):.0f} | "
              f"{rel:.3f} (stream {stream[dt]}) | {step:.3f} |")


def attention_table(d, got, tag, gpu):
    print(f"\n**{gpu}** (`{tag}`): ms measured / model; `b x hq/hkv x seq x dqk/dv`\n")
    print("| shape | window | backend | fwd | model | error | bwd | model | error |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    rows = [r for r in read(d, "attention.csv") if r["backend"] in KERNEL]
    seen = dict.fromkeys((r["backend"], r["batch"], r["heads_q"], r["heads_kv"], r["seq"],
                          r["dqk"], r["dv"], r["window"]) for r in rows)
    errs = {}
    for be, b, hq, hkv, s, dqk, dv, win in seen:
        cells = []
        for ps in ("fwd", "bwd"):
            g = got.get(f"{tag}:attention:{be}:{ps}:{b}:{hq}:{hkv}:{s}:{dqk}:{dv}:{win}")
            if g:
                cells += [f"{g[0] / 1e3:.3f}", f"{g[1] / 1e3:.3f}", err(g[1], g[0])]
                errs.setdefault((be, ps), []).append(abs(g[1] - g[0]) / g[0])
            else:
                cells += ["--"] * 3
        print(f"| {b}x{hq}/{hkv}x{s}x{dqk}/{dv} | {win} | {be} | " + " | ".join(cells) + " |")
    print("\nmean |error|: " + ", ".join(
        f"{be} {ps} {statistics.mean(v) * 100:.1f} % ({len(v)})" for (be, ps), v in errs.items()))


def profile_mem(gpu):
    """HBM GB/s, the elementwise floor (us) and the multi-tensor
    efficiencies {bf16, fp32} of the profile of a recording's GPU."""
    import re
    name = {"H200": "h200-dgx", "H100 SXM": "h100-dgx"}[gpu]
    txt = open(os.path.join(ROOT, "configs/hw", name + ".cfg")).read()
    hbm = float(re.search(r"^\s*hbm_bandwidth_GBps = ([0-9.]+);", txt, re.M).group(1))
    line = re.search(r"^\s*elementwise = \{([^}]*)\}", txt, re.M).group(1)

    def val(key):
        m = re.search(r"(?:^|;)\s*" + key + r" = ([0-9.]+);", line)
        return float(m.group(1)) if m else 0.0
    return name, hbm, val("overhead_us"), {"bf16": val("multi_tensor_eff"),
                                           "fp32": val("multi_tensor_fp32_eff")}


def optim_table(d):
    rows = read(d, "optim.csv")
    if not rows:
        return
    gpu = gpu_of(d)
    name, hbm, floor, eff = profile_mem(gpu)
    print(f"\n**{gpu}** (`{os.path.basename(d)}`): fused AdamW (`fused=True`) a step, the "
          f"step's kernels' summed time; configs/hw/{name}.cfg: HBM {hbm:.0f} GB/s, "
          f"{floor:.3f} us a kernel\n")
    print("| test | parameters | bytes | kernels | kernels ms | TB/s | of HBM | profile's eff | "
          "model ms | error |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    fit = {}
    for r in rows:
        b = float(r["bytes"])
        if r["test"] == "copy":
            ms = float(r["step_ms"])
            print(f"| copy (2 x {b / 2 / 2**20:.0f} MiB, events) | | {b / 1e9:.2f} GB | | "
                  f"{ms:.3f} | {b / ms / 1e9:.2f} | {b / ms / 1e9 / hbm * 1e3:.3f} | | | |")
            continue
        k, us, dt = int(r["kernels"]), float(r["kernel_us_sum"]), r["dtype"]
        e = eff.get(dt, 0)
        model = k * floor + (b / (hbm * 1e3 * e) if e > 0 else float("nan"))
        fit.setdefault(dt, []).append((b / (hbm * 1e3), us - k * floor))
        print(f"| {r['test']} | {int(r['params']) / 1e6:,.0f} M | {b / 1e9:.2f} GB | {k} | "
              f"{us / 1e3:.3f} | {b / us / 1e6:.2f} | {b / us / 1e6 / hbm * 1e3:.3f} | "
              f"{e:.3f} | {model / 1e3:.3f} | {err(model, us)} |")
    ls = {dt: sum(a * a for a, _ in v) / sum(a * y for a, y in v) for dt, v in fit.items()}
    print("\nleast squares, the floor a kernel: " + ", ".join(
        f"{dt} {e:.3f} ({len(fit[dt])})" for dt, e in ls.items()) +
        (f"; fp32 / bf16 {ls['fp32'] / ls['bf16']:.3f}" if {"bf16", "fp32"} <= set(ls) else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("prism", help="the prism binary")
    ap.add_argument("dirs", nargs="*", help="probe folders (default: tests/data/gpu/probe-*)")
    ap.add_argument("--only", default="sustained,grouped,attention,mixed,optim")
    ap.add_argument("--write", metavar="DIR",
                    help="write the converted rows to DIR/gemm.csv and DIR/attention.csv "
                    "(for `prism kernels ../shared/kernels DIR`) and print no tables")
    a = ap.parse_args()
    dirs = a.dirs or DIRS
    for d in dirs:
        if not os.path.exists(os.path.join(d, "manifest.json")):
            sys.exit(f"probe_kernels.py: {d}: no manifest.json (not a gpu_probe.py folder)")
    if a.write and not os.path.isdir(a.write):
        sys.exit(f"probe_kernels.py: --write {a.write}: not a folder")
    gemm, attn, infos = [], [], {}
    for d in dirs:
        tag, gpu = os.path.basename(os.path.normpath(d)), gpu_of(d)
        rows, infos[d] = sustained_rows(d, gpu, tag)
        gemm += rows + grouped_rows(d, gpu, tag)
        attn += attention_rows(d, gpu, tag)
    if a.write:
        # the loop of torch.mm left out: its time is the Python loop's where
        # an expert's GEMM is short (host-bound), which no kernel fit may see
        gemm = [r for r in gemm if not r["source"].endswith(":loop")]
        # one source a recording's section (what --loso leaves out together),
        # each row's own key kept in its notes
        for r in gemm + attn:
            tag, sec, key = r["source"].split(":", 2)
            r["notes"] = "; ".join(x for x in (r["notes"], f"row {key}") if x)
            r["source"] = f"scripts/gpu_probe.py {tag}:{sec}"
        for path in write_rows(a.write, gemm, attn):
            print(path)
        return
    got = predict(a.prism, gemm, attn)
    for d in dirs:
        tag, gpu = os.path.basename(os.path.normpath(d)), gpu_of(d)
        if "sustained" in a.only:
            sustained_table(infos[d], got, tag, gpu)
        if "grouped" in a.only:
            grouped_table(d, got, tag, gpu)
        if "attention" in a.only:
            attention_table(d, got, tag, gpu)
    if "mixed" in a.only:
        mixed_table(os.path.join(ROOT, "tests/data/gpu/probe-h100-mixed"))
    if "optim" in a.only:
        import glob
        for d in a.dirs or sorted(glob.glob(os.path.join(ROOT, "tests/data/gpu/probe-*"))):
            optim_table(d)


if __name__ == "__main__":
    main()
