#!/usr/bin/env python3
"""A sweep's identity includes its inputs' content (search/sweep.h,
sweep.inputs): a resume after the hardware profile, its kernel model or the
model changed is refused (exit 2, naming what changed, the database left as
it was); comments and layout are no change, nor is the same content found
elsewhere; a sweep stored by a prism that did not record its inputs is not
resumed; `prism report` lists the inputs; `prism --version` names the
commit.

usage: search_inputs.py PRISM SWEEP   (SWEEP: tests/data/sweeps/small.cfg)
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from sweeptest import check, prism, refused, rows

PRISM, SWEEP = os.path.abspath(sys.argv[1]), sys.argv[2]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ver = prism(PRISM, "--version").stdout
m = re.fullmatch(r"prism (0\.1\.0 \((git [0-9a-f]{7,40}(-dirty)?|no git: built outside a git "
                 r"checkout)\))\n", ver)
check(m is not None, f"--version: {ver!r}")
VERSION = m.group(1)

with tempfile.TemporaryDirectory() as d:
    hw, model = os.path.join(d, "myhw.cfg"), os.path.join(d, "mymodel.cfg")
    shutil.copy(os.path.join(ROOT, "configs/hw/h100-dgx.cfg"), hw)
    shutil.copy(os.path.join(ROOT, "configs/models/gpt-small.cfg"), model)
    with open(hw) as f:
        HW = f.read()
    with open(model) as f:
        MODEL = f.read()
    cfg = os.path.join(d, "s.cfg")
    with open(SWEEP) as f:
        text = f.read()
    with open(cfg, "w") as f:
        f.write(text.replace('hw = "h100-dgx";', f'hw = "{hw}";')
                .replace('model = "gpt-small";', f'model = "{model}";'))
    db = os.path.join(d, "r.db")

    def search(code=0, env=None):
        r = subprocess.run([PRISM, "search", cfg, "--db", db, "--exhaustive", "--threads", "1"],
                           capture_output=True, text=True, env=env)
        check(r.returncode == code, f"search exited {r.returncode}: {r.stderr}")
        return r

    def edit(path, text):
        with open(path, "w") as f:
            f.write(text)

    search()
    want = rows(db)
    con = sqlite3.connect(db)
    version, inputs = con.execute("SELECT version, inputs FROM sweep").fetchone()
    con.close()
    lines = dict(l.split("\t") for l in inputs.splitlines())
    check(version == VERSION and lines["prism"] == VERSION, f"version {version!r}, {lines}")
    check(sorted(lines) == ["hw:myhw", "kernels:myhw", "model", "prism"], f"inputs {lines}")
    check(all(re.fullmatch(r"fnv1a64:[0-9a-f]{16}", v) for k, v in lines.items() if k != "prism")
          and len({lines["hw:myhw"], lines["kernels:myhw"], lines["model"]}) == 3, str(lines))

    # Unchanged, and changed only in comments and layout: resumed.
    check("resuming" in search().stderr, "an unchanged sweep did not resume")
    edit(hw, "# a comment\n" + HW.replace("  nic_bandwidth_Gbps = 400.0;",
                                          "  nic_bandwidth_Gbps   =   400.0;  # edited"))
    check("resuming" in search().stderr, "a comment in the profile made another sweep")

    # The profile's network, its kernel model, the model: each refused,
    # named, and nothing written.
    tail = (f": resuming would mix its rows with rows computed from these: start a new sweep "
            f"(another 'name' in {cfg}, or another --db), or put back the inputs it ran with "
            f"(prism report {db} --sweep 1 lists them)\n")
    head = f"prism: {db}: sweep small (id 1) ran on other inputs (changed since: "
    edit(hw, HW.replace("nic_bandwidth_Gbps = 400.0;", "nic_bandwidth_Gbps = 200.0;"))
    refused(search(code=2), head + "the hardware profile myhw)" + tail, "profile edited")
    # (the first tile_us, whatever the shipped profile's fit)
    edit(hw, re.sub(r"tile_us = [0-9.]+;", "tile_us = 9.5;", HW, count=1))
    check(re.search(r"tile_us = [0-9.]+;", HW), "the profile has no tile_us")
    refused(search(code=2), head + "the kernel model ('kernels') of the hardware profile myhw)"
            + tail, "kernel model edited")
    edit(hw, HW)
    edit(model, MODEL.replace("layers = 8;", "layers = 10;"))
    check(MODEL != MODEL.replace("layers = 8;", "layers = 10;"), "gpt-small has no 'layers = 8'")
    refused(search(code=2), head + "the model)" + tail, "model edited")
    edit(model, MODEL)
    check(rows(db) == want, "a refused resume wrote into the database")
    check("resuming" in search().stderr, "the inputs put back did not resume")

    # Content, not file names: the profile found by name in another
    # configuration folder resumes when it holds the same settings.
    edit(cfg, text.replace('model = "gpt-small";', f'model = "{model}";'))
    db2 = os.path.join(d, "byname.db")
    cdir = os.path.join(d, "configs")
    os.makedirs(os.path.join(cdir, "hw"))
    db, keep = db2, db
    search()
    env = dict(os.environ, PRISM_CONFIG_DIR=cdir)
    edit(os.path.join(cdir, "hw", "h100-dgx.cfg"), "# a copy\n" + HW)
    check("resuming" in search(env=env).stderr, "the same profile elsewhere did not resume")
    edit(os.path.join(cdir, "hw", "h100-dgx.cfg"), HW.replace("sms = 132;", "sms = 114;"))
    r = search(code=2, env=env)
    check("(changed since: the kernel model ('kernels') of the hardware profile h100-dgx)"
          in r.stderr, r.stderr)
    db = keep
    edit(cfg, text.replace('hw = "h100-dgx";', f'hw = "{hw}";')
         .replace('model = "gpt-small";', f'model = "{model}";'))

    # A sweep stored by a prism that did not record its inputs.
    con = sqlite3.connect(db)
    con.execute("UPDATE sweep SET inputs=NULL, version='0.1.0'")
    con.commit()
    con.close()
    refused(search(code=2),
            f"prism: {db}: sweep small (id 1) was run by prism 0.1.0, which did not record its "
            f"inputs: resuming could mix its rows with rows computed from others: start a new "
            f"sweep (another 'name' in {cfg}, or another --db)\n", "inputs not recorded")

    # The report lists them (JSON and Markdown); an old sweep says so.
    out = os.path.join(d, "rep")
    rep = json.loads(prism(PRISM, "report", db2, "-o", out, "--json").stdout)
    check(rep["sweep"]["version"] == VERSION and rep["sweep"]["inputs"]["prism"] == VERSION
          and sorted(rep["sweep"]["inputs"]) == ["hw:h100-dgx", "kernels:h100-dgx", "model",
                                                 "prism"], str(rep["sweep"]))
    md = prism(PRISM, "report", db2, "-o", out).stdout
    check("- hw:h100-dgx: fnv1a64:" in md and f"- prism: {VERSION}" in md, md[:600])
    rep = json.loads(prism(PRISM, "report", db, "-o", out, "--json").stdout)
    check(rep["sweep"]["inputs"] is None, str(rep["sweep"]))
    md = prism(PRISM, "report", db, "-o", out).stdout
    check("Computed by prism 0.1.0, which did not record its inputs." in md, md[:600])
print("search: a resume on changed inputs (profile, kernel model, model) is refused, naming "
      "them; comments and another folder with the same settings resume")
