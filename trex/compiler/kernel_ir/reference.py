"""The reference interpreter of the Kernel IR, in plain torch, and the host side of a kernel call.

`interpret` runs a program the way a kernel does: rows split over cores (`row_split`), tiles of
`rows_per_tile` rows, ChunkLoops in `col_chunk` pieces, Repeat loops, then the host ops of
`finalize`. What each opcode computes is its rule in `RULES` (opcode -> rule, like the printers'
rule tables; elementwise opcodes share the torch functions of `ELEMENTWISE`): this table is the
reference semantics of the IR, the one the printed kernels are tested against.

Also here, because every launcher needs them: `bind_sizes` (size symbols from the input views and
scalar arguments), `output_shapes`, and the host ops (`HOST_OPS`) that combine partial outputs.
"""
from __future__ import annotations

import math
from typing import Callable, Mapping

import sympy
import torch

from trex.compiler.kernel_ir.ops import ROW_TREE_LEVELS, row_tree
from trex.compiler.kernel_ir.program import (ROWS, ChunkLoop, GMTensor, HostOp, IRError, Local, Op, Program,
                                             Schedule, TensorKind, _expr, row_split, size)

# --------------------------------------------------------------------------------------------
# size binding


def bind_sizes(p: Program, inputs: Mapping[str, torch.Tensor], scalars: Mapping[str, float]) -> dict:
    """Bind every size symbol from the input views ([ROWS, *cols] / [*cols]) and scalar args."""
    env: dict = {}
    pending = []
    for t in p.inputs:
        if t.name not in inputs or inputs[t.name] is None:
            raise IRError(f"program {p.name}: missing input tensor {t.name!r}")
        x = inputs[t.name]
        want = (1 if t.kind == TensorKind.ROW else 0) + len(t.cols)
        if x.dim() != want:
            raise IRError(f"program {p.name}: input {t.name} must be a {want}-d view "
                          f"[{'ROWS, ' if t.kind == TensorKind.ROW else ''}{', '.join(map(str, t.cols))}], got shape {tuple(x.shape)}")
        dims = list(x.shape)
        if t.kind == TensorKind.ROW:
            r = dims.pop(0)
            if t.row_map.is_identity:
                _bind(env, ROWS, r, p, t.name)
            elif isinstance(t.row_map.mod, sympy.Symbol):
                _bind(env, t.row_map.mod, r, p, t.name)
        for c, n in zip(t.cols, dims):
            if isinstance(c, sympy.Symbol):
                _bind(env, c, n, p, t.name)
            else:
                pending.append((c, n, t.name))
    for sym, sname in p.size_params:
        if sname not in scalars:
            raise IRError(f"program {p.name}: scalar ${sname} (binds size {sym}) missing")
        _bind(env, sym, int(scalars[sname]), p, "$" + sname)
    for c, n, tname in pending:
        free = c.free_symbols - set(env)
        if len(free) == 1:
            (s,) = free
            sol = sympy.solve(sympy.Eq(c.subs(env), n), s)
            sol = [v for v in sol if v.is_integer and v > 0]
            if not sol:
                raise IRError(f"program {p.name}: {tname} extent {n} does not match {c}")
            _bind(env, s, int(sol[0]), p, tname)
        elif int(c.subs(env)) != n:
            raise IRError(f"program {p.name}: {tname} extent {n} does not match {c} = {c.subs(env)}")
    missing = set(p.sizes) - set(env)
    if missing:
        raise IRError(f"program {p.name}: sizes {sorted(map(str, missing))} not bound by the inputs")
    return env


def _bind(env, sym, n, p, where):
    n = int(n)
    if sym in env and env[sym] != n:
        raise IRError(f"program {p.name}: size {sym} is {env[sym]} elsewhere but {n} in {where}")
    env[sym] = n


# --------------------------------------------------------------------------------------------
# the interpreter: per-core state, statements, one rule per opcode


