"""The eager RoPE chains the backend replaces by ``trex::rope`` (the op is in op.py).

Spellings covered: real pairwise (``x[..., 0::2]`` / ``x[..., 1::2]``, then ``stack(...).flatten(-2)``;
the inverse either with its own signs or by passing ``-sin``), transformers' interleaved
``rotate_half``, and through canonicalisation (trex/compiler/canonical.py) ``unflatten`` +
``[..., 0]``/``[..., 1]`` or ``unbind`` pairs and complex ``view_as_complex(x) * freqs_cis`` (with
``freqs_cis.conj()`` for the inverse: the tables are then the parts of ``freqs_cis.resolve_conj()``).
The partial form, rotating ``x[..., -r:]`` and concatenating or writing it back in place, is absorbed
into one op on the whole head.
"""
from __future__ import annotations

import torch

from trex.compiler.graph import aten, insert_call, users, val
from trex.compiler.pattern import Chain, Pattern
from trex.compiler.registry import register_pattern


def rope_real_chain(x, cos, sin):
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2).to(x.dtype)


def rope_real_inverse_chain(x, cos, sin):
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack([a * cos + b * sin, b * cos - a * sin], dim=-1).flatten(-2).to(x.dtype)


def rope_rotate_half_chain(x, cos_pairs, sin_pairs):
    """transformers' DeepSeek-V4 ``apply_rotary_pos_emb``: ``x * cos + rotate_half(x) * sin`` with the
    interleaved ``rotate_half`` (``stack((-x[..., 1::2], x[..., 0::2]), -1).flatten(-2)``) and tables
    that repeat each angle for both channels of its pair (``repeat_interleave(2, -1)``; ``_refine``
    proves that and passes the halves on). The inverse is the same call with ``-sin``."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)
    return ((x.float() * cos_pairs) + (rotated.float() * sin_pairs)).to(x.dtype)


def _replace(x, cos, sin, *, inverse, rope_dim=None):
    # int(): the head size is a compile-time constant of the kernel (specialises a symbolic head dim).
    return torch.ops.trex.rope(x, cos, sin, int(rope_dim if rope_dim is not None else x.shape[-1]), inverse)


def _is_call(n, target) -> bool:
    return isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target == target


def _pair_repeated(node):
    """``t.repeat_interleave(2, -1)`` as traced (``unsqueeze(t, -1).expand(..., 2)``, a contiguous copy,
    a view merging the pair dim; einops' ``repeat(t, '... n -> ... (n r)', r=2)`` the same), followed by broadcast ``unsqueeze``s of leading dims: returns
    ``(t, those unsqueeze dims)``, or None when ``node`` is not such a table."""
    dims = []
    while _is_call(node, aten.unsqueeze.default):
        dims.append(node.args[1])
        node = node.args[0]
    if not any(_is_call(node, t) for t in (aten.view.default, aten._unsafe_view.default)):
        return None
    expand = node.args[0].args[0] if _is_call(node.args[0], aten.clone.default) else node.args[0]
    if not (_is_call(expand, aten.expand.default) and _is_call(expand.args[0], aten.unsqueeze.default)):
        return None
    half = expand.args[0].args[0]
    hv, ev = val(half), val(expand)
    if expand.args[0].args[1] not in (-1, hv.dim()) or ev.shape[-1] != 2 or list(ev.shape[:-1]) != list(hv.shape) \
            or val(node).shape[-1] != 2 * hv.shape[-1] or val(node).dim() != hv.dim():
        return None
    rank = val(node).dim()
    if any(not isinstance(d, int) or d in (-1, rank + len(dims) - 1) for d in dims):
        return None   # an unsqueeze of the last dim would break the pairing
    return half, list(reversed(dims))


def _halve_pair_tables(match) -> str | None:
    """The rotate_half spelling's repeated tables -> the half tables the fused op takes."""
    for name in ("cos", "sin"):
        node = match.inputs.pop(f"{name}_pairs", None)
        if node is None:
            continue
        found = _pair_repeated(node)
        if found is None:
            return (f"{name} table {getattr(node, 'name', node)} is not repeat_interleave(2, -1) of a half "
                    f"table: the pair (2i, 2i+1) would not rotate by one angle")
        half, dims = found
        for d in dims:
            half = insert_call(match.graph, aten.unsqueeze.default, (half, d), before=node)
        match.inputs[name] = half
    return None


def _refine(match) -> str | None:
    """Fold ``x = X[..., -r:]`` + (``cat([X[..., :-r], rope(x)], -1)`` or the in-place write-back)
    into one op on the whole head; negate-sin spellings of the inverse become ``inverse=True``."""
    if "cos_pairs" in match.inputs:     # the rotate_half spelling: check its tables once halved
        reason = _halve_pair_tables(match) or _extra_check(match)
        if reason:
            return reason
    table = match.inputs.get("sin")
    while _is_call(table, aten.neg.default):     # each -sin flips the direction
        table = table.args[0]
        match.inputs["sin"] = table
        match.consts["inverse"] = not match.consts.get("inverse", False)
    x = match.inputs["x"]
    if not _is_call(x, aten.slice.Tensor) or len(users(match.outputs[0])) != 1:
        return None
    base, dim = x.args[0], x.args[1]
    start = x.args[2] if len(x.args) > 2 else 0
    end = x.args[3] if len(x.args) > 3 else None
    step = x.args[4] if len(x.args) > 4 else 1
    head = val(base).shape[-1]
    if isinstance(head, torch.SymInt):
        head = int(head)  # head size is a kernel constant; specialises (guards) a symbolic head dim
    if not isinstance(start, int) or step != 1:
        return None
    if dim not in (-1, val(base).dim() - 1) or (end is not None and isinstance(end, int) and end < head):
        return None
    start = start + head if start < 0 else start
    rope_dim = head - start
    user = users(match.outputs[0])[0]
    absorbed = None
    if _is_call(user, aten.cat.default):
        parts = user.args[0]
        cat_dim = user.args[1] if len(user.args) > 1 else 0
        if (cat_dim in (-1, val(user).dim() - 1) and len(parts) == 2 and parts[1] is match.outputs[0]
                and _is_call(parts[0], aten.slice.Tensor) and parts[0].args[0] is base
                and parts[0].args[1] == dim and (parts[0].args[2] if len(parts[0].args) > 2 else 0) == 0
                and parts[0].args[3] in (start, start - head) and (len(parts[0].args) < 5 or parts[0].args[4] == 1)):
            absorbed = user
    elif _is_call(user, aten.slice_scatter.default):
        args = list(user.args) + [None] * (6 - len(user.args))
        s_dim, s_start, s_end, s_step = args[2], args[3], args[4], args[5] or 1
        s_start = s_start + head if isinstance(s_start, int) and s_start < 0 else s_start
        if (args[0] is base and args[1] is match.outputs[0] and s_dim in (-1, val(base).dim() - 1)
                and s_start == start and s_step == 1 and (s_end is None or s_end >= head)):
            absorbed = user
    if absorbed is None or val(absorbed).dtype != val(base).dtype:
        return None
    match.inputs["x"] = base
    match.nodes.add(match.outputs[0])
    match.outputs = [absorbed]
    match.consts["rope_dim"] = rope_dim
    return None



def _extra_check(match) -> str | None:
    x = match.input_val("x")
    if x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return f"x has dtype {x.dtype}; the fused op takes bf16/fp16/fp32"
    out_dtype = val(match.outputs[0]).dtype
    if out_dtype != x.dtype:   # e.g. fp64 tables promote the rotation; the fused op returns x's dtype
        return f"the rotation is computed in {out_dtype} (tables of another dtype), the fused op returns {x.dtype}"
    tables = [t for t in (match.input_val("cos"), match.input_val("sin")) if t is not None]
    if any(match.input_requires_grad(name) for name in ("cos", "sin")):
        return "cos/sin require grad; the fused op treats the rotation table as a constant"
    half = x.shape[-1] // 2
    for t in tables:
        if t.shape[-1] != half:
            return f"rotation table last dim {t.shape[-1]} != x.shape[-1] // 2 = {half}"
    cos, sin = match.input_val("cos"), match.input_val("sin")
    if cos is not None and tuple(cos.shape) != tuple(sin.shape):
        return f"cos {tuple(cos.shape)} and sin {tuple(sin.shape)} differ in shape"
    return None


def _examples(dtype):
    ang = torch.randn(3, 1, 4)
    return {"x": torch.randn(2, 3, 5, 8, dtype=dtype), "cos": ang.cos(), "sin": ang.sin(),
            "cos_pairs": ang.cos().repeat_interleave(2, -1), "sin_pairs": ang.sin().repeat_interleave(2, -1)}


register_pattern(Pattern(
    name="rope",
    chains=[Chain(rope_real_chain, {"inverse": False}), Chain(rope_real_inverse_chain, {"inverse": True}),
            Chain(rope_rotate_half_chain, {"inverse": False})],
    replacement=_replace,
    example_inputs=_examples,
    extra_check=_extra_check,
    refine=_refine,
    fused_ops=("rope",),
    description="interleaved (partial) rotary embedding, forward and inverse",
))
