#!/usr/bin/env python3
"""The analytic estimate is a screen: a candidate estimated beyond the best
simulated step by more than the sweep's margin is dropped unsimulated, so an
estimate above its own simulated step could drop the fastest layout.  An
exhaustive sweep of pipelines (tests/data/sweeps/pipe_bound.cfg: gpt3-1.3b
on 32, 128 and 512 H100s, tp 1, 4 and 8 without sequence parallelism, 4 and
8 stages, 2 to 512 microbatches, every ZeRO stage, whole and hybrid
shards) had 59 of its 189 estimates above their simulated steps, by up to
20 %: the pipeline's transfers priced as the whole activation where the
simulation sends a tensor-parallel rank's share (tp 8 pp 8 dp 8, 8
microbatches: +9.3 %), host-bound slots paced as the sum of their longer
sides (tp 8 pp 8 dp 2, 256 microbatches: +0.8 %), and Megatron ZeRO-2's
per-microbatch reductions (the hybrid shards' replica all-reduce with
them) set against a stage's own slot where the slowest stage paces it
(tp 1 pp 8 dp 16 shard 8: +20 %; docs/MODEL.md "Analytic estimate").
Checked: every candidate simulated, none estimated above its simulated
step, every ZeRO-0/1/2 estimate within 15 % of it (ZeRO-3's gathers on
pipelines are estimated looser, down to 0.67, and left out of that), and
the default mode's screen keeps each GPU count's best.

usage: search_pipe_bound.py PRISM SWEEP   (SWEEP: tests/data/sweeps/pipe_bound.cfg)
"""
import os
import sqlite3
import sys
import tempfile

from sweeptest import check, prism

PRISM, SWEEP = sys.argv[1], sys.argv[2]


def best(db):
    """Each GPU count's fastest simulated candidate: {gpus: (key, iter_s)}."""
    con = sqlite3.connect(db)
    out = {}
    for g, key, it in con.execute("SELECT gpus, key, iter_s FROM candidate "
                                  "WHERE status='simulated' ORDER BY gpus, iter_s, key"):
        out.setdefault(g, (key, it))
    con.close()
    return out


with tempfile.TemporaryDirectory() as d:
    ex = os.path.join(d, "x.db")
    prism(PRISM, "search", SWEEP, "--db", ex, "--exhaustive", "--quiet")
    con = sqlite3.connect(ex)
    rows = con.execute("SELECT key, zero, analytic_s, iter_s FROM candidate "
                       "WHERE status='simulated'").fetchall()
    n = con.execute("SELECT COUNT(*) FROM candidate WHERE status != 'invalid'").fetchone()[0]
    con.close()
    check(len(rows) == 189 and n == 189, f"{len(rows)} of {n} valid candidates simulated, want 189")
    above = [(k, a, s) for k, _, a, s in rows if a > s]
    check(not above, f"{len(above)} estimates above their simulated steps: "
          + "; ".join(f"{k} {a * 1e3:.3f} > {s * 1e3:.3f} ms" for k, a, s in above[:5]))
    loose = [(k, a, s) for k, z, a, s in rows if z < 3 and a < 0.85 * s]
    check(not loose, f"{len(loose)} ZeRO-0/1/2 estimates under 85 % of their simulated steps: "
          + "; ".join(f"{k} {a * 1e3:.3f} < {s * 1e3:.3f} ms" for k, a, s in loose[:5]))
    ratios = [a / s for _, _, a, s in rows]
    sc = os.path.join(d, "s.db")
    prism(PRISM, "search", SWEEP, "--db", sc, "--quiet")
    bx, bs = best(ex), best(sc)
    check(set(bx) == {32, 128, 512} and bx == bs,
          f"the screened sweep's best {bs} differs from the exhaustive one's {bx}")
    print(f"pipe_bound: {len(rows)} simulated, none estimated above; estimate/simulated "
          f"{min(ratios):.4f} .. {max(ratios):.4f}, mean {sum(ratios) / len(ratios):.4f}")
