#!/usr/bin/env python3
"""prism describe (issue 36): a run description attached to a user's own
trace, on the hand-made traces of tests/data (gen_issue36.py):
described_2025.json (one GPU) and described_ddp_2025.rank0/1.json (two
ranks under DDP), whose gradients' shapes add up to tests/data/tiny3.cfg's
2792 parameters in 3 layers.

- the copy is the trace with one range first (every other event as it
  was), replayed as the trace is; a .gz output is compressed;
- the knobs a plain trace refuses (tp, hidden, zero, recompute, ...) run
  on the described copy (exit 0, rebuilt), the graph edits stay graph
  edits, and a no-op is 0.0 %;
- search takes the copy as its base (TP, ZeRO candidates rebuilt);
- a description the trace contradicts is refused (exit 2) naming both
  sides: its world size, layers, gradient group, microbatches, parameters;
- --model takes a Hugging Face config.json and Megatron-LM arguments,
  --megatron-args the layout; dp and microbatches not given come from
  the trace.

usage: describe_cli.py PRISM SRC
"""
import gzip
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

from clitest import check

PRISM, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "tests", "data")
ONE = os.path.join(DATA, "described_2025.json")
DDP = [os.path.join(DATA, f"described_ddp_2025.rank{r}.json") for r in (0, 1)]
TINY = os.path.join(DATA, "tiny3.cfg")


def run(*args, code=0):
    r = subprocess.run([PRISM, *args], capture_output=True, text=True)
    check(r.returncode == code,
          f"prism {' '.join(args)}: exit {r.returncode}, want {code}\n{r.stdout}{r.stderr}")
    return r


def whatif(base, *args):
    return json.loads(run("whatif", *base, *args, "--json").stdout)


def refused(args, why):
    r = run("describe", *args, code=2)
    check(why in r.stderr and "(--no-check writes it all the same)" in r.stderr, r.stderr)


EDITS = {  # knob -> method on the described copy
    ("--tp", "2"): "rebuilt", ("--hidden", "16"): "rebuilt", ("--heads", "4"): "rebuilt",
    ("--zero", "1"): "rebuilt", ("--recompute", "full"): "rebuilt", ("--seq", "8"): "rebuilt",
    ("--mbs", "2"): "rebuilt", ("--sp", "--tp", "2"): "rebuilt",
    ("--layers", "6"): "graph edit", ("--dp", "4"): "graph edit",
}

