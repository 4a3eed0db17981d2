"""Run CANN op-project (framework-launch) kernels unchanged: the kernel's op_host tiling code as well.

A CANN op project has `op_kernel/<op>.cpp` (the kernel, reading `GET_TILING_DATA`, `DTYPE_*`,
`TILING_KEY_IS`) and `op_host/<op>.cpp` + `op_host/<op>_tiling.h` (the OpDef with inputs, outputs
and attributes, `BEGIN_TILING_DATA_DEF`, and a tiling function over a `gert::TilingContext`). CANN's
build compiles both halves with generated glue; here:

* the op_host sources compile against `include_host/` (a model of the ge/gert/ops/platform_ascendc
  interfaces) into a host library; `OP_ADD` registers the op, and `trex_host_tiling` runs its tiling
  function on the shapes, dtypes and attributes of torch tensors;
* the kernel compiles against the emulator headers with the op_host tiling header included first
  (its struct is what `GET_TILING_DATA` reads) and `-DDTYPE_<NAME>=<type>` per OpDef input/output;
* `OpProject.run(inputs, outputs, attrs)` tiles, launches the kernel on the block count and tiling key
  the host chose, and returns what the tiling decided plus the emulator's counters.

    proj = OpProject("AddCustom/op_kernel/add_custom.cpp")       # finds ../op_host
    result = proj.run([x, y], [z])                                # z written in place
    result.block_dim, result.tiling_key, result.counters

`run_kernel_with_tiling` covers the case without host code: a kernel, its tiling header or struct,
the dtypes, a tiling key and a block count chosen by the caller.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .runner import (BASE_FLAGS, INCLUDE_DIR, uninitialized_locals_flags, EmulatorCompileError, EmulatorError, EmulatorUnavailable,
                     KernelLibrary, TensorList, _atomic_write, summarize_compile_errors, _compiler_identity, _headers_digest, cache_dir, compile_kernel,
                     evict_cache, find_compiler)

HOST_INCLUDE_DIR = Path(__file__).resolve().parent / "include_host"
TILING_CAPACITY = 64 * 1024
DEFAULT_CORES = 8
# Unified buffer per AI core by AddConfig SoC name, as asc-devkit's own CPU-debug model sizes TPipe's UB pool
# (impl/basic_api/utils/kernel_utils_mode_cpu.h, bufferInitLen per __NPU_ARCH__; platform_ascendc.cpp maps
# Ascend310B to 3002): 910B/910_93 (2201) 192 KB; 910 (1001), 310P (2002) and 310B (3002, Atlas 200I/500 A2) 256 KB.
UB_BYTES: dict[str, int] = {"ascend910b": 192 * 1024, "ascend910_93": 192 * 1024, "ascend910": 256 * 1024,
                            "ascend310p": 256 * 1024, "ascend310b": 256 * 1024}
# The architecture macros CANN's kernel build defines per SoC (kernels pick code paths on them, e.g.
# `#if __CCE_AICORE__ == 220` for DataCopyPad): asc-devkit's impl headers switch on __CCE_AICORE__
# 100 (dav_c100, 910), 200 (dav_m200, 310P), 220 (dav_c220, 910B / 910_93) and 300 (dav_m300, 310B);
# __NPU_ARCH__ is the dav number as UB_BYTES's comment lists it. Undefined, both read as 0 in `#if`,
# which sends a 910B kernel down its pre-200 (Atlas 310-class) branches.
ARCH_MACROS: dict[str, tuple[int, int]] = {"ascend910b": (220, 2201), "ascend910_93": (220, 2201),
                                           "ascend910": (100, 1001), "ascend310p": (200, 2002),
                                           "ascend310b": (300, 3002)}


def arch_defines(socs: Sequence[str] = ()) -> list[str]:
    """-D__CCE_AICORE__=.. -D__NPU_ARCH__=.. of the first SoC in `socs` that ARCH_MACROS knows (910B's when none)."""
    aicore, npu_arch = next((ARCH_MACROS[s] for s in socs if s in ARCH_MACROS), ARCH_MACROS["ascend910b"])
    return [f"-D__CCE_AICORE__={aicore}", f"-D__NPU_ARCH__={npu_arch}"]


# torch dtype name -> (C type of DTYPE_*, ge::DataType value). A table so that an unsupported dtype
# fails naming the ones supported.
DTYPES: dict[str, tuple[str, int]] = {
    "float32": ("float", 0), "float16": ("half", 1), "int8": ("int8_t", 2), "int32": ("int32_t", 3),
    "uint8": ("uint8_t", 4), "int16": ("int16_t", 6), "int64": ("int64_t", 9), "float64": ("double", 11),
    "bool": ("bool", 12), "bfloat16": ("bfloat16_t", 27), "complex64": ("complex64", 16),
    "uint16": ("uint16_t", 7), "uint32": ("uint32_t", 8), "uint64": ("uint64_t", 10),
}


class OpProjectError(EmulatorError):
    """The op project cannot be run as given (no op_host, unknown op, wrong number of tensors, ...)."""


def _dtype_name(t: Any) -> str:
    name = str(t.dtype).removeprefix("torch.")
    if name not in DTYPES:
        raise OpProjectError(f"dtype {t.dtype} has no AscendC DTYPE_* mapping; supported: {', '.join(DTYPES)}")
    return name


@dataclass(frozen=True)
class OpParam:
    name: str
    option: str              # required / optional / dynamic
    dtypes: tuple[int, ...]  # ge::DataType values the OpDef lists
    # OpDef InitValue: ("zero", 0) for InitValue(uint64_t); ("list", (v, ...)) for a ScalarVar (one value)
    # or a ScalarVar list (one per DataType entry); None when the output has none
    init: tuple[str, Any] | None = None

    def init_value(self, ge_dtype: int) -> float | int | None:
        """The value the output is set to before the launch (asc-devkit OpParamDef/InitValue.md), for an
        output of this ge::DataType; None without InitValue."""
        if self.init is None:
            return None
        form, value = self.init
        if form == "zero":
            if value != 0:
                raise OpProjectError(f"output {self.name}: InitValue(uint64_t) takes only 0 (CANN zeroes the output); "
                                     f"got {value}: use InitValue(ScalarVar) for another value")
            return 0
        if len(value) == 1:
            return value[0]
        if len(value) != len(self.dtypes):
            raise OpProjectError(f"output {self.name}: InitValue lists {len(value)} values for {len(self.dtypes)} "
                                 "DataType entries; the list needs one value per entry")
        if ge_dtype not in self.dtypes:
            raise OpProjectError(f"output {self.name}: ge dtype {ge_dtype} is not among its DataType list {self.dtypes}")
        return value[self.dtypes.index(ge_dtype)]


@dataclass(frozen=True)
class OpAttr:
    name: str
    kind: str        # int / float / bool / str / list_int / list_float
    option: str
    default: Any


@dataclass(frozen=True)
class OpInfo:
    name: str
    inputs: tuple[OpParam, ...]
    outputs: tuple[OpParam, ...]
    attrs: tuple[OpAttr, ...]
    socs: tuple[str, ...] = ()  # AICore().AddConfig(...) targets

    @property
    def ub_bytes(self) -> int:
        """UB per core of the first SoC the op is built for (UB_BYTES; 192 KB when none is known)."""
        return next((UB_BYTES[s] for s in self.socs if s in UB_BYTES), UB_BYTES["ascend910b"])

    @property
    def kernel_name(self) -> str:
        """CANN's kernel function name for the op type: AddCustom -> add_custom."""
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", self.name).lower()


def _parse_ops(text: str) -> dict[str, OpInfo]:
    ops: dict[str, dict] = {}
    cur: dict | None = None
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "op":
            name = rest.split()[0]
            cur = ops.setdefault(name, {"inputs": [], "outputs": [], "attrs": [], "socs": []})
        elif kind == "config" and cur is not None:
            cur["socs"].append(rest.strip())
        elif kind in ("input", "output") and cur is not None:
            parts = rest.split()
            dts = tuple(int(x) for x in parts[2].split(",")) if len(parts) > 2 else ()
            cur[kind + "s"].append(OpParam(parts[0], parts[1], dts))
        elif kind == "init" and cur is not None and cur["outputs"]:
            form, _, values = rest.partition(" ")
            parsed: Any = int(values) if form == "zero" else tuple(_scalar_var(v) for v in values.split(";"))
            last = cur["outputs"][-1]
            cur["outputs"][-1] = OpParam(last.name, last.option, last.dtypes, (form, parsed))
        elif kind == "attr" and cur is not None:
            name, akind, option, *value = rest.split(" ")
            text_value = " ".join(value)
            default: Any = text_value
            if akind == "float":
                default = float(text_value)
            elif akind in ("int", "bool"):
                default = int(text_value) if akind == "int" else bool(int(text_value))
            elif akind == "list_int":
                default = [int(v) for v in text_value.split()[1:]]
            elif akind == "list_float":
                default = [float(v) for v in text_value.split()[1:]]
            cur["attrs"].append(OpAttr(name, akind, option, default))
    return {n: OpInfo(n, tuple(d["inputs"]), tuple(d["outputs"]), tuple(d["attrs"]), tuple(d["socs"]))
            for n, d in ops.items()}


def _scalar_var(text: str) -> float | int:
    """A ScalarVar as abi.h writes it: "f 0.5", "i -3", "u 7"."""
    kind, _, value = text.partition(" ")
    if kind not in ("f", "i", "u"):
        raise OpProjectError(f"InitValue's ScalarVar has no valid ScalarType ({text!r}); use one of UINT64..FLOAT16")
    return float(value) if kind == "f" else int(value)


class _TensorArg(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32), ("dims", ctypes.c_int64 * 25),
                ("data", ctypes.c_void_p)]


