#!/usr/bin/env python3
"""prism kernels: the kernel model against kernel measurements.

On tests/data/kernels (hand-made rows in the form of each ../shared/kernels
file): every class is reported, the unfused-attention row is left out with
its reason, --fit prints `kernels` groups that a hardware profile loads
(prism synth runs on it), --markdown gives a table, --rows ends each row
with its implementation as its file states it (one CSV field); bad input is one line
naming the file (and line) with exit status 2, and so is a profile whose
kernels group is out of range; GEMMs that accumulate into their output fit
nothing; a trace's GEMM and attention shapes are rows; a fitted peak is
never above the best rate its rows measured, and a GPU with one row takes
its sibling's shape parameters, a tile's cost at its clock.  Where
../shared/kernels exists: the shipped parameters meet the issue's goal,
mean error <= 10 % on H100 and A100 bf16 and H100-class fp8 GEMMs, and on
H100's bf16 GEMMs and its fp8 sources but DeepGEMM #136's with their
source left out; and the profiles' kernels groups are what --fit prints (a
regression guard for both; GH100's fp8 group, cuBLASLt's, what --fit prints
on those rows and our sweep's).

usage: kernels_cli.py PRISM SOURCE_DIR
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

from clitest import check, prism

PRISM, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "tests", "data", "kernels")


def run(*args, code=0):
    return prism(PRISM, *args, code=code)


out = run("kernels", "--loso", "--flat", DATA).stdout
for cls in ("gemm", "attention fwd", "attention bwd", "memory-bound", "fp8 linear speed-up"):
    check(re.search(rf"^\S+\s+{re.escape(cls)}\s", out, re.M), f"no {cls} row:\n{out}")
check("1 left out: 1 unfused attention (math backend)" in out, out)
# --rows with --loso: each row's held-out prediction; per group their
# mean |error| is the table's leave-one-source-out mean (two computations
# of one number), and a group no fit takes has an empty column.
rows = list(csv.DictReader(
    run("kernels", "--loso", "--rows", DATA).stdout.split("\n\n")[0].splitlines()))
check(rows and "loso_us" in rows[0], f"no loso_us column: {rows[:1]}")
groups = {}
for r in rows:
    if r["loso_us"]:
        dt = "-" if r["class"].startswith("memory-bound") else r["dtype"]  # one group
        g = groups.setdefault((r["profile"], r["class"], dt), [])
        g.append(abs(float(r["loso_us"]) / float(r["measured_us"]) - 1))
    else:
        check(r["class"] in ("memory-bound (eager)", "fp8 linear speed-up"), f"no loso: {r}")
check(len(groups) >= 6, f"{groups.keys()}")
for (prof, cls, dt), errs in groups.items():
    m = re.search(rf"^{re.escape(prof)}\s+{re.escape(cls)}\s+{re.escape(dt)}\s.*$", out, re.M)
    cols = re.findall(r"(\d+\.\d)% /", m.group(0)) if m else []  # shipped, LOSO, flat
    check(len(cols) == 3 and abs(float(cols[1]) - 100 * sum(errs) / len(errs)) <= 0.06,
          f"{prof} {cls} {dt}: rows give {100 * sum(errs) / len(errs):.2f} %, table {cols}")
# --rows' last column: the row's implementation as its file states it
# (gemm.csv's and memory_bound.csv's `implementation`, attention.csv's
# `kernel`, other.csv's `item`), after the --loso columns too; read here
# from the files themselves, by hand-picked rows.
for opts in ((), ("--loso",)):
    lines = run("kernels", *opts, "--rows", DATA).stdout.split("\n\n")[0].splitlines()
    check(lines[0].endswith(",error,loso_us,loso_error,implementation" if opts
                            else ",error,implementation"), lines[0])
    got = {}
    for r in csv.DictReader(lines):
        got.setdefault((r["profile"], r["class"], r["shape"]), set()).add(r["implementation"])
    for key, impl in (
            (("a100-80gb-dgx", "gemm", "1x1024x10240x5120|0x0x0x0|0"), "torch.mm"),
            (("h100-dgx", "gemm", "1x2048x2048x13312|0x0x0x0|0"), "torch.mm"),
            (("h100-dgx", "gemm", "1x256x256x256|0x0x0x0|0"), "compiled dot"),
            (("h200-dgx", "attention fwd", "1x0x0x0|64x32768x32768x128|0"),
             "fused flash attention"),
            (("h100-dgx", "memory-bound", "0x0x0x0|0x0x0x0|3.35544e+07"), "Triton LayerNorm"),
            (("h100-dgx", "fp8 linear speed-up", "1x1024x1024x2048|0x0x0x0|0"),
             "fp8 linear (per-tensor scaling) vs bf16 linear")):
        check(got.get(key) == {impl}, f"{opts} {key}: {got.get(key)}, not {impl!r}")
    check(got[("h800-hgx", "gemm", "1x4096x7168x2048|0x0x0x0|0")] == {"block-scaled fp8 GEMM"},
          str(got.keys()))
    check({i for k, v in got.items() if k[0] == "h200-dgx" and k[1].startswith("memory")
           for i in v} == {"fused norm kernel", "PyTorch eager"}, str(got))
# An implementation holding commas and quotes is one CSV field, quoted,
# its quotes doubled (as in ../shared's gemm.csv and attention.csv); so
# are a source's (the source always quoted).
with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(DATA, "gemm.csv")) as f:
        ghead = f.readline()
    q = os.path.join(d, "quoted.csv")
    with open(q, "w") as f:
        f.write(ghead)
        f.write('H100 SXM,x,bf16,bf16,gemm,1,4096,4096,4096,"flashinfer mm, backend=""cutlass""",'
                ',1.0,,,,"src ""q""",s,n\n')
    lines = run("kernels", "--rows", q).stdout.split("\n\n")[0].splitlines()
    check(len(lines) == 2 and lines[1].startswith('h100-dgx,gemm,bf16,"src ""q""",') and
          lines[1].endswith(',"flashinfer mm, backend=""cutlass"""'), str(lines))
