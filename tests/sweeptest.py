"""What the sweep tests share: a failure that ends the test, a prism run
with its exit status checked (both from clitest.py, fail-fast), a refusal
checked to the message, a file's digest, a results database read whole with
its integrity checked, or its simulated times, and the small sweep written
again for another model."""
import hashlib
import os
import sqlite3

from clitest import check, prism  # noqa: F401 (prism: for the sweep tests)


def sweep_for(sweep, model, d, name):
    """The sweep file at sweep (tests/data/sweeps/small.cfg, gpt-small) with
    model in gpt-small's place, written to d/name; its path and text."""
    with open(sweep) as f:
        text = f.read().replace('model = "gpt-small";', f'model = "{model}";')
    check(f'model = "{model}";' in text, f"{sweep}: the sweep's model not replaced")
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path, text


def digest(path):
    """SHA-256 of the file at path (that it was left byte for byte)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def refused(r, want, what):
    """End the test unless the completed run r exited 2 saying exactly want."""
    check(r.returncode == 2 and r.stderr == want,
          f"{what}: exit {r.returncode}, stderr {r.stderr!r}, want {want!r}")
    print(f"ok: {what}: {want.strip()}")


def rows(db, leave_out=()):
    """Every candidate row of db, sorted by key, its columns by name (their
    order in the table is not prism's to keep: a column added by an upgrade
    comes last) but those in leave_out, after PRAGMA integrity_check says ok
    and each key is stored once."""
    con = sqlite3.connect(db)
    ok = con.execute("PRAGMA integrity_check").fetchall()
    cols = sorted(c[1] for c in con.execute("PRAGMA table_info(candidate)")
                  if c[1] not in leave_out)
    out = con.execute(f"SELECT {', '.join(cols)} FROM candidate ORDER BY key").fetchall()
    keys = con.execute("SELECT COUNT(DISTINCT key), COUNT(*) FROM candidate").fetchone()
    con.close()
    check(ok == [("ok",)], f"{db}: integrity_check {ok}")
    check(keys[0] == keys[1], f"{db}: {keys[1]} rows for {keys[0]} keys")
    return out


def times(db):
    """{key: iteration seconds} of db's simulated candidates."""
    con = sqlite3.connect(db)
    out = dict(con.execute("SELECT key, iter_s FROM candidate WHERE status='simulated'"))
    con.close()
    return out
