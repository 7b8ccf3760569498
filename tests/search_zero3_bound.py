#!/usr/bin/env python3
"""The analytic estimate is a screen: a candidate estimated beyond the best
simulated step by more than the sweep's margin is dropped unsimulated, so an
estimate above its own simulated step could drop the fastest layout.  An
exhaustive sweep of ZeRO-3 layouts (tests/data/sweeps/zero3_bound.cfg:
gpt3-1.3b at tp 8 on 16 and 64 H100s, every sharding implementation,
prefetch 1 and 2, sp and selective recomputation on and off, host-bound
steps) had 14 of its 64 estimates above their simulated steps, by up to
2.0 % (FSDP2, prefetch 2, sp, selective: the backward's host slack split
as the compute splits, docs/MODEL.md "Analytic estimate"), and the wholly
host-bound ones by the gradient norm's all-reduce (62 us).  Checked: every
candidate simulated, none estimated above its simulated step, every
estimate within 10 % of it (a screen that errs low by more drops nothing),
and the default mode's screen keeps each GPU count's best.

usage: search_zero3_bound.py PRISM SWEEP   (SWEEP: tests/data/sweeps/zero3_bound.cfg)
"""
import sys

from sweeptest import estimate_bound

PRISM, SWEEP = sys.argv[1], sys.argv[2]
estimate_bound(PRISM, SWEEP, "zero3_bound", 64, {16, 64}, 0.9)
