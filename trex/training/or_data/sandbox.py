"""Sandboxed execution of (model-written) Gurobi-style solver code, with the verdict outside it.

Contract (reused by trex.training.or_eval): ``execute_solver_code(code, limits=None) -> ExecutionResult``.
The program is Python using the gurobipy API; it builds a model (any variable name) and calls
``optimize()``.  The solver module inside the sandbox writes that model into the run's work folder;
this (trusted) process reads it as untrusted data (trex.training.or_data.model_file), solves it
with its own solver (trex.training.or_data.solver) and reports status, objective and solution from
that solve.  Nothing the program prints or reports is read, so a subclassed or patched ``Model``,
a forged report, a patched solver or a printed answer changes nothing.

Layers, each listed in ``ExecutionResult.enforced`` when it held for the run:

- kernel (bubblewrap, the zygote runs inside it): ``mount_namespace`` (read-only binds of the
  interpreter, its site-packages and a private copy of the four solver modules; no checkout, no
  benchmark data, no /etc, no /home), ``pid_namespace``, ``network_namespace`` (no interface),
  ``ipc_namespace``, ``private_tmp`` (/tmp and /dev/shm: empty tmpfs the program cannot write),
  ``die_with_parent``; ``cgroup_memory`` and ``cgroup_pids`` (the whole run's memory and task
  count; every process left in the cgroup after the run is killed); in the child ``seccomp`` (no
  exec, ptrace, sockets, namespaces, mounts, bpf, io_uring), ``unprivileged_uid`` (as root: a
  per-run uid, so RLIMIT_NPROC holds and nothing else is writable), ``no_new_privs``, rlimits,
  ``fds_0_1_2_only``, ``process_group``, ``minimal_env``;
- friendly early errors, not barriers: ``static_check`` (allow-listed imports, no eval/open/...),
  ``audit_hook``.

``host_layers()`` says which kernel layers this host provides (``trex doctor`` prints it).  A
``Sandbox(require=KERNEL_LAYERS)`` refuses to start without them (or-eval does, unless the user
opts in with ``--allow-weak-sandbox`` / ``TREX_ALLOW_WEAK_SANDBOX=1``).

Replies of the zygote are length-prefixed frames carrying a per-request nonce the child never
sees; a malformed or unmatched reply is a failed run and the zygote is replaced.
"""
from __future__ import annotations

import ast
import atexit
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import warnings
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from trex.training.or_data import gurobi_shim, highs_backend, sandbox_runner, scip_backend
from trex.training.or_data.model_file import (ModelFileError, decision_values, hard_coded_objective,
                                              model_from_json, model_from_mps, read_untrusted)
from trex.training.or_data.sandbox_runner import ALLOWED_IMPORTS, FrameError, read_frame, write_frame
from trex.training.or_data.solver import solve

# Names the static check refuses to see called or referenced (escape hatches out of the model API).
FORBIDDEN_NAMES = frozenset({
    "eval", "exec", "compile", "open", "__import__", "input", "breakpoint", "globals", "locals",
    "vars", "getattr", "setattr", "delattr", "exit", "quit", "help", "memoryview", "__builtins__",
    "__loader__", "__spec__", "classmethod", "staticmethod", "super", "type", "object",
})
MAX_CODE_CHARS = 100_000
MAX_INPUT_FILE_CHARS = 4_000_000

# The kernel layers scoring untrusted code needs (Sandbox(require=...)).
KERNEL_LAYERS = ("mount_namespace", "pid_namespace", "network_namespace", "private_tmp", "seccomp",
                 "cgroup_memory", "cgroup_pids")
WEAK_SANDBOX_ENV = "TREX_ALLOW_WEAK_SANDBOX"

# The modules the zygote imports from this package: copied into a private folder the sandbox
# mounts, so the rest of the checkout (the generators' reference builders) is not there.
_SANDBOX_MODULES = (sandbox_runner, gurobi_shim, highs_backend, scip_backend)
_SBX_LIB, _SBX_RUN = "/sbx/lib", "/sbx/run"
# Every program gets a run folder that is made, written and deleted: 6.7 ms of wall time per run on
# an ext4 /tmp (journaled mkdir/rename/rmdir) against 0.2 ms on tmpfs, so the sandbox's temporary
# root goes to this tmpfs when it is writable and has room for many runs' output files (a
# container's default 64 MB /dev/shm does not), unless $TMPDIR names another place.
FAST_TMP = "/dev/shm"
FAST_TMP_MIN_FREE = 2 << 30
TMP_PREFIX = "or-sandbox-"