class _Interp:
    """One core's run of a program: its locals (`env`), the current column chunk and loop variables;
    `run` walks statements, `op` applies an opcode's rule."""

    def __init__(self, p: Program, sizes: dict, inputs, scalars, outputs, sched: Schedule):
        self.p, self.sizes, self.inputs, self.scalars, self.outputs, self.sched = p, sizes, inputs, scalars, outputs, sched
        self.env: dict[str, torch.Tensor] = {}
        self.chunk: dict = {}      # dim -> (start, stop)
        self.loopvars: dict = {}
        self.core = 0

    def ev(self, e) -> int:
        e = _expr(e).subs(self.sizes)
        if self.loopvars:
            e = e.subs({sympy.Symbol(k, integer=True): v for k, v in self.loopvars.items()})
            e = e.subs({size(k): v for k, v in self.loopvars.items()})
        return int(e)

    def cols(self, cols) -> list:
        out = []
        for c in cols:
            if c in self.chunk:
                lo, hi = self.chunk[c]
                out.append(hi - lo)
            else:
                out.append(self.ev(c))
        return out

    def arg(self, a):
        if isinstance(a, str) and a.startswith("-$"):
            return -float(self.scalars[a[2:]])
        if isinstance(a, str) and a.startswith("$"):
            return float(self.scalars[a[1:]])
        if isinstance(a, (int, float)):
            return float(a)
        if isinstance(a, sympy.Expr):      # size-dependent constant, e.g. 1/D
            return float(_expr(a).subs(self.sizes))
        return self.env[a]

    def gm_index(self, t: GMTensor, r0: int, r1: int):
        """Index tuple selecting rows r0:r1 (kernel rows) and the current chunk of t."""
        idx = []
        for c in t.cols:
            idx.append(slice(*self.chunk[c]) if c in self.chunk else slice(None))
        return idx

    def rows_of(self, t: GMTensor, r0, r1):
        rm = t.row_map
        r = torch.arange(r0, r1)
        r = torch.div(r, self.ev(rm.div), rounding_mode="floor")
        if rm.mod is not None:
            r = r % self.ev(rm.mod)
        return r

    def run(self, stmts, r0, r1):
        for s in stmts:
            if isinstance(s, Op):
                self.op(s, r0, r1)
            elif isinstance(s, ChunkLoop):
                n = self.ev(s.dim)
                step = self.sched.col_chunk or n
                for lo in range(0, n, step):
                    self.chunk[s.dim] = (lo, min(n, lo + step))
                    self.run(s.body, r0, r1)
                del self.chunk[s.dim]
            else:
                cnt = self.ev(s.count)
                order = range(cnt - 1, -1, -1) if s.reverse else range(cnt)
                for i in order:
                    self.loopvars[s.var] = i
                    self.run(s.body, r0, r1)
                self.loopvars.pop(s.var, None)

    def op(self, op: Op, r0, r1):
        rule = RULES.get(op.opcode)
        if rule is None:
            raise IRError(f"interpreter has no rule for {op.opcode}")
        out = self.p.locals_by_name.get(op.out) if op.out else None
        v = rule(self, op, out, r0, r1)
        if v is not None:
            self.env[op.out] = v


# A rule computes one op on rows r0:r1 of the current core and returns the new value of `op.out`
# (None: the op writes GM instead). `out` is the out local's declaration (None without one).
Rule = Callable[[_Interp, Op, "Local | None", int, int], "torch.Tensor | None"]


def _load(it: _Interp, op: Op, out: Local, r0, r1):
    t = it.p.tensor(op.args[0])
    x = it.inputs[t.name]
    idx = it.gm_index(t, r0, r1)
    if t.kind == TensorKind.ROW and op.attr("tile_row", False):
        gr = it.rows_of(t, r0, r1)
        if not bool((gr == gr[0]).all()):
            raise IRError(f"`{op}`: tile rows {r0}..{r1} map to several rows of {t.name}")
        v = x[gr[:1]][(slice(None), *idx)]
    elif t.kind == TensorKind.ROW:
        v = x[it.rows_of(t, r0, r1)][(slice(None), *idx)]
    else:
        v = x[tuple(idx)].unsqueeze(0)
    col = op.attr("col")
    if col is not None:
        v = v[..., it.ev(col[0]):it.ev(col[1])]
    pad = op.attr("pad")
    if pad is not None:     # lanes a kernel leaves undefined; zeros here, never selected by programs
        v = torch.nn.functional.pad(v, (it.ev(pad[0]), it.ev(pad[1])))
    return v.clone()


