#!/usr/bin/env python3
"""Writes the hand-made traces of issue 19's regression tests (bridge_2024.json,
rocm_2024.json, mismatch_2024.rank{0,1}.json) into the working directory."""
import json
def X(cat, name, pid, tid, ts, dur, **args):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args: e["args"] = args
    return e
def dump(path, events, rank=0, world=1, gpu="NVIDIA H100 80GB HBM3"):
    t = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": gpu, "totalGlobalMem": 85045477376}],
         "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world}, "traceEvents": events}
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": ' + json.dumps(t["deviceProperties"]) +
                ', "distributedInfo": ' + json.dumps(t["distributedInfo"]) + ', "traceEvents": [\n')
        f.write(",\n".join("  " + json.dumps(e) for e in events))
        f.write("\n]}\n")

# bridge_2024.json: two layers (prism::layer ranges, no run description) on
# thread 1, each launching k_a then k_b on stream 7; thread 2 (no ranges)
# launches s1 and s2 on stream 20, which run between them: k_a -> s1 and
# s2 -> k_b are inferred event edges (no cuda_sync records), a path of two
# outside tasks from a layer back into it.
ev = [X("user_annotation", "ProfilerStep#1", 1, 1, 0, 1000)]
corr = 1
t = 10
for l in range(2):
    base = 100 + l * 400
    ev.append(X("user_annotation", f"prism::layer#{l}", 1, 1, t, 40))
    # k_a launched at t, runs [base, base+100]
    ev.append(X("cpu_op", "aten::mm", 1, 1, t, 20))
    ev.append(X("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 2, 4, correlation=corr))
    ev.append(X("kernel", f"k_a{l}", 0, 7, base, 100, device=0, stream=7, correlation=corr)); corr += 1
    # k_b launched at t+20, starts 2 us after s2 ends
    ev.append(X("cpu_op", "aten::mm", 1, 1, t + 20, 20))
    ev.append(X("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 22, 4, correlation=corr))
    ev.append(X("kernel", f"k_b{l}", 0, 7, base + 202, 100, device=0, stream=7, correlation=corr)); corr += 1
    # thread 2: s1, s2 launched early, start when k_a ends
    ev.append(X("cpu_op", "aten::add", 1, 2, t + 5, 10))
    ev.append(X("cuda_runtime", "cudaLaunchKernel", 1, 2, t + 6, 4, correlation=corr))
    ev.append(X("kernel", f"s1_{l}", 0, 20, base + 102, 50, device=0, stream=20, correlation=corr)); corr += 1
    ev.append(X("cuda_runtime", "cudaLaunchKernel", 1, 2, t + 11, 3, correlation=corr))
    ev.append(X("kernel", f"s2_{l}", 0, 20, base + 152, 48, device=0, stream=20, correlation=corr)); corr += 1
    t += 45
ev.sort(key=lambda e: e["ts"])
dump("bridge_2024.json", ev)

# rocm_2024.json: a HIP trace (ROCm 6.2): module launches whose runtime
# events give the stream as a hex string, a device synchronise.
ev = [X("user_annotation", "ProfilerStep#1", 1, 1, 0, 300)]
names = ["hipExtModuleLaunchKernel", "hipModuleLaunchKernel", "hipExtLaunchKernel", "hipLaunchKernel"]
for i, nm in enumerate(names):
    ev.append(X("cpu_op", "aten::mm", 1, 1, 5 + 20 * i, 15))
    ev.append(X("cuda_runtime", nm, 1, 1, 10 + 20 * i, 5, correlation=i + 1, stream="0x0"))
    ev.append(X("kernel", f"Cijk_gemm_{i}", 2, 0, 20 + 50 * i, 50, device=2, stream=0, correlation=i + 1))
ev.append(X("cuda_runtime", "hipDeviceSynchronize", 1, 1, 100, 180, correlation=9, stream="0x0"))
ev.sort(key=lambda e: e["ts"])
dump("rocm_2024.json", ev, gpu="AMD Instinct MI300X")

# mismatch_2024.rank{0,1}.json: two ranks whose only collective on one
# process group disagrees on the kind (an all-reduce on rank 0, an
# all-gather launched 300 us later on rank 1): matched by sequence they
# would rendezvous, rank 0's waiting for rank 1's launch; disagreeing,
# they must not wait for each other.
for r in range(2):
    ev = [X("user_annotation", "ProfilerStep#1", 1, 1, 0, 1000)]
    first = "ncclDevKernel_AllReduce_Sum_f32_RING_LL" if r == 0 else "ncclDevKernel_AllGather_RING_LL"
    kinds = ["allreduce", "allgather"]
    at = 10 if r == 0 else 310
    ev.append(X("cpu_op", "record_param_comms", 1, 1, at, 20, **{"Collective name": kinds[r], "In msg nelems": 1024, "Out msg nelems": 1024, "Group size": 2, "dtype": "Float", "Process Group Name": "0"}))
    ev.append(X("cuda_runtime", "cudaLaunchKernel", 1, 1, at + 2, 4, correlation=1))
    ev.append(X("kernel", first, 0, 20, at + 10, 50, device=0, stream=20, correlation=1))
    ev.append(X("cpu_op", "aten::_local_scalar_dense", 1, 1, 398, 104))
    ev.append(X("cuda_runtime", "cudaDeviceSynchronize", 1, 1, 400, 100, correlation=3))
    ev.sort(key=lambda e: (e["ts"], -e["dur"]))
    dump(f"mismatch_2024.rank{r}.json", ev, rank=r, world=2)

# modules_2024.json: layers_2024.json (three blocks of linear, gelu,
# dropout) with the block of layer 1 on other shapes, so no run of
# identical blocks is found, and module-name ranges as profile(with_stack=
# True, with_modules=True) records them: LlamaModel_0 around everything,
# LlamaDecoderLayer_0..2 around the blocks, LlamaMLP_0..2 nested inside,
# FooBlock_0 (one instance) around the embedding.  The layers come from
# LlamaDecoderLayer's instances; backward ops follow their sequence numbers.
with open("layers_2024.json") as f:
    base = json.load(f)
ev = []
for e in base["traceEvents"]:
    if e.get("cat") == "cpu_op" and e["name"] == "aten::gelu" and e["ts"] == 70:
        e = dict(e, args=dict(e["args"], **{"Input Dims": [[4, 16]]}))
    ev.append(e)
def M(name, ts, dur):
    return X("python_function", "nn.Module: " + name, 1, 1, ts, dur)
ev.append(M("LlamaModel_0", 8, 125))
ev.append(M("FooBlock_0", 9, 12))
for l in range(3):
    ev.append(M(f"LlamaDecoderLayer_{l}", 29 + 30 * l, 30))
    ev.append(M(f"MLPBlock_{l}", 39 + 30 * l, 20))
ev.sort(key=lambda e: (e["ts"], -e["dur"]))
dump("modules_2024.json", ev)
