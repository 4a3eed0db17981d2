"""Inside the sandbox: a warm zygote that forks ONE fresh child per untrusted program.

The program only *builds* its model: the solver module (the HiGHS shim, or gurobipy) writes the
model it is asked to optimize into the run's work folder (``model.json`` / ``model.mps``) before
solving it for the program's own use.  The trusted parent (trex/training/or_data/sandbox.py) reads
that file, solves and checks the model itself and reports; nothing the program says about its
result (objective, status, printed numbers, a forged report) is ever read.

    python -I -S sandbox_runner.py --zygote --site DIR ...

Protocol on the zygote's stdin/stdout: length-prefixed JSON frames (``write_frame``/``read_frame``).
For each program the parent sends a request frame and then a nonce frame; the zygote reads the
request (exactly its bytes), forks the child, and only then reads the nonce, so the child's memory
never holds it.  The reply frame carries the nonce; the parent rejects any reply without it.

The child, before the program runs: a new session, oom_score_adj 1000 (the cgroup's OOM killer
picks it, not the zygote), fds 0/1/2 only (stdin /dev/null, stdout/stderr to files the program
cannot remove), a scrubbed environment, rlimits, a per-run uid (root only), no_new_privs, a seccomp
filter (no exec, ptrace, sockets, namespaces, mounts, io_uring, bpf, ...), the audit hook (friendly
early errors only).  It reports which of these held through a setup pipe it closes before the
program starts.  This module imports only the standard library at import time.
"""
from __future__ import annotations

import json
import os
import resource
import select
import signal
import struct
import sys
import time
import traceback

# Modules the program may import (top-level names), imported by the zygote before any fork.
ALLOWED_IMPORTS = frozenset({
    "gurobipy", "math", "itertools", "functools", "collections", "json", "numpy", "typing",
    "dataclasses", "fractions", "decimal", "statistics", "operator", "heapq", "bisect", "random",
    "re", "string", "copy", "enum", "abc",
})

# Audit events refused with a clear message (the kernel layers are the barrier; this is the
# friendly early error).
BLOCKED_EVENTS = frozenset({
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "subprocess.Popen", "os.kill", "os.killpg",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "ctypes.call_function", "ctypes.addressof",
    "os.symlink", "os.link", "os.chown", "sys.addaudithook", "os.putenv", "os.unsetenv",
    "pty.spawn", "os.startfile", "webbrowser.open", "urllib.Request", "ftplib.connect",
    "smtplib.connect", "http.client.connect", "os.listxattr", "mmap.__new__",
})
PATH_MUTATING_EVENTS = frozenset({
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.truncate", "os.utime",
    "shutil.rmtree", "shutil.move", "shutil.copyfile", "shutil.copytree", "os.mkfifo", "os.mknod",
})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

UID_BASE = 200_000
UID_SPAN = 1_000_000

# The files a run leaves for the parent: in the run folder (root-owned) and its work folder.
STDOUT_NAME, STDERR_NAME, WORK_NAME = "stdout", "stderr", "work"
MODEL_JSON, MODEL_MPS, FALLBACK_NAME = "model.json", "model.mps", "fallback.txt"

# gurobipy errors after which the program is re-run on the shim (errno -> reason).
GUROBI_FALLBACK_ERRNOS = {10009: "gurobipy: no license", 10010: "gurobipy: model too large for the size-limited license"}

MAX_FRAME = 8 << 20

# Syscalls the seccomp filter refuses with EPERM: new programs, other processes' memory, sockets,
# namespaces and mounts, kernel interfaces a solver program never needs.
SECCOMP_DENY = (
    "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise",
    "pidfd_getfd", "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "bpf", "perf_event_open",
    "userfaultfd", "keyctl", "add_key", "request_key", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "open_by_handle_at", "name_to_handle_at", "swapon", "swapoff", "reboot",
    "settimeofday", "clock_settime", "quotactl", "acct", "iopl", "ioperm", "syslog", "vhangup",
    "fsopen", "fsmount", "move_mount", "open_tree", "mount_setattr",
)
# clone() flags that would create namespaces (one masked-equality rule each); clone3 passes its
# flags in memory a filter cannot read, so it answers ENOSYS and the C library falls back to clone.
CLONE_NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)


