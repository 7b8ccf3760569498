#!/usr/bin/env python3
"""prism search: a bad sweep file is a one-line error naming the file, the
line and the setting, with exit status 2 -- an unknown key, a wrong type,
an empty range, an impossible budget.

usage: sweep_files.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import os
import subprocess
import sys
import tempfile

PRISM, SWEEP = sys.argv[1], sys.argv[2]
with open(SWEEP) as f:
    TEXT = f.read()

NAME_RULE = ("'name' must be one file name: 1 to 63 bytes, no '/', no leading '.', "
             "no control characters")

# (what, line of the sweep to replace, its replacement, expected message)
CASES = [
    ("unknown key", "  mbs = [1, 2];", "  mbz = [1, 2];",
     "unknown setting 'space.mbz'"),
    ("unknown top-level key", "global_batch = 32;", "global_bach = 32;",
     "unknown setting 'global_bach'"),
    ("wrong type: string for a number", "global_batch = 32;", 'global_batch = "32";',
     "'global_batch' must be a number"),
    ("wrong type: fractions in a list", "  tp = [1, 2];", "  tp = [1.5, 2.5];",
     "'space.tp' must list whole numbers >= 0"),
    ("wrong type: numbers for names", '  schedule = ["1f1b", "gpipe"];',
     '  schedule = [1, 2];', "'space.schedule' must list names in quotes"),
    # A list mixing types is libconfig's own parse error (file and line).
    ("wrong type: mixed list", "  tp = [1, 2];", "  tp = [1, 2.5];",
     "mismatched element type in array"),
    ("unknown name", '  schedule = ["1f1b", "gpipe"];', '  schedule = ["1f1b", "zb"];',
     "'space.schedule': unknown value 'zb'"),
    ("empty range", "  pp = [1, 2];", "  pp = [];", "'space.pp' is an empty list"),
    ("empty GPU list", "gpus = [8, 16];", "gpus = [];", "'gpus' is an empty list"),
    ("zero budget", "gpus = [8, 16];", "gpu_budget = 0;", "'gpu_budget' must be positive, not 0"),
    # The name names results/NAME.db and results/NAME/: one file name.
    ("name climbs out", 'name = "small";', 'name = "../../escaped";', NAME_RULE),
    ("name with a slash", 'name = "small";', 'name = "a/b";', NAME_RULE),
    ("name hidden", 'name = "small";', 'name = ".small";', NAME_RULE),
    ("name empty", 'name = "small";', 'name = "";', NAME_RULE),
    ("name with a newline", 'name = "small";', 'name = "a\\nb";', NAME_RULE),
    ("name too long", 'name = "small";', 'name = "' + "x" * 64 + '";', NAME_RULE),
    ("name not a string", 'name = "small";', 'name = 3;', "'name' must be a string"),
    ("impossible budget", "gpus = [8, 16];", "gpus = [3];",
     "no layout is possible with these GPU counts (16 candidates, all rejected; the first: "
     "global batch 32 does not divide by dp 3 x mbs 1)"),
]

failed = 0
with tempfile.TemporaryDirectory() as d:
    for what, old, new, msg in CASES:
        if old not in TEXT:
            sys.exit(f"FAIL: {SWEEP} has no line {old!r}")
        line = next(i for i, l in enumerate(TEXT.splitlines(), 1) if l == old)
        bad = os.path.join(d, "bad.cfg")
        with open(bad, "w") as f:
            f.write(TEXT.replace(old, new))
        db = os.path.join(d, "x.db")
        r = subprocess.run([PRISM, "search", bad, "--db", db], capture_output=True, text=True)
        want = f"prism: {bad}:{line}: {msg}\n"
        if r.returncode != 2 or r.stderr != want:
            print(f"FAIL: {what}: exit {r.returncode}, stderr {r.stderr!r}, want {want!r}")
            failed += 1
        elif os.path.exists(db):
            print(f"FAIL: {what}: a database was created")
            failed += 1
        else:
            print(f"ok: {what}: {msg}")
sys.exit(1 if failed else 0)
