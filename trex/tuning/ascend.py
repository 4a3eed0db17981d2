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

import hashlib
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
from .harness import Artifact


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
        text = Path(path).read_text()
        d = json.loads(text)
        # the label names the file and its content: an entry timed under other constants never answers
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        return cls(d.get("launch_s"), dict(d.get("scales", {})), f"calibrated: {path}, sha256 {digest}")


class AscendBackend:
    label = "modeled"
    deterministic = True      # a modeled profile has no timer noise: one profile per node

    def __init__(self, target: str, pattern: str, dtype: str, named_sizes: dict, *, opt: str = "-O0",
                 calibration: AscendCalibration | None = None, program_index: int = 0):
        self.target, self.pattern, self.dtype = target, pattern, dtype
        self.hw = ascend_target(target)
        # program_index: which launch of the pattern's layout (harness.layout_programs) this search tunes;
        # a later launch is its own store unit, keyed by the sizes it binds (harness.program_sizes)
        self.program_index = program_index
        self.program: Program = harness.build_program(pattern, dtype, index=program_index)
        self.unit = self.program.name if program_index else None
        self.named_sizes = harness.program_sizes(self.program, dict(named_sizes))
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
    def printer_source(self, config: dict) -> str:
        """The kernel codegen prints for this configuration (the source depends on the buffer depth)."""
        return harness.ascend_tiling_struct(self.program, int(config["buffer_depth"])).print()

    def compile(self, config: dict, source_transform=None) -> Artifact:
        """Print the kernel for this configuration and build it for the emulator (sandbox.build: into a
        private directory, not loaded here, its hash recorded). `source_transform` (text -> text) lets a
        test plant a generator bug or a hand-written variant; the verifier only ever sees the result."""
        from . import sandbox
        harness.COMPILE_COUNT["n"] += 1
        src = self.printer_source(config)
        if source_transform is not None:
            src = source_transform(src)
        binary = sandbox.build(src, self.opt)
        return Artifact(dict(config), src, self.program.name, binary.sha256)

    # ------------------------------------------------------------------------------ profile
    def profile_rows(self, config: dict) -> list[int]:
        """The distinct per-core row counts of the configuration's front/tail split: one single-core
        launch over each gives the critical core's counts and every core's bytes."""
        return sorted({r for r in core_rows(self.sizes[ROWS], int(config["cores"]), self._row_group()) if r > 0})

    def request(self, art: Artifact, checks: int) -> dict:
        return {"target": self.target, "pattern": self.pattern, "program_index": self.program_index,
                "dtype": self.dtype, "sizes": self.named_sizes, "scalars": self.scalars,
                "kernel": art.for_verifier(), "checks": checks, "opt": self.opt}

    def verify_and_profile(self, art: Artifact, checks: int) -> tuple[dict, dict | None]:
        """(the verdict, the profile or None): the profile's launches are part of the verification (the
        same fresh inputs, checks and judge: verify.check_ascend), so what is priced is what was verified."""
        from .verify import check_ascend
        ans = check_ascend(self.request(art, checks), profile_rows=tuple(self.profile_rows(art.config)))
        if not ans.get("ok"):
            return ans, None
        counters = {int(r): c for r, c in ans["counters"].items()}
        prof = self.price(art.config, counters)
        prof["verified"] = {k: ans[k] for k in ("checks", "rows_checked", "bucket", "p_miss_one_bad_row_count",
                                                "sandbox", "library_sha256") if k in ans}
        return ans, prof

    def profile(self, art: Artifact) -> dict:
        """Modeled time of the artifact from unjudged single-core launches on fresh inputs (a tool: the
        search uses verify_and_profile, whose launches are judged)."""
        from . import sandbox
        from .verify import draw_case, plan_bytes
        binary = sandbox.build(art.source, self.opt)
        rows = self.profile_rows(art.config)
        launches = []
        for r in rows:
            case = draw_case()
            ins = harness.make_inputs(self.program, dict(self.named_sizes, ROWS=r), case["seed"], case["scale"],
                                      case["distribution"])
            args, _ = harness.ascend_launch_args(self.program, art.config, ins, self.scalars, cores=1)
            launches.append(sandbox.Launch([harness.tensor_bytes(a) if not isinstance(a, bytes) else a for a in args],
                                           1, True))
        res = sandbox.run(binary, self.program.name, launches)
        counters = {}
        for r, out in zip(rows, res):
            if "error" in out:
                raise RuntimeError(f"profile launch at ROWS={r}: {out['error']}")
            counters[r] = {**out["counters"], "plan": plan_bytes(self.model, self.program, art.config,
                                                                  dict(self.named_sizes, ROWS=r), 1)}
        return self.price(art.config, counters)

    def price(self, config: dict, by_rows: dict) -> dict:
        """Modeled time (see the module doc) of a configuration from the counters of its single-core
        launches by row count; bytes are the larger of the kernel's count and the transfer plan's."""
        rows = self.sizes[ROWS]
        cores = int(config["cores"])
        per_core = core_rows(rows, cores, self._row_group())
        active = max(1, sum(1 for r in per_core if r > 0))

        def nbytes(c: dict, k: str) -> int:
            return max(int(c[k]), int(c.get("plan", {}).get(k, 0)))
        crit = by_rows[per_core[0]]
        total = {k: sum(nbytes(by_rows[r], k) for r in per_core if r > 0) for k in ("mte2_bytes", "mte3_bytes")}
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
