#!/usr/bin/env python3
"""prism's collection hook: record PyTorch profiler (Kineto) traces that
prism reads best, in about ten lines of a training loop.

    from collect_trace import PrismProfiler
    prof = PrismProfiler("traces", wait=1, warmup=2, active=3)
    prof.mark_layers(model.blocks)            # optional: one range per layer
    prof.describe(layers=24, hidden=2048, heads=16, seq=2048, vocab=50257,
                  mbs=4, microbatches=8, hw="h100-dgx")  # optional: what ran
    with prof:
        for step, batch in enumerate(loader):
            for i, mb in enumerate(batch.split(micro)):   # gradient accumulation
                with prof.microbatch(i), prof.phase("forward"):
                    loss = model(mb)
                with prof.microbatch(i), prof.phase("backward"):
                    loss.backward()
            with prof.phase("optimizer"):
                opt.step(); opt.zero_grad()
            prof.step()

What it turns on, and why prism wants it:
- CPU and CUDA activity, record_shapes=True: kernel FLOPs and bytes from
  the launching op's Input Dims;
- CUDA synchronisation events (torch >= 2.2): exact cross-stream edges
  instead of edges inferred from timing (docs/FORMATS.md);
- a wait/warm-up/active schedule: the active steps are ProfilerStep#N;
- ranges prism reads: "prism::layer#I", "prism::phase#NAME",
  "prism::microbatch#I" (record_function), so layers, phases and
  microbatches are annotated, not guessed;
- the run's description (describe()): a "prism::model#k=v;..." range each
  step that tells prism the model and layout, so that `prism whatif` and
  `prism search` (base = the trace) can rebuild the run at another
  configuration with costs fitted on its kernels;
- one gzipped file per rank: <out>/rank<R>.<step>.pt.trace.json.gz, the
  rank from torch.distributed (also written as distributedInfo).

Where a framework's own profiler option already writes ProfilerStep#N
(Megatron-LM, NeMo, torchtitan), PrismMarks adds the layer ranges and the
run description without a second profiler, and profile_kwargs() gives the
settings above for a framework that takes torch.profiler.profile keyword
arguments (docs/COLLECTING.md, "Framework recipes").
"""
import contextlib
import os

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule


def _rank():
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank()
    return int(os.environ.get("RANK", "0"))


def _experimental_config():
    """CUDA sync events where this torch has them (2.2+), else nothing."""
    try:
        return torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)
    except (AttributeError, TypeError):
        return None


def profile_kwargs(record_shapes=True, sync_events=True):
    """The torch.profiler.profile keyword arguments prism wants besides the
    activities and the schedule: shapes, and CUDA sync events where this torch
    has them. For frameworks that pass extra arguments to their own profiler
    (NeMo's PytorchProfilerCallback(profiler_kwargs=...))."""
    kwargs = dict(record_shapes=record_shapes)
    cfg = _experimental_config() if sync_events else None
    if cfg is not None:
        kwargs["experimental_config"] = cfg
    return kwargs


