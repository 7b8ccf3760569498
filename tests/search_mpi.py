#!/usr/bin/env python3
"""mpirun -np 2 prism search: the database equals the single-process one
row for row (screened and exhaustive); killing one process mid-sweep stops
the job with a message naming it, and rerunning resumes to the same
database without duplicates or losses.

usage: search_mpi.py MPIRUN PRISM SWEEP
"""
import os
import signal
import subprocess
import sys
import tempfile

from sweeptest import check, rows

MPIRUN, PRISM, SWEEP = sys.argv[1], sys.argv[2], sys.argv[3]
MPI = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2"]


def search(db, *extra, mpi=False):
    cmd = (MPI if mpi else []) + [PRISM, "search", SWEEP, "--db", db, "--threads", "1", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0, f"{' '.join(cmd)} exited {r.returncode}: {r.stderr[-2000:]}")
    return r


def rank_pids(parent):
    """The processes mpirun started, by MPI rank."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
        except OSError:
            continue
        if b"OMPI_COMM_WORLD_RANK" in env:
            out[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(pid)
    return out


with tempfile.TemporaryDirectory() as d:
    for extra in ([], ["--exhaustive", "--batch", "4"]):
        name = " ".join(extra) or "screened"
        one, two = os.path.join(d, "one.db"), os.path.join(d, "two.db")
        for f in (one, two):
            if os.path.exists(f):
                os.remove(f)
        search(one, *extra)
        r = search(two, *extra, mpi=True)
        check("x 2 processes" in r.stderr, "the job did not run as 2 processes: " + r.stderr)
        check(rows(two) == rows(one), f"{name}: 2 processes and 1 disagree")
        print(f"{name}: mpirun -np 2 equals one process, {len(rows(one))} rows")
    want = rows(one)  # exhaustive, batch 4

    # Kill process 1 mid-sweep.
    db = os.path.join(d, "killed.db")
    p = subprocess.Popen(MPI + [PRISM, "search", SWEEP, "--db", db, "--threads", "1",
                                "--exhaustive", "--batch", "4"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # The first batch's progress line (a log gets the next ones 10 s
    # apart): the job is mid-sweep.
    for line in p.stdout:
        if "evaluated" in line:
            break
    pids = rank_pids(p.pid)
    check(1 in pids, f"no process of rank 1 under mpirun {p.pid}: {pids}")
    os.kill(pids[1], signal.SIGKILL)
    try:
        tail = p.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        p.kill()
        sys.exit("FAIL: the job did not stop within 60 s of losing a process")
    check(p.returncode != 0, "the job exited 0 after losing a process")
    check("rank 1" in tail and ("signal 9" in tail or "Killed" in tail),
          "no message naming the killed process: " + tail[-1500:])
    partial = rows(db)
    check(0 < len(partial) < len(want), f"{len(partial)} rows when killed, of {len(want)}")
    search(db, "--exhaustive", "--batch", "4", mpi=True)
    check(rows(db) == want, "resumed after the kill: differs from the uninterrupted run")
    print(f"killed rank 1 with {len(partial)} of {len(want)} rows stored: the job stopped "
          f"(exit {p.returncode}), the rerun resumed to the same database")
