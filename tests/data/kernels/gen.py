#!/usr/bin/env python3
"""Writes the hand-made kernel measurement fixtures beside this script.

The rows have the columns and the wording of ../shared/kernels's files (its
README), so that prism kernels reads them as it reads the real ones, but
their numbers are made up from closed forms below: the real measurements are
read from ../shared/kernels by the tests that need them and are never copied
into the project.  Run it from anywhere; it rewrites gemm.csv, attention.csv,
memory_bound.csv and other.csv.
"""
import csv
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_A = "hand-made: tests/data/kernels/gen.py (summaries)"
SRC_B = "hand-made: tests/data/kernels/gen.py (grid)"
SRC_C = "hand-made: tests/data/kernels/gen.py (attention)"
SRC_D = "hand-made: tests/data/kernels/gen.py (memory-bound)"
SRC_E = "hand-made: tests/data/kernels/gen.py (fp8 linear)"
NOTE = "made up for tests, not a measurement"


def write(name, header, rows):
    with open(os.path.join(HERE, name), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def gemm():
    header = ["gpu", "gpu_detail", "dtype", "out_dtype", "op", "batch", "M", "N", "K",
              "implementation", "tflops", "time_ms", "metric2", "value2", "units2", "source",
              "section", "notes"]
    rows = [
        # Best-shape summaries given as TFLOP/s alone.
        ["A100 SXM", "NVIDIA A100 SXM", "bf16", "bf16", "gemm", 1, 1024, 10240, 5120,
         "torch.mm", "265.0", "", "spec_peak_tflops_dense", 312, "TFLOPS", SRC_A, "best shape",
         NOTE],
        ["H100 SXM", "NVIDIA H100 SXM", "bf16", "bf16", "gemm", 1, 2048, 2048, 13312,
         "torch.mm", "780.0", "", "spec_peak_tflops_dense", 989, "TFLOPS", SRC_A, "best shape",
         NOTE],
    ]
    # A grid: 750 TFLOP/s, 4.5 us a kernel, 2 us more where K is short.
    shapes = [(256, 256, 256), (256, 2048, 512), (256, 512, 2048), (256, 4096, 4096),
              (512, 1024, 512), (512, 256, 2048), (512, 2048, 4096), (1024, 512, 512),
              (1024, 4096, 1024), (1024, 1024, 4096), (2048, 256, 512), (2048, 2048, 1024),
              (2048, 512, 4096), (4096, 4096, 256), (4096, 1024, 1024), (4096, 256, 4096)]
    for m, n, k in shapes:
        fl = 2.0 * m * n * k
        t = fl / 750e12 + 4.5e-6 + (2e-6 if k <= 512 else 0)
        rows.append(["H100", "sm_90 entry", "bf16", "bf16", "gemm", 1, m, n, k,
                     "compiled dot", f"{fl / t / 1e12:.3f}", "", "", "", "", SRC_B, "grid",
                     NOTE])
    # fp8 rows timed in milliseconds (1,400 TFLOP/s and 3 us a kernel).
    for b, m, n, k in ((1, 4096, 7168, 2048), (1, 128, 4096, 7168), (4, 1024, 7168, 2048)):
        t = 2.0 * b * m * n * k / 1400e12 + 3e-6
        rows.append(["H800", "NVIDIA H800 SXM", "fp8_e4m3", "bf16", "gemm", b, m, n, k,
                     "block-scaled fp8 GEMM", "", f"{t * 1e3:.6f}", "", "", "", SRC_B, "grid",
                     NOTE])
    write("gemm.csv", header, rows)


def attention():
    header = ["gpu", "gpu_detail", "kernel", "dtype", "pass", "causal", "batch", "seqlen_q",
              "seqlen_kv", "num_q_heads", "num_kv_heads", "head_dim_qk", "head_dim_v", "tflops",
              "time_ms", "flop_convention", "source", "section", "notes"]
    conv = ("FA-style: fwd FLOPs = 4*b*h*sq*skv*d (halved if causal); bwd = 2.5x fwd; "
            "fwd+bwd = 3.5x fwd")
    # TFLOP/s by dtype and pass; causal rows 5 % lower; 20 us a kernel.
    rate = {("bf16", "fwd"): 680, ("bf16", "bwd"): 580, ("fp8_e4m3", "fwd"): 1040,
            ("fp8_e4m3", "bwd"): 520}
    rows = []
    for seq in (32768, 16384):
        for dt in ("bf16", "fp8_e4m3"):
            if seq == 16384 and dt != "bf16":
                continue
            for ps in ("fwd", "bwd"):
                for causal in (True, False):
                    fl = 4.0 * 64 * seq * seq * 128 / (2 if causal else 1)
                    fl *= 2.5 if ps == "bwd" else 1
                    tf = rate[(dt, ps)] * (0.95 if causal else 1)
                    t = fl / (tf * 1e12) + 20e-6
                    rows.append(["H200", "NVIDIA H200", "fused flash attention", dt, ps,
                                 str(causal), 1, seq, seq, 64, 8, 128, 128, f"{tf:.3f}",
                                 f"{t * 1e3:.3f}", conv, SRC_C, "attention", NOTE])
    # An unfused (math backend) row: left out.
    rows.append(["B200", "NVIDIA B200", "PyTorch SDPA math backend", "bf16", "fwd", "True", 1,
                 512, 512, 128, 8, 128, 128, "12.000", "0.716", conv, SRC_C, "attention", NOTE])
    write("attention.csv", header, rows)


def memory_bound():
    header = ["gpu", "gpu_detail", "kernel", "implementation", "dtype", "shape", "pass",
              "time_ms", "GBps", "other_metric", "other_value", "other_units", "source",
              "section", "notes"]
    rows = []
    # Norms with their bytes and time: a fused kernel at 3,600 GB/s, an
    # eager composition at half that, 4 us a kernel.
    for n, c in ((16384, 4096), (8192, 8192)):
        for impl, bw in (("fused norm kernel", 3600), ("PyTorch eager", 1800)):
            for ps, mult in (("fwd", 2), ("bwd", 3)):
                by = n * c * 2 * mult
                t = by / (bw * 1e9) + 4e-6
                rows.append(["H200", "NVIDIA H200", "rms_norm", impl, "bf16",
                             f"N={n} rows x C={c}", ps, f"{t * 1e3:.4f}",
                             f"{by / t / 1e9:.1f}", "", "", "", SRC_D, "norms", NOTE])
    # LayerNorm by shape alone (fp32, forward: read x, write y), 2,800 GB/s
    # and 5 us, with a p20 / p80 spread.
    for n in (1024, 2048, 4096, 8192):
        t = 4096 * n * 4 * 2 / 2800e9 + 5e-6
        rows.append(["H100", "NVIDIA H100 80GB HBM3", "layer_norm", "Triton LayerNorm", "fp32",
                     f"rows M=4096 x N={n}", "fwd", f"{t * 1e3:.6f}", "", "p20 / p80 time",
                     f"{t * 0.98e3:.6f} / {t * 1.03e3:.6f}", "ms", SRC_D, "norms", NOTE])
    write("memory_bound.csv", header, rows)


def other():
    header = ["gpu", "gpu_detail", "category", "item", "config", "metric", "value", "units",
              "source", "section", "notes"]
    rows = []
    for m, k, n, x in ((1024, 2048, 1024, "0.75"), (4096, 8192, 16384, "1.50")):
        rows.append(["H100", "NVIDIA H100", "fp8 training overhead",
                     "fp8 linear (per-tensor scaling) vs bf16 linear",
                     f"M,K,N = {m}, {k}, {n} (input {m}x{k}, weight {k}x{n})",
                     "speedup (bf16 time / float8 time), includes amax + cast overhead", x, "x",
                     SRC_E, "fp8 linear", NOTE])
    write("other.csv", header, rows)


gemm()
attention()
memory_bound()
other()
