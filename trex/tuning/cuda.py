"""CUDA target (Triton kernels of codegen_triton): the tiling model's start, compiling candidates, and
the measured profile.

Profile = device time of the printed kernel on the GPU: the launch (plus the host finalize) is
captured in a CUDA graph and replayed; CUDA events time batches of replays and the median batch gives
the time per call (labelled "measured"). The replays per batch follow from one timed warm-up call
(about `batch_s` of GPU time per batch, at most `reps`), so a 15 ms mHC backward costs the same
profiling time as a 0.1 ms RMSNorm. Where graph capture fails the same timing runs eager launches.

Under Triton's interpreter (TRITON_INTERPRET=1, no GPU: the CPU smoke runs of trex.tuning.bench and the
tests) the backend runs on the CPU and the profile is the interpreter's wall time, labelled
"interpreted", never "measured". Without Triton, or with neither a GPU nor the interpreter, the
backend cannot be built: `available()` says why and the CLI / tests skip with that reason.
"""
from __future__ import annotations

import dataclasses
import os
import statistics
import time

import torch

from trex.compiler.kernel_ir import ROWS, Program

from . import harness
from .harness import Artifact

MAX_THREADS_PER_BLOCK = 1024


def install_source(program: Program, named_sizes: dict, config: dict, source: str) -> None:
    """Make codegen_triton's launcher run `source` (a candidate's kernel text) for this program, sizes
    and tiling: the launcher caches imported kernels by the printed kernel's name, so the candidate's
    module is imported under that name in place of a fresh print. Profiling and verification then run
    exactly the candidate's text, not a re-print of its configuration."""
    from trex.codegen_triton import launcher
    from trex.codegen_triton.printer import Tiling, print_program
    sizes = {k: v for k, v in harness.symbol_sizes(harness.program_sizes(program, named_sizes)).items() if k != ROWS}
    ks = print_program(program, sizes, Tiling(**config))
    mod_name = ks.name + ("_interpret" if os.environ.get("TRITON_INTERPRET") == "1" else "")
    with launcher._LOCK:
        launcher._KERNELS.pop(mod_name, None)
        launcher._PLANS.clear()
    launcher.load_kernel(dataclasses.replace(ks, source=source))


def interpreted() -> bool:
    """True when candidates run under Triton's interpreter on the CPU (no GPU measurement possible)."""
    return os.environ.get("TRITON_INTERPRET") == "1" and not torch.cuda.is_available()


def available() -> tuple[bool, str]:
    from trex.codegen_triton.target import available as triton_available
    ok, why = triton_available()
    if not ok and os.environ.get("TRITON_INTERPRET") == "1" and why != "triton is not installed":
        return True, "Triton interpreter on the CPU (TRITON_INTERPRET=1): interpreted, not measured"
    return ok, why


