"""Compile AscendC kernel sources against the emulator headers and run them on host memory.

    lib = compile_kernel(source_or_path)            # g++ -> cached shared library
    counters = lib.launch("add_custom", 8, x, y, z, n, tiles)   # torch CPU tensors + scalars

Error boundary: every emulated API misuse throws a C++ exception inside the library; the generated
entry point catches it and returns the message, which becomes an `EmulatorError` here. A kernel that
crashes the process outright (a raw-pointer segfault) would take the caller down with it; pass
`isolate=True` to run the launch in a forked child on shared-memory copies of the buffers instead.
"""
from __future__ import annotations

import ctypes
import enum
import functools
import hashlib
import json
import mmap
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from .signature import KernelSignature, parse_kernel_signatures

INCLUDE_DIR = Path(__file__).resolve().parent / "include"
ABI_VERSION = 5
DEFAULT_UB_BYTES = 192 * 1024
DEFAULT_UB_FILL = 0xFF
# bounds="device": poisoned bytes after each argument's allocation that a kernel may read without a fault
# (the NPU reads whatever follows inside its mapped pool; here NaN / -1, so a result that depends on them
# shows up as wrong), and the strictness of each bounds mode (launch's docstring).
GM_GUARD_BYTES = 32 * 1024
GM_GUARD_FILL = 0xFF
BOUNDS_MODES = ("strict", "device")
BASE_FLAGS = ("-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden", "-fvisibility-inlines-hidden")


@functools.cache
def uninitialized_locals_flags(cxx: str) -> tuple[str, ...]:
    """Flags that fill every uninitialised automatic variable with a fixed byte pattern (0xFE.. on GCC >= 12,
    clang >= 8), so code that reads one fails the same way on every run instead of by what the stack held
    (asc-devkit's sort example reads the minTmpSize that GetSortMaxMinTmpSize leaves unwritten on A2/A3;
    cann-ops' inplace_attn_softmax sizes a queue from a kernel-object member its big-shape path never
    sets); () where the compiler lacks it. Used for kernels, op_host tiling libraries and programs."""
    flag = "-ftrivial-auto-var-init=pattern"
    with tempfile.TemporaryDirectory() as d:
        probe = Path(d) / "p.cpp"
        probe.write_text("int main() { return 0; }\n")
        ok = subprocess.run([cxx, flag, "-fsyntax-only", str(probe)], capture_output=True, check=False).returncode == 0
    return (flag,) if ok else ()


class EmulatorError(RuntimeError):
    """A kernel misused the AscendC API (UB overflow, misalignment, queue misuse, ...) or crashed."""


class EmulatorCompileError(EmulatorError):
    """g++ rejected the kernel source. The message leads with one line naming the first problem (for an
    identifier the emulator lacks: the API name and "unsupported"), then g++'s first error in full;
    `log` holds the whole compiler output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


# g++'s first-error shapes that mean "the emulator does not provide this name" -> the name.
_UNDECLARED = (
    re.compile(r"[‘'](\w+)[’'] was not declared in this scope"),
    re.compile(r"[‘'](\w+)[’'] is not a member of [‘']AscendC[’']"),
    re.compile(r"[‘'](\w+)[’'] does not name a type"),
    re.compile(r"there are no arguments to [‘'](\w+)[’'] that depend on a template parameter"),
    re.compile(r"[‘'](?:class |struct )?AscendC::\w+(?:<[^’']*>)?[’'] has no member named [‘'](\w+)[’']"),
)
_FIRST_ERROR = re.compile(r"^(?P<loc>[^\s:][^:]*:\d+:\d+): error: (?P<msg>.*)$", re.M)


def summarize_compile_errors(stderr: str) -> str:
    """One line for the first g++ error, then that error's lines (up to the next error), not the
    pages of template instantiation notes that follow."""
    m = _FIRST_ERROR.search(stderr)
    if not m:
        return stderr[-4000:]
    msg = m.group("msg")
    headline = f"{m.group('loc')}: {msg}"
    for pat in _UNDECLARED:
        hit = pat.search(msg)
        if hit:
            headline = (f"{m.group('loc')}: the kernel uses `{hit.group(1)}`, which the trex AscendC emulator does not "
                        f"provide (unsupported API, or a name the kernel's own headers should declare); "
                        f"docs/emulator.md lists what is covered")
            break
    start = m.start()
    nxt = _FIRST_ERROR.search(stderr, m.end())
    block = stderr[start:nxt.start() if nxt else len(stderr)].rstrip().splitlines()[:25]
    more = len(_FIRST_ERROR.findall(stderr)) - 1
    return headline + "\n" + "\n".join(block) + (f"\n... and {more} more error(s) (EmulatorCompileError.log)" if more else "")


def device_allocation_bytes(nbytes: int) -> int:
    """Bytes aclrtMalloc reserves for a `nbytes` buffer: rounded up to 32 B, plus 32 B. Kernels that load
    whole 32-byte blocks past an unaligned end stay inside it on the NPU, so they do here."""
    return (nbytes + 31) // 32 * 32 + 32


class EmulatorUnavailable(EmulatorError):
    """No C++ compiler was found (set CXX or install g++)."""


class RoundMode(enum.IntEnum):
    """AscendC::RoundMode, same numbering as the C++ enum."""
    CAST_NONE = 0
    CAST_RINT = 1
    CAST_FLOOR = 2
    CAST_CEIL = 3
    CAST_ROUND = 4
    CAST_TRUNC = 5
    CAST_ODD = 6


def find_compiler() -> str | None:
    """Path of the C++ compiler ($CXX or g++), or None."""
    return shutil.which(os.environ.get("CXX", "g++"))


def compiler_available() -> bool:
    return find_compiler() is not None


def cache_dir() -> Path:
    root = os.environ.get("TREX_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "trex"
    path = base / "emulator"
    path.mkdir(parents=True, exist_ok=True)
    return path


DEFAULT_CACHE_LIMIT_MB = 256


def cache_limit_bytes() -> int:
    """The compile cache's size limit: $TREX_EMU_CACHE_MB megabytes (default 256; 0 = keep nothing
    but the entry just built)."""
    text = os.environ.get("TREX_EMU_CACHE_MB", str(DEFAULT_CACHE_LIMIT_MB))
    try:
        mb = float(text)
    except ValueError:
        raise EmulatorError(f"TREX_EMU_CACHE_MB={text!r} is not a number of megabytes; set e.g. 256") from None
    if mb < 0:
        raise EmulatorError(f"TREX_EMU_CACHE_MB={text!r} is negative; set a size in megabytes, e.g. 256")
    return int(mb * (1 << 20))


def _cache_entries(root: Path) -> dict[str, list[Path]]:
    """Cache files grouped by entry: a kernel's k_<key>.{cpp,so} (plus stray temporaries), a PCH directory."""
    entries: dict[str, list[Path]] = {}
    for path in root.iterdir():
        if path.is_dir():
            entries[path.name] = [f for f in path.rglob("*") if f.is_file()] + [path]
        else:
            entries.setdefault(path.name.split(".", 1)[0], []).append(path)
    return entries


