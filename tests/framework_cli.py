#!/usr/bin/env python3
"""The framework and no_dropout knobs on the command line and in sweeps
(docs/MODEL.md, "The framework's modules"; docs/FORMATS.md,
space.framework and space.no_dropout): --json names them where they are
not the defaults; without dropout gpt-small (8 layers, s b h = 1024 x
1024 values a microbatch of one sequence) keeps no masks, 2 s b h bytes a
layer and the embedding's s b h: 17 x 1,048,576 bytes fewer, by hand;
plain PyTorch's bias-gradient sums make its host-bound step longer; a
sweep keys its candidates fw=torch and nodrop=1 (the defaults carry no
key); unknown values are refused naming the option or the file and line.

usage: framework_cli.py PRISM
"""
import json
import os
import sqlite3
import sys
import tempfile

from clitest import check, collect, done, run

PRISM = os.path.abspath(sys.argv[1])
collect()


def synth(*args):
    r = run(PRISM, "synth", "gpt-small", "--hw", "h100-dgx", *args, "--json")
    check(r.returncode == 0, f"synth {args}: {r.stderr}")
    return json.loads(r.stdout) if r.returncode == 0 else {}


meg, nodrop, torch = synth(), synth("--no-dropout"), synth("--no-dropout", "--framework", "torch")
check("framework" not in meg and "no_dropout" not in meg, "--json leaves the defaults out")
check(nodrop.get("no_dropout") == 1 and torch.get("framework") == "torch", "--json names them")
masks = meg["memory_activations_bytes"] - nodrop["memory_activations_bytes"]
check(masks == 17 * 1024 * 1024, f"the masks: {masks} bytes, want 17,825,792")
check(torch["memory_activations_bytes"] == nodrop["memory_activations_bytes"],
      "the framework's kernels keep no memory of their own")
check(nodrop["iteration_s"] < meg["iteration_s"], "no dropout kernels: a shorter step")
check(torch["iteration_s"] > nodrop["iteration_s"], "the bias sums: a longer step")
r = run(PRISM, "synth", "gpt-small", "--hw", "h100-dgx", "--framework", "tf")
check(r.returncode == 2 and "--framework 'tf': expected megatron or torch" in r.stderr,
      f"--framework tf: {r.stderr}")
r = run(PRISM, "synth", "--help")
check("--framework F" in r.stdout and "--no-dropout" in r.stdout,
      "synth --help names --framework and --no-dropout")

with tempfile.TemporaryDirectory() as tmp:
    cfg = os.path.join(tmp, "fw.cfg")
    with open(cfg, "w") as f:
        f.write('name = "fw";\nmodel = "gpt-small";\nhw = "h100-dgx";\ngpus = [8];\n'
                'global_batch = 32;\nspace = {\n  framework = ["megatron", "torch"];\n'
                '  no_dropout = [0, 1];\n};\n')
    db = os.path.join(tmp, "f.db")
    r = run(PRISM, "search", cfg, "--db", db, "--threads", "1")
    check(r.returncode == 0, f"search: {r.stderr}")
    rows = sqlite3.connect(db).execute(
        "SELECT key, framework, no_dropout FROM candidate").fetchall()
    keys = {(fw, nd): k for k, fw, nd in rows}
    check(len(keys) == 4, f"candidates {rows}")
    for (fw, nd), k in keys.items():
        check(("fw=torch" in k) == (fw == "torch") and ("nodrop=1" in k) == (nd == 1),
              f"key {k} of framework {fw}, no_dropout {nd}")
    with open(cfg, "w") as f:
        f.write('name = "fw";\nmodel = "gpt-small";\nhw = "h100-dgx";\ngpus = [8];\n'
                'global_batch = 32;\nspace = {\n  framework = ["megatron", "jax"];\n};\n')
    r = run(PRISM, "search", cfg, "--db", os.path.join(tmp, "g.db"))
    check(r.returncode != 0 and "fw.cfg:7: 'space.framework': unknown value 'jax'" in r.stderr,
          f"space.framework jax: {r.stderr}")

done()
