"""UB planning: which buffer holds each local of a program, how big each buffer is, when queues free.

UB layout: every local is (lead, *cols) with lead = the tile's rows (per-row) or 1 (per-core); the
innermost axis is padded to a multiple of PAD = 16 elements (32 B of a 16-bit type, 64 B of fp32),
so a 16-bit tile and its fp32 cast have the same element layout and one count-form Cast covers the
tile. Buffers are rounded up to BUF_ALIGN = 256 B so count-form Compare/Select can round counts up
to 256 B (reference/ascendc.md §8 item 4).

Resident locals (kernel_ir resident_locals: whole rows loaded once per tile, read chunk by chunk) get a
VECIN queue of RESIDENT x their rows' bytes, and each chunk slice of them a VECIN queue of (1 - RESIDENT)
x its chunk's bytes: the kernel either keeps the rows (RESIDENT = 1) or loads every chunk again (0), and
the UB holds only the queues of the branch it runs (lowering.plan_kernel decides RESIDENT per tiling).

Storage (`plan_storage`): loaded values live in VECIN queues of the schedule's depth (a prologue
load read only by the prologue borrows a body queue), a store whose value is computed right before
it computes straight into a VECOUT queue, everything else lives in TBuf slots shared by the
per-row locals whose live intervals do not overlap (per-core locals get their own); views alias
their source. `scratch_buffers` sizes the scratch TBufs the lowering rules asked for, and
`insert_frees` puts each VECIN queue's FreeTensor after the last use of the loaded value. The
lowering (lowering.py) drives these steps around instruction selection.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from trex.codegen_ascendc.isa import RESIDENT, Buffer, Chunk, GetV, Loop, Queue, Ref, SetV, Transfer, Vec
from trex.compiler.kernel_ir import ChunkLoop, DType, Local, Op, Program, Repeat, is_chunk_slice, resident_locals, walk
from trex.cost_models.kernel_counts import CL, COL_CHUNK, ROWS_PER_TILE, TR, AlignUp

PAD = 16          # innermost-axis padding in elements (see module doc)
BUF_ALIGN = 256   # buffer size rounding in bytes


def local_capacity(p: Program, l: Local) -> sympy.Expr:
    """Elements of a local's UB tile at the tiling's capacity (ROWS_PER_TILE rows, a COL_CHUNK chunk; a
    resident local holds whole rows: the chunked dim at full extent)."""
    chunk = p.chunk_dims[0] if p.chunk_dims else None
    if l.name in resident_locals(p):
        chunk = None
    cols = [COL_CHUNK if (chunk is not None and c == chunk) else c for c in l.cols]
    lead = ROWS_PER_TILE if l.per_row else sympy.Integer(1)
    return lead * sympy.Mul(*cols[:-1]) * AlignUp(cols[-1], PAD)


def capacity(e: sympy.Expr) -> sympy.Expr:
    """Capacity form of a runtime element count: the tile's rows and chunk at their maximum."""
    return sympy.sympify(e).subs({TR: ROWS_PER_TILE, CL: COL_CHUNK})


def op_locals(op: Op) -> list:
    """The locals an op reads or writes (not its GM tensor, not its scalar arguments)."""
    names = []
    for i, a in enumerate(op.args):
        if isinstance(a, str) and not a.lstrip("-").startswith("$") and not (op.opcode in ("load", "store") and i == 0):
            names.append(a)
    if op.out:
        names.append(op.out)
    return names


def _view_root(stmts_all) -> dict:
    root = {}
    for op, _ in walk(stmts_all):
        if op.opcode == "view":
            src = op.args[0]
            root[op.out] = root.get(src, src)
    return root


def _linear_positions(stmts, start=0, loops=()):
    """[(pos, op, loops)] in program order."""
    out = []
    pos = start
    for s in stmts:
        if isinstance(s, Op):
            out.append((pos, s, loops))
            pos += 1
        else:
            inner = _linear_positions(s.body, pos, loops + ((s, pos),))
            out += inner
            pos = inner[-1][0] + 1 if inner else pos
    return out


def _intervals(stmts, root: dict) -> dict:
    """Live interval per storage group over the linearised body; values that cross a loop
    boundary live for the whole loop (they are read again by the next iteration)."""
    lin = _linear_positions(stmts)
    iv: dict = {}
    loop_span: dict = {}
    for pos, op, loops in lin:
        for lp, lstart in loops:
            lo, hi = loop_span.get(id(lp), (pos, pos))
            loop_span[id(lp)] = (min(lo, pos), max(hi, pos))
    for pos, op, loops in lin:
        for n in op_locals(op):
            g = root.get(n, n)
            lo, hi = iv.get(g, (pos, pos))
            iv[g] = (min(lo, pos), max(hi, pos))
    # extend across loops
    changed = True
    while changed:
        changed = False
        for pos, op, loops in lin:
            for n in op_locals(op):
                g = root.get(n, n)
                lo, hi = iv[g]
                for lp, _ in loops:
                    llo, lhi = loop_span[id(lp)]
                    if lo < llo or hi > lhi:   # used inside and outside the loop
                        nlo, nhi = min(lo, llo), max(hi, lhi)
                        if (nlo, nhi) != (lo, hi):
                            iv[g] = (nlo, nhi)
                            lo, hi = nlo, nhi
                            changed = True
    return iv


