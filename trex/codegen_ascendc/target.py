"""The "emulate" target: every fused op runs as its generated AscendC, compiled against the host emulator.

`register()` (the `trex.targets` entry point ``emulate = "trex.codegen_ascendc.target:register"``) registers
the runner with `trex.compiler.targets.register_target("emulate", ...)`, so
``torch.compile(model, backend="trex", options={"target": "emulate"})`` (or
``with trex.compiler.targets.use_target("emulate")`` around eager ``torch.ops.trex.*`` calls) runs each
fused op through the kernel the AscendC printer emits for its Kernel IR, at the tiling `trex tune`
stored for that program and sizes on the executor's hardware (trex.compiler.targets.tuned_config;
none with TREX_TUNING_STORE=none, as in the test suite), else the one the cost model's solver picks.

How one call runs: the op's kernel spec (``trex.compiler.registry.kernel_spec(op)``, registered by
the op's package) makes the program's [ROWS, *cols] views and calls the executor here, which picks
the tiling (solver, or a caller's choice), prints and compiles the kernel once per (program, buffer
depth) -- the generated kernels read rows, tile sizes and scalars from the tiling struct at run time,
so one shared library serves every shape and every tiling of that depth -- and launches it on the
emulator.

Inputs that have no program (fp64, zero-size rows, what the spec's guards name, e.g. mixed dtypes
the program does not read; a fused op without a kernel spec) return NotImplemented and the composite
reference runs: `unsupported_reason` says why. So do sizes at which no tiling fits the hardware (e.g.
an unchunked program whose row is wider than the UB holds: `NoTilingFits`; `last_no_tiling(op)`
keeps the reason). ``launch_counts()`` counts the emulator launches per fused op, so a test (or a
user) can see that the fused ops really ran in the emulator.
"""
from __future__ import annotations

import collections
import contextlib
import copy
import os
import threading
from collections.abc import Callable

import torch

from trex.compiler import registry
from trex.compiler.kernel_ir import ROWS, IRError, Program, bind_sizes
from trex.compiler.kernels import Executor

TARGET_NAME = "emulate"
DEFAULT_MAX_CORES = 4    # emulated blocks run one after another on the host: more only costs time
DEFAULT_OPT = os.environ.get("TREX_EMULATE_OPT", "-O2")

# TilingChooser(model, sizes) -> Tiling | None (None: the solver's choice)
TilingChooser = Callable[[object, dict], object]


def unsupported_reason(op_name: str, args: tuple) -> str | None:
    """Why the emulator cannot run ``op_name`` on ``args`` (None: it can)."""
    spec = registry.kernel_spec(op_name)
    if spec is None or TARGET_NAME not in spec.targets:
        return f"{op_name} has no kernel for the {TARGET_NAME} target (no kernel spec in its package)"
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if any(t.dtype == torch.float64 for t in tensors):
        return "fp64 inputs: the generated kernels compute in fp32 (the fp64 reference is the check)"
    if any(t.dim() and t.numel() == 0 for t in tensors):
        return "zero-size input: nothing to launch"
    return spec.unsupported_reason(args)


class NoTilingFits(IRError):
    """No tiling of the program fits the hardware at these sizes (UB capacity, DataCopyPad limits)."""