def _stat(f: Path) -> os.stat_result | None:
    """A cache file's stat, or None when another process removed it meanwhile."""
    try:
        return f.stat()
    except OSError:
        return None


def _entry_size(files: list[Path]) -> int:
    return sum(st.st_size for f in files if f.is_file() and (st := _stat(f)))


def _entry_last_use(files: list[Path]) -> float:
    """The newest mtime of the entry's files (a directory's own mtime changes when a file is added)."""
    times = [st.st_mtime for f in files if f.is_file() and (st := _stat(f))]
    if times:
        return max(times)
    st = _stat(files[-1])
    return st.st_mtime if st else 0.0


def _touch(path: Path) -> None:
    """Mark a cache entry used (its mtime is the LRU clock; atime is often disabled)."""
    try:
        os.utime(path)
    except OSError:
        pass


# Other processes share the cache (parallel test runs, corpus workers): an entry used in the last
# EVICT_GRACE_S seconds may be about to be loaded by one of them, and a temporary younger than
# TEMP_GRACE_S is another compile's output in progress (deleting it failed that compile with
# FileNotFoundError on its *.so.tmp). Eviction leaves both; clear_cache removes everything.
EVICT_GRACE_S = 120.0
TEMP_GRACE_S = 3600.0


def _in_use(files: list[Path], now: float) -> bool:
    for f in files:
        st = _stat(f)
        if st and f.name.endswith(".tmp") and now - st.st_mtime < TEMP_GRACE_S:
            return True
    return now - _entry_last_use(files) < EVICT_GRACE_S


def evict_cache(limit_bytes: int | None = None, keep: Iterable[Path] = (), grace: bool = True) -> int:
    """Remove least-recently-used cache entries until the cache is at most `limit_bytes` (default
    cache_limit_bytes()); entries holding a path in `keep` stay, and with `grace` so do entries used
    in the last EVICT_GRACE_S seconds or holding a temporary younger than TEMP_GRACE_S (another
    process's compile). Returns the bytes freed."""
    root = cache_dir()
    limit = cache_limit_bytes() if limit_bytes is None else limit_bytes
    keep_names = {Path(k).resolve() for k in keep}
    entries = _cache_entries(root)
    sizes = {name: _entry_size(files) for name, files in entries.items()}
    total = sum(sizes.values())
    freed = 0
    now = time.time()
    for name in sorted(entries, key=lambda n: _entry_last_use(entries[n])):
        if total <= limit:
            break
        files = entries[name]
        if any(f.resolve() in keep_names for f in files) or (grace and _in_use(files, now)):
            continue
        for f in sorted(files, key=lambda f: -len(f.parts)):  # files before their directory
            try:
                f.rmdir() if f.is_dir() else f.unlink()
            except OSError:
                pass  # another process removed it, or a PCH directory is being rebuilt
        total -= sizes[name]
        freed += sizes[name]
    return freed


