#!/usr/bin/env python3
"""scripts/docs_figures: generated blocks rewritten from their commands,
stale blocks named by --check, malformed blocks refused with the file and
line, $SHARED blocks skipped where the folder is absent, and the docs'
`checked` blocks in step with this prism (a cost-model change that moves
one of their figures fails here until `scripts/docs_figures` is re-run).

usage: docs_figures.py PRISM
"""
import os
import subprocess
import sys
import tempfile

from sweeptest import check

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "scripts", "docs_figures")
PRISM = sys.argv[1]


def figures(*args, shared=None):
    cmd = [sys.executable, SCRIPT, "--prism", PRISM, *args]
    if shared:
        cmd += ["--shared", shared]
    return subprocess.run(cmd, capture_output=True, text=True)


with tempfile.TemporaryDirectory() as tmp:
    page = os.path.join(tmp, "page.md")
    text = ("# A page\n\nprose stays\n\n"
            "<!-- figures two: printf '\\n| a |\\n|---|\\n| 2 |\\n\\n' -->\n"
            "| a |\n|---|\n| 1 |\n"
            "<!-- end figures two -->\n\nmore prose\n\n"
            "  <!-- figures ver checked: $PRISM --version | cut -d' ' -f1 -->\n"
            "  <!-- end figures ver -->\n"
            "<!-- figures data: ls $SHARED -->\nkept\n<!-- end figures data -->\n")
    with open(page, "w") as f:
        f.write(text)
    absent = os.path.join(tmp, "no-shared")

    r = figures("--check", page, shared=absent)
    check(r.returncode == 1 and "2 blocks run, 2 stale: two, ver; 1 skipped; 0 failed"
          in r.stdout and "data: skipped" in r.stderr, f"--check: {r.returncode} {r.stdout}")
    with open(page) as f:
        check(f.read() == text, "--check changed the page")
    print("ok: --check names the stale blocks and changes nothing")

    r = figures(page, shared=absent)
    check(r.returncode == 0, f"regenerate: {r.returncode} {r.stderr}")
    with open(page) as f:
        got = f.read()
    want = text.replace("| a |\n|---|\n| 1 |\n", "| a |\n|---|\n| 2 |\n").replace(
        "checked: $PRISM --version | cut -d' ' -f1 -->\n",
        "checked: $PRISM --version | cut -d' ' -f1 -->\nprism\n")
    check(got == want, f"regenerated page:\n{got}")
    r = figures("--check", "--checked", page, shared=absent)
    check(r.returncode == 0 and "1 blocks run, 0 stale" in r.stdout,
          f"--checked after regenerating: {r.stdout}")
    print("ok: blocks rewritten from their commands (blank ends dropped), prose kept")

    os.mkdir(absent)
    r = figures("--only", "data", page, shared=absent)
    with open(page) as f:
        check(r.returncode == 0 and "<!-- figures data: ls $SHARED -->\n<!-- end figures data -->"
              in f.read(), f"$SHARED present: {r.stdout}")
    print("ok: a $SHARED block runs where the folder is")

    bad = [("<!-- figures x: true -->\nno end\n", "page.md:1: block 'x' is never closed "
            "(want '<!-- end figures x -->')"),
           ("<!-- end figures x -->\n", "page.md:1: '<!-- end figures x -->' closes no block"),
           ("a\n<!-- figures x -->\n", "page.md:2: malformed block opening "
            "(want '<!-- figures ID[ checked]: COMMAND -->')"),
           ("<!-- figures x: a -->\n<!-- end figures x -->\n<!-- figures x: b -->\n"
            "<!-- end figures x -->\n", "page.md:3: block 'x' appears twice"),
           ("<!-- figures x: false -->\n<!-- end figures x -->\n", None)]
    for body, msg in bad:
        with open(page, "w") as f:
            f.write(body)
        r = figures(page)
        if msg is None:
            check(r.returncode == 1 and "1 failed: x" in r.stdout
                  and "page.md:1: x: exit 1: false" in r.stderr,
                  f"failing command: {r.returncode} {r.stdout} {r.stderr}")
            continue
        check(r.returncode == 2 and r.stderr.strip().endswith(msg),
              f"{body!r}: exit {r.returncode}, {r.stderr!r}")
    print("ok: malformed blocks refused with file and line; a failing command named")

# The project's own docs: every block well formed, and the checked ones in step.
r = figures("--list")
check(r.returncode == 0 and r.stdout.count("\n") >= 10, f"--list: {r.stdout} {r.stderr}")
r = figures("--check", "--checked")
check(r.returncode == 0, "the docs' checked blocks are stale (re-run scripts/docs_figures "
      f"and commit the docs):\n{r.stdout}\n{r.stderr[-3000:]}")
print(f"ok: {r.stdout.strip()}")

# Figures the README quotes from a checked block are that block's.
import re  # noqa: E402
with open(os.path.join(HERE, "..", "docs", "VALIDATION.md")) as f:
    m = re.search(r"figures memory checked:.*?Mean \|error\| ([0-9.]+)%", f.read(), re.S)
check(m, "docs/VALIDATION.md has no memory block with its mean error")
with open(os.path.join(HERE, "..", "README.md")) as f:
    check(f"our H100 runs within {m.group(1)} %" in f.read(),
          f"README.md does not quote the memory block's mean error, {m.group(1)} %")
print(f"ok: README.md quotes the memory block's {m.group(1)} %")
