#!/usr/bin/env python3
"""Predict every row of Megatron-LM's weak-scaling table (Narayanan et al.,
"Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM", SC21, Table 1: GPT models of 1.7B to 1T parameters on up to
3,072 A100s) with prism's analytic estimate and with synth + simulate, and
print the achieved teraFLOP/s per GPU against the published ones.

The published runs: vocabulary 51,200, sequence 2,048, FFN 4h, mixed
precision on DGX A100 (80 GB) nodes with 8 x 200 Gb/s InfiniBand, full
activation recomputation, the interleaved schedule where there is a
pipeline; the FLOPs counted are eq. (3) with recomputation,
96 B s l h^2 (1 + s/6h + V/16lh).  Not in the table, so assumed here:
microbatch size 1, and 2 model chunks per stage (3 for the 105-layer model,
whose 35 stages leave no other choice).

usage: scripts/megatron_table1.py [PRISM] [--rows N] [--markdown]
"""
import json
import os
import subprocess
import sys
import tempfile

# params (B), heads, hidden, layers, tp, pp, GPUs, batch, published TFLOP/s per GPU
TABLE1 = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
]
SEQ, VOCAB, HW = 2048, 51200, "a100-80gb-dgx"


def flops_eq3(batch, l, h):
    """Narayanan et al. eq. (3), with recomputation."""
    s, V = SEQ, VOCAB
    return 96 * batch * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    prism = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "build", "prism")
    rows = TABLE1
    if "--rows" in sys.argv:
        rows = TABLE1[: int(sys.argv[sys.argv.index("--rows") + 1])]
    out = []
    with tempfile.TemporaryDirectory() as d:
        for params, heads, h, l, tp, pp, gpus, batch, published in rows:
            cfg = os.path.join(d, f"megatron-{params}b.cfg")
            with open(cfg, "w") as f:
                f.write(f'name = "megatron-{params}b";\nlayers = {l};\nhidden = {h};\n'
                        f"heads = {heads};\nffn = {4 * h};\nseq = {SEQ};\nvocab = {VOCAB};\n")
            dp = gpus // (tp * pp)
            mb = batch // dp
            layout = ["--tp", str(tp), "--pp", str(pp), "--dp", str(dp), "--mbs", "1",
                      "--microbatches", str(mb), "--recompute", "full", "--no-flash"]
            if pp > 1:
                vp = 2 if l % (2 * pp) == 0 else 3
                layout += ["--schedule", "interleaved", "--vp", str(vp)]
                if tp > 1:
                    # SC21 ran Megatron-LM's scatter/gather of the pipeline
                    # transfers (scatter_gather_tensors_in_pipeline, then on)
                    layout += ["--pp-scatter-gather"]
            r = subprocess.run([prism, "synth", cfg, "--hw", HW, *layout, "--json"],
                               capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"{params}B: prism synth exited {r.returncode}: {r.stderr}")
            p = json.loads(r.stdout)
            f = flops_eq3(batch, l, h)
            sim = f / (p["iteration_s"] * gpus) / 1e12
            ana = f / (p["analytic_s"] * gpus) / 1e12 if p["analytic_s"] > 0 else float("nan")
            out.append((params, tp, pp, dp, gpus, batch, mb, published, ana, sim,
                        p["iteration_s"], p["fits"], p["tasks"]))
            print(f"{params:7.1f}B tp {tp} pp {pp:2d} dp {dp:2d} ({gpus:4d} GPUs), batch {batch}: "
                  f"published {published} TFLOP/s, analytic {ana:5.1f} ({(ana / published - 1) * 100:+5.1f}%), "
                  f"simulated {sim:5.1f} ({(sim / published - 1) * 100:+5.1f}%), "
                  f"{p['tasks']} tasks", file=sys.stderr, flush=True)
    ea = [abs(o[8] / o[7] - 1) * 100 for o in out]
    es = [abs(o[9] / o[7] - 1) * 100 for o in out]
    if "--markdown" in sys.argv:
        print("| params | tp | pp | dp | GPUs | batch | microbatches | published TFLOP/s | "
              "analytic | error | simulated | error | iteration s | fits |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for o, a, s in zip(out, ea, es):
            print(f"| {o[0]}B | {o[1]} | {o[2]} | {o[3]} | {o[4]} | {o[5]} | {o[6]} | {o[7]} | "
                  f"{o[8]:.1f} | {(o[8] / o[7] - 1) * 100:+.1f}% | {o[9]:.1f} | "
                  f"{(o[9] / o[7] - 1) * 100:+.1f}% | {o[10]:.2f} | {'yes' if o[11] else 'no'} |")
    print(f"mean |error|: analytic {sum(ea) / len(ea):.1f}%, simulated {sum(es) / len(es):.1f}% "
          f"over {len(out)} rows")


if __name__ == "__main__":
    main()