def clear_cache() -> int:
    """Delete every compiled kernel and precompiled header of the emulator cache; bytes freed.
    Libraries already loaded in this process keep working (the files are unlinked, not unmapped)."""
    freed = evict_cache(0, grace=False)
    _LOADED.clear()
    return freed


_COMPILER_ID: dict[str, str] = {}


def _compiler_identity(cxx: str) -> str:
    if cxx not in _COMPILER_ID:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=False)
        _COMPILER_ID[cxx] = cxx + "\n" + out.stdout.strip()
    return _COMPILER_ID[cxx]


def _headers_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(INCLUDE_DIR.rglob("*.h")):
        h.update(str(path.relative_to(INCLUDE_DIR)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _local_includes_digest(source: str, source_dir: Path | None) -> str:
    """Hash of files the kernel includes with quotes from its own directory (one level)."""
    h = hashlib.sha256()
    if source_dir is None:
        return h.hexdigest()
    for name in re.findall(r'#\s*include\s*"([^"]+)"', source):
        path = source_dir / name
        if path.is_file():
            h.update(name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _pch_key(cxx: str, pch_flags: list[str], include_dir: Path) -> str:
    """The PCH cache key: headers, flags, compiler, and the header directory, because the forwarder
    next to the PCH names that directory by absolute path (a PCH made by another checkout, since
    moved or deleted, must not be reused)."""
    return hashlib.sha256("\0".join([_headers_digest(), " ".join(pch_flags), _compiler_identity(cxx),
                                     str(include_dir)]).encode()).hexdigest()[:24]


def _precompiled_header_dir(cxx: str, flags: list[str]) -> Path | None:
    """A directory holding kernel_operator.h.gch built with `flags` (parsing the headers is a third
    of a kernel's compile time). None when disabled (TREX_EMU_NO_PCH=1) or when building it fails;
    g++ falls back to the plain headers whenever the PCH does not apply."""
    if os.environ.get("TREX_EMU_NO_PCH") == "1":
        return None
    pch_flags = [f for f in flags if f != "-shared"]
    pch_dir = cache_dir() / f"pch_{_pch_key(cxx, pch_flags, INCLUDE_DIR)}"
    gch = pch_dir / "kernel_operator.h.gch"
    if gch.exists():
        _touch(gch)
        return pch_dir
    pch_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=pch_dir, prefix="kernel_operator.h.", suffix=".gch.tmp")
    os.close(fd)
    cmd = [cxx, *pch_flags, f"-I{INCLUDE_DIR}", "-x", "c++-header", str(INCLUDE_DIR / "kernel_operator.h"), "-o", tmp]
    if subprocess.run(cmd, capture_output=True, text=True, check=False).returncode != 0:
        Path(tmp).unlink(missing_ok=True)   # g++ removes its own output when it fails
        return None
    # g++ only uses a .gch for the first #include; a later #include "kernel_operator.h" (from another
    # header) then looks for the header itself in this directory: forward it (the guard makes it a no-op).
    _atomic_write(pch_dir / "kernel_operator.h",
                  f'#include "{INCLUDE_DIR / "kernel_operator.h"}"  // forwarder next to the PCH\n'.encode())
    os.replace(tmp, gch)
    return pch_dir


def _entry_point(sig: KernelSignature) -> str:
    """C++ entry point `trex_emu_launch__<name>(block_dim, args)` for one kernel. A template kernel
    (ASCENDC_TPL_*) gets one only when the ASCENDC_TPL header is in the unit: the entry point runs the
    instantiation whose template arguments encode to the launch's tiling key (trex_tpl::Dispatch)."""
    call_args = []
    for i, p in enumerate(sig.params):
        if p.is_pointer:
            call_args.append(f"({p.ctype_text})(*static_cast<void* const*>(args[{i}]))")
        else:
            call_args.append(f"*static_cast<const {p.scalar_type}*>(args[{i}])")
    head = (f'extern "C" __attribute__((visibility("default"))) int trex_emu_launch__{sig.name}'
            f"(uint32_t block_dim, void* const* args) {{\n  (void)args;\n")
    if not sig.template_params:
        return head + (f'  return trex_emu_run("{sig.name}", block_dim, [&]() {{ {sig.name}({", ".join(call_args)}); }});\n'
                       f"}}\n")
    targs = []
    for i, t in enumerate(sig.template_params):
        value = f"::trex_tpl::Value(trex_tpl_decl, trex_tpl_sel, K, {i})"
        targs.append(f"::trex_tpl::DType<{value}>" if t.is_type else f"static_cast<{t.ctype}>({value})")
    n = len(sig.template_params)
    return (f"#ifdef TREX_TPL_HEADER\n"
            f"static_assert(sizeof(trex_tpl_decl) / sizeof(trex_tpl_decl[0]) == {n}, \"template kernel {sig.name} has "
            f"{n} template parameters; its ASCENDC_TPL_ARGS_DECL must declare as many, in the same order\");\n"
            + head +
            f'  return trex_emu_run("{sig.name}", block_dim, [&]() {{\n'
            f"    ::trex_tpl::Dispatch<::trex_tpl::NumCombos(trex_tpl_decl, trex_tpl_sel)>(\"{sig.name}\", trex_tpl_decl, "
            f"trex_tpl_sel, [&](auto k) {{\n"
            f"      constexpr uint64_t K = decltype(k)::value;\n"
            f"      {sig.name}<{', '.join(targs)}>({', '.join(call_args)});\n"
            f"    }});\n  }});\n}}\n#endif\n")


class TensorList:
    """A list (dynamic) input: the kernel gets one GM_ADDR pointing to CANN's ListTensor block, which
    ListTensorDesc reads (docs/emulator.md); every tensor is a GM buffer of its own, named `param[i]`
    in bounds messages. All tensors must have the same number of dimensions (the block has one dim)."""

    def __init__(self, tensors: Sequence[Any], shapes: Sequence[Sequence[int]] | None = None):
        self.tensors = list(tensors)
        if not self.tensors:
            raise ValueError("TensorList needs at least one tensor")
        self.shapes = [tuple(int(d) for d in s) for s in shapes] if shapes is not None else \
            [tuple(int(d) for d in t.shape) for t in self.tensors]
        if len({len(s) for s in self.shapes}) != 1:
            raise ValueError(f"TensorList: tensors of ranks {sorted({len(s) for s in self.shapes})}; the ListTensor "
                             f"layout has one dim for all tensors, so give them the same number of dimensions")

    def block(self, addresses: Sequence[int]) -> ctypes.Array:
        """The ListTensor block (uint64 words): dataPtrOffset, per tensor [dim | index << 32] and its shape
        (dim 0: [count << 32] and 0xffffffff), then the data pointers (asc-devkit
        impl/basic_api/dav_c220/kernel_operator_list_tensor_impl.h, ListTensorDecode)."""
        dim = len(self.shapes[0])
        if dim == 0:
            words = [24, len(addresses) << 32, 0xFFFFFFFF]
        else:
            words = [8 + len(addresses) * (1 + dim) * 8]
            for i, shape in enumerate(self.shapes):
                words += [dim | i << 32, *shape]
        return (ctypes.c_uint64 * (len(words) + len(addresses)))(*words, *addresses)


_RUNTIME_ONLY_SOURCE = "// runtime-only library: conversions and counters, no kernels\n"


@dataclass
class KernelLibrary:
    """A compiled kernel source: a loaded shared library and the kernels' signatures."""
    path: Path
    kernels: dict[str, KernelSignature]
    compile_log: str = ""
    _dll: ctypes.CDLL = field(init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self._dll = ctypes.CDLL(str(self.path))
        self._dll.trex_emu_last_error.restype = ctypes.c_char_p
        self._dll.trex_emu_counters_json.restype = ctypes.c_char_p
        self._dll.trex_emu_add_gm_region.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_uint64,
                                                     ctypes.c_uint64]
        self._dll.trex_emu_set_device_bounds.argtypes = [ctypes.c_int]
        self._dll.trex_emu_configure.argtypes = [ctypes.c_uint32, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        self._dll.trex_emu_set_tiling_key.argtypes = [ctypes.c_uint64]
        self._dll.trex_emu_convert.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                               ctypes.c_void_p, ctypes.c_uint64]
        if self._dll.trex_emu_abi_version() != ABI_VERSION:
            raise EmulatorError(f"{self.path}: emulator ABI {self._dll.trex_emu_abi_version()} != {ABI_VERSION}; "
                                f"clear the cache directory {cache_dir()}")

    # ---- launching ----
    def launch(self, kernel: str | None, block_dim: int, *args: Any, ub_bytes: int = DEFAULT_UB_BYTES,
               ub_fill: int = DEFAULT_UB_FILL, isolate: bool = False, check_races: bool = True,
               check_sync: bool = False, tiling_key: int = 0, gm_padding: bool = True,
               bounds: str = "strict") -> dict[str, Any]:
        """Run `kernel` on `block_dim` blocks (one after another) and return the counters.

        GM_ADDR/pointer parameters take torch CPU tensors (contiguous), numpy arrays, bytearray /
        bytes / ctypes structures (e.g. a tiling struct), or None. Scalar parameters take numbers.
        Each buffer is registered as a GM region, so out-of-bounds DataCopy/GetValue/SetValue raise.
        With check_races, two blocks touching the same GM bytes (at least one writing, atomic adds
        excepted) raise: on the NPU blocks run in parallel. With check_sync, UB accesses are checked
        against AscendC's pipe synchronisation rules (missing PipeBarrier / flags / queue hand-offs).
        tiling_key: what TILING_KEY_IS(k) compares against (the host tiling function's SetTilingKey).
        gm_padding: each buffer is bounds-checked as the device allocation aclrtMalloc makes for it
        (size rounded up to 32 B, plus 32 B; the kernel runs on a zero-padded copy, copied back after);
        False checks the exact byte size.
        bounds: "strict" (default) refuses every access outside the buffer it belongs to and every UB
        allocation past the UB, as CANN's CPU-debug build asserts. "device" fails only on what faults or
        corrupts memory on the NPU (a UB access past the physical UB, a GM write outside an allocation);
        a TPipe handing out more than the UB, a UB operand running into a neighbouring buffer and a GM
        read of up to GM_GUARD_BYTES past an allocation (poisoned bytes) are returned as counters
        ["findings"], and the kernel's output decides.
        """
        sig = self._signature(kernel)
        if not isinstance(block_dim, int) or block_dim < 1:
            raise ValueError(f"block_dim must be a positive int, got {block_dim!r}")
        if len(args) != len(sig.params):
            raise TypeError(f"kernel {sig.describe()} takes {len(sig.params)} arguments, got {len(args)}")
        if not isinstance(tiling_key, int) or not 0 <= tiling_key < 1 << 64:
            raise ValueError(f"tiling_key must be an int in [0, 2**64), got {tiling_key!r}")
        if bounds not in BOUNDS_MODES:
            raise ValueError(f"bounds must be one of {BOUNDS_MODES}, got {bounds!r}")
        options = (int(ub_bytes), int(ub_fill), int(bool(check_races)), int(bool(check_sync)), tiling_key,
                   int(bool(gm_padding)), int(bounds == "device"))
        if isolate:
            return self._launch_isolated(sig, block_dim, args, options)
        return self._launch(sig, block_dim, args, options)

    def _signature(self, kernel: str | None) -> KernelSignature:
        if kernel is None:
            if len(self.kernels) != 1:
                raise ValueError(f"the source defines kernels {sorted(self.kernels)}; name the one to launch")
            return next(iter(self.kernels.values()))
        if kernel not in self.kernels:
            raise KeyError(f"no __global__ kernel named {kernel!r} in the source (found: {sorted(self.kernels)})")
        return self.kernels[kernel]

    def _launch(self, sig: KernelSignature, block_dim: int, args: Sequence[Any],
                options: tuple[int, ...]) -> dict[str, Any]:
        keep_alive: list[Any] = []
        slots: list[Any] = []
        regions: list[tuple[str, int, int, int]] = []  # (name, address, bytes, poisoned guard bytes after)
        copies: list[tuple[int, Any, int, int]] = []  # (caller address, padded copy, bytes, allocation) to copy back
        padding, device_bounds = bool(options[5]), bool(options[6])
        guard = GM_GUARD_BYTES if device_bounds else 0
        def gm_buffer(name: str, value: Any) -> int:
            address, nbytes, owner = _buffer_address(name, value)
            keep_alive.append(owner)
            guarded = 0  # poisoned bytes after this buffer's copy (only copies have them)
            if address and nbytes is not None and (padding or device_bounds):
                # One padded copy per distinct buffer: a tensor passed twice (an in-place op's input and
                # output, CANN's "ref" tensors) stays one allocation the two pointers alias, as on the NPU.
                shared = next((c for c in copies if c[0] == address and c[2] == nbytes), None)
                if shared is None:
                    allocation = device_allocation_bytes(nbytes) if padding else nbytes
                    copy = (ctypes.c_char * (allocation + guard))()
                    if guard:
                        ctypes.memset(ctypes.addressof(copy) + allocation, GM_GUARD_FILL, guard)
                    ctypes.memmove(copy, address, nbytes)
                    shared = (address, copy, nbytes, allocation)
                    copies.append(shared)
                address, nbytes, guarded = ctypes.addressof(shared[1]), shared[3], guard
            if address and nbytes is not None:
                regions.append((name, address, nbytes, guarded))
            return address

        for param, value in zip(sig.params, args):
            if param.is_pointer and isinstance(value, TensorList):
                block = value.block([gm_buffer(f"{param.name}[{i}]", t) for i, t in enumerate(value.tensors)])
                keep_alive.append(block)
                regions.append((param.name, ctypes.addressof(block), ctypes.sizeof(block), 0))
                slot = ctypes.c_void_p(ctypes.addressof(block))
            elif param.is_pointer:
                slot = ctypes.c_void_p(gm_buffer(param.name, value))
            else:
                slot = _scalar(param.name, param.scalar_type, param.ctypes_type, value)
            slots.append(slot)
        argv = (ctypes.c_void_p * max(1, len(slots)))(*[ctypes.addressof(s) for s in slots])
        try:
            fn = getattr(self._dll, f"trex_emu_launch__{sig.name}")
        except AttributeError:
            raise EmulatorError(f"{sig.name} is a template kernel without ASCENDC_TPL_ARGS_DECL / ASCENDC_TPL_SEL "
                                f"(ascendc/host_api/tiling/template_argument.h): the emulator instantiates template "
                                f"kernels only for the combinations those declare") from None
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_uint32, ctypes.c_void_p]
        with self._lock:
            self._dll.trex_emu_configure(*options[:4])
            self._dll.trex_emu_set_tiling_key(options[4])
            self._dll.trex_emu_set_device_bounds(options[6])
            self._dll.trex_emu_reset_counters()
            self._dll.trex_emu_clear_gm_regions()
            for name, address, nbytes, guard_bytes in regions:
                self._dll.trex_emu_add_gm_region(name.encode(), address, nbytes, guard_bytes)
            rc = fn(block_dim, argv)
            self._dll.trex_emu_clear_gm_regions()
            for address, copy, nbytes, _ in copies:
                ctypes.memmove(address, copy, nbytes)
            if rc != 0:
                message = self._dll.trex_emu_last_error().decode(errors="replace")
                if options[5] and "outside every kernel argument buffer" in message:
                    message += (" (each buffer is padded as a device allocation is: its size rounded up to 32 B, "
                                "plus 32 B)")
                raise EmulatorError(message)
            return json.loads(self._dll.trex_emu_counters_json().decode())

    def _launch_isolated(self, sig: KernelSignature, block_dim: int, args: Sequence[Any],
                         options: tuple[int, ...]) -> dict[str, Any]:
        """Fork; the child runs on shared-memory copies of every buffer; results are copied back."""
        shared: list[tuple[Any, mmap.mmap, int]] = []
        child_args: list[Any] = []
        def share(name: str, value: Any) -> _MmapArg:
            view = _host_view(name, value)
            nbytes = view.nbytes
            buf = mmap.mmap(-1, max(1, nbytes))
            buf[:nbytes] = view.tobytes()
            shared.append((view, buf, nbytes))
            return _MmapArg(buf, nbytes)

        for param, value in zip(sig.params, args):
            if param.is_pointer and isinstance(value, TensorList):
                child_args.append(TensorList([share(f"{param.name}[{i}]", t) for i, t in enumerate(value.tensors)],
                                             shapes=value.shapes))
            elif param.is_pointer and value is not None and not isinstance(value, int):
                child_args.append(share(param.name, value))
            else:
                child_args.append(value)
        result = mmap.mmap(-1, 1 << 20)
        pid = os.fork()
        if pid == 0:  # child: never return into the caller's code
            import faulthandler
            faulthandler.disable()  # a crash is reported by the parent, not dumped here
            code = 0
            try:
                out = {"ok": self._launch(sig, block_dim, child_args, options)}
            except EmulatorError as e:
                out = {"error": str(e)}
            except BaseException as e:  # noqa: BLE001 - reported to the parent, which raises
                out = {"error": f"{type(e).__name__}: {e}"}
                code = 1
            data = json.dumps(out).encode()[: (1 << 20) - 8]
            result[:8] = len(data).to_bytes(8, "little")
            result[8:8 + len(data)] = data
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            sig_no = os.WTERMSIG(status)
            raise EmulatorError(f"{sig.name}: the kernel crashed the emulator process with "
                                f"{signal.Signals(sig_no).name} (a raw out-of-bounds pointer access?)")
        size = int.from_bytes(result[:8], "little")
        out = json.loads(result[8:8 + size].decode()) if size else {"error": "child produced no result"}
        if "error" in out:
            raise EmulatorError(out["error"])
        for view, buf, nbytes in shared:
            view[...] = _np_from_bytes(buf[:nbytes], view)
        return out["ok"]

    # ---- conversions (tests and tools) ----
    def convert(self, values: Any, dst: str, mode: RoundMode | int) -> Any:
        """Convert a torch tensor with the emulator's Cast rounding (float<->half/bf16/int32)."""
        import torch
        kinds = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.int32: 3}
        names = {"float": torch.float32, "float32": torch.float32, "half": torch.float16, "float16": torch.float16,
                 "bfloat16": torch.bfloat16, "bfloat16_t": torch.bfloat16, "int32": torch.int32,
                 "int32_t": torch.int32}
        dst_dtype = names[dst] if isinstance(dst, str) else dst
        src = values.contiguous()
        if src.dtype not in kinds or dst_dtype not in kinds:
            raise ValueError(f"convert supports {sorted(map(str, kinds))}, got {src.dtype} -> {dst_dtype}")
        out = torch.empty(src.shape, dtype=dst_dtype)
        with self._lock:
            rc = self._dll.trex_emu_convert(kinds[src.dtype], kinds[dst_dtype], int(mode), src.data_ptr(),
                                            out.data_ptr(), src.numel())
        if rc != 0:
            raise ValueError(f"no emulator conversion {src.dtype} -> {dst_dtype}")
        return out


