"""The tuning store: one plain JSON file that users can read, diff and share.

    {
      "format": "trex-tuning-store", "version": 1,
      "configs": {                       # best configuration per (op, shape bucket, dtype, target)
        "rms_norm|D=256,ROWS<=64|bf16|ascend910b": {
          "op": "rms_norm", "bucket": "D=256,ROWS<=64", "dtype": "bf16", "target": "ascend910b",
          "program": "rms_norm_fwd_bf16_wbf16_obf16", "fingerprint": "…",   # the Kernel IR it was tuned for
          "unit": null | "<program>",    # a later launch of the op's layout: key "op[program]|…" (store_key)
          "sizes": {"ROWS": 37, "D": 256},                                 # the shape actually searched
          "config": {"rows_per_tile": 2, "buffer_depth": 2, "cores": 19},
          "time_s": 6.1e-06, "profile": "modeled (…)" | "measured (…)",
          "baseline": {"config": {…}, "time_s": 6.2e-06},                  # the cost model's choice, same profiler
          "gain": 0.016, "candidates": 14, "tuned_at": "2026-11-29T17:30:00Z"
        }
      },
      "skills": {                        # what helped, by how much, in which regime
        "ascend|memory-bound|rows_per_tile*2": {"tries": 9, "wins": 4, "sum_gain": 0.31, "best_gain": 0.12,
                                                "ops": ["rms_norm", "swiglu_limited"]}
      }
    }

Shape bucket: every column size exact, ROWS rounded up to a power of two (`ROWS<=64`): a row kernel's
best tiling changes with the number of rows per core, slowly. An entry whose program fingerprint no
longer matches the Kernel IR (a pass changed) is ignored. Writes are atomic (temp file + os.replace).

Two searches may share a file: `save` takes an exclusive lock (fcntl.flock on `<store>.lock`), re-reads
the file and merges this search's configs and skill counts, then replaces it atomically keeping the
file's mode (a shared 0644 store stays 0644). A file that is empty, truncated or not JSON is refused
with one message naming it (StoreError).

An entry records how it was made (`made_with`: candidate and time budgets, patience, checks, the
profile's label with its calibration) and the SHA-256 of the printer's kernel source it was verified
and timed with (`kernel_sha256`). A request is answered from the store only when the entry was made
with the same profile and at least the requested budgets, or its search tried every move
(`why_not_answer`); codegen's lookup (Ascend) serves an entry only while the printer still prints the
kernel it was timed with.

`backend_lookup(target, program, sizes)` is what codegen reaches through the `trex.tuned_configs`
entry point (trex.compiler.targets.tuned_config): the stored config for that program and shape, or None
(always None with TREX_TUNING_STORE=none).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

FORMAT = "trex-tuning-store"
VERSION = 1
ENV = "TREX_TUNING_STORE"
DISABLED = ("none", "off")     # TREX_TUNING_STORE=none: codegen ignores any store (tests that pin the model's choice)


def default_path() -> Path:
    env = os.environ.get(ENV)
    if env:
        return Path(env)
    return Path(os.environ.get("TREX_CACHE_DIR") or Path.home() / ".cache" / "trex") / "tuning" / "store.json"


def _pow2_ceil(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def shape_bucket(named_sizes: dict) -> str:
    parts = []
    for k in sorted(named_sizes):
        v = int(named_sizes[k])
        parts.append(f"ROWS<={_pow2_ceil(v)}" if k == "ROWS" else f"{k}={v}")
    return ",".join(parts)


def store_key(op: str, named_sizes: dict, dtype: str, target: str, unit: str | None = None) -> str:
    """unit: the program's name when it is not the first launch of its op's layout (mHC's backward apply
    program: `op[program]|...`); the first launch keeps the op's own key."""
    return f"{op if unit is None else f'{op}[{unit}]'}|{shape_bucket(named_sizes)}|{dtype}|{target}"


def skill_key(family: str, regime: str, move: str) -> str:
    return f"{family}|{regime}|{move}"


class StoreError(ValueError):
    """The store file cannot be used; the message names the file and what to do."""


def _new_skill() -> dict:
    return {"tries": 0, "wins": 0, "sum_gain": 0.0, "best_gain": 0.0, "ops": []}


