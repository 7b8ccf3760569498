#!/usr/bin/env python3
"""Activation offloading on the command line and in sweeps (docs/MODEL.md,
"Activation offloading"; docs/FORMATS.md, gpu.host_link and
space.offload_layers): --offload-layers N is named in --json; gpt-small's
4 offloaded layers hold 4 x 34 s b h = 4 x 35,651,584 bytes less at the
peak (one microbatch, 1F1B on one stage); over H100's PCIe (55 GB/s, a
layer's copy 0.65 ms against ~0.1 ms of compute) the step grows, over
GB200's NVLink-C2C less (the host's launches made cheap, --host-us 2,1:
gpt-small at one sequence a microbatch is host-bound at the default host
costs, where the copies hide behind the host on either link); the
analytic estimate and the bound grow with it
and the bound stays below the step; Megatron-LM's refusals (pp 2,
recompute, N = layers) and a profile without a host link exit 2 naming
the rule; a sweep over space.offload_layers keys its candidates offl=N
where pp is 1, the pp 2 candidates taking the first value only.

usage: offload_cli.py PRISM
"""
import json
import os
import re
import sqlite3
import sys
import tempfile

from clitest import check, collect, done, run

PRISM = os.path.abspath(sys.argv[1])
HW = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "hw")
collect()


def synth(hw, *args):
    r = run(PRISM, "synth", "gpt-small", "--hw", hw, "--mbs", "1", "--microbatches", "4",
            "--host-us", "2,1", *args, "--json")
    check(r.returncode == 0, f"synth {hw} {args}: {r.stderr}")
    return json.loads(r.stdout) if r.returncode == 0 else {}


layer = 34 * 1024 * 1024  # 34 s b h bytes a layer
for hw in ("h100-dgx", "gb200-nvl72"):
    base, off = synth(hw), synth(hw, "--offload-layers", "4")
    check("offload_layers" not in base, f"{hw}: --json leaves offload_layers 0 out")
    check(off.get("offload_layers") == 4, f"{hw}: --json names offload_layers")
    check(base["memory_activations_bytes"] - off["memory_activations_bytes"] == 4 * layer,
          f"{hw}: 4 layers' activations leave the peak: "
          f"{base['memory_activations_bytes']} -> {off['memory_activations_bytes']}")
    check(off["iteration_s"] >= base["iteration_s"], f"{hw}: offloading is not free")
    check(off["analytic_s"] >= base["analytic_s"] and off["bound_s"] >= base["bound_s"],
          f"{hw}: the estimate and the bound take the copies in")
    check(off["bound_s"] <= off["iteration_s"], f"{hw}: the bound stays below the step")
    if hw == "h100-dgx":
        pcie = off["iteration_s"] - base["iteration_s"]
    else:
        c2c = off["iteration_s"] - base["iteration_s"]
check(pcie > 0.001 and c2c < pcie / 2, f"PCIe exposes {pcie} s, NVLink-C2C {c2c} s")

for args, msg in ((["--pp", "2"], "needs pp 1"), (["--recompute", "full"], "recompute full"),
                  (["--offload-layers", "8"], "below the 8 layers")):
    a = ["--offload-layers", "4", *args] if args[0] != "--offload-layers" else args
    r = run(PRISM, "synth", "gpt-small", "--hw", "h100-dgx", "--microbatches", "4", *a)
    check(r.returncode == 2 and msg in r.stderr, f"synth {a}: {r.returncode} {r.stderr}")
r = run(PRISM, "synth", "--help")
check("--offload-layers N" in r.stdout, "synth --help names --offload-layers")

with tempfile.TemporaryDirectory() as tmp:
    # a profile without a host link
    text = open(os.path.join(HW, "h100-dgx.cfg")).read()
    text = re.sub(r"\n  host_(link|d2h_GBps|h2d_GBps) = [^\n]*", "", text)
    nohost = os.path.join(tmp, "nohost.cfg")
    with open(nohost, "w") as f:
        f.write(text)
    r = run(PRISM, "synth", "gpt-small", "--hw", nohost, "--offload-layers", "2")
    check(r.returncode == 2 and "no host link" in r.stderr, f"no host link: {r.stderr}")
    r = run(PRISM, "synth", "gpt-small", "--hw", nohost)
    check(r.returncode == 0, f"a profile without a host link still runs: {r.stderr}")

    cfg = os.path.join(tmp, "off.cfg")
    with open(cfg, "w") as f:
        f.write('name = "off";\nmodel = "gpt-small";\nhw = "h100-dgx";\ngpus = [8];\n'
                'global_batch = 32;\nspace = {\n  tp = [1];\n  pp = [1, 2];\n  mbs = [1];\n'
                '  zero = [0];\n  recompute = ["none"];\n  offload_layers = [0, 4];\n};\n')
    db = os.path.join(tmp, "o.db")
    r = run(PRISM, "search", cfg, "--db", db, "--threads", "1")
    check(r.returncode == 0, f"search: {r.stderr}")
    rows = sqlite3.connect(db).execute(
        "SELECT key, pp, offload_layers, status FROM candidate ORDER BY key").fetchall()
    got = sorted((pp, n) for _, pp, n, _ in rows)
    check(got == [(1, 0), (1, 4), (2, 0)], f"candidates {rows}")
    for key, pp, n, status in rows:
        check(("offl=4" in key) == (n == 4), f"key {key} offload {n}")
        check(status == "simulated", f"{key}: {status}")

done()
