"""Child side of the sandbox: runs ONE untrusted solver program in this process and reports the
optimized model's status/objective through a private pipe (the "side channel"), never by parsing
what the program printed.

Two ways in (see trex/training/or_data/sandbox.py for the harness):

- ``python -I sandbox_runner.py --zygote``: a warm, clean interpreter that has imported the solver
  modules once and then forks ONE fresh child per program (the child is never reused, so no state
  leaks between programs).  Requests and replies are JSON lines on stdin/stdout.
- ``python -I sandbox_runner.py --one``: a fresh interpreter that runs exactly one program
  (request JSON on stdin), for callers that want a brand-new interpreter per program.

Both call :func:`run_program_in_this_process`, which applies, in order: a new session (process
group), cwd = a private temp dir, stdout/stderr to files, a scrubbed environment, resource limits
(CPU, address space, file size, open files, processes, core), dropping root to a per-run uid (so
RLIMIT_NPROC is enforced and other users' files, e.g. /proc/<parent>/environ, are unreadable),
no_new_privs, an audit hook (no sockets, no process creation, no writes outside the temp dir, no
ctypes), and finally exec of the program.  This module imports only the standard library at import
time, because the harness imports it too.
"""
from __future__ import annotations

import json
import os
import resource
import select
import signal
import site
import sys
import sysconfig
import time
import traceback

# Modules the program may import (top-level names).  They are imported BEFORE privileges are dropped:
# afterwards the per-run uid cannot read the Python installation under /root.
ALLOWED_IMPORTS = frozenset({
    "gurobipy", "math", "itertools", "functools", "collections", "json", "numpy", "typing",
    "dataclasses", "fractions", "decimal", "statistics", "operator", "heapq", "bisect", "random",
    "re", "string", "copy", "enum", "abc",
})

# Audit events refused outright inside the sandbox (process creation, signals, native code, env).
BLOCKED_EVENTS = frozenset({
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "subprocess.Popen", "os.kill", "os.killpg",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "ctypes.call_function", "ctypes.addressof",
    "os.symlink", "os.link", "os.chown", "sys.addaudithook", "os.putenv", "os.unsetenv",
    "pty.spawn", "os.startfile", "webbrowser.open", "urllib.Request", "ftplib.connect",
    "smtplib.connect", "http.client.connect", "os.listxattr", "mmap.__new__",
})

# Audit events that take a path first argument and modify the file system.
PATH_MUTATING_EVENTS = frozenset({
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.truncate", "os.utime",
    "shutil.rmtree", "shutil.move", "shutil.copyfile", "shutil.copytree", "os.mkfifo", "os.mknod",
})

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

UID_BASE = 200_000
UID_SPAN = 1_000_000

# Fallback to the HiGHS shim when gurobipy raises one of these (errno -> reason).
GUROBI_FALLBACK_ERRNOS = {10009: "gurobipy: no license", 10010: "gurobipy: model too large for the size-limited license"}

_STATUS_NAMES = {1: "loaded", 2: "optimal", 3: "infeasible", 4: "inf_or_unbd", 5: "unbounded",
                 6: "cutoff", 7: "iteration_limit", 8: "node_limit", 9: "time_limit",
                 10: "solution_limit", 11: "interrupted", 12: "numeric", 13: "suboptimal",
                 14: "inprogress", 15: "user_obj_limit", 16: "work_limit", 17: "memory"}


def uid_for_pid(pid: int) -> int:
    """The unprivileged uid a program runs as: unique per live child, never a real account."""
    return UID_BASE + pid % UID_SPAN


