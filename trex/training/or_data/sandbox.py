"""Sandboxed execution of (model-written) Gurobi-style solver code.

Contract (reused by trex.training.or_eval): ``execute_solver_code(code, limits=None) -> ExecutionResult``.
The program is Python using the gurobipy API; it builds a model (any variable name) and calls
``optimize()``.  Status and objective are read from the optimized model through a private pipe
(``sandbox_runner``), never parsed from what the program prints.

Isolation layers, each reported in ``ExecutionResult.enforced`` when active:

1. static check (``check_code_safety``): syntax, allow-listed imports, no eval/exec/open/
   __import__/getattr..., no dunder attribute access.  Rejects before anything runs.
2. a separate process per program: ``isolation="fork"`` (default) forks one fresh child per
   program from a warm ``python -I`` zygote that has pre-imported the solvers (the child is never
   reused); ``isolation="spawn"`` starts a brand-new ``python -I`` interpreter per program.
3. new session / process group; the whole group is SIGKILLed at the wall-time limit or when the
   program ends; any process left under the program's uid is killed too.
4. rlimits: CPU seconds, address space (warm-interpreter size + ``memory_mb``), file size, open
   files, processes (enforced because the program runs under its own unprivileged uid), no core.
5. privilege drop to a per-run uid (when started as root) + no_new_privs: other processes'
   /proc/<pid>/environ and the Python installation under /root become unreadable.
6. audit hook: no socket creation/connect, no fork/exec/subprocess/kill, no ctypes, no writes or
   file-system changes outside the program's temp dir, no reads of other processes' /proc.
7. network namespace: the zygote (or each spawned interpreter) runs under ``unshare -n`` when that
   works here (root or user namespaces), so there is no network interface at all.
8. minimal environment (PATH, HOME=temp dir, one thread for OMP/OpenBLAS/MKL); a stray
   ``GRB_LICENSE_FILE`` never reaches the program; gurobipy runs with Threads=1.

Solver backend: ``backend="auto"`` uses gurobipy when it imports and its license starts, else the
HiGHS shim (trex.training.or_data.gurobi_shim).  When gurobipy raises "model too large for the
size-limited license" (10010) or "no license" (10009), the program is re-run once on the shim and
``ExecutionResult.fallback_reason`` says why.
"""
from __future__ import annotations

import ast
import atexit
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from trex.training.or_data import sandbox_runner
from trex.training.or_data.sandbox_runner import ALLOWED_IMPORTS

RUNNER_PATH = Path(sandbox_runner.__file__).resolve()

# Names the static check refuses to see called or referenced (escape hatches out of the model API).
FORBIDDEN_NAMES = frozenset({
    "eval", "exec", "compile", "open", "__import__", "input", "breakpoint", "globals", "locals",
    "vars", "getattr", "setattr", "delattr", "exit", "quit", "help", "memoryview", "__builtins__",
    "__loader__", "__spec__", "classmethod", "staticmethod", "super", "type", "object",
})
MAX_CODE_CHARS = 100_000


@dataclass(frozen=True)
class SandboxLimits:
    """Limits for one program.  ``wall_s`` is the hard kill; ``cpu_s`` the CPU-time rlimit;
    ``memory_mb`` the address space the program may add; ``solver_time_limit_s`` is passed to the
    solver (defaults to ``wall_s - 1``) so that a slow MILP ends with status time_limit instead of
    being killed."""

    wall_s: float = 10.0
    cpu_s: int = 8
    memory_mb: int = 1024
    file_size_mb: int = 16
    max_open_files: int = 64
    max_processes: int = 8
    max_output_bytes: int = 65536
    max_solution_vars: int = 2000
    solver_time_limit_s: float | None = None
    backend: str = "auto"  # "auto" | "gurobipy" | "shim"
    isolation: str = "fork"  # "fork" (warm zygote, fresh child per program) | "spawn" (fresh interpreter)
    static_check: bool = True
    audit_hook: bool = True
    drop_privileges: bool = True
    network_namespace: bool = True

    def __post_init__(self) -> None:
        if self.backend not in ("auto", "gurobipy", "shim"):
            raise ValueError(f"SandboxLimits.backend={self.backend!r}: use 'auto', 'gurobipy' or 'shim'")
        if self.isolation not in ("fork", "spawn"):
            raise ValueError(f"SandboxLimits.isolation={self.isolation!r}: use 'fork' or 'spawn'")
        if self.wall_s <= 0 or self.cpu_s <= 0 or self.memory_mb <= 0:
            raise ValueError("SandboxLimits: wall_s, cpu_s and memory_mb must be positive")

    def for_child(self) -> dict:
        d = asdict(self)
        if d["solver_time_limit_s"] is None:
            d["solver_time_limit_s"] = max(0.5, self.wall_s - 1.0)
        return d


