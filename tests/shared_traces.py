#!/usr/bin/env python3
"""Compare `prism ingest --json` with ../shared/traces/summary.json.

Every trace in the shared set must ingest, and these counts must be equal:
events, GPU streams, GPU events with a correlation id and those matched to
their launch call, synchronisation calls by kind, cudaGraphLaunch calls,
cuda_sync records, NCCL kernels by collective, and the ProfilerStep
iterations (number, step ids and durations to the nanosecond).
Differences that are understood are listed in docs/FORMATS.md; none is
expected here, so any difference fails.

Usage: shared_traces.py PRISM [TRACES_DIR]   (exit 77 = skipped)
"""
import json
import os
import subprocess
import sys

SYNC_CLASS = {
    "cudaStreamWaitEvent": "stream-wait-event",
    "cudaEventRecord": "event-record",
    "cudaEventRecordWithFlags": "event-record",
    "cudaStreamSynchronize": "stream-sync",
    "cudaDeviceSynchronize": "device-sync",
    "cudaEventSynchronize": "event-sync",
    "cudaEventQuery": "event-query",
}
NCCL_KIND = {"AllReduce": "all_reduce", "AllGather": "all_gather",
             "ReduceScatter": "reduce_scatter", "Broadcast": "broadcast",
             "Reduce": "reduce", "SendRecv": "send_recv", "Send": "send",
             "Recv": "recv"}


def main():
    prism = sys.argv[1]
    root = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(__file__), "..", "..", "shared", "traces")
    summary_path = os.path.join(root, "summary.json")
    if not os.path.exists(summary_path):
        print(f"SKIP: {summary_path} not found (the shared traces live beside the "
              "checkout in ../shared/traces)")
        return 77
    with open(summary_path) as f:
        summary = json.load(f)
    failures = 0
    for rel, want in sorted(summary.items()):
        path = os.path.join(root, rel)
        run = subprocess.run([prism, "ingest", "--json", path],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(f"FAIL {rel}: exit {run.returncode}: {run.stderr.strip()}")
            failures += 1
            continue
        got = json.loads(run.stdout)
        rank = got["ranks"][0]
        gpu_nodes = sum(got["nodes"][k] for k in
                        ("kernel", "memcpy", "memset", "collective", "p2p"))
        checks = [
            ("events", rank["events"], want["n_events"]),
            ("GPU streams", sorted(rank["streams"]),
             sorted(s.replace("stream ", "") for s in want["gpu_pid_tid_streams"])),
            # summary.json counts distinct correlation ids: one cudaGraphLaunch
            # id owns many GPU tasks (docs/FORMATS.md).
            ("GPU correlation ids", rank["gpu_corr_ids"],
             want["gpu_events_with_correlation"]),
            ("GPU correlation ids matched to their launch",
             rank["gpu_corr_ids_launched"], want["gpu_events_matched_to_runtime"]),
            ("GPU tasks", gpu_nodes, sum(want["kernel_count_by_stream"].values())),
            ("cudaGraphLaunch calls", got["runtime_calls"]["graph-launch"],
             want["cudaGraphLaunch"]),
            ("cuda_sync records", rank["cuda_sync"], want["cuda_sync_events"]),
            ("ProfilerStep ids", [s[0] for s in rank["steps"]],
             [int(s[0].split("#")[1]) for s in want["profiler_steps_us"]]),
            ("ProfilerStep durations (ns)", [s[2] for s in rank["steps"]],
             [round(s[2] * 1000) for s in want["profiler_steps_us"]]),
        ]
        by_class = {}
        for name, n in want["sync_apis"].items():
            if name in SYNC_CLASS:
                by_class[SYNC_CLASS[name]] = by_class.get(SYNC_CLASS[name], 0) + n
        for cls, n in sorted(by_class.items()):
            checks.append((f"{cls} calls", got["runtime_calls"][cls], n))
        for name, n in sorted(want["nccl_kernels_by_collective"].items()):
            checks.append((f"NCCL {name} kernels",
                           got["collective_kernels"][NCCL_KIND[name]], n))
        # Communication kernels of other libraries (DeepEP, symmetric
        # memory) are collectives too, counted apart.
        checks.append(("NCCL kernels in all",
                       got["nodes"]["collective"] + got["nodes"]["p2p"]
                       - got["comm_kernels_not_nccl"],
                       sum(want["nccl_kernels_by_collective"].values())))
        bad = [(what, g, w) for what, g, w in checks if g != w]
        for what, g, w in bad:
            print(f"FAIL {rel}: {what}: prism {g}, summary.json {w}")
        failures += len(bad)
        if not bad:
            print(f"ok   {rel}: {len(checks)} counts equal")
    print(f"shared traces: {len(summary)} files, {failures} differences")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
