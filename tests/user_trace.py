#!/usr/bin/env python3
"""A user's own trace as a base (issue 36), on hand-made traces of
tests/data (gen_issue36.py writes them):

- AMD: an MI300X virtual function's device name finds the shipped mi300x
  profile; the Tensile kernel (Cijk_...) of an aten::mm is a GEMM with the
  mm's shape; RCCL's one kernel for every collective (ncclDevKernel_Generic_4)
  is an all-reduce of the size its record_param_comms gives; a GPU without a
  profile takes base_hw from a sweep file or --base-hw on search.
- A trace without GPU events is refused, exit 2, saying what is missing.

usage: user_trace.py PRISM SRC
"""
import json
import os
import subprocess
import sys
import tempfile

from clitest import check

PRISM, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "tests", "data")


def run(*args, code=0):
    r = subprocess.run([PRISM, *args], capture_output=True, text=True)
    check(r.returncode == code,
          f"prism {' '.join(args)}: exit {r.returncode}, want {code}\n{r.stdout}{r.stderr}")
    return r


mi300 = os.path.join(DATA, "mi300x_2025.json")
mi250 = os.path.join(DATA, "mi250x_2025.json")

# The trace as read: the GEMM and the all-reduce (2,097,152 bf16 elements).
ing = json.loads(run("ingest", "--json", mi300).stdout)
check(ing["ranks"][0]["device"] == "AMD Instinct MI300X VF", str(ing["ranks"]))
kc = ing["kernel_classes"]
check(kc["gemm"]["tasks"] == 1 and kc["gemm"]["ns"] == 200000, f"gemm: {kc['gemm']}")
check(kc["collective"]["tasks"] == 1 and kc["other"]["tasks"] == 0, str(kc))
check(ing["collectives"]["all_reduce"] == 1, str(ing["collectives"]))
out = run("ingest", mi300).stdout
check("all_reduce            1  (1 with sizes, 4.194 MB in all)" in out, out)

# The GEMM's row: the mi300x profile, bf16, batch 1 x M 1024 x N 2048 x K
# 4096 from the mm's Input Dims, as for cuBLAS kernels.
rows = [x for x in run("kernels", "--rows", mi300).stdout.splitlines() if x.startswith("mi300x,")]
check(len(rows) == 1 and rows[0].startswith(
    f'mi300x,gemm,bf16,"{mi300}",1x1024x2048x4096|0x0x0x0|0,200.000,'), f"rows: {rows}")

# whatif finds the profile without --base-hw; a GPU with none is refused
# (exit 2) until --base-hw names one.
out = run("whatif", mi300, "--hw", "h100-dgx").stdout
check("the trace as recorded on MI300X platform" in out and "on DGX H100" in out, out)
# Carried to an H100, the Tensile GEMM is re-timed by the kernel model from
# its shape (as "other" it was scaled by the HBM bandwidths).
check("mi300x -> h100-dgx; kernels: 1 re-timed by the kernel model from their shapes, 0 by "
      "work and peak ratios" in out, out)
r = run("whatif", mi250, "--hw", "h100-dgx", code=2)
check("no hardware profile for the trace's GPU 'AMD Instinct MI250X' (configs/hw): give one "
      "with --base-hw" in r.stderr, r.stderr)
run("whatif", mi250, "--hw", "h100-dgx", "--base-hw", "mi300x")

# search: base_hw in the sweep file, or --base-hw; the two must agree.
with tempfile.TemporaryDirectory() as d:
    def sweep(name, extra=""):
        p = os.path.join(d, name + ".cfg")
        with open(p, "w") as f:
            f.write(f'name = "{name}";\nbase = "{mi250}";\nhw = "h100-dgx";\ngpus = [1];\n'
                    f'\n{extra}')
        return p
    db = os.path.join(d, "r.db")
    r = run("search", sweep("nohw"), "--db", db, code=2)
    check("no hardware profile for the trace's GPU 'AMD Instinct MI250X'" in r.stderr, r.stderr)
    run("search", sweep("filehw", 'base_hw = "mi300x";\n'), "--db", db)
    run("search", sweep("opthw"), "--base-hw", "mi300x", "--db", db)
    # The same sweep over another base hardware ran on other inputs.
    r = run("search", sweep("opthw"), "--base-hw", "mi325x", "--db", db, code=2)
    check("ran on other inputs (changed since: the base's hardware profile (base_hw))" in
          r.stderr, r.stderr)
    r = run("search", sweep("both", 'base_hw = "mi300x";\n'), "--base-hw", "mi325x", "--db", db,
            code=2)
    check(r.stderr.endswith("both.cfg:6: --base-hw mi325x, but the sweep's base_hw is 'mi300x'\n"),
          r.stderr)