@dataclass
class ExecutionResult:
    """What one program did.  ``ok``: it ran to completion and an ``optimize()`` call produced a
    status.  ``status`` is normalized ("optimal", "infeasible", "unbounded", "inf_or_unbd",
    "time_limit", ..., or "error" when no status could be obtained).  ``error`` is None on success,
    else a short reason ("timeout", "memory", "cpu_time", "file_size", "forbidden import os",
    "sandbox: ... not allowed", "no optimize() call", or the tail of the traceback)."""

    ok: bool
    status: str | None
    objective: float | None
    error: str | None
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    backend: str | None = None
    fallback_reason: str | None = None
    num_vars: int | None = None
    num_constrs: int | None = None
    num_int_vars: int | None = None
    num_qnzs: int | None = None
    solution: dict | None = None
    exit_code: int | None = None
    signal: int | None = None
    enforced: list = field(default_factory=list)
    violations: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


# ----------------------------------------------------------------------------------------------
# Static check
# ----------------------------------------------------------------------------------------------
def check_code_safety(code: str, allowed_imports: Iterable[str] = ALLOWED_IMPORTS, allow_open: bool = False) -> list[str]:
    """Violations of the code safety rules (empty list = passes).  Cheap; runs before any process.
    ``allow_open`` permits ``open`` (for programs that read input files placed in their temp dir;
    the audit hook still refuses reads and writes outside it)."""
    forbidden = FORBIDDEN_NAMES - {"open"} if allow_open else FORBIDDEN_NAMES
    if len(code) > MAX_CODE_CHARS:
        return [f"code too long: {len(code)} characters > {MAX_CODE_CHARS}"]
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [f"syntax error: line {exc.lineno}: {exc.msg}"]
    allowed = frozenset(allowed_imports)
    problems: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in allowed:
                    problems.append(f"forbidden import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            if node.level or (node.module or "").split(".")[0] not in allowed:
                problems.append(f"forbidden import {node.module or '.'}")
        elif isinstance(node, ast.Name) and node.id in forbidden:
            problems.append(f"forbidden name {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr.endswith("__"):
            problems.append(f"forbidden attribute {node.attr}")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            continue
    return sorted(set(problems))


def imported_modules(code: str) -> list[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return sorted(names)


# ----------------------------------------------------------------------------------------------
# Environment probes
# ----------------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def unshare_available() -> bool:
    """Whether this interpreter starts inside `unshare -n` (a private, empty network namespace).
    Probed with the interpreter itself, not `true`, in the sandbox's environment: a namespace that
    `true` enters but Python cannot start in must not take the sandbox down (Sandbox._zygote also
    falls back when a zygote dies there)."""
    exe = shutil.which("unshare")
    if exe is None:
        return False
    try:
        return subprocess.run([exe, "-n", sys.executable, "-I", "-c", "pass"], capture_output=True,
                              timeout=60, env=sandbox_runner.minimal_env(tempfile.gettempdir()),
                              cwd=tempfile.gettempdir()).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@lru_cache(maxsize=1)
def probe_backends() -> dict:
    """Which solver backends work in a clean interpreter: {'gurobipy': bool, 'gurobipy_error': str|None,
    'shim': bool}.  Run in a subprocess so that a broken gurobipy cannot hurt the caller."""
    env = sandbox_runner.minimal_env(tempfile.gettempdir())
    proc = subprocess.run([sys.executable, "-I", str(RUNNER_PATH), "--probe"], capture_output=True,
                          text=True, env=env, timeout=60)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"gurobipy": False, "gurobipy_error": proc.stderr[-500:], "shim": False}


def resolve_backend(backend: str) -> str:
    if backend == "auto":
        return "gurobipy" if probe_backends().get("gurobipy") else "shim"
    if backend == "gurobipy" and not probe_backends().get("gurobipy"):
        raise RuntimeError(f"backend='gurobipy' requested but unavailable: {probe_backends().get('gurobipy_error')}; "
                           "use backend='auto' or 'shim'")
    return backend


# ----------------------------------------------------------------------------------------------
# Result interpretation
# ----------------------------------------------------------------------------------------------
_SIGNAL_ERRORS = {24: "cpu_time", 25: "file_size", 9: "killed", 11: "crash (SIGSEGV)", 6: "crash (SIGABRT)"}
_EXCEPTION_ERRORS = (("MemoryError", "memory"), ("BlockingIOError", "process limit (fork failed)"))


def _interpret(reply: dict, backend: str) -> ExecutionResult:
    report = reply.get("report") or {}
    error: str | None = None
    if reply.get("zygote_error"):
        error = f"sandbox failure: {reply['zygote_error']}"
    elif reply.get("timed_out"):
        error = "timeout"
    elif reply.get("signal") is not None:
        error = _SIGNAL_ERRORS.get(reply["signal"], f"killed by signal {reply['signal']}")
    elif report.get("harness_error"):
        error = f"sandbox failure: {report['harness_error']}"
    elif report.get("exception"):
        exc = report["exception"]
        label = next((label for key, label in _EXCEPTION_ERRORS if key in exc), None)
        if label is not None:
            error = label
        elif "sandbox:" in exc:
            error = exc[exc.index("sandbox:"):]
        else:
            error = (report.get("traceback") or exc)[-1500:]
    elif not report:
        error = "no report from the program (crashed before reporting)"
    elif not report.get("optimize_calls"):
        error = "no optimize() call"
    status = report.get("status")
    if error and status is None:
        status = "error"
    ok = error is None and status not in (None, "error")
    return ExecutionResult(
        ok=ok, status=status, objective=report.get("objective"), error=error,
        stdout=reply.get("stdout", ""), stderr=reply.get("stderr", ""), wall_s=reply.get("wall_s", 0.0),
        backend=backend, fallback_reason=report.get("fallback"), num_vars=report.get("num_vars"),
        num_constrs=report.get("num_constrs"), num_int_vars=report.get("num_int_vars"),
        num_qnzs=report.get("num_qnzs"), solution=report.get("solution"), exit_code=reply.get("exit_code"),
        signal=reply.get("signal"), enforced=list(report.get("enforced", [])),
    )


# ----------------------------------------------------------------------------------------------
# Executors
# ----------------------------------------------------------------------------------------------
class _Zygote:
    """One warm `python -I` interpreter that forks a fresh child per request."""

    def __init__(self, network_namespace: bool, tmp_root: str):
        self.tmp_root = tmp_root
        cmd = [sys.executable, "-I", str(RUNNER_PATH), "--zygote"]
        self.network_namespace = bool(network_namespace and unshare_available())
        if self.network_namespace:
            cmd = [shutil.which("unshare"), "-n", *cmd]
        # the zygote's stderr goes to a file: when it dies before its hello, the error says why
        # (on the H200 image it died there once with nothing to show for it)
        self.stderr_path = os.path.join(tmp_root, "zygote_stderr.txt")
        with open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, text=True, bufsize=1,
                                         env=sandbox_runner.minimal_env(tmp_root), cwd=tmp_root)
        hello = self.proc.stdout.readline()
        if not hello:
            self.proc.wait()
            try:
                with open(self.stderr_path) as f:
                    tail = f.read()[-1500:].strip()
            except OSError:
                tail = ""
            raise RuntimeError(f"sandbox zygote failed to start (exit code {self.proc.returncode}, command "
                               f"{' '.join(cmd)}): {tail or 'no stderr'}")
        self.ready = json.loads(hello)["ready"]
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, request: dict) -> dict:
        # The zygote enforces the wall limit itself; this outer deadline only guards against a
        # zygote that stopped answering (then it is killed and replaced on the next request).
        deadline = float(request["limits"].get("wall_s", 10.0)) + 30.0
        with self.lock:
            try:
                self.proc.stdin.write(json.dumps(request) + "\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                return {"report": None, "zygote_error": "zygote exited"}
            ready, _, _ = select.select([self.proc.stdout], [], [], deadline)
            if not ready:
                self.proc.kill()
                self.proc.wait()
                return {"report": None, "zygote_error": f"zygote did not answer within {deadline:.0f} s; restarted"}
            line = self.proc.stdout.readline()
        if not line:
            return {"report": None, "zygote_error": "zygote exited"}
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except Exception:
                self.proc.kill()
                self.proc.wait()


class Sandbox:
    """A pool of ``workers`` executors.  ``run`` executes one program; ``map`` runs many in parallel
    (one program per fresh child process; workers only bound the parallelism)."""

    def __init__(self, workers: int = 1, tmp_root: str | None = None):
        if workers < 1:
            raise ValueError(f"Sandbox(workers={workers}): need at least one worker")
        self.workers = workers
        self._own_tmp = tmp_root is None
        self.tmp_root = tmp_root or tempfile.mkdtemp(prefix="or-sandbox-")
        os.chmod(self.tmp_root, 0o711)  # per-run uids must traverse it, not list it
        self._zygotes: list[_Zygote | None] = [None] * workers
        self._netns_error: str | None = None  # why a zygote failed under `unshare -n`, once it has
        self._free: list[int] = list(range(workers))
        self._cond = threading.Condition()
        self._pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
        # Remove the temp root even when close() is never called (e.g. a pool worker that exits).
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.tmp_root, True) if self._own_tmp else None

    @property
    def network_namespace_error(self) -> str | None:
        """Why zygotes run without `unshare -n` in this sandbox (None: the layer works or was not asked for)."""
        return self._netns_error

    # -- zygote management -----------------------------------------------------------------------
    def _acquire(self) -> int:
        with self._cond:
            while not self._free:
                self._cond.wait()
            return self._free.pop()

    def _release(self, slot: int) -> None:
        with self._cond:
            self._free.append(slot)
            self._cond.notify()

    def _zygote(self, slot: int, network_namespace: bool) -> _Zygote:
        netns = network_namespace and unshare_available() and self._netns_error is None
        z = self._zygotes[slot]
        if z is None or not z.alive() or z.network_namespace != netns:
            if z is not None:
                z.close()
            try:
                z = _Zygote(netns, self.tmp_root)
            except RuntimeError as exc:
                if not netns:
                    raise
                # the namespace is one layer of eight (the audit hook still refuses sockets): run
                # without it rather than score every program as a sandbox failure, and say so
                self._netns_error = str(exc)
                warnings.warn(f"sandbox: the zygote did not start under `unshare -n`, so programs run without "
                              f"the network namespace ({exc})", RuntimeWarning, stacklevel=3)
                z = _Zygote(False, self.tmp_root)
            self._zygotes[slot] = z
        return z

    # -- execution ---------------------------------------------------------------------------------
    def run(self, code: str, limits: SandboxLimits | None = None, files: dict[str, str] | None = None) -> ExecutionResult:
        limits = limits or SandboxLimits()
        files = _check_files(files)
        t0 = time.perf_counter()
        if limits.static_check:
            violations = check_code_safety(code, allow_open=bool(files))
            if violations:
                return ExecutionResult(ok=False, status="error", objective=None, error=violations[0],
                                       violations=violations, wall_s=time.perf_counter() - t0,
                                       enforced=["static_check"])
        backend = resolve_backend(limits.backend)
        result = self._run_backend(code, limits, backend, files)
        if result.fallback_reason and backend == "gurobipy":
            reason = result.fallback_reason
            result = self._run_backend(code, limits, "shim", files)
            result.fallback_reason = reason
            result.backend = "shim (fallback)"
        if limits.static_check:
            result.enforced.insert(0, "static_check")
        result.wall_s = time.perf_counter() - t0
        return result

    def _run_backend(self, code: str, limits: SandboxLimits, backend: str, files: dict[str, str]) -> ExecutionResult:
        request = {"code": code, "backend": backend, "limits": limits.for_child(), "tmp_root": self.tmp_root,
                   "files": files}
        if limits.isolation == "fork":
            slot = self._acquire()
            try:
                zygote = self._zygote(slot, limits.network_namespace)
                reply = zygote.run(request)
                netns = zygote.network_namespace
            finally:
                self._release(slot)
        else:
            reply, netns = self._spawn(request, code, limits)
        result = _interpret(reply, backend)
        if netns:
            result.enforced.append("network_namespace")
        result.enforced.append(f"isolation_{limits.isolation}")
        return result

    def _spawn(self, request: dict, code: str, limits: SandboxLimits) -> tuple[dict, bool]:
        workdir = tempfile.mkdtemp(prefix="orsbx-", dir=self.tmp_root)
        out_fd, err_fd = sandbox_runner._open_output_files(workdir)
        result_r, result_w = os.pipe()
        cmd = [sys.executable, "-I", str(RUNNER_PATH), "--one"]
        netns = bool(limits.network_namespace and unshare_available())
        if netns:
            cmd = [shutil.which("unshare"), "-n", *cmd]
        request = dict(request, workdir=workdir, result_fd=result_w, out_fd=out_fd, err_fd=err_fd,
                       imports=imported_modules(code))
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, pass_fds=(result_w, out_fd, err_fd),
                                    start_new_session=True, env=sandbox_runner.minimal_env(workdir),
                                    cwd=workdir)
            os.close(result_w)
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.close()
            # Imports of the solver happen inside the wall budget too (a fresh interpreter costs).
            reply = sandbox_runner.supervise(proc.pid, result_r, float(limits.wall_s), out_fd, err_fd,
                                             limits.max_output_bytes)
            # supervise() reaped the child with wait4; tell Popen so it does not warn or re-wait.
            proc.returncode = reply.get("exit_code")
            return reply, netns
        finally:
            os.close(out_fd)
            os.close(err_fd)
            shutil.rmtree(workdir, ignore_errors=True)

    def map(self, codes: Iterable[str], limits: SandboxLimits | None = None) -> list[ExecutionResult]:
        """Run many programs (in parallel over the workers); results in input order."""
        codes = list(codes)
        if self._pool is None:
            return [self.run(c, limits) for c in codes]
        return list(self._pool.map(lambda c: self.run(c, limits), codes))

    def close(self) -> None:
        for z in self._zygotes:
            if z is not None:
                z.close()
        self._zygotes = [None] * self.workers
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_DEFAULT: Sandbox | None = None
_DEFAULT_LOCK = threading.Lock()