def uid_for_pid(pid: int) -> int:
    """The unprivileged uid a program runs as: unique per live child, never a real account."""
    return UID_BASE + pid % UID_SPAN


def minimal_env(home: str) -> dict[str, str]:
    """The only environment a program (and the zygote) sees; GRB_LICENSE_FILE never passes."""
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "NUMEXPR_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    if os.environ.get("LD_LIBRARY_PATH"):
        env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
    return env


# ----------------------------------------------------------------------------------------------
# Framing (shared with the parent)
# ----------------------------------------------------------------------------------------------
class FrameError(ValueError):
    pass


def write_frame(fd: int, obj) -> None:
    data = json.dumps(obj, default=str).encode()
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError("no frame before the deadline")
        data = os.read(fd, n - got)
        if not data:
            if got == 0 and not chunks:
                raise EOFError
            raise FrameError(f"stream ended inside a frame ({got} of {n} bytes)")
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)


def read_frame(fd: int, deadline: float | None = None):
    """One frame from fd: reads exactly its bytes (never more), EOFError at a clean end."""
    (size,) = struct.unpack(">I", _read_exact(fd, 4, deadline))
    if size > MAX_FRAME:
        raise FrameError(f"frame of {size} bytes > {MAX_FRAME}")
    try:
        return json.loads(_read_exact(fd, size, deadline))
    except EOFError:
        raise FrameError("stream ended inside a frame") from None
    except ValueError as exc:
        raise FrameError(f"frame is not JSON: {exc}") from None


# ----------------------------------------------------------------------------------------------
# Zygote preparation (before any fork)
# ----------------------------------------------------------------------------------------------
_SOLVERS: dict[str, object] = {}
_GUROBI_ERROR: str | None = None
_LIBSECCOMP = None
# Built once in the zygote before any fork (a child building them took 2 ms of its ~10: ctypes
# lookups, ~50 rule calls): libseccomp's load function with the filter context, and libc's prctl.
_SECCOMP: tuple | None = None
_PRCTL = None


def prepare_solvers(want_gurobi: bool = True, want_shim: bool = True, extra_imports=()) -> dict:
    """Import the solver modules (and start gurobipy's license) while still privileged."""
    global _GUROBI_ERROR, _LIBSECCOMP, _SECCOMP, _PRCTL
    if want_gurobi and "gurobipy" not in _SOLVERS and _GUROBI_ERROR is None:
        try:
            import gurobipy

            gurobipy.setParam("OutputFlag", 0)
            gurobipy.setParam("Threads", 1)
            _SOLVERS["gurobipy"] = gurobipy
        except Exception as exc:  # ImportError, or GurobiError when no license
            _GUROBI_ERROR = f"{type(exc).__name__}: {exc}"
    if want_shim and "shim" not in _SOLVERS:
        from trex.training.or_data import gurobi_shim
        from trex.training.or_data.highs_backend import _silence_banner

        _silence_banner()  # the banner would otherwise appear in every program's stdout
        _SOLVERS["shim"] = gurobi_shim
        from trex.training.or_data import scip_backend

        scip_backend.available()  # loads pyscipopt (when installed) before the fork, not in each child
    import ctypes
    import ctypes.util

    try:
        _LIBSECCOMP = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2", use_errno=True)
    except OSError:
        _LIBSECCOMP = None
    if _LIBSECCOMP is not None and _SECCOMP is None:
        _SECCOMP = _seccomp_filter(_LIBSECCOMP)
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
    _static_readable_roots()
    # socket is loaded on purpose: a network attempt must be stopped by the kernel (seccomp, the
    # empty network namespace), not by the accident of an unreadable module file.
    import socket  # noqa: F401

    for name in extra_imports:
        if name in ALLOWED_IMPORTS and name != "gurobipy":
            try:
                __import__(name)
            except ImportError:
                pass
    return {"gurobipy": "gurobipy" in _SOLVERS, "gurobipy_error": _GUROBI_ERROR, "shim": "shim" in _SOLVERS,
            "seccomp": _LIBSECCOMP is not None}


