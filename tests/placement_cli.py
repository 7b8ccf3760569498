#!/usr/bin/env python3
"""Placement and sharding on the command line (issue 17): --partition lists,
names and their refusals; a synthesised trace carries its partition and
sharding knobs in its run description, so whatif on it with nothing changed
is its own replay and a changed knob rebuilds; --shard must divide dp.

usage: placement_cli.py PRISM
"""
import json
import os
import subprocess
import sys
import tempfile

PRISM = sys.argv[1]


def check(cond, msg):
    if not cond:
        sys.exit("FAIL: " + msg)


def run(*args):
    return subprocess.run([PRISM, *args], capture_output=True, text=True)


base = ["synth", "gpt-small", "--hw", "h100-dgx", "--pp", "2", "--microbatches", "4"]
r = run(*base, "--partition", "3,5", "--json")
check(r.returncode == 0 and json.loads(r.stdout)["partition"] == [3, 5], f"3,5: {r.stderr}")
r = run(*base, "--partition", "balanced", "--json")
p = json.loads(r.stdout)["partition"]
check(r.returncode == 0 and sum(p) == 8 and p[0] >= p[1], f"balanced: {p}")
for bad, want in (("3,4", "partition places 7 layers, the model has 8"),
                  ("x", "partition 'x': expected even, balanced, embed-loss"),
                  ("8", "a list needs a number for each of 2 or more stages")):
    r = run(*base, "--partition", bad)
    check(r.returncode == 2 and want in r.stderr, f"--partition {bad}: {r.stderr!r}")
r = run(*base, "--dp", "4", "--zero", "1", "--shard", "3")
check(r.returncode == 2 and "the sharding group (3) must divide dp 4" in r.stderr, r.stderr)
r = run(*base, "--tp", "2", "--tp-overlap")
check(r.returncode == 2 and "needs sequence parallelism" in r.stderr, r.stderr)
with tempfile.TemporaryDirectory() as d:
    t = os.path.join(d, "run.json")
    r = run(*base, "--partition", "3,5", "--dp", "4", "--zero", "3", "--shard", "2",
            "--prefetch", "2", "-o", t)
    check(r.returncode == 0, f"synth -o: {r.stderr}")
    files = [os.path.join(d, f"run.rank{i}.json") for i in (0, 1)]
    r = run("whatif", *files)
    check(r.returncode == 0 and "method     replay" in r.stdout, f"whatif identity: {r.stdout}{r.stderr}")
    r = run("whatif", *files, "--partition", "even")
    lay = [l for l in r.stdout.splitlines() if l.startswith("layout")]
    check(r.returncode == 0 and "rebuilt" in r.stdout and lay and "layers per stage" not in lay[0],
          f"whatif --partition even: {r.stdout}{r.stderr}")
print("placement_cli: ok")
