"""Where a candidate's AscendC kernel runs: a throw-away worker process it cannot use to reach the verdict.

The search and its judge (trex.tuning.verify) never load a candidate's library: a load-time
constructor, a raw pointer or a counter reset would run with their privileges. Instead

* `build(source, opt)` compiles the kernel with g++ into this process's private directory without
  loading it (the emulator's `compile_kernel` loads what it builds, and its shared cache is a file any
  kernel can overwrite) and records the library's SHA-256: the `Binary` every later run must load.
* `run(binary, launches)` starts one worker (`python -I` on the absolute path of
  trex/tuning/kernel_worker.py, the package this process imported: never the working directory,
  never $PYTHONPATH; a clean environment) that checks the library's hash before loading it, runs the
  launches and writes their buffers and counters to a result file. The worker reports over a pipe on a
  dedicated fd: exactly one frame `TREX-RESULT <nonce> <sha256 of the result file>`, with a nonce this
  run drew. The kernel's stdout/stderr go to a log (a debug printf is harmless; a forged
  `{"ok": true}` is never read). What comes back is data — output bytes and counters — that the judge
  checks against its own references and its own byte counts; no verdict is ever read from the worker.
* With bubblewrap (`bwrap`, found on PATH; `TREX_TUNING_SANDBOX=off` disables it) the worker runs with
  the whole file system read-only except its own I/O directory, in its own PID, network and IPC
  namespaces: it cannot rewrite its binary, the package, the store or the working directory, or
  signal the search. Without bwrap the hash checks still catch a rewritten binary at the next run;
  writes elsewhere (the installed package itself) are then possible, which docs/tuning.md states.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

WORKER = Path(__file__).resolve().parent / "kernel_worker.py"
PACKAGE_ROOT = WORKER.parents[2]          # the directory holding the trex package this process imported
FRAME = "TREX-RESULT"
SANDBOX_ENV = "TREX_TUNING_SANDBOX"


class SandboxError(RuntimeError):
    """The worker's answer cannot be trusted (no frame, two frames, a wrong nonce or result hash, a
    changed binary) or the worker died; the message says which. A candidate that causes one is rejected."""


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def bwrap() -> str | None:
    """The bubblewrap executable the workers run under, or None (not installed, or switched off)."""
    if os.environ.get(SANDBOX_ENV, "").lower() in ("off", "0", "none"):
        return None
    return shutil.which("bwrap")


_PRIVATE: dict = {}
_LOCK = threading.RLock()


def private_dir() -> Path:
    """This process's directory for built libraries and worker I/O (mode 0700, removed at exit)."""
    with _LOCK:
        if "dir" not in _PRIVATE:
            d = Path(tempfile.mkdtemp(prefix="trex-tune-"))
            _PRIVATE["dir"] = d
            atexit.register(shutil.rmtree, d, True)
        return _PRIVATE["dir"]


@dataclass(frozen=True)
class Binary:
    """A built candidate library: its path, content hash, source (for the kernel signatures) and flags."""
    path: str
    sha256: str
    source: str
    source_sha256: str


_BUILT: dict = {}