# ----------------------------------------------------------------------------------------------
# The child's layers
# ----------------------------------------------------------------------------------------------
def _vm_size_bytes() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _set_limits(limits: dict, own_uid: bool) -> list[str]:
    """rlimits (per process; the cgroup bounds the whole run).  RLIMIT_NPROC counts every task of
    the real uid, so it is only set when the program gets its own uid."""
    enforced = []
    vm_now = _vm_size_bytes()
    table = [
        ("cpu", resource.RLIMIT_CPU, limits.get("cpu_s"), lambda v: (int(v), int(v) + 1)),
        ("memory", resource.RLIMIT_AS, limits.get("memory_mb"),
         lambda v: (vm_now + int(v) * 2**20, vm_now + int(v) * 2**20)),
        ("file_size", resource.RLIMIT_FSIZE, limits.get("file_size_mb"), lambda v: (int(v) * 2**20,) * 2),
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

        prctl = _PRCTL or ctypes.CDLL(None, use_errno=True).prctl
        return prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
    except Exception:
        return False


def install_seccomp() -> bool:
    """Load the seccomp filter (built by prepare_solvers before the fork) into this process and
    its future children; False when libseccomp is missing or the kernel refuses."""
    if _SECCOMP is None:
        return False
    load, ctx = _SECCOMP
    return load(ctx) == 0


def _seccomp_filter(lib) -> tuple | None:
    """(seccomp_load, the filter context) with every rule added, or None when libseccomp refuses
    one. The context is never released: the zygote keeps it for every child it forks."""
    import ctypes

    class ArgCmp(ctypes.Structure):
        _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                    ("datum_b", ctypes.c_uint64)]

    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    allow, eperm, enosys, masked_eq = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38, 7
    ctx = lib.seccomp_init(allow)
    if not ctx:
        return None
    rules = [(eperm, lib.seccomp_syscall_resolve_name(name.encode()), None) for name in SECCOMP_DENY]
    rules.append((enosys, lib.seccomp_syscall_resolve_name(b"clone3"), None))
    nr_clone = lib.seccomp_syscall_resolve_name(b"clone")
    rules += [(eperm, nr_clone, ArgCmp(0, masked_eq, flag, flag)) for flag in CLONE_NAMESPACE_FLAGS]
    for action, nr, cmp in rules:
        if nr >= 0 and lib.seccomp_rule_add_array(ctx, action, nr, int(cmp is not None),
                                                  None if cmp is None else ctypes.byref(cmp)) != 0:
            lib.seccomp_release(ctx)
            return None
    return lib.seccomp_load, ctx


_STATIC_READABLE: tuple[str, ...] | None = None


