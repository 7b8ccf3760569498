#!/usr/bin/env python3
"""Writes the hand-made traces of issue 36's tests (a user's own trace as a
full base) into the working directory: mi300x_2025.json, mi250x_2025.json,
nogpu_2025.json."""
import json
def X(cat, name, pid, tid, ts, dur, **args):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args: e["args"] = args
    return e
def dump(path, events, rank=0, world=1, gpu="NVIDIA H100 80GB HBM3", mem=85045477376):
    props = [{"id": 0, "name": gpu, "totalGlobalMem": mem}]
    dist = {"backend": "nccl", "rank": rank, "world_size": world}
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": ' + json.dumps(props) +
                ', "distributedInfo": ' + json.dumps(dist) + ', "traceEvents": [\n')
        f.write(",\n".join("  " + json.dumps(e) for e in events))
        f.write("\n]}\n")

# mi300x_2025.json: one step of a ROCm 6.3 run on an MI300X virtual
# function (a cloud VM's SR-IOV name), rank 0 of 2: an aten::mm of bf16
# [1024, 4096] x [4096, 2048] that hipBLASLt runs as a Tensile kernel
# (Cijk_..., 200 us), then the gradient's all-reduce of 2,097,152 bf16
# elements (4 MiB) as RCCL runs every collective: ncclDevKernel_Generic_4,
# its kind and size from record_param_comms.
def amd(gpu):
    ev = [X("user_annotation", "ProfilerStep#1", 1, 1, 0, 600)]
    ev.append(X("cpu_op", "aten::mm", 1, 1, 10, 30,
                **{"Input Dims": [[1024, 4096], [4096, 2048]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}))
    ev.append(X("cuda_runtime", "hipExtModuleLaunchKernel", 1, 1, 20, 10, correlation=1, stream="0x0"))
    ev.append(X("kernel", "Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI16x16x16x1_SN_1LDSB1_AFC1_ISA942_IU1_K1_"
                "LBSPPA2048_LPA16_LRVW16_MIAV1_MO40_NTA0_PGR2_PLR1_SIA3_SS1_SVW1_TLDS1_VSn1_WG32_8_1_WGM4",
                2, 0, 40, 200, device=0, stream=0, correlation=1))
    ev.append(X("cpu_op", "record_param_comms", 1, 1, 50, 20,
                **{"Collective name": "allreduce", "In msg nelems": 2097152, "Out msg nelems": 2097152,
                   "Group size": 2, "dtype": "BFloat16", "Process Group Name": "0"}))
    ev.append(X("cuda_runtime", "hipExtLaunchKernel", 1, 1, 55, 10, correlation=2, stream="0x0"))
    ev.append(X("kernel", "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", 2, 0, 250, 100,
                device=0, stream=0, correlation=2))
    ev.append(X("cuda_runtime", "hipDeviceSynchronize", 1, 1, 80, 300, correlation=3, stream="0x0"))
    ev.sort(key=lambda e: (e["ts"], -e["dur"]))
    return ev
dump("mi300x_2025.json", amd("AMD Instinct MI300X VF"), world=2, gpu="AMD Instinct MI300X VF",
     mem=205822885888)
# mi250x_2025.json: the same on a GPU prism has no profile for.
dump("mi250x_2025.json", amd("AMD Instinct MI250X"), world=2, gpu="AMD Instinct MI250X",
     mem=68702699520)

# nogpu_2025.json: a step recorded without GPU activities (a CUPTI range
# profiler run, or activities=[CPU]): host ops only, nothing to replay.
ev = [X("user_annotation", "ProfilerStep#1", 1, 1, 0, 500),
      X("cpu_op", "aten::mm", 1, 1, 10, 30, **{"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, 20, 5, correlation=1),
      X("cpu_op", "aten::relu", 1, 1, 50, 20)]
dump("nogpu_2025.json", ev)

# accgrad_2025.json: layers_2024.json (three layers of linear, gelu and
# dropout, an embedding before them, a for-each SGD step without shapes)
# with autograd's gradient accumulations as a per-parameter optimizer's
# run leaves them: after each layer's AddmmBackward0 the accumulations
# that take its weight [8, 8], bias [8] and a scale [1, 8]'s first
# gradients (no kernel: zero_grad(set_to_none=True)), after the
# embedding's backward its table's [10, 8].  The parameters: 3 x (64 + 8
# + 8) + 80 = 320, a layer's 80.
with open("layers_2024.json") as f:
    base = json.load(f)
ev = list(base["traceEvents"])
def ACC(ts, dims):
    return X("cpu_op", "torch::autograd::AccumulateGrad", 1, 2, ts, 0.5,
             **{"Input Dims": [dims], "Input type": ["float"]})
for t in (170, 200, 230):  # each layer's AddmmBackward0, its launch ends at t + 6
    ev += [ACC(t + 7, [8, 8]), ACC(t + 8, [8]), ACC(t + 9, [1, 8])]
ev.append(ACC(247, [10, 8]))
ev.sort(key=lambda e: (e["ts"], -e["dur"]))
dump("accgrad_2025.json", ev)

# ddpgrad_2025.json: accgrad_2025.json as rank 0 of 2 under DDP: after the
# embedding's gradient, inside its backward (DDP's hook), one all-reduce of
# the 320 fp32 gradients on a 2-rank group (record_param_comms), an NCCL
# kernel on stream 20.
ev = [e for e in ev]
ev.append(X("cpu_op", "record_param_comms", 1, 2, 247.6, 2.2,
            **{"Collective name": "allreduce", "In msg nelems": 320, "Out msg nelems": 320,
               "Group size": 2, "dtype": "Float", "Process Group Name": "0"}))
ev.append(X("cuda_runtime", "cudaLaunchKernel", 1, 2, 248, 1, correlation=40))
ev.append(X("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            0, 20, 2030, 30, device=0, stream=20, correlation=40))
# The embedding's exchange in the forward: an all-to-all of 64 fp32
# elements on the same 2 ranks (NCCL runs it as grouped sends and
# receives), another role than gradient reduction.
ev.append(X("cpu_op", "record_param_comms", 1, 1, 21, 4,
            **{"Collective name": "all_to_all", "In msg nelems": 64, "Out msg nelems": 64,
               "Group size": 2, "dtype": "Float", "Process Group Name": "0"}))
ev.append(X("cuda_runtime", "cudaLaunchKernel", 1, 1, 22, 1, correlation=41))
ev.append(X("kernel", "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
            0, 20, 60, 10, device=0, stream=20, correlation=41))
ev.sort(key=lambda e: (e["ts"], -e["dur"]))
dump("ddpgrad_2025.json", ev, world=2)

# described_2025.json: layers_2024.json as a tiny GPT's run leaves it
# (tests/data/tiny3.cfg: 3 layers, hidden 8, 2 heads, FFN 32, vocabulary
# 16, sequence 4, learned positions, tied head), its gradients'
# accumulations carrying that model's shapes: after each layer's
# AddmmBackward0 the layer's QKV [24, 8] and bias [24], projection [8, 8]
# and bias [8], two norms' [8] x 2, FFN [32, 8] and [8, 32] with biases
# [32] and [8] (872 a layer), after the embedding's backward its table
# [16, 8], the positions [4, 8] and the final norm [8] x 2 (176): 3 x 872
# + 176 = 2792 = llm_params of the model.  described_ddp_2025.rank0/1.json:
# the same as ranks 0 and 1 of 2 under DDP, one all-reduce of the 2792
# fp32 gradients on a 2-rank group after the last accumulation.
LAYER = [[24, 8], [24], [8, 8], [8], [8], [8], [8], [8], [32, 8], [32], [8, 32], [8]]
ev = [e for e in base["traceEvents"]]
for t in (170, 200, 230):
    ev += [X("cpu_op", "torch::autograd::AccumulateGrad", 1, 2, t + 7 + 0.25 * i, 0.2,
             **{"Input Dims": [d], "Input type": ["float"]}) for i, d in enumerate(LAYER)]
ev += [X("cpu_op", "torch::autograd::AccumulateGrad", 1, 2, 246.1 + 0.3 * i, 0.2,
         **{"Input Dims": [d], "Input type": ["float"]})
       for i, d in enumerate([[16, 8], [4, 8], [8], [8]])]
ev.sort(key=lambda e: (e["ts"], -e["dur"]))
dump("described_2025.json", ev)
ev = list(ev)
ev.append(X("cpu_op", "record_param_comms", 1, 2, 247.6, 2.2,
            **{"Collective name": "allreduce", "In msg nelems": 2792, "Out msg nelems": 2792,
               "Group size": 2, "dtype": "Float", "Process Group Name": "0"}))
ev.append(X("cuda_runtime", "cudaLaunchKernel", 1, 2, 248, 1, correlation=40))
ev.append(X("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            0, 20, 2030, 30, device=0, stream=20, correlation=40))
ev.sort(key=lambda e: (e["ts"], -e["dur"]))
for r in (0, 1):
    dump(f"described_ddp_2025.rank{r}.json", ev, rank=r, world=2)

# Item 4, dependencies: waits found by the host's call order.
def run(ev, ts, dur, corr, name="cudaLaunchKernel"):
    return X("cuda_runtime", name, 1, 1, ts, dur, correlation=corr)
def gpu(name, stream, ts, dur, corr, cat="kernel"):
    return X(cat, name, 0, stream, ts, dur, device=0, stream=stream, correlation=corr)

# waitfull_2025.json: k_src (stream 20, 15-300 us) is recorded
# (cudaEventRecord at 16 us, after its launch); gemm_big (stream 7, 30-475
# us) then holds every SM; stream 24 waits for the event (cudaStreamWaitEvent
# at 30 us) and k_wait, launched at 40 us, starts at 430 us, 130 us after
# k_src ended and 45 us before gemm_big ends: the GPU was full.  No
# cuda_sync records.
ev = [X("user_annotation", "ProfilerStep#1", 1, 1, 0, 600),
      run(ev, 10, 5, 1), gpu("k_src", 20, 15, 285, 1),
      run(ev, 16, 2, 2, "cudaEventRecord"),
      run(ev, 20, 5, 3), gpu("gemm_big", 7, 30, 445, 3),
      run(ev, 30, 3, 4, "cudaStreamWaitEvent"),
      run(ev, 40, 5, 5), gpu("k_wait", 24, 430, 50, 5),
      run(ev, 60, 440, 6, "cudaDeviceSynchronize")]
ev.sort(key=lambda e: (e["ts"], -e["dur"]))
dump("waitfull_2025.json", ev)

# collorder_2025.rank{0,1}.json: ranks 0 and 1 of 2 each all-reduce 1 Mi
# and 2 Mi fp32 elements (4 and 8 MiB) on one process group, each on its
# own NCCL stream; rank 0 launches the 4 MiB one first, rank 1 the 8 MiB
# one.  Paired by order, rank 0's 4 MiB would wait for rank 1's 8 MiB.
# Then an all-to-all whose sizes differ between the ranks (1,000 and
# 3,000 fp32 elements sent), launched at 46 us, run from 130 and 150 us:
# paired by kind alone.
def coll(ts, n, stream, corr, dur, name="allreduce",
         kernel="ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", start=None):
    return [X("cpu_op", "record_param_comms", 1, 1, ts, 8,
              **{"Collective name": name, "In msg nelems": n, "Out msg nelems": n,
                 "Group size": 2, "dtype": "Float", "Process Group Name": "0",
                 "Process Group Ranks": "[0, 1]"}),
            run(None, ts + 1, 5, corr),
            gpu(kernel, stream, ts + 10 if start is None else start, dur, corr)]
for rank, first in ((0, 1 << 20), (1, 1 << 21)):
    second = (1 << 21) if first == (1 << 20) else (1 << 20)
    dur = {1 << 20: 100, 1 << 21: 200}
    ev = [X("user_annotation", "ProfilerStep#1", 1, 1, 0, 500)]
    ev += coll(10, first, 20 if first == 1 << 20 else 24, 1, dur[first])
    ev += coll(30, second, 20 if second == 1 << 20 else 24, 2, dur[second])
    ev += coll(45, 1000 if rank == 0 else 3000, 20, 3, 50, name="all_to_all",
               kernel="ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
               start=130 if rank == 0 else 150)
    ev.append(run(None, 55, 400, 4, "cudaDeviceSynchronize"))
    ev.sort(key=lambda e: (e["ts"], -e["dur"]))
    dump("collorder_2025.rank%d.json" % rank, ev, rank=rank, world=2)

# copy_2025.json: an all-reduce (stream 20, 20-220 us) recorded
# (cudaEventRecord at 16 us); the compute stream 7 waits for it
# (cudaStreamWaitEvent at 30 us) and a pinned host-to-device copy launched at
# 40 us runs 15 us after it ends (235-260 us): the call order ties them.
# Then a copy from pageable memory: cudaMemcpyAsync from 300 to 900 us (the
# thread stages the data), its DMA at 800-880 us.
ev = [X("user_annotation", "ProfilerStep#1", 1, 1, 0, 1000),
      run(None, 10, 5, 1), gpu("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                              20, 20, 200, 1),
      run(None, 16, 2, 2, "cudaEventRecord"),
      run(None, 30, 3, 3, "cudaStreamWaitEvent"),
      run(None, 40, 5, 4, "cudaMemcpyAsync"),
      gpu("Memcpy HtoD (Pinned -> Device)", 7, 235, 25, 4, cat="gpu_memcpy"),
      run(None, 300, 600, 5, "cudaMemcpyAsync"),
      gpu("Memcpy HtoD (Pageable -> Device)", 7, 800, 80, 5, cat="gpu_memcpy"),
      run(None, 920, 60, 6, "cudaDeviceSynchronize")]
ev.sort(key=lambda e: (e["ts"], -e["dur"]))
dump("copy_2025.json", ev, world=2)

# evsync_2025.json: k1 (stream 7, 20-100 us) is recorded (cudaEventRecord
# at 12 us); k2 is launched after the record onto the same stream (100-300
# us); cudaEventSynchronize from 20 us returns at 105 us: it waited for k1,
# the task launched last before the record, not for k2, which its stream
# ran after it (and which ends 195 us after the call returned).
ev = [X("user_annotation", "ProfilerStep#1", 1, 1, 0, 400),
      run(None, 5, 5, 1), gpu("k1", 7, 20, 80, 1),
      run(None, 12, 2, 2, "cudaEventRecord"),
      run(None, 15, 4, 3), gpu("k2", 7, 100, 200, 3),
      run(None, 20, 85, 4, "cudaEventSynchronize"),
      run(None, 310, 10, 5, "cudaDeviceSynchronize")]
ev.sort(key=lambda e: (e["ts"], -e["dur"]))
dump("evsync_2025.json", ev)
