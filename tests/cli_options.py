#!/usr/bin/env python3
"""Layout options shared by synth and whatif: --gbs gives the microbatch
count, conflicts and remainders are one-line errors (exit 2); model files
with grouped-query attention and SwiGLU load, and bad ones name the file,
line and setting; whatif --layers on a trace without a run description
repeats the layers found, and its refusals are exact; ingest --unexplained
lists the longest waits of a hand-made trace.

usage: cli_options.py PRISM
"""
import json
import re
import os
import subprocess
import sys
import tempfile

from sweeptest import check, prism

PRISM = sys.argv[1]


def run(*args, code=0):
    return prism(PRISM, *args, code=code)


base = ["synth", "gpt-small", "--hw", "h100-dgx", "--dp", "4", "--mbs", "2"]
p = json.loads(run(*base, "--gbs", "64", "--json").stdout)
check(p["microbatches"] == 8 and p["global_batch"] == 64, f"--gbs 64: {p}")
r = run(*base, "--gbs", "63", code=2)
check(r.stderr == "prism: --gbs 63 is not a multiple of mbs 2 x dp 4\n", r.stderr)
r = run(*base, "--gbs", "64", "--microbatches", "8", code=2)
check(r.stderr == "prism: give --gbs or --microbatches, not both\n", r.stderr)
# Llama 3 8B: 8 key-value heads must divide by tp.
p = json.loads(run("synth", "llama3-8b", "--hw", "h100-dgx", "--tp", "8", "--json").stdout)
check(p["tasks"] > 0, f"llama3-8b at tp 8: {p}")
with tempfile.TemporaryDirectory() as d:
    good = ('name = "m";\nlayers = 2;\nhidden = 1024;\nheads = 16;\nkv_heads = 4;\n'
            'activation = "swiglu";\nseq = 128;\nvocab = 1000;\n')
    cases = [
        ('kv_heads = 4;', 'kv_heads = 5;', 5, "'heads' (16) must be divisible by 'kv_heads' (5)"),
        ('activation = "swiglu";', 'activation = "relu";', 6,
         "'activation': expected \"gelu\" or \"swiglu\", not 'relu'"),
    ]
    # Every number has a range: absurd but representable values are refused.
    cases += [
        ('layers = 2;', 'layers = 1e9;', 2, "'layers' must be a whole number in 1..65536, "
         "not 1000000000"),
        ('layers = 2;', 'layers = 0;', 2, "'layers' must be a whole number in 1..65536, not 0"),
        ('seq = 128;', 'seq = 2.5;', 7, "'seq' must be a whole number in 1..4194304, not 2.5"),
        ('vocab = 1000;', 'vocab = 1000; ffn = 8388608;', 8,
         "'ffn' must be a whole number in 1..4194304, not 8388608"),
        ('kv_heads = 4;', 'kv_heads = 0;', 5, "'kv_heads' must be a whole number in 1..4096, "
         "not 0"),
    ]
    for old, new, line, msg in cases:
        path = os.path.join(d, "m.cfg")
        with open(path, "w") as f:
            f.write(good.replace(old, new))
        r = run("synth", path, "--hw", "h100-dgx", code=2)
        want = f"prism: {path}:{line}: {msg}\n"
        check(r.stderr == want, f"{new}: {r.stderr!r}, want {want!r}")
    path = os.path.join(d, "m.cfg")
    with open(path, "w") as f:
        f.write(good)
    # Fewer key-value heads than TP ranks: each rank holds one, replicated
    # (Megatron-LM).  tp 8 of 16 heads (head dim 64), 4 key-value heads:
    # the QKV GEMM is (16/8 + 2 x 1) x 64 = 256 wide on a rank (a split
    # would give (16 + 8) x 64 / 8 = 192); 128 tokens a microbatch.
    t = os.path.join(d, "kv.json")
    run("synth", path, "--hw", "h100-dgx", "--tp", "8", "--steps", "1", "-o", t)
    with open(t) as f:
        ev = json.load(f)["traceEvents"]
    dims = {json.dumps(e["args"]["Input Dims"]) for e in ev
            if e.get("cat") == "cpu_op" and e.get("name") == "aten::mm"}
    check("[[128, 1024], [1024, 256]]" in dims and "[[128, 1024], [1024, 192]]" not in dims,
          f"no 256-wide QKV GEMM (128 tokens) among {sorted(dims)}")
    # Neither dividing the other: refused.  24 heads (kv 8) on tp 12.
    with open(path, "w") as f:
        f.write(good.replace("hidden = 1024;", "hidden = 1536;")
                .replace("heads = 16;", "heads = 24;").replace("kv_heads = 4;", "kv_heads = 8;"))
    r = run("synth", path, "--hw", "gb200-nvl72", "--tp", "12", code=2)
    check("kv_heads 8 and tp 12: one must divide the other" in r.stderr, r.stderr)

