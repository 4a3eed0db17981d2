"""What the search can change: configurations, moves on them, and the regime a profile is in.

A configuration is a plain dict of the knobs a printer honours (JSON-able, so the store can keep it):
  * Ascend (codegen_ascendc): rows_per_tile, col_chunk (chunked programs only), buffer_depth, cores.
    The printed source depends on (program, buffer_depth); the other knobs are runtime tiling fields.
  * CUDA (trex.codegen_triton.printer.Tiling): rows_per_tile, col_chunk, num_warps, num_stages, programs,
    reverse_second_pass, second_chunk, hist_scratch, prefetch, dot_bf16_split (a knob the printer
    does not have is absent from the configuration, and so never moved).

A move is one named change of one knob (`rows_per_tile*2`, `cores/2`, `buffer_depth=1`, ...). Moves are
rows of the tables below, not code paths; `apply_move` interprets a row and normalises the result to
the target's rules (powers of two on Triton, multiples of 16 for Ascend column chunks). Whether the
result is feasible (UB, DataCopyPad limits, registers) is the target backend's question, answered
from the cost models before anything is compiled.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# (knob, operation, argument): "mul"/"div" scale an integer knob, "add" shifts it, "set" assigns a value,
# "flip" negates a boolean. Knobs absent from a configuration (col_chunk of an unchunked program) are
# skipped by `moves_for`.
ASCEND_MOVES = (
    ("rows_per_tile", "mul", 2), ("rows_per_tile", "div", 2), ("rows_per_tile", "add", 1),
    ("rows_per_tile", "add", -1),
    ("cores", "mul", 2), ("cores", "div", 2), ("cores", "add", 1), ("cores", "add", -1),
    ("col_chunk", "mul", 2), ("col_chunk", "div", 2),
    ("buffer_depth", "set", 1), ("buffer_depth", "set", 2), ("buffer_depth", "set", 3),
)
CUDA_MOVES = (
    ("rows_per_tile", "mul", 2), ("rows_per_tile", "div", 2),
    ("col_chunk", "mul", 2), ("col_chunk", "div", 2),
    ("second_chunk", "mul", 2), ("second_chunk", "div", 2),
    ("num_warps", "mul", 2), ("num_warps", "div", 2),
    ("num_stages", "set", 1), ("num_stages", "set", 2), ("num_stages", "set", 3),
    ("programs", "mul", 2), ("programs", "div", 2),
    ("reverse_second_pass", "flip", None), ("hist_scratch", "flip", None),
    ("prefetch", "flip", None), ("dot_bf16_split", "flip", None),
)
MOVES = {"ascend": ASCEND_MOVES, "cuda": CUDA_MOVES}

# Knobs the target requires to be powers of two (trex.codegen_triton.printer.Tiling.__post_init__).
POW2_KNOBS = {"cuda": {"rows_per_tile", "col_chunk", "second_chunk", "num_warps"}, "ascend": set()}
# Ascend column chunks start 32-byte aligned only on multiples of 16 elements (AscendCostModel.violations).
ALIGN_KNOBS = {"ascend": {"col_chunk": 16}, "cuda": {}}

# Which pipe of a profile puts the kernel in which regime.
REGIME_OF_PIPE = {"mte2": "memory-bound", "mte3": "memory-bound", "gm": "memory-bound", "dram": "memory-bound",
                  "l2": "memory-bound", "vec": "vector-bound", "dot": "vector-bound", "scalar": "scalar-bound"}

# Before any skill is known, the knobs tried first in each regime (why: a memory-bound row kernel gains
# from longer transfers and more cores sharing the bandwidth; a vector-bound one from more cores and
# fewer issued instructions per row; a scalar-bound one from fewer per-tile scalar fences). The
# regime is read from the device pipes only: the launch constant is the same for every candidate.
PRIOR_KNOB_ORDER = {
    "memory-bound": ("cores", "rows_per_tile", "buffer_depth", "col_chunk", "programs", "num_warps",
                     "prefetch", "second_chunk", "num_stages", "reverse_second_pass", "hist_scratch",
                     "dot_bf16_split"),
    "vector-bound": ("cores", "rows_per_tile", "col_chunk", "num_warps", "programs", "buffer_depth",
                     "dot_bf16_split", "second_chunk", "num_stages", "prefetch", "hist_scratch",
                     "reverse_second_pass"),
    "scalar-bound": ("rows_per_tile", "cores", "col_chunk", "buffer_depth", "num_warps", "programs",
                     "second_chunk", "num_stages", "prefetch", "hist_scratch", "reverse_second_pass",
                     "dot_bf16_split"),
}


@dataclass(frozen=True)
class Move:
    knob: str
    op: str
    arg: Any

    @property
    def name(self) -> str:
        sym = {"mul": "*", "div": "/", "set": "="}.get(self.op)
        if self.op == "add":
            return f"{self.knob}{'+' if self.arg >= 0 else ''}{self.arg}"
        if self.op == "flip":
            return f"{self.knob}!"
        return f"{self.knob}{sym}{self.arg}"


def family(target: str) -> str:
    """'cuda' or 'ascend' (ascend910b / ascend910c share the Ascend knobs)."""
    if target == "cuda":
        return "cuda"
    if target.startswith("ascend"):
        return "ascend"
    raise ValueError(f"unknown tuning target {target!r}; use cuda, ascend910b or ascend910c")


def moves_for(target: str, config: dict) -> list[Move]:
    """Every move of the target's table whose knob this configuration has (a None knob can be scaled
    only once it has a value; `programs` None = one program per tile, so it cannot be halved)."""
    out = []
    for knob, op, arg in MOVES[family(target)]:
        if knob not in config:
            continue
        if config[knob] is None and op in ("mul", "div", "add"):
            continue
        out.append(Move(knob, op, arg))
    return out


def _pow2_floor(n: int) -> int:
    return 1 << (max(1, int(n)).bit_length() - 1)


def apply_move(target: str, config: dict, move: Move) -> dict | None:
    """The configuration after `move`, or None when the move does not change it (a no-op is not a
    candidate: it would be compiled and profiled for nothing)."""
    fam = family(target)
    cur = config[move.knob]
    if move.op == "mul":
        new = cur * move.arg
    elif move.op == "div":
        new = cur // move.arg
    elif move.op == "add":
        new = cur + move.arg
    elif move.op == "set":
        new = move.arg
    elif move.op == "flip":
        new = not cur
    else:
        raise ValueError(f"move {move}: unknown operation {move.op!r} (mul, div, add, set, flip)")
    if isinstance(new, int) and not isinstance(new, bool):
        if new < 1:
            return None
        if move.knob in POW2_KNOBS[fam]:
            new = _pow2_floor(new)
        align = ALIGN_KNOBS[fam].get(move.knob)
        if align and new % align:
            new = max(align, new - new % align)
    if new == cur:
        return None
    out = dict(config)
    out[move.knob] = new
    return out


def regime(pipes: dict) -> tuple[str, str]:
    """(regime, pipe) of the profile's largest pipe time; pipes the table does not know are ignored."""
    known = {k: v for k, v in pipes.items() if k in REGIME_OF_PIPE and v is not None}
    if not known:
        return "unknown", ""
    pipe = max(known, key=known.get)
    return REGIME_OF_PIPE[pipe], pipe


def config_key(config: dict) -> str:
    """A canonical string of a configuration (dedup of tree nodes)."""
    return ",".join(f"{k}={config[k]}" for k in sorted(config))
