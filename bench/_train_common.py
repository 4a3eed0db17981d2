"""Shared pieces of the training benchmarks (bench/swap_optimizer.py, train_step.py, train_small.py,
train_multi.py): hardware/commit stamp, atomic JSON results (--out), a rich table, the CUDA
requirement, the model-size arguments, and `launch`: one run of `trex.training.train` in a child
process (torchrun for several processes) under a wall-clock limit that reports instead of hanging."""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
if str(REPO) not in sys.path:          # `python bench/x.py` from anywhere imports the repo's packages
    sys.path.insert(0, str(REPO))

# NVLink multicast stays off on the lent machines (NVLS / symmetric-memory multicast).
NCCL_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}


def git_commit() -> str:
    # the device tool's copy of the tree carries a .git of the session's first checkout: a commit
    # passed in TREX_COMMIT (git rev-parse HEAD where the run was launched) wins
    if os.environ.get("TREX_COMMIT"):
        return os.environ["TREX_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def hardware() -> dict:
    info = {"torch": torch.__version__, "python": platform.python_version(), "host": platform.node(),
            "cpu_count": os.cpu_count()}
    if torch.cuda.is_available():
        info.update(cuda=torch.version.cuda, gpu=torch.cuda.get_device_name(0), gpus=torch.cuda.device_count(),
                    gpu_memory_gib=round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1))
    return info


_SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


def out_path(name: str, out: str | None) -> Path:
    """--out, else bench/results/<name>.json; the file name is letters, digits, '.', '_', '-' only
    (what the device tool copies back)."""
    path = Path(out) if out else RESULTS / f"{name}.json"
    if not _SAFE_NAME.match(path.name):
        raise SystemExit(f"--out {out!r}: the file name may hold only letters, digits, '.', '_' and '-'")
    return path


def write_results(name: str, payload: dict, out: str | None = None) -> Path:
    """--out (default bench/results/<name>.json), with time, commit and hardware; temp file + rename."""
    record = {"benchmark": name, "time_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "commit": git_commit(), "hardware": hardware(), **payload}
    path = out_path(name, out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1, default=str))
    os.replace(tmp, path)
    return path


def print_table(title: str, columns: list[str], rows: list[list]) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table(title=title)
    for c in columns:
        table.add_column(c, justify="right" if c != columns[0] else "left")
    for row in rows:
        table.add_row(*[_fmt(v) for v in row])
    Console(width=200).print(table)   # wide enough when stdout is not a terminal (the device log)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def require_cuda(script: str) -> None:
    if not torch.cuda.is_available():
        print(f"{script}: needs a CUDA GPU (this is an H200 benchmark); none found "
              f"(add --device cpu for a CPU smoke run)", file=sys.stderr)
        raise SystemExit(2)


# ---------------------------------------------------------------------------------------------
# Model size and run arguments shared by train_step / train_small / train_multi

CONFIG = REPO / "trex" / "configs" / "small_h200.toml"
# --model -> the shipped config whose data, optimizer and batch the run starts from (others: CONFIG
# with model.name replaced)
MODEL_CONFIGS = {"small": CONFIG, "flash_h200": REPO / "trex" / "configs" / "flash_h200.toml"}


def config_for(model: str) -> Path:
    return MODEL_CONFIGS.get(model, CONFIG)


def add_model_args(ap: argparse.ArgumentParser, name: str, seq_len: int, micro_batch: int) -> None:
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                    help="cuda: the H200 benchmark; cpu: a smoke run of the same code (use --model tiny)")
    ap.add_argument("--model", default="small", help="trex.training.model config name (small; tiny for CPU smoke runs)")
    ap.add_argument("--n-layers", type=int, default=0,
                    help="trunk layers (0: the config's); fewer layers keep every block kind "
                         "(SWA, CSA, HCA, MTP) while cutting compile time")
    ap.add_argument("--seq-len", type=int, default=seq_len)
    ap.add_argument("--micro-batch", type=int, default=micro_batch)
    ap.add_argument("--moe-dispatch", default="eager", choices=["eager", "per_expert", "traced"],
                    help="model.compile_moe_dispatch for compiled modes. eager (default here): the routed "
                         "experts' data-dependent dispatch runs eagerly in every mode, so modes compare the "
                         "same compiled part and no step recompiles; per_expert compiles each expert call "
                         "(dynamic row count; on CUDA trex then plans a kernel launch per new row count)")
    ap.add_argument("--out", default=None, help=f"result JSON (default bench/results/{name}.json)")