def _tmp_parent() -> str | None:
    """Where a Sandbox makes its temporary root (None: tempfile's default)."""
    if os.environ.get("TMPDIR") or not os.path.isdir(FAST_TMP) or not os.access(FAST_TMP, os.W_OK | os.X_OK):
        return None
    try:
        room = os.statvfs(FAST_TMP)
    except OSError:
        return None
    return FAST_TMP if room.f_bavail * room.f_frsize >= FAST_TMP_MIN_FREE else None


def _new_tmp_root() -> str:
    """A fresh temporary root named after this process; first the roots of sandboxes whose process
    is gone (killed with -9, so no finalizer ran) are deleted: on tmpfs they would hold memory."""
    parent = _tmp_parent() or tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(parent) if n.startswith(TMP_PREFIX)] if os.path.isdir("/proc/self") else []
    except OSError:
        names = []
    for name in names:
        owner = name[len(TMP_PREFIX):].split("-")[0]
        if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", dir=parent)


@dataclass(frozen=True)
class SandboxLimits:
    """Limits for one program.  ``wall_s`` is the hard kill; ``cpu_s`` the CPU-time rlimit;
    ``memory_mb`` what the whole run may add to the warm interpreter (cgroup; also each process's
    address space); ``solver_time_limit_s`` bounds the parent's solve of the program's model (and
    the program's own solve; default ``wall_s - 1``)."""

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
    static_check: bool = True
    audit_hook: bool = True
    drop_privileges: bool = True

    def __post_init__(self) -> None:
        if self.backend not in ("auto", "gurobipy", "shim"):
            raise ValueError(f"SandboxLimits.backend={self.backend!r}: use 'auto', 'gurobipy' or 'shim'")
        if self.wall_s <= 0 or self.cpu_s <= 0 or self.memory_mb <= 0:
            raise ValueError("SandboxLimits: wall_s, cpu_s and memory_mb must be positive")

    @property
    def solver_time_limit(self) -> float:
        return self.solver_time_limit_s if self.solver_time_limit_s is not None else max(0.5, self.wall_s - 1.0)

    def for_child(self) -> dict:
        return dict(asdict(self), solver_time_limit_s=self.solver_time_limit)


@dataclass
class ExecutionResult:
    """What one program's model did, solved by this process.  ``ok``: the program ran to its end,
    wrote a model, and the solve produced a status.  ``status`` is normalized ("optimal",
    "infeasible", "unbounded", "inf_or_unbd", "time_limit", ..., or "error").  ``error`` is None on
    success, else a short reason ("timeout", "memory", "cpu_time", "no optimize() call",
    "hard-coded objective: ...", "sandbox: ... not allowed", the tail of the traceback, ...).
    ``solution`` maps every variable name to its value (up to max_solution_vars);
    ``decision_values`` only the model's decision variables (model_file.decision_values)."""

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
    decision_values: dict | None = None
    exit_code: int | None = None
    signal: int | None = None
    enforced: list = field(default_factory=list)
    violations: list = field(default_factory=list)
    killed_after_run: int = 0
    # the model the program built, as read back (trex.training.or_data.solver.LinearModel), for
    # formulation metrics such as ORGEval; not part of to_dict()
    model: object | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        return asdict(replace(self, model=None))


