"""Ascend targets (ascend910b, ascend910c): the cost model's start, compiling candidates, and the
modeled profile.

Profile = the emulator's counters of the candidate's kernel through the calibrated cost model. It is
labelled "modeled": no NPU ran it. Per pipe, for the critical core (core 0 holds the most rows of the
front/tail split, so a one-core launch over its rows counts exactly what core 0 issues):
  MTE2 = the bytes the kernel moved at the cost model's per-transfer-size bandwidth (hardware.py's
  msKPP curve over the plan's transfers; the emulator totals bytes, not sizes), MTE3 likewise,
  V = sum over instructions of repeats x cycles per repeat + calls x issue cycles,
  S = scalar ops x cost, GM = the chip-bandwidth term scaled by all cores' bytes (one single-core
  launch per distinct per-core row count: the full cores and the tail core);
then each pipe is multiplied by the calibration's scale (1 without a calibration) and combined the way
the cost model does: depth >= 2 overlaps the pipes (max + one tile of MTE2+MTE3 to fill/drain),
depth 1 serialises them (sum); plus the launch constant.

Counting is what the emulator executed, not what the cost model predicted: where the two disagree
(vector repeats: the emulator counts ReduceSum's tree levels, the model ceil(n*4/256); any kernel
that moves other bytes than the plan), the profile follows the kernel.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sympy

from trex.codegen_ascendc.counting import ascend_cost_model
from trex.cost_models.ascend_model import Tiling, core_rows
from trex.cost_models.hardware import ascend_target
from trex.compiler.kernel_ir import ROWS, Program

from . import harness


@dataclass
class AscendCalibration:
    """measured ~= launch_s + overlap(scale_k * pipe_k): constants fitted on an NPU
    (trex.cost_models.ascend_model.calibrate's output, saved as JSON {"launch_s": .., "scales": {..}})."""
    launch_s: float | None = None
    scales: dict = field(default_factory=dict)
    source: str = "uncalibrated: trex/cost_models/hardware.py constants"

    @classmethod
    def load(cls, path: str | None) -> AscendCalibration:
        if not path:
            return cls()
        d = json.loads(Path(path).read_text())
        return cls(d.get("launch_s"), dict(d.get("scales", {})), f"calibrated: {path}")


@dataclass
class Artifact:
    """What a candidate hands to the verifier and the profiler: its kernel source and knob values."""
    config: dict
    source: str
    kernel: str

    def for_verifier(self) -> dict:
        return {"source": self.source, "config": self.config}


class AscendBackend:
    label = "modeled"

    def __init__(self, target: str, pattern: str, dtype: str, named_sizes: dict, *, opt: str = "-O0",
                 calibration: AscendCalibration | None = None):
        self.target, self.pattern, self.dtype = target, pattern, dtype
        self.hw = ascend_target(target)
        self.program: Program = harness.build_program(pattern, dtype)
        self.named_sizes = dict(named_sizes)
        self.sizes = harness.symbol_sizes(named_sizes)
        self.scalars = harness.scalars_for(pattern, self.program, self.named_sizes)
        self.model = ascend_cost_model(self.program, self.hw)
        self.opt = opt
        self.calibration = calibration or AscendCalibration()
        self.label = f"modeled ({self.calibration.source})"

    # ------------------------------------------------------------------------------- start
    def initial(self) -> tuple[dict, dict]:
        """The exact solver's tiling and its predicted pipes (the search's root)."""
        pred = self.model.solve(self.sizes)
        t = pred.tiling
        config = {"rows_per_tile": t.rows_per_tile, "buffer_depth": t.buffer_depth, "cores": t.cores}
        if self.program.chunk_dims:
            config["col_chunk"] = t.col_chunk
        return config, {"time_s": pred.time_s, "pipes_s": dict(pred.pipes_s)}

    def _row_group(self) -> int:
        """Rows per group that core blocks and tiles never straddle (RoPE's table rows), else 1."""
        g = getattr(self.program, "row_group", None)
        return int(sympy.sympify(g).subs(self.sizes)) if g is not None else 1

    def canonical(self, config: dict) -> dict:
        """The configuration in its canonical form: the fewest cores that give the same rows per core
        (the front/tail split launches those; more cores would idle) and a row tile no longer than a
        core's rows. Two configurations with the same canonical form run the same kernel the same way,
        so the search profiles only one of them."""
        rows = self.sizes[ROWS]
        cores = int(config["cores"])
        group = self._row_group()
        block = math.ceil(math.ceil(rows / cores) / group) * group     # core_rows' block
        out = dict(config)
        out["cores"] = math.ceil(rows / block)
        out["rows_per_tile"] = min(int(config["rows_per_tile"]), block)
        return out

    def tiling(self, config: dict) -> Tiling:
        return Tiling(int(config["rows_per_tile"]), config.get("col_chunk"), int(config["buffer_depth"]),
                      int(config["cores"]))

    def infeasible(self, config: dict) -> list[str]:
        """Why a configuration cannot run (UB capacity, DataCopyPad limits, core count); [] = feasible.
        Checked before compiling: no g++ run for a tiling the hardware cannot hold."""
        return self.model.violations(self.sizes, self.tiling(config))

    def predict(self, config: dict) -> dict:
        pred = self.model.evaluate(self.sizes, self.tiling(config))
        return {"time_s": pred.time_s, "pipes_s": dict(pred.pipes_s)}

    # ------------------------------------------------------------------------------ compile
    def compile(self, config: dict, source_transform=None) -> Artifact:
        """Print the kernel for this configuration and build it for the emulator. `source_transform`
        (text -> text) lets a test plant a generator bug; the verifier only ever sees the result."""
        from trex.codegen_ascendc.emulator.runner import compile_kernel
        harness.COMPILE_COUNT["n"] += 1
        printer = harness.ascend_tiling_struct(self.program, int(config["buffer_depth"]))
        src = printer.print()
        if source_transform is not None:
            src = source_transform(src)
        compile_kernel(src, extra_flags=(self.opt,))
        return Artifact(dict(config), src, self.program.name)

    # ------------------------------------------------------------------------------ profile
    def profile(self, art: Artifact, seed: int = 0) -> dict:
        """Modeled time of the artifact (see the module doc); returns time_s, pipes_s, counters."""
        config = art.config
        ins = harness.make_inputs(self.program, self.named_sizes, seed)
        rows = self.sizes[ROWS]
        cores = int(config["cores"])
        per_core = core_rows(rows, cores, self._row_group())
        active = max(1, sum(1 for r in per_core if r > 0))
        # one single-core launch per distinct per-core row count (full cores, the tail core): the
        # critical core's counters, and every core's bytes for the chip-bandwidth term
        by_rows = {r: harness.run_ascend(self.program, art.source, config, ins, self.scalars, opt=self.opt,
                                         rows_limit=r, cores=1)[1] for r in sorted(set(per_core)) if r > 0}
        crit = by_rows[per_core[0]]
        total = {k: sum(by_rows[r][k] for r in per_core if r > 0) for k in ("mte2_bytes", "mte3_bytes")}
        hw = self.hw
        f = hw.clock_hz.value
        cpr = hw.cycles_per_repeat
        unknown = sorted(set(crit["vector_repeats"]) - set(cpr))
        if unknown:
            raise ValueError(f"{self.program.name}: no cycles-per-repeat entry for {unknown} in "
                             f"trex/cost_models/hardware.py VECTOR_CYCLES_PER_REPEAT; add them before tuning")
        vec_cycles = sum(n * cpr[api].value for api, n in crit["vector_repeats"].items())
        vec_cycles += sum(crit["vector_calls"].values()) * hw.vec_issue_cycles.value

        # Transfer time: the model's per-transfer-size bandwidth (its transfer list gives each transfer's
        # size; the emulator only totals them) applied to the bytes the kernel actually moved. For the
        # printed kernels the byte counts agree exactly (tests/codegen), so this is the model's MTE time;
        # a kernel that moves other bytes is scaled by its own count.
        pred = self.model.evaluate(self.sizes, self.tiling(config))

        def transfer_s(key: str, model_bytes: int, emu_bytes: int, ntransfers: int, curve) -> float:
            if not emu_bytes:
                return 0.0
            if model_bytes:
                return pred.pipes_s[key] * emu_bytes / model_bytes
            return emu_bytes / float(curve(np.array(emu_bytes / max(1, ntransfers)), active))
        model_total = pred.mte2_bytes + pred.mte3_bytes
        pipes = {"mte2": transfer_s("mte2", pred.mte2_bytes, total["mte2_bytes"], crit["mte2_transfers"], hw.mte2_bw),
                 "mte3": transfer_s("mte3", pred.mte3_bytes, total["mte3_bytes"], crit["mte3_transfers"], hw.mte3_bw),
                 "vec": vec_cycles / f,
                 "scalar": crit["scalar_ops"] * hw.scalar_s_per_op.value,
                 "gm": (pred.pipes_s["gm"] * (total["mte2_bytes"] + total["mte3_bytes"]) / model_total if model_total
                        else (total["mte2_bytes"] + total["mte3_bytes"]) / hw.hbm_bw.value)}
        pipes = {k: v * self.calibration.scales.get(k, 1.0) for k, v in pipes.items()}
        ntiles = max(1, math.ceil(per_core[0] / int(config["rows_per_tile"])))
        if int(config["buffer_depth"]) >= 2:
            device = max(pipes.values()) + (pipes["mte2"] + pipes["mte3"]) / ntiles
        else:
            device = max(pipes["mte2"] + pipes["mte3"] + pipes["vec"] + pipes["scalar"], pipes["gm"])
        launch = self.calibration.launch_s if self.calibration.launch_s is not None else hw.launch_s.value
        return {"time_s": launch + device, "device_s": device, "pipes_s": {**pipes, "launch": launch},
                "label": self.label,
                "counters": {"critical_core": _slim(crit), "all_cores": total}}


def _slim(c: dict) -> dict:
    keep = ("mte2_bytes", "mte2_transfers", "mte3_bytes", "mte3_transfers", "scalar_ops", "ub_peak_bytes",
            "blocks_run")
    out = {k: c[k] for k in keep if k in c}
    out["vector_repeats"] = dict(c.get("vector_repeats", {}))
    return out