class _TilingResult(ctypes.Structure):
    _fields_ = [("block_dim", ctypes.c_uint32), ("status", ctypes.c_uint32), ("tiling_key", ctypes.c_uint64),
                ("tiling_size", ctypes.c_uint64), ("workspace_bytes", ctypes.c_uint64), ("error", ctypes.c_char * 1024),
                ("need_atomic", ctypes.c_uint32)]


@dataclass
class Tiling:
    """What the op's host tiling function decided."""
    block_dim: int
    tiling_key: int
    tiling: bytes          # the raw tiling buffer (TILING_CAPACITY bytes; `size` of them set)
    size: int
    workspace_bytes: int
    need_atomic: bool = False  # SetNeedAtomic(true): the outputs' InitValue applies


@dataclass
class OpRun:
    tiling: Tiling
    counters: dict

    @property
    def block_dim(self) -> int:
        return self.tiling.block_dim

    @property
    def tiling_key(self) -> int:
        return self.tiling.tiling_key


_HOST_LIBS: dict[str, ctypes.CDLL] = {}
_HOST_LOCK = threading.Lock()


def _compile_host(sources: Sequence[Path], include_dirs: Sequence[Path]) -> ctypes.CDLL:
    cxx = find_compiler()
    if cxx is None:
        raise EmulatorUnavailable("no C++ compiler found: install g++ or set CXX to a C++17 compiler")
    h = hashlib.sha256()
    for path in [*sources, *sorted(HOST_INCLUDE_DIR.rglob("*.h"))]:
        h.update(str(path).encode())
        h.update(path.read_bytes())
    for d in include_dirs:
        for hdr in sorted(Path(d).glob("*.h")):
            h.update(hdr.read_bytes())
    h.update(_headers_digest().encode())
    h.update(_compiler_identity(cxx).encode())
    h.update(" ".join(uninitialized_locals_flags(cxx)).encode())
    key = h.hexdigest()[:32]
    with _HOST_LOCK:
        if key in _HOST_LIBS:
            return _HOST_LIBS[key]
        out = cache_dir()
        so = out / f"h_{key}.so"
        if not so.exists():
            abi = out / f"h_{key}.abi.cpp"
            _atomic_write(abi, b'#include "trex_host/abi.h"\n')
            fd, tmp = tempfile.mkstemp(dir=out, prefix=f"h_{key}.", suffix=".so.tmp")
            os.close(fd)
            flags = [f for f in BASE_FLAGS if f != "-O2"] + ["-O0", "-w", *uninitialized_locals_flags(cxx)]
            incs = [HOST_INCLUDE_DIR, INCLUDE_DIR, *include_dirs]
            cmd = [cxx, *flags, *[f"-I{d}" for d in incs], *map(str, sources), str(abi), "-o", tmp]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                os.unlink(tmp)
                raise EmulatorCompileError(f"g++ failed to compile the op_host sources {[s.name for s in sources]} "
                                           f"against the emulator's host model (exit {proc.returncode}): "
                                           f"{summarize_compile_errors(proc.stderr)}", log=proc.stderr)
            os.replace(tmp, so)
            evict_cache(keep=[so])
        dll = ctypes.CDLL(str(so))
        dll.trex_host_ops.restype = ctypes.c_char_p
        dll.trex_host_set_input_counts.argtypes = [ctypes.POINTER(ctypes.c_uint32), ctypes.c_int]
        dll.trex_host_tiling.argtypes = [ctypes.c_char_p, ctypes.POINTER(_TensorArg), ctypes.c_int,
                                         ctypes.POINTER(_TensorArg), ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32,
                                         ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64,
                                         ctypes.POINTER(_TilingResult)]
        _HOST_LIBS[key] = dll
        return dll