def minimal_env(home: str) -> dict[str, str]:
    """The only environment a program (and the zygote) sees; GRB_LICENSE_FILE never passes.
    LD_LIBRARY_PATH passes when set: an interpreter built against a shared libpython outside the
    loader's default paths cannot start without it (it is a search path, not a secret)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "NUMEXPR_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    if os.environ.get("LD_LIBRARY_PATH"):
        env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
    return env


# ----------------------------------------------------------------------------------------------
# Solver preparation (parent side, before any fork / privilege drop)
# ----------------------------------------------------------------------------------------------
_SOLVERS: dict[str, object] = {}
_GUROBI_ERROR: str | None = None


def prepare_solvers(want_gurobi: bool = True, want_shim: bool = True, extra_imports=()) -> dict:
    """Import the solver modules and start gurobipy's default environment (reads the bundled
    license file) while still privileged.  Returns which backends are ready."""
    global _GUROBI_ERROR
    if want_gurobi and "gurobipy" not in _SOLVERS and _GUROBI_ERROR is None:
        try:
            import gurobipy

            gurobipy.setParam("OutputFlag", 0)  # starts the default env: license read happens here
            gurobipy.setParam("Threads", 1)
            gurobipy.setParam("MIPGap", 0.0)
            gurobipy.setParam("MIPGapAbs", 0.0)
            _SOLVERS["gurobipy"] = gurobipy
        except Exception as exc:  # ImportError, or GurobiError when no license
            _GUROBI_ERROR = f"{type(exc).__name__}: {exc}"
    if want_shim and "shim" not in _SOLVERS:
        from trex.training.or_data import gurobi_shim

        import highspy  # noqa: F401  (loaded now: cannot be read after the privilege drop)

        from trex.training.or_data.highs_backend import _silence_banner

        _silence_banner()  # the banner would otherwise appear in every program's stdout

        _SOLVERS["shim"] = gurobi_shim
    import ctypes  # noqa: F401  (used by _no_new_privs after the privilege drop)

    _static_readable_roots()
    # socket is loaded on purpose: a network attempt must be stopped by the network layers (audit
    # hook, empty network namespace), not by the accident of an unreadable module file.  The static
    # check still refuses `import socket` in submitted code.
    import socket  # noqa: F401

    for name in extra_imports:
        if name in ALLOWED_IMPORTS and name != "gurobipy":
            try:
                __import__(name)
            except ImportError:
                pass
    return {"gurobipy": "gurobipy" in _SOLVERS, "gurobipy_error": _GUROBI_ERROR, "shim": "shim" in _SOLVERS}


# ----------------------------------------------------------------------------------------------
# The child: runs one program and never returns
# ----------------------------------------------------------------------------------------------
def _set_limits(limits: dict, own_uid: bool) -> list[str]:
    """Apply the rlimits.  RLIMIT_NPROC counts every task of the real uid, so it is only set when
    the program gets its own uid (else it would count the caller's other processes and threads)."""
    enforced = []
    vm_now = _vm_size_bytes()
    table = [
        ("cpu", resource.RLIMIT_CPU, limits.get("cpu_s"), lambda v: (int(v), int(v) + 1)),
        # Address space = what the warm interpreter already maps + the program's allowance.
        ("memory", resource.RLIMIT_AS, limits.get("memory_mb"),
         lambda v: (vm_now + int(v) * 2**20, vm_now + int(v) * 2**20)),
        ("file_size", resource.RLIMIT_FSIZE, limits.get("file_size_mb"),
         lambda v: (int(v) * 2**20, int(v) * 2**20)),
        ("open_files", resource.RLIMIT_NOFILE, limits.get("max_open_files"), lambda v: (int(v), int(v))),
        ("processes", resource.RLIMIT_NPROC, limits.get("max_processes") if own_uid else None,
         lambda v: (int(v), int(v))),
        ("core", resource.RLIMIT_CORE, 0, lambda v: (0, 0)),
    ]
    for name, which, value, to_pair in table:
        if value is None:
            continue
        try:
            resource.setrlimit(which, to_pair(value))
            enforced.append(f"rlimit_{name}")
        except (ValueError, OSError):
            pass
    return enforced


def _vm_size_bytes() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _drop_privileges(uid: int, workdir: str) -> bool:
    if os.geteuid() != 0:
        return False
    os.chown(workdir, uid, uid)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    return True


def _no_new_privs() -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
    except Exception:
        return False


_STATIC_READABLE: tuple[str, ...] | None = None


def _static_readable_roots() -> tuple[str, ...]:
    """Where a program may read besides its temp dir: the Python installation (stdlib,
    site-packages), this package, system libraries and a few device files.  Everything else (the
    checkout, shared data such as benchmark answers, /etc, other users' files) is refused by the
    audit hook.  Computed once while still privileged (sysconfig imports lazily)."""
    global _STATIC_READABLE
    if _STATIC_READABLE is None:
        roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.abspath(__file__)),
                 "/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/share/zoneinfo", "/etc/localtime",
                 "/dev/null", "/dev/urandom", "/dev/random", "/dev/zero", "/dev/shm",
                 "/sys/devices/system/cpu", "/proc/cpuinfo", "/proc/meminfo"}
        roots.update(sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib"))
        roots.update(getattr(site, "getsitepackages", lambda: [])())
        _STATIC_READABLE = tuple(sorted(os.path.realpath(r) for r in roots if r))
    return _STATIC_READABLE


def _make_audit_hook(workdir: str):
    workdir_real = os.path.realpath(workdir)
    own_proc = (f"/proc/{os.getpid()}/", "/proc/self/", "/proc/thread-self/")
    readable = (workdir_real,) + _static_readable_roots()

    def under(path, roots) -> bool:
        try:
            real = os.path.realpath(os.fsdecode(path))
        except Exception:
            return False
        return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)

    def inside(path) -> bool:
        return under(path, (workdir_real,))

    def hook(event: str, args: tuple) -> None:
        if event in BLOCKED_EVENTS or event.startswith("socket."):
            raise PermissionError(f"sandbox: '{event}' is not allowed")
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            if isinstance(path, int):
                return
            writes = (isinstance(mode, str) and any(ch in mode for ch in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS)
            if writes and not inside(path):
                raise PermissionError(f"sandbox: writing outside the temp dir is not allowed: {path!r}")
            spath = os.fsdecode(path) if isinstance(path, (str, bytes)) else ""
            if spath.startswith(own_proc):
                return
            if spath.startswith("/proc/") and not under(spath, readable):
                raise PermissionError(f"sandbox: reading other processes' /proc entries is not allowed: {spath!r}")
            if not under(path, readable):
                raise PermissionError(f"sandbox: reading outside the allowed directories is not allowed: {spath!r}")
        elif event in PATH_MUTATING_EVENTS:
            for arg in args[:2]:
                if isinstance(arg, (str, bytes, os.PathLike)) and not inside(arg):
                    raise PermissionError(f"sandbox: '{event}' outside the temp dir is not allowed")

    return hook


def _install_recorder(module, recorded: list, fallback: list) -> None:
    """Wrap Model.optimize so the harness finds the optimized model whatever the program names it."""
    model_cls = module.Model
    original = model_cls.optimize
    if getattr(original, "_sandbox_wrapped", False):
        original = original._sandbox_original
    error_cls = getattr(module, "GurobiError", Exception)

    def optimize(self, *args, **kwargs):
        recorded.append(self)
        try:
            return original(self, *args, **kwargs)
        except error_cls as exc:
            errno = getattr(exc, "errno", None)
            if errno in GUROBI_FALLBACK_ERRNOS:
                fallback.append(GUROBI_FALLBACK_ERRNOS[errno])
            raise

    optimize._sandbox_wrapped = True
    optimize._sandbox_original = original
    model_cls.optimize = optimize


def _model_report(model, max_solution: int) -> dict:
    def attr(name, default=None):
        try:
            return getattr(model, name)
        except Exception:
            return default

    code = attr("Status")
    report = {"status_code": code, "status": _STATUS_NAMES.get(code, f"code_{code}") if code is not None else None,
              "num_vars": attr("NumVars"), "num_constrs": attr("NumConstrs"),
              "num_int_vars": attr("NumIntVars"), "num_qnzs": attr("NumQNZs", 0),
              "objective": None, "solution": None}
    sol_count = attr("SolCount", 0) or 0
    if code == 2 and sol_count > 0:
        obj = attr("ObjVal")
        report["objective"] = float(obj) if obj is not None else None
    if sol_count > 0:
        try:
            variables = model.getVars()
            if len(variables) <= max_solution:
                report["solution"] = {v.VarName: float(v.X) for v in variables}
        except Exception:
            pass
    return report


def run_program_in_this_process(request: dict, result_fd: int, workdir: str, out_fd: int, err_fd: int) -> None:
    """Set up the isolation layers, exec the program, write the JSON report to result_fd, _exit."""
    t0 = time.perf_counter()
    own_pid = os.getpid()
    report: dict = {"enforced": []}
    code = 0
    try:
        limits = request.get("limits", {})
        backend = request.get("backend", "gurobipy")
        if os.getpid() != os.getsid(0):
            os.setsid()
        report["enforced"].append("process_group")
        os.chdir(workdir)
        for name, content in (request.get("files") or {}).items():  # input files, read-only to the program
            path = os.path.join(workdir, os.path.basename(name))
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(content)
            os.chmod(path, 0o444)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False, buffering=1)
        sys.stderr = open(2, "w", closefd=False, buffering=1)
        os.environ.clear()
        os.environ.update(minimal_env(workdir))
        report["enforced"].append("minimal_env")

        module = _SOLVERS.get(backend)
        if module is None:
            raise RuntimeError(f"backend {backend!r} is not prepared in this interpreter")
        sys.modules["gurobipy"] = module  # the program's `import gurobipy` gets the chosen backend
        if backend == "gurobipy" and limits.get("solver_time_limit_s") is not None:
            module.setParam("TimeLimit", float(limits["solver_time_limit_s"]))
        if backend == "shim":
            module.setParam("TimeLimit", limits.get("solver_time_limit_s"))
        recorded: list = []
        fallback: list = []
        _install_recorder(module, recorded, fallback)

        own_uid = bool(limits.get("drop_privileges", True)) and os.geteuid() == 0
        report["enforced"] += _set_limits(limits, own_uid)
        if own_uid and _drop_privileges(uid_for_pid(os.getpid()), workdir):
            report["enforced"].append("unprivileged_uid")
        if _no_new_privs():
            report["enforced"].append("no_new_privs")
        if limits.get("audit_hook", True):
            sys.addaudithook(_make_audit_hook(workdir))
            report["enforced"].append("audit_hook")

        compiled = compile(request["code"], "<solver_code>", "exec")
        namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        try:
            exec(compiled, namespace)
        except SystemExit as exc:
            if exc.code not in (None, 0):
                report["exception"] = f"SystemExit({exc.code!r})"
        except BaseException as exc:  # the program's own failure, reported, not fatal to us
            tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
            report["exception"] = f"{type(exc).__name__}: {exc}"
            report["traceback"] = "".join(tb)[-4000:]
        report["fallback"] = fallback[-1] if fallback else None
        report["optimize_calls"] = len(recorded)
        if recorded:
            report.update(_model_report(recorded[-1], int(limits.get("max_solution_vars", 2000))))
    except BaseException as exc:  # a failure of the harness itself inside the child
        report["harness_error"] = f"{type(exc).__name__}: {exc}"
        code = 70
    report["child_wall_s"] = time.perf_counter() - t0
    if os.getpid() != own_pid:  # a process the program forked: only the program itself reports
        os._exit(0)
    try:
        data = json.dumps(report, default=str).encode()
        view = memoryview(data)
        while view:
            written = os.write(result_fd, view)
            view = view[written:]
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os._exit(code)


