"""`trex doctor`: which sandbox layers this host enforces for model-written programs.

    trex doctor [--json]

Starts one sandboxed zygote, runs one program in it and lists every layer with whether it held
and, where not, why and how to add it.  Exit status 0 when every kernel layer that scoring
untrusted code needs (trex.training.or_data.sandbox.KERNEL_LAYERS) holds, 1 otherwise (then
`trex or-eval` refuses to run programs unless given --allow-weak-sandbox).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess

from trex.training.or_data import scip_backend
from trex.training.or_data.sandbox import KERNEL_LAYERS, host_layers, probe_backends

# What each layer stops, for the table.
LAYER_ROLES = {
    "mount_namespace": "the program sees only the interpreter, its site-packages and the solver modules",
    "pid_namespace": "it sees no other process; all of the run's processes die with the zygote",
    "network_namespace": "no network interface at all",
    "private_tmp": "/tmp and /dev/shm are empty and unwritable (nothing is left for the next run)",
    "seccomp": "no exec, ptrace, sockets, namespaces, mounts, bpf or io_uring",
    "cgroup_memory": "the whole run's memory (every process together) is bounded",
    "cgroup_pids": "the whole run's task count is bounded; leftovers are killed after each run",
    "ipc_namespace": "no System V IPC shared with the host",
    "die_with_parent": "the sandbox dies when the harness does",
    "unprivileged_uid": "a per-run uid (as root): nothing outside the run is writable",
    "no_new_privs": "no setuid binary can raise privileges",
}


def _bwrap_version() -> str | None:
    exe = shutil.which("bwrap")
    if exe is None:
        return None
    try:
        return subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10).stdout.strip() or exe
    except (OSError, subprocess.SubprocessError):
        return exe


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="trex doctor", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the findings as one JSON object")
    args = parser.parse_args(argv)
    layers = host_layers()
    backends = probe_backends()
    findings = {"layers": {name: {"held": why is None, "why_not": why} for name, why in layers.items()},
                "kernel_layers_required": list(KERNEL_LAYERS), "bwrap": _bwrap_version(),
                "solver_backends": {"shim": backends.get("shim"), "gurobipy": backends.get("gurobipy"),
                                    # the shim's quadratic constraints / nonconvex / MIQP (same interpreter)
                                    "scip": scip_backend.available()}}
    ok = all(layers[name] is None for name in KERNEL_LAYERS)
    if args.json:
        print(json.dumps(findings, indent=2))
        return 0 if ok else 1
    from rich.console import Console
    from rich.table import Table

    table = Table(title="trex sandbox layers on this host")
    for col in ("layer", "held", "what it stops / why not"):
        table.add_column(col)
    for name, why in layers.items():
        required = " (required)" if name in KERNEL_LAYERS else ""
        table.add_row(name + required, "[green]yes" if why is None else "[red]no",
                      LAYER_ROLES.get(name, "") if why is None else why)
    console = Console()
    console.print(table)
    console.print(f"bubblewrap: {findings['bwrap'] or 'not installed (apt-get install -y bubblewrap)'}; "
                  f"solver backends: {findings['solver_backends']}")
    console.print("every required layer holds: trex or-eval runs model-written programs" if ok else
                  "[red]some required layers are missing[/red]: trex or-eval refuses model-written programs "
                  "unless given --allow-weak-sandbox")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