def source_sha256(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def build(source: str, opt: str = "-O0") -> Binary:
    """Compile `source` against the emulator headers into the private directory, without loading it.
    Cached in memory per (source, flags): the same text is built once per process."""
    from trex.codegen_ascendc.emulator import runner
    from trex.codegen_ascendc.emulator.signature import parse_kernel_signatures

    key = (source, opt)
    with _LOCK:
        hit = _BUILT.get(key)
    if hit is not None:
        return hit
    cxx = runner.find_compiler()
    if cxx is None:
        raise runner.EmulatorUnavailable("no C++ compiler found: install g++ or set CXX to a C++17 compiler")
    kernels = parse_kernel_signatures(source)
    # the translation unit compile_kernel builds: the kernel, then the emulator's C ABI and one entry
    # point per kernel (runner._entry_point), so the worker can load it with KernelLibrary
    unit = (f'#line 1 "kernel.cpp"\n{source}\n#line 1 "trex_emu_entry_points"\n'
            f'#include "trex_emu/runner_abi.h"\n' + "".join(runner._entry_point(s) for s in kernels.values()))
    flags = [*runner.BASE_FLAGS, opt]
    out = private_dir() / "bin"
    out.mkdir(exist_ok=True)
    fd, cpp = tempfile.mkstemp(dir=out, suffix=".cpp")
    with os.fdopen(fd, "w") as f:
        f.write(unit)
    so = cpp[:-4] + ".so"
    pch = _private_pch(cxx, flags)
    incs = ([str(pch)] if pch else []) + [str(runner.INCLUDE_DIR)]
    proc = subprocess.run([cxx, *flags, *[f"-I{d}" for d in incs], cpp, "-o", so], capture_output=True, text=True,
                          check=False)
    os.unlink(cpp)
    if proc.returncode != 0:
        raise runner.EmulatorCompileError(f"g++ failed to compile the candidate against the AscendC emulator "
                                          f"(exit {proc.returncode}):\n{proc.stderr[-8000:]}")
    digest = sha256_file(so)
    final = out / f"{digest}.so"
    os.replace(so, final)
    os.chmod(final, 0o500)
    b = Binary(str(final), digest, source, source_sha256(source))
    with _LOCK:
        _BUILT[key] = b
    return b


def _private_pch(cxx: str, flags: list) -> Path | None:
    """A precompiled kernel_operator.h of this process's own (parsing the headers is a third of a
    compile): the emulator's shared one lives in a cache any unsandboxed kernel could rewrite and other
    processes evict. None when g++ cannot build it (the plain headers are used)."""
    from trex.codegen_ascendc.emulator import runner
    with _LOCK:
        if "pch" in _PRIVATE:
            return _PRIVATE["pch"]
        d = private_dir() / "pch"
        d.mkdir(exist_ok=True)
        header = runner.INCLUDE_DIR / "kernel_operator.h"
        cmd = [cxx, *[f for f in flags if f != "-shared"], f"-I{runner.INCLUDE_DIR}", "-x", "c++-header", str(header),
               "-o", str(d / "kernel_operator.h.gch")]
        ok = subprocess.run(cmd, capture_output=True, text=True, check=False).returncode == 0
        if ok:
            # g++ uses the .gch for the first include only; later includes of the header find this forwarder
            (d / "kernel_operator.h").write_text(f'#include "{header}"  // forwarder next to the PCH\n')
        _PRIVATE["pch"] = d if ok else None
        return _PRIVATE["pch"]


@dataclass
class Launch:
    """One kernel launch: its argument buffers in signature order (bytes, or None for a null pointer),
    which of them the judge wants back, the core count and the emulator's check switches."""
    args: list
    cores: int
    check_sync: bool = True


def _env(io: Path) -> dict:
    return {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(io), "TMPDIR": str(io), "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}


def run(binary: Binary, kernel: str, launches: list[Launch], *, timeout_s: float = 300.0) -> list[dict]:
    """Run the launches in one fresh worker; per launch {"buffers": [bytes | None], "counters": dict}
    or {"error": message}. Raises SandboxError when the answer is not the worker's own (see module doc)."""
    if sha256_file(binary.path) != binary.sha256:
        raise SandboxError(f"the candidate's library {binary.path} changed after it was built "
                           f"(sha256 {binary.sha256[:16]}...): a kernel rewrote a binary")
    io = Path(tempfile.mkdtemp(dir=private_dir(), prefix="run-"))
    try:
        arrays = {f"l{i}_a{j}": np.frombuffer(a, dtype=np.uint8) for i, l in enumerate(launches)
                  for j, a in enumerate(l.args) if a is not None}
        np.savez(io / "request.npz", **arrays)
        nonce = secrets.token_hex(16)
        request = {"nonce": nonce, "library": binary.path, "sha256": binary.sha256, "source": binary.source,
                   "kernel": kernel, "io": str(io),
                   "launches": [{"cores": l.cores, "check_sync": l.check_sync,
                                 "args": [a is not None for a in l.args]} for l in launches]}
        rfd, wfd = os.pipe()
        cmd = [sys.executable, "-I", str(WORKER), str(wfd)]
        bw = bwrap()
        if bw:
            cmd = [bw, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", str(io), str(io),
                   "--unshare-all", "--die-with-parent", "--new-session", "--", *cmd]
        log = open(io / "worker.log", "wb")  # noqa: SIM115 - closed below
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=log, stderr=log, pass_fds=(wfd,),
                                    env=_env(io), cwd=str(io))
        finally:
            os.close(wfd)
        try:
            proc.stdin.write(json.dumps(request).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        frames = _read_frames(rfd, proc, timeout_s)
        code = proc.wait()
        log.close()
        if sha256_file(binary.path) != binary.sha256:
            raise SandboxError(f"the candidate's library {binary.path} was rewritten while it ran "
                               f"(a binary swap): rejected")
        tail = (io / "worker.log").read_bytes()[-1500:].decode(errors="replace")
        mine = [f for f in frames if f.startswith(FRAME + " ")]
        if len(mine) != 1:
            what = "no result frame" if not mine else f"{len(mine)} result frames (a forged one among them)"
            raise SandboxError(f"kernel worker: {what}; exit {code}; log: {tail}")
        # a nonce-bound frame from a worker that did not exit cleanly is not trusted either
        if code != 0:
            raise SandboxError(f"kernel worker: exit {code} after its frame; log: {tail}")
        parts = mine[0].split()
        if len(parts) != 3 or parts[1] != nonce:
            raise SandboxError("kernel worker: a result frame with a wrong nonce (forged): rejected")
        result = io / "result.npz"
        if not result.exists() or sha256_file(result) != parts[2]:
            raise SandboxError("kernel worker: the result file does not match the framed hash (written by "
                               "someone else after the worker): rejected")
        with np.load(result, allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta"]).decode())
            out = []
            for i, m in enumerate(meta["launches"]):
                if "error" in m:
                    out.append({"error": m["error"]})
                    continue
                bufs = [bytes(z[f"l{i}_a{j}"]) if f"l{i}_a{j}" in z.files else None
                        for j in range(len(launches[i].args))]
                out.append({"buffers": bufs, "counters": m["counters"]})
        if meta.get("fatal"):
            raise SandboxError(f"kernel worker: {meta['fatal']}")
        return out
    finally:
        shutil.rmtree(io, ignore_errors=True)


def _read_frames(fd: int, proc: subprocess.Popen, timeout_s: float) -> list[str]:
    import selectors
    import time
    data = b""
    deadline = time.monotonic() + timeout_s
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                proc.kill()
                proc.wait()
                raise SandboxError(f"kernel worker: no answer within {timeout_s:.0f} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            data += chunk
            if len(data) > 1 << 20:
                proc.kill()
                raise SandboxError("kernel worker: more than 1 MiB on the result channel (flooded)")
    finally:
        sel.close()
        os.close(fd)
    return [line for line in data.decode(errors="replace").splitlines() if line.strip()]
