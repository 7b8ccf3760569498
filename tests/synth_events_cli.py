#!/usr/bin/env python3
"""A synthesised trace read back keeps every event wait where synth records
the event ahead of its wait, as the framework does (docs/MODEL.md, "1F1B
all-to-all overlap" and "Activation offloading"): the 1F1B all-to-all
overlap's parts record at the end of each part (Megatron-LM's ScheduleNode),
an offloaded layer's copy out or back right after it is issued (Transformer
Engine's OffloadSynchronizer).  Recorded at the wait instead, the event named
the stream's last task by then (the other microbatch's part, a later layer's
copy), and `prism ingest` dropped those waits as contradicted by the timing
(mixtral 4 layers ep 4: 72 of 270; gpt-small offloading 4 layers: 48 of
128).  Each trace: no wait dropped, every cudaStreamWaitEvent used, and its
replay equal to its own timing, the last step synth's to the nanosecond.

usage: synth_events_cli.py PRISM
"""
import glob
import json
import os
import sys
import tempfile

import clitest
from clitest import check, collect, done

PRISM = sys.argv[1]
collect()


def run(*args):
    return clitest.run(PRISM, *args)


H = ["--hw", "h100-dgx"]
CASES = {
    "a2a-overlap 1f1b": ["mixtral-8x7b", *H, "--layers", "4", "--ep", "4", "--dp", "4",
                         "--microbatches", "4", "--moe-a2a-overlap"],
    "a2a-overlap interleaved": ["mixtral-8x7b", *H, "--layers", "8", "--ep", "4", "--dp", "4",
                                "--pp", "2", "--vp", "2", "--schedule", "interleaved",
                                "--microbatches", "4", "--moe-a2a-overlap"],
    "dualpipev": ["deepseek-v3", "--hw", "b200-dgx", "--layers", "8", "--ep", "8", "--dp", "8",
                  "--pp", "2", "--schedule", "dualpipev", "--microbatches", "8", "--tp", "1"],
    "offload": ["gpt-small", *H, "--offload-layers", "4", "--microbatches", "4"],
    "offload compiled": ["gpt-small", *H, "--offload-layers", "3", "--exec", "compiled",
                         "--microbatches", "2"],
}

with tempfile.TemporaryDirectory() as tmp:
    for name, args in CASES.items():
        out = os.path.join(tmp, name.replace(" ", "_") + ".json")
        r = run("synth", *args, "-o", out, "--json")
        if r.returncode != 0:
            check(False, f"{name}: synth: {r.stderr}")
            continue
        step_ns = round(json.loads(r.stdout)["iteration_s"] * 1e9)
        files = sorted(glob.glob(out[:-5] + ".rank*.json")) or [out]
        r = run("ingest", *files, "--json")
        if r.returncode != 0:
            check(False, f"{name}: ingest: {r.stderr}")
            continue
        g = json.loads(r.stdout)
        check(g["dropped_edges"] == 0 and g["cuda_sync_unused"] == 0 and
              g["edges"]["event"] == g["cuda_sync_used"] > 0,
              f"{name}: {g['dropped_edges']} waits dropped, {g['edges']['event']} event edges "
              f"of {g['cuda_sync_used']} waits used, {g['cuda_sync_unused']} unused")
        r = run("replay", *files, "--json")
        its = json.loads(r.stdout)["iterations"] if r.returncode == 0 else []
        last = [it["predicted_ns"] for it in its if it["rank"] == 0][-1:]
        check(its and all(it["predicted_ns"] == it["measured_ns"] for it in its) and
              last == [step_ns], f"{name}: replay {its or r.stderr}, synth {step_ns} ns")

done()
