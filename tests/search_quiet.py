#!/usr/bin/env python3
"""prism search's progress where stderr is no terminal (a log, a pipe): a
line after the first batch, then at most one every 10 s, and one at the
end -- not one per batch (1,415 lines in a user's log); --quiet writes
nothing to stderr and keeps the summary on stdout.

usage: search_quiet.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import os
import subprocess
import sys
import tempfile
import time

from sweeptest import check

PRISM, SWEEP = sys.argv[1], sys.argv[2]

with tempfile.TemporaryDirectory() as d:
    # 32 candidates in batches of 1: 32 batches.
    t = time.monotonic()
    r = subprocess.run([PRISM, "search", SWEEP, "--db", os.path.join(d, "a.db"), "--exhaustive",
                        "--batch", "1", "--threads", "1"], capture_output=True, text=True)
    secs = time.monotonic() - t
    check(r.returncode == 0, r.stderr)
    lines = [l for l in r.stderr.splitlines() if "evaluated" in l]
    check(2 <= len(lines) <= 2 + secs / 10, f"{len(lines)} progress lines in {secs:.1f} s:\n"
          + r.stderr)
    check(lines[0].startswith("  1/32 evaluated") and lines[-1].startswith("  32/32 evaluated"),
          r.stderr)
    # --quiet: nothing on stderr, the summary on stdout.
    r = subprocess.run([PRISM, "search", SWEEP, "--db", os.path.join(d, "b.db"), "--exhaustive",
                        "--batch", "1", "-q"], capture_output=True, text=True)
    check(r.returncode == 0 and r.stderr == "", f"--quiet: {r.returncode} {r.stderr!r}")
    check(r.stdout.startswith("sweep small (id 1) in "), r.stdout)
print(f"search: {len(lines)} progress lines for 32 batches in {secs:.1f} s; --quiet: none")