md = run("kernels", "--markdown", DATA).stdout
check(md.startswith("| GPU (profile) | class | dtype | rows |"), md[:200])

fit = run("kernels", "--fit", DATA).stdout
block = re.search(r"# h100-dgx\n(kernels = \{.*?\n\};)\n", fit, re.S)
check(block, f"no h100-dgx kernels group in --fit:\n{fit[-2000:]}")
check('\n  gemm_tiles = "sm90";\n' in block.group(1), f"the refit lost Hopper's tiles:\n{block.group(1)}")
check('\n  gemm_schedule = "stream-k";\n' in block.group(1),
      f"the refit lost cuBLAS's stream-K schedule:\n{block.group(1)}")
check("l2_caches" not in block.group(1), f"H100 has one L2:\n{block.group(1)}")
# AMD's eight L2s (split-K's partials at HBM twice) survive a refit
with tempfile.TemporaryDirectory() as d:
    amd = os.path.join(d, "mi355x.csv")
    with open(amd, "w") as f:
        f.write("gpu,gpu_detail,dtype,out_dtype,op,batch,M,N,K,implementation,tflops,time_ms,"
                "metric2,value2,units2,source,section,notes\n")
        f.write("MI355X,x,bf16,bf16,gemm,1,8192,8192,8192,torch.mm,1500.0,,,,,s,t,n\n")
    fa = run("kernels", "--fit", amd).stdout
    block_amd = re.search(r"# mi355x\n(kernels = \{.*?\n\};)\n", fa, re.S)
    check(block_amd and "\n  l2_caches = 8;\n" in block_amd.group(1),
          f"the refit lost MI355X's L2s:\n{fa[-2000:]}")
    # A held-out fit keeps the shipped model's structure, none of its
    # values: MI355X's bf16 group states AMD's epilogue (out_eff), so the
    # fit of src-b's row alone (8192^2 x 4096 at 1,000 TFLOP/s, the peak
    # pinned there) starts from the datasheet defaults (3 us a kernel, 1 us
    # a tile) with an epilogue at the defaults' HBM efficiency, 0.9.
    # src-a's 8192^3 held out: 1,024 256x256 tiles on 256 CUs, 4 waves of
    # 2 x 256^2 x 8192 FLOP a CU at 1e15 / 256 FLOP/s (274.878 us) + 1 us,
    # the C tiles' 2 x 8192^2 bytes at 8,000 GB/s x 0.9 (18.641 us), 3 us:
    # 1,125.153 us (without the epilogue, as before, 1,106.512).
    two = os.path.join(d, "two.csv")
    with open(two, "w") as f:
        f.write("gpu,gpu_detail,dtype,out_dtype,op,batch,M,N,K,implementation,tflops,time_ms,"
                "metric2,value2,units2,source,section,notes\n")
        f.write("MI355X,x,bf16,bf16,gemm,1,8192,8192,8192,torch.mm,1000.0,,,,,src-a,t,n\n")
        f.write("MI355X,x,bf16,bf16,gemm,1,8192,8192,4096,torch.mm,1000.0,,,,,src-b,t,n\n")
    held = [r for r in csv.DictReader(run("kernels", "--loso", "--rows", two).stdout
                                      .split("\n\n")[0].splitlines()) if r["source"] == "src-a"]
    want = 3 + 4 * (2 * 256 ** 2 * 8192 * 256 / 1e15 * 1e6 + 1) + 2 * 8192 ** 2 / 7.2e12 * 1e6
    check(len(held) == 1 and abs(float(held[0]["loso_us"]) - want) <= 0.002,
          f"MI355X held out: {held}, not {want:.3f} us")
