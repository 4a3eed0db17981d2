"""Parse the C signatures of AscendC kernel entry points (`__global__ ... void name(...)`).

The runner needs each parameter's C type to marshal Python values: `GM_ADDR` and other pointer
parameters take tensor memory, scalar parameters (`uint32_t n`, `float eps`) take Python numbers.
"""
from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

# C scalar type (after removing cv-qualifiers) -> ctypes type. A table, so that an unsupported type
# fails with a message listing what is supported.
SCALAR_CTYPES: dict[str, type] = {
    "bool": ctypes.c_bool,
    "int8_t": ctypes.c_int8,
    "uint8_t": ctypes.c_uint8,
    "int16_t": ctypes.c_int16,
    "uint16_t": ctypes.c_uint16,
    "int32_t": ctypes.c_int32,
    "uint32_t": ctypes.c_uint32,
    "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
    "int": ctypes.c_int,
    "unsigned": ctypes.c_uint,
    "unsigned int": ctypes.c_uint,
    "long": ctypes.c_long,
    "unsigned long": ctypes.c_ulong,
    "long long": ctypes.c_longlong,
    "unsigned long long": ctypes.c_ulonglong,
    "size_t": ctypes.c_size_t,
    "float": ctypes.c_float,
    "double": ctypes.c_double,
}

_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', re.S)
_KERNEL = re.compile(
    r'(?:extern\s+"C"\s+)?((?:(?:__global__|__aicore__|__vector__|__cube__|inline)\s+)+)void\s+(\w+)\s*\(([^)]*)\)\s*\{')
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "__gm__"}


class SignatureError(ValueError):
    """A kernel parameter the runner cannot marshal."""


@dataclass(frozen=True)
class KernelParam:
    name: str
    ctype_text: str  # the type as written, e.g. "GM_ADDR", "__gm__ float*", "uint32_t"
    is_pointer: bool
    scalar_type: str | None  # normalised scalar type for non-pointers (key of SCALAR_CTYPES)

    @property
    def ctypes_type(self) -> type:
        return ctypes.c_void_p if self.is_pointer else SCALAR_CTYPES[self.scalar_type]


@dataclass(frozen=True)
class TemplateParam:
    """One template parameter of a template kernel (ASCENDC_TPL_* ops): `typename D_T_X` is a type,
    `int TILE_NUM` a value of C type `ctype`."""
    name: str
    is_type: bool
    ctype: str | None


@dataclass(frozen=True)
class KernelSignature:
    name: str
    params: tuple[KernelParam, ...]
    # Template kernels: their template parameters in order (CANN's ASCENDC_TPL_ARGS_DECL order).
    template_params: tuple[TemplateParam, ...] = ()

    def describe(self) -> str:
        return f"{self.name}(" + ", ".join(f"{p.ctype_text} {p.name}" for p in self.params) + ")"


def strip_comments(source: str) -> str:
    """Remove // and /* */ comments (string literals are kept intact)."""
    def repl(m: re.Match) -> str:
        text = m.group(0)
        if text.startswith("/"):
            return " " + "\n" * text.count("\n")  # keep line numbers
        return text
    return _COMMENT_OR_STRING.sub(repl, source)


def _parse_param(kernel: str, text: str) -> KernelParam:
    text = " ".join(text.split())
    m = re.match(r"^(.*?)([A-Za-z_]\w*)$", text)
    if not m or not m.group(1).strip():
        raise SignatureError(f"kernel {kernel}: cannot parse parameter {text!r}; write it as `TYPE name`")
    ctype_text, name = m.group(1).strip(), m.group(2)
    is_pointer = "*" in ctype_text or "GM_ADDR" in ctype_text.split()
    scalar = None
    if not is_pointer:
        words = [w for w in ctype_text.replace("&", " & ").split() if w not in _QUALIFIERS]
        if "&" in words:
            raise SignatureError(f"kernel {kernel}: parameter {name} is a reference ({ctype_text}); pass scalars by value")
        scalar = " ".join(words)
        if scalar not in SCALAR_CTYPES:
            raise SignatureError(
                f"kernel {kernel}: parameter {name} has type {ctype_text!r}, which the runner cannot pass; "
                f"use GM_ADDR/pointers for memory or one of: {', '.join(SCALAR_CTYPES)}")
    return KernelParam(name=name, ctype_text=ctype_text, is_pointer=is_pointer, scalar_type=scalar)


_IF_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")


def strip_disabled_blocks(source: str) -> str:
    """Blank out `#if 0 ... #endif` regions (up to a matching #else/#elif), keeping line numbers:
    op projects keep old kernel versions that way, and their signatures must not count."""
    out: list[str] = []
    stack: list[bool] = []  # per open #if: is this region disabled by an #if 0?
    for line in source.split("\n"):
        m = _IF_DIRECTIVE.match(line)
        disabled = any(stack)
        if m:
            kind, rest = m.group(1), m.group(2).strip()
            if kind.startswith("if"):
                stack.append(kind == "if" and rest.split("//")[0].strip() in ("0", "(0)"))
            elif kind in ("else", "elif") and stack:
                stack[-1] = False if stack[-1] else stack[-1]
            elif kind == "endif" and stack:
                stack.pop()
        out.append("" if disabled else line)
    return "\n".join(out)


_TEMPLATE_BEFORE = re.compile(r"template\s*<([^{};]*)>\s*$")


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside <...> and (...)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p.strip() for p in parts + [cur] if p.strip()]


def _parse_template_params(kernel: str, text: str) -> tuple[TemplateParam, ...]:
    out = []
    for part in _split_top_level(text):
        decl = part.split("=")[0].strip()
        m = re.match(r"^(typename|class)\s+(\w+)$", decl)
        if m:
            out.append(TemplateParam(m.group(2), True, None))
            continue
        m = re.match(r"^(.*?)\s*\b(\w+)$", decl)
        if not m or not m.group(1).strip():
            raise SignatureError(f"template kernel {kernel}: cannot parse template parameter {part!r}")
        out.append(TemplateParam(m.group(2), False, m.group(1).strip()))
    return tuple(out)


def parse_kernel_signatures(source: str) -> dict[str, KernelSignature]:
    """All `__global__` kernel entry points in `source`, by name, in source order. A template kernel
    (ASCENDC_TPL_* ops) carries its template parameters; which instantiation runs depends on the tiling key."""
    clean = strip_disabled_blocks(strip_comments(source))
    kernels: dict[str, KernelSignature] = {}
    for m in _KERNEL.finditer(clean):
        if "__global__" not in m.group(1).split():
            continue
        name, params_text = m.group(2), m.group(3).strip()
        template = _TEMPLATE_BEFORE.search(clean[max(0, m.start() - 400):m.start()])
        tparams = _parse_template_params(name, template.group(1)) if template else ()
        params: list[KernelParam] = []
        if params_text and params_text != "void":
            params = [_parse_param(name, p) for p in params_text.split(",")]
        kernels[name] = KernelSignature(name=name, params=tuple(params), template_params=tparams)
    return kernels