class Store:
    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path else default_path()
        self.data = self._read()
        # what this object changed since it read the file: `save` merges only that into the file's
        # current content, so two searches sharing a store do not drop each other's results
        self._put_keys: set = set()
        self._skill_delta: dict = {}

    def _read(self) -> dict:
        if not self.path.exists():
            return {"format": FORMAT, "version": VERSION, "configs": {}, "skills": {}}
        try:
            text = self.path.read_text()
        except OSError as e:
            raise StoreError(f"tuning store {self.path}: cannot read it ({e.strerror}); fix its permissions or "
                             f"point {ENV} at another file") from None
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            what = "empty" if not text.strip() else f"not valid JSON (truncated or corrupt: {e.msg} at line {e.lineno})"
            raise StoreError(f"tuning store {self.path} is {what}; move it away (a new one is started) or point "
                             f"{ENV} at another file") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT or d.get("version") != VERSION:
            got = (d.get("format"), d.get("version")) if isinstance(d, dict) else (type(d).__name__, None)
            raise StoreError(f"{self.path}: not a {FORMAT} v{VERSION} file (format={got[0]!r}, "
                             f"version={got[1]!r}); move it away or point {ENV} at another file")
        if not isinstance(d.get("configs", {}), dict) or not isinstance(d.get("skills", {}), dict):
            raise StoreError(f"tuning store {self.path}: 'configs' and 'skills' must be objects (corrupt); move it "
                             f"away or point {ENV} at another file")
        d.setdefault("configs", {})
        d.setdefault("skills", {})
        return d

    @contextlib.contextmanager
    def _locked(self):
        """An exclusive lock of the store for one read-merge-write (concurrent writers queue here)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def save(self) -> None:
        with self._locked():
            base = self._read()
            base["configs"].update({k: self.data["configs"][k] for k in self._put_keys})
            for key, d in self._skill_delta.items():
                s = base["skills"].setdefault(key, _new_skill())
                s["tries"] += d["tries"]
                s["wins"] += d["wins"]
                s["sum_gain"] += d["sum_gain"]
                s["best_gain"] = max(s["best_gain"], d["best_gain"])
                s["ops"] += [op for op in d["ops"] if op not in s["ops"]]
            self.data = base
            self._put_keys, self._skill_delta = set(), {}
            try:
                mode = stat.S_IMODE(self.path.stat().st_mode)
            except FileNotFoundError:       # a new store: the mode open() would give it (0666 less the umask)
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name + ".")
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump(self.data, f, indent=2, sort_keys=True)
                    f.write("\n")
                os.chmod(tmp, mode)
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise

    @staticmethod
    def why_not_answer(entry: dict, made_with: dict) -> str:
        """'' when `entry` may answer a request made with `made_with` (Search.made_with), else why not:
        another profile (calibration), or a search cut short by budgets smaller than the request's."""
        have = entry.get("made_with")
        if not have:
            return "the entry does not record how it was made"
        if have.get("profile") != made_with.get("profile"):
            return f"the entry was timed on another profile ({have.get('profile')!r})"
        if have.get("checks", 0) < made_with.get("checks", 0):
            return f"the entry was verified with fewer checks ({have.get('checks')} < {made_with.get('checks')})"
        if str(entry.get("stop_reason", "")).startswith("every move"):
            return ""
        for k in ("max_candidates", "time_budget_s", "patience"):
            if have.get(k, 0) < made_with.get(k, 0):
                return (f"the entry's search stopped early ({entry.get('stop_reason')}) with a smaller {k} "
                        f"({have.get(k)} < {made_with.get(k)})")
        return ""

    # ------------------------------------------------------------------------------ configs
    def get(self, op: str, named_sizes: dict, dtype: str, target: str, fingerprint: str | None = None,
            unit: str | None = None) -> dict | None:
        e = self.data["configs"].get(store_key(op, named_sizes, dtype, target, unit))
        if e is None or (fingerprint is not None and e.get("fingerprint") != fingerprint):
            return None
        return e

    def put(self, entry: dict) -> str:
        key = store_key(entry["op"], entry["sizes"], entry["dtype"], entry["target"], entry.get("unit"))
        entry = dict(entry)
        entry["bucket"] = shape_bucket(entry["sizes"])
        entry.setdefault("tuned_at", _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.data["configs"][key] = entry
        self._put_keys.add(key)
        return key

    # ------------------------------------------------------------------------------- skills
    def record_skill(self, family: str, regime: str, move: str, gain: float, helped: bool, op: str) -> None:
        key = skill_key(family, regime, move)
        for s in (self.data["skills"].setdefault(key, _new_skill()), self._skill_delta.setdefault(key, _new_skill())):
            s["tries"] += 1
            if helped:
                s["wins"] += 1
                s["sum_gain"] += gain
                s["best_gain"] = max(s["best_gain"], gain)
            if op not in s["ops"]:
                s["ops"].append(op)

    def skill_score(self, family: str, regime: str, move: str) -> float | None:
        """Expected gain of a move in a regime: mean gain over its tries, i.e. the mean gain of its wins x
        its win rate (None: never tried)."""
        s = self.data["skills"].get(skill_key(family, regime, move))
        if not s or not s["tries"]:
            return None
        return (s["sum_gain"] / s["tries"])


# ------------------------------------------------------------------------------------------------
# the backend hook (entry point group trex.tuned_configs)

_CACHE: dict = {}


def backend_lookup(target: str, program, sizes: dict) -> dict | None:
    """The stored configuration for `program` (a Kernel IR Program) at `sizes` ({symbol or name: int})
    on `target`, or None. Cheap when there is no store file; re-read when the file changes."""
    if os.environ.get(ENV, "").lower() in DISABLED:
        return None
    path = default_path()
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        return None
    hit = _CACHE.get(path)
    if hit is None or hit[0] != mtime:
        try:
            hit = (mtime, Store(path).data)
        except (StoreError, OSError):
            return None
        _CACHE[path] = hit
    named = {str(k): int(v) for k, v in sizes.items()}
    bucket = shape_bucket(named)
    fp = program.fingerprint()
    for e in hit[1]["configs"].values():
        if e.get("target") == target and e.get("fingerprint") == fp and e.get("bucket") == bucket:
            if not _prints_what_was_timed(target, program, e):
                return None
            return dict(e["config"])
    return None


def printer_sha256(target: str, program, config: dict) -> str | None:
    """SHA-256 of the kernel source codegen prints for `config` (Ascend: the AscendC printer at the
    configuration's buffer depth); None where the lookup cannot print it cheaply (cuda)."""
    if not target.startswith("ascend"):
        return None
    from trex.codegen_ascendc.lowering import plan_kernel
    from trex.codegen_ascendc.printer import AscendCPrinter
    src = AscendCPrinter(plan_kernel(program, int(config["buffer_depth"]))).print()
    return hashlib.sha256(src.encode()).hexdigest()


def _prints_what_was_timed(target: str, program, entry: dict) -> bool:
    """An entry serves codegen only while the printer prints the kernel it was verified and timed with."""
    want = entry.get("kernel_sha256")
    if not want:
        return False
    have = printer_sha256(target, program, entry["config"])
    return have is None or have == want