def default_sandbox() -> Sandbox:
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = Sandbox(workers=1)
            atexit.register(_DEFAULT.close)
        return _DEFAULT


def execute_solver_code(code: str, limits: SandboxLimits | None = None, sandbox: Sandbox | None = None,
                        files: dict[str, str] | None = None) -> ExecutionResult:
    """Run one Gurobi-style program in the sandbox and report status/objective from its model.
    ``files`` ({name: text}) are written into the program's temp dir (its cwd) before it starts,
    read-only, e.g. a Bench4Opt ``data.json``; with files the static check permits ``open``."""
    return (sandbox or default_sandbox()).run(code, limits, files)


MAX_INPUT_FILE_CHARS = 4_000_000


def _check_files(files: dict[str, str] | None) -> dict[str, str]:
    if not files:
        return {}
    for name, content in files.items():
        if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith("."):
            raise ValueError(f"files: bad file name {name!r}; use a plain name such as 'data.json'")
        if not isinstance(content, str):
            raise TypeError(f"files[{name!r}] must be text (str), got {type(content).__name__}")
        if len(content) > MAX_INPUT_FILE_CHARS:
            raise ValueError(f"files[{name!r}] has {len(content)} characters > {MAX_INPUT_FILE_CHARS}")
    return dict(files)


__all__ = ["SandboxLimits", "ExecutionResult", "Sandbox", "execute_solver_code", "check_code_safety",
           "probe_backends", "unshare_available", "default_sandbox"]