def _static_readable_roots() -> tuple[str, ...]:
    """Where the audit hook lets a program read besides its work folder (computed once)."""
    global _STATIC_READABLE
    if _STATIC_READABLE is None:
        import site
        import sysconfig

        roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path,
                 "/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/share/zoneinfo", "/etc/localtime",
                 "/dev/null", "/dev/urandom", "/dev/random", "/dev/zero",
                 "/sys/devices/system/cpu", "/proc/cpuinfo", "/proc/meminfo"}
        roots.update(sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib"))
        roots.update(getattr(site, "getsitepackages", lambda: [])())
        _STATIC_READABLE = tuple(sorted(os.path.realpath(r) for r in roots if r))
    return _STATIC_READABLE


def _make_audit_hook(workdir: str):
    workdir_real = os.path.realpath(workdir)
    readable = (workdir_real,) + _static_readable_roots()

    def under(path, roots) -> bool:
        try:
            real = os.path.realpath(os.fsdecode(path))
        except Exception:
            return False
        return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)

    def hook(event: str, args: tuple) -> None:
        if event in BLOCKED_EVENTS or event.startswith("socket."):
            raise PermissionError(f"sandbox: '{event}' is not allowed")
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            if isinstance(path, int):
                return
            spath = os.fsdecode(path) if isinstance(path, (str, bytes)) else ""
            writes = (isinstance(mode, str) and any(ch in mode for ch in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS)
            if writes and not under(path, (workdir_real,)):
                raise PermissionError(f"sandbox: writing outside the temp dir is not allowed: {spath!r}")
            if not under(path, readable):
                raise PermissionError(f"sandbox: reading outside the allowed directories is not allowed: {spath!r}")
        elif event in PATH_MUTATING_EVENTS:
            for arg in args[:2]:
                if isinstance(arg, (str, bytes, os.PathLike)) and not under(arg, (workdir_real,)):
                    raise PermissionError(f"sandbox: '{event}' outside the temp dir is not allowed")

    return hook


def _install_gurobipy_export(module, workdir: str) -> None:
    """gurobipy: write the model to model.mps before each optimize() (the shim writes model.json
    itself); a license error leaves fallback.txt so the parent re-runs the program on the shim."""
    model_cls = module.Model
    original = getattr(model_cls.optimize, "_sandbox_original", model_cls.optimize)
    error_cls = getattr(module, "GurobiError", Exception)

    def optimize(self, *args, **kwargs):
        self.update()
        self.write(os.path.join(workdir, MODEL_MPS))
        try:
            return original(self, *args, **kwargs)
        except error_cls as exc:
            reason = GUROBI_FALLBACK_ERRNOS.get(getattr(exc, "errno", None))
            if reason is not None:
                with open(os.path.join(workdir, FALLBACK_NAME), "w") as fh:
                    fh.write(reason)
            raise

    optimize._sandbox_original = original
    model_cls.optimize = optimize


def run_child(request: dict, run_dir: str, setup_w: int, out_fd: int, err_fd: int) -> None:
    """Forked child: apply the layers, report them on setup_w, close it, run the program, _exit.
    Exit status: 0 the program ended normally, 1 it raised (traceback on stderr)."""
    setup = {"layers": []}
    layers = setup["layers"]
    try:
        limits = request.get("limits", {})
        os.setsid()
        layers.append("process_group")
        try:
            with open("/proc/self/oom_score_adj", "w") as fh:
                fh.write("1000")
        except OSError:
            pass
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        os.closerange(3, setup_w)  # the zygote's request/reply pipes, the output files' originals
        os.closerange(setup_w + 1, 1 << 16)
        layers.append("fds_0_1_2_only")
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False, buffering=1)
        sys.stderr = open(2, "w", closefd=False, buffering=1)
        workdir = os.path.join(run_dir, WORK_NAME)
        os.chdir(workdir)
        os.environ.clear()
        os.environ.update(minimal_env(workdir))
        layers.append("minimal_env")
        backend = request.get("backend", "shim")
        module = _SOLVERS.get(backend)
        if module is None:
            raise RuntimeError(f"backend {backend!r} is not prepared in this interpreter")
        sys.modules["gurobipy"] = module
        if backend == "shim":
            module.EXPORT_PATH = os.path.join(workdir, MODEL_JSON)
        else:
            _install_gurobipy_export(module, workdir)
        module.setParam("TimeLimit", limits.get("solver_time_limit_s"))
        own_uid = bool(limits.get("drop_privileges", True)) and os.geteuid() == 0
        layers += _set_limits(limits, own_uid)
        if own_uid and _drop_privileges(uid_for_pid(os.getpid()), workdir):
            layers.append("unprivileged_uid")
        if _no_new_privs():
            layers.append("no_new_privs")
        if install_seccomp():
            layers.append("seccomp")
        if limits.get("audit_hook", True):
            sys.addaudithook(_make_audit_hook(workdir))
            layers.append("audit_hook")
        setup["ready"] = True
    except BaseException as exc:  # a failure of the harness itself: the program never runs
        setup["setup_error"] = f"{type(exc).__name__}: {exc}"
    try:
        write_frame(setup_w, setup)
    finally:
        os.close(setup_w)
    if not setup.get("ready"):
        os._exit(70)
    code = 0
    own_pid = os.getpid()
    try:
        exec(compile(request["code"], "<solver_code>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    except SystemExit as exc:
        code = 0 if exc.code in (None, 0) else 1
        if code:
            print(f"SystemExit({exc.code!r})", file=sys.stderr)
    except BaseException as exc:  # the program's own failure
        code = 1
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code if os.getpid() == own_pid else 0)


# ----------------------------------------------------------------------------------------------
# Supervision (zygote side)
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


def supervise(pid: int, setup_r: int, wall_s: float) -> dict:
    """Wait for the child with a wall-clock limit, kill its group and anything under its uid,
    reap, and return its exit status and the setup report."""
    t0 = time.perf_counter()
    deadline = t0 + wall_s
    chunks: list[bytes] = []
    setup_open = True
    status = rusage = None
    timed_out = False
    pidfd = os.pidfd_open(pid)
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
            ready, _, _ = select.select(([setup_r] if setup_open else []) + [pidfd], [], [], remaining)
            if setup_r in ready:
                data = os.read(setup_r, 1 << 16)
                if data and sum(map(len, chunks)) < MAX_FRAME:
                    chunks.append(data)
                elif not data:
                    setup_open = False
    finally:
        os.close(pidfd)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if status is None:
        _, status, rusage = os.wait4(pid, 0)
    escaped = _kill_uid_processes(uid_for_pid(pid))
    # Reap what was re-parented to us (we are the child subreaper) until nothing of the run is
    # left: a killed process stays visible (a zombie, still under the run's uid) until reaped.
    reap_deadline = time.monotonic() + 5.0
    while time.monotonic() < reap_deadline:
        try:
            reaped, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if reaped == 0:
            escaped += _kill_uid_processes(uid_for_pid(pid))  # forked while we were killing
            time.sleep(0.002)
    os.set_blocking(setup_r, False)
    try:
        while setup_open:
            data = os.read(setup_r, 1 << 16)
            if not data:
                break
            chunks.append(data)
    except BlockingIOError:
        pass
    os.close(setup_r)
    setup = None
    blob = b"".join(chunks)
    if len(blob) >= 4:
        (size,) = struct.unpack(">I", blob[:4])
        try:
            setup = json.loads(blob[4:4 + size]) if size == len(blob) - 4 else None
        except ValueError:
            setup = None
    return {
        "setup": setup, "timed_out": timed_out,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "wall_s": time.perf_counter() - t0,
        "cpu_s": (rusage.ru_utime + rusage.ru_stime) if rusage else None,
        "max_rss_kb": rusage.ru_maxrss if rusage else None,
        "killed_escapees": escaped,
    }


def serve_one(request: dict, stdin_fd: int, deadline_s: float) -> dict:
    """Fork one child for this program, then read the request's nonce, then supervise."""
    run_dir = request["run_dir"]
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    out_fd = os.open(os.path.join(run_dir, STDOUT_NAME), flags, 0o644)
    err_fd = os.open(os.path.join(run_dir, STDERR_NAME), flags, 0o644)
    setup_r, setup_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(setup_r)
        run_child(request, run_dir, setup_w, out_fd, err_fd)
        os._exit(71)  # not reached
    os.close(setup_w)
    os.close(out_fd)
    os.close(err_fd)
    try:
        nonce = read_frame(stdin_fd, time.monotonic() + deadline_s)["nonce"]
    except (EOFError, TimeoutError, FrameError, KeyError, TypeError):
        nonce = None
    reply = supervise(pid, setup_r, float(request.get("limits", {}).get("wall_s", 10.0)))
    reply["nonce"] = nonce
    return reply


def _become_subreaper() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:
        pass


def zygote_main() -> int:
    # Replies go to a private copy of stdout; fd 1 itself is sent to stderr so that banners printed
    # by solver libraries cannot corrupt the protocol.
    reply_fd = os.dup(1)
    os.set_inheritable(reply_fd, False)
    os.dup2(2, 1)
    _become_subreaper()
    ready = prepare_solvers(want_gurobi=True, want_shim=True, extra_imports=sorted(ALLOWED_IMPORTS))
    import gc

    gc.collect()
    gc.freeze()  # forked children would otherwise copy-on-write every page of the warm interpreter
    write_frame(reply_fd, {"ready": ready, "pid": os.getpid()})
    while True:
        try:
            request = read_frame(0)
        except EOFError:
            return 0
        try:
            reply = serve_one(request, 0, 30.0)
        except Exception as exc:  # never let one request take the zygote down
            reply = {"zygote_error": f"{type(exc).__name__}: {exc}", "nonce": None}
        write_frame(reply_fd, reply)
        del reply, request  # the next child is forked from this memory: no earlier nonce in it


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--site" in args:  # site-packages on sys.path without running their .pth files (-S)
        sys.path.extend(args[args.index("--site") + 1:])
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    if args[:1] == ["--zygote"]:
        sys.exit(zygote_main())
    if args[:1] == ["--probe"]:
        print(json.dumps(prepare_solvers()))
        sys.exit(0)
    print("usage: sandbox_runner.py --zygote | --probe [--site DIR ...]", file=sys.stderr)
    sys.exit(2)