class CudaBackend:
    label = "measured (CUDA graph replay, CUDA events)"
    deterministic = False     # measured: a gain is committed only outside the re-measured spread (search)

    def __init__(self, target: str, pattern: str, dtype: str, named_sizes: dict, *, reps: int = 50, batches: int = 5,
                 batch_s: float = 0.01, layout: str | None = None):
        ok, why = available()
        if not ok:
            raise RuntimeError(f"trex tune --target cuda needs Triton and a CUDA GPU: {why}")
        from trex.codegen_triton import tiling as tiling_mod
        self.tiling_mod = tiling_mod
        self.target, self.pattern, self.dtype, self.layout = target, pattern, dtype, layout
        # the program the cuda target runs (mHC: the projection layout's, harness.build_program), or that of
        # another of the spec's cuda layouts (`layout`: mHC's cuda_split / cuda_fused, tuned for the benchmarks)
        self.program: Program = harness.build_program(pattern, dtype, layout or target, named_sizes)
        # the sizes the program binds: those the caller did not name (mHC's PARTS) keep the pattern's example
        # values, as `trex tune --shape` gives them (harness.parse_shape); those it does not bind are dropped
        # (a named size the program lacks would change the printed kernel's name and the store's key)
        self.named_sizes = harness.program_sizes(
            self.program, dict(harness.kernel_spec(pattern).sizes["example"], **named_sizes))
        self.sizes = harness.symbol_sizes(self.named_sizes)
        self.scalars = harness.scalars_for(pattern, self.program, self.named_sizes)
        self.reps, self.batches, self.batch_s = reps, batches, batch_s
        self.fixed_knobs: frozenset = frozenset()      # set by initial()
        self.device = "cpu" if interpreted() else "cuda"
        if interpreted():
            self.label = "interpreted (TRITON_INTERPRET=1: CPU wall time of Triton's interpreter, not a GPU measurement)"

    def _pred_dict(self, pred) -> dict:
        hw = self.tiling_mod._hardware()
        bw = hw["copy_bandwidth_bytes_per_s"]
        pipes = {"dram": pred.dram_bytes / bw, "l2": pred.l2_bytes / (bw * self.tiling_mod.L2_BW_FACTOR),
                 "dot": pred.dot_flops / hw["tf32_gemm_flops_per_s"]}
        return {"time_s": pred.time_us * 1e-6, "pipes_s": pipes}

    def initial(self) -> tuple[dict, dict]:
        """The tiling model's best feasible candidate (not a stored or measured override: the search
        must start from the model's own choice)."""
        best = next(q for q in self.tiling_mod.explain(self.program, self.sizes) if q.feasible)
        config = dataclasses.asdict(best.tiling)
        self.fixed_knobs = self._inert_knobs(config)
        if interpreted():
            # Triton 3.6's interpreter computes bf16 x bf16 tl.dot wrong: a dot_bf16_split candidate
            # would be rejected for the interpreter's fault, not the kernel's (the GPU decides it)
            self.fixed_knobs |= {"dot_bf16_split"}
        return config, self._pred_dict(best)

    def start_points(self) -> list[tuple[str, dict]]:
        """Configurations the search evaluates right after the root, besides the moves: the tilings
        measured best for this program (codegen_triton's calibration `measured_tilings`, from
        bench/gpu_patterns.py's sweeps), those of this program's size bucket first, then those
        measured at other sizes (or for an earlier IR) of the same program (a measured best elsewhere
        is a better guess than a single move). Each is checked for feasibility, compiled, verified and profiled like any
        candidate and becomes the checkpoint when it is faster. Under the interpreter dot_bf16_split
        is turned off in them (see `initial`)."""
        measured = self.tiling_mod._hardware().get("measured_tilings") or {}
        exact = self.tiling_mod.measured_key(self.program, self.sizes)
        prefix = f"{self.program.name}|"      # any fingerprint: a guess from an earlier IR is still verified
        keys = ([exact] if exact in measured else []) + sorted(k for k in measured if k.startswith(prefix) and k != exact)
        fields = {f.name for f in dataclasses.fields(self._tiling_cls())}
        out, seen = [], set()
        for k in keys:
            cfg = {f: v for f, v in measured[k].items() if f in fields}
            if interpreted() and cfg.get("dot_bf16_split"):
                cfg["dot_bf16_split"] = False
            key = tuple(sorted(cfg.items()))
            if key not in seen:
                seen.add(key)
                out.append(("measured" if k == exact else "measured_other_sizes", cfg))
        return out

    def _tiling_cls(self):
        from trex.codegen_triton.printer import Tiling
        return Tiling

    def _inert_knobs(self, config: dict) -> frozenset:
        """Knobs whose moves cannot change this program's kernel: a flag whose flip prints the same
        source (up to the kernel's name), and num_stages of a kernel without loops (Triton pipelines
        loops only). The search skips their moves: each would cost a compile and a verification."""
        from trex.codegen_triton.printer import print_program

        def text(cfg: dict) -> str | None:
            try:
                ks = print_program(self.program, {k: v for k, v in self.sizes.items() if k != ROWS}, self._tiling(cfg))
            except ValueError:       # the printer refuses the flip: its move would fail anyway
                return None
            return ks.source.replace(ks.name, "KERNEL")
        base = text(config)
        inert = {k for k, v in config.items() if isinstance(v, bool) and text(dict(config, **{k: not v})) in (base, None)}
        if base is not None and "for " not in base:
            inert.add("num_stages")
        return frozenset(inert)

    def _tiling(self, config: dict):
        from trex.codegen_triton.printer import Tiling
        return Tiling(**config)

    def infeasible(self, config: dict) -> list[str]:
        try:
            t = self._tiling(config)
        except ValueError as e:      # IRError is a ValueError: the Tiling's own rules
            return [str(e)]
        if t.num_warps * 32 > MAX_THREADS_PER_BLOCK:
            # CUDA's block limit: such a launch fails after a full compile (tiling.predict does not check it)
            return [f"num_warps {t.num_warps} x 32 threads > {MAX_THREADS_PER_BLOCK} threads per block (CUDA limit)"]
        pred = self.tiling_mod.predict(self.program, self.sizes, t)
        return [] if pred.feasible else [pred.why or "infeasible by trex.codegen_triton.tiling.predict"]

    def predict(self, config: dict) -> dict:
        return self._pred_dict(self.tiling_mod.predict(self.program, self.sizes, self._tiling(config)))

    def compile(self, config: dict, source_transform=None) -> Artifact:
        from trex.codegen_triton.launcher import load_kernel
        from trex.codegen_triton.printer import print_program
        harness.COMPILE_COUNT["n"] += 1
        ks = print_program(self.program, {k: v for k, v in self.sizes.items() if k != ROWS}, self._tiling(config))
        if source_transform is not None:
            ks = dataclasses.replace(ks, source=source_transform(ks.source))
        load_kernel(ks)
        return Artifact(dict(config), ks.source, ks.name)

    def profile(self, art: Artifact, seed: int = 0) -> dict:
        from trex.codegen_triton.launcher import run_program
        install_source(self.program, self.named_sizes, art.config, art.source)
        ins = harness.make_inputs(self.program, self.named_sizes, seed, device=self.device)
        outs = harness.output_views(self.program, ins)    # the runner's output layout (mHC backward's dx)
        tiling = self._tiling(art.config)

        def call():
            return run_program(self.program, ins, self.scalars, tiling=tiling, out=outs)
        if self.device == "cpu":
            return self._profile_interpreted(art, call)
        for _ in range(2):      # Triton JIT compile (or its disk cache) + warm-up
            call()
        torch.cuda.synchronize()
        # one timed call sizes the batches: about batch_s of GPU time each, at least one replay
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        one_s = max(start.elapsed_time(end) * 1e-3, 1e-7)
        reps = max(1, min(self.reps, int(self.batch_s / one_s)))
        replay, how = call, "eager launches"
        graph = None
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                call()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                call()
            replay, how = graph.replay, "CUDA graph replay"
        except Exception:  # noqa: BLE001 - any capture failure (torch's or Triton's): time eager launches instead
            graph = None
            torch.cuda.synchronize()
        times = []
        for _ in range(self.batches):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps):
                replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e-3 / reps)
        del graph          # its memory pool (outputs of the captured call) goes back to the allocator
        t = statistics.median(times)
        return {"time_s": t, "device_s": t, "pipes_s": self.predict(art.config)["pipes_s"],
                "label": f"measured ({how}, median of {self.batches} x {reps})",
                "counters": {"batch_times_s": times}}

    def _profile_interpreted(self, art: Artifact, call) -> dict:
        call()              # first call: the interpreter's set-up
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        return {"time_s": t, "device_s": None, "pipes_s": self.predict(art.config)["pipes_s"],
                "label": "interpreted (TRITON_INTERPRET=1, CPU wall time, median of 3)",
                "counters": {"call_times_s": times}}