@dataclass
class _MmapArg:
    buf: mmap.mmap
    nbytes: int


def _host_view(name: str, value: Any):
    """A writable numpy view of a buffer argument's memory."""
    import numpy as np
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        torch = None
    if torch is not None and isinstance(value, torch.Tensor):
        _check_tensor(name, value)
        return value.reshape(-1).view(torch.uint8).numpy() if value.numel() else np.zeros(0, np.uint8)
    if isinstance(value, np.ndarray):
        return value.reshape(-1).view(np.uint8)
    if isinstance(value, (bytearray, memoryview)):
        return np.frombuffer(value, dtype=np.uint8)
    if isinstance(value, bytes):
        return np.frombuffer(bytearray(value), dtype=np.uint8)
    if isinstance(value, ctypes.Structure | ctypes.Array):
        return np.frombuffer(value, dtype=np.uint8)
    raise TypeError(f"argument {name}: cannot pass {type(value).__name__} as GM memory")


def _np_from_bytes(data: bytes, like):
    import numpy as np
    return np.frombuffer(data, dtype=np.uint8).reshape(like.shape)


def _check_tensor(name: str, t: Any) -> None:
    if t.device.type != "cpu":
        raise ValueError(f"argument {name}: the emulator runs on host memory; move the tensor to CPU (got {t.device})")
    if not t.is_contiguous():
        raise ValueError(f"argument {name}: tensor is not contiguous; pass .contiguous() (kernels see raw GM)")


