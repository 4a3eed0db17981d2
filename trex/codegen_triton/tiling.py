"""Tile choice for a printed Triton kernel: an explicit time model over the candidate tilings.

The kernels trex prints are memory-bound row programs (plus the mHC projection on the tensor cores),
so the model predicts, for each candidate (rows per tile, column chunk, warps, persistent programs):

  time = launch + max(DRAM bytes / (bw * in_flight_eff * wave_eff),  L2 bytes / l2_bw,  dot FLOPs / tf32_rate)

  * DRAM bytes: every ROW tensor read/written once per pass over it (a second ChunkLoop over the same
    dim re-reads its inputs; the part of that re-read still in L2 is not counted: the working set of
    the resident programs against the L2 size), plus the per-core partials written and summed;
  * in_flight_eff: Little's law; an SM keeps bw * latency / SMs bytes in flight to saturate DRAM,
    a tile supplies its load bytes, `occupancy` tiles are resident per SM;
  * wave_eff: the last wave's idle SMs (tiles / (waves * resident slots));
  * L2 bytes: SHARED tensors re-read by every tile (mHC's fn: fewer re-reads with more rows per tile);
  * registers: live fp32 values per thread (tile elements x live row tensors / threads) must stay under
    the spill limit; occupancy follows from registers and threads per SM.
The constants come from `trex.codegen_triton.calibration.current()` (measured copy bandwidth and launch
overhead on the H200; otherwise datasheet leads with cost_models' H200 copy bandwidth). `explain()` returns every candidate with its predicted terms.
"""
from __future__ import annotations

import dataclasses
import math

import sympy

from trex.compiler import targets
from trex.compiler.kernel_ir import ROWS, ChunkLoop, Program, TensorKind, walk

from . import calibration
from .printer import DOT_MIN, Tiling, next_pow2

MAX_REGS = 224                # predicted registers per thread above which ptxas spills (255 minus slack)
CROSS_WARP_REDUCE_NS = 300.0  # lead: one reduction across warps (shared-memory round trip + barrier) per tile
MAX_OVERLAP = 8               # resident tiles per SM past which their phases overlap as well as Little's law says
VECTOR_BYTES = 16             # a thread's widest load (LDG.128): Triton's blocked layout gives each thread
#                               16 contiguous bytes of the innermost axis
L2_BW_FACTOR = 2.5            # L2 read bandwidth over DRAM copy bandwidth on Hopper (lead; see docs/gpu.md)


@dataclasses.dataclass(frozen=True)
class Prediction:
    tiling: Tiling
    time_us: float
    dram_bytes: float
    l2_bytes: float
    dot_flops: float
    occupancy: int
    live_per_thread: float
    feasible: bool
    why: str = ""


def _hardware() -> dict:
    return dict(calibration.current())


def _ev(e, sizes) -> int:
    return int(sympy.sympify(e).subs(sizes))


def _row_bytes(p: Program, sizes: dict) -> dict:
    """Bytes per kernel row of every ROW tensor."""
    out = {}
    for t in p.tensors:
        if t.kind == TensorKind.ROW:
            out[t.name] = math.prod(_ev(c, sizes) for c in t.cols) * t.dtype.nbytes
    return out


def _passes(p: Program) -> dict:
    """How many ChunkLoops read each ROW tensor (1 when it is read outside any loop)."""
    counts: dict = {}
    def rec(stmts, loop):
        for s in stmts:
            if isinstance(s, ChunkLoop):
                rec(s.body, s)
            elif hasattr(s, "body"):
                rec(s.body, loop)
            elif s.opcode == "load":
                counts.setdefault(s.args[0], set()).add(id(loop))
    rec(p.body, None)
    return {k: len(v) for k, v in counts.items()}