_TILING_CLASS = re.compile(r"REGISTER_TILING_DATA_CLASS\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")
_TILING_DEF = re.compile(r"BEGIN_TILING_DATA_DEF\s*\(\s*(\w+)\s*\)")


def tiling_headers(host_dir: Path) -> list[Path]:
    """op_host headers that define tiling structs (BEGIN_TILING_DATA_DEF)."""
    return sorted(p for p in host_dir.glob("*.h") if _TILING_DEF.search(p.read_text(errors="replace")))


def tiling_struct_for(op: str, headers: Sequence[Path]) -> str | None:
    """The C++ name of the op's tiling struct: REGISTER_TILING_DATA_CLASS(op, S), else the only struct."""
    from .signature import strip_comments, strip_disabled_blocks
    registered, defined = {}, []
    for hdr in headers:
        text = strip_disabled_blocks(strip_comments(hdr.read_text(errors="replace")))
        registered.update(dict(_TILING_CLASS.findall(text)))
        defined += _TILING_DEF.findall(text)
    if op in registered:
        return f"optiling::{registered[op]}" if "namespace optiling" in "".join(
            h.read_text(errors="replace") for h in headers) else registered[op]
    if len(set(defined)) == 1:
        return f"optiling::{defined[0]}"
    return None


_TILING_BLOCK = re.compile(r"BEGIN_TILING_DATA_DEF\s*\(\s*\w+\s*\).*?END_TILING_DATA_DEF\s*;?", re.S)
# Integral constants at namespace scope (array sizes such as MAX_ARRAY_NUM) and numeric #defines: what a
# tiling definition may name besides types.
_INT_CONST = re.compile(r"^[ \t]*(?:static\s+|inline\s+)*(?:constexpr|const)\s+(?:static\s+)?(?:unsigned\s+|signed\s+)?"
                        r"(?:u?int(?:8|16|32|64)_t|int|long(?:\s+long)?|short|size_t|char)\s+\w+\s*=\s*[^;{}]+;", re.M)