def _buffer_address(name: str, value: Any) -> tuple[int, int | None, Any]:
    """(address, size in bytes or None if unknown, object to keep alive) of a GM argument."""
    import numpy as np
    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    if value is None:
        return 0, None, None
    if isinstance(value, _MmapArg):
        holder = ctypes.c_char.from_buffer(value.buf)
        return ctypes.addressof(holder), value.nbytes, holder
    if torch is not None and isinstance(value, torch.Tensor):
        _check_tensor(name, value)
        return value.data_ptr(), value.numel() * value.element_size(), value
    if isinstance(value, np.ndarray):
        if not value.flags["C_CONTIGUOUS"]:
            raise ValueError(f"argument {name}: numpy array is not C-contiguous")
        return value.ctypes.data, value.nbytes, value
    if isinstance(value, bytearray) and len(value):  # passed in place: the kernel's writes land in it
        buf = (ctypes.c_char * len(value)).from_buffer(value)
        return ctypes.addressof(buf), len(value), buf
    if isinstance(value, (bytes, bytearray, memoryview)):  # read-only data (a tiling blob): copied
        data = bytes(value)
        buf = ctypes.create_string_buffer(data, max(1, len(data)))
        return ctypes.addressof(buf), len(data), buf
    if isinstance(value, ctypes.Structure | ctypes.Array):
        return ctypes.addressof(value), ctypes.sizeof(value), value
    if isinstance(value, int):
        return value, None, None  # raw address: not bounds-checked
    raise TypeError(f"argument {name}: cannot pass {type(value).__name__} as GM memory; use a torch tensor, "
                    f"numpy array, bytes/bytearray or ctypes structure")