class PrismMarks:
    """prism's ranges without a profiler of their own: layer ranges
    (mark_layers), phase and microbatch ranges, and the run description
    (describe, then record_description once per step). PrismProfiler is one
    of these with a profiler; use this class where the framework's profiler
    already writes ProfilerStep#N."""

    # What prism's run description holds (model/synth.h, synth_meta_parse).
    DESCRIPTION = ("name", "layers", "hidden", "heads", "kv_heads", "ffn", "activation", "seq",
                   "vocab", "untied", "tp", "pp", "dp", "vp", "mbs", "microbatches", "schedule",
                   "recompute", "sp", "zero", "flash", "dtype", "hw", "optimizer_dtype",
                   "clip_grad")

    def __init__(self):
        self._layer_ranges = {}
        self._hooks = []
        self._description = None

    def describe(self, **run):
        """Record what ran: the model (layers, hidden, heads, kv_heads, ffn,
        activation: gelu or swiglu, seq, vocab, untied: 1 for an output layer
        of its own; flash: 0 without flash attention),
        the layout (tp, pp, dp, vp, mbs, microbatches, schedule: gpipe, 1f1b
        or interleaved; recompute: none, selective or full; sp, zero), the
        GEMM dtype, the optimizer (optimizer_dtype: fp32, bf16-states or bf16;
        clip_grad: 0 without gradient clipping) and the hardware profile (a
        name in prism's configs/hw).
        dp defaults to the world size, ffn to 4 x hidden."""
        unknown = set(run) - set(self.DESCRIPTION)
        if unknown:
            raise ValueError(f"describe(): unknown fields {sorted(unknown)}")
        run.setdefault("name", "model")
        if "hidden" in run:
            run.setdefault("ffn", 4 * run["hidden"])
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            run.setdefault("dp", torch.distributed.get_world_size())
        for k, v in run.items():
            if any(c in str(v) for c in ";="):
                raise ValueError(f"describe(): {k}={v!r} may not hold ';' or '='")
        self._description = "prism::model#" + ";".join(
            f"{k}={run[k]}" for k in self.DESCRIPTION if k in run)

    def record_description(self):
        """Write the run description range now (nothing before describe()).
        prism reads the first one in a rank's trace; once a step is plenty."""
        if self._description:
            with record_function(self._description):
                pass

    @staticmethod
    def phase(name):
        """A range prism reads as the phase (forward, backward, optimizer)."""
        return record_function(f"prism::phase#{name}")

    @staticmethod
    def microbatch(index):
        """A range prism reads as the microbatch index."""
        return record_function(f"prism::microbatch#{index}")

    def mark_layers(self, layers, first=0):
        """Wrap each module's forward and backward in a prism::layer#I range
        (hooks, so the model's code stays as it is); I counts from first (a
        pipeline stage's first layer, so that indices are unique across
        stages and model chunks)."""
        for i, layer in enumerate(layers, first):
            name = f"prism::layer#{i}"
            self._hooks.append(layer.register_forward_pre_hook(self._opener(name, "forward")))
            self._hooks.append(layer.register_forward_hook(self._closer(name, "forward")))
            if hasattr(layer, "register_full_backward_pre_hook"):
                self._hooks.append(
                    layer.register_full_backward_pre_hook(self._opener(name, "backward")))
                self._hooks.append(
                    layer.register_full_backward_hook(self._closer(name, "backward")))

    def unmark_layers(self):
        """Remove the hooks mark_layers() added (after the recorded steps)."""
        for h in self._hooks:
            h.remove()
        self._hooks = []

    def _opener(self, name, kind):
        def hook(*_):
            rf = record_function(name)
            rf.__enter__()
            self._layer_ranges[(name, kind)] = rf
        return hook

    def _closer(self, name, kind):
        def hook(*_):
            rf = self._layer_ranges.pop((name, kind), None)
            if rf is not None:
                rf.__exit__(None, None, None)
        return hook


class PrismProfiler(PrismMarks):
    """A torch.profiler.profile set up for prism; use as a context manager
    and call step() once per training iteration."""

    def __init__(self, out_dir, wait=1, warmup=2, active=3, record_shapes=True,
                 sync_events=True):
        super().__init__()
        os.makedirs(out_dir, exist_ok=True)
        self.out_dir = out_dir
        self.rank = _rank()
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        kwargs = dict(
            activities=activities,
            schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
            on_trace_ready=self._write,
            **profile_kwargs(record_shapes, sync_events),
        )
        self._prof = profile(**kwargs)
        self.files = []

    def _write(self, prof):
        path = os.path.join(self.out_dir,
                            f"rank{self.rank}.{prof.step_num}.pt.trace.json.gz")
        prof.export_chrome_trace(path)
        self.files.append(path)

    def __enter__(self):
        self._prof.__enter__()
        return self

    def __exit__(self, *exc):
        return self._prof.__exit__(*exc)

    def step(self):
        self.record_description()
        self._prof.step()


@contextlib.contextmanager
def no_profiler():
    """Stand-in with the same calls, for runs that record nothing."""
    class _Null:
        files = []
        def step(self): pass
        def mark_layers(self, *_, **__): pass
        def unmark_layers(self): pass
        def describe(self, **_): pass
        def record_description(self): pass
        phase = microbatch = staticmethod(lambda *_: contextlib.nullcontext())
    yield _Null()