# ----------------------------------------------------------------------------------------------
# Supervision: used by the zygote (forked children) and by the harness (spawned interpreters)
# ----------------------------------------------------------------------------------------------
def _kill_uid_processes(uid: int) -> int:
    """Kill every process still running as the per-run uid (escapees from the process group)."""
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                for line in fh:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            os.kill(int(entry), signal.SIGKILL)
                            killed += 1
                        break
        except (OSError, ValueError):
            continue
    return killed


def _read_tail(fd: int, limit: int) -> str:
    size = os.fstat(fd).st_size
    start = max(0, size - limit)
    data = os.pread(fd, min(size, limit), start)
    text = data.decode("utf-8", "replace")
    return ("[... truncated ...]\n" + text) if start else text


def supervise(pid: int, result_r: int, wall_s: float, out_fd: int, err_fd: int, max_output: int) -> dict:
    """Wait for the child with a wall-clock limit, kill its whole process group (and anything left
    running under its uid), and collect the report, exit status and output tails."""
    t0 = time.perf_counter()
    deadline = t0 + wall_s
    chunks: list[bytes] = []
    pipe_open = True
    status = None
    timed_out = False
    rusage = None
    try:  # a pidfd becomes readable when the child exits: wait on it and the pipe together
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            done, st, ru = os.wait4(pid, os.WNOHANG)
            if done:
                status, rusage = st, ru
                break
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                timed_out = True
                break
            watch = ([result_r] if pipe_open else []) + ([pidfd] if pidfd is not None else [])
            poll = remaining if pidfd is not None else min(remaining, 0.002)
            ready, _, _ = select.select(watch, [], [], poll)
            if result_r in ready:
                data = os.read(result_r, 1 << 16)
                if data:
                    chunks.append(data)
                else:
                    pipe_open = False
    finally:
        if pidfd is not None:
            os.close(pidfd)
    group_left = True
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        group_left = False
    except PermissionError:
        pass
    if status is None:
        _, status, rusage = os.wait4(pid, 0)
    escaped = 0
    if group_left or timed_out or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        escaped = _kill_uid_processes(uid_for_pid(pid))
    # Reap anything re-parented to us (we are a child subreaper in the zygote).
    while True:
        try:
            reaped, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if reaped == 0:
            break
    os.set_blocking(result_r, False)
    while True:
        try:
            data = os.read(result_r, 1 << 16)
        except BlockingIOError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(result_r)
    report = None
    if chunks:
        try:
            report = json.loads(b"".join(chunks))
        except ValueError:
            report = None
    return {
        "report": report,
        "timed_out": timed_out,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "wall_s": time.perf_counter() - t0,
        "cpu_s": (rusage.ru_utime + rusage.ru_stime) if rusage else None,
        "max_rss_kb": rusage.ru_maxrss if rusage else None,
        "killed_escapees": escaped,
        "stdout": _read_tail(out_fd, max_output),
        "stderr": _read_tail(err_fd, max_output),
    }