# ----------------------------------------------------------------------------------------------
# Static check
# ----------------------------------------------------------------------------------------------
def check_code_safety(code: str, allowed_imports: Iterable[str] = ALLOWED_IMPORTS, allow_open: bool = False) -> list[str]:
    """Violations of the code safety rules (empty list = passes): an early, friendly error, not a
    barrier (the kernel layers are).  ``allow_open`` permits ``open`` (programs reading data.json)."""
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
            problems += [f"forbidden import {a.name}" for a in node.names if a.name.split(".")[0] not in allowed]
        elif isinstance(node, ast.ImportFrom):
            if node.level or (node.module or "").split(".")[0] not in allowed:
                problems.append(f"forbidden import {node.module or '.'}")
        elif isinstance(node, ast.Name) and node.id in forbidden:
            problems.append(f"forbidden name {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr.endswith("__"):
            problems.append(f"forbidden attribute {node.attr}")
    return sorted(set(problems))


# ----------------------------------------------------------------------------------------------
# Host probes
# ----------------------------------------------------------------------------------------------
def _site_dirs() -> list[str]:
    """site-packages folders the interpreter's solver modules (numpy, highspy) come from."""
    import site

    dirs = list(getattr(site, "getsitepackages", lambda: [])())
    dirs += [sysconfig.get_paths().get(k, "") for k in ("purelib", "platlib")]
    user = getattr(site, "getusersitepackages", lambda: "")()
    if user and user in sys.path:
        dirs.append(user)
    return [d for d in dict.fromkeys(os.path.realpath(d) for d in dirs if d) if os.path.isdir(d)]


def _interpreter_roots() -> list[str]:
    """Folders bound read-only into the sandbox: the interpreter's prefixes and site-packages."""
    roots = [os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix, *_site_dirs())]
    roots.append(os.path.dirname(os.path.realpath(sys.executable)))
    keep: list[str] = []
    for r in sorted(set(roots), key=len):
        if not any(r == k or r.startswith(k + os.sep) for k in keep) and not r.startswith("/usr/"):
            keep.append(r)
    return keep


