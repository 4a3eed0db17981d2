"""Static validation of a Kernel IR program, run by `ProgramBuilder.build`.

Checks that every name is defined once and used as what it is (GM tensor, local, $scalar), that
each op has its opcode's arity, that all vector math is fp32 (16-bit data is loaded, cast up,
computed, cast down before the store: reference/ascendc.md §2.3), that loads and stores match
their tensors' dtypes, roles and kinds, and that casts have a direct A2 instruction.
"""
from __future__ import annotations

from trex.compiler.kernel_ir.ops import OPS
from trex.compiler.kernel_ir.program import (ChunkLoop, DType, IRError, Op, Program, TensorKind, _expr, is_chunk_slice,
                                             resident_locals, walk)


def validate_program(p: Program) -> Program:
    """Check `p` statically (see the module doc); raise IRError naming the first problem, else return `p`."""
    names = [t.name for t in p.tensors] + [l.name for l in p.locals] + [s.name for s in p.scalars]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise IRError(f"program {p.name}: names used twice: {sorted(dup)}")
    tnames = {t.name for t in p.tensors}
    snames = {s.name for s in p.scalars}
    for sym, sname in p.size_params:
        if sname not in snames:
            raise IRError(f"program {p.name}: size {sym} bound from unknown scalar ${sname}")
    for t in p.tensors:
        if t.kind == TensorKind.PARTIAL and t.role != "out":
            raise IRError(f"program {p.name}: PARTIAL tensor {t.name} must be an output")
    for section, stmts in (("prologue", p.prologue), ("body", p.body), ("epilogue", p.epilogue)):
        for op, loops in walk(stmts):
            ctx = f"program {p.name} {section}: `{op}`"
            spec = OPS[op.opcode]
            if spec.arity >= 0 and len(op.args) != spec.arity:
                raise IRError(f"{ctx}: {op.opcode} takes {spec.arity} args, got {len(op.args)}")
            for i, a in enumerate(op.args):
                if isinstance(a, str) and a.lstrip("-").startswith("$") and a.lstrip("-")[1:] not in snames:
                    raise IRError(f"{ctx}: unknown scalar {a}")
                if isinstance(a, str) and not a.lstrip("-").startswith("$"):
                    is_gm = op.opcode in ("load", "store") and i == 0
                    if is_gm and a not in tnames:
                        raise IRError(f"{ctx}: {a!r} is not a GM tensor")
                    if not is_gm and a not in p.locals_by_name:
                        raise IRError(f"{ctx}: {a!r} is not a declared local")
            if op.out is not None and op.out not in p.locals_by_name:
                raise IRError(f"{ctx}: out {op.out!r} is not a declared local")
            _check_types(p, op, ctx, section)
        _check_consumed(p, stmts, section)
    _check_resident(p)
    return p


def _check_resident(p: Program) -> None:
    """Chunk slices (`slice` with attr chunk=dim) read the current chunk of a resident local: a per-row
    local loaded once per tile in the body outside every ChunkLoop (whole rows of an identity-mapped ROW
    tensor whose innermost axis is dim), read by nothing but chunk slices inside ChunkLoops over dim."""
    res = resident_locals(p)
    if not res:
        return
    L = p.locals_by_name
    for section, stmts in (("prologue", p.prologue), ("epilogue", p.epilogue)):
        for op, _ in walk(stmts):
            if is_chunk_slice(op) or any(a in res for a in op.args) or op.out in res:
                raise IRError(f"program {p.name} {section}: `{op}`: resident locals and chunk slices belong in the body")
    defs: dict = {}
    for op, loops in walk(p.body):
        ctx = f"program {p.name} body: `{op}`"
        if op.out in res:
            if op.opcode != "load" or loops or op.out in defs:
                raise IRError(f"{ctx}: resident local {op.out} must be assigned once, by a load outside every ChunkLoop")
            t = p.tensor(op.args[0])
            if t.kind != TensorKind.ROW or not t.row_map.is_identity or op.attr("col") is not None \
                    or op.attr("pad") is not None or op.attr("tile_row", False):
                raise IRError(f"{ctx}: a resident local loads whole rows of an identity-mapped ROW tensor")
            if tuple(L[op.out].cols) != tuple(t.cols) or not L[op.out].per_row:
                raise IRError(f"{ctx}: resident local {op.out} must be per-row with {t.name}'s cols {t.cols}")
            defs[op.out] = op
        if is_chunk_slice(op):
            src, out = L[op.args[0]], L[op.out]
            dim = _expr(op.attr("chunk"))
            if src.name not in defs:
                raise IRError(f"{ctx}: chunk slice of {src.name} before its load")
            if dim not in [lp.dim for lp in loops if isinstance(lp, ChunkLoop)]:
                raise IRError(f"{ctx}: a chunk slice of {dim} must sit inside a ChunkLoop over {dim}")
            if any(op.attr(k) is not None for k in ("start", "stop", "step")) or int(op.attr("axis", -1)) != -1:
                raise IRError(f"{ctx}: a chunk slice takes attrs chunk= and axis=-1 only")
            if src.cols[-1] != dim or out.dtype != src.dtype or tuple(out.cols) != tuple(src.cols) or not out.per_row:
                raise IRError(f"{ctx}: a chunk slice's out has its source's dtype and cols (innermost {dim})")
        elif any(a in res for a in op.args):
            raise IRError(f"{ctx}: resident locals {sorted(set(op.args) & set(res))} are read by chunk slices only")