def _open_output_files(workdir: str) -> tuple[int, int]:
    flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    return os.open(os.path.join(workdir, ".stdout"), flags, 0o600), os.open(os.path.join(workdir, ".stderr"), flags, 0o600)


def _rmtree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def serve_one_forked(request: dict) -> dict:
    """Zygote side: fork one fresh child for this program and supervise it."""
    import tempfile

    workdir = tempfile.mkdtemp(prefix="orsbx-", dir=request.get("tmp_root"))
    out_fd, err_fd = _open_output_files(workdir)
    result_r, result_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(result_r)
        run_program_in_this_process(request, result_w, workdir, out_fd, err_fd)
        os._exit(71)  # not reached
    os.close(result_w)
    limits = request.get("limits", {})
    try:
        return supervise(pid, result_r, float(limits.get("wall_s", 10.0)), out_fd, err_fd,
                         int(limits.get("max_output_bytes", 65536)))
    finally:
        os.close(out_fd)
        os.close(err_fd)
        _rmtree(workdir)


def _become_subreaper() -> None:
    # No PR_SET_PDEATHSIG: it fires when the *thread* that started us exits, which would kill a
    # zygote started from a short-lived thread.  The zygote ends when its stdin closes instead.
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of a program come back to us
    except Exception:
        pass