def bwrap_command(worker_dir: str, lib_dir: str) -> list[str] | None:
    """The bubblewrap command line that runs the zygote, or None when bwrap is not installed."""
    exe = shutil.which("bwrap")
    if exe is None:
        return None
    cmd = [exe]
    for top in ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    cmd += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
            # the tmpfs mounts come before the interpreter's binds: a venv under /tmp stays visible
            "--proc", "/proc", "--dev", "/dev", "--perms", "0755", "--tmpfs", "/tmp",
            "--perms", "0755", "--tmpfs", "/dev/shm"]
    for root in _interpreter_roots():
        cmd += ["--ro-bind", root, root]
    for site_dir in _site_dirs():  # an installed (non-editable) trex holds the reference builders: hide it
        if os.path.isdir(os.path.join(site_dir, "trex")):
            cmd += ["--tmpfs", os.path.join(site_dir, "trex")]
    cmd += ["--perms", "0755", "--dir", os.path.dirname(_SBX_LIB),  # the per-run uid traverses it
            "--ro-bind", lib_dir, _SBX_LIB, "--bind", worker_dir, _SBX_RUN,
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--chdir", _SBX_RUN, "--clearenv"]
    for key, value in sandbox_runner.minimal_env(_SBX_RUN).items():
        cmd += ["--setenv", key, value]
    if os.geteuid() == 0:  # the zygote needs these to give each program its own uid and clean up
        cmd += ["--cap-drop", "ALL"]
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_KILL"):
            cmd += ["--cap-add", cap]
    else:
        cmd += ["--unshare-user"]
    return cmd


def _write_lib(lib_dir: str) -> None:
    """A private copy of the sandbox's modules as a minimal trex package (empty __init__ files)."""
    package = Path(lib_dir, "trex", "training", "or_data")
    package.mkdir(parents=True, exist_ok=True)
    for part in (Path(lib_dir, "trex"), Path(lib_dir, "trex", "training"), package):
        (part / "__init__.py").write_text("")
    for module in _SANDBOX_MODULES:
        shutil.copyfile(module.__file__, package / os.path.basename(module.__file__))
    os.chmod(lib_dir, 0o755)


class _Cgroup:
    """One memory + pids cgroup (v1 or v2) for a zygote and the programs it forks."""

    def __init__(self, name: str):
        self.memory_dir = self.pids_dir = None
        self.v2 = False
        own = self._own_paths()
        unified = own.get("")
        if os.path.exists("/sys/fs/cgroup/cgroup.controllers") and unified is not None:
            self.v2 = True
            self.memory_dir = self.pids_dir = self._make(f"/sys/fs/cgroup{unified}", name, "memory.max")
        else:
            if "memory" in own:
                self.memory_dir = self._make(f"/sys/fs/cgroup/memory{own['memory']}", name, "memory.limit_in_bytes")
            if "pids" in own:
                self.pids_dir = self._make(f"/sys/fs/cgroup/pids{own['pids']}", name, "pids.max")
        self.dirs = [d for d in dict.fromkeys((self.memory_dir, self.pids_dir)) if d]

    @staticmethod
    def _own_paths() -> dict[str, str]:
        paths: dict[str, str] = {}
        try:
            for line in Path("/proc/self/cgroup").read_text().splitlines():
                _, controllers, path = line.split(":", 2)
                for c in controllers.split(",") if controllers else [""]:
                    paths[c] = path
        except (OSError, ValueError):
            pass
        return paths

    @staticmethod
    def _make(parent: str, name: str, probe: str) -> str | None:
        _Cgroup._remove_stale(parent)
        path = os.path.join(parent, name)
        try:
            os.makedirs(path, exist_ok=True)
        except OSError:
            return None
        if os.path.exists(os.path.join(path, probe)):
            return path
        shutil.rmtree(path, ignore_errors=True)
        return None

    @staticmethod
    def _remove_stale(parent: str) -> None:
        """rmdir the empty cgroups of sandboxes whose process is gone (killed with -9: no close())."""
        try:
            names = [n for n in os.listdir(parent) if n.startswith("trex-sbx-")]
        except OSError:
            return
        for n in names:
            owner = n.split("-")[2]
            if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                try:
                    os.rmdir(os.path.join(parent, n))  # fails (and stays) while it holds a process
                except OSError:
                    pass

    def _write(self, directory: str | None, name: str, value) -> bool:
        if directory is None:
            return False
        try:
            with open(os.path.join(directory, name), "w") as fh:
                fh.write(str(value))
            return True
        except OSError:
            return False

    def _read(self, directory: str | None, name: str) -> str | None:
        try:
            return Path(directory, name).read_text() if directory else None
        except OSError:
            return None

    def memory_usage(self) -> int | None:
        text = self._read(self.memory_dir, "memory.current" if self.v2 else "memory.usage_in_bytes")
        return int(text) if text and text.strip().isdigit() else None

    def set_memory(self, limit: int) -> bool:
        return self._write(self.memory_dir, "memory.max" if self.v2 else "memory.limit_in_bytes", limit)

    def set_pids(self, limit: int) -> bool:
        return self._write(self.pids_dir, "pids.max", limit)

    def pids_current(self) -> int | None:
        text = self._read(self.pids_dir, "pids.current")
        return int(text) if text and text.strip().isdigit() else None

    def oom_kills(self) -> int:
        text = self._read(self.memory_dir, "memory.events" if self.v2 else "memory.oom_control") or ""
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def procs(self) -> set[int]:
        out: set[int] = set()
        for d in self.dirs:
            text = self._read(d, "cgroup.procs") or ""
            out.update(int(p) for p in text.split() if p.isdigit())
        return out

    def kill_except(self, keep: set[int], wait_s: float = 2.0) -> int:
        """SIGKILL every process of the cgroup not in ``keep`` and wait until they are gone."""
        killed: set[int] = set()
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            extra = self.procs() - keep
            if not extra:
                break
            for pid in extra:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            killed |= extra
            time.sleep(0.005)
        return len(killed)

    def remove(self) -> None:
        self.kill_except(set())
        for d in self.dirs:
            try:
                os.rmdir(d)
            except OSError:
                pass


@lru_cache(maxsize=1)
def host_layers() -> dict[str, str | None]:
    """Which kernel layers this host enforces: layer -> None when it holds, else why not.
    Measured by starting one sandboxed zygote and running one program in it."""
    reasons: dict[str, str | None] = {}
    try:
        with Sandbox(workers=1) as sb:
            r = sb.run("import gurobipy as gp\nm = gp.Model()\nx = m.addVar(ub=1)\nm.setObjective(x, -1)\nm.optimize()\n",
                       SandboxLimits(backend="shim", wall_s=30))
            held = set(r.enforced)
            why = sb.missing_reasons
    except Exception as exc:  # the probe itself failed: nothing is known to hold
        held, why = set(), {layer: f"{type(exc).__name__}: {exc}" for layer in KERNEL_LAYERS}
    for layer in KERNEL_LAYERS + ("ipc_namespace", "die_with_parent", "unprivileged_uid", "no_new_privs"):
        reasons[layer] = None if layer in held else why.get(layer, "not reported by the probe run")
    return reasons


@lru_cache(maxsize=1)
def probe_backends() -> dict:
    """Which solver backends the sandbox's interpreter has: {'gurobipy', 'gurobipy_error', 'shim'}."""
    lib = tempfile.mkdtemp(prefix="or-sandbox-probe-")
    try:
        _write_lib(lib)
        proc = subprocess.run([sys.executable, "-I", "-S", os.path.join(lib, "trex/training/or_data/sandbox_runner.py"),
                               "--probe", "--site", *_site_dirs()], capture_output=True, text=True,
                              env=sandbox_runner.minimal_env(lib), timeout=120)
    finally:
        shutil.rmtree(lib, ignore_errors=True)
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
# The zygote (one per worker), started inside bubblewrap and a cgroup when the host has them
# ----------------------------------------------------------------------------------------------
class _Zygote:
    def __init__(self, tmp_root: str, slot: int, lib_dir: str, use_bwrap: bool = True):
        self.worker_dir = os.path.join(tmp_root, f"w{slot}")
        os.makedirs(self.worker_dir, mode=0o711, exist_ok=True)
        os.chmod(self.worker_dir, 0o711)
        self.cgroup = _Cgroup(f"trex-sbx-{os.getpid()}-{slot}-{secrets.token_hex(3)}")
        self.layers: list[str] = []
        self.missing: dict[str, str] = {}
        bwrap = bwrap_command(self.worker_dir, lib_dir) if use_bwrap else None
        site_dirs = _site_dirs()
        if bwrap is not None:
            runner = f"{_SBX_LIB}/trex/training/or_data/sandbox_runner.py"
            cmd = bwrap + [sys.executable, "-I", "-S", runner, "--zygote", "--site", *site_dirs]
            self.inner_run_dir = _SBX_RUN
        else:
            runner = os.path.join(lib_dir, "trex/training/or_data/sandbox_runner.py")
            cmd = [sys.executable, "-I", "-S", runner, "--zygote", "--site", *site_dirs]
            self.inner_run_dir = self.worker_dir
            reason = ("bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap" if use_bwrap else
                      "bubblewrap could not start the zygote on this host")
            for layer in ("mount_namespace", "pid_namespace", "network_namespace", "ipc_namespace",
                          "private_tmp", "die_with_parent"):
                self.missing[layer] = reason
        if self.cgroup.dirs:  # enter the cgroup before bwrap starts: every later process is in it
            procs = [os.path.join(d, "cgroup.procs") for d in self.cgroup.dirs]
            cmd = ["/bin/sh", "-c", 'for f; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 97; done; '
                   'while [ "$1" != -- ]; do shift; done; shift; exec "$@"', "sh", *procs, "--", *cmd]
        self.stderr_path = os.path.join(tmp_root, f"zygote{slot}_stderr.txt")
        with open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                         env=sandbox_runner.minimal_env(self.worker_dir), cwd=self.worker_dir,
                                         bufsize=0)
        # a Sandbox dropped without close() (or at interpreter exit) still ends its zygote and cgroup
        self._finalizer = weakref.finalize(self, _Zygote._end, self.proc, self.cgroup)
        try:
            hello = read_frame(self.proc.stdout.fileno(), time.monotonic() + 120)
        except (EOFError, TimeoutError, FrameError) as exc:
            self.kill()
            tail = Path(self.stderr_path).read_text(errors="replace")[-1500:].strip()
            raise RuntimeError(f"sandbox zygote failed to start ({type(exc).__name__}: {exc}; command "
                               f"{' '.join(cmd[:3])} ...): {tail or 'no stderr'}") from None
        self.ready = hello.get("ready", {})
        if bwrap is not None:
            self.layers += ["mount_namespace", "pid_namespace", "network_namespace", "ipc_namespace",
                            "private_tmp", "die_with_parent"]
        self._cgroup_baseline()
        self.keep = self.cgroup.procs()
        self.lock = threading.Lock()

    @staticmethod
    def _end(proc: subprocess.Popen, cgroup: "_Cgroup") -> None:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        cgroup.remove()

    def _cgroup_baseline(self) -> None:
        if self.cgroup.memory_dir is None:
            self.missing["cgroup_memory"] = "no writable memory cgroup here (run as root on a host with cgroups)"
        if self.cgroup.pids_dir is None:
            self.missing["cgroup_pids"] = "no writable pids cgroup here (run as root on a host with cgroups)"
        self.baseline_memory = self.cgroup.memory_usage() or 0
        self.baseline_tasks = self.cgroup.pids_current() or 0

    def _apply_limits(self, limits: SandboxLimits) -> list[str]:
        held = []
        if self.cgroup.memory_dir is not None and self.cgroup.set_memory(self.baseline_memory + limits.memory_mb * 2**20):
            held.append("cgroup_memory")
        if self.cgroup.pids_dir is not None and self.cgroup.set_pids(self.baseline_tasks + limits.max_processes):
            held.append("cgroup_pids")
        return held

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, request: dict, limits: SandboxLimits) -> dict:
        """Send one request; the reply, or {"zygote_error": ...} (then this zygote is dead)."""
        nonce = secrets.token_hex(16)
        deadline = time.monotonic() + float(limits.wall_s) + 30.0
        with self.lock:
            held = self._apply_limits(limits)
            ooms = self.cgroup.oom_kills()
            try:
                write_frame(self.proc.stdin.fileno(), request)
                write_frame(self.proc.stdin.fileno(), {"nonce": nonce})
                reply = read_frame(self.proc.stdout.fileno(), deadline)
            except (BrokenPipeError, EOFError):
                self.kill()
                return {"zygote_error": "zygote exited"}
            except TimeoutError:
                self.kill()
                return {"zygote_error": "zygote did not answer in time; replaced"}
            except FrameError as exc:
                self.kill()
                return {"zygote_error": f"malformed reply ({exc}); zygote replaced"}
            if not isinstance(reply, dict) or not secrets.compare_digest(str(reply.get("nonce")), nonce):
                self.kill()
                return {"zygote_error": "reply without this request's nonce; zygote replaced"}
            reply["killed_after_run"] = self.cgroup.kill_except(self.keep) if self.cgroup.dirs else 0
            reply["oom_killed"] = self.cgroup.oom_kills() > ooms
            reply["cgroup_layers"] = held
        return reply

    def kill(self) -> None:
        self._finalizer()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except Exception:
                pass
        self.kill()


