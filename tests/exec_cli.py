#!/usr/bin/env python3
"""The exec knob on the command line and in sweeps (docs/MODEL.md, "Host";
docs/FORMATS.md, space.exec): --exec graphs and compiled are named in the
layout line and --json; a small host-bound model (gpt-small at hidden 256)
runs faster with graphs than eager, and the analytic estimate follows it;
a sweep over space.exec keys its candidates exec=graphs / exec=compiled
(eager, the default, carries no key); unknown values are refused naming
the option or the file and line.

usage: exec_cli.py PRISM
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
    r = run(PRISM, "synth", "gpt-small", "--hw", "h100-dgx", "--hidden", "256", "--ffn", "1024",
            "--mbs", "1", "--microbatches", "4", *args, "--json")
    check(r.returncode == 0, f"synth {args}: {r.stderr}")
    return json.loads(r.stdout) if r.returncode == 0 else {}


eager, graphs, comp = synth(), synth("--exec", "graphs"), synth("--exec", "compiled")
check("exec" not in eager, "--json leaves the default exec out")
check(graphs.get("exec") == "graphs" and comp.get("exec") == "compiled", "--json names exec")
check(graphs["iteration_s"] < 0.9 * eager["iteration_s"],
      f"graphs {graphs['iteration_s']} not well below eager {eager['iteration_s']}")
check(eager["idle_s"] > graphs["idle_s"], "graphs leaves the GPU less idle")
check(graphs["analytic_s"] < eager["analytic_s"], "the analytic estimate takes the host in")
r = run(PRISM, "synth", "gpt-small", "--hw", "h100-dgx", "--exec", "lazy")
check(r.returncode == 2 and "--exec 'lazy'" in r.stderr, f"--exec lazy: {r.stderr}")
r = run(PRISM, "synth", "--help")
check("--exec E" in r.stdout and "graphs" in r.stdout, "synth --help names --exec")

with tempfile.TemporaryDirectory() as tmp:
    cfg = os.path.join(tmp, "exec.cfg")
    with open(cfg, "w") as f:
        f.write('name = "exec";\nmodel = "gpt-small";\nhw = "h100-dgx";\ngpus = [8];\n'
                'global_batch = 32;\nspace = {\n  exec = ["eager", "graphs", "compiled"];\n};\n')
    db = os.path.join(tmp, "e.db")
    r = run(PRISM, "search", cfg, "--db", db, "--threads", "1")
    check(r.returncode == 0, f"search: {r.stderr}")
    rows = sqlite3.connect(db).execute("SELECT key, exec FROM candidate ORDER BY key").fetchall()
    keys = {e: k for k, e in rows}
    check(set(keys) == {"eager", "graphs", "compiled"}, f"candidates {rows}")
    check("exec=" not in keys.get("eager", "exec="), "eager's key carries no exec")
    check(keys.get("graphs", "").endswith(";exec=graphs"), "graphs' key")
    with open(cfg, "w") as f:
        f.write('name = "exec";\nmodel = "gpt-small";\nhw = "h100-dgx";\ngpus = [8];\n'
                'global_batch = 32;\nspace = {\n  exec = ["eager", "jit"];\n};\n')
    r = run(PRISM, "search", cfg, "--db", os.path.join(tmp, "f.db"))
    check(r.returncode != 0 and "exec.cfg:7: 'space.exec': unknown value 'jit'" in r.stderr,
          f"space.exec jit: {r.stderr}")

done()