class EmulatorExecutor:
    """The launch the kernel specs' runners call: (program, inputs, scalars) -> outputs on the emulator.

    Caches, all keyed by value: one cost model per program (its sympy formulas are lambdified once),
    the solver's tiling per (program, sizes), and one printed+compiled kernel per (program, buffer
    depth) whose tiling is swapped per call (the printed source depends only on the depth)."""

    def __init__(self, hw=None, max_cores: int = DEFAULT_MAX_CORES, depths=(2,), opt: str = DEFAULT_OPT):
        from trex.cost_models.hardware import ASCEND_910B, ASCEND_TARGETS
        self.hw, self.max_cores, self.depths, self.opt = hw or ASCEND_910B, max_cores, tuple(depths), opt
        # the tuning target whose stored tilings this executor launches (`trex tune --target`)
        self.target = next((name for name, h in ASCEND_TARGETS.items() if h is self.hw), None)
        self._models: dict = {}
        self._tuned: dict = {}
        self._solved: dict = {}
        self._kernels: dict = {}
        self._lock = threading.Lock()

    def model(self, program: Program):
        from trex.codegen_ascendc.counting import ascend_cost_model
        m = self._models.get(program)
        if m is None:
            m = self._models[program] = ascend_cost_model(program, self.hw)
        return m

    def solved_tiling(self, program: Program, sizes: dict):
        """The solver's tiling over `depths`; when nothing fits in UB there, single buffering (half the
        queue copies) before giving up with `NoTilingFits`."""
        key = (program, tuple(sorted((str(k), v) for k, v in sizes.items())))
        til = self._solved.get(key)
        if til is None:
            errors = []
            for depths in (self.depths, (1,)):
                try:
                    til = self.model(program).solve(sizes, max_cores=self.max_cores, depths=depths).tiling
                    break
                except IRError as e:
                    errors.append(str(e))
            else:
                raise NoTilingFits(errors[-1])
            self._solved[key] = til
        return til

    def tuned_tiling(self, program: Program, sizes: dict):
        """`trex tune`'s stored tiling for this program at these sizes on this executor's hardware, when
        it is feasible here; None without one. Looked up once per (program, sizes) and executor."""
        from trex.compiler import targets
        from trex.cost_models.ascend_model import Tiling
        key = (program, tuple(sorted((str(k), v) for k, v in sizes.items())))
        if key not in self._tuned:
            cfg = targets.tuned_config(self.target, program, sizes) if self.target else None
            til = (Tiling(int(cfg["rows_per_tile"]), cfg.get("col_chunk"), int(cfg["buffer_depth"]), int(cfg["cores"]))
                   if cfg else None)
            self._tuned[key] = til if til is not None and not self.model(program).violations(sizes, til) else None
        return self._tuned[key]

    def kernel(self, program: Program, tiling):
        from trex.codegen_ascendc.launch import EmulatedKernel
        base = self._kernels.get((program, tiling.buffer_depth))
        if base is None:
            base = self._kernels[(program, tiling.buffer_depth)] = EmulatedKernel(program, tiling, self.opt)
        if base.tiling == tiling:
            return base
        k = copy.copy(base)      # same plan/printer/source (they depend on the depth only), new tiling
        k.tiling = tiling
        return k

    def __call__(self, program: Program, inputs: dict, scalars: dict) -> dict:
        """The executor signature the kernel specs' runners take (KernelSpec.run(args, executor))."""
        return self.run(program, inputs, scalars)

    def run(self, program: Program, inputs: dict, scalars: dict, choose: TilingChooser | None = None,
            record: list | None = None) -> dict:
        sizes = bind_sizes(program, inputs, scalars)
        if sizes[ROWS] == 0:
            raise IRError(f"{program.name}: zero rows; nothing to launch")
        with self._lock:
            til = choose(self.model(program), sizes) if choose is not None else self.tuned_tiling(program, sizes)
            if til is None:
                til = self.solved_tiling(program, sizes)
            else:
                bad = self.model(program).violations(sizes, til)
                if bad:
                    raise IRError(f"{program.name}: tiling {til} is infeasible at sizes {sizes}: {'; '.join(bad)}")
            k = self.kernel(program, til)
        out, counters = k(inputs, scalars)
        if record is not None:
            record.append({"program": program, "tiling": til, "sizes": sizes, "counters": counters})
        return out


_LAUNCHES: collections.Counter = collections.Counter()
_NO_TILING: dict[str, str] = {}   # op -> the last "no feasible tiling" message (the reference ran)
_DEFAULT: EmulatorExecutor | None = None


def default_executor() -> EmulatorExecutor:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = EmulatorExecutor()
    return _DEFAULT


def last_no_tiling(op_name: str) -> str | None:
    """The solver's message the last time ``op_name`` fell back to the reference because no tiling fit."""
    return _NO_TILING.get(op_name)


@contextlib.contextmanager
def use_executor(executor: EmulatorExecutor):
    """Run the "emulate" target's calls inside the block on ``executor`` (e.g. another optimisation
    level, hardware description or core bound) instead of the process-wide default."""
    global _DEFAULT
    previous, _DEFAULT = _DEFAULT, executor
    try:
        yield executor
    finally:
        _DEFAULT = previous


def launch_counts() -> collections.Counter:
    """Emulator launches per fused op name since the process started (a copy)."""
    return collections.Counter(_LAUNCHES)


def run_op(op_name: str, args: tuple, *, executor: EmulatorExecutor | None = None,
           choose_tiling: TilingChooser | None = None, record: list | None = None):
    """Run fused op ``op_name`` on ``args`` (its schema's positional arguments) as generated AscendC
    on the emulator; NotImplemented when `unsupported_reason` names a reason. ``choose_tiling(model,
    sizes)`` may return a feasible Tiling to use instead of the solver's (fuzzing other tilings);
    ``record`` (a list) receives one dict per launch: program, tiling, sizes, emulator counters."""
    if unsupported_reason(op_name, args) is not None:
        return NotImplemented
    ex = executor or default_executor()
    launches: list = []

    def execute(program, inputs, scalars):
        out = ex.run(program, inputs, scalars, choose_tiling, launches)
        _LAUNCHES[op_name] += 1
        return out

    try:
        out = registry.kernel_spec(op_name).run(args, Executor(execute), TARGET_NAME)
    except NoTilingFits as e:
        _NO_TILING[op_name] = str(e)
        return NotImplemented
    if record is not None:
        record.extend(launches)
    return out


def run(op_name: str, args: tuple):
    """Runner of the "emulate" target (trex.compiler.targets): generated AscendC, or NotImplemented."""
    return run_op(op_name, args)


def available() -> tuple[bool, str]:
    from trex.codegen_ascendc.emulator.runner import compiler_available
    if compiler_available():
        return True, ""
    return False, "no C++ compiler for the AscendC emulator (install g++ or set CXX)"


def register() -> None:
    """Register the "emulate" target (idempotent; the `trex.targets` entry point calls this)."""
    from trex.compiler import targets
    targets.register_target(TARGET_NAME, run, available=available, replace=True,
                            description="generated AscendC compiled against the host emulator (codegen_ascendc)")