_SIGNAL_ERRORS = {24: "cpu_time", 25: "file_size", 9: "killed", 11: "crash (SIGSEGV)", 6: "crash (SIGABRT)",
                  31: "crash (SIGSYS: a syscall the sandbox forbids)"}
_STDERR_ERRORS = (("MemoryError", "memory"), ("BlockingIOError", "process limit (fork failed)"))


def _tail(path: str, limit: int) -> str:
    try:
        blob = read_untrusted(path, limit=1 << 40)
    except ModelFileError:
        return ""
    if blob is None:
        return ""
    text = blob[-limit:].decode("utf-8", "replace")
    return ("[... truncated ...]\n" + text) if len(blob) > limit else text


def _program_error(reply: dict, stderr: str) -> str | None:
    """Why the program did not run to its end (None: it did)."""
    if reply.get("zygote_error"):
        return f"sandbox failure: {reply['zygote_error']}"
    setup = reply.get("setup")
    if not isinstance(setup, dict):
        return "sandbox failure: the child reported no setup"
    if setup.get("setup_error"):
        return f"sandbox failure: {setup['setup_error']}"
    if reply.get("timed_out"):
        return "timeout"
    if reply.get("oom_killed"):
        return "memory"
    if reply.get("signal") is not None:
        return _SIGNAL_ERRORS.get(reply["signal"], f"killed by signal {reply['signal']}")
    if reply.get("exit_code") != 0:
        label = next((label for key, label in _STDERR_ERRORS if key in stderr), None)
        if label is not None:
            return label
        if "sandbox:" in stderr:
            line = stderr[stderr.rindex("sandbox:"):].splitlines()[0]
            return line
        return stderr[-1500:].strip() or f"exit code {reply.get('exit_code')}"
    return None


