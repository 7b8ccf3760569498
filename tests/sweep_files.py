#!/usr/bin/env python3
"""prism search: a bad sweep file is a one-line error naming the file, the
line and the setting, with exit status 2 -- an unknown key, a wrong type,
an empty range, an impossible budget, a name that is not one file name, a
number out of its range (those that crashed with SIGFPE or ran with absurd
values), and products that wrapped a 32-bit int.

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

# (what, line of the sweep to replace, its replacement, expected message[,
# {"line": the line named when not that one, "also": more (line, replacement)}])
CASES = [
    ("unknown key", "  mbs = [1, 2];", "  mbz = [1, 2];",
     "unknown setting 'space.mbz'"),
    ("unknown top-level key", "global_batch = 32;", "global_bach = 32;",
     "unknown setting 'global_bach'"),
    ("wrong type: string for a number", "global_batch = 32;", 'global_batch = "32";',
     "'global_batch' must be a number"),
    ("wrong type: fractions in a list", "  tp = [1, 2];", "  tp = [1.5, 2.5];",
     "'space.tp' must list whole numbers in 1..1024"),
    ("wrong type: numbers for names", '  schedule = ["1f1b", "gpipe"];',
     '  schedule = [1, 2];', "'space.schedule' must list names in quotes"),
    # A list mixing types is libconfig's own parse error (file and line).
    ("wrong type: mixed list", "  tp = [1, 2];", "  tp = [1, 2.5];",
     "mismatched element type in array"),
    ("unknown name", '  schedule = ["1f1b", "gpipe"];', '  schedule = ["1f1b", "zb"];',
     "'space.schedule': unknown value 'zb'"),
    ("unknown dtype", "  mbs = [1, 2];", '  mbs = [1, 2]; dtype = ["bf16", "fp6"];',
     "'space.dtype': unknown value 'fp6'"),
    ("fp8_attention beyond 0..1", "  mbs = [1, 2];", "  mbs = [1, 2]; fp8_attention = [2];",
     "'space.fp8_attention' must list whole numbers in 0..1, not 2"),
    ("empty range", "  pp = [1, 2];", "  pp = [];", "'space.pp' is an empty list"),
    ("empty GPU list", "gpus = [8, 16];", "gpus = [];", "'gpus' is an empty list"),
    ("zero budget", "gpus = [8, 16];", "gpu_budget = 0;",
     "'gpu_budget' must be a whole number in 1..16777216, not 0"),
    # Each number has a range: what crashed (SIGFPE: a division by a zero
    # or by a product wrapped to zero) or ran with absurd values is refused.
    ("no GPUs", "gpus = [8, 16];", "gpus = [0];",
     "'gpus' must list whole numbers in 1..16777216, not 0"),
    ("zero microbatch", "  mbs = [1, 2];", "  mbs = [0];",
     "'space.mbs' must list whole numbers in 1..65536, not 0"),
    ("budget whose doubling overflows", "gpus = [8, 16];", "gpu_budget = 2000000000;",
     "'gpu_budget' must be a whole number in 1..16777216, not 2000000000"),
    ("tp x pp wrapping to 0", "  tp = [1, 2];", "  tp = [65536];",
     "'space.tp' must list whole numbers in 1..1024, not 65536"),
    ("pp beyond the stages", "  pp = [1, 2];", "  pp = [65536];",
     "'space.pp' must list whole numbers in 1..256, not 65536"),
    ("vp x pp wrapping to 0", "  pp = [1, 2];", "  pp = [2]; vp = [65536];",
     "'space.vp' must list whole numbers in 1..64, not 65536"),
    ("GPUs for a batch of 32", "gpus = [8, 16];", "gpus = [2147483647];",
     "'gpus' must list whole numbers in 1..16777216, not 2147483647"),
    ("GPUs as a 64-bit number", "gpus = [8, 16];", "gpus = [4294967296L];",
     "'gpus' must list whole numbers in 1..16777216"),
    ("half a sequence", "global_batch = 32;", "global_batch = 0.5;",
     "'global_batch' must be a whole number in 1..16777216, not 0.5"),
    ("ZeRO stage 7", "  mbs = [1, 2];", "  zero = [7];",
     "'space.zero' must list whole numbers in 0..3, not 7"),
    ("sp = 5", "  mbs = [1, 2];", "  sp = [5];",
     "'space.sp' must list whole numbers in 0..1, not 5"),
    ("depth beyond the limit", "  mbs = [1, 2];", "  layers = [1000000000];",
     "'space.layers' must list whole numbers in 1..65536, not 1000000000"),
    ("negative margin", "global_batch = 32;", "global_batch = 32; screen_margin = -1.0;",
     "'screen_margin' must be a number in 0..1000, not -1"),
    ("infinite margin", "global_batch = 32;", "global_batch = 32; screen_margin = 1e999;",
     "'screen_margin' must be a number in 0..1000, not inf"),
    ("neither gpus nor a budget", "gpus = [8, 16];", "", "give 'gpus' (a list) or 'gpu_budget'",
     {"line": 1}),
    # In range, but dp x mbs = 2^24 x 2^16 wrapped a 32-bit int to 0.
    ("dp x mbs beyond 32 bits", "gpus = [8, 16];", "gpus = [16777216];",
     "no layout is possible with these GPU counts (8 candidates, all rejected; the first: "
     "global batch 32 does not divide by dp 16777216 x mbs 65536)",
     {"also": [("  mbs = [1, 2];", "  mbs = [65536];")]}),
    # A width the heads do not divide: every candidate is invalid, not run.
    ("width the heads do not divide", "  mbs = [1, 2];", "  mbs = [1, 2]; hidden = [100];",
     "no layout is possible with these GPU counts (32 candidates, all rejected; the first: "
     "model: hidden 100 must be divisible by heads 16)", {"line": 5}),
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
    # libconfig reads any file an @include names (a FIFO for ever).
    ("an @include", "gpus = [8, 16];", '  @include "/dev/stdin"\ngpus = [8, 16];',
     "@include is not supported (prism's configuration files are whole in themselves)"),
]

failed = 0
with tempfile.TemporaryDirectory() as d:
    for what, old, new, msg, *opt in CASES:
        opt = opt[0] if opt else {}
        text = TEXT
        for o, n in [(old, new)] + opt.get("also", []):
            if o not in TEXT:
                sys.exit(f"FAIL: {SWEEP} has no line {o!r}")
            text = text.replace(o, n)
        line = opt.get("line") or next(i for i, l in enumerate(TEXT.splitlines(), 1) if l == old)
        bad = os.path.join(d, "bad.cfg")
        with open(bad, "w") as f:
            f.write(text)
        if os.path.exists(os.path.join(d, "x.db")):
            os.remove(os.path.join(d, "x.db"))
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
    # Not a regular file, too large, a NUL byte: refused before libconfig.
    fifo = os.path.join(d, "fifo.cfg")
    os.mkfifo(fifo)
    big = os.path.join(d, "big.cfg")
    with open(big, "w") as f:
        f.write(TEXT + "#" * (1 << 20) + "\n")
    nul = os.path.join(d, "nul.cfg")
    with open(nul, "w") as f:
        f.write(TEXT.replace("global_batch", "global\0batch"))
    for path, msg in ((fifo, f"prism: {fifo}: not a regular file (a FIFO)\n"),
                      (big, f"prism: {big}: {len(TEXT) + (1 << 20) + 1} bytes, more than a "
                       "configuration file may have (1048576)\n"),
                      (nul, f"prism: {nul}: byte {TEXT.index('global_batch') + 6}: a NUL byte "
                       "in a text file\n")):
        r = subprocess.run([PRISM, "search", path, "--db", os.path.join(d, "x.db")],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 2 or r.stderr != msg:
            print(f"FAIL: {path}: exit {r.returncode}, stderr {r.stderr!r}, want {msg!r}")
            failed += 1
sys.exit(1 if failed else 0)