def _check_consumed(p: Program, stmts, section: str) -> None:
    """acc_rows consumes its source (AscendC sums the tile in place as a tree): the source must be
    written again before anything reads it."""
    ops = [op for op, _ in walk(stmts)]
    for i, op in enumerate(ops):
        if op.opcode != "acc_rows":
            continue
        src = op.args[1]
        for later in ops[i + 1:]:
            if src in later.args:
                raise IRError(f"program {p.name} {section}: `{later}` reads {src!r} after `{op}` consumed it; "
                              f"acc_rows sums its source in place: copy the source first or reorder")
            if later.out == src:
                break


def _check_types(p: Program, op: Op, ctx: str, section: str) -> None:
    L = p.locals_by_name
    spec = OPS[op.opcode]
    out = L.get(op.out) if op.out else None
    if spec.category in ("binary", "scalar", "unary", "reduce", "select", "contract") and op.opcode != "copy":
        for a in op.args:
            if isinstance(a, str) and a in L and L[a].dtype != DType.FP32:
                raise IRError(f"{ctx}: vector math on {a} ({L[a].dtype.value}); compute in fp32 (cast first)")
        if out is not None and out.dtype != DType.FP32:
            raise IRError(f"{ctx}: math result {out.name} must be fp32")
    if op.opcode == "load":
        t = p.tensor(op.args[0])
        if t.role != "in":
            raise IRError(f"{ctx}: load from output tensor {t.name}")
        if out.dtype != t.dtype:
            raise IRError(f"{ctx}: load of {t.dtype.value} tensor into {out.dtype.value} local; load then cast")
        tile_row = bool(op.attr("tile_row", False))
        if tile_row and (t.kind != TensorKind.ROW or p.row_group is None or out.per_row):
            raise IRError(f"{ctx}: tile_row loads read one row of a ROW tensor for a whole tile into a (1, cols) "
                          f"local and need the program's row_group")
        if not tile_row and (t.kind == TensorKind.SHARED) == out.per_row:
            raise IRError(f"{ctx}: shared tensors load into per-core locals, row tensors into per-row locals")
    if op.opcode == "store":
        t = p.tensor(op.args[0])
        src = L[op.args[1]]
        if t.role != "out":
            raise IRError(f"{ctx}: store into input tensor {t.name}")
        if src.dtype != t.dtype:
            raise IRError(f"{ctx}: store of {src.dtype.value} {src.name} into {t.dtype.value} {t.name}; cast first")
    if op.opcode == "cast":
        src = L[op.args[0]]
        if not (src.dtype.is_float and out.dtype.is_float):
            raise IRError(f"{ctx}: cast supports float dtypes only")
        if DType.FP32 not in (src.dtype, out.dtype):
            raise IRError(f"{ctx}: cast between {src.dtype.value} and {out.dtype.value} has no direct A2 "
                          f"instruction (reference/ascendc.md §2.3); go through fp32")