def _store(it: _Interp, op: Op, out: None, r0, r1):
    t = it.p.tensor(op.args[0])
    src = it.env[op.args[1]]
    dst = it.outputs[t.name]
    idx = it.gm_index(t, r0, r1)
    col = op.attr("col")
    if col is not None:
        idx[-1] = slice(it.ev(col[0]), it.ev(col[1]))
    if t.kind == TensorKind.ROW:
        dst[(slice(r0, r1), *idx)] = src.to(dst.dtype).reshape(dst[(slice(r0, r1), *idx)].shape)
    elif t.kind == TensorKind.PARTIAL:
        dst[(it.core, *idx)] = src.to(dst.dtype).reshape(dst[(it.core, *idx)].shape)
    else:
        raise IRError(f"store into SHARED output {t.name} is not supported (use PARTIAL + finalize)")
    return None


def _cast(it: _Interp, op: Op, out: Local, r0, r1):
    return it.env[op.args[0]].to(out.dtype.torch)


def _fill(it: _Interp, op: Op, out: Local, r0, r1):
    lead = (r1 - r0) if out.per_row else 1
    return torch.full((lead, *it.cols(out.cols)), it.arg(op.args[0]), dtype=out.dtype.torch)


# elementwise opcodes (binary, scalar, unary): their torch functions over the evaluated operands
ELEMENTWISE: dict[str, Callable] = {
    "copy": lambda x: x.clone(),
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "max": torch.maximum,
    "min": torch.minimum,
    "adds": lambda x, s: x + s,
    "muls": lambda x, s: x * s,
    "maxs": lambda x, s: torch.clamp(x, min=s),
    "mins": lambda x, s: torch.clamp(x, max=s),
    "exp": torch.exp,
    "ln": torch.log,
    "abs": torch.abs,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
    "neg": torch.neg,
}


def _elementwise(it: _Interp, op: Op, out: Local, r0, r1):
    v = ELEMENTWISE[op.opcode](*[it.arg(a) for a in op.args])
    if out.per_row and v.shape[0] == 1 and (r1 - r0) != 1:
        v = v.expand(r1 - r0, *v.shape[1:])
    elif not out.per_row and v.shape[0] != 1:
        raise IRError(f"`{op}`: per-core local {out.name} assigned a per-row value; reduce over rows first")
    return v.contiguous()


def _col_axis(op: Op) -> int:
    """The tensor axis of the op's column axis attr `axis` (dim 0 of a local is its rows)."""
    axis = int(op.attr("axis", -1))
    return axis if axis < 0 else axis + 1


def _col_slice(it: _Interp, op: Op, ndim: int) -> tuple:
    """Index of start:stop:step (attrs) along the op's column axis of an ndim-d local."""
    sl = [slice(None)] * ndim
    sl[_col_axis(op)] = slice(it.ev(op.attr("start")), it.ev(op.attr("stop")), it.ev(op.attr("step", 1)))
    return tuple(sl)


def _reduce(it: _Interp, op: Op, out: Local, r0, r1):
    x = it.env[op.args[0]]
    ax = _col_axis(op)
    return x.sum(ax, keepdim=True) if op.opcode == "reduce_sum" else x.amax(ax, keepdim=True)