def zygote_main() -> int:
    # Replies go to a private copy of stdout; fd 1 itself is sent to stderr so that banners printed
    # by solver libraries ("Restricted license ...") cannot corrupt the protocol.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    _become_subreaper()
    ready = prepare_solvers(want_gurobi=True, want_shim=True, extra_imports=sorted(ALLOWED_IMPORTS))
    # Move everything imported so far out of the collector's reach: a collection in a forked child
    # would otherwise touch (and copy-on-write) every object page of the warm interpreter.
    import gc

    gc.collect()
    gc.freeze()
    proto.write(json.dumps({"ready": ready, "pid": os.getpid()}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            reply = serve_one_forked(request)
        except Exception as exc:  # never let one request take the zygote down
            reply = {"report": None, "zygote_error": f"{type(exc).__name__}: {exc}"}
        proto.write(json.dumps(reply, default=str) + "\n")
    return 0


def one_main() -> int:
    """Fresh-interpreter mode: request on stdin (with workdir and fds prepared by the harness)."""
    request = json.loads(sys.stdin.readline())
    backend = request.get("backend", "gurobipy")
    prepare_solvers(want_gurobi=backend == "gurobipy", want_shim=backend == "shim",
                    extra_imports=request.get("imports", ()))
    run_program_in_this_process(request, int(request["result_fd"]), request["workdir"],
                                int(request["out_fd"]), int(request["err_fd"]))
    return 71  # not reached


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "--zygote":
        sys.exit(zygote_main())
    if mode == "--one":
        sys.exit(one_main())
    if mode == "--probe":
        print(json.dumps(prepare_solvers()))
        sys.exit(0)
    print("usage: sandbox_runner.py --zygote | --one | --probe", file=sys.stderr)
    sys.exit(2)