_NUM_DEFINE = re.compile(r"^[ \t]*#\s*define\s+\w+\s+[-+(]*\s*\d[\w\s()*+\-/<>]*$", re.M)
_NAMESPACE_OPEN = re.compile(r"namespace\s+([\w:]+)?\s*$")


def _namespace_paths(text: str, positions: Sequence[int]) -> list[tuple[str, ...] | None]:
    """For each position (ascending): the namespaces enclosing it, or None inside a class, function or any
    other non-namespace braces. `text` has comments stripped; string literals with braces are not expected
    in tiling headers."""
    out: list[tuple[str, ...] | None] = []
    stack: list[tuple[str, ...] | None] = []  # per open brace: the namespace names it opened, None: other
    last_stop, i, todo = 0, 0, list(positions)
    for i, ch in enumerate(text):
        while todo and todo[0] == i:
            todo.pop(0)
            out.append(None if any(e is None for e in stack) else tuple(n for e in stack for n in e))
        if ch == "{":
            m = _NAMESPACE_OPEN.search(text[last_stop:i])
            stack.append(tuple((m.group(1) or "").split("::")) if m and m.group(1) else (() if m else None))
        elif ch == "}" and stack:
            stack.pop()
        if ch in "{};":
            last_stop = i + 1
    out += [None if any(e is None for e in stack) else tuple(n for e in stack for n in e)] * len(todo)
    return out