class Sandbox:
    """A pool of ``workers`` zygotes.  ``run`` executes one program; ``map`` runs many in parallel
    (one fresh child per program; workers bound the parallelism).  ``require``: kernel layers that
    must hold, else the constructor raises RuntimeError naming what is missing and how to add it."""

    def __init__(self, workers: int = 1, tmp_root: str | None = None, require: Iterable[str] = ()):
        if workers < 1:
            raise ValueError(f"Sandbox(workers={workers}): need at least one worker")
        self.workers = workers
        self._own_tmp = tmp_root is None
        self.tmp_root = tmp_root or _new_tmp_root()
        os.chmod(self.tmp_root, 0o711)
        self.lib_dir = os.path.join(self.tmp_root, "lib")
        _write_lib(self.lib_dir)
        self._zygotes: list[_Zygote | None] = [None] * workers
        self._free: list[int] = list(range(workers))
        self._cond = threading.Condition()
        self._runs = 0
        self._runs_lock = threading.Lock()
        self.missing_reasons: dict[str, str] = {}
        self._bwrap_error: str | None = None
        self.verified_layers: list[str] = []  # what a probe program had at construction (with require)
        self._pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.tmp_root, True) if self._own_tmp else None
        required = tuple(require)
        if required:
            probe = self.run("import gurobipy as gp\nm = gp.Model()\nx = m.addVar(ub=1)\nm.setObjective(x, -1)\n"
                             "m.optimize()\n", SandboxLimits(backend="shim", wall_s=30))
            self.verified_layers = sorted(probe.enforced)
            missing = [layer for layer in required if layer not in probe.enforced]
            if missing:
                self.close()
                why = "; ".join(f"{layer}: {self.missing_reasons.get(layer, probe.error or 'did not hold')}"
                                for layer in missing)
                raise RuntimeError(f"the sandbox lacks kernel layers needed for untrusted code ({why}); install "
                                   f"them (bash scripts/test.sh does, as root) or opt in to a weaker sandbox with "
                                   f"--allow-weak-sandbox / {WEAK_SANDBOX_ENV}=1")

    @property
    def network_namespace_error(self) -> str | None:
        """Why programs run without a network namespace here (None: they have one)."""
        return self.missing_reasons.get("network_namespace")

    def _acquire(self) -> int:
        with self._cond:
            while not self._free:
                self._cond.wait()
            return self._free.pop()

    def _release(self, slot: int) -> None:
        with self._cond:
            self._free.append(slot)
            self._cond.notify()

    def _zygote(self, slot: int) -> _Zygote:
        z = self._zygotes[slot]
        if z is None or not z.alive():
            if z is not None:
                z.kill()
            try:
                z = _Zygote(self.tmp_root, slot, self.lib_dir, use_bwrap=self._bwrap_error is None)
            except RuntimeError as exc:
                if self._bwrap_error is not None or shutil.which("bwrap") is None:
                    raise
                # gVisor-like hosts refuse the namespaces: run without them, say so once, and let
                # Sandbox(require=...) refuse untrusted code
                self._bwrap_error = str(exc)
                warnings.warn(f"sandbox: bubblewrap could not start the zygote, so programs run without the "
                              f"kernel namespaces ({exc})", RuntimeWarning, stacklevel=4)
                z = _Zygote(self.tmp_root, slot, self.lib_dir, use_bwrap=False)
            self.missing_reasons.update(z.missing)
            if z.ready.get("seccomp") is False:
                self.missing_reasons["seccomp"] = "libseccomp is not installed: apt-get install -y libseccomp2"
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

    def _new_run_dir(self, zygote: _Zygote, files: dict[str, str]) -> tuple[str, str]:
        with self._runs_lock:
            self._runs += 1
            name = f"r{self._runs}"
        host = os.path.join(zygote.worker_dir, name)
        os.makedirs(os.path.join(host, sandbox_runner.WORK_NAME), mode=0o755)
        os.chmod(host, 0o755)
        for fname, content in files.items():  # input files, read-only to the program
            path = os.path.join(host, sandbox_runner.WORK_NAME, fname)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(content)
            os.chmod(path, 0o444)
        return host, os.path.join(zygote.inner_run_dir, name)

    def _run_backend(self, code: str, limits: SandboxLimits, backend: str, files: dict[str, str]) -> ExecutionResult:
        slot = self._acquire()
        try:
            zygote = self._zygote(slot)
            host_dir, inner_dir = self._new_run_dir(zygote, files)
            try:
                reply = zygote.run({"code": code, "backend": backend, "limits": limits.for_child(),
                                    "run_dir": inner_dir}, limits)
                layers = list(zygote.layers) + list(reply.get("cgroup_layers", []))
                return self._result(reply, host_dir, limits, backend, layers)
            finally:
                shutil.rmtree(host_dir, ignore_errors=True)
        finally:
            self._release(slot)

    def _result(self, reply: dict, host_dir: str, limits: SandboxLimits, backend: str,
                layers: list[str]) -> ExecutionResult:
        stdout = _tail(os.path.join(host_dir, sandbox_runner.STDOUT_NAME), limits.max_output_bytes)
        stderr = _tail(os.path.join(host_dir, sandbox_runner.STDERR_NAME), limits.max_output_bytes)
        setup = reply.get("setup") if isinstance(reply.get("setup"), dict) else {}
        layers = layers + [str(x) for x in setup.get("layers", [])]
        for layer in ("seccomp", "unprivileged_uid", "no_new_privs"):
            if layer not in layers and setup.get("layers"):
                self.missing_reasons.setdefault(layer, "the child could not apply it on this host")
        work = os.path.join(host_dir, sandbox_runner.WORK_NAME)
        result = ExecutionResult(ok=False, status="error", objective=None, error=None, stdout=stdout,
                                 stderr=stderr, backend=backend, exit_code=reply.get("exit_code"),
                                 signal=reply.get("signal"), enforced=layers,
                                 killed_after_run=int(reply.get("killed_after_run") or 0))
        try:
            fallback = read_untrusted(os.path.join(work, sandbox_runner.FALLBACK_NAME), limit=4096)
            if fallback and backend == "gurobipy":
                result.fallback_reason = fallback.decode("utf-8", "replace")[:200]
                return result
            result.error = _program_error(reply, stderr)
            if result.error is not None:
                return result
            blob = read_untrusted(os.path.join(work, sandbox_runner.MODEL_JSON))
            if blob is not None:
                model = model_from_json(blob)
            elif read_untrusted(os.path.join(work, sandbox_runner.MODEL_MPS)) is not None:
                model = model_from_mps(os.path.join(work, sandbox_runner.MODEL_MPS))
            else:
                result.error = "no optimize() call"
                return result
        except ModelFileError as exc:
            result.error = f"model file: {exc}"
            return result
        result.model = model
        result.num_vars, result.num_constrs = model.num_vars, len(model.rows)
        result.num_int_vars, result.num_qnzs = model.num_int_vars, len(model.quad)
        try:
            solved = solve(model, backend={"shim": "highs"}.get(backend, "auto"), time_limit=limits.solver_time_limit)
        except Exception as exc:  # the solver refused the model (e.g. SCIP needed but pyscipopt missing)
            result.error = f"solver: {type(exc).__name__}: {exc}"[:500]
            return result
        result.status = solved.status
        objective = solved.objective if solved.status == "optimal" else None
        reason = hard_coded_objective(model, objective) if solved.status == "optimal" else None
        if reason is not None:
            result.status, result.error = "error", reason
            return result
        result.objective = objective
        if solved.x and model.num_vars <= limits.max_solution_vars:
            result.solution = dict(zip(model.var_names, map(float, solved.x)))
            result.decision_values = decision_values(model, solved.x)
        result.ok = result.status not in (None, "error")
        return result

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
    """Run one Gurobi-style program in the sandbox and report status/objective from its model,
    solved here.  ``files`` ({name: text}) are written read-only into the program's work folder
    (its cwd) before it starts, e.g. a Bench4Opt ``data.json``; with files the static check
    permits ``open``."""
    return (sandbox or default_sandbox()).run(code, limits, files)


def _check_files(files: dict[str, str] | None) -> dict[str, str]:
    if not files:
        return {}
    reserved = {sandbox_runner.MODEL_JSON, sandbox_runner.MODEL_MPS, sandbox_runner.FALLBACK_NAME}
    for name, content in files.items():
        if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith(".") or name in reserved:
            raise ValueError(f"files: bad file name {name!r}; use a plain name such as 'data.json'")
        if not isinstance(content, str):
            raise TypeError(f"files[{name!r}] must be text (str), got {type(content).__name__}")
        if len(content) > MAX_INPUT_FILE_CHARS:
            raise ValueError(f"files[{name!r}] has {len(content)} characters > {MAX_INPUT_FILE_CHARS}")
    return dict(files)


__all__ = ["SandboxLimits", "ExecutionResult", "Sandbox", "execute_solver_code", "check_code_safety",
           "probe_backends", "host_layers", "unshare_available", "default_sandbox", "KERNEL_LAYERS",
           "WEAK_SANDBOX_ENV"]


def unshare_available() -> bool:
    """Whether programs here run in an empty network namespace (host_layers' network_namespace)."""
    return host_layers().get("network_namespace") is None