def model_overrides(args) -> dict:
    """Config overrides for --device/--model/--n-layers/--seq-len/--micro-batch (+ fp32 on the CPU:
    bf16 autocast matmuls are slow there and the smoke run checks the code path, not numbers)."""
    from trex.training.model import get_config
    over = {"model.name": args.model, "train.device": args.device, "model.compile_moe_dispatch": args.moe_dispatch}
    # None (train_step's defaults): the model's shipped config decides
    over.update({key: value for key, value in (("data.seq_len", args.seq_len), ("data.micro_batch", args.micro_batch))
                 if value is not None})
    if args.device == "cpu":
        over["train.precision"] = "fp32"
    if args.n_layers:
        model = get_config(args.model)
        if not 1 <= args.n_layers <= model.n_layers:
            raise SystemExit(f"--n-layers {args.n_layers}: must be in 1..{model.n_layers} for --model {args.model}")
        ratios = list(model.compress_ratios)
        # the first n trunk layers (the small config's 2 SWA + alternating CSA/HCA), then the MTP entries
        over["model.overrides.n_layers"] = args.n_layers
        over["model.overrides.compress_ratios"] = ratios[:args.n_layers] + ratios[model.n_layers:]
        over["model.overrides.n_hash_layers"] = min(model.n_hash_layers, args.n_layers)
    return over


def check_device(script: str, device: str) -> None:
    if device == "cuda":
        require_cuda(script)


# ---------------------------------------------------------------------------------------------
# One training run in a child process, under a wall-clock limit


class Run:
    """One `trex.training.train` run in a child process (started by `start_run`, collected by `finish`)."""

    def __init__(self, name: str, proc: subprocess.Popen, timeout_s: float, files: dict, t0: float):
        self.name, self.proc, self.timeout_s, self.files, self.t0 = name, proc, timeout_s, files, t0

    def finish(self) -> dict:
        """Wait until the run ends or its limit passes (then stop it: `_stop_tree`); return
        {name, status (ok | failed | timeout), returncode, wall_s, records, summary, phases, tail}."""
        status = "ok"
        try:
            self.proc.wait(timeout=max(0.0, self.timeout_s - (time.perf_counter() - self.t0)))
        except subprocess.TimeoutExpired:
            status = "timeout"
            _stop_tree(self.proc)
        wall = time.perf_counter() - self.t0
        self.files["out_handle"].close()
        text = self.files["out"].read_text(errors="replace")
        if status == "ok" and self.proc.returncode != 0:
            status = "failed"
        log, summary = self.files["log"], self.files["summary"]
        records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.is_file() else []
        phases = [line for line in text.splitlines() if line.startswith("[trex train rank")]
        run = {"name": self.name, "status": status, "returncode": self.proc.returncode, "wall_s": round(wall, 1),
               "timeout_s": round(self.timeout_s, 1), "records": records,
               "summary": json.loads(summary.read_text()) if summary.is_file() else None, "phases": phases[-16:]}
        if status != "ok":
            # the workers' own tracebacks ("[rank0]: ...") say why; torchrun's summary after them does not
            rank_lines = [line for line in text.splitlines() if line.startswith("[rank")]
            run["tail"] = "\n".join(rank_lines[-40:]) if rank_lines else text[-4000:]
            print(f"[{self.name}] {status} after {wall:.0f} s (limit {self.timeout_s:.0f} s, {len(records)} steps "
                  f"logged); last phase lines:\n  " + "\n  ".join(phases[-6:]), flush=True)
            print(run["tail"][-3000:], flush=True)
        else:
            print(f"[{self.name}] ok in {wall:.0f} s, {len(records)} steps", flush=True)
        return run


