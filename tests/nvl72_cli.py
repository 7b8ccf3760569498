#!/usr/bin/env python3
"""The NVLink domain from the command line: prism list hw names the NVL72's
domain; prism synth places TP = 16 inside a GB200 NVL72 rack and prints its
breakdown, and refuses it on 8-GPU nodes with the reason; Llama 3.1 405B
(8K and 128K) synthesises on the rack.

usage: nvl72_cli.py PRISM
"""
import sys

from clitest import check, prism

PRISM = sys.argv[1]


def run(*args, code=0):
    return prism(PRISM, *args, code=code)


out = run("list", "hw").stdout
check(any(l.startswith("gb200-nvl72 ") and "NVLink domain 72 GPUs" in l
          for l in out.splitlines()), out)
check(any(l.startswith("mi300x ") and "full mesh" in l for l in out.splitlines()), out)

tp16 = ["--tp", "16", "--sp", "--pp", "8", "--dp", "4", "--mbs", "1", "--microbatches", "8"]
out = run("synth", "gpt3-175b", "--hw", "gb200-nvl72", *tp16).stdout
for want in ("GB200 NVL72", "tp 16 pp 8 dp 4", "512 GPUs", "iteration", "breakdown"):
    check(want in out, f"synth on gb200-nvl72: no {want!r}:\n{out}")
r = run("synth", "gpt3-175b", "--hw", "h100-dgx", *tp16, code=2)
check("tp 16 is beyond a node of 8 GPUs" in r.stderr, r.stderr)
r = run("synth", "gpt3-175b", "--hw", "gb200-nvl72", "--tp", "96", code=2)
check("tp 96 is beyond an NVLink domain of 72 GPUs" in r.stderr, r.stderr)

for model in ("llama3.1-405b", "llama3.1-405b-128k"):
    out = run("synth", model, "--hw", "gb200-nvl72", "--tp", "8", "--sp", "--pp", "9",
              "--dp", "8", "--mbs", "1", "--microbatches", "9", "--recompute", "full").stdout
    check("iteration" in out and "576 GPUs" in out, f"{model}:\n{out}")
print("nvl72_cli: ok")
