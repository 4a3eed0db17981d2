"""The three arms of the CPT ablation in ONE device call: trained side by side on one GPU.

A 30M-parameter model leaves an H200 mostly idle (each training step is bound by kernel launches,
not by the GPU), so the arms run as three worker processes on the same GPU at once. Flow:

1. the parent (this module's ``run_concurrent``): sandbox preflight, the data, the tokenizer and
   the SFT window fit, once for every arm (``experiment.prepare_shared``), and the decoding plan;
2. every worker (``python -m trex.training.or_eval.concurrent_arms --worker ARM``), started
   before step 1 so that it compiles while the data is built, compiles its model on synthetic
   rows of its first stage's data kind read with the byte tokenizer (3 steps; the graph depends
   only on the shapes), waits until every worker has compiled and the data stage is done, then
   steps those rows for ``calibrate_s`` seconds side by side with the others: the measured step
   time is the one the three arms see when they run together;
3. the parent sizes the steps, the same in every arm (equal compute): the preset's
   (cpt_steps, sft_steps) when they fit, otherwise both scaled down by one factor so that the
   training ends with ``decode_min_s`` of decoding and ``score_tail_s`` of scoring left
   (``size_steps``); it fixes one decoding deadline for every arm and writes ``go.json``;
4. every worker trains its arm (``experiment.train_arm``: stage after stage, as a one-arm run
   does), then decodes every test prompt in one cached batch (``chunked_decode``: the prefill in
   row chunks, so its dense attention scores fit beside two other workers) until the shared
   deadline; the parent scores each arm in the sandbox as soon as its responses arrive;
5. the parent writes ``<name>_run.json`` (the one-run format of ``experiment.run_experiment``,
   every arm) and its items file, then pairs them with ``experiment.combine_runs`` into
   ``<name>.json`` + ``<name>.png`` (Wilson per arm and split, exact McNemar against sft_only).

The time guard cuts decoding, never training: training runs the steps fixed in step 3 to the end;
a response not complete at the deadline is not evaluated (in every arm: rates and McNemar use the
items every arm evaluated), and ``time_guard`` in the JSON says what was cut and why.

``--probe-s S`` stops after step 2 with the measured steps lasting ``S`` seconds: per arm tokens/s,
step time and peak GPU memory, and the steps per arm the full run would train (on a smaller data
stage; the numbers that matter, compile and concurrent step time, do not depend on it).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from trex.training.or_eval.evaluate import atomic_write_json

WORKER_FILES = ("compiled.json", "calibration.json", "trained.json", "responses.json")
CALIBRATION_ROWS = 512       # rows of the first stage's data the compile and the measured steps read
DEADLINE_GRACE_S = 30.0      # after the decoding deadline: a worker's last decode step and its write


@dataclass
class ConcurrentPlan:
    """How the shared call is split (seconds of the parent's clock, from its start)."""
    calibrate_s: float = 12.0       # measured side-by-side steps (after the compile barrier)
    decode_min_s: float = 110.0     # decoding time kept when the steps are sized
    score_tail_s: float = 45.0      # scoring of the last arm after the deadline, JSON and plot
    stage_setup_s: float = 20.0     # per training stage outside the steps (dataset, model, checkpoint)
    min_steps: int = 20             # below this the arms are not trained (the run says so)
    wait_s: float = 300.0           # longest wait for a worker's next file before it counts as lost
    worker_threads: int = 4         # OMP threads per worker (16 cores: 3 workers + the sandbox)
    probe_s: float | None = None    # probe mode: stop after the measured steps, which last this long
    probe_decode_tokens: int = 48   # probe mode: then decode every test prompt this far (random weights)
    # prefill row chunks hold at most this many attention-score elements (~14 bytes each live:
    # ~21 GB per worker); the decode steps then run every prompt in one batch (chunked_decode.py)
    prefill_elements: float = 1.5e9


def size_steps(cfg_cpt_steps: int, cfg_sft_steps: int, step_s: float, time_left_s: float,
               plan: ConcurrentPlan, stages_per_arm: int = 2) -> dict:
    """Steps every arm trains (equal compute). The preset's (cpt, sft) when they fit in
    ``time_left_s`` with ``decode_min_s + score_tail_s`` left; else the total scaled down, the
    CPT:SFT ratio kept (rounded, each >= 1). ``fits`` is False when even ``min_steps`` do not."""
    full = cfg_cpt_steps + cfg_sft_steps
    train_s = time_left_s - plan.decode_min_s - plan.score_tail_s - stages_per_arm * plan.stage_setup_s
    fit = math.floor(train_s / step_s) if step_s > 0 and math.isfinite(train_s) else full
    total = max(0, min(full, fit))
    cpt = min(total - 1, max(1, round(total * cfg_cpt_steps / full))) if total >= 2 else 0
    return {"cpt_steps": cpt, "sft_steps": total - cpt, "total_steps": total, "preset_total_steps": full,
            "scaled": total < full, "scale": round(total / full, 4), "fits": total >= max(2, plan.min_steps),
            "step_s": round(step_s, 4), "time_left_s": _finite(time_left_s), "train_s_available": _finite(train_s),
            "predicted_train_s": round(total * step_s + stages_per_arm * plan.stage_setup_s, 1)}


def _finite(x: float) -> float | None:
    return round(x, 1) if math.isfinite(x) else None


def _config_from_dict(d: dict):
    from trex.training.or_eval.experiment import ExperimentConfig, StageConfig
    fields = {f.name for f in dataclasses.fields(ExperimentConfig)}
    d = {k: v for k, v in d.items() if k in fields}
    d["stage"] = StageConfig(**d["stage"])
    for name in ("split_sizes", "arms", "public_benchmarks"):
        d[name] = tuple(d[name])
    return ExperimentConfig(**d)


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# ----------------------------------------------------------------------------------------- worker
def _stage_run(cfg, kind: str, data: Path, steps: int, out: Path, tokenizer: str,
               max_seconds: float = 0.0) -> dict:
    """One training-loop run on ``data`` read with ``tokenizer`` (a training-loop tokenizer spec),
    without a checkpoint: the compile and the calibration. Step times and peak memory."""
    import shutil

    from trex.training.config import load_config
    from trex.training.or_eval.experiment import stage_overrides
    from trex.training.train import train

    if out.exists():
        shutil.rmtree(out)
    overrides = dict(stage_overrides(cfg, kind, data, steps, out / "ckpt", out / "log.jsonl"))
    overrides.update({"checkpoint.dir": "", "train.max_seconds": max_seconds, "log.jsonl": "",
                      "data.tokenizer": tokenizer})
    t0 = time.perf_counter()
    result = train(load_config(None, list(overrides.items())))
    times = [r["step_time_s"] for r in result.records]
    steady = sorted(times[1:]) or times
    median = steady[len(steady) // 2] if steady else None
    tokens_per_step = result.records[0]["tokens"] if result.records else 0
    return {"kind": kind, "steps": len(times), "first_step_s": round(times[0], 3) if times else None,
            "median_step_s": None if median is None else round(median, 4),
            "tokens_per_step": tokens_per_step,
            "tokens_per_s": None if not median else round(tokens_per_step / median),
            "peak_mem_bytes": max((r["peak_mem_bytes"] or 0 for r in result.records), default=0),
            "wall_s": round(time.perf_counter() - t0, 2)}


def _wait_file(path: Path, timeout_s: float) -> dict:
    t_end = time.monotonic() + timeout_s
    while time.monotonic() < t_end:
        got = _read(path)
        if got is not None:
            return got
        time.sleep(0.2)
    raise TimeoutError(f"{path} did not appear within {timeout_s:.0f}s (the parent is gone or stalled)")


def _decode(cfg, plan: ConcurrentPlan, model, tok, questions, deadline: float | None, max_new_tokens: int):
    """Every prompt in one cached batch (prefill in row chunks), in the precision the model was
    trained in (bf16 autocast on the GPU, as experiment._generate_all)."""
    import contextlib

    import torch

    from trex.training.or_eval.chunked_decode import generate_texts
    from trex.training.or_eval.model_io import resolve_device
    device = resolve_device(cfg.stage.device)
    amp = (torch.autocast(device_type=device.type, dtype=torch.bfloat16)
           if cfg.stage.precision == "bf16" and device.type == "cuda" else contextlib.nullcontext())
    with amp:
        return generate_texts(model, tok, questions, max_new_tokens, deadline, plan.prefill_elements)


def _probe_decode(cfg, plan: ConcurrentPlan, shared: dict, tokenizer_path: Path) -> dict:
    """Decoding speed side by side: every test prompt in the run's batches, on a randomly initialised
    model of the run's config (rows rarely stop early), for 1 and for ``new_tokens`` new tokens."""
    import torch

    from trex.training.or_eval.model_io import model_args_from_config, resolve_device
    from trex.training.or_tokenizer import ORTokenizer
    lib, args = model_args_from_config({"model": {"name": cfg.stage.model, "overrides": cfg.stage.model_overrides},
                                        "data": {"seq_len": cfg.stage.seq_len}})
    torch.manual_seed(cfg.seed)
    model = lib.Transformer(args).to(resolve_device(cfg.stage.device)).eval()
    tok = ORTokenizer.load(tokenizer_path)
    new_tokens = plan.probe_decode_tokens
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    times = {}
    for n in (1, new_tokens):
        t0 = time.perf_counter()
        _decode(cfg, plan, model, tok, shared["questions"], None, n)
        times[n] = time.perf_counter() - t0
    # the difference of two timings: at toy scale (prefill-dominated) noise can make it negative
    step_s = max(0.0, (times[new_tokens] - times[1]) / max(1, new_tokens - 1))
    return {"prompts": len(shared["questions"]), "prefill_elements": plan.prefill_elements, "new_tokens": new_tokens,
            "prefill_and_one_token_s": round(times[1], 2), "decode_step_s": round(step_s, 4),
            "predicted_decode_s": round(times[1] + step_s * shared["max_new_tokens"], 1),
            "max_new_tokens": shared["max_new_tokens"],
            "max_memory_allocated_bytes": torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None}


def synthetic_rows(kind: str, n: int) -> list[dict]:
    """``n`` rows of seeded letters for the data kind, one byte-tokenizer token a character:
    ``cpt`` texts of 3000 (longer than a 2048-token window), SFT prompt + response pairs of 1000
    (two or so packed into a window, none cut)."""
    import random
    import string
    rng = random.Random(0)
    letters = string.ascii_lowercase + " \n"

    def text(k: int) -> str:
        return "".join(rng.choices(letters, k=k))
    if kind == "cpt":
        return [{"text": text(3000)} for _ in range(n)]
    return [{"prompt": text(300), "response": text(700)} for _ in range(n)]


def worker_main(arm: str, work: Path) -> int:
    """One arm: compile, barrier, measured steps, then (unless probing) train, decode, write."""
    import torch

    from trex.training.or_eval.experiment import _write_jsonl, train_arm

    started = json.loads((work / "config.json").read_text())
    cfg = _config_from_dict(started["config"])
    plan = ConcurrentPlan(**started["plan"])
    mine = work / "arms3" / arm
    mine.mkdir(parents=True, exist_ok=True)
    # the compile and the calibration read synthetic rows with the byte tokenizer: the graph depends
    # only on the shapes (batch, seq_len, the model's vocab), so they run while the parent builds
    # the data and the BPE; the real stages reuse the compiled graph
    kind = "cpt" if arm != "sft_only" else ("sft_packed" if cfg.stage.sft_packed else "sft")
    slice_path = _write_jsonl(mine / f"calibration_{kind}.jsonl", synthetic_rows(kind, CALIBRATION_ROWS))["path"]
    compiled = _stage_run(cfg, kind, Path(slice_path), 3, mine / "compile", "byte")
    atomic_write_json(mine / "compiled.json", compiled)
    _wait_file(work / "barrier.json", plan.wait_s)    # every worker compiled and the data stage done
    shared = json.loads((work / "shared.json").read_text())
    tokenizer_path = Path(shared["tokenizer_path"])
    measured = _stage_run(cfg, kind, Path(slice_path), 1_000_000, mine / "calibrate", "byte",
                          max_seconds=plan.probe_s or plan.calibrate_s)
    if measured["steps"] < 2:
        # one step only: it held a recompile (a new model object guard-failed) and used up the
        # time; the compile run's steady steps (alone, not side by side) are the best number left
        measured.update(median_step_s=compiled["median_step_s"], tokens_per_s=compiled["tokens_per_s"],
                        note="one measured step (a recompile?): the compile run's steady step time")
    if torch.cuda.is_available() and cfg.stage.device != "cpu":
        measured["max_memory_reserved_bytes"] = torch.cuda.max_memory_reserved()
    calibration = {"compile": compiled, "measured": measured}
    if plan.probe_s is not None:
        calibration["decode"] = _probe_decode(cfg, plan, shared, tokenizer_path)
    atomic_write_json(mine / "calibration.json", calibration)
    if plan.probe_s is not None:
        return 0
    go = _wait_file(work / "go.json", plan.wait_s + 60)
    if not go.get("train", True):
        return 0
    cfg = dataclasses.replace(cfg, cpt_steps=go["cpt_steps"], sft_steps=go["sft_steps"])
    t_train = time.perf_counter()
    ckpt, stages = train_arm(cfg, arm, work, tokenizer_path)
    train_s = round(time.perf_counter() - t_train, 1)
    if torch.cuda.is_available():
        torch.cuda.empty_cache()   # the training's cached blocks, before the decoding's prefill
    atomic_write_json(mine / "trained.json", {"stages": stages, "checkpoint": str(ckpt), "train_s": train_s})
    from trex.training.or_eval.model_io import load_for_eval
    t_load = time.perf_counter()
    model, tok, info = load_for_eval(ckpt, device=cfg.stage.device)
    # the deadline travels as wall-clock time (one machine); decoding compares time.monotonic()
    allowance_s = None if go["decode_deadline_epoch"] is None else go["decode_deadline_epoch"] - time.time()
    deadline = None if allowance_s is None else time.monotonic() + allowance_s
    t_gen = time.perf_counter()
    responses = _decode(cfg, plan, model, tok, shared["questions"], deadline, shared["max_new_tokens"])
    atomic_write_json(mine / "responses.json", {
        "responses": responses, "checkpoint": info, "train_s": train_s,
        "load_s": round(t_gen - t_load, 1), "generate_s": round(time.perf_counter() - t_gen, 1),
        "decode_allowance_s": None if allowance_s is None else round(allowance_s, 1),
        "n_missing": sum(r is None for r in responses)})
    return 0


# ----------------------------------------------------------------------------------------- parent
class _Workers:
    """The worker processes and the files they write (arm -> file -> content, once seen)."""

    def __init__(self, arms, work: Path, out_dir: Path, threads: int, python: str = sys.executable):
        self.work, self.arms = work, list(arms)
        self.procs, self.logs = {}, {}
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"}
        for arm in self.arms:
            (work / "arms3" / arm).mkdir(parents=True, exist_ok=True)
            for name in WORKER_FILES:
                (work / "arms3" / arm / name).unlink(missing_ok=True)
            self.logs[arm] = out_dir / f"worker_{arm}.log"
            with open(self.logs[arm], "w") as log:
                self.procs[arm] = subprocess.Popen(
                    [python, "-m", "trex.training.or_eval.concurrent_arms", "--worker", arm, "--work-dir", str(work)],
                    stdout=log, stderr=subprocess.STDOUT, env=env)

    def file(self, arm: str, name: str) -> dict | None:
        return _read(self.work / "arms3" / arm / name)

    def failed(self, arm: str) -> str | None:
        """None while the worker runs or after a clean exit; else its exit status and log tail."""
        rc = self.procs[arm].poll()
        if rc is None or rc == 0:
            return None
        tail = self.logs[arm].read_text(errors="replace")[-600:] if self.logs[arm].is_file() else ""
        return f"exit status {rc}: ...{tail}"

    def wait_all(self, name: str, arms, timeout_s: float, on_file: Callable[[str, dict], None] | None = None):
        """Wait until every arm in ``arms`` wrote ``name`` or failed; returns (done, lost: arm -> why)."""
        pending, done, lost = list(arms), {}, {}
        t_end = time.monotonic() + timeout_s
        while pending:
            for arm in list(pending):
                exited = self.procs[arm].poll() is not None
                got = self.file(arm, name)    # read after the exit check: a file written just before exiting counts
                if got is not None:
                    done[arm] = got
                    pending.remove(arm)
                    if on_file:
                        on_file(arm, got)
                elif exited:
                    lost[arm] = self.failed(arm) or f"exited before writing {name}"
                    pending.remove(arm)
            if pending and time.monotonic() > t_end:
                for arm in pending:
                    lost[arm] = f"no {name} after {timeout_s:.0f}s"
                    self.procs[arm].kill()
                break
            if pending:
                time.sleep(0.25)
        return done, lost

    def close(self, timeout_s: float = 30.0) -> None:
        for proc in self.procs.values():
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def run_concurrent(cfg, source, plan: ConcurrentPlan, command: str | None = None) -> dict:
    """The whole ablation in one call (module docstring). Returns the combined result (probe: the
    probe's report). Writes to ``cfg.out_dir``: ``<name>.json``/``.png`` (combined),
    ``<name>_run.json``, ``<name>_run_items.json``, one log per worker (probe: ``<name>_probe.json``)."""
    from trex.training.or_eval.evaluate import SandboxExecutor
    from trex.training.or_eval.experiment import (PRIMARY_RULE, _Clock, _common_verdicts, _evaluate_subset,
                                                  _preflight, analyse, combine_runs, prepare_shared,
                                                  validate_config)
    validate_config(cfg)
    clock = _Clock(cfg.time_budget_s, cfg.reserve_s)
    work, out_dir = Path(cfg.work_dir), Path(cfg.out_dir)
    work.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("barrier.json", "go.json", "shared.json"):
        (work / name).unlink(missing_ok=True)
    preflight = _preflight(cfg)
    atomic_write_json(work / "config.json", {"config": cfg.to_dict(), "plan": dataclasses.asdict(plan)})
    t_workers = clock.elapsed()
    # the workers compile while the data and the BPE are built (synthetic rows: shapes only)
    workers = _Workers(cfg.arms, work, out_dir, plan.worker_threads)
    lost: dict[str, str] = {}
    try:
        shared = prepare_shared(cfg, source, clock, work, preflight)
        events = clock.events
        atomic_write_json(work / "shared.json", {
            "tokenizer_path": str(shared["tokenizer_path"]), "questions": shared["questions"],
            "max_new_tokens": shared["decoding"]["max_new_tokens"]})
        t_data = clock.elapsed()
        compiled, why = workers.wait_all("compiled.json", cfg.arms, plan.wait_s)
        lost.update(why)
        atomic_write_json(work / "barrier.json", {"t": clock.elapsed()})
        t_barrier = clock.elapsed()
        calibrations, why = workers.wait_all("calibration.json", list(compiled), plan.wait_s)
        lost.update(why)
        t_calibrated = clock.elapsed()
        timing = {**shared["timing_s"], "workers_compiled_s": round(t_barrier - t_workers, 1),
                  "compile_wait_after_data_s": round(t_barrier - t_data, 1),
                  "calibration_s": round(t_calibrated - t_barrier, 1)}
        measured = {a: c["measured"] for a, c in calibrations.items()}
        step_s = max((m["median_step_s"] or 0.0) for m in measured.values()) if measured else 0.0
        stages = 2 if any(a != "sft_only" for a in calibrations) else 1
        sizing = size_steps(cfg.cpt_steps, cfg.sft_steps, step_s, clock.left(), plan, stages)
        calib = {a: {"compile_first_step_s": c["compile"]["first_step_s"], **c["measured"],
                     **({"decode": c["decode"]} if "decode" in c else {})} for a, c in calibrations.items()}
        if plan.probe_s is not None:
            report = {"probe": True, "probe_s": plan.probe_s, "arms": calib, "arms_lost": lost,
                      "concurrent_step_s": step_s, "sizing_at_this_point": sizing,
                      "sizing_if_full_data_took_s": _full_sizing_table(cfg, step_s, plan, stages),
                      "timing_s": timing, "wall_s": round(clock.elapsed(), 1), "command": command}
            atomic_write_json(out_dir / f"{cfg.name}_probe.json", report)
            return report
        train_ok = sizing["fits"] and bool(calibrations)
        deadline_s = clock.elapsed() + clock.left() - plan.score_tail_s   # inf without a budget
        deadline_epoch = time.time() + deadline_s - clock.elapsed() if math.isfinite(deadline_s) else None
        events.append(f"{clock.elapsed():.0f}s: concurrent step {step_s:.3f}s; {sizing['total_steps']} steps per "
                      f"arm ({sizing['cpt_steps']} CPT + {sizing['sft_steps']} SFT; preset "
                      f"{sizing['preset_total_steps']}{', scaled down' if sizing['scaled'] else ''}); predicted "
                      f"training {sizing['predicted_train_s']:.0f}s; decoding deadline "
                      + (f"at {deadline_s:.0f}s" if math.isfinite(deadline_s) else "none (no time budget)"))
        if not train_ok:
            events.append(f"{clock.elapsed():.0f}s: not trained: {sizing['total_steps']} steps fit, below "
                          f"min_steps {plan.min_steps}")
        atomic_write_json(work / "go.json", {**sizing, "train": train_ok, "decode_deadline_epoch": deadline_epoch})
        if not calibrations:
            raise RuntimeError(f"every worker was lost before its calibration: {lost}")
        if not train_ok:
            raise RuntimeError(f"the arms were not trained: only {sizing['total_steps']} steps fit in the "
                               f"time left ({sizing['time_left_s']}s); raise time_budget_s or lower the data")
        problems, order, public_sets = shared["problems"], shared["order"], shared["public_sets"]
        verdicts, item_reports, arms = {}, {}, {}
        with SandboxExecutor(workers=cfg.eval_workers) as executor:
            def score(arm: str, got: dict) -> None:
                t_score = clock.elapsed()
                responses = got["responses"]
                test_responses = [None] * len(problems)
                for k, i in enumerate(order):
                    test_responses[i] = responses[k]
                report, done = _evaluate_subset(problems, test_responses, executor, cfg,
                                                shared["decoding"]["max_new_tokens"],
                                                {"arm": arm, "checkpoint": got["checkpoint"]})
                verdicts[arm] = {r: [None] * len(problems) for r in (PRIMARY_RULE, "legacy_5pct_rounded")}
                if report is not None:
                    for i, item in zip(done, report["items"]):
                        for r in verdicts[arm]:
                            verdicts[arm][r][i] = item["correct"].get(r)
                item_reports[arm] = {"generated": report}
                public, offset = {}, len(problems)
                for bench, ps in public_sets.items():
                    rep, _ = _evaluate_subset(ps, responses[offset:offset + len(ps)], executor, cfg,
                                              shared["decoding"]["max_new_tokens"], {"arm": arm, "benchmark": bench})
                    offset += len(ps)
                    item_reports[arm][bench] = rep
                    overall = rep["summary"]["overall"] if rep else {"n": 0}
                    public[bench] = {"n": overall["n"], "not_evaluated": len(ps) - overall["n"]}
                    if rep is not None:
                        public[bench].update({k: overall[k] for k in ("format_rate", "execution_rate", "rules")})
                trained = workers.file(arm, "trained.json") or {}
                arm_stages = trained.get("stages", [])
                if got["n_missing"]:
                    events.append(f"{clock.elapsed():.0f}s: {arm}: decoding deadline passed; {got['n_missing']} "
                                  f"of {len(responses)} responses not complete (not evaluated)")
                arms[arm] = {"stages": arm_stages, "checkpoint": trained.get("checkpoint"),
                             "train_tokens": sum(s["tokens"] for s in arm_stages),
                             "train_steps": sum(s["steps"] for s in arm_stages),
                             "generated": report["summary"] if report else None,
                             "n_evaluated": len(done), "n_not_evaluated": len(problems) - len(done),
                             "public_benchmarks": public, "calibration": calib.get(arm),
                             "timing_s": {"train": got["train_s"], "load": got["load_s"],
                                          "generate": got["generate_s"], "decode_allowance": got["decode_allowance_s"],
                                          "score": round(clock.elapsed() - t_score, 1)}}

            # a worker has until the deadline plus a grace to hand in (it stops decoding at the
            # deadline); past that it counts as lost, so the JSON is written inside the budget
            wait = (clock.left() - plan.score_tail_s + DEADLINE_GRACE_S if math.isfinite(clock.left())
                    else float("inf"))
            def score_or_record(arm: str, got: dict) -> None:
                # one arm's scoring failure (run 14: a solver status the parser did not know) must
                # not cost the arms still decoding: record it, go on
                try:
                    score(arm, got)
                except Exception as exc:   # noqa: BLE001 - recorded in the JSON, the run goes on
                    lost[arm] = f"scoring failed: {type(exc).__name__}: {exc}"
                    verdicts.pop(arm, None)
                    item_reports.pop(arm, None)

            _, why = workers.wait_all("responses.json", list(calibrations), wait, on_file=score_or_record)
            lost.update(why)
        workers.close()
        timing["after_calibration_s"] = round(clock.elapsed() - t_calibrated, 1)
        for arm, why in lost.items():
            events.append(f"arm {arm} lost: {why}")
        common = _common_verdicts(verdicts, len(problems))
        run = {"experiment": cfg.name + "_run", "complete": not lost, "concurrent": True,
               "command": command, "config": cfg.to_dict(), "plan": dataclasses.asdict(plan),
               "family_split": shared["split"], "data": shared["manifests"], "tokenizer": shared["tokenizer"],
               "n_test_problems": len(problems),
               "n_test_problems_evaluated_in_every_arm": sum(
                   v is not None for v in next(iter(common.values()))[PRIMARY_RULE]) if common else 0,
               "arms": arms, "arms_lost": lost, "public_benchmarks_unavailable": shared["public_unavailable"],
               "analysis": analyse(problems, common) if common else None, "sizing": sizing,
               "decoding": shared["decoding"], "sandbox_preflight": shared["preflight"],
               "sandbox_isolation": executor.isolation,
               "time_guard": {"budget_s": cfg.time_budget_s, "reserve_s": cfg.reserve_s,
                              "decode_deadline_s": _finite(deadline_s),
                              "events": events},
               "timing_s": timing, "items_file": str(out_dir / f"{cfg.name}_run_items.json")}
        atomic_write_json(out_dir / f"{cfg.name}_run_items.json", {"experiment": cfg.name, "arms": item_reports})
        run["wall_s"] = round(clock.elapsed(), 1)
        atomic_write_json(out_dir / f"{cfg.name}_run.json", run)
        combined = combine_runs([out_dir / f"{cfg.name}_run.json"], out_dir, cfg.name)
        combined.update({"concurrent": True, "complete": run["complete"], "arms_lost": lost, "sizing": sizing,
                         "decoding": shared["decoding"], "time_guard": run["time_guard"], "timing_s": timing,
                         "n_test_problems": len(problems), "command": command, "wall_s": round(clock.elapsed(), 1)})
        atomic_write_json(out_dir / f"{cfg.name}.json", combined)
        return combined
    finally:
        for proc in workers.procs.values():
            if proc.poll() is None:
                proc.kill()


def _full_sizing_table(cfg, step_s: float, plan: ConcurrentPlan, stages: int) -> dict:
    """Probe: the steps per arm the full run would train if its workers were calibrated at these
    points of the clock (the full data stage is larger than the probe's)."""
    if cfg.time_budget_s is None:
        return {}
    return {str(t): size_steps(cfg.cpt_steps, cfg.sft_steps, step_s, cfg.time_budget_s - cfg.reserve_s - t,
                               plan, stages)["total_steps"] for t in (120, 150, 180, 210)}


# ------------------------------------------------------------------------------------ README table
def _cell(r: dict) -> str:
    if r.get("rate") is None:
        return "-"
    return f"{r['successes']}/{r['n']} ({100 * r['rate']:.1f}%, {100 * r['low']:.1f}-{100 * r['high']:.1f})"


def _tokens(n: int | None) -> str:
    return "-" if n is None else f"{n / 1e6:.1f}M" if n >= 100_000 else str(n)


def render_table(combined: dict, rule: str | None = None) -> str:
    """The README table of a combined ablation JSON: per arm, strict Pass@1 with Wilson 95% per
    split, exact McNemar p against sft_only on the CPT-only and held-out families, the format rate,
    tokens and steps, and the public benchmarks' correct counts."""
    from trex.training.or_eval.experiment import ARMS, BASELINE_ARM, PRIMARY_RULE, SPLITS
    rule = rule or PRIMARY_RULE
    analysis = combined.get("analysis")
    if not analysis:
        return "(no arm was evaluated)"
    rates = analysis["rules"][rule]["pass_at_1"]
    tests = analysis["rules"][rule]["mcnemar_vs_" + BASELINE_ARM]
    benches = sorted({b for a in combined["arms"].values() for b in (a.get("public_benchmarks") or {})})
    head = ["arm", "all", *SPLITS, "McNemar p (CPT-only / held-out)", "format rate", "tokens", "steps", *benches]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for arm in sorted(rates, key=lambda a: ARMS.index(a) if a in ARMS else len(ARMS)):
        by_split, info = rates[arm], combined["arms"].get(arm, {})
        p = tests.get(arm)
        p_cell = "(baseline)" if p is None else " / ".join(f"{p[s]['p_value']:.3g}" for s in ("cpt_only", "held_out"))
        generated = info.get("generated") or {}
        fmt = generated.get("overall", {}).get("format_rate")
        public = info.get("public_benchmarks") or {}
        bench_cells = []
        for b in benches:
            got = public.get(b) or {}
            r = (got.get("rules") or {}).get(rule)
            bench_cells.append("-" if not r else f"{r['correct']}/{r['scored']}")
        tokens = info.get("train_tokens")
        lines.append("| " + " | ".join([
            arm, *(_cell(by_split[s]) for s in ("all", *SPLITS)), p_cell,
            "-" if fmt is None else f"{100 * fmt:.0f}%", _tokens(tokens),
            str(info.get("train_steps", "-")), *bench_cells]) + " |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ command line
def main(argv: list[str] | None = None) -> int:
    from trex.training.or_eval.experiment import (PRESETS, apply_settings, make_source, preset, split_families,
                                                  validate_config)
    p = argparse.ArgumentParser(prog="python -m trex.training.or_eval.concurrent_arms",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="h200_arms3", choices=sorted(PRESETS))
    p.add_argument("--source", default=None, choices=("or_data", "toy"))
    p.add_argument("--out-dir", default=None)
    p.add_argument("--work-dir", default=None)
    p.add_argument("--name", default=None)
    p.add_argument("--time-budget-s", type=float, default=None, help="the parent's wall-clock budget (s)")
    p.add_argument("--probe-s", type=float, default=None,
                   help="probe: measure the three arms' concurrent steps for this many seconds, print "
                        "tokens/s and peak memory per arm and the steps the full run would train, stop")
    p.add_argument("--plan", action="append", default=[], metavar="KEY=VALUE",
                   help=f"ConcurrentPlan field, e.g. --plan decode_min_s=90 "
                        f"({', '.join(f.name for f in dataclasses.fields(ConcurrentPlan))})")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override any experiment config field (as experiment.py's --set)")
    p.add_argument("--table", default=None, metavar="COMBINED_JSON",
                   help="print the README table of a combined ablation JSON and exit")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker is not None:
        if not args.work_dir:
            p.error("argument --worker: needs --work-dir")
        return worker_main(args.worker, Path(args.work_dir))
    if args.table is not None:
        if not Path(args.table).is_file():
            p.error(f"argument --table: {args.table} not found; pass a combined ablation JSON")
        print(render_table(json.loads(Path(args.table).read_text())))
        return 0
    plan_fields = {f.name: f for f in dataclasses.fields(ConcurrentPlan)}
    plan_values = {}
    for item in args.plan:
        key, sep, raw = item.partition("=")
        if not sep or key not in plan_fields or key == "probe_s":
            p.error(f"argument --plan {item!r}: write KEY=NUMBER with KEY one of "
                    f"{sorted(k for k in plan_fields if k != 'probe_s')}")
        try:
            plan_values[key] = int(raw) if isinstance(getattr(ConcurrentPlan(), key), int) else float(raw)
        except ValueError:
            kind = "an integer" if isinstance(getattr(ConcurrentPlan(), key), int) else "a number"
            p.error(f"argument --plan {item!r}: {key} takes {kind}, e.g. --plan {key}={getattr(ConcurrentPlan(), key)}")
    if args.probe_s is not None and not 0 < args.probe_s <= 600:
        p.error(f"argument --probe-s: {args.probe_s} is not in (0, 600] seconds")
    plan = ConcurrentPlan(**plan_values, probe_s=args.probe_s)
    changes = {k: v for k, v in {"out_dir": args.out_dir, "work_dir": args.work_dir, "name": args.name}.items()
               if v is not None}
    if args.time_budget_s is not None:
        changes["time_budget_s"] = args.time_budget_s or None
    try:
        cfg = apply_settings(preset(args.preset, **changes), args.set)
        validate_config(cfg)
        source = make_source(args.source or ("toy" if args.preset == "toy" else "or_data"))
        split_families(cfg, source.families())
    except ValueError as exc:
        p.error(str(exc))
    command = " ".join(["python -m trex.training.or_eval.concurrent_arms", *(argv if argv is not None else sys.argv[1:])])
    result = run_concurrent(cfg, source, plan, command=command)
    if plan.probe_s is not None:
        for arm, m in result["arms"].items():
            print(f"probe {arm:18s} compile(first step) {m['compile_first_step_s']}s  {m['steps']} steps  "
                  f"median {m['median_step_s']}s/step  {m['tokens_per_s']} tokens/s  "
                  f"peak {m['peak_mem_bytes'] / 2**30:.1f} GiB")
            d = m.get("decode") or {}
            if d:
                print(f"probe {arm:18s} decode {d['prompts']} prompts in one batch: prefill+1 "
                      f"{d['prefill_and_one_token_s']}s, {d['decode_step_s']}s/step -> ~{d['predicted_decode_s']}s "
                      f"for {d['max_new_tokens']} new tokens")
        for arm, why in result["arms_lost"].items():
            print(f"probe {arm}: lost: {why}")
        print(f"probe: concurrent step {result['concurrent_step_s']}s; steps per arm the full run would train if "
              f"calibrated at t = 120/150/180/210 s: {result['sizing_if_full_data_took_s']}; timing {result['timing_s']}")
        return 0
    print(render_table(result))
    for event in result["time_guard"]["events"]:
        print(f"time guard: {event}")
    print(f"wrote {Path(cfg.out_dir) / (cfg.name + '.json')} in {result['wall_s']}s"
          + (f" ({result['plot_note']})" if result.get("plot_note") else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
