#!/usr/bin/env python3
"""CPU time and peak RSS of one candidate (`prism synth`, one process each)
against its microbatch count and its GPU count, hierarchical (folded units,
the default) beside the kernel-level reference (--full, or another build
given as BASE).  GPT-3 175B on DGX H100.

usage: tests/bench/units.py PRISM [BASE_PRISM] [--quick]

Each figure is the best of three runs: user + system CPU seconds of the
process (os.wait4) and its peak RSS.  A kernel-level run past GRAPH_MAX_TASKS
is refused by prism: shown as "refused"."""
import os
import subprocess
import sys


def measure(cmd, reps=3):
    best, rss, out = None, 0, ""
    for _ in range(reps):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        o = p.stdout.read()
        e = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
        if status != 0:
            return None, 0, e.decode()
        cpu = ru.ru_utime + ru.ru_stime
        best = cpu if best is None else min(best, cpu)
        rss = max(rss, ru.ru_maxrss / 1024)
        out = o.decode()
    return best, rss, out


def iteration(out):
    for line in out.splitlines():
        if line.startswith("iteration"):
            return float(line.split()[1])
    return None


def row(prism, base, args, label):
    h_cpu, h_rss, h_out = measure([prism, "synth", "gpt3-175b", "--hw", "h100-dgx"] + args)
    if base:
        f_cmd = [base, "synth", "gpt3-175b", "--hw", "h100-dgx"] + args
    else:
        f_cmd = [prism, "synth", "gpt3-175b", "--hw", "h100-dgx", "--full"] + args
    f_cpu, f_rss, f_out = measure(f_cmd)
    h_it = iteration(h_out) if h_cpu is not None else None
    f_it = iteration(f_out) if f_cpu is not None else None
    hier = f"{h_cpu * 1e3:8.1f} ms {h_rss:7.1f} MB" if h_cpu is not None else "refused".rjust(22)
    full = f"{f_cpu * 1e3:8.1f} ms {f_rss:7.1f} MB" if f_cpu is not None else "refused".rjust(22)
    same = ("same" if h_it == f_it else f"{h_it} vs {f_it}") if h_it and f_it else "-"
    ratio = f"{f_cpu / h_cpu:7.1f}x" if h_cpu and f_cpu else "      -"
    print(f"{label:<28} {hier}   {full}  {ratio}  iteration {h_it} ms ({same})", flush=True)
    return h_cpu


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quick = "--quick" in sys.argv
    prism = args[0]
    base = args[1] if len(args) > 1 else None
    ref = "base build" if base else "--full"
    print(f"{'GPT-3 175B, DGX H100':<28} {'hierarchical':>22}   {ref:>22}  speedup")
    print("-- against microbatches (TP8 PP8 DP8, mbs 1, 1F1B)")
    mbs = [8, 64, 256, 1024] if quick else [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    cpu = {}
    for m in mbs:
        cpu[m] = row(prism, base, ["--tp", "8", "--pp", "8", "--dp", "8", "--microbatches",
                                   str(m)], f"{m} microbatches")
    if 64 in cpu and 2048 in cpu and cpu[64] and cpu[2048]:
        print(f"2048 / 64 microbatches: {cpu[2048] / cpu[64]:.2f}x the CPU")
    print("-- against GPUs (TP8, PP up to 16, the rest DP; 64 microbatches)")
    gpus = [8, 64, 512] if quick else [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192,
                                       16384]
    for g in gpus:
        pp = min(g // 8, 16)
        dp = g // (8 * pp)
        row(prism, base, ["--tp", "8", "--pp", str(pp), "--dp", str(dp), "--microbatches", "64"],
            f"{g} GPUs (pp {pp}, dp {dp})")


if __name__ == "__main__":
    main()