def _scalar(name: str, ctype_name: str | None, ctype: type, value: Any) -> Any:
    try:
        import torch
        if isinstance(value, torch.Tensor):
            if value.numel() != 1:
                raise ValueError(f"argument {name} ({ctype_name}) needs a scalar, got a tensor of shape {tuple(value.shape)}")
            value = value.item()
    except ImportError:  # pragma: no cover
        pass
    if hasattr(value, "item") and not isinstance(value, (int, float, bool)):
        value = value.item()  # numpy scalars
    if ctype in (ctypes.c_float, ctypes.c_double):
        return ctype(float(value))
    if ctype is ctypes.c_bool:
        return ctype(bool(value))
    if isinstance(value, float) and not float(value).is_integer():
        raise ValueError(f"argument {name} is {ctype_name}; got non-integral {value!r}")
    ivalue = int(value)
    bits = ctypes.sizeof(ctype) * 8
    signed = ctype(-1).value == -1
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not lo <= ivalue <= hi:
        raise ValueError(f"argument {name} ({ctype_name}) = {ivalue} is outside [{lo}, {hi}]")
    return ctype(ivalue)


_LOADED: dict[str, KernelLibrary] = {}
# C library functions the emulator's headers declare at global scope (<cmath>, <cstdlib>, <cstring>):
# a kernel with one of these names (op `Asinh` -> kernel `asinh`) is renamed by a macro after the headers.
_C_LIBRARY_NAMES = frozenset("""
abs acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh div erf erfc exp exp2 expm1 fabs fdim
floor fma fmax fmin fmod frexp hypot ilogb ldexp lgamma llrint llround log log10 log1p log2 logb lrint lround
modf nan nearbyint nextafter pow remainder remquo rint round scalbn sin sinh sqrt tan tanh tgamma trunc
atoi atol abort exit free malloc calloc realloc qsort rand srand labs ldiv memcpy memset memmove strlen
""".split())
_SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".asc")