# whatif on a trace without a run description (tests/data/layers_2024.json:
# three layers inferred): layers repeated or dropped, other edits refused
# with what is missing.
src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
plain = os.path.join(src, "tests", "data", "layers_2024.json")
w = json.loads(run("whatif", plain, "--layers", "9", "--json").stdout)
check(w["layers_from"] == 3 and w["layers_to"] == 9, f"--layers 9: {w}")
check(w["method"] == "graph edit", f"--layers 9: {w['method']}")
# The stream is saturated: 2.070 ms plus 2 x 18 kernels of 100 us; one
# layer more or less is 6 kernels (forward and backward).
check(abs(w["iteration_s"] - 0.00567) < 1e-9, f"--layers 9: {w['iteration_s']}")
w = json.loads(run("whatif", plain, "--layers", "4", "--json").stdout)
check(abs(w["iteration_s"] - 0.00267) < 1e-9, f"--layers 4: {w['iteration_s']}")
w = json.loads(run("whatif", plain, "--layers", "2", "--json").stdout)
check(abs(w["iteration_s"] - 0.00147) < 1e-9, f"--layers 2: {w['iteration_s']}")
r = run("whatif", plain, "--hidden", "4", code=2)
check(r.stderr == f"prism: {plain}: the trace has no run description (prism::model#): hidden "
      "size: a graph edit changes layers, microbatches, dp, pipeline stages (from one), the "
      "hardware, and with a run description the hidden size and TP (from TP > 1)\n", r.stderr)
r = run("whatif", plain, "--no-infer-layers", "--layers", "6", code=2)
check(r.stderr == f"prism: {plain}: the trace has no run description (prism::model#): layers: "
      "no layers found in the trace (no prism::layer ranges, no nn.Module "
      "...Layer_N/...Block_N names, no repeated op blocks)\n",
      r.stderr)
r = run("whatif", plain, "--dp", "8", code=2)
check("no parameter sizes" in r.stderr, r.stderr)
# Layers from module names (tests/data/modules_2024.json); without its
# ProfilerStep (as vLLM's trace) they are found but no step's tasks can be
# repeated: refused, where before it answered +0.0 %.
mods = os.path.join(src, "tests", "data", "modules_2024.json")
w = json.loads(run("whatif", mods, "--layers", "6", "--json").stdout)
check(w["layers_from"] == 3 and w["method"] == "graph edit", f"modules --layers 6: {w}")
with tempfile.TemporaryDirectory() as d:
    with open(mods) as f:
        t = json.load(f)
    t["traceEvents"] = [e for e in t["traceEvents"] if not e["name"].startswith("ProfilerStep")]
    nosteps = os.path.join(d, "nosteps.json")
    with open(nosteps, "w") as f:
        json.dump(t, f)
    r = run("whatif", nosteps, "--layers", "6", code=2)
    check(r.stderr == f"prism: {nosteps}: the trace has no run description (prism::model#): "
          "layers: the trace has no steps (ProfilerStep#N ranges) whose tasks an edit could "
          "repeat or cut\n", r.stderr)
# --base-step-ms: the host-bound hand-made trace (1 ms steps of host work
# and idle host around a 10 us kernel) replays at the step given, its host
# scaled by step / 1 ms (by hand: every host task and gap of both steps,
# the last step's idle tail too, scales; the kernel is 10 us); a step
# shorter than its GPU side, a model base and a bad number are refused.
hb = os.path.join(os.path.dirname(__file__), "data", "hostbound_2024.json")
for ms in (0.6, 0.02):
    w = json.loads(run("whatif", hb, "--base-step-ms", str(ms), "--json").stdout)
    check(abs(w["base_iteration_s"] / (ms * 1e-3) - 1) <= 1e-3 and w["base_traced_s"] == 1e-3 and
          abs(w["base_host_scale"] / ms - 1) <= 2e-3 and
          abs(w["iteration_s"] / (ms * 1e-3) - 1) <= 1e-3, f"{ms}: {w}")
w = json.loads(run("whatif", hb, "--json").stdout)
check(w["base_host_scale"] == 1 and w["base_iteration_s"] == 1e-3, f"{w}")
r = run("whatif", hb, "--base-step-ms", "0.005", code=2)
check(r.stderr == "prism: --base-step-ms 0.005: the base's replay takes 0.010 ms with its "
      "host 100 x as fast (1.000 ms as traced): the step given is shorter than its GPU side\n",
      r.stderr)
r = run("whatif", "gpt-small", "--hw", "h100-dgx", "--base-step-ms", "5", code=2)
check(r.stderr == "prism: --base-step-ms: the base is a model, whose host is synthesised; it "
      "applies to a trace\n", r.stderr)
r = run("whatif", hb, "--base-step-ms", "abc", code=2)
check(r.stderr == "prism: --base-step-ms 'abc': expected a number in 0.001..1e+09\n", r.stderr)
print("layout options: --gbs, its errors, GQA and SwiGLU model files, whatif --layers on a "
      "plain trace, --base-step-ms")

