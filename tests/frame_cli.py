#!/usr/bin/env python3
"""A user's own files in and launch options out (issue 37, model/spec/frame.h).

- A Hugging Face config.json is a model wherever prism takes one: synth on
  Llama 3 8B's config.json predicts the very iteration the hand-written
  configs/models/llama3-8b.cfg does (an independent description of the same
  model); an unknown model_type is refused naming its fields.
- A sweep over a config.json model, then `prism report --export megatron
  --gpus 16`: the best layout as Megatron-LM arguments, which `prism whatif
  --megatron-args` reads back to the same prediction the sweep stored for
  that layout (export -> import -> the same run, to the nanosecond).
- DeepSeek-V3's config.json and layout through whatif --export megatron,
  read back as model and layout: the same prediction.
- A Megatron-LM launch script is a model and, with --megatron-args, a
  layout (dp from torchrun's world size); a shell variable is refused.
- `--export torchtitan` and `bridge` print their own forms; --gpus without
  --export and --export with --json are refused.
- A zero-bubble schedule (zb-1p, zb-2p) no framework runs one stage a rank:
  each export says so on its "not expressed" line, and the rest of the
  layout still reads back to the same run with the schedule 1F1B's.  zb-v
  is torchtitan's ZBVZeroBubble and dualpipev its DualPipeV; Megatron-LM
  and Bridge have no V (their "not expressed" line, the same read-back).

usage: frame_cli.py PRISM
"""
import json
import os
import sqlite3
import sys
import tempfile

from sweeptest import check, prism

PRISM = sys.argv[1]
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HF = os.path.join(SRC, "tests", "data", "hf")

SWEEP = """name = "hf";
model = "{model}";
hw = "h100-dgx";
gpus = [8, 16];
global_batch = 64;
space = {{
  tp = [1, 2, 4];
  pp = [1, 2];
  zero = [1];
  recompute = ["selective"];
}};
"""


def iteration(*args):
    r = prism(PRISM, *args, "--json")
    return json.loads(r.stdout)["iteration_s"]