def _looks_like_path(source: str) -> bool:
    """A one-line string naming a file (existing, or with a source suffix) rather than source text."""
    if "\n" in source or len(source) >= 4096:
        return False
    return Path(source).is_file() or source.strip().endswith(_SOURCE_SUFFIXES)
_LOAD_LOCK = threading.Lock()


def compile_kernel(source: str | os.PathLike, *, extra_flags: Iterable[str] = (),
                   include_dirs: Iterable[str | os.PathLike] = (), prelude: str = "") -> KernelLibrary:
    """Compile an AscendC kernel source (text or file path) against the emulator headers.

    `prelude`: C++ placed before the source (op projects: the op_host tiling header and the name of
    its struct, see op_project.py); it must start with `#include "kernel_operator.h"` to keep the PCH.

    The shared library is cached under $TREX_CACHE_DIR/emulator (default ~/.cache/trex/emulator), keyed
    by the source, the entry points, every emulator header, the flags and the compiler version.
    """
    cxx = find_compiler()
    if cxx is None:
        raise EmulatorUnavailable("no C++ compiler found: install g++ or set CXX to a C++17 compiler")
    source_path: Path | None = None
    if isinstance(source, os.PathLike) or _looks_like_path(source):
        if not Path(source).is_file():
            raise FileNotFoundError(f"kernel source {str(source)!r} does not exist; pass an existing file or the source text")
        source_path = Path(source).resolve()
        text = source_path.read_text()
    else:
        text = str(source)
    kernels = parse_kernel_signatures(text)
    entries = "".join(_entry_point(sig) for sig in kernels.values())
    clashes = sorted(set(kernels) & _C_LIBRARY_NAMES)
    if clashes:  # CANN's kernel compile has no libm in scope; here <cmath> declares these at global scope
        prelude = (prelude or '#include "kernel_operator.h"') + "".join(
            f"\n#define {name} trex_kernel_{name}  // kernel named like a C library function" for name in clashes)
    display = str(source_path) if source_path else "kernel.cpp"
    unit = (f'{prelude}\n#line 1 "{display}"\n{text}\n'
            f'#line 1 "trex_emu_entry_points"\n#include "trex_emu/runner_abi.h"\n{entries}')
    incs = [str(INCLUDE_DIR)] + ([str(source_path.parent)] if source_path else []) + [str(Path(d)) for d in include_dirs]
    flags = list(BASE_FLAGS) + list(uninitialized_locals_flags(cxx)) + list(extra_flags)
    key_material = "\0".join([f"abi{ABI_VERSION}", unit, _headers_digest(), " ".join(flags), "\0".join(incs[1:]),
                              _compiler_identity(cxx),
                              _local_includes_digest(text, source_path.parent if source_path else None)])
    key = hashlib.sha256(key_material.encode()).hexdigest()[:32]
    with _LOAD_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        out_dir = cache_dir()
        so_path = out_dir / f"k_{key}.so"
        log = ""
        if not so_path.exists():
            cpp_path = out_dir / f"k_{key}.cpp"
            _atomic_write(cpp_path, unit.encode())
            fd, tmp_so = tempfile.mkstemp(dir=out_dir, prefix=f"k_{key}.", suffix=".so.tmp")
            os.close(fd)
            pch_dir = _precompiled_header_dir(cxx, flags)
            search = ([str(pch_dir)] if pch_dir else []) + incs  # the .gch directory must come first
            cmd = [cxx, *flags, *[f"-I{d}" for d in search], str(cpp_path), "-o", tmp_so]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            log = proc.stderr
            if proc.returncode != 0:
                os.unlink(tmp_so)
                raise EmulatorCompileError(f"g++ failed to compile {display} against the AscendC emulator "
                                           f"(exit {proc.returncode}): {summarize_compile_errors(proc.stderr)}",
                                           log=proc.stderr)
            os.replace(tmp_so, so_path)
            evict_cache(keep=[so_path] + ([pch_dir / "kernel_operator.h.gch"] if pch_dir else []))
        else:
            _touch(so_path)
        lib = KernelLibrary(path=so_path, kernels=kernels, compile_log=log)
        _LOADED[key] = lib
        return lib


def run_kernel(source: str | os.PathLike, kernel: str | None, block_dim: int, *args: Any,
               **launch_options: Any) -> dict[str, Any]:
    """compile_kernel(source).launch(kernel, block_dim, *args): the one-call entry point."""
    return compile_kernel(source).launch(kernel, block_dim, *args, **launch_options)


def runtime_library() -> KernelLibrary:
    """A library with no kernels, for conversions (KernelLibrary.convert)."""
    return compile_kernel(_RUNTIME_ONLY_SOURCE)
