#!/usr/bin/env python3
"""cmake --install into a temporary prefix, then the installed prism run
from / as a user would: it finds its configurations in PREFIX/share/prism
(not in the source tree), `prism list` shows what ships, PRISM_CONFIG_DIR
comes first, and the installed tree still works after it is moved.  The
manual page renders without a warning and names every command of `prism
--help`; the bash and zsh completions complete commands, options and
configuration names from the installed prism (zsh's where zsh is).

usage: install.py CMAKE BUILD_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from clitest import check

CMAKE, BUILD = sys.argv[1], sys.argv[2]


def run(prism, *args, env=None, code=0):
    e = {k: v for k, v in os.environ.items() if k != "PRISM_CONFIG_DIR"}
    e.update(env or {})
    r = subprocess.run([prism, *args], capture_output=True, text=True, cwd="/", env=e)
    check(r.returncode == code, f"{prism} {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r


with tempfile.TemporaryDirectory() as d:
    prefix = os.path.join(d, "prefix")
    r = subprocess.run([CMAKE, "--install", BUILD, "--prefix", prefix], capture_output=True,
                       text=True)
    check(r.returncode == 0, f"cmake --install: {r.stdout}{r.stderr}")
    prism = os.path.join(prefix, "bin", "prism")
    for f in ["bin/prism", "share/prism/hw/h100-dgx.cfg", "share/prism/models/gpt-small.cfg",
              "share/prism/sweeps/gpt3-1.3b-h100.cfg", "share/prism/collect_trace.py",
              "share/doc/prism/README.md", "share/doc/prism/RESULTS.md",
              "share/doc/prism/MODEL.md", "share/man/man1/prism.1",
              "share/bash-completion/completions/prism", "share/zsh/site-functions/_prism"]:
        check(os.path.exists(os.path.join(prefix, f)), f"not installed: {f}")

    r = run(prism, "synth", "gpt-small", "--hw", "h100-dgx")
    check("iteration" in r.stdout, f"synth from /: {r.stdout}")
    r = run(prism, "list", "hw", "--paths")
    check(any(l.startswith("h100-dgx ") for l in r.stdout.splitlines()), f"list hw: {r.stdout}")
    want = os.path.join(prefix, "share", "prism", "hw", "h100-dgx.cfg")
    check(want in r.stdout, f"list hw --paths does not name {want}:\n{r.stdout}")
    r = run(prism, "list")
    for kind in ("models:", "hw:", "sweeps:"):
        check(kind in r.stdout.splitlines(), f"list: no {kind}")
    check(any(l.startswith("gpt3-1.3b-h100 ") for l in r.stdout.splitlines()), "list: sweeps")
    print("ok: installed prism runs synth and list from /, configs from", prefix)

    # PRISM_CONFIG_DIR: its own names, and it wins over the shipped ones.
    mine = os.path.join(d, "mine")
    os.makedirs(os.path.join(mine, "hw"))
    with open(os.path.join(prefix, "share/prism/hw/h100-dgx.cfg")) as f:
        text = f.read()
    with open(os.path.join(mine, "hw", "lab-gpu.cfg"), "w") as f:
        f.write(text)
    with open(os.path.join(mine, "hw", "h100-dgx.cfg"), "w") as f:
        f.write(text.replace('name = "DGX H100"', 'name = "Our H100"'))
    env = {"PRISM_CONFIG_DIR": mine}
    r = run(prism, "list", "hw", env=env)
    lines = r.stdout.splitlines()
    check(any(l.startswith("lab-gpu ") for l in lines), f"PRISM_CONFIG_DIR: {r.stdout}")
    check(any(l.startswith("h100-dgx ") and "Our H100" in l for l in lines),
          f"PRISM_CONFIG_DIR does not come first: {r.stdout}")
    run(prism, "synth", "gpt-small", "--hw", "lab-gpu", env=env)
    print("ok: PRISM_CONFIG_DIR adds names and overrides the shipped ones")

    # Did you mean, from the installed names.
    r = run(prism, "synth", "gpt-smal", "--hw", "h100-dgx", code=2)
    check(r.stderr.count("\n") == 1 and "did you mean gpt-small?" in r.stderr,
          f"unknown model: {r.stderr!r}")

    # The manual page: renders without a warning, names every command.
    man = os.path.join(prefix, "share", "man", "man1", "prism.1")
    if shutil.which("groff"):
        r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", man], capture_output=True,
                           text=True)
        check(r.returncode == 0 and r.stderr == "", f"prism.1 does not render: {r.stderr}")
    with open(man) as f:
        page = f.read()
    helptext = run(prism, "--help").stdout
    cmds = re.findall(r"^  ([a-z]+) ", helptext.split("commands:")[1], re.M)
    check(len(cmds) >= 10, f"commands of prism --help: {cmds}")
    for c in cmds:
        check(re.search(r'^\.(BI|BR|B) "?' + c + r'[ "]', page, re.M),
              f"the manual page does not describe '{c}'")
    print(f"ok: the manual page renders and names the {len(cmds)} commands")

    # bash completion, as bash runs it: commands, a command's options, the
    # configurations' names.
    comp = os.path.join(prefix, "share", "bash-completion", "completions", "prism")

    t = ('source "$1"; COMP_WORDS=({w}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _prism; '
         'printf "%s\\n" "${{COMPREPLY[@]}}"')

    def bash(words):
        return subprocess.run(["bash", "-c", t.format(w=words), "bash", comp],
                              capture_output=True, text=True, cwd="/").stdout.split()

    check(bash(f"{prism} re") == ["replay", "report"], f"bash: prism re: {bash(f'{prism} re')}")
    got = bash(f"{prism} ''")
    check(sorted(got) == sorted(cmds + ["--help", "--version"]), f"bash: the commands: {got}")
    check(bash(f"{prism} report db --ti") == ["--tie"], "bash: report --ti")
    check(bash(f"{prism} synth gpt-sm") == ["gpt-small"], "bash: a model's name")
    check(bash(f"{prism} synth gpt-small --hw h100-") == ["h100-dgx"], "bash: --hw")
    print("ok: bash completes commands, options and configuration names")

    zsh = shutil.which("zsh")
    if zsh:
        z = os.path.join(prefix, "share", "zsh", "site-functions", "_prism")
        stub = ('compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@" }; '
                '_files() { print -r -- "<files>" }; source "$1" >/dev/null 2>&1; '
                'words=(WORDS); CURRENT=${#words}; PREFIX=${words[CURRENT]}; _prism')

        def zcomp(words):
            return subprocess.run([zsh, "-f", "-c", stub.replace("WORDS", words), "zsh", z],
                                  capture_output=True, text=True, cwd="/").stdout.split()

        check(subprocess.run([zsh, "-n", z]).returncode == 0, "_prism: zsh syntax")
        check(sorted(zcomp(f"{prism} x")) == sorted(cmds + ["--help", "--version"]),
              f"zsh: the commands: {zcomp(f'{prism} x')}")
        check("--tie" in zcomp(f"{prism} report db --t"), "zsh: report's options")
        check("h100-dgx" in zcomp(f"{prism} synth m --hw h"), "zsh: --hw names")
        print("ok: zsh completes commands, options and configuration names")
    else:
        print("skip: zsh completion (no zsh)")

    # The installed tree, moved, still finds its configurations.
    moved = os.path.join(d, "moved")
    shutil.move(prefix, moved)
    r = run(os.path.join(moved, "bin", "prism"), "list", "hw", "--paths")
    check(os.path.join(moved, "share", "prism", "hw", "h100-dgx.cfg") in r.stdout,
          f"moved tree: {r.stdout}")
    print("ok: a moved installation finds its configurations")
