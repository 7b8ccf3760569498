"""What the sweep tests share: a failure that ends the test, a prism run
with its exit status checked (both from clitest.py, fail-fast), a refusal
checked to the message, a file's digest, a results database read whole with
its integrity checked, or its simulated times, the small sweep written
again for another model, and the analytic estimate checked as a lower bound
on an exhaustive sweep."""
import hashlib
import os
import sqlite3
import tempfile

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


def best_simulated(db):
    """Each GPU count's fastest simulated candidate: {gpus: (key, iter_s)}."""
    con = sqlite3.connect(db)
    out = {}
    for g, key, it in con.execute("SELECT gpus, key, iter_s FROM candidate "
                                  "WHERE status='simulated' ORDER BY gpus, iter_s, key"):
        out.setdefault(g, (key, it))
    con.close()
    return out


def estimate_bound(prism_path, sweep, name, want, gpus, floor, floor_applies=lambda zero: True,
                   floor_what="estimates"):
    """The analytic estimate as a screen's lower bound on an exhaustive sweep:
    all `want` valid candidates simulated, none estimated above its simulated
    step, those floor_applies(zero) holds for at least `floor` of it, and the
    default (screened) mode finding each GPU count's (the set `gpus`) best."""
    with tempfile.TemporaryDirectory() as d:
        ex = os.path.join(d, "x.db")
        prism(prism_path, "search", sweep, "--db", ex, "--exhaustive", "--quiet")
        con = sqlite3.connect(ex)
        rows = con.execute("SELECT key, zero, analytic_s, iter_s FROM candidate "
                           "WHERE status='simulated'").fetchall()
        n = con.execute("SELECT COUNT(*) FROM candidate WHERE status != 'invalid'").fetchone()[0]
        con.close()
        check(len(rows) == want and n == want,
              f"{len(rows)} of {n} valid candidates simulated, want {want}")
        above = [(k, a, s) for k, _, a, s in rows if a > s]
        check(not above, f"{len(above)} estimates above their simulated steps: "
              + "; ".join(f"{k} {a * 1e3:.3f} > {s * 1e3:.3f} ms" for k, a, s in above[:5]))
        loose = [(k, a, s) for k, z, a, s in rows if floor_applies(z) and a < floor * s]
        check(not loose, f"{len(loose)} {floor_what} under {floor * 100:.0f} % of their "
              "simulated steps: "
              + "; ".join(f"{k} {a * 1e3:.3f} < {s * 1e3:.3f} ms" for k, a, s in loose[:5]))
        ratios = [a / s for _, _, a, s in rows]
        sc = os.path.join(d, "s.db")
        prism(prism_path, "search", sweep, "--db", sc, "--quiet")
        bx, bs = best_simulated(ex), best_simulated(sc)
        check(set(bx) == set(gpus) and bx == bs,
              f"the screened sweep's best {bs} differs from the exhaustive one's {bx}")
        print(f"{name}: {len(rows)} simulated, none estimated above; estimate/simulated "
              f"{min(ratios):.4f} .. {max(ratios):.4f}, mean {sum(ratios) / len(ratios):.4f}")
