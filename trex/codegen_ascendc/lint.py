"""Checklist linter for generated AscendC (reference/ascendc.md §8).

Rules (a table: rule id -> check over the source lines):
  datacopy-aligned   every plain DataCopy sits under a branch that tests the byte length % 32 == 0
                     (DataCopy silently rounds unaligned lengths down, §1.3); DataCopyPad otherwise
  bf16-rint          every Cast whose destination is bfloat16_t uses RoundMode::CAST_RINT (§2.3)
  upcast-none        every Cast from bfloat16_t/half to float uses RoundMode::CAST_NONE (§8 item 2)
  pipe-barrier       every vector instruction is followed by PipeBarrier<PIPE_V>() (§8 item 6)
  aiv-only           the entry declares KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY) (§8 item 8)
  ub-capacity        the UB the tiling asks for fits the capacity (§8 item 7) — needs the numbers
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: [{self.rule}] {self.message}"


_VEC_APIS = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Adds", "Muls", "Maxs", "Mins", "Exp", "Ln", "Abs", "Sqrt",
             "Rsqrt", "Reciprocal", "Relu", "Duplicate", "Cast", "ReduceSum", "ReduceMax", "Compare",
             "CompareScalar", "Select")
_VEC_CALL = re.compile(r"^\s*(" + "|".join(_VEC_APIS) + r")(<[^>]*>)?\(")
_DECL = re.compile(r"LocalTensor<(\w+)>\s+(\w+)")
_CAST = re.compile(r"^\s*Cast\(\s*([\w]+)(?:\[[^\]]*\])?\s*,\s*([\w]+)(?:\[[^\]]*\])?\s*,\s*RoundMode::(\w+)")


def _types(lines) -> dict:
    types = {}
    for l in lines:
        for m in _DECL.finditer(l):
            types[m.group(2)] = m.group(1)
    return types


def _enclosing_if(lines, i) -> str | None:
    indent = len(lines[i]) - len(lines[i].lstrip())
    for j in range(i - 1, -1, -1):
        s = lines[j]
        ind = len(s) - len(s.lstrip())
        if ind < indent and s.strip():
            return s if s.strip().startswith("if (") else None
    return None


def _rule_datacopy(lines, types):
    for i, l in enumerate(lines):
        if re.match(r"^\s*DataCopy\(", l):
            cond = _enclosing_if(lines, i)
            if cond is None or "% 32 == 0" not in cond:
                yield Finding("datacopy-aligned", i + 1, "DataCopy not guarded by a 32-byte length check; use DataCopyPad")


def _rule_casts(lines, types):
    for i, l in enumerate(lines):
        m = _CAST.match(l)
        if not m:
            continue
        dst, src, mode = m.groups()
        dt = types.get(dst, "bfloat16_t" if dst.endswith("_bf16") else "half" if dst.endswith("_fp16") else
                       "float" if dst.endswith("_fp32") else None)
        st = types.get(src, "bfloat16_t" if src.endswith("_bf16") else "half" if src.endswith("_fp16") else
                       "float" if src.endswith("_fp32") else None)
        if dt == "bfloat16_t" and mode != "CAST_RINT":
            yield Finding("bf16-rint", i + 1, f"down-cast to bfloat16_t uses {mode}; A2/A3 need CAST_RINT")
        if dt == "float" and st in ("bfloat16_t", "half") and mode != "CAST_NONE":
            yield Finding("upcast-none", i + 1, f"exact up-cast from {st} uses {mode}; use CAST_NONE")


def _rule_barrier(lines, types):
    for i, l in enumerate(lines):
        if _VEC_CALL.match(l) and l.rstrip().endswith(";"):
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if nxt != "PipeBarrier<PIPE_V>();":
                yield Finding("pipe-barrier", i + 1, "vector instruction without PipeBarrier<PIPE_V>() after it")


def _rule_aiv(lines, types):
    if not any("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY)" in l for l in lines):
        yield Finding("aiv-only", 1, "no KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY) in the entry")


RULES = {"datacopy-aligned": _rule_datacopy, "bf16-rint": _rule_casts, "pipe-barrier": _rule_barrier,
         "aiv-only": _rule_aiv}


def lint_source(source: str, ub_bytes: int | None = None, ub_capacity: int | None = None) -> list[Finding]:
    lines = source.splitlines()
    types = _types(lines)
    out: list[Finding] = []
    for rule in RULES.values():
        out += list(rule(lines, types))
    if ub_bytes is not None and ub_capacity is not None and ub_bytes > ub_capacity:
        out.append(Finding("ub-capacity", 1, f"UB use {ub_bytes} B exceeds capacity {ub_capacity} B"))
    return out
