#!/usr/bin/env python3
"""scripts/probe_kernels.py --write: the probe recordings' kernel rows as
../shared/kernels-schema CSV files that `prism kernels` reads.

Checks, on tests/data/gpu/probe-h100 and probe-h200: the rows written (each
card's 6 sustained GEMM rows and its grouped section's 25 torch._grouped_mm
and 25 dense rows; the loop of torch.mm left out, host-bound), one source a
recording's section, a row's shape, time and calls as grouped.csv states
them; `prism kernels --rows` on the files predicts Mixtral's fc1 at 8
experts x 16 tokens as the hand-worked grouped GEMM (memory-bound: two
rounds of 4 experts, each reading 4 x 118,030,336 B) under the H200 and the
H100 profile; a --write folder that does not exist is refused.

usage: probe_write.py PRISM SOURCE_DIR
"""
import csv
import io
import os
import subprocess
import sys
import tempfile

from clitest import check

prism, root = sys.argv[1], sys.argv[2]
script = os.path.join(root, "scripts/probe_kernels.py")


def fail(msg):
    check(False, msg)


with tempfile.TemporaryDirectory() as tmp:
    p = subprocess.run([sys.executable, script, prism, "--write", tmp], capture_output=True,
                       text=True)
    if p.returncode:
        fail(f"--write failed: {p.stderr}")
    gemm_path, attn_path = os.path.join(tmp, "gemm.csv"), os.path.join(tmp, "attention.csv")
    if p.stdout.split() != [gemm_path, attn_path]:
        fail(f"printed {p.stdout!r}")
    gemm = list(csv.DictReader(open(gemm_path)))
    attn = list(csv.DictReader(open(attn_path)))
    count = {}
    for r in gemm:
        count[r["source"]] = count.get(r["source"], 0) + 1
    want = {"scripts/gpu_probe.py probe-h100:sustained": 6,
            "scripts/gpu_probe.py probe-h100:grouped": 50,
            "scripts/gpu_probe.py probe-h200:sustained": 6,
            "scripts/gpu_probe.py probe-h200:grouped": 50}
    if count != want:
        fail(f"gemm rows by source {count}, want {want}")
    if any(":loop" in r["notes"] for r in gemm):
        fail("a loop-of-mm row was written")
    if not attn or any(not r["source"].endswith(":attention") for r in attn):
        fail("attention rows missing or not one source a recording")
    # grouped.csv: mixtral-fc1,4096,14336,8,16,grouped_mm,0.3461,43.4,44 (H200)
    row = [r for r in gemm if r["gpu"] == "H200" and
           r["notes"].endswith("row mixtral-fc1:8:16:grouped_mm")]
    if len(row) != 1:
        fail(f"H200 mixtral 8 x 16 grouped row: {len(row)} found")
    r = row[0]
    got = (r["batch"], r["M"], r["N"], r["K"], r["time_ms"], r["notes"])
    if got != ("8", "16", "14336", "4096", "0.346100",
               "44 back-to-back calls after 46 warmup; row mixtral-fc1:8:16:grouped_mm"):
        fail(f"H200 mixtral 8 x 16 grouped row {got}")
    dense = [r for r in gemm if r["gpu"] == "H200" and
             r["notes"].endswith("row mixtral-fc1:8:16:dense")]
    if [(d["batch"], d["M"], d["time_ms"]) for d in dense] != [("1", "128", "0.037500")]:
        fail(f"H200 mixtral 8 x 16 dense row {dense}")
    # The same row under both profiles: prism's grouped GEMM is two rounds of
    # kperf_gemm_s(batch 4, 16, 14336, 4096), each memory-bound: 4 x (2 x (16 x
    # 4096 + 4096 x 14336) + 2 x 16 x 14336) = 472,121,344 B at hbm x mem_eff
    # (bf16 0.921 on both), plus overhead_us 2.094.
    one = os.path.join(tmp, "one.csv")
    with open(one, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(r.keys()))
        w.writeheader()
        for gpu in ("H200", "H100 SXM"):
            w.writerow(dict(r, gpu=gpu, source=f"as {gpu}"))
    p = subprocess.run([prism, "kernels", "--rows", one], capture_output=True, text=True)
    if p.returncode:
        fail(f"prism kernels --rows: {p.stderr}")
    pred = {x["source"].split(" (")[0]: float(x["predicted_us"])
            for x in csv.DictReader(io.StringIO(p.stdout.split("\n\n")[0]))}
    for gpu, hbm in (("H200", 4800e9), ("H100 SXM", 3350e9)):
        hand = 2 * (472121344 / (hbm * 0.921) * 1e6 + 2.094)
        if abs(pred.get(f"as {gpu}", 0) - hand) > 0.01:
            fail(f"{gpu}: predicted {pred.get(f'as {gpu}')} us, hand-worked {hand:.3f}")

p = subprocess.run([sys.executable, script, prism, "--write", "/nonexistent/probe-rows"],
                   capture_output=True, text=True)
if p.returncode == 0 or "--write /nonexistent/probe-rows: not a folder" not in p.stderr:
    fail(f"a missing --write folder: rc {p.returncode}, {p.stderr!r}")