def _candidates(p: Program, sizes: dict, hw: dict):
    chunked = bool(p.chunk_dims)
    partial = any(t.kind == TensorKind.PARTIAL for t in p.tensors) or bool(p.epilogue)
    has_dot = any(op.opcode in ("matvec", "matvec_t") for op, _ in walk(p.body))
    # one warp: a row reduction stays in warp shuffles (no shared memory, no barrier), Inductor's
    # choice for inner persistent reductions of 256-1024 columns on CUDA (triton_heuristics:
    # XBLOCK = min(1024 // rnumel, 8), num_warps = 1); not for dots (tl.dot wants >= 4 warps)
    warp_counts = (2, 4, 8, 16) if has_dot else (1, 2, 4, 8, 16)
    for rows_per_tile in (1, 2, 4, 8, 16, 32, 64) + ((128,) if has_dot else ()):   # dots: fewer shared re-reads
        if has_dot and rows_per_tile < DOT_MIN:
            continue
        for chunk in ((32, 64, 128, 256) if chunked else (None,)):
            for second in ((None, 256, 512) if chunked else (None,)):
                for warps in warp_counts:
                    for prog_mult in ((1, 2, 4, 8) if partial else (None,)):
                        programs = None if prog_mult is None else hw["sm_count"] * prog_mult
                        yield Tiling(rows_per_tile=rows_per_tile, col_chunk=chunk, num_warps=warps,
                                     num_stages=2 if chunked else 1, programs=programs, second_chunk=second)


