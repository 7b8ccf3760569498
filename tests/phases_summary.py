#!/usr/bin/env python3
"""scripts/phases_summary.py on a hand-made phases.csv (tests/data/phases_hand.csv).

The settled stream's calls take 1.0 ms; after 100 ms idle the first call
takes 0.90 ms (0.9000 of the settled one), then 0.92, 0.95, 0.995 and 1.00
from there on: the first of five calls in a row within 1 % of 1.0 is the
fourth, which starts 0.90 + 0.92 + 0.95 = 2.77 ms after the idle phase.
"""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
script = os.path.join(here, "..", "scripts", "phases_summary.py")
out = subprocess.run([sys.executable, script, os.path.join(here, "data", "phases_hand.csv")],
                     capture_output=True, text=True, check=True).stdout.splitlines()
want = "bf16\tidle\t100\t1\t1.0000\t0.9000\t2.8"
if len(out) != 2 or out[1] != want:
    sys.exit(f"phases_summary: got {out!r}, want the row {want!r}")
bad = subprocess.run([sys.executable, script, os.path.join(here, "data", "nonexistent.csv")],
                     capture_output=True, text=True)
if bad.returncode == 0 or "nonexistent.csv: No such file or directory" not in bad.stderr:
    sys.exit(f"phases_summary: a missing file: rc {bad.returncode}, {bad.stderr!r}")
print("1 passed, 0 failed")