def _acc_rows(it: _Interp, op: Op, out: Local, r0, r1):
    """The tile's rows summed as ops.row_tree's pairwise tree (the AscendC lowering's order, bit for
    bit; Triton's tl.sum over the rows is a tree of its layout's order), then added to the accumulator."""
    x = it.env[op.args[1]].clone()
    for offset, pairs in row_tree(x.shape[0]):
        x[:pairs] += x[offset:offset + pairs]
    acc = it.env[op.args[0]]
    for i in range(-(-x.shape[0] // 2 ** ROW_TREE_LEVELS)):
        acc = acc + x[i:i + 1]
    return acc


def _parity_select(it: _Interp, op: Op, out: Local, r0, r1):
    a, b = it.env[op.args[0]], it.env[op.args[1]]
    even = (torch.arange(a.shape[-1]) % 2) == 0
    return torch.where(even, a, b)


_CMP = {"LT": torch.lt, "LE": torch.le, "GT": torch.gt, "GE": torch.ge, "EQ": torch.eq, "NE": torch.ne}


def _select(it: _Interp, op: Op, out: Local, r0, r1):
    a, b, x, y = (it.arg(v) for v in op.args)
    cond = _CMP[op.attr("cmp")](a, b)
    x = x if torch.is_tensor(x) else torch.tensor(x)
    y = y if torch.is_tensor(y) else torch.tensor(y)
    return torch.where(cond, x, y).to(torch.float32)


def _slice(it: _Interp, op: Op, out: Local, r0, r1):
    x = it.env[op.args[0]]
    dim = op.attr("chunk")
    if dim is not None:     # the current chunk of a resident local (whole rows, loaded before the loop)
        lo, hi = it.chunk[_expr(dim)]
        return x[..., lo:hi].contiguous()
    return x[_col_slice(it, op, x.dim())].contiguous()


def _set_slice(it: _Interp, op: Op, out: Local, r0, r1):
    dst = it.env[op.args[0]].clone()
    dst[_col_slice(it, op, dst.dim())] = it.env[op.args[1]]
    return dst


def _transpose(it: _Interp, op: Op, out: Local, r0, r1):
    return it.env[op.args[0]].transpose(-1, -2).contiguous()


def _pair_swap(it: _Interp, op: Op, out: Local, r0, r1):
    x = it.env[op.args[0]]
    if x.shape[-1] % 2:
        raise IRError(f"`{op}`: pair_swap needs an even last axis, got {x.shape[-1]}")
    return x.reshape(*x.shape[:-1], -1, 2).flip(-1).reshape(x.shape)


def _pair_expand(it: _Interp, op: Op, out: Local, r0, r1):
    x = it.env[op.args[0]]
    y = x.repeat_interleave(2, dim=-1)
    if y.shape[-1] != it.cols(out.cols)[-1]:
        raise IRError(f"`{op}`: pair_expand's out has last axis {it.cols(out.cols)[-1]}, twice src's "
                      f"{x.shape[-1]} expected")
    return y


def _view(it: _Interp, op: Op, out: Local, r0, r1):
    x = it.env[op.args[0]]
    return x.reshape(x.shape[0], *it.cols(out.cols))


def _matvec(it: _Interp, op: Op, out: Local, r0, r1):
    a, w = it.env[op.args[0]], it.env[op.args[1]][0]
    k = a.dim() - 1
    m = w.dim() - k
    a2 = a.reshape(a.shape[0], -1)
    w2 = w.reshape(*w.shape[:m], -1).reshape(-1, a2.shape[1])
    return (a2 @ w2.T).reshape(a.shape[0], *w.shape[:m])


def _matvec_t(it: _Interp, op: Op, out: Local, r0, r1):
    g, w = it.env[op.args[0]], it.env[op.args[1]][0]
    m = g.dim() - 1
    g2 = g.reshape(g.shape[0], -1)
    kshape = w.shape[m:]
    return (g2 @ w.reshape(g2.shape[1], -1)).reshape(g.shape[0], *kshape)


def _hist_write(it: _Interp, op: Op, out: Local, r0, r1):
    h = it.env[op.args[0]].clone()
    h[:, it.ev(op.attr("slot"))] = it.env[op.args[1]]
    return h


def _hist_read(it: _Interp, op: Op, out: Local, r0, r1):
    return it.env[op.args[0]][:, it.ev(op.attr("slot"))].clone()


RULES: dict[str, Rule] = {
    **{k: _elementwise for k in ELEMENTWISE},
    "load": _load,
    "store": _store,
    "cast": _cast,
    "fill": _fill,
    "reduce_sum": _reduce,
    "reduce_max": _reduce,
    "acc_rows": _acc_rows,
    "parity_select": _parity_select,
    "select": _select,
    "slice": _slice,
    "set_slice": _set_slice,
    "transpose": _transpose,
    "pair_swap": _pair_swap,
    "pair_expand": _pair_expand,
    "view": _view,
    "matvec": _matvec,
    "matvec_t": _matvec_t,
    "hist_write": _hist_write,
    "hist_read": _hist_read,
}


# --------------------------------------------------------------------------------------------
# running a program: cores, tiles, host ops


def output_shapes(p: Program, sizes: dict, cores: int) -> dict:
    shapes = {}
    for t in p.outputs:
        cols = [int(_expr(c).subs(sizes)) for c in t.cols]
        lead = {TensorKind.ROW: [sizes[ROWS]], TensorKind.PARTIAL: [cores], TensorKind.SHARED: []}[t.kind]
        shapes[t.name] = tuple(lead + cols)
    return shapes


def interpret(p: Program, inputs: Mapping[str, torch.Tensor], scalars: Mapping[str, float] | None = None,
              schedule: Schedule | None = None) -> dict:
    """Run `p` on torch tensors the way a kernel would: rows split over `schedule.cores` cores
    (front/tail), tiles of `rows_per_tile`, ChunkLoops in `col_chunk` pieces. Inputs are the
    program's views ([ROWS, *cols] for ROW tensors, [*cols] for SHARED ones). Returns the outputs
    (PARTIAL ones already combined by `finalize`) keyed by name."""
    scalars = dict(scalars or {})
    sched = schedule or Schedule(rows_per_tile=1 << 30)
    sizes = bind_sizes(p, inputs, scalars)
    for s in p.scalars:
        if s.name not in scalars:
            raise IRError(f"program {p.name}: scalar ${s.name} missing")
    ins = {}
    for t in p.inputs:
        x = inputs[t.name]
        if x.dtype != t.dtype.torch:
            raise IRError(f"program {p.name}: input {t.name} is {x.dtype}, the program expects {t.dtype.value}; "
                          f"build the program for this dtype")
        ins[t.name] = x
    outs = {n: torch.zeros(s, dtype=p.tensor(n).dtype.torch) for n, s in output_shapes(p, sizes, sched.cores).items()}
    rows = sizes[ROWS]
    group = int(_expr(p.row_group).subs(sizes)) if p.row_group is not None else 1
    if p.row_group is not None:      # tiles never straddle a row group: clip them to a divisor of it
        sched = Schedule(math.gcd(sched.rows_per_tile, group), sched.col_chunk, sched.buffer_depth, sched.cores)
    for core, (lo, hi) in enumerate(row_split(rows, sched.cores, group)):
        it = _Interp(p, sizes, ins, scalars, outs, sched)
        it.core = core
        # per-core prologue/epilogue run on every core (an idle core still stores zero partials)
        it.run(p.prologue, lo, lo)
        for r0 in range(lo, hi, sched.rows_per_tile):
            it.run(p.body, r0, min(hi, r0 + sched.rows_per_tile))
        it.run(p.epilogue, lo, lo)
    result = dict(outs)
    for h in p.finalize:
        result[h.out] = _host_op(p, h, result, ins, sizes)
    for t in p.outputs:
        if t.kind == TensorKind.PARTIAL:
            result.pop(t.name, None)
    return result


def interpreter(schedule: Schedule | None = None):
    """An executor (program, inputs, scalars) -> outputs running the reference interpreter; the
    kernel specs' runners (trex/passes/<op>/ir.py) take any executor with this signature (e.g. the
    AscendC emulator's, trex.codegen_ascendc.target.EmulatorExecutor)."""
    return lambda p, inputs, scalars: interpret(p, inputs, scalars, schedule)


def _sum_cores(h: HostOp, result: dict, ins: dict) -> torch.Tensor:
    return result[h.args[0]].sum(0)


def _rows_matmul(h: HostOp, result: dict, ins: dict) -> torch.Tensor:
    a = (result.get(h.args[0]) if h.args[0] in result else ins[h.args[0]]).float()
    b = (result.get(h.args[1]) if h.args[1] in result else ins[h.args[1]]).float()
    return a.reshape(a.shape[0], -1).T @ b.reshape(b.shape[0], -1)


# HostOp kind -> its computation from the kernel's outputs (`result`) and inputs (`ins`)
HOST_OPS: dict[str, Callable[[HostOp, dict, dict], torch.Tensor]] = {
    "sum_cores": _sum_cores,
    "rows_matmul": _rows_matmul,
}


def _host_op(p: Program, h: HostOp, result: dict, ins: dict, sizes: dict) -> torch.Tensor:
    rule = HOST_OPS.get(h.kind)
    if rule is None:
        raise IRError(f"unknown host op kind {h.kind!r} (known: {', '.join(HOST_OPS)})")
    return rule(h, result, ins)