@dataclass
class Storage:
    """The UB plan of a program before its instructions are selected."""
    buffers: list             # Buffer: VECIN queues, VECOUT queues, TBuf slots (InitBuffer order)
    storage: dict             # local name -> buffer variable
    load_queue: dict          # loaded local -> its VECIN queue
    store_bind: dict          # id(store op) -> (VECOUT queue, local computed into it or None, its defining op)


def plan_storage(p: Program, buffer_depth: int) -> Storage:
    """Queues for loads and stores, TBuf slots by live interval, view aliases (sizes symbolic in
    ROWS_PER_TILE, COL_CHUNK)."""
    all_stmts = p.prologue + p.body + p.epilogue
    root = _view_root(all_stmts)
    L = p.locals_by_name
    buffers: list[Buffer] = []
    storage: dict = {}

    # queues for loads (one per loaded local) and stores (one per stored GM tensor)
    load_q: dict = {}
    load_in_body: dict = {}     # ordered (program order): the printed code must be deterministic
    resident = resident_locals(p)
    chunk_slices = {op.out for op, _ in walk(p.body) if is_chunk_slice(op)}
    for op, _ in walk(p.body):
        if op.opcode == "load" or is_chunk_slice(op):     # a chunk slice is a chunk load when not resident
            load_q.setdefault(op.out, f"inQ_{op.out}")
            load_in_body[op.out] = True
    borrowed: dict = {}
    body_users = {n for op, _ in walk(p.body + p.epilogue) for n in op_locals(op)}
    for sec in (p.prologue, p.epilogue):
        for op, _ in walk(sec):
            if op.opcode != "load" or op.out in load_q:
                continue
            l = L[op.out]
            # a prologue load only read by the prologue borrows a body queue of the same dtype and
            # columns (its capacity, rows_per_tile rows, is at least one row): InitBuffer is static
            donor = [n for n in load_in_body if L[n].dtype == l.dtype and L[n].cols == l.cols and L[n].per_row
                     and n not in resident and n not in chunk_slices]
            if sec is p.prologue and op.out not in body_users and donor:
                load_q[op.out] = load_q[donor[0]]
                borrowed[op.out] = donor[0]
            else:
                load_q.setdefault(op.out, f"inQ_{op.out}")
    store_bind: dict = {}       # id(store op) -> (queue, bound local or None)
    store_q: dict = {}
    for section in (p.prologue, p.body, p.epilogue):
        _plan_stores(section, store_bind, store_q, p, root)

    for name, q in load_q.items():
        storage[name] = name
        if name in borrowed:
            continue
        l = L[name]
        depth = buffer_depth if name in load_in_body else 1    # prologue loads happen once per core
        nbytes = AlignUp(local_capacity(p, l) * l.dtype.nbytes, BUF_ALIGN)
        if name in resident:
            nbytes = RESIDENT * nbytes
        elif name in chunk_slices:
            nbytes = (1 - RESIDENT) * nbytes
        buffers.append(Buffer(q, "vecin", depth, nbytes, (name,)))
        storage[name] = name
    for gm, (q, dtype, per_row, cap) in store_q.items():
        depth = buffer_depth if per_row else 1
        buffers.append(Buffer(q, "vecout", depth, AlignUp(cap * dtype.nbytes, BUF_ALIGN)))
    bound_out = {loc for (_, loc, _) in store_bind.values() if loc}
    for loc in bound_out:
        storage[loc] = loc

    # TBuf slots for everything else (per-core locals: own slots; per-row: shared by liveness)
    tb_locals = [l for l in p.locals if l.name not in storage and l.name not in root]
    groups: dict = {}
    for l in tb_locals:
        groups[l.name] = [l] + [L[v] for v, r in root.items() if r == l.name]
    per_core = [g for g in groups if not L[g].per_row]
    per_row = [g for g in groups if L[g].per_row]
    iv = _intervals(p.body, root)
    slots: list = []    # [ [group names], end ]
    for g in sorted(per_row, key=lambda g: iv.get(g, (0, 0))):
        lo, hi = iv.get(g, (0, 0))
        for slot in slots:
            if slot[1] < lo:
                slot[0].append(g)
                slot[1] = hi
                break
        else:
            slots.append([[g], hi])
    for g in per_core:
        slots.append([[g], None])
    for i, (members, _) in enumerate(slots):
        name = f"ub{i}"
        caps = [AlignUp(local_capacity(p, m) * m.dtype.nbytes, BUF_ALIGN) for g in members for m in groups[g]]
        buffers.append(Buffer(name, "tbuf", 1, sympy.Max(*caps) if len(caps) > 1 else caps[0],
                              tuple(m.name for g in members for m in groups[g])))
        for g in members:
            for m in groups[g]:
                storage[m.name] = name
    for v, r in root.items():
        storage[v] = storage[r]
    return Storage(buffers, storage, load_q, store_bind)