def kernel_tiling_text(header: Path) -> str:
    """The kernel's view of an op_host tiling header: its BEGIN_TILING_DATA_DEF structs and the integral
    constants at namespace scope they may use, each in its namespaces, and nothing else. CANN's kernel
    build never compiles the op_host header: it generates the tiling classes from the registered
    definitions (asc-devkit tools/build/asc_op_compile_base/asc_op_compiler/get_op_tiling.py,
    get_dynamic_tiling_struct), so host code next to them (a gert::TilingContext helper class, includes of
    host headers) is not the kernel's to compile."""
    from .signature import strip_comments, strip_disabled_blocks
    text = strip_disabled_blocks(strip_comments(header.read_text(errors="replace")))
    items = sorted([(m.start(), m.group(0)) for m in _TILING_BLOCK.finditer(text)]
                   + [(m.start(), m.group(0).strip()) for m in _INT_CONST.finditer(text)])
    defines = [m.group(0).strip() for m in _NUM_DEFINE.finditer(text)]
    lines = ["#pragma once", '#include "kernel_tiling/kernel_tiling.h"', *defines]
    for (_, body), path in zip(items, _namespace_paths(text, [pos for pos, _ in items])):
        if path is None:
            continue  # a class's or function's own constant
        lines.append("".join(f"namespace {n} {{ " for n in path) + body + " }" * len(path))
    return "\n".join(lines) + "\n"


def kernel_tiling_dir(headers: Sequence[Path]) -> Path | None:
    """A directory of the kernel views (kernel_tiling_text) of `headers` under their own names, named by
    their content: on the kernel's include path before op_host, so that a kernel including its tiling
    header by name gets the same view."""
    if not headers:
        return None
    views = {h.name: kernel_tiling_text(h) for h in headers}
    digest = hashlib.sha256("\0".join(f"{n}\0{t}" for n, t in sorted(views.items())).encode()).hexdigest()[:16]
    out = cache_dir() / f"tiling_{digest}"
    out.mkdir(parents=True, exist_ok=True)
    for name, text in views.items():
        if not (out / name).exists():
            _atomic_write(out / name, text.encode())
    return out


def prelude_for(headers: Sequence[Path], struct: str | None, view_dir: Path | None = None) -> str:
    """Kernel prelude: the emulator headers, the kernel views of the op_host tiling headers (in
    `view_dir`, see kernel_tiling_dir), their structs at global scope too (CANN's kernel build generates
    them there: kernels name `AddCustomTilingData` unqualified), and the struct GET_TILING_DATA reads."""
    from .signature import strip_comments, strip_disabled_blocks
    lines = ['#include "kernel_operator.h"']
    for h in headers:  # the view's directory is named by its content: the compile cache key follows it
        lines.append(f'#include "{(view_dir / h.name) if view_dir else h}"')
        text = strip_disabled_blocks(strip_comments(h.read_text(errors="replace")))
        if "namespace optiling" in text:
            lines += [f"using optiling::{name};" for name in dict.fromkeys(_TILING_DEF.findall(text))]
    if struct:
        lines.append(f"using trex_emu_default_tiling_t = {struct};")
    return "\n".join(lines)


