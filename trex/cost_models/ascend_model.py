"""Per-pipe cost model of a generated AscendC kernel, the tiling solver and calibration.

The model prices the kernel's counts (kernel_counts.KernelCounts, which the AscendC back end derives
from the plan it prints: trex.codegen_ascendc.counting; `ascend_cost_model(program, hw)` there
builds a model of a program):
  MTE2  bytes in  = sum of GM->UB transfers (blockCount * blockLen * sizeof)
  MTE3  bytes out = sum of UB->GM transfers
  V     cycles    = sum over vector instructions of ceil(count * width / 256) repeats x cycles per
                    repeat of that instruction (msKPP table, hardware.py) + issue cycles
  S     ops       = GetValue/SetValue on the scalar unit
  launch           = per-kernel host launch + start-up
as sympy expressions in the tile symbols (ROWS_PER_TILE, COL_CHUNK, the current tile's TR and
chunk's CL, and the program's sizes); numeric evaluation sums them exactly over the front/tail
core split, the full/tail tiles and the full/tail chunks. The model takes the counts as a function
of the buffer depth (the solver tries several depths) and never sees the instructions themselves.

Time per core: double-buffered (depth >= 2) pipes overlap: max(MTE2, V, MTE3, S) plus one tile of
MTE2 + MTE3 to fill/drain the pipeline; depth 1: their sum. Kernel time = launch + the slowest
core (core 0 has the most rows). This is the "simple model a generator can use" of
reference/ascendc.md §7, not an official one; `calibrate` fits its constants to measurements.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import sympy

from trex.cost_models.hardware import AscendHW
from trex.cost_models.kernel_counts import CL, COL_CHUNK, NUMPY_FUNCS, ROWS_PER_TILE, TR, KernelCounts
from trex.compiler.kernel_ir import ROWS, IRError, Program, Schedule, TensorKind, Op, row_split


@dataclass(frozen=True)
class Tiling:
    rows_per_tile: int
    col_chunk: int | None
    buffer_depth: int
    cores: int

    def schedule(self) -> Schedule:
        return Schedule(self.rows_per_tile, self.col_chunk, self.buffer_depth, self.cores)


@dataclass
class Prediction:
    time_s: float
    pipes_s: dict                 # mte2, vec, mte3, scalar, gm (chip bandwidth share) of the critical core; launch
    ratios: dict                  # msprof-like aiv_*_ratio = pipe time / kernel time (device part)
    mte2_bytes: int               # all cores, exact
    mte3_bytes: int
    ub_bytes: int
    roofline_s: float
    roofline_fraction: float
    tiling: Tiling

    def as_dict(self) -> dict:
        return {"time_us": self.time_s * 1e6, "pipes_us": {k: v * 1e6 for k, v in self.pipes_s.items()},
                "ratios": self.ratios, "mte2_bytes": self.mte2_bytes, "mte3_bytes": self.mte3_bytes,
                "ub_bytes": self.ub_bytes, "roofline_us": self.roofline_s * 1e6,
                "roofline_fraction": self.roofline_fraction, "tiling": self.tiling.__dict__}


def core_rows(rows: int, cores: int, group: int = 1) -> list:
    """Rows per core of the front/tail split (kernel_ir.row_split: the printed kernel's and the
    interpreter's); blocks are rounded up to a multiple of the program's row group."""
    return [hi - lo for lo, hi in row_split(rows, cores, group)]


def _lam(expr, syms):
    return sympy.lambdify(syms, expr, modules=[NUMPY_FUNCS, "numpy"])


class AscendCostModel:
    """Cost model of one program on one Ascend target: `counts(buffer_depth)` gives the kernel's
    counts at that depth (trex.codegen_ascendc.counting.ascend_cost_model supplies the generated
    kernel's); all depths share the formulas."""

    def __init__(self, program: Program, hw: AscendHW, counts: Callable[[int], KernelCounts]):
        self.program, self.hw = program, hw
        self._counts = counts

    @functools.lru_cache(maxsize=None)
    def counts(self, depth: int) -> KernelCounts:
        return self._counts(depth)

    @functools.lru_cache(maxsize=None)
    def _symbolic(self, depth: int):
        """Per-section sympy expressions: (per-tile, per-chunk) parts for the body, totals for
        prologue/epilogue. Each entry: dict quantity -> expr."""
        cpr = self.hw.cycles_per_repeat
        issue = self.hw.vec_issue_cycles.value
        out = {}
        for sec, c in self.counts(depth).sections():
            parts = {False: {"vec": sympy.Integer(0), "scalar": c.scalar_ops},
                     True: {"vec": sympy.Integer(0), "scalar": c.scalar_ops_per_chunk}}
            for v in c.vector:
                if v.api not in cpr:
                    raise IRError(f"cost model: no cycles-per-repeat entry for {v.api}")
                reps = sympy.ceiling(v.count * v.width / self.hw.repeat_bytes)
                parts[v.in_chunk]["vec"] += v.times * (reps * cpr[v.api].value + issue)
            out[sec] = (parts, [(t, t.times, t.in_chunk) for t in c.transfers])
        return out

    def _group(self, sz: dict) -> int:
        g = self.program.row_group
        return int(sympy.sympify(g).subs(sz)) if g is not None else 1

    def pipe_expressions(self, depth: int = 2) -> dict:
        """The model's sympy expressions per section: MTE2/MTE3 bytes, vector cycles and scalar ops
        per row tile (the non-chunked part, in TR = the tile's rows) and per column chunk (in TR and
        CL), and the UB bytes in ROWS_PER_TILE and COL_CHUNK. For explain output and inspection."""
        kc = self.counts(depth)
        out = {"ub_bytes": kc.ub_bytes}
        for sec, (parts, transfers) in self._symbolic(depth).items():
            for in_chunk, tag in ((False, "per_tile" if sec == "body" else "once"), (True, "per_chunk")):
                e = {"vec_cycles": parts[in_chunk]["vec"], "scalar_ops": parts[in_chunk]["scalar"],
                     "mte2_bytes": sympy.Add(*[m * t.nbytes for t, m, ic in transfers if ic == in_chunk and t.direction == "in"]),
                     "mte3_bytes": sympy.Add(*[m * t.nbytes for t, m, ic in transfers if ic == in_chunk and t.direction == "out"])}
                e = {k: kc.resolve(v) for k, v in e.items()}
                if any(v != 0 for v in e.values()):
                    out[f"{sec}_{tag}"] = e
        return out

    def _sizes(self, sizes: dict) -> dict:
        return {(k if isinstance(k, sympy.Symbol) else sympy.Symbol(str(k), positive=True, integer=True)): int(v)
                for k, v in sizes.items()}

    # --------------------------------------------------------------------------------- numeric
    @functools.lru_cache(maxsize=None)
    def _compiled_generic(self, depth: int):
        """Lambdified per-section quantities f(TR, CL, ROWS_PER_TILE, COL_CHUNK, *sizes, *switches), built
        once, and the switches' values g(ROWS_PER_TILE, COL_CHUNK, *sizes) (evaluated once per tiling grid)."""
        sizes = tuple(self.program.sizes)
        kc = self.counts(depth)
        sw_syms = tuple(sym for sym, _ in kc.switches)
        syms = (TR, CL, ROWS_PER_TILE, COL_CHUNK) + sizes + sw_syms
        sw_fns = tuple(_lam(val, (ROWS_PER_TILE, COL_CHUNK) + sizes) for _, val in kc.switches)
        out = {}
        for sec, (parts, transfers) in self._symbolic(depth).items():
            fn = {}
            for in_chunk in (False, True):
                for q in ("vec", "scalar"):
                    fn[(in_chunk, q)] = _lam(parts[in_chunk][q], syms)
            tfn = []
            for t, mult, in_chunk in transfers:
                tfn.append((t.direction, in_chunk, _lam(t.nbytes, syms), _lam(sympy.sympify(mult), syms)))
            out[sec] = (fn, tfn)
        cap = {TR: ROWS_PER_TILE, CL: COL_CHUNK}
        ub = _lam(kc.ub_bytes_raw, syms)
        bcs = [(t.gm, _lam(sympy.sympify(t.block_count).subs(cap), syms),
                _lam((sympy.sympify(t.block_len) * t.elem_bytes).subs(cap), syms))
               for t in kc.transfers]
        return sizes, out, ub, bcs, sw_fns

    def _compiled(self, depth: int, size_items: tuple):
        """The generic functions with this call's sizes bound (sizes missing from the program are ignored):
        (per-section functions f(tr, cl, t, c, sw), ub(t, c), block limits, switches(t, c) -> sw)."""
        sizes, out, ub, bcs, sw_fns = self._compiled_generic(depth)
        sv = dict(size_items)
        try:
            vals = tuple(sv[s] for s in sizes)
        except KeyError as e:
            raise IRError(f"{self.program.name}: size {e.args[0]} not given (have {sorted(map(str, sv))})") from None

        def switches(t, c):
            return tuple(g(t, c, *vals) for g in sw_fns)

        def bind(f):
            return lambda tr, cl, t, c, sw: f(tr, cl, t, c, *vals, *sw)
        bound = {}
        for sec, (fn, tfn) in out.items():
            bound[sec] = ({k: bind(f) for k, f in fn.items()},
                          [(d, ic, bind(nbf), bind(mf)) for d, ic, nbf, mf in tfn])
        return (bound, (lambda t, c, sw: ub(t, c, t, c, *vals, *sw)),
                [(g, (lambda t, c, sw, f=bc: f(t, c, t, c, *vals, *sw)),
                  (lambda t, c, sw, f=bl: f(t, c, t, c, *vals, *sw))) for g, bc, bl in bcs], switches)

    def _batch(self, sizes: dict, P: int, depth: int, T, C):
        """Vectorised evaluation over arrays T (rows_per_tile) and C (col_chunk; 1 when unchunked)
        that broadcast together. Returns dict of arrays."""
        sz = self._sizes(sizes)
        rows = sz[ROWS]
        comp, _, _, switches = self._compiled(depth, tuple(sorted(sz.items(), key=lambda kv: kv[0].name)))
        T = np.asarray(T, dtype=np.int64)
        C = np.asarray(C, dtype=np.int64)
        T, C = np.broadcast_arrays(T, C)
        sw = tuple(np.broadcast_to(np.asarray(v), T.shape) for v in switches(T, C))   # once per grid
        chunk_dim = self.program.chunk_dims[0] if self.program.chunk_dims else None
        if chunk_dim is not None:
            full = int(chunk_dim.subs(sz))
            chunk_classes = [(C, full // C), (full % C, (full % C > 0).astype(np.int64))]
        else:
            one = np.ones_like(T)
            chunk_classes = [(one, one)]
        per_core = core_rows(rows, P, self._group(sz))
        active = max(1, sum(1 for r in per_core if r > 0))
        hw = self.hw
        zero = np.zeros(T.shape, dtype=np.float64)
        results = {}
        for r in sorted(set(per_core)):
            tot = {k: zero.copy() for k in ("vec", "scalar", "mte2_bytes", "mte3_bytes", "mte2_s", "mte3_s")}
            tail = r % T
            tile_classes = [(T, r // T), (tail, (tail > 0).astype(np.int64))]
            for sec in ("prologue", "body", "epilogue"):
                fn, tfn = comp[sec]
                tcl = tile_classes if sec == "body" else [(np.ones_like(T), np.ones_like(T))]
                for tr, nt in tcl:
                    for in_chunk in (False, True):
                        ccl = chunk_classes if in_chunk else [(np.ones_like(T), np.ones_like(T))]
                        for cl, ncl in ccl:
                            w = (nt * ncl).astype(np.float64)
                            trs = np.maximum(tr, 1)
                            cls = np.maximum(cl, 1)
                            def val(f):
                                return np.broadcast_to(np.asarray(f(trs, cls, T, C, sw), dtype=np.float64), T.shape)
                            tot["vec"] += w * val(fn[(in_chunk, "vec")])
                            tot["scalar"] += w * val(fn[(in_chunk, "scalar")])
                            for direction, ic, nbf, mf in tfn:
                                if ic != in_chunk:
                                    continue
                                nb = np.rint(val(nbf))
                                m = np.rint(val(mf))
                                bw = hw.mte2_bw(nb, active) if direction == "in" else hw.mte3_bw(nb, active)
                                key = "mte2" if direction == "in" else "mte3"
                                tot[key + "_bytes"] += w * m * nb
                                tot[key + "_s"] += w * m * nb / bw
            tot["ntiles"] = -(-r // T) if r else np.zeros_like(T)
            results[r] = tot
        f = hw.clock_hz.value
        crit_time = None
        crit = None
        for r, tot in results.items():
            pipes = {"mte2": tot["mte2_s"], "vec": tot["vec"] / f, "mte3": tot["mte3_s"],
                     "scalar": tot["scalar"] * hw.scalar_s_per_op.value}
            # MTE2 and MTE3 share the chip's GM bandwidth (hbm_bw is a read+write figure)
            gm = (tot["mte2_bytes"] + tot["mte3_bytes"]) * active / hw.hbm_bw.value
            if depth >= 2:
                nt = np.maximum(tot["ntiles"], 1)
                t = np.maximum.reduce(list(pipes.values()) + [gm]) + (pipes["mte2"] + pipes["mte3"]) / nt
            else:
                t = np.maximum(sum(pipes.values()), gm)
            pipes_gm = {**pipes, "gm": gm}
            if crit_time is None:
                crit_time, crit = t, pipes_gm
            else:
                take = t > crit_time
                crit = {k: np.where(take, v, crit[k]) for k, v in pipes_gm.items()}
                crit_time = np.maximum(t, crit_time)
        mte2 = sum(results[r]["mte2_bytes"] * per_core.count(r) for r in results)
        mte3 = sum(results[r]["mte3_bytes"] * per_core.count(r) for r in results)
        return {"time": hw.launch_s.value + crit_time, "device": crit_time, "pipes": crit,
                "mte2_bytes": mte2, "mte3_bytes": mte3}

    def evaluate(self, sizes: dict, tiling: Tiling) -> Prediction:
        chunk_dim = self.program.chunk_dims[0] if self.program.chunk_dims else None
        sz = self._sizes(sizes)
        C = (tiling.col_chunk or int(chunk_dim.subs(sz))) if chunk_dim is not None else 1
        b = self._batch(sizes, tiling.cores, tiling.buffer_depth, np.array([tiling.rows_per_tile]), np.array([C]))
        dev = float(b["device"][0])
        pipes = {k: float(v[0]) for k, v in b["pipes"].items()}
        # msprof-like ratios of the four AIV pipes; "gm" (chip bandwidth share) is reported as a pipe only
        ratios = {f"aiv_{k}_ratio": (v / dev if dev > 0 else 0.0) for k, v in pipes.items() if k != "gm"}
        total = float(b["time"][0])
        roof = self.roofline_s(sizes, tiling.cores)
        til = Tiling(tiling.rows_per_tile, C if chunk_dim is not None else None, tiling.buffer_depth, tiling.cores)
        return Prediction(total, {**pipes, "launch": self.hw.launch_s.value}, ratios, int(round(float(b["mte2_bytes"][0]))),
                          int(round(float(b["mte3_bytes"][0]))), self.ub_bytes(sizes, til), roof,
                          roof / total if total > 0 else 0.0, til)

    def unique_bytes(self, sizes: dict, cores: int = 1) -> int:
        """Bytes every implementation must move: each input read once, each output written once."""
        sz = self._sizes(sizes)
        n = 0
        for t in self.program.tensors:
            per = int(sympy.Mul(*t.cols).subs(sz)) * t.dtype.nbytes
            lead = {TensorKind.ROW: sz[ROWS], TensorKind.SHARED: 1, TensorKind.PARTIAL: cores}[t.kind]
            if t.kind == TensorKind.ROW and not t.row_map.is_identity and t.row_map.mod is not None:
                lead = int(t.row_map.mod.subs(sz))
            n += lead * per
        return n

    def roofline_s(self, sizes: dict, cores: int = 1) -> float:
        return self.unique_bytes(sizes, cores) / self.hw.hbm_bw.value

    def ub_bytes(self, sizes: dict, tiling: Tiling) -> int:
        sz = self._sizes(sizes)
        sub = dict(sz)
        sub[ROWS_PER_TILE] = tiling.rows_per_tile
        chunk_dim = self.program.chunk_dims[0] if self.program.chunk_dims else None
        sub[COL_CHUNK] = (tiling.col_chunk or int(chunk_dim.subs(sz))) if chunk_dim is not None else 1
        return int(self.counts(tiling.buffer_depth).ub_bytes.subs(sub))

    # ----------------------------------------------------------------------------- constraints
    def violations(self, sizes: dict, tiling: Tiling) -> list:
        """Why a tiling is infeasible: a list of human-readable violated constraints (empty: feasible)."""
        hw = self.hw
        sz = self._sizes(sizes)
        out = []
        if not 1 <= tiling.cores <= int(hw.aiv_cores.value):
            out.append(f"cores={tiling.cores} outside 1..{int(hw.aiv_cores.value)} AIV cores ({hw.aiv_cores.source})")
        if tiling.rows_per_tile < 1:
            out.append(f"rows_per_tile={tiling.rows_per_tile} < 1")
        if tiling.buffer_depth not in (1, 2, 3, 4):
            out.append(f"buffer_depth={tiling.buffer_depth} not in 1..4")
        chunk_dim = self.program.chunk_dims[0] if self.program.chunk_dims else None
        if chunk_dim is not None and tiling.col_chunk is not None:
            full = int(chunk_dim.subs(sz))
            if not 1 <= tiling.col_chunk <= full:
                out.append(f"col_chunk={tiling.col_chunk} outside 1..{chunk_dim}={full}")
            elif tiling.col_chunk != full and tiling.col_chunk % 16:
                out.append(f"col_chunk={tiling.col_chunk} is not a multiple of 16 elements: chunk starts in GM "
                           f"would not be 32-byte aligned (ref §1.3: keep inner-axis chunks aligned)")
        elif chunk_dim is None and tiling.col_chunk is not None:
            out.append(f"col_chunk={tiling.col_chunk} given but {self.program.name} has no chunked dim")
        group = self._group(sz)
        # a program with a row group (even of one row) loads one table row per tile: no straddling
        if self.program.row_group is not None and group % tiling.rows_per_tile:
            out.append(f"rows_per_tile={tiling.rows_per_tile} does not divide the row group {group} "
                       f"({self.program.row_group}): a tile would straddle two table rows")
        if out:
            return out
        ub = self.ub_bytes(sizes, tiling)
        if ub > hw.ub_capacity:
            out.append(f"UB use {ub} B > capacity {hw.ub_capacity} B (192 KiB - {int(hw.ub_reserved_bytes.value)} B "
                       f"reserved - {int(hw.ub_margin_bytes.value)} B margin) with rows_per_tile={tiling.rows_per_tile}, "
                       f"col_chunk={tiling.col_chunk}, {tiling.buffer_depth} buffer copies per queue")
        # DataCopyPad limits per transfer (full tile, full chunk)
        sub = dict(sz)
        sub.update({ROWS_PER_TILE: tiling.rows_per_tile, TR: tiling.rows_per_tile,
                    COL_CHUNK: tiling.col_chunk or 1, CL: tiling.col_chunk or (int(chunk_dim.subs(sz)) if chunk_dim is not None else 1)})
        for t in self.counts(tiling.buffer_depth).transfers:
            bc = int(sympy.sympify(t.block_count).subs(sub))
            bl = int(sympy.sympify(t.block_len).subs(sub)) * t.elem_bytes
            if bc > hw.max_block_count:
                out.append(f"{t.gm}: DataCopyPad blockCount {bc} > {hw.max_block_count} (ref §1.3); lower rows_per_tile")
            if bl > hw.max_block_len:
                out.append(f"{t.gm}: DataCopyPad blockLen {bl} B > {hw.max_block_len} B (ref §1.3)")
        return out

    # ---------------------------------------------------------------------------------- solver
    def candidates(self, sizes: dict, max_cores: int | None = None):
        sz = self._sizes(sizes)
        rows = sz[ROWS]
        chunk_dim = self.program.chunk_dims[0] if self.program.chunk_dims else None
        if chunk_dim is not None:
            full = int(chunk_dim.subs(sz))
            chunks = sorted(set(list(range(16, full, 16)) + [full]))
        else:
            chunks = [None]
        P_max = min(int(max_cores or self.hw.aiv_cores.value), max(rows, 1))
        return rows, chunks, P_max

    def feasible_mask(self, sizes: dict, depth: int, T, C):
        """Vectorised UB + DataCopyPad-limit check over arrays T, C (C = 1 when unchunked)."""
        sz = self._sizes(sizes)
        _, ub, bcs, switches = self._compiled(depth, tuple(sorted(sz.items(), key=lambda kv: kv[0].name)))
        T, C = np.broadcast_arrays(np.asarray(T, dtype=np.int64), np.asarray(C, dtype=np.int64))
        sw = switches(T, C)     # once per grid
        ok = np.asarray(ub(T, C, sw), dtype=np.float64) <= self.hw.ub_capacity
        group = self._group(sz)
        if self.program.row_group is not None:   # even a group of 1 row: tile_row loads one row per tile
            ok &= (group % T) == 0
        for _, bc, bl in bcs:
            ok &= np.asarray(bc(T, C, sw), dtype=np.float64) <= self.hw.max_block_count
            ok &= np.asarray(bl(T, C, sw), dtype=np.float64) <= self.hw.max_block_len
        return ok

    def random_feasible_tiling(self, sizes: dict, rng, *, max_cores: int = 8, depths=(1, 2)) -> Tiling | None:
        """A tiling drawn uniformly (per core count and depth) from the feasible set at ``sizes``
        (`feasible_mask`: UB capacity, DataCopyPad limits, row groups), with ``rng`` (a
        ``random.Random``); None when no point is feasible for the drawn core count and depth.
        The fuzz tests hand it to the emulator to exercise tilings other than the solver's."""
        rows, chunks, p_max = self.candidates(sizes, max_cores)
        cores = rng.randint(1, max(1, p_max))
        depth = rng.choice(tuple(depths))
        per_core = -(-rows // cores)
        T = np.arange(1, per_core + 1, dtype=np.int64)[:, None]
        C = np.array([c if c is not None else 1 for c in chunks], dtype=np.int64)[None, :]
        ok = np.argwhere(self.feasible_mask(sizes, depth, T, C))
        if not len(ok):
            return None
        i, j = ok[rng.randrange(len(ok))]
        return Tiling(int(T[i, 0]), chunks[j], depth, cores)

    def feasible_tilings(self, sizes: dict, *, max_cores: int | None = None, depths=(1, 2, 3)) -> list:
        """Every point of the feasible set at ``sizes`` in canonical form: per distinct rows-per-core
        block (core_rows' front/tail split) the fewest cores that give it, rows_per_tile 1..block, every
        column chunk `candidates` offers, each depth; points `feasible_mask` rejects left out. These are
        all the tilings the solver and `trex tune` (depths 1-3) can pick: the fuzz tests launch them all."""
        rows, chunks, p_max = self.candidates(sizes, max_cores)
        group = self._group(self._sizes(sizes))
        blocks: dict = {}
        for cores in range(1, max(1, p_max) + 1):
            block = -(-(-(-rows // cores)) // group) * group
            blocks.setdefault(block, -(-rows // block))
        C = np.array([c if c is not None else 1 for c in chunks], dtype=np.int64)[None, :]
        out = []
        for depth in depths:
            for block, cores in sorted(blocks.items()):
                T = np.arange(1, block + 1, dtype=np.int64)[:, None]
                for i, j in np.argwhere(self.feasible_mask(sizes, depth, T, C)):
                    out.append(Tiling(int(T[i, 0]), chunks[j], depth, cores))
        return out

    def solve(self, sizes: dict, max_cores: int | None = None, depths=(1, 2)) -> Prediction:
        """Exact search over every feasible integer point (cores, rows_per_tile, col_chunk, depth).

        rows_per_tile ranges over 1..rows per core (a larger tile behaves like that count), col_chunk
        over the multiples of 16 below the chunked dim plus the whole dim; each (cores, depth) is one
        vectorised evaluation of the grid, infeasible points (UB, DataCopyPad limits) masked out."""
        rows, chunks, P_max = self.candidates(sizes, max_cores)
        chunk_dim = self.program.chunk_dims[0] if self.program.chunk_dims else None
        Cs = np.array([c if c is not None else 1 for c in chunks], dtype=np.int64)
        best = None
        for depth in depths:
            t_max = -(-rows // 1)
            # feasibility is independent of the core count: compute once on the widest grid
            Tgrid = np.arange(1, t_max + 1, dtype=np.int64)[:, None]
            ok_all = self.feasible_mask(sizes, depth, Tgrid, Cs[None, :])
            if not ok_all.any():
                continue
            t_feasible_max = int(np.max(np.nonzero(ok_all.any(axis=1))[0])) + 1
            for P in range(1, P_max + 1):
                r_core = -(-rows // P)
                tmax = min(r_core, t_feasible_max)
                T = Tgrid[:tmax]
                ok = ok_all[:tmax]
                res = self._batch(sizes, P, depth, T, Cs[None, :])
                tm = np.where(ok, res["time"], np.inf)
                i, j = np.unravel_index(int(np.argmin(tm)), tm.shape)
                if np.isfinite(tm[i, j]) and (best is None or tm[i, j] < best[0] - 1e-15):
                    best = (float(tm[i, j]), Tiling(int(T[i, 0]), int(Cs[j]) if chunk_dim is not None else None, depth, P))
        if best is None:
            raise IRError(f"{self.program.name}: no feasible tiling for sizes {sizes}: "
                          f"{self.violations(sizes, Tiling(1, chunks[0], 1, 1))}")
        return self.evaluate(sizes, best[1])

    # ---------------------------------------------------------------------------------- eager
    def eager_chain(self, sizes: dict) -> dict:
        """One kernel per IR op (the eager PyTorch chain): each reads its operands from GM and writes
        its result to GM (fp32 intermediates, 16-bit where the op's dtype is), plus a launch; vector
        work spread over all cores. Loads/stores/views are not kernels; a Repeat's ops run `count` times."""
        sz = self._sizes(sizes)
        p = self.program
        rows = sz[ROWS]
        L = p.locals_by_name
        hw = self.hw
        cores = int(hw.aiv_cores.value)
        f = hw.clock_hz.value
        cpr = hw.cycles_per_repeat

        def numel(name):
            l = L[name]
            n = int(sympy.Mul(*l.cols).subs(sz))
            return (rows if l.per_row else 1) * n, l.dtype.nbytes

        kernels = []

        def visit(stmts, times):
            for s in stmts:
                if not isinstance(s, Op):
                    cnt = int(s.count.subs(sz)) if hasattr(s, "count") else 1
                    visit(s.body, times * cnt)
                    continue
                if s.opcode in ("load", "store", "view", "hist_read", "hist_write"):
                    continue
                if s.opcode == "slice" and s.attr("chunk") is not None:
                    continue    # a chunk of a resident local: eager reads it as the chunk's load (not a kernel)
                nbytes = 0
                for i, a in enumerate(s.args):
                    if isinstance(a, str) and a in L:
                        n, b = numel(a)
                        nbytes += n * b
                if s.opcode in ("matvec", "matvec_t"):
                    pass
                n_out, b_out = numel(s.out)
                nbytes += n_out * b_out
                elems = max(n_out, max((numel(a)[0] for a in s.args if isinstance(a, str) and a in L), default=0))
                api_c = {"exp": "Exp", "div": "Div", "sigmoid": "Div", "rsqrt": "Div", "reduce_sum": "ReduceSum",
                         "reduce_max": "ReduceMax", "cast": "Cast"}.get(s.opcode, "Mul")
                vec_s = math.ceil(elems * 4 / 256) * cpr[api_c].value / (f * cores)
                mem_s = nbytes / hw.hbm_bw.value
                kernels.append((s.opcode, times, hw.launch_s.value + max(mem_s, vec_s), nbytes))
        visit(p.prologue, 1)
        visit(p.body, 1)
        visit(p.epilogue, 1)
        total = sum(t * k for _, t, k, _ in kernels)
        launches = sum(t for _, t, _, _ in kernels)
        gm = sum(t * b for _, t, _, b in kernels)
        return {"time_s": total, "launches": launches, "gm_bytes": gm}


# -------------------------------------------------------------------------------------- calibration


@dataclass
class Calibration:
    """measured ~= launch + sum_k scale_k * pipe_k  (pipes from the model); fitted by least squares."""
    launch_s: float
    scales: dict
    residual_rms_s: float

    def apply(self, pred: Prediction) -> float:
        return self.launch_s + sum(self.scales[k] * pred.pipes_s[k] for k in self.scales)


def calibrate(samples: list, pipes=("mte2", "vec", "mte3", "scalar")) -> Calibration:
    """Fit per-pipe scale factors and the launch constant to measured kernel times.

    samples: [(Prediction, measured_seconds)]. A design row per sample holds [1, pipe times...];
    numpy least squares gives the constants (a pipe that never dominates gets a free fit — supply
    samples that stress each pipe)."""
    if len(samples) < len(pipes) + 1:
        raise ValueError(f"calibrate needs at least {len(pipes) + 1} samples, got {len(samples)}")
    A = np.array([[1.0] + [s.pipes_s[k] for k in pipes] for s, _ in samples])
    y = np.array([m for _, m in samples])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = A @ coef - y
    return Calibration(float(coef[0]), {k: float(c) for k, c in zip(pipes, coef[1:])},
                       float(np.sqrt(np.mean(resid ** 2))))