with open(os.path.join(SRC, "configs", "hw", "h100-dgx.cfg")) as f:
    base = f.read().split("# Kernel efficiency by shape")[0]
with tempfile.TemporaryDirectory() as d:
    hw = os.path.join(d, "h100-refit.cfg")
    with open(hw, "w") as f:
        f.write(base + block.group(1) + "\n")
    run("synth", "gpt-small", "--hw", hw)
    bad = os.path.join(d, "bad.cfg")
    with open(bad, "w") as f:
        f.write(base + "kernels = { gemm = { bf16 = { tile_eff = [0.9, 0.8, 0.0]; }; }; };\n")
    r = run("synth", "gpt-small", "--hw", bad, code=2)
    check("'kernels.gemm.bf16.tile_eff' must list 3 numbers in 0.01..1" in r.stderr and
          r.stderr.count("\n") == 1, r.stderr)
    with open(bad, "w") as f:
        f.write(base + "kernels = { gemm = { bf16 = { tflops = 2000.0; }; }; };\n")
    r = run("synth", "gpt-small", "--hw", bad, code=2)
    check("'kernels.gemm.bf16.tflops' must be a number in 0.001..989.4, not 2000" in r.stderr,
          r.stderr)
    with open(bad, "w") as f:
        f.write(base + 'kernels = {\n  gemm_tiles = "sm70";\n};\n')
    r = run("synth", "gpt-small", "--hw", bad, code=2)
    line = base.count("\n") + 2
    check(f"bad.cfg:{line}: 'kernels.gemm_tiles' must be \"sm80\", \"sm90\" or \"cdna\", not \"sm70\""
          in r.stderr and r.stderr.count("\n") == 1, r.stderr)
    with open(bad, "w") as f:
        f.write(base + 'kernels = {\n  gemm_schedule = "dynamic";\n};\n')
    r = run("synth", "gpt-small", "--hw", bad, code=2)
    check(f"bad.cfg:{line}: 'kernels.gemm_schedule' must be \"waves\" or \"stream-k\", not "
          f"\"dynamic\"" in r.stderr and r.stderr.count("\n") == 1, r.stderr)
    with open(bad, "w") as f:
        f.write(base + 'kernels = {\n  l2_caches = 0;\n};\n')
    r = run("synth", "gpt-small", "--hw", bad, code=2)
    check(f"bad.cfg:{line}: 'kernels.l2_caches' must be a whole number in 1..64, not 0"
          in r.stderr and r.stderr.count("\n") == 1, r.stderr)
    short = os.path.join(d, "short.csv")
    with open(os.path.join(DATA, "gemm.csv")) as f:
        head = f.readline()
    with open(short, "w") as f:
        f.write(head + "H100 SXM,x,bf16\n")
    r = run("kernels", short, code=2)
    check(r.stderr.startswith(f"prism: {short}:2: 3 fields, the header has"), r.stderr)
    # A group too small for its shape parameters takes its family's
    # best-measured dtype's: 20 bf16 rows (one source) fit all of them, the
    # 2 fp8 rows (another source) their peak alone, with bf16's tile and
    # kernel costs, tile factors and memory efficiency exactly.
    fam = os.path.join(d, "family.csv")
    with open(fam, "w") as f:
        f.write(head)
        shapes = [(m, n, k) for m in (256, 1024, 4096, 8192) for n in (512, 2048, 8192)
                  for k in (256, 4096)][:20]
        for m, n, k in shapes:
            t = 2 * m * n * k / 600e12 + 5e-6 + 3e-6 * (k <= 256)
            f.write(f"H100 SXM,x,bf16,bf16,gemm,1,{m},{n},{k},x,,{t * 1e3:.6f},,,,src-a,s,n\n")
        for m, n, k in ((4096, 8192, 8192), (1024, 4096, 4096)):
            t = 2 * m * n * k / 1100e12 + 6e-6
            f.write(f"H100 SXM,x,fp8,bf16,gemm,1,{m},{n},{k},x,,{t * 1e3:.6f},,,,src-b,s,n\n")
    fit = run("kernels", "--fit", fam).stdout
    grp = {dt: re.search(rf"^    {dt} = \{{ tflops = ([\d.]+); (.*)\}};$", fit, re.M)
           for dt in ("bf16", "fp8")}
    check(grp["bf16"] and grp["fp8"], f"no bf16/fp8 gemm lines in --fit:\n{fit}")
    # (isolated_us, what XLA's single calls add, is a timing's, not a shape
    # parameter: bf16 holds the profile's, no row here being XLA's)
    shape = {dt: re.sub(r"isolated_us = [\d.]+; ", "", grp[dt].group(2)) for dt in grp}
    check(shape["fp8"] == shape["bf16"], f"fp8 shape parameters are not bf16's:\n{fit}")
    check(grp["fp8"].group(2) != "tile_us = 1.000; overhead_us = 3.000; "
          "tile_eff = [0.850, 0.700, 0.500]; mem_eff = 0.850; ", f"defaults kept:\n{fit}")
    check(float(grp["fp8"].group(1)) > float(grp["bf16"].group(1)), fit)
    # Never above the measured maxima, and a sibling's shape parameters
    # (docs/MODEL.md): 20 B200 bf16 rows (src-a, made at an achievable
    # 1,500 TFLOP/s, 2 us a wave of 128x256 tiles and 4 us a kernel) fit
    # B200's group; one GB200 row
    # (src-b) of 8192^3 in 0.5 ms, 2,199.0 TFLOP/s, fits GB200's peak alone,
    # at most that rate (the datasheet's 2,500 would allow more, and with
    # B200's tile costs the shape needs more), with B200's kernel costs,
    # tile factors and memory efficiency exactly and its tile cost divided by
    # the clock ratio 2,500 / 2,250.
    sib = os.path.join(d, "sibling.csv")
    with open(sib, "w") as f:
        f.write(head)
        for m, n, k in shapes:
            waves = -(-(-(-m // 128)) * (-(-n // 256)) // 148)
            t = 2 * m * n * k / 1500e12 + 4e-6 + 2e-6 * waves
            f.write(f"B200 SXM,x,bf16,bf16,gemm,1,{m},{n},{k},x,,{t * 1e3:.6f},,,,src-a,s,n\n")
        f.write("GB200 SXM,x,bf16,bf16,gemm,1,8192,8192,8192,x,,0.5,,,,src-b,s,n\n")
    sfit = run("kernels", "--fit", sib).stdout
    pat = r"^    bf16 = \{ tflops = ([\d.]+); tile_us = ([\d.]+); ([^\n]*)\};$"
    b2 = re.search(r"# b200-dgx\n[^#]*?" + pat, sfit, re.M)
    gb = re.search(r"# gb200-nvl72\n[^#]*?" + pat, sfit, re.M)
    check(b2 and gb, f"no b200/gb200 bf16 groups in --fit:\n{sfit}")
    rate = 2 * 8192.0 ** 3 / 0.5e-3 / 1e12
    check(float(gb.group(1)) <= rate + 0.05, f"GB200 peak above its measured {rate:.1f}:\n{sfit}")
    check(float(gb.group(1)) >= 0.99 * rate, f"GB200 peak not at the cap:\n{sfit}")
    check(gb.group(3) == b2.group(3), f"GB200 shape parameters not B200's:\n{sfit}")
    check(abs(float(gb.group(2)) - float(b2.group(2)) * 2250 / 2500) <= 0.0015,
          f"GB200 tile cost not B200's at its clock:\n{sfit}")
    # (the fit above puts B200's tile cost near 0: the shipped profiles
    # carry the clock ratio on a real one, 0.501 us on B200)
    tiles = {}
    for prof in ("b200-dgx", "gb200-nvl72", "b300-hgx"):
        with open(os.path.join(SRC, "configs", "hw", prof + ".cfg")) as f:
            tiles[prof] = float(re.search(r"^    bf16 = \{ tflops = [\d.]+; tile_us = ([\d.]+);",
                                          f.read(), re.M).group(1))
    check(tiles["b200-dgx"] >= 0.1 and
          abs(tiles["gb200-nvl72"] - tiles["b200-dgx"] * 2250 / 2500) <= 0.0015 and
          abs(tiles["b300-hgx"] - tiles["b200-dgx"] * (2250 / 148) / (2250 / 160)) <= 0.0015,
          f"shipped tile costs not B200's at their clocks: {tiles}")
    # Leaving out a group's only source (--loso): what the profile would
    # ship without rows, its sibling's group fitted without that source,
    # the peak times the datasheets' ratio (2,500 / 2,250) and a tile's
    # cost at the clock.  With a B200 row of 8192^3 (src-a), GB200's row
    # held out runs B200's time of it less B200's kernel cost, times
    # 2,250 / 2,500, plus that cost (8192^3 is compute-bound on both: the
    # waves and their tiles alike, each at 1 / 1.111 of B200's time);
    # within 0.3 %, the held-out fit starting from the datasheet priors
    # where --fit starts from the shipped profile.  The datasheet defaults
    # (an achievable 0.80 x 2,500) would give 573 us.
    with open(sib, "a") as f:
        t = 2 * 8192 ** 3 / 1500e12 + 4e-6 + 2e-6 * -(-64 * 32 // 148)
        f.write(f"B200 SXM,x,bf16,bf16,gemm,1,8192,8192,8192,x,,{t * 1e3:.6f},,,,src-a,s,n\n")
    lout = run("kernels", "--fit", "--loso", "--rows", sib).stdout
    ov = float(re.search(r"# b200-dgx\n[^#]*?^    bf16 = \{ tflops = [\d.]+; tile_us = [\d.]+; "
                         r"overhead_us = ([\d.]+);", lout, re.M).group(1))
    lrows = {r["profile"]: r for r in csv.DictReader(lout.split("\n\n")[0].splitlines())
             if r["shape"].startswith("1x8192x8192x8192|")}
    want = ov + (float(lrows["b200-dgx"]["predicted_us"]) - ov) * 2250 / 2500
    check(abs(float(lrows["gb200-nvl72"]["loso_us"]) / want - 1) <= 0.003,
          f"GB200 held out: {lrows['gb200-nvl72']['loso_us']} us, not B200's at its clock, "
          f"{want:.3f}:\n{lout[-3000:]}")
    # GEMMs accumulating into their output (C += A B) are reported apart and
    # fit nothing: 20 fp8 rows of a DeepGEMM weight-gradient kernel (20: a
    # full fit of fp8's own, were they fitted) and 3 bf16 rows at
    # accumulate=True, all twice the time of the same shapes above, leave
    # every kernels group --fit prints as it was, and each is predicted as
    # the plain GEMM of its shape.
    acc = os.path.join(d, "accumulate.csv")
    with open(fam) as f, open(acc, "w") as g:
        g.write(f.read())
        for i, (m, n, k) in enumerate(shapes):
            t = 2 * (2 * m * n * k / 1100e12 + 6e-6)
            g.write(f"H100 SXM,x,fp8,fp32,gemm,1,{m},{n},{k},DeepGEMM wgrad,,{t * 1e3:.6f},,,,"
                    f"src-c,s,n\n")
            if i < 3:
                t = 2 * (2 * m * n * k / 600e12 + 5e-6 + 3e-6 * (k <= 256))
                g.write(f"H100 SXM,x,bf16,bf16,gemm,1,{m},{n},{k},\"TE general_gemm, "
                        f"accumulate=True\",,{t * 1e3:.6f},,,,src-d,s,n\n")
    out = run("kernels", "--fit", acc).stdout
    check(out[out.index("\n# "):] == fit[fit.index("\n# "):],
          f"accumulating rows moved the fit:\n{out}")
    for dt, nr in (("fp8", 20), ("bf16", 3)):
        check(re.search(rf"^h100-dgx\s+gemm \(accumulate\)\s+{dt}\s+{nr}\s+1\s", out, re.M),
              f"no {dt} accumulate row:\n{out}")
    pred = {}
    for line in run("kernels", "--rows", acc).stdout.split("\n\n")[0].splitlines()[1:]:
        x = line.split(",")
        pred.setdefault((x[2], x[4]), set()).add(x[6])
    check(all(len(pred[("bf16", f"1x{m}x{n}x{k}|0x0x0x0|0")]) == 1 for m, n, k in shapes[:3]),
          f"an accumulating row is not timed as its plain GEMM: {pred}")
    # An fp8 GEMM timed as a module under autocast (TransformerEngine's
    # te.Linear: its input's and weight's quantisation too) is reported
    # apart and fits nothing, as above: 20 such rows at twice the time
    # (two at the plain fp8 rows' shapes) leave the fit as it was, each
    # predicted as the plain GEMM of its shape; and a grouped GEMM's best
    # over problems it does not state (FBGEMM PR #4821's) is left out, not
    # placed as a best square.
    mod = os.path.join(d, "module.csv")
    fp8_shapes = [(4096, 8192, 8192), (1024, 4096, 4096)]
    with open(fam) as f, open(mod, "w") as g:
        g.write(f.read())
        for m, n, k in shapes[:18] + fp8_shapes:
            t = 2 * (2 * m * n * k / 1100e12 + 6e-6)
            g.write(f"H100 SXM,x,fp8 (TE autocast),x,gemm (TE.Linear forward),1,{m},{n},{k},"
                    f"TransformerEngine te.Linear under fp8 autocast,,{t * 1e3:.6f},,,,"
                    f"src-e,s,n\n")
        g.write("H100 SXM,x,mxfp8,x,grouped_gemm,not stated,not stated,not stated,not stated,"
                "FBGEMM grouped GEMM,1963,,,,,src-f,s,n\n")
    out = run("kernels", "--fit", mod).stdout
    check(out[out.index("\n# "):] == fit[fit.index("\n# "):],
          f"module rows moved the fit:\n{out}")
    check(re.search(r"^h100-dgx\s+gemm \(module\)\s+fp8\s+20\s+1\s", out, re.M),
          f"no fp8 module row:\n{out}")
    check("1 grouped GEMM without a shape" in out, f"the shapeless grouped row placed:\n{out}")
    plain = {}
    for line in run("kernels", "--rows", mod).stdout.split("\n\n")[0].splitlines()[1:]:
        x = line.split(",")
        plain.setdefault((x[2], x[4]), []).append(x[6])
    check(all(len(plain[("fp8", f"1x{m}x{n}x{k}|0x0x0x0|0")]) == 2 and
              len(set(plain[("fp8", f"1x{m}x{n}x{k}|0x0x0x0|0")])) == 1 for m, n, k in fp8_shapes),
          f"a module row is not timed as its plain GEMM: {plain}")
    # An attention fit whose rows are all at head dim 128 measures neither
    # head-dim factor: both take their priors (0.75, 0.9), not where the
    # simplex left them (the profile's 0.776 and 0.764 here).
    att = os.path.join(d, "attention128.csv")
    with open(os.path.join(DATA, "attention.csv")) as f:
        ahead = f.readline()
    with open(att, "w") as f:
        f.write(ahead)
        for ps in ("fwd", "bwd"):
            for seq in (1024, 2048, 4096, 8192, 16384, 32768):
                for causal in ("True", "False"):
                    fl = 4 * 32 * seq * seq * 128 * (2.5 if ps == "bwd" else 1)
                    fl /= 2 if causal == "True" else 1
                    t = fl / (600e12 if ps == "fwd" else 450e12) + 20e-6
                    f.write(f"H200,x,cuDNN,bf16,{ps},{causal},1,{seq},{seq},32,32,128,128,,"
                            f"{t * 1e3:.6f},x,src,s,n\n")
    fit = run("kernels", "--fit", att).stdout
    m = re.search(r"^    bf16 = \{ fwd_tflops = .*; d64 = ([\d.]+); d256 = ([\d.]+); \};$", fit, re.M)
    check(m and (m.group(1), m.group(2)) == ("0.750", "0.900"),
          f"head-dim factors not the priors:\n{fit}")
    # A device summary (no shape: the best TFLOP/s over square sizes) is
    # predicted over the sizes its row names: over {4096} alone it is the
    # 4096^3 GEMM, over {256} 4096^3 at 256^3's rate.
    summ = os.path.join(d, "summary.csv")
    with open(summ, "w") as f:
        f.write(head)
        for mnk, note in ((4096, "explicit"), (256, "explicit"), (0, "square n in {4096}"),
                          (0, "square n in {256}")):
            shape = f"{mnk},{mnk},{mnk}" if mnk else ",,"
            f.write(f"A100 SXM,x,bf16,bf16,gemm,1,{shape},x,200,,,,,src,s,{note}\n")
    rows = [x for x in run("kernels", "--rows", summ).stdout.splitlines()
            if x.startswith("a100-80gb-dgx,gemm,")]
    pred = [float(line.split(",")[6]) for line in rows]
    check(len(pred) == 4 and pred[2] == pred[0], f"{{4096}} is not the 4096^3 GEMM: {rows}")
    check(abs(pred[3] / (pred[1] * 4096) - 1) < 1e-3, f"{{256}} is not 256^3's rate: {rows}")
    # Counts out of range are rows left out with the reason, never a hang
    # or undefined behaviour: device summaries over square sizes "up to
    # inf" and "2^8..2^1e300" (the loop over their sizes ran for ever), a
    # GEMM of 1e300 rows and a batch of 2^40; the one plain row is kept.
    hostile = os.path.join(d, "hostile.csv")
    with open(hostile, "w") as f:
        f.write(head)
        f.write("A100 SXM,x,bf16,bf16,gemm,1,,,,x,200,,,,,src,s,square up to inf\n")
        f.write("A100 SXM,x,bf16,bf16,gemm,1,,,,x,200,,,,,src,s,square 2^8..2^1e300\n")
        f.write("A100 SXM,x,bf16,bf16,gemm,1,1e300,4096,4096,x,,1.0,,,,src,s,n\n")
        f.write(f"A100 SXM,x,bf16,bf16,gemm,{2**40},4096,4096,4096,x,,1.0,,,,src,s,n\n")
        f.write("A100 SXM,x,bf16,bf16,gemm,1,4096,4096,4096,x,,1.0,,,,src,s,n\n")
    r = subprocess.run([PRISM, "kernels", hostile], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and "1 rows placed, 4 left out: 4 a dimension over 2^32, or bytes "
          "over 2^50" in r.stdout and "no shape" not in r.stdout,
          f"hostile counts: {r.returncode} {r.stdout[-300:]!r} {r.stderr!r}")
r = run("kernels", "/nonexistent/k.csv", code=2)
check("/nonexistent/k.csv: no such file" in r.stderr, r.stderr)

# A trace's GEMM shapes are rows too, the trace their source and its GPU
# their profile: retime_2024.json's one aten::mm of [2048, 1024] x [1024,
# 3072] ran one 60 us kernel on an H100 (read here from the JSON).
tr = os.path.join(SRC, "tests", "data", "retime_2024.json")
ev = json.load(open(tr))["traceEvents"]
mm = [e for e in ev if e.get("cat") == "cpu_op" and e["name"] == "aten::mm"]
kern = [e for e in ev if e.get("cat") == "kernel" and "gemm" in e["name"]]
check(len(mm) == 1 and len(kern) == 1, f"{mm} {kern}")
(a, w) = mm[0]["args"]["Input Dims"]
rows = [x for x in run("kernels", "--rows", tr, DATA).stdout.splitlines()
        if f'"{tr}"' in x]
check(len(rows) == 1 and rows[0].startswith(
    f'h100-dgx,gemm,bf16,"{tr}",1x{a[0]}x{w[1]}x{a[1]}|0x0x0x0|0,{kern[0]["dur"]:.3f},'),
    f"trace rows: {rows}")
out = run("kernels", tr, DATA).stdout
check(re.search(r"^h100-dgx\s+gemm\s+bf16\s+18\s+3\s", out, re.M), out)
# Nothing to predict, or nothing to predict it with: one line, status 2.
for name, msg in (("stealgrad_2024.json", "no GEMM or attention with shapes (profile with torch.profiler's "
                   "record_shapes=True)"),
                  ("alltoall_2023.json", "the trace names no GPU (deviceProperties), so no "
                   "hardware profile"),
                  ("mi250x_2025.json", "no hardware profile for the trace's GPU 'AMD Instinct "
                   "MI250X' (configs/hw)")):
    path = os.path.join(SRC, "tests", "data", name)
    r = run("kernels", path, code=2)
    check(r.stderr == f"prism: {path}: {msg}\n", r.stderr)

shared = os.path.join(SRC, "..", "shared", "kernels")
if os.path.isdir(shared):
    out = run("kernels", shared).stdout
    for prof, dt in (("h100-dgx", "bf16"), ("a100-80gb-dgx", "bf16"), ("h800-hgx", "fp8")):
        m = re.search(rf"^{prof}\s+gemm\s+{dt}\s+\d+\s+\d+\s+([\d.]+)%", out, re.M)
        check(m and float(m.group(1)) <= 10, f"{prof} {dt} GEMMs over 10 %:\n{out}")
    # Left one source out: H100's bf16 GEMMs within the goal too, and each
    # of H100's fp8 sources but one.  A100 bf16 is not: its two rows, one a
    # source, disagree by 13 %.  Nor DeepGEMM issue #136's twelve H100 fp8
    # decode shapes (M 64 and 128), 15 % too fast left out: they are shapes
    # of DeepGEMM's README, which times them on the same die (H800) 8-57 %
    # faster, while DeepGEMM's later tests/test_core.py times them on H800
    # as #136 does on H100 (PR #168): a difference of benchmark, not of
    # shape, that no fit on the README's rows can predict.
    rows_txt, out = run("kernels", "--loso", "--rows", shared).stdout.split("\n\n", 1)
    m = re.search(r"^h100-dgx\s+gemm\s+bf16\s+\d+\s+\d+\s+[\d.]+% /\s+[\d.]+%\s+([\d.]+)%",
                  out, re.M)
    check(m and float(m.group(1)) <= 10, f"h100-dgx bf16 GEMMs left out over 10 %:\n{out}")
    fp8 = {}
    for r in csv.DictReader(rows_txt.splitlines()):
        if (r["profile"], r["class"], r["dtype"]) == ("h100-dgx", "gemm", "fp8") and r["loso_us"]:
            e = abs(float(r["loso_us"]) / float(r["measured_us"]) - 1)
            fp8.setdefault(r["source"], []).append(e)
    kept = {s: sum(e) / len(e) for s, e in fp8.items() if "DeepGEMM/issues/136" not in s}
    check(len(fp8) >= 2 and kept and all(e <= 0.10 for e in kept.values()),
          f"h100-dgx fp8 GEMMs left out over 10 %: {kept}")
    # The shipped profiles hold what --fit prints (a fixed point of the
    # command, to within the simplex's drift on a flat direction): every
    # number of every kernels group a profile sets.
    fit = run("kernels", "--fit", shared).stdout

    def groups(txt):
        out = {}
        for sec in ("gemm", "attention", "memory"):
            m = re.search(rf"^  {sec} = \{{\n(.*?)^  \}};", txt, re.M | re.S)
            for line in (m.group(1).splitlines() if m else []):
                g = re.match(r"\s+(\w+) = \{ (.*?) ?\};", line)
                if g:
                    for k, v in re.findall(r"(\w+) = (\[[^\]]*\]|[^;]+);", g.group(2)):
                        out[(sec, g.group(1), k)] = [float(x) for x in re.findall(r"[\d.]+", v)]
        return out

    fitted = dict(re.findall(r"# (\S+)\n(kernels = \{.*?\n\};)", fit, re.S))
    check(len(fitted) >= 7, f"--fit printed {sorted(fitted)}")
    # GH100's fp8 group is cuBLASLt's, fitted on our sweep's rows with
    # the shared ones (docs/MODEL.md, "fp8 GEMMs by library"), and its
    # bf16 fixed cost on the device is our sweep's CUDA-graph rows' (its
    # isolated_us the rest of XLA's intercept; "A GEMM's fixed cost on
    # the device"): those groups against the fit on both (the shared rows
    # alone hold a shipped split, whatever it is: 2.242 / 2.311 us stayed
    # shipped after stream-K's partial sums made the fit on both 2.123 /
    # 2.430, session 27).
    sweep = os.path.join(SRC, "tests", "data", "gpu", "kernels.csv")
    fit2 = run("kernels", "--fit", shared, sweep).stdout
    fitted2 = dict(re.findall(r"# (\S+)\n(kernels = \{.*?\n\};)", fit2, re.S))
    gh100 = ("h100-dgx", "h800-hgx", "h200-dgx")
    for prof, blk in fitted.items():
        with open(os.path.join(SRC, "configs", "hw", prof + ".cfg")) as f:
            cfg = f.read()
        want = groups(blk)
        want2 = groups(fitted2.get(prof, ""))
        for key, vals in groups(cfg[cfg.index("\nkernels = {"):]).items():
            got = (want2 if prof in gh100 and key[:2] in (("gemm", "fp8"), ("gemm", "bf16"))
                   else want).get(key)
            check(got and len(got) == len(vals) and
                  all(abs(a - b) <= 0.01 * max(abs(a), abs(b)) + 0.002 for a, b in zip(vals, got)),
                  f"{prof} {key}: the profile has {vals}, --fit prints {got}")
    print("kernels: fixtures and shipped parameters ok (../shared/kernels: goal met)")
else:
    print("kernels: fixtures ok (../shared/kernels absent: the goal not checked)")
