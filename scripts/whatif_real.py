#!/usr/bin/env python3
"""What-if on the shared real traces: every training trace as a base,
edited as a graph (prism whatif, docs/MODEL.md "Graph edits"): DP x2 and
x8, layers x2, pipeline stages 2 and microbatches x2.  Each row says what
prism found in the trace (layers, microbatches, data-parallel group,
parameters) and, per edit, the prediction and its change against the
base's replay, or why the edit does not apply (what the trace lacks).
Prints Markdown tables for docs/VALIDATION.md.

With --knobs, instead: every knob of `prism whatif` on every trace, as
the issue 36 table of docs/VALIDATION.md has it: works (the change against
the base by the same method) or refused (the reason, cut short).  With
--describe too, on each trace described first (`prism describe`: DESCRIBE
below, the model each ran where it is an LLM, else gpt-small at the layers
found, which the checks may refuse): what a description makes editable.

usage: scripts/whatif_real.py [PRISM] [TRACES_DIR] [--how] [--knobs [--describe]]
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

PRISM = sys.argv[1] if len(sys.argv) > 1 else "build/prism"
DIR = sys.argv[2] if len(sys.argv) > 2 and not sys.argv[2].startswith("--") else "../shared/traces"
HOW = "--how" in sys.argv
KNOBS = "--knobs" in sys.argv
DESCRIBE = "--describe" in sys.argv
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The description given to each trace with --describe: DeepSeek-V3 as its
# repository's README states the run (EP64, TP1, sequence 4096; dp is the
# world's 64, the precision the GEMMs' fp8); the others are no LLM, so
# gpt-small at the layers found stands in (None: that).
DESCRIBE_AS = {
    "deepseek-v3-train-h800": ["--model", os.path.join(SRC, "tests/data/hf/deepseek-v3.json"),
                               "--ep", "64", "--seq", "4096"],
}

JOBS = [
    ("param-dlrm-8rank-v100", "param-dlrm-8rank-v100/*.json.gz"),
    ("hta-ddp-resnet-a100-2rank", "hta-ddp-resnet-a100-2rank/*.json.gz"),
    ("hta-dlrm-a100-rank3of8", "hta-dlrm-a100-rank3of8/*.json.gz"),
    ("hta-torchrec-a100-rank0of16", "hta-torchrec-a100-rank0of16/*.json.gz"),
    ("hta-ddp-compile-v100-rank1of2", "hta-ddp-compile-v100-rank1of2/*.json.gz"),
    ("hta-ddp-resnet-v100-nsres", "hta-ddp-resnet-v100-nsres/*.json.gz"),
    ("deepseek-v3-train-h800", "deepseek-v3-train-h800/*.json.gz"),
    ("kineto-resnet50-v100-torch19", "kineto-resnet50-v100-torch19/*.json.gz"),
]


def prism(*args):
    r = subprocess.run([PRISM, *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def whatif(files, *args):
    rc, out, err = prism("whatif", *files, "--json", *args)
    if rc:
        # The reason, without the file name and the common preface.
        msg = err.strip().split(": the trace has no run description (prism::model#): ")[-1]
        return None, msg.replace("prism: ", "")
    return json.loads(out), None


def cell(w, err, base):
    if err:
        return f"n/a: {err}"
    ch = (w["iteration_s"] / base - 1) * 100
    s = f"{w['iteration_s'] * 1e3:.2f} ({ch:+.1f}%)"
    if w["host_bound"]:
        s += " HB"
    return s


def knobs():
    """Every knob on every trace: works, or refused with the reason."""
    heads = ["tp 2", "sp", "hidden 8192", "heads 64", "ffn 32768", "seq 8192", "mbs 2", "zero 1",
             "dtype fp8", "recompute full", "vp 2", "cp 2", "ep 2", "gbs 64", "dp x2",
             "layers x2", "pp 2", "microbatches x2", "hw b200-dgx"]
    print("| job | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(heads))
    tmp = tempfile.TemporaryDirectory()
    for name, pat in JOBS:
        files = sorted(glob.glob(os.path.join(DIR, pat)))
        if not files:
            continue
        b, err = whatif(files)
        if err:
            print(f"| {name} | {err} |" + " |" * (len(heads) - 1))
            continue
        L, M, dp = b["layers_from"], b["microbatches_from"], b["dp_from"]
        if DESCRIBE:
            out = os.path.join(tmp.name, name + ".json")
            how = DESCRIBE_AS.get(name, ["--model", "gpt-small", "--layers", str(max(L, 1))])
            rc, _, e = prism("describe", *files, *how, "-o", out)
            if rc:
                e = e.strip().split(f"{DIR}/", 1)[-1].split(": ", 1)[-1]
                e = e.replace(" (--no-check writes it all the same)", "")
                print(f"| {name} | describe refused: {e} |" + " |" * (len(heads) - 1))
                continue
            files = sorted(glob.glob(os.path.join(tmp.name, name + "*.json")))
            b, err = whatif(files)
            if err:
                err = re.sub(r"^\S+\.json: ", "", err)
                print(f"| {name} | described, whatif refused: {err} |" + " |" * (len(heads) - 1))
                continue
            L, M, dp = b["layers"], b["microbatches"], b["dp"]
        args = [["--tp", "2"], ["--sp"], ["--hidden", "8192"], ["--heads", "64"],
                ["--ffn", "32768"], ["--seq", "8192"], ["--mbs", "2"], ["--zero", "1"],
                ["--dtype", "fp8"], ["--recompute", "full"], ["--vp", "2"], ["--cp", "2"],
                ["--ep", "2"], ["--gbs", "64"], ["--dp", str(dp * 2)],
                ["--layers", str(max(L, 1) * 2)], ["--pp", "2"],
                ["--microbatches", str(M * 2)], ["--hw", "b200-dgx"]]
        cells = []
        for a in args:
            w, e = whatif(files, *a)
            if e:
                if "a graph edit changes layers, microbatches" in e:
                    e = "a run description (not a graph edit)"
                elif "rebuilt from the run description" in e:
                    e = "a run description (rebuilt)"
                else:
                    if DIR in e:  # "PATH: why"
                        e = e.split(f"{DIR}/", 1)[-1].split(": ", 1)[-1]
                    e = re.sub(r"^\S+\.json: ", "", e)  # a described copy's
                    e = e.split(": ", 1)[-1] if e.startswith(a[0][2:] + ":") else e
                cells.append("refused: " + (e[:60] + "..." if len(e) > 60 else e))
            else:
                cells.append(f"works ({(w['iteration_s'] / w['base_iteration_s'] - 1) * 100:+.1f}%"
                             f", {w['method']})")
        print(f"| {name} | " + " | ".join(cells) + " |")


def main():
    if KNOBS:
        return knobs()
    if not os.path.isdir(DIR):
        print(f"skip: {DIR} is absent")
        return
    rows, hows = [], []
    for name, pat in JOBS:
        files = sorted(glob.glob(os.path.join(DIR, pat)))
        if not files:
            continue
        b, err = whatif(files)
        if err:
            rows.append(f"| {name} | {len(files)} | {err} | | | | | | |")
            continue
        base = b["base_iteration_s"]
        L, M, dp = b["layers_from"], b["microbatches_from"], b["dp_from"]
        edits = [("dp x2", ["--dp", str(dp * 2)]), ("dp x8", ["--dp", str(dp * 8)]),
                 ("layers x2", ["--layers", str(max(L, 1) * 2)]), ("pp 2", ["--pp", "2"]),
                 ("microbatches x2", ["--microbatches", str(M * 2)])]
        cells = []
        for what, args in edits:
            if what == "layers x2" and L == 0:
                w, e = None, "no layers found"
            else:
                w, e = whatif(files, *args)
            cells.append(cell(w, e, base))
            if w:
                hows.append(f"| {name} | {what} | {w['how']} |")
        side = f"{base * 1e3:.2f}" + (" HB" if b["base_host_bound"] else "")
        rows.append(f"| {name} | {len(files)} | {b['base']} | {side} | " + " | ".join(cells) + " |")
    print("| job | ranks | found | base ms | DP x2 | DP x8 | layers x2 | PP 2 | "
          "microbatches x2 |")
    print("|---|---:|---|---:|---|---|---|---|---|")
    for r in rows:
        print(r)
    print("\nHB: host-bound (the GPU idles over 30% of every step): GPU edits show little.")
    if HOW:
        print("\n| job | edit | what was done |\n|---|---|---|")
        for h in hows:
            print(h)


main()