def main():
    llama = os.path.join(HF, "llama3-8b.json")
    a = iteration("synth", llama, "--hw", "h100-dgx", "--tp", "2", "--dp", "4")
    b = iteration("synth", "llama3-8b", "--hw", "h100-dgx", "--tp", "2", "--dp", "4")
    check(a == b, f"config.json {a} s, llama3-8b.cfg {b} s: not the same model")
    r = prism(PRISM, "synth", os.path.join(HF, "unknown-falcon.json"), "--hw", "h100-dgx",
              code=2)
    check('model_type "falcon"' in r.stderr and "n_head" in r.stderr, r.stderr)
    # a config.json's unmodelled fields are warned about, on stderr
    r = prism(PRISM, "synth", os.path.join(HF, "gemma2-9b.json"), "--hw", "h100-dgx")
    check("warning" in r.stderr and "attn_logit_softcapping" in r.stderr, r.stderr)

    # a Megatron-LM launch script is a model and a layout: 64 GPUs from
    # torchrun's --nnodes 8 x --nproc-per-node 8, dp 64 / (tp 8 x pp 4)
    script = os.path.join(SRC, "tests", "data", "megatron", "llama3-70b.sh")
    r = prism(PRISM, "synth", script, "--hw", "h100-dgx", "--megatron-args", script, "--json")
    got = json.loads(r.stdout)
    want = {"model": "llama3-70b", "layers": 80, "hidden": 8192, "tp": 8, "pp": 4, "dp": 2,
            "vp": 4, "microbatches": 256, "schedule": "interleaved", "recompute": "full",
            "zero": 1, "sp": 1, "overlap_grad": 1, "overlap_param": 1}
    for k, v in want.items():
        check(got[k] == v, f"{k}: {got[k]}, not {v}")
    check("--lr" in r.stderr, r.stderr)
    bad = os.path.join(SRC, "tests", "data", "megatron", "dsv3-bad.sh")
    r = prism(PRISM, "synth", "llama3-8b", "--hw", "h100-dgx", "--megatron-args", bad, code=2)
    check("--tensor-model-parallel-size '$TP'" in r.stderr, r.stderr)

    # DeepSeek-V3 (MLA, 256 experts, 3 dense layers first, an uneven
    # pipeline) through whatif --export megatron, read back as model and
    # layout: the same prediction
    ds = os.path.join(HF, "deepseek-v3.json")
    lay = ["--hw", "h100-dgx", "--tp", "2", "--pp", "8", "--dp", "32", "--ep", "64", "--gbs",
           "2048", "--zero", "1", "--sp", "--partition", "7,8,8,8,8,8,8,6"]
    want = iteration("whatif", ds, *lay)
    r = prism(PRISM, "whatif", ds, *lay, "--export", "megatron")
    text = r.stdout[r.stdout.index("# prism:"):]
    check("--decoder-first-pipeline-num-layers 7" in text and
          "--moe-layer-freq '([0]*3+[1]*58)'" in text, text)
    with tempfile.TemporaryDirectory() as tmp:
        args = os.path.join(tmp, "ds.sh")
        with open(args, "w") as f:
            f.write(text)
        again = iteration("synth", args, "--hw", "h100-dgx", "--megatron-args", args,
                          "--dp", "32")
        check(again == want, f"DeepSeek-V3: {want} s, its Megatron-LM export {again} s")

    # zero bubble: not expressed anywhere, said so; the exported rest is
    # the same layout under 1F1B (Megatron-LM's schedule without vp)
    lay = ["--hw", "h100-dgx", "--tp", "2", "--pp", "4", "--dp", "2", "--microbatches", "8"]
    names = {"zb-v": "ZBVZeroBubble", "dualpipev": "DualPipeV"}
    for sched in ("zb-1p", "zb-2p", "zb-v", "dualpipev"):
        for fw in ("megatron", "bridge", "torchtitan"):
            r = prism(PRISM, "whatif", llama, *lay, "--schedule", sched, "--export", fw)
            if sched in names and fw == "torchtitan":
                # torchtitan runs ZB-V and DualPipeV: PyTorch's
                # ScheduleZBVZeroBubble and ScheduleDualPipeV
                check(f'pipeline_parallel_schedule = "{names[sched]}"' in r.stdout, r.stdout)
                check("not expressed in torchtitan: schedule" not in r.stdout, r.stdout)
                continue
            check(f"# not expressed in {fw}: schedule {sched}" in r.stdout, r.stdout)
            check("ZeroBubble" not in r.stdout and "DualPipe" not in r.stdout, r.stdout)
        r = prism(PRISM, "whatif", llama, *lay, "--schedule", sched, "--export", "megatron")
        text = r.stdout[r.stdout.index("# prism:"):]
        with tempfile.TemporaryDirectory() as tmp:
            args = os.path.join(tmp, "zb.sh")
            with open(args, "w") as f:
                f.write(text)
            back = iteration("whatif", llama, "--hw", "h100-dgx", "--megatron-args", args,
                             "--dp", "2")
        want = iteration("whatif", llama, *lay, "--schedule", "1f1b")
        check(back == want, f"{sched}'s export read back: {back} s, 1F1B's {want} s")

    with tempfile.TemporaryDirectory() as tmp:
        sweep = os.path.join(tmp, "s.cfg")
        db = os.path.join(tmp, "r.db")
        with open(sweep, "w") as f:
            f.write(SWEEP.format(model=llama))
        prism(PRISM, "search", sweep, "--db", db)
        out = os.path.join(tmp, "out")
        r = prism(PRISM, "report", db, "-o", out, "--export", "megatron", "--gpus", "16")
        check(r.stdout.count("# prism report: the best layout") == 1, r.stdout)
        check("--tensor-model-parallel-size" in r.stdout and "--global-batch-size 64"
              in r.stdout, r.stdout)
        args = os.path.join(tmp, "best16.sh")
        with open(args, "w") as f:
            f.write(r.stdout)
        con = sqlite3.connect(db)
        key, dp, stored = con.execute(
            "SELECT key, dp, iter_s FROM candidate WHERE gpus=16 AND status='simulated' "
            "ORDER BY iter_s, key LIMIT 1").fetchone()
        con.close()
        again = iteration("whatif", llama, "--hw", "h100-dgx", "--megatron-args", args,
                          "--dp", str(dp))
        check(abs(again - stored) < 1e-9,
              f"{key}: stored {stored} s, its Megatron-LM export read back {again} s")
        r = prism(PRISM, "report", db, "-o", out, "--export", "torchtitan")
        check(r.stdout.count("[parallelism]") == 2, r.stdout)
        r = prism(PRISM, "report", db, "-o", out, "--export", "bridge", "--gpus", "8")
        check("model.tensor_model_parallel_size=" in r.stdout, r.stdout)
        prism(PRISM, "report", db, "-o", out, "--gpus", "8", code=2)
        prism(PRISM, "report", db, "-o", out, "--export", "megatron", "--json", code=2)
        prism(PRISM, "report", db, "-o", out, "--export", "deepspeed", code=2)
        prism(PRISM, "report", db, "-o", out, "--export", "megatron", "--gpus", "32", code=2)
    print("ok")


if __name__ == "__main__":
    main()
