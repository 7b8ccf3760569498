"""What the python CLI tests share: a check, a prism run, and the end of a
test that collects its failures.

check() ends the test at the first failure (sys.exit("FAIL: msg"): the
message on stderr, exit 1), as the sweep tests want.  A test that would
rather see every failure at once calls collect() first: check() then keeps
each message, and done(), the test's last line, prints them as "FAIL: msg"
lines on stdout and exits 1 if there was any, 0 otherwise.
"""
import subprocess
import sys

_fails = None  # None: fail fast; a list: the messages collected so far


def collect():
    """From here on check() collects its failures for done()."""
    global _fails
    _fails = []


def check(cond, msg):
    """FAIL: msg unless cond: at once, or at done() after collect()."""
    if cond:
        return
    if _fails is None:
        sys.exit("FAIL: " + msg)
    _fails.append(msg)


def done():
    """Print each collected failure as FAIL: msg; exit 1 if any, else 0."""
    for f in _fails or []:
        print("FAIL:", f)
    sys.exit(1 if _fails else 0)


def run(binary, *args, **kw):
    """Run binary (prism) with args, its exit status unchecked; the
    completed process (stdout, stderr as text).  kw goes to subprocess.run."""
    return subprocess.run([binary, *args], capture_output=True, text=True, **kw)


def prism(binary, *args, code=0, **kw):
    """Run binary (prism) with args; check that it exits code.
    Returns the completed process (stdout, stderr as text)."""
    r = run(binary, *args, **kw)
    check(r.returncode == code, f"prism {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r