def start_run(name: str, overrides: dict, *, nproc: int = 1, timeout_s: float, workdir: Path,
              env: dict | None = None, config: Path = CONFIG) -> Run:
    """Start `trex.training.train` on `config` (default CONFIG) with `overrides` (python -m for one process, torchrun for
    more) with a JSONL step log, a run summary and phase lines (log.phases) in `workdir`, in its own
    session so that the whole tree can be stopped."""
    workdir.mkdir(parents=True, exist_ok=True)
    files = {"log": workdir / f"{name}.jsonl", "summary": workdir / f"{name}.summary.json",
             "out": workdir / f"{name}.out"}
    for key in ("log", "summary"):
        files[key].unlink(missing_ok=True)
    overrides = {"checkpoint.dir": "", **overrides, "log.jsonl": str(files["log"]),
                 "log.summary": str(files["summary"]), "log.progress": False, "log.phases": True}
    if nproc > 1:
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                "-m", "trex.training.train"]
    else:
        argv = [sys.executable, "-m", "trex.training.train"]
    argv += ["--config", str(config)]
    for key, value in overrides.items():
        argv += [f"--{key}", json.dumps(value)]
    shown_env = " ".join(f"{k}={v}" for k, v in (env or {}).items())
    print(f"[{name}] (limit {timeout_s:.0f} s) {shown_env} {' '.join(argv[1:])}", flush=True)
    files["out_handle"] = open(files["out"], "w")
    proc = subprocess.Popen(argv, cwd=REPO, env={**os.environ, **(env or {})}, stdout=files["out_handle"],
                            stderr=subprocess.STDOUT, start_new_session=True)
    return Run(name, proc, timeout_s, files, time.perf_counter())


def launch(name: str, overrides: dict, *, nproc: int = 1, timeout_s: float, workdir: Path,
           env: dict | None = None, config: Path = CONFIG) -> dict:
    """start_run + finish: one run under a wall-clock limit that is reported, not waited for."""
    return start_run(name, overrides, nproc=nproc, timeout_s=timeout_s, workdir=workdir, env=env,
                     config=config).finish()


def _children(pid: int) -> list[int]:
    """Direct children of `pid` (from /proc), e.g. torchrun's workers: torchrun starts each worker in
    a session of its own, so signalling torchrun's process group does not reach them."""
    kids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            kids.append(int(entry.name))
    return kids


def _stop_tree(proc: subprocess.Popen) -> None:
    """SIGTERM the child's process group and the process groups of its direct children (torchrun's
    workers), SIGKILL whatever is left 10 s later (a worker blocked inside NCCL ignores SIGTERM)."""
    groups = [proc.pid] + _children(proc.pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pgid in groups:
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if sig == signal.SIGTERM:
            time.sleep(0.5)
            alive = [g for g in groups if _group_alive(g)]
            if not alive:
                return
            groups = alive


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def scratch_dir(name: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"trex_{name}_"))


def step_stats(records: list[dict], warmup: int, exclude_steps: tuple = ()) -> dict:
    """Medians over the steps after `warmup` (all steps if there are no more), leaving out
    `exclude_steps` (a step run under the profiler, which slows the host)."""
    timed = [r for r in records[warmup:] if r.get("step") not in exclude_steps] or records[warmup:] or records
    if not records:
        return {}
    return {"steps_timed": len(timed), "tokens_per_s": median([r["tokens_per_s"] for r in timed]),
            "mfu": median([r["mfu"] for r in timed if r["mfu"] is not None]),
            "step_time_s": median([r["step_time_s"] for r in timed]),
            "peak_mem_gib": max(r["peak_mem_bytes"] for r in records) / 2**30,
            "tokens_per_step": records[0]["tokens"]}


def median(xs: list[float]) -> float | None:
    xs = sorted(xs)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else 0.5 * (xs[mid - 1] + xs[mid])
