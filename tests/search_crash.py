#!/usr/bin/env python3
"""prism search survives SIGKILL: a sweep is killed at random moments (at
least 5 times, each while it runs), then rerun to the end.  Every candidate
must be stored exactly once, PRAGMA integrity_check must say ok, and the
database must equal an uninterrupted run's row for row.

usage: search_crash.py PRISM SWEEP [SEED]
"""
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

from sweeptest import check, rows

PRISM, SWEEP = sys.argv[1], sys.argv[2]
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else random.randrange(1 << 30)
KILLS = 5


def cmd(db):
    return [PRISM, "search", SWEEP, "--db", db, "--exhaustive", "--batch", "4"]


print(f"seed {SEED} (search_crash.py PRISM SWEEP {SEED} repeats this run)", flush=True)
rng = random.Random(SEED)
def stored(db):
    """Rows stored so far: none where the kill came before the schema was
    committed (the file created, its tables not yet)."""
    if not os.path.exists(db):
        return 0
    con = sqlite3.connect(db)
    has = con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name='candidate'").fetchone()[0]
    con.close()
    return len(rows(db)) if has else 0


with tempfile.TemporaryDirectory() as d:
    ref = os.path.join(d, "ref.db")
    t0 = time.monotonic()
    r = subprocess.run(cmd(ref), capture_output=True, text=True)
    span = time.monotonic() - t0
    check(r.returncode == 0, f"reference run exited {r.returncode}: {r.stderr}")
    want = rows(ref)
    db = os.path.join(d, "crash.db")
    kills, tries = [], 0
    while len(kills) < KILLS:
        tries += 1
        check(tries < 100, f"only {len(kills)} kills landed in 100 tries")
        p = subprocess.Popen(cmd(db), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        delay = rng.uniform(0.02, span / (KILLS + 1))
        time.sleep(delay)
        if p.poll() is not None:  # finished first: start again from nothing
            os.remove(db)
            kills = []
            continue
        p.send_signal(signal.SIGKILL)
        p.wait()
        kills.append((round(delay, 3), stored(db)))
    stored_before = min(k[1] for k in kills)
    r = subprocess.run(cmd(db), capture_output=True, text=True)
    check(r.returncode == 0, f"final run exited {r.returncode}: {r.stderr}")
    got = rows(db)
    check(len(got) == len(want), f"{len(got)} rows after the kills, {len(want)} uninterrupted")
    check(got == want, "the killed-and-resumed database differs from the uninterrupted one")
    check(stored_before < len(want), "every kill came after everything was stored")
    print(f"seed {SEED}: {KILLS} kills (delay s, rows stored) {kills}; resumed to "
          f"{len(got)} rows, integrity ok, equal to the uninterrupted run")