def _plan_stores(stmts, store_bind, store_q, p: Program, root):
    """Decide per store whether its source can be computed straight into the VECOUT queue tensor
    (its only definition is the op just before, and nothing reads it later)."""
    flat = list(stmts)
    for idx, s in enumerate(flat):
        if isinstance(s, (ChunkLoop, Repeat)):
            _plan_stores(s.body, store_bind, store_q, p, root)
            continue
        if s.opcode != "store":
            continue
        t = p.tensor(s.args[0])
        src = s.args[1]
        L = p.locals_by_name
        q = f"outQ_{t.name}"
        l = L[src]
        prev = flat[idx - 1] if idx > 0 else None
        defs = [o for o, _ in walk(p.prologue + p.body + p.epilogue) if o.out == src]
        later_reads = [o for o, _ in walk(flat[idx + 1:]) if src in op_locals(o)]
        can_bind = (isinstance(prev, Op) and prev.out == src and len(defs) == 1 and not later_reads
                    and src not in root and src not in root.values() and prev.opcode not in ("load", "view"))
        store_bind[id(s)] = (q, src if can_bind else None, prev if can_bind else None)
        if not can_bind:
            continue
        store_q.setdefault(t.name, (q, t.dtype, l.per_row, None))
        # capacity: the source local's (same layout)
        cap = local_capacity(p, l)
        old = store_q[t.name][3]
        store_q[t.name] = (q, t.dtype, l.per_row, cap if old is None else sympy.Max(old, cap))


def scratch_buffers(scratch_elems: list, work_elems: list, red_elems: list, mask_bytes: list) -> list:
    """TBufs for the scratch space the lowering rules asked for (each sized for its largest request):
    `scratch` and `work` (fp32 temporaries, ReduceSum work space), `red` (matvec partials) and
    `selmask` (Compare/Select bit masks)."""
    out = []
    for name, dt, elems in (("scratch", DType.FP32, scratch_elems), ("work", DType.FP32, work_elems),
                            ("red", DType.FP32, red_elems), ("selmask", DType.UINT8, mask_bytes)):
        if not elems:       # only the scratch buffers some rule asked for
            continue
        e = [capacity(x) for x in elems]
        out.append(Buffer(name, "tbuf", 1, AlignUp((sympy.Max(*e) if len(e) > 1 else e[0]) * dt.nbytes, BUF_ALIGN)))
    return out


def insert_frees(pro, body, epi, load_q, L):
    """Free each loaded tensor after its last use in the node list that holds its load."""
    def uses(node, name) -> bool:
        if isinstance(node, Vec):
            refs = [node.dst] + [s for s in node.srcs if isinstance(s, Ref)]
            return any(r is not None and r.buf == name for r in refs)
        if isinstance(node, (GetV,)):
            return node.src.buf == name
        if isinstance(node, SetV):
            return node.dst.buf == name
        if isinstance(node, Transfer):
            return node.ub.buf == name
        if isinstance(node, (Loop, Chunk)):
            return any(uses(n, name) for n in node.body)
        return False

    def used_anywhere(nodes, name):
        return any(uses(n, name) for n in nodes)

    def process(nodes, keep=()):
        for n in nodes:
            if isinstance(n, (Loop, Chunk)):
                process(n.body)
        for name, q in load_q.items():
            if name in keep:
                continue
            idx_deq = [i for i, n in enumerate(nodes) if isinstance(n, Queue) and n.action == "deque" and n.var == name]
            for d in reversed(idx_deq):
                nxt = [i for i, n in enumerate(nodes) if i > d and isinstance(n, Queue) and n.action == "alloc" and n.var == name]
                end = nxt[0] if nxt else len(nodes)
                last = d
                for i in range(d + 1, end):
                    if uses(nodes[i], name):
                        last = i
                nodes.insert(last + 1, Queue("free", q, name, L[name].dtype))
    process(body)
    # prologue loads read by the body or epilogue stay resident and are freed at the very end
    resident = [n for n in load_q if used_anywhere(body, n) or used_anywhere(epi, n)]
    process(pro, keep=resident)
    for name in resident:
        if any(isinstance(n, Queue) and n.action == "deque" and n.var == name for n in pro):
            epi.append(Queue("free", load_q[name], name, L[name].dtype))
    process(epi)