# Parameters from autograd's accumulations (a per-parameter optimizer's
# trace, no fused or for-each shapes): 3 x (64 + 8 + 8) + 80 = 320, which
# a DP edit adds gradient all-reduces for.
acc = os.path.join(DATA, "accgrad_2025.json")
w = json.loads(run("whatif", acc, "--dp", "8", "--json").stdout)
check(w["base"].endswith(", 320 parameters") and w["method"] == "graph edit" and
      "dp 1 -> 8: 1 gradient all-reduces added" in w["how"], str(w))
# A base_dp against the gradient collectives found: refused, naming them.
ddp = os.path.join(DATA, "ddpgrad_2025.json")
r = run("whatif", ddp, "--dp", "8", "--base-dp", "1", code=2)
check(r.stderr == f"prism: {ddp}: the trace has no run description (prism::model#): dp: the "
      "trace's gradient collectives are of a 2-rank group ('0'), not of the 1 ranks given as "
      "the base's data-parallel degree: leave --base-dp (base_dp) out, or give 2\n", r.stderr)
# DP 2 -> 8 re-times the gradient all-reduce, not the embedding's
# all-to-all on the same two ranks (another role: 2 were re-timed before).
w = json.loads(run("whatif", ddp, "--dp", "8", "--json").stdout)
check(w["dp_from"] == 2 and "dp 2 -> 8: 1 collectives re-timed" in w["how"], str(w))

# A no-op is 0.0 % on every kind of base: the base is evaluated by the
# candidate's method (a described trace's no-op ZeRO-1 on dp 1 is rebuilt,
# and so is the base it is compared with).
with tempfile.TemporaryDirectory() as d:
    syn = os.path.join(d, "b.json")
    run("synth", "gpt-small", "--hw", "h100-dgx", "--dp", "1", "--eff", "gemm=0.45,attention=0.3",
        "--host-us", "20,8", "-o", syn)
    for base, args in ((ddp, ["--dp", "2"]), (acc, ["--layers", "3"]), (mi300, ["--hw", "mi300x"]),
                       (syn, ["--zero", "1"]), (syn, ["--tp", "1", "--zero", "1"]),
                       (syn, ["--dp", "1"]),
                       ("gpt-small", ["--hw", "h100-dgx", "--zero", "1"])):
        w = json.loads(run("whatif", base, *args, "--json").stdout)
        check(w["speedup"] == 1 and w["base_method"] == w["method"], f"{base} {args}: {w}")
        out = run("whatif", base, *args).stdout
        check(f"change     +0.0 % iteration time against the base ({w['method']})" in out, out)

# What a plain trace does not say is refused (exit 2), not taken as the
# default: its precision (the GEMMs' op types: fp32 here; unknown without
# types), a global batch in samples.
r = run("whatif", acc, "--dtype", "bf16", code=2)
check("dtype: the trace's precision is unknown (no GEMM, attention or convolution with its op's "
      "input types: profile with record_shapes=True)" in r.stderr, r.stderr)
r = run("whatif", mi300, "--dtype", "fp32", code=2)
check("dtype: the trace's GEMMs, attention and convolutions ran in bf16; another precision is "
      "rebuilt from a run description" in r.stderr, r.stderr)
w = json.loads(run("whatif", mi300, "--dtype", "bf16", "--json").stdout)
check(w["method"] == "replay", str(w))
r = run("whatif", acc, "--gbs", "64", code=2)
check("--gbs counts samples, and the trace does not say how many a microbatch holds: give "
      "--microbatches (it found 1)" in r.stderr, r.stderr)

# A graph edit that would wait on itself is this trace's refusal (exit 2,
# was 1): torchrec's loader runs the GPU a step behind the host, so its
# microbatch copies would wait on each other (../shared, where present).
tr = os.path.join(SRC, "..", "shared", "traces", "hta-torchrec-a100-rank0of16", "rank0.json.gz")
if os.path.exists(tr):
    r = run("whatif", tr, "--microbatches", "2", code=2)
    check("the microbatch count cannot be a graph edit of this trace" in r.stderr, r.stderr)
else:
    print(f"skip: {tr} is absent")

# No GPU events: nothing to replay, said with what is missing.
nogpu = os.path.join(DATA, "nogpu_2025.json")
for cmd in (["replay"], ["whatif", "--dp", "2"], ["ingest"]):
    r = run(cmd[0], nogpu, *cmd[1:], code=2)
    check(r.stderr.startswith(f"prism: {nogpu}: no GPU events (kernels, copies, collectives): "
                              "the trace was recorded without CUDA activities"), r.stderr)
print("ok")