def dtype_defines(names: Sequence[str], dtypes: Sequence[str]) -> list[str]:
    """-DDTYPE_<NAME>=<C type> -DORIG_DTYPE_<NAME>=<ge value> for each (OpDef name, torch dtype name)."""
    flags = []
    for name, dt in zip(names, dtypes):
        if dt is None:
            continue
        ctype, ge = DTYPES[dt]
        flags += [f"-DDTYPE_{name.upper()}={ctype}", f"-DORIG_DTYPE_{name.upper()}={ge}"]
    return flags


class OpProject:
    """A CANN op project: kernel source plus op_host directory (default: ../op_host of the kernel)."""

    def __init__(self, kernel: str | os.PathLike, host_dir: str | os.PathLike | None = None,
                 host_sources: Sequence[str | os.PathLike] | None = None, op: str | None = None,
                 opt: str = "-O1"):
        self.kernel = Path(kernel).resolve()
        if not self.kernel.is_file():
            raise FileNotFoundError(f"kernel source {str(kernel)!r} does not exist")
        if host_dir is None:
            host_dir = _find_host_dir(self.kernel)
        self.host_dir = Path(host_dir).resolve()
        sources = [Path(s).resolve() for s in host_sources] if host_sources else sorted(self.host_dir.glob("*.cpp"))
        if not sources:
            raise OpProjectError(f"no op_host sources (*.cpp) in {self.host_dir}; pass host_sources=[...]")
        self.host = _compile_host(sources, [self.host_dir])
        self.ops = _parse_ops(self.host.trex_host_ops().decode())
        if not self.ops:
            raise OpProjectError(f"the op_host sources in {self.host_dir} register no op (OP_ADD)")
        if op is None:
            kernel_stem = self.kernel.stem.removesuffix("_kernel")
            matches = [o for o in self.ops.values() if o.kernel_name == kernel_stem] or list(self.ops.values())
            if len(matches) != 1:
                raise OpProjectError(f"{self.host_dir} registers ops {sorted(self.ops)}; name the one to run (op=...)")
            op = matches[0].name
        if op not in self.ops:
            raise OpProjectError(f"op {op!r} is not registered by {self.host_dir} (found: {sorted(self.ops)})")
        self.info = self.ops[op]
        self.headers = tiling_headers(self.host_dir)
        self.struct = tiling_struct_for(op, self.headers)
        self.opt = opt

    def tile(self, inputs: Sequence[Any], outputs: Sequence[Any], attrs: dict | None = None,
             cores: int = DEFAULT_CORES, ub_bytes: int | None = None) -> Tiling:
        """Run the op's host tiling function on these tensors' shapes/dtypes and the attributes
        (OpDef order; missing ones take the OpDef's defaults). ub_bytes: default the op's SoC's UB."""
        info = self.info
        ub_bytes = ub_bytes or info.ub_bytes
        if len(inputs) != len(info.inputs) or len(outputs) != len(info.outputs):
            raise OpProjectError(f"op {info.name} takes inputs ({', '.join(p.name for p in info.inputs)}) and outputs "
                                 f"({', '.join(p.name for p in info.outputs)}); got {len(inputs)} inputs, "
                                 f"{len(outputs)} outputs")
        attr_text = _attr_text(info, attrs or {})
        lists = [self._instances(p, t) for p, t in zip(info.inputs, inputs)]
        counts = (ctypes.c_uint32 * max(1, len(lists)))(*[len(ts) for ts in lists])
        self.host.trex_host_set_input_counts(counts, len(lists))
        flat = [t for ts in lists for t in ts]
        ins = (_TensorArg * max(1, len(flat)))(*[_tensor_arg(t) for t in flat])
        outs = (_TensorArg * max(1, len(outputs)))(*[_tensor_arg(t) for t in outputs])
        buf = (ctypes.c_uint8 * TILING_CAPACITY)()
        res = _TilingResult()
        rc = self.host.trex_host_tiling(info.name.encode(), ins, len(flat), outs, len(outputs), attr_text.encode(),
                                        cores, ub_bytes, ctypes.addressof(buf), TILING_CAPACITY, ctypes.byref(res))
        if rc != 0:
            raise OpProjectError(f"op {info.name}: host tiling failed: {res.error.decode(errors='replace')}")
        if res.block_dim == 0:
            raise OpProjectError(f"op {info.name}: the tiling function set no block dim (SetBlockDim)")
        return Tiling(res.block_dim, res.tiling_key, bytes(buf), res.tiling_size, res.workspace_bytes,
                      bool(res.need_atomic))

    @staticmethod
    def _instances(param: OpParam, value: Any) -> list:
        """The tensors of one OpDef input: a DYNAMIC input takes a list (one instance per tensor)."""
        if param.option != "dynamic":
            if isinstance(value, (list, tuple)):
                raise OpProjectError(f"input {param.name} is {param.option}, not dynamic: pass one tensor, not a list")
            return [value]
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if not values:
            raise OpProjectError(f"dynamic input {param.name} got an empty list; pass at least one tensor")
        return values

    def library(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> KernelLibrary:
        """The kernel compiled for these tensors' dtypes (DTYPE_* per OpDef input and output; a dynamic
        input's from its first tensor)."""
        inputs_named = {p.name for p in self.info.inputs}
        # an output named like an input (a ref tensor) is DTYPE_<NAME>_REF, as CANN's kernel build names it
        names = [p.name for p in self.info.inputs] + [p.name + "_ref" if p.name in inputs_named else p.name
                                                       for p in self.info.outputs]
        firsts = [self._instances(p, t)[0] for p, t in zip(self.info.inputs, inputs)]
        dts = [None if t is None else _dtype_name(t) for t in [*firsts, *outputs]]
        views = kernel_tiling_dir(self.headers)
        return compile_kernel(self.kernel, extra_flags=[self.opt, *arch_defines(self.info.socs), *dtype_defines(names, dts)],
                              include_dirs=[*([views] if views else []), self.host_dir],
                              prelude=prelude_for(self.headers, self.struct, views))

    def run(self, inputs: Sequence[Any], outputs: Sequence[Any], attrs: dict | None = None,
            cores: int = DEFAULT_CORES, **launch_options: Any) -> OpRun:
        """Tile on the host, then launch the kernel on the chosen block count and tiling key. Outputs are
        written in place; the workspace the tiling function asked for is allocated (zeroed). An output with
        an OpDef InitValue is set to it first when the tiling function called SetNeedAtomic(true), as CANN's
        runtime does (a memset before the kernel); without SetNeedAtomic the InitValue does not apply."""
        import torch
        launch_options.setdefault("ub_bytes", self.info.ub_bytes)
        tiling = self.tile(inputs, outputs, attrs, cores, launch_options["ub_bytes"])
        lib = self.library(inputs, outputs)
        kernel = self.info.kernel_name if self.info.kernel_name in lib.kernels else None
        workspace = torch.zeros(max(tiling.workspace_bytes, 32), dtype=torch.uint8)
        if tiling.need_atomic:
            for param, out in zip(self.info.outputs, outputs):
                value = None if out is None else param.init_value(DTYPES[_dtype_name(out)][1])
                if value is not None:
                    out.fill_(value)
        kernel_inputs = [TensorList(self._instances(p, t)) if p.option == "dynamic" else t
                         for p, t in zip(self.info.inputs, inputs)]
        args = [*kernel_inputs, *outputs, workspace, bytearray(tiling.tiling)]
        sig = lib._signature(kernel)
        if len(sig.params) != len(args):
            raise OpProjectError(f"kernel {sig.describe()} takes {len(sig.params)} arguments; the OpDef of "
                                 f"{self.info.name} gives {len(inputs)} inputs + {len(outputs)} outputs + workspace + "
                                 f"tiling = {len(args)}")
        counters = lib.launch(sig.name, tiling.block_dim, *args, tiling_key=tiling.tiling_key, **launch_options)
        return OpRun(tiling, counters)


def _find_host_dir(kernel: Path) -> Path:
    """op_host next to op_kernel (also op_kernel/<op>/ with op_host/<op>/)."""
    for up in (kernel.parent.parent, kernel.parent.parent.parent):
        cand = up / "op_host"
        if cand.is_dir():
            sub = cand / kernel.parent.name
            return sub if sub.is_dir() else cand
    raise OpProjectError(f"no op_host directory next to {kernel.parent}; pass host_dir=...")


def _tensor_arg(t: Any) -> _TensorArg:
    arg = _TensorArg()
    if t is None:
        return arg
    arg.dtype = DTYPES[_dtype_name(t)][1]
    arg.ndim = t.dim()
    for i, d in enumerate(t.shape):
        arg.dims[i] = int(d)
    arg.data = t.data_ptr() if t.device.type == "cpu" and t.is_contiguous() else None
    return arg


def _attr_text(info: OpInfo, attrs: dict) -> str:
    unknown = set(attrs) - {a.name for a in info.attrs}
    if unknown:
        raise OpProjectError(f"op {info.name} has no attribute(s) {sorted(unknown)}; its attributes are "
                             f"{[a.name for a in info.attrs]}")
    lines = []
    for a in info.attrs:
        v = attrs.get(a.name, a.default)
        if a.kind == "float":
            lines.append(f"f {float(v)!r}")
        elif a.kind == "bool":
            lines.append(f"b {int(bool(v))}")
        elif a.kind == "str":
            lines.append(f"s {v}")
        elif a.kind == "list_int":
            lines.append("li " + " ".join(str(int(x)) for x in [len(v), *v]))
        elif a.kind == "list_float":
            lines.append(f"lf {len(v)} " + " ".join(repr(float(x)) for x in v))
        else:
            lines.append(f"i {int(v)}")
    return "\n".join(lines)


def run_kernel_with_tiling(kernel: str | os.PathLike, block_dim: int, *args: Any, tiling_key: int = 0,
                           dtypes: dict[str, str] | None = None, tiling_header: str | os.PathLike | None = None,
                           tiling_struct: str | None = None, opt: str = "-O1", **launch_options: Any) -> dict:
    """A framework-launch kernel without its host code: the caller picks the block count, the tiling key,
    the DTYPE_* types ({"x": "float16"}) and passes the tiling bytes as the last argument(s).
    `tiling_header`: an op_host header with BEGIN_TILING_DATA_DEF (its struct is what GET_TILING_DATA
    reads; `tiling_struct` names it when the header defines several)."""
    headers = [Path(tiling_header).resolve()] if tiling_header else []
    struct = tiling_struct or (tiling_struct_for("", headers) if headers else None)
    dts = dtypes or {}
    unknown = [v for v in dts.values() if v not in DTYPES]
    if unknown:
        raise OpProjectError(f"dtypes {unknown} have no DTYPE_* mapping; use one of {', '.join(DTYPES)}")
    views = kernel_tiling_dir(headers)
    lib = compile_kernel(kernel, extra_flags=[opt, *arch_defines(), *dtype_defines(list(dts), list(dts.values()))],
                         include_dirs=[*([views] if views else []), *[h.parent for h in headers]],
                         prelude=prelude_for(headers, struct, views))
    return lib.launch(None, block_dim, *args, tiling_key=tiling_key, **launch_options)
