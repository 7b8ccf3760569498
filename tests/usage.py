#!/usr/bin/env python3
"""A mistyped command line gets one line on stderr (exit 2) that says what
was wrong and, where a known word is close, "did you mean" -- not the whole
help: commands, options, option values, model, hardware and sweep names,
`prism list` kinds.

usage: usage.py PRISM
"""
import subprocess
import sys

PRISM = sys.argv[1]


def check(cond, msg):
    if not cond:
        sys.exit("FAIL: " + msg)


# (arguments, the one line expected on stderr)
CASES = [
    (["serch"], "prism: unknown command 'serch'; did you mean search? (prism --help)"),
    (["frobnicate"], "prism: unknown command 'frobnicate' (prism --help)"),
    (["synth", "gpt-small", "--hw", "h100-dgx", "--tpp", "2"],
     "prism synth: unknown option '--tpp'; did you mean --tp? (prism synth --help)"),
    (["whatif", "gpt-small", "--hw", "h100-dgx", "--micrbatches=4"],
     "prism whatif: unknown option '--micrbatches'; did you mean --microbatches? "
     "(prism whatif --help)"),
    (["report", "x.db", "--swep", "1"],
     "prism report: unknown option '--swep'; did you mean --sweep? (prism report --help)"),
    (["search", "x", "--optimse"],
     "prism search: unknown option '--optimse'; did you mean --optimise? (prism search --help)"),
    (["ingest", "--zzzzzz", "t.json"], "prism ingest: unknown option '--zzzzzz' (prism ingest --help)"),
    (["replay", "-q", "t.json"], "prism replay: unknown option '-q' (prism replay --help)"),
    (["kernels", "--fitt", "k.csv"],
     "prism kernels: unknown option '--fitt'; did you mean --fit? (prism kernels --help)"),
    (["describe", "t.json", "--modl", "m.cfg"],
     "prism describe: unknown option '--modl'; did you mean --model? (prism describe --help)"),
    (["list", "--jsn"], "prism list: unknown option '--jsn'; did you mean --json? (prism list --help)"),
    (["synth", "gpt-small", "--hw"], "prism synth: --hw needs a value (prism synth --help)"),
    (["report", "x.db", "-o"], "prism report: -o needs a value (prism report --help)"),
    (["synth", "gpt3-1.3", "--hw", "h100-dgx"],
     "prism: gpt3-1.3: no such file, nor configs/models/gpt3-1.3.cfg; did you mean gpt3-1.3b? "
     "(prism list models)"),
    (["synth", "gpt-small", "--hw", "h100dgx"],
     "prism: h100dgx: no such file, nor configs/hw/h100dgx.cfg; did you mean h100-dgx? "
     "(prism list hw)"),
    (["search", "gpt3-1.3b-h10"],
     "prism: gpt3-1.3b-h10: no such file, nor configs/sweeps/gpt3-1.3b-h10.cfg; did you mean "
     "gpt3-1.3b-h100? (prism list sweeps)"),
    (["list", "modles"], "prism list: unknown kind 'modles'; did you mean models? "
     "(models, hw or sweeps)"),
]

for args, want in CASES:
    r = subprocess.run([PRISM, *args], capture_output=True, text=True, cwd="/")
    check(r.returncode == 2 and r.stderr == want + "\n" and r.stdout == "",
          f"prism {' '.join(args)}: exit {r.returncode}, stderr {r.stderr!r}, want {want!r}")
print(f"ok: {len(CASES)} mistyped command lines, one line each")

# What ships, one line each, named first; the singular works too.
r = subprocess.run([PRISM, "list", "model"], capture_output=True, text=True, cwd="/")
check(r.returncode == 0, f"list model: {r.stderr}")
names = [l.split()[0] for l in r.stdout.splitlines()]
check("gpt-small" in names and "llama3-8b" in names and names == sorted(names),
      f"list model: {names}")
print(f"ok: prism list model: {len(names)} models")
