#!/usr/bin/env python3
"""The H200 set (tests/data/gpu-h200, ten eager points of
scripts/gpt_bench.py recorded on one H200) as prism reads it: the manifest
names the ten points and the fields the validation asks for, on an H200;
every trace replays within 2 % (the replay goal); the H200 profile's
multi_tensor_eff is the least-squares fit on these traces' fused AdamW
kernels (scripts/validate_gpu.py optimizer: a profile value and its data
kept in step); and prism synth on the H200 profile (the run as recorded)
is within 5 % of each GPU-bound point's CUDA-event step (hidden 4096;
docs/VALIDATION.md "The H200 set": worst -2.4 %).

Usage: gpu_set_h200.py PRISM REPO
"""
import json
import os
import subprocess
import sys
import tempfile


def main():
    prism, repo = os.path.abspath(sys.argv[1]), sys.argv[2]
    os.chdir(repo)  # prism and the script read configs/ from here
    sys.path.insert(0, os.path.join(repo, "scripts"))
    import validate_gpu as v
    data = os.path.join("tests", "data", "gpu-h200")
    pts = v.load(data)
    assert len(pts) == 10, sorted(pts)
    assert {(p["layers"], p["hidden"], p["microbatches"]) for p in pts.values()} == {
        (2, 4096, 1), (2, 4096, 4), (4, 4096, 1), (4, 4096, 4), (8, 4096, 1), (8, 4096, 4),
        (16, 4096, 1), (8, 2048, 1), (8, 2048, 4), (16, 2048, 4)}
    assert all("H200" in p["gpu"] and not p["compiled"] for p in pts.values())
    assert v.profile_of(pts) == "h200-dgx"
    errs = []
    for tag, p in pts.items():
        assert p["step_ms_p10"] <= p["step_ms_median"] <= p["step_ms_p90"], tag
        its = v.traced_step(prism, data, tag)[1]
        assert len(its) == 3, (tag, len(its))
        errs += [abs(i["error_pct"]) for i in its]
    mean = sum(errs) / len(errs)
    assert mean <= 2.0, mean
    # The profile's multi_tensor_eff is this set's fit (to its 3 decimals).
    import contextlib
    import io
    v.HW[0] = "h200-dgx"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        v.optimizer_table(prism, data, pts)
    fit = float(buf.getvalue().split("least squares: **")[1].split("**")[0])
    stated = v.profile_values("h200-dgx")[2]
    assert abs(fit - stated) < 5e-4, (fit, stated)
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for tag, p in pts.items():
            if p["hidden"] != 4096:
                continue
            assert v.gpu_bound(prism, data, tag), tag
            s = v.synth_point(prism, p, "eager", tmp)["iteration_s"] * 1e3
            e = s / p["step_ms_median"] - 1
            worst = max(worst, abs(e))
            assert abs(e) <= 0.05, (tag, s, p["step_ms_median"])
    print(f"{len(pts)} points, {len(errs)} steps replayed: mean |error| {mean:.2f}%; "
          f"multi_tensor_eff fit {fit:.3f} (profile {stated:.3f}); synth on the GPU-bound "
          f"points within {100 * worst:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