# synth --hw FILE (issue 19: the description recorded hw=STEM, which no
# other folder finds): it records the file, relative to the trace's folder
# when inside it, so a base re-loads from anywhere, and with the folder
# moved.
with tempfile.TemporaryDirectory() as d:
    hw_src = os.path.join(src, "configs", "hw", "h100-dgx.cfg")
    job = os.path.join(d, "job")
    os.mkdir(job)
    with open(hw_src) as f, open(os.path.join(job, "mine.cfg"), "w") as g:
        g.write(f.read())
    run("synth", "llama3-8b", "--hw", os.path.join(job, "mine.cfg"), "--layers", "2",
        "--seq", "1024", "--zero", "1", "--dp", "2", "-o", os.path.join(job, "run.json"))
    with open(os.path.join(job, "run.json")) as f:
        text = f.read()
    check(";hw=mine.cfg" in text, "synth --hw FILE: hw=mine.cfg not recorded")
    # The whole description, not cut at hw= (the fields after it were lost:
    # a Llama read back as tied, with learned positions).
    desc = re.search(r'"(prism::model#[^"]*)"', text).group(1)
    check(desc.endswith(";hw=mine.cfg;untied=1;rope=1;shard=0;prefetch=1;bucket_mb=0;"
                        "overlap_grad=1;overlap_param=0;tp_overlap=0;pp_overlap=1"),
          f"synth --hw FILE: the description after hw=: {desc}")
    moved = os.path.join(d, "elsewhere")
    os.rename(job, moved)
    w = json.loads(subprocess.run([PRISM, "whatif", os.path.join(moved, "run.json"), "--layers",
                                   "16", "--json"], capture_output=True, text=True,
                                  cwd="/", check=True).stdout)
    check(w["hw"] == "DGX H100", f"synth --hw FILE, re-loaded: {w['hw']}")

# ingest --unexplained: golden_2023.json worked by hand with a 5 us cap:
# k_mm was launched at 10 us and began at 25 us (15 us after the call's
# start), k_loss 12 us after its launch, k_bwd 10 us after its launch.
golden = os.path.join(src, "tests", "data", "golden_2023.json")
out = run("ingest", "--unexplained", "2", "--lag-cap", "5", golden).stdout
tail = out[out.index("tasks that waited longest"):].splitlines()
want = ["tasks that waited longest after their last dependency, over the 5 us lag cap",
        "(traced start from the job's start, wait, task; then the dependency):",
        "       0.025 ms  waited      15.0 us  rank 0 stream 7  k_mm",
        "                             after thread 1  cudaLaunchKernel",
        "       0.192 ms  waited      12.0 us  rank 0 stream 7  k_loss",
        "                             after thread 1  cudaLaunchKernel"]
check(tail == want, f"--unexplained: {tail}")
# Numbers no option can mean: NaN, beyond a second of host time.
for args, msg in [
    (["ingest", golden, "--lag-cap", "nan"], "--lag-cap 'nan': expected a number of "
     "microseconds >= 0"),
    (["ingest", golden, "--lag-cap", "1e308"], "--lag-cap '1e308': expected a number of "
     "microseconds >= 0"),
    (["synth", "gpt-small", "--hw", "h100-dgx", "--host-us", "1e308,5"],
     "--host-us '1e308,5': expected OP,LAUNCH in us, each in 0..1e6"),
    (["synth", "gpt-small", "--hw", "h100-dgx", "--host-us", "10,nan"],
     "--host-us '10,nan': expected OP,LAUNCH in us, each in 0..1e6"),
]:
    r = run(*args, code=2)
    check(r.stderr == f"prism: {msg}\n", f"{' '.join(args)}: {r.stderr!r}")
r = run("ingest", "--unexplained", "0", golden, code=2)
check(r.stderr == "prism: --unexplained '0': expected a whole number in 1..100000\n", r.stderr)
r = run("ingest", "--unexplained", "2", "--json", golden, code=2)
check(r.stderr == "prism: --unexplained lists in text; give it without --json\n", r.stderr)

# calibrate with nothing to fit says why, not an empty table: the
# host-bound trace's two GEMMs are too few for a class; without its ops'
# Input Dims no kernel has a size, and the line says how to record them.
NONE = ("(none): no class has 3 kernels with a size; 0 of the trace's 2 GPU tasks\n"
        "have one (FLOPs or bytes, from the shapes their op records)")
out = run("calibrate", hb).stdout
check(out.count("(none): ") == 1 and "(none): no class has 3 kernels with a size; " in out and
      "record_shapes" not in out, out)
with open(hb) as f:
    t = json.load(f)
for e in t["traceEvents"]:
    e.get("args", {}).pop("Input Dims", None)
with tempfile.TemporaryDirectory() as d:
    ns = os.path.join(d, "noshapes.json")
    with open(ns, "w") as f:
        json.dump(t, f)
    out = run("calibrate", ns).stdout
    check(NONE + ": its ops record no\nshapes (profile with torch.profiler's "
          "record_shapes=True)\n" in out, out)
print("calibrate: nothing to fit is said, with the shapes' hint")