def predict(p: Program, sizes: dict, tiling: Tiling, hw: dict | None = None) -> Prediction:
    hw = hw or _hardware()
    sizes = {k: v for k, v in sizes.items()}
    rows = int(sizes[ROWS])
    R = tiling.rows_per_tile
    sms = hw["sm_count"]
    bw = hw["copy_bandwidth_bytes_per_s"]
    row_bytes = _row_bytes(p, sizes)
    passes = _passes(p)
    # tile footprint: the widest row tensor's block (chunked dims count as the chunk)
    chunk_dims = set(p.chunk_dims)
    def block_elems(t):
        n = 1
        for c in t.cols:
            c = sympy.sympify(c)
            widest = max(tiling.col_chunk or 0, tiling.second_chunk or 0) or next_pow2(_ev(c, sizes))
            n *= min(widest, next_pow2(_ev(c, sizes))) if c in chunk_dims else next_pow2(_ev(c, sizes))
        return n
    row_tensors = [t for t in p.tensors if t.kind == TensorKind.ROW]
    tile_elems = R * max([block_elems(t) for t in row_tensors] or [1])
    threads = 32 * tiling.num_warps
    # registers, fitted to the compiled kernels of H200 run 1 (n_regs of 21 printed kernels, 28-102 regs):
    # regs ~ 20 + (elements per thread of one row block) x (row inputs + full-width per-core values:
    # shared weights, gradient accumulators), within ~25%
    ept = tile_elems / threads
    row_inputs = sum(1 for t in row_tensors if t.role == "in")
    per_core = sum(1 for t in p.tensors if t.kind == TensorKind.SHARED and t.role == "in"
                   and passes.get(t.name) is None)                       # weights loaded once per program
    per_core += sum(1 for op, _ in walk(p.prologue) if op.opcode == "fill")   # accumulators
    live_per_thread = ept * (row_inputs + per_core)
    if any(op.opcode == "hist_write" for op, _ in walk(p.body)) and not tiling.hist_scratch:
        for l in p.locals:   # a register-resident Sinkhorn history: slots x N x N per row
            if any(op.opcode == "hist_write" and op.out == l.name for op, _ in walk(p.body)):
                live_per_thread += R * math.prod(next_pow2(_ev(c, sizes)) for c in l.cols) / threads
                break
    regs = min(255, 20 + live_per_thread)
    occ = max(1, min(hw.get("max_threads_per_sm", 2048) // threads,
                     hw.get("registers_per_sm", 65536) // int(threads * regs), 32))
    feasible = 20 + live_per_thread <= MAX_REGS
    why = "" if feasible else f"~{20 + live_per_thread:.0f} registers per thread > {MAX_REGS} (spills)"
    n_tiles = -(-rows // R)
    slots = sms * occ
    if tiling.programs:
        programs = tiling.programs
        tiles_per_prog = -(-n_tiles // programs)
        wave_eff = (n_tiles / (tiles_per_prog * programs) if n_tiles else 1.0) if programs <= slots \
            else min(1.0, slots / programs)
        wave_eff = min(1.0, wave_eff) * min(1.0, programs / slots) ** 0.25   # idle slots hurt in-flight bytes
    else:
        waves = -(-n_tiles // slots)
        wave_eff = n_tiles / (waves * slots) if n_tiles else 1.0     # zero rows: nothing launches
    # bytes: first pass of every tensor from DRAM; later passes partly from L2
    l2 = hw.get("l2_bytes", 50 * 2 ** 20) * 0.8
    dram = 0.0
    tile_bytes_per_pass = 0.0
    for t in row_tensors:
        # a row-broadcast input (RowMap: RoPE's tables) has only its own rows in memory; the kernel
        # rows that share one read it from L1/L2
        real_rows = rows if t.row_map.is_identity else (
            _ev(t.row_map.mod, sizes) if t.row_map.mod is not None else -(-rows // _ev(t.row_map.div, sizes)))
        b = row_bytes[t.name] * real_rows
        k = passes.get(t.name, 1) if t.role == "in" else 1
        dram += b
        if k > 1:
            working_set = min(slots, n_tiles) * R * row_bytes[t.name]
            reuse = max(0.0, min(1.0, 1.0 - working_set / l2)) if tiling.reverse_second_pass else 0.0
            dram += (k - 1) * b * (1.0 - reuse)
        tile_bytes_per_pass += R * (row_bytes[t.name] if t.role == "in" else 0) / max(1, _chunks(t, sizes, tiling, chunk_dims))
    partial_bytes = 0.0
    l2_bytes = 0.0
    for t in p.tensors:
        nbytes = math.prod(_ev(c, sizes) for c in t.cols) * t.dtype.nbytes
        if t.kind == TensorKind.PARTIAL:
            partial_bytes += 2 * nbytes * (tiling.programs or n_tiles)
        elif t.kind == TensorKind.SHARED and t.role == "in":
            # loaded in the body: once per row tile; in the prologue: once per program
            l2_bytes += nbytes * (n_tiles if t.name in passes else (tiling.programs or n_tiles))
    dram += partial_bytes
    # Little's law over one tile's round trip: its loads' DRAM latency plus the barriers of the
    # reductions whose operands span several warps (shared memory + __syncthreads each, serial in the
    # tile). How close the SM gets to saturation depends on how many tiles are resident: one tile per
    # SM loads, waits, computes and stores in turn (throughput x / (1 + x) of the bandwidth, x =
    # bytes in flight / bytes needed), several resident tiles overlap those phases and approach
    # Little's min(1, x): eff = x / (1 + x^k)^(1/k), k = resident tiles (capped). A hard min() tied
    # tiles of 1 KB with tiles of 32 KB at short rows (run 11: rope at 128 columns ran at 42% of the
    # roofline, rms_norm_bwd at 1024 columns, one 512-thread tile per SM, at 24%)
    # Programs with dots (mHC) keep the hard min(1, x) without the barrier term: their tilings are
    # measured (calibration measured_tilings, issue 17's sweeps) and the curve is fitted to row kernels.
    has_dot = any(op.opcode in ("matvec", "matvec_t") for op, _ in walk(p.body))
    tile_latency_ns = hw.get("dram_latency_ns", 700.0) + (0 if has_dot else _cross_warp_reductions(p, sizes, tiling)
                                                          * hw.get("cross_warp_reduce_ns", CROSS_WARP_REDUCE_NS))
    need = bw * tile_latency_ns * 1e-9 / sms
    in_flight = occ * tile_bytes_per_pass * tiling.num_stages
    x = in_flight / need
    k = min(occ, hw.get("max_overlap", MAX_OVERLAP))
    inflight_eff = min(1.0, x) if has_dot else x / (1.0 + x ** k) ** (1.0 / k)
    dot_flops = 0.0
    for op, _ in walk(p.body):
        if op.opcode in ("matvec", "matvec_t"):
            loc = {l.name: l for l in p.locals}
            m_k = [loc[a] for a in op.args]
            elems = math.prod(_ev(c, sizes) for c in m_k[1].cols)
            dot_flops += 2 * rows * elems * (2 if R < 16 else 1)
    t_mem = dram / (bw * inflight_eff * wave_eff)
    t_l2 = l2_bytes / (bw * L2_BW_FACTOR)
    t_dot = dot_flops / hw.get("tf32_gemm_flops_per_s", 400e12)
    time_us = hw["launch_overhead_wall_us"] + 1e6 * max(t_mem, t_l2, t_dot)
    return Prediction(tiling, time_us, dram, l2_bytes, dot_flops, occ, live_per_thread, feasible, why)


def _cross_warp_reductions(p: Program, sizes: dict, tiling: Tiling) -> int:
    """Reductions per row tile whose operands span several warps, under Triton's default blocked layout
    (each thread VECTOR_BYTES of the innermost axis, a warp's 32 threads along it first, then warps
    along it until the row is covered, the rest of the warps over rows): a column reduction
    (reduce_sum/max) crosses warps when a row needs more than one warp; acc_rows (a sum over the
    tile's rows) when the tile's rows are spread over several warps."""
    row_tensors = [t for t in p.tensors if t.kind == TensorKind.ROW]
    if not row_tensors:
        return 0
    widest = max(row_tensors, key=lambda t: math.prod(next_pow2(_ev(c, sizes)) for c in t.cols))
    cols = math.prod(next_pow2(_ev(c, sizes)) for c in widest.cols)
    if tiling.col_chunk and any(sympy.sympify(c) in set(p.chunk_dims) for c in widest.cols):
        cols = min(cols, tiling.col_chunk)
    vec = max(1, VECTOR_BYTES // min(t.dtype.nbytes for t in row_tensors))
    threads_per_row = min(32, max(1, cols // vec))
    warps_per_row = min(tiling.num_warps, max(1, cols // (vec * threads_per_row)))
    row_warps = tiling.num_warps // warps_per_row
    rows_per_warp = 32 // threads_per_row
    n = 0
    for op, _ in walk(p.body):
        if op.opcode in ("reduce_sum", "reduce_max") and warps_per_row > 1:
            n += 1
        elif op.opcode == "acc_rows" and row_warps > 1 and tiling.rows_per_tile > rows_per_warp:
            n += 1
    return n


def _chunks(t, sizes, tiling, chunk_dims) -> int:
    n = 1
    for c in t.cols:
        c = sympy.sympify(c)
        if c in chunk_dims and tiling.col_chunk:
            n *= -(-_ev(c, sizes) // tiling.col_chunk)
    return n


def measured_key(p: Program, sizes: dict) -> str:
    """Key of a measured tiling: the program, its column sizes, and ROWS rounded up to a power of two."""
    cols = sorted((str(k), int(v)) for k, v in sizes.items() if k != ROWS)
    return f"{p.name}|{p.fingerprint()}|{cols}|rows<={next_pow2(int(sizes[ROWS]))}"


def shortlist(p: Program, sizes: dict, n: int = 4, hw: dict | None = None) -> list:
    """The model's best feasible candidates, at most one per rows-per-tile value first (so a
    measurement can correct the model's weakest term, the rows-per-tile trade-off), then the next best."""
    ranked = [q for q in explain(p, sizes, hw) if q.feasible]
    picked, seen = [], set()
    for q in ranked:
        if q.tiling.rows_per_tile not in seen:
            picked.append(q)
            seen.add(q.tiling.rows_per_tile)
        if len(picked) == n:
            return picked
    for q in ranked:
        if q not in picked:
            picked.append(q)
        if len(picked) == n:
            break
    return picked


def explain(p: Program, sizes: dict, hw: dict | None = None) -> list:
    hw = hw or _hardware()
    preds = [predict(p, sizes, t, hw) for t in _candidates(p, sizes, hw)]
    return sorted(preds, key=lambda q: (not q.feasible, q.time_us, q.live_per_thread))


def choose(p: Program, sizes: dict, hw: dict | None = None) -> Tiling:
    """The tuned tiling (trex.compiler.targets.tuned_config: `trex tune`'s store), else a tiling measured
    best for this program and these sizes (the calibration's `measured_tilings`,
    written by bench/gpu_patterns.py's sweep of the model's shortlist), else the feasible tiling with the
    least predicted time (ties: fewer live registers)."""
    hw = hw or _hardware()
    tuned = targets.tuned_config("cuda", p, sizes)   # `trex tune`'s store, when one is installed
    if tuned:
        return Tiling(**tuned)
    measured = (hw.get("measured_tilings") or {}).get(measured_key(p, sizes))
    if measured:
        return Tiling(**measured)
    best = explain(p, sizes, hw)[0]
    return best.tiling
