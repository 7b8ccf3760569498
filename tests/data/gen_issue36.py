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