with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "one.json")
    r = run("describe", ONE, "--model", TINY, "-o", out)
    check(r.stdout.startswith(f"{out}: name=tiny3;layers=3;hidden=8;heads=2;") and
          ";dp=1;" in r.stdout and ";microbatches=1;" in r.stdout and ";hw=h100-dgx;" in r.stdout,
          r.stdout)
    # The copy: the description range first, the rest as it was.
    with open(ONE) as f:
        orig = json.load(f)
    with open(out) as f:
        cp = json.load(f)
    first = cp["traceEvents"][0]
    check(first["name"] == "prism::model#" + r.stdout.split(": ", 1)[1].strip() and
          first["cat"] == "user_annotation" and first["dur"] == 0 and
          (first["pid"], first["tid"], first["ts"]) == (1, 1, 0), str(first))
    check(cp["traceEvents"][1:] == orig["traceEvents"] and
          {k: v for k, v in cp.items() if k != "traceEvents"} ==
          {k: v for k, v in orig.items() if k != "traceEvents"}, "the copy differs")
    # Replayed as the trace is: the range adds no work.
    a, b = whatif([ONE]), whatif([out])
    check(a["iteration_s"] == b["iteration_s"] == 0.00207 and b["method"] == "replay", f"{a} {b}")

    # Every knob: refused on the plain trace, run on the copy; the edits a
    # plain trace already makes stay graph edits.
    for args, method in EDITS.items():
        if method == "rebuilt":
            r = run("whatif", ONE, *args, code=2)
            check("the trace has no run description (prism::model#)" in r.stderr, r.stderr)
        w = whatif([out], *args)
        check(w["method"] == method and
              w["base_method"] == ("rebuilt" if method == "rebuilt" else "replay"), f"{args}: {w}")
    # No-ops: 0.0 % by the candidate's own method (ZeRO-1 on dp 1 is
    # rebuilt, and so is the base it is compared with).
    for args in ([], ["--zero", "1"], ["--dp", "1"], ["--layers", "3"]):
        w = whatif([out], *args)
        check(w["speedup"] == 1, f"{args}: {w}")
        text = run("whatif", out, *args).stdout
        check(f"change     +0.0 % iteration time against the base ({w['method']})" in text, text)

    # search reads the copy as a base too: TP and ZeRO candidates that the
    # plain trace leaves invalid are rebuilt.  The plain trace cannot say
    # what a global batch in sequences is (its one microbatch's size is
    # unknown): its sweep leaves global_batch out and keeps the trace's own
    # (1 microbatch x dp 1), which 2 data-parallel ranks cannot split.
    for base, want in ((ONE, None),
                       (out, [(1, 0, "graph edit", "simulated"), (1, 1, "rebuilt", "simulated"),
                              (2, 0, "rebuilt", "simulated"), (2, 1, "rebuilt", "simulated")])):
        sw, db = os.path.join(d, "sw.cfg"), os.path.join(d, "sw.db")
        with open(sw, "w") as f:
            f.write(f'name = "d";\nbase = "{base}";\nhw = "h100-dgx";\ngpus = [2];\n' +
                    ('global_batch = 2;\n' if base == out else '') +
                    'space = {\n  tp = [1, 2];\n  zero = [0, 1];\n};\n')
        if os.path.exists(db):
            os.remove(db)
        # Exhaustive: how each is made, whatever screening would keep.
        r = run("search", sw, "--db", db, "--exhaustive", code=2 if base == ONE else 0)
        if base == ONE:
            check(r.stderr.endswith("no layout is possible with these GPU counts (4 candidates, "
                                    "all rejected; the first: the trace's global batch (1 "
                                    "microbatches x dp 1) does not divide by dp 2 x mbs 1)\n"),
                  r.stderr)
            continue
        with sqlite3.connect(db) as c:
            got = c.execute("select tp, zero, method, status from candidate "
                            "order by tp, zero").fetchall()
        check(got == want, f"search {base}: {got}")

    # Compressed output, read back as any trace.
    gz = os.path.join(d, "one.json.gz")
    run("describe", ONE, "--model", TINY, "-o", gz)
    with gzip.open(gz, "rt") as f:
        check(json.load(f)["traceEvents"][0]["name"] == first["name"], "gz copy")
    check(whatif([gz], "--tp", "2")["method"] == "rebuilt", "gz whatif")

    # Two ranks under DDP: dp 2 from the world size, one file per rank.
    ddp = os.path.join(d, "ddp.json")
    r = run("describe", *DDP, "--model", TINY, "-o", ddp)
    outs = [os.path.join(d, f"ddp.rank{k}.json") for k in (0, 1)]
    check(r.stdout.count(";dp=2;") == 2 and all(os.path.exists(p) for p in outs), r.stdout)
    for args, method in ((("--tp", "2"), "rebuilt"), (("--zero", "1"), "rebuilt"),
                         (("--hidden", "16"), "rebuilt"), (("--dp", "4"), "graph edit")):
        if method == "rebuilt":
            run("whatif", *DDP, *args, code=2)
        w = whatif(outs, *args)
        check(w["method"] == method and "dp 2 (gradient collectives on group" in w["base"],
              f"{args}: {w}")
    check(whatif(outs)["speedup"] == 1 and whatif(outs, "--dp", "2")["speedup"] == 1, "ddp no-op")

    # The layout as Megatron-LM arguments, and the model too: dp from the
    # trace, the microbatches from the global batch (2 / (1 x 2)).
    args = os.path.join(d, "tiny.sh")
    with open(args, "w") as f:
        f.write("--num-layers 3 --hidden-size 8 --num-attention-heads 2 --ffn-hidden-size 32 "
                "--seq-length 4 --max-position-embeddings 4 --vocab-size 16 "
                "--position-embedding-type learned_absolute --micro-batch-size 1 "
                "--global-batch-size 2 --bf16\n")
    r = run("describe", *DDP, "--model", args, "--megatron-args", args, "-o", ddp)
    check(r.stdout.count(";dp=2;") == 2 and ";microbatches=1;" in r.stdout and
          ";dtype=bf16;" in r.stdout, r.stdout)

    # Contradictions: exit 2, both sides named, nothing written.
    bad = os.path.join(d, "bad.json")
    refused([ONE, "--model", TINY, "--dp", "2", "-o", bad],
            "the description's tp 1 x pp 1 x cp 1 x dp 2 = 2 GPUs, but the trace ran on 1 "
            "(distributedInfo's world size)")
    tp2 = os.path.join(d, "tp2.sh")
    with open(tp2, "w") as f:
        f.write("--tensor-model-parallel-size 2\n")
    refused([ONE, "--model", TINY, "--megatron-args", tp2, "-o", bad],
            "tp 2 x pp 1 x cp 1 x dp 1 = 2 GPUs, but the trace ran on 1")
    refused([*DDP, "--model", TINY, "--dp", "1", "-o", bad],
            "= 1 GPU, but the trace ran on 2 (distributedInfo's world size)")
    refused([*DDP, "--model", TINY, "--tp", "2", "--dp", "1", "-o", bad],
            "dp: the description's 1 (cp 1), but the trace's gradient collectives run on a "
            "group of 2 ranks")
    refused([ONE, "--model", os.path.join(DATA, "hf", "llama3-8b.json"), "-o", bad],
            "layers: the description's 32 over pp 1, but the trace shows 3 layers per pass")
    # gpt-small at 3 layers: 3 x 12596224 + 32000 x 1024 + 1024 x 1024 + 2048.
    refused([ONE, "--model", "gpt-small", "--layers", "3", "-o", bad],
            "parameters: the model has 71607296, but the trace's gradient or optimizer shapes "
            "add up to 2792 (more than 10 % apart)")
    refused([ONE, "--model", TINY, "--microbatches", "2", "-o", bad],
            "microbatches: the description's 2, but the trace shows 1 backward passes per step")
    # The precision of the GEMMs' ops (mi300x_2025.json: bf16), the default
    # where not given; FP8 on it is Transformer Engine's cast inside the op.
    mi300 = os.path.join(DATA, "mi300x_2025.json")
    refused([mi300, "--model", TINY, "--dtype", "fp32", "-o", bad],
            "dtype: the description's fp32, but the trace's GEMMs, attention and convolutions "
            "ran in bf16 (their ops' input types)")
    r = run("describe", mi300, "--model", TINY, "--dtype", "fp8", "--no-check", "-o", bad)
    check(";dtype=fp8;" in r.stdout, r.stdout)
    r = run("describe", mi300, "--model", TINY, "--no-check", "-o", bad)
    check(";dtype=bf16;" in r.stdout and ";hw=mi300x;" in r.stdout, r.stdout)
    os.remove(bad)
    # A precision the profile has no peak for (bf16, the default where the
    # ops record no types, on a V100).
    refused([ONE, "--model", TINY, "--hw", "v100-dgx1", "-o", bad],
            "dtype: bf16 (the default: the trace's ops record no types), but V100-SXM2-32GB has "
            "no bf16 peak: give the run's with --dtype")
    check(";dtype=fp16;hw=v100-dgx1;" in run("describe", ONE, "--model", TINY, "--hw", "v100-dgx1",
                                            "--dtype", "fp16", "-o", bad).stdout.replace(
                                                "fp8_attention=0;", ""), "v100 fp16")
    os.remove(bad)
    # TP against the group sizes: rank 0 of 8 with dp 4 (its gradient
    # all-reduce's group, made 4 here) and tp 2, which no collective has;
    # the process groups (distributedInfo.pg_config) list a group of 2
    # ranks, or not.
    with open(DDP[0]) as f:
        t8 = json.load(f)
    t8["distributedInfo"]["world_size"] = 8
    for e in t8["traceEvents"]:
        if e["name"] == "record_param_comms":
            e["args"]["Group size"] = 4
    for pgs, ok in (([8, 4], False), ([8, 4, 2], True)):
        t8["distributedInfo"]["pg_config"] = [
            {"pg_name": str(k), "pg_desc": "g", "pg_size": n} for k, n in enumerate(pgs)]
        p8 = os.path.join(d, "tp2.json")
        with open(p8, "w") as f:
            json.dump(t8, f)
        args = [p8, "--model", TINY, "--tp", "2", "-o", bad]
        if ok:
            check(";tp=2;pp=1;dp=4;" in run("describe", *args).stdout, "tp 2 from pg_config")
            os.remove(bad)
        else:
            refused(args, "tp: the description's 2, but no collective or process group "
                    "(pg_config) of the trace has 2 ranks")
    # A layout no run can have, checked or not: expert parallelism without
    # experts.
    r = run("describe", *DDP, "--model", TINY, "--ep", "2", "--no-check", "-o", bad, code=2)
    check(r.stderr == "prism: the description: layout: ep 2 / etp 1 need a mixture-of-experts "
          "model (experts)\n", r.stderr)
    check(not os.path.exists(bad), "a refused description was written")
    run("describe", ONE, "--model", TINY, "--microbatches", "2", "--no-check", "-o", bad)
    check(os.path.exists(bad), "--no-check")
    # Usage.
    r = run("describe", ONE, "-o", bad, code=2)
    check("give the model with --model" in r.stderr, r.stderr)
    r = run("describe", ONE, "--model", TINY, "-o", ONE, code=2)
    check("would overwrite the input" in r.stderr, r.stderr)
    # Rank R's copy is OUT.rankR.json: here each rank's own file.
    r = run("describe", *DDP, "--model", TINY, "-o", os.path.join(DATA, "described_ddp_2025.json"),
            code=2)
    check("would overwrite the input" in r.stderr and "rank0.json" in r.stderr, r.stderr)
    check("--megatron-args" in run("describe", "--help").stdout, "help")
print("ok")
