"""The CPT ablation: SFT-only vs CPT(balanced OR + general) -> SFT vs CPT(pure OR) -> SFT.

Question (issue 8; reference/or_posttraining.md §5): does continued pre-training on solver-verified
OR documents before SFT lift Pass@1, and does a balanced OR/general mixture beat pure OR data?

Design, at equal compute (same model, tokenizer, sequence length, batch and number of optimizer
steps in every arm):

| arm               | stage 1 (cpt_steps)                  | stage 2 (sft_steps)            |
|-------------------|--------------------------------------|--------------------------------|
| sft_only          | -  (SFT runs cpt_steps + sft_steps)  | SFT                            |
| cpt_balanced_sft  | CPT on OR docs + general text/code   | SFT, warm-started from stage 1 |
| cpt_pure_sft      | CPT on OR docs only                  | SFT, warm-started from stage 1 |

Family split (disjoint, fixed by the config or by a seeded shuffle of trex.training.or_data's families):
``seen`` families appear in SFT (and CPT), ``cpt_only`` families appear only as CPT documents,
``held_out`` families appear nowhere in training. The test problems use seeds from a range
disjoint from every training seed. Primary comparison: the CPT arms vs sft_only on ``cpt_only``.

Every stage is an ordinary run of the training loop (``trex.training.train.train``) on
``torch.compile(model, backend=...)``; SFT after CPT starts from the CPT weights through
``trex.training.or_eval.warm_start.init_from`` (fresh optimizer, schedule and data position). Evaluation: greedy
Pass@1, programs executed in trex.training.or_data's sandbox, scored strict (1e-6) and legacy (5%);
Wilson intervals per arm and split; exact McNemar of each CPT arm against sft_only on the same
items. Output: ``<out_dir>/or_cpt_ablation.json`` and ``or_cpt_ablation.png`` (matplotlib, when
installed), with the exact command line, config, data manifests and commit.

Run: ``python -m trex.training.or_eval.experiment --preset h200 --out-dir bench/results`` (H200) or
``--preset toy`` (CPU plumbing check).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import random
import shutil
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
import types
import typing
from typing import Protocol

from trex.training.or_eval.benchmarks import ORProblem, load_benchmark
from trex.training.or_eval.evaluate import EvalConfig, SandboxExecutor, atomic_write_json, evaluate
from trex.training.or_eval.general_corpus import build_general_corpus
from trex.training.or_eval.stats import mcnemar, wilson_interval
from trex.training.or_tokenizer import (TOKENIZER_ENV, TOKENIZER_FILENAME, ORTokenizer, corpus_texts,
                                       format_prompt)

SPLITS = ("seen", "cpt_only", "held_out")
ARMS = ("sft_only", "cpt_balanced_sft", "cpt_pure_sft")
BASELINE_ARM = "sft_only"
PRIMARY_RULE = "strict_1e-6"

# Disjoint seed ranges per use, so no test instance can share a seed with a training instance.
SEED_BASE = {"cpt": 1_000_000, "sft": 2_000_000, "test": 3_000_000}


# ---------------------------------------------------------------------------------- data source
class ORDataSource(Protocol):
    """What the experiment needs from the OR data pipeline (trex/training/or_data)."""

    def families(self) -> list[str]: ...

    def cpt_documents(self, families: Sequence[str], per_family: int, seed_base: int) -> Iterator[dict]:
        """CPT documents ``{"text", "family", ...provenance}``."""

    def sft_pairs(self, families: Sequence[str], per_family: int, seed_base: int) -> Iterator[dict]:
        """SFT pairs ``{"question", "response", "family", ...provenance}``."""

    def test_problems(self, families: Sequence[str], per_family: int, seed_base: int) -> list[ORProblem]:
        """Evaluation problems with solver-verified references, family set."""


# ----------------------------------------------------------------------------------------- config
@dataclass
class StageConfig:
    """The training-loop settings shared by every stage of every arm (equal compute)."""
    model: str = "tiny"
    model_overrides: dict = field(default_factory=dict)
    compile: str = "trex"              # eager | inductor | trex
    seq_len: int = 512
    micro_batch: int = 8
    grad_accum: int = 1
    lr: float = 1e-3
    sft_lr: float = 5e-4
    warmup_steps: int = 20
    precision: str = "fp32"
    device: str = "auto"
    sft_packed: bool = False           # SFT pairs packed end to end into full windows (data.kind sft_packed)


@dataclass
class ExperimentConfig:
    out_dir: str = "bench/results"
    work_dir: str = "runs/or_cpt_ablation"
    name: str = "or_cpt_ablation"
    seed: int = 0
    # family split: explicit lists, or a seeded shuffle of the source's families in these sizes
    seen_families: list[str] = field(default_factory=list)
    cpt_only_families: list[str] = field(default_factory=list)
    held_out_families: list[str] = field(default_factory=list)
    split_sizes: tuple[int, int, int] = (6, 4, 4)
    # data volumes
    cpt_docs_per_family: int = 400
    sft_pairs_per_family: int = 400
    test_per_family: int = 30
    general_share: float = 0.5          # balanced arm: share of CPT characters from general text
    # compute
    cpt_steps: int = 200
    sft_steps: int = 100
    stage: StageConfig = field(default_factory=StageConfig)
    tokenizer_vocab: int = 4096
    arms: tuple[str, ...] = ARMS
    # evaluation
    max_new_tokens: int = 384
    # When set, decoding generates at most this quantile of the SFT responses' token lengths (eos
    # included, measured after the window fit) plus max_new_tokens_margin, capped by
    # max_new_tokens and by the window (every decoded prompt plus its response must fit
    # stage.seq_len, so no row slides the window and every row decodes with the KV cache). The
    # numbers are recorded in the JSON ("decoding").
    max_new_tokens_quantile: float | None = None
    max_new_tokens_margin: int = 32
    eval_workers: int = 8
    eval_batch_size: int = 64           # rows per right-padded decoding batch (generate.greedy_generate_padded)
    public_benchmarks: tuple[str, ...] = ()   # e.g. ("nl4opt", "mamo_easy"): reported for honesty
    public_limit: int | None = 50
    # wall-clock guard (seconds from the start of run_experiment; None = no guard). After the first
    # arm's training (which holds the compile) the time left is split: the later arms' training
    # (at the step times seen) and every arm's evaluation overhead are set aside, and the rest is
    # divided equally into one decoding share per arm, fixed for the run. An arm's decoding stops
    # at its share (less only when earlier slippage left less: the later arms' shares stay
    # reserved); responses not complete by then count as not evaluated, in every arm, so the
    # comparisons stay paired. An arm is not run when its training, evaluation overhead and half
    # a share no longer fit. Everything is recorded in the JSON ("time_guard").
    time_budget_s: float | None = None
    reserve_s: float = 15.0             # kept back at the end for scoring, the JSON and the plot
    # planning guess of one arm's evaluation time outside decoding (model load, sandbox, reports),
    # used for the decoding shares until the first arm's is measured
    eval_overhead_s: float = 10.0

    def to_dict(self) -> dict:
        return asdict(self)


PRESETS: dict[str, dict] = {
    # CPU plumbing check with trex.training.or_eval.toy_source (short problems): a few steps, 20
    # problems. The numbers mean nothing at this scale.
    "toy": dict(split_sizes=(2, 1, 1), cpt_docs_per_family=20, sft_pairs_per_family=20, test_per_family=5,
                cpt_steps=3, sft_steps=2, tokenizer_vocab=400, max_new_tokens=12, eval_workers=2,
                stage=StageConfig(compile="eager", seq_len=128, micro_batch=4, warmup_steps=1,
                                  model_overrides={"vocab_size": 512}, device="cpu")),
    # One H200, about 20 minutes of GPU time in all arms (reference/or_posttraining.md §5).
    "h200": dict(split_sizes=(6, 4, 4), cpt_docs_per_family=1500, sft_pairs_per_family=1500,
                 test_per_family=40, cpt_steps=600, sft_steps=300, tokenizer_vocab=8192,
                 max_new_tokens=640, eval_workers=16, public_benchmarks=("nl4opt", "mamo_easy", "optmath_bench"),
                 public_limit=60,
                 stage=StageConfig(compile="trex", seq_len=1536, micro_batch=16, precision="bf16",
                                   warmup_steps=30, model_overrides={"vocab_size": 8192}, device="cuda")),
}


# The h200_6min preset: the whole run (data, tokenizer, 3 arms x (CPT + SFT), evaluation, JSON + PNG)
# inside a 6.5-minute device call on one H200 + 16 cores. Planning numbers (docs/or_eval.md,
# "Time budget"): or_data ~25 instances/s/core; trex's first compile of the tiny model ~1 min;
# ~0.15 s per 16 x 1536-token step; ~30 ms per padded decode step of the 156 prompts of an arm
# (one batch: the eager decode step is launch-bound, so fewer, wider steps are cheaper).
PRESETS["h200_6min"] = dict(
    split_sizes=(6, 4, 4), cpt_docs_per_family=300, sft_pairs_per_family=400, test_per_family=10,
    cpt_steps=100, sft_steps=80, tokenizer_vocab=8192, max_new_tokens=640, eval_workers=16,
    eval_batch_size=160, public_benchmarks=("nl4opt", "mamo_easy"), public_limit=8,
    work_dir="/tmp/or_cpt_ablation_work", time_budget_s=330.0, reserve_s=20.0,
    stage=StageConfig(compile="trex", seq_len=1536, micro_batch=16, precision="bf16", warmup_steps=10,
                      model_overrides={"vocab_size": 8192}, device="cuda"))


# The h200_10min preset: one 10-minute device call (600 s) with every arm evaluated. The guard's
# budget (540 s + ~10 s of start-up before the clock) leaves ~50 s of the call unused. Planning
# numbers, measured on the H200 by the h200_6min run (bench JSON or_cpt_ablation_h200_6min):
# data 9.5 s for 5540 or_data instances (16 cores); BPE 3.9 s; first stage's compile 33 s (its first
# step); 0.18-0.20 s per 16 x 1536 step; 3.4-4.5 s per stage set-up. Decoding with the KV cache
# (trex.training.model.decode.prefill / decode_step): one prefill forward, then per step ~2.6-2.8k eager aten ops
# whatever the batch (counted on CPU; more under autocast), ~30-70 ms on the GPU at ~10-22 us per
# op (launch-bound), so an arm's decoding is about max_new_tokens steps: ~20-46 s at 659 tokens.
# Predicted: data+BPE ~20 s, training 88 + 2 x 61 s, decoding 3 x 20-46 s, sandbox 3 x ~8 s,
# writing ~2 s: ~340-410 s in the clock, ~350-420 s for the call; the decoding share per arm comes
# out at ~85 s (~2x the slow prediction), so a slower decode still finishes inside its share.
PRESETS["h200_10min"] = dict(
    split_sizes=(6, 4, 4), cpt_docs_per_family=500, sft_pairs_per_family=500, test_per_family=20,
    cpt_steps=160, sft_steps=120, tokenizer_vocab=8192, max_new_tokens=768, max_new_tokens_quantile=0.95,
    max_new_tokens_margin=32, eval_workers=16, eval_batch_size=320, public_benchmarks=("nl4opt", "mamo_easy"),
    public_limit=8, work_dir="/tmp/or_cpt_ablation_work", time_budget_s=540.0, reserve_s=20.0,
    stage=StageConfig(compile="trex", seq_len=1536, micro_batch=16, precision="bf16", warmup_steps=10,
                      model_overrides={"vocab_size": 8192}, device="cuda"))


# A V4-architecture model widened for the task, whose attention sees the whole sequence: every layer
# is a sliding-window layer (compress ratio 0) with the window as long as the training sequence, so
# no untrained indexer chooses what a position may read (tiny attends over 16 raw tokens plus top-4
# compressed entries, while the task copies ~20 numbers from 300-1000 tokens back). mHC, the limited
# SwiGLU MoE (dense dispatch: static shapes), partial RoPE and the MTP head are kept. ~22M
# parameters in the blocks, 5M in the embeddings (8192 x 320, tied in and out).
ABLATION_SEQ_LEN = 2048
WIDE_V4 = {"vocab_size": 8192, "dim": 320, "n_layers": 6, "n_mtp_layers": 1, "n_heads": 5, "head_dim": 64,
           "rope_head_dim": 16, "q_lora_rank": 160, "o_groups": 1, "o_lora_rank": 96,
           "window_size": ABLATION_SEQ_LEN, "compress_ratios": [0] * 7, "index_n_heads": 4, "index_head_dim": 32,
           "index_topk": 4, "n_routed_experts": 8, "n_activated_experts": 2, "n_shared_experts": 1,
           "moe_inter_dim": 384, "n_hash_layers": 1, "max_seq_len": ABLATION_SEQ_LEN, "moe_dispatch": "dense"}

# The h200_arm preset: ONE arm per 10-minute device call. Run it three times with the same seed,
# --arms sft_only, --arms cpt_pure_sft, --arms cpt_balanced_sft (and --name per arm); the data, the
# tokenizer and the test items are the same seeded draws in every run, so `--combine` pairs the three
# runs item by item (exact McNemar). Per arm: (550 + 365) steps x 16 x 2048 tokens = 30.0M tokens,
# equal in every arm (sft_only trains SFT for all 915 steps); SFT rows packed (no padding windows).
# Test: 68 problems per family, split (4 seen, 6 cpt_only, 6 held_out) of the 16 families: 408
# cpt_only and 408 held_out items (816 from families SFT never shows), 272 seen. Planning (not measured on an H200
# for this model): data ~26k or_data instances at ~25/s/core on 16 cores ~65 s; BPE ~5 s; compile
# ~40 s; a 32k-token step ~0.2 s (5.5 TFLOP per step) -> ~185 s; decoding ~700 steps of 1168 rows
# in two batches ~100-150 s; sandbox ~40 s. The guard (560 s) cuts decoding, never training, if it
# runs long, and the JSON records what it cut.
PRESETS["h200_arm"] = dict(
    split_sizes=(4, 6, 6), cpt_docs_per_family=1500, sft_pairs_per_family=2500, test_per_family=68,
    cpt_steps=550, sft_steps=365, tokenizer_vocab=8192, max_new_tokens=768, max_new_tokens_quantile=0.95,
    max_new_tokens_margin=32, eval_workers=16, eval_batch_size=584, public_benchmarks=("nl4opt", "mamo_easy"),
    public_limit=40, work_dir="/tmp/or_cpt_ablation_work", time_budget_s=560.0, reserve_s=20.0,
    stage=StageConfig(compile="trex", seq_len=ABLATION_SEQ_LEN, micro_batch=16, precision="bf16", warmup_steps=30,
                      sft_packed=True, model_overrides=WIDE_V4, device="cuda"))


# The h200_arms3 preset: the three arms of h200_arm in ONE 10-minute call, trained side by side on
# one GPU by trex.training.or_eval.concurrent_arms (three worker processes; the model leaves the
# H200 mostly idle). The data stage is built once for all arms; the steps are the preset's
# (550 + 365: 30.0M tokens per arm) only when they fit: the workers measure their step time side by
# side after compiling, and concurrent_arms.size_steps scales both stages down by one factor, the
# same in every arm, so that training ends with the decoding and scoring time left (the JSON's
# "sizing" says by how much). Data volumes are sized for about 15M tokens per arm (~1.2 CPT epochs,
# ~2 SFT epochs at that size): or_data builds ~640 instances/s on 16 cores (h200_10min run), so the
# 18.6k instances take ~30 s. Test set as h200_arm (408 CPT-only + 408 held-out + 272 seen items, 40
# NL4OPT + 40 Mamo easy), decoded in one batch (concurrent_arms decodes through chunked_decode: the
# prefill in row chunks); 12 sandbox workers leave 4 cores to the three decoding workers.
PRESETS["h200_arms3"] = {**PRESETS["h200_arm"], "cpt_docs_per_family": 1000, "sft_pairs_per_family": 2000,
                         "eval_workers": 12, "eval_batch_size": 1168, "time_budget_s": 528.0, "reserve_s": 10.0}

def preset(preset_name: str, **changes) -> ExperimentConfig:
    if preset_name not in PRESETS:
        raise ValueError(f"unknown preset {preset_name!r}; choose one of {sorted(PRESETS)}")
    cfg = ExperimentConfig(**PRESETS[preset_name])
    return dataclasses.replace(cfg, **changes) if changes else cfg


def _type_name(hint) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def _conform(value, hint):
    """``value`` (parsed from JSON) as a value of the annotation ``hint``; ValueError if it is none.

    Understands the annotations the config dataclasses use: int, float (an int is widened), str,
    bool, None, unions, list[X], tuple[X, ...], tuple[X, Y, Z] (a JSON list becomes a tuple), dict."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                return _conform(value, option)
            except ValueError:
                pass
        raise ValueError
    if hint is type(None):
        if value is None:
            return None
        raise ValueError
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise ValueError
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ValueError
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise ValueError
    if hint is str:
        if isinstance(value, str):
            return value
        raise ValueError
    if hint is dict or origin is dict:
        if isinstance(value, dict):
            return value
        raise ValueError
    if origin in (list, tuple) or hint in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ValueError
        if origin is list:
            return [_conform(v, args[0]) for v in value]
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return tuple(_conform(v, args[0]) for v in value)
        if origin is tuple and args:
            if len(value) != len(args):
                raise ValueError
            return tuple(_conform(v, a) for v, a in zip(value, args))
        return type(value)(value) if hint is list else tuple(value)
    return value   # an annotation this checker does not know: taken as given


def apply_settings(cfg: ExperimentConfig, settings: Sequence[str]) -> ExperimentConfig:
    """``KEY=VALUE`` overrides (``stage.KEY`` for StageConfig); VALUE is JSON when it parses, else a
    string. The value must fit the field's annotation (checked here, before any work starts)."""
    for item in settings:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ValueError(f"--set {item!r}: write KEY=VALUE, e.g. --set test_per_family=2")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        target_name, _, field_name = key.rpartition(".")
        if target_name not in ("", "stage"):
            raise ValueError(f"--set {key}: only top-level fields and stage.FIELD can be set")
        target = cfg.stage if target_name == "stage" else cfg
        names = {f.name: f for f in dataclasses.fields(target)}
        if field_name not in names or field_name == "stage":
            prefix = "stage." if target_name == "stage" else ""
            raise ValueError(f"--set {key}: unknown field; choose from "
                             f"{sorted(prefix + n for n in names if n != 'stage')}")
        hint = typing.get_type_hints(type(target))[field_name]
        try:
            value = _conform(value, hint)
        except ValueError:
            try:   # a string field given something JSON reads otherwise (--set name=2024)
                value = _conform(raw, hint)
            except ValueError:
                example = json.dumps(getattr(target, field_name), separators=(",", ":"))
                raise ValueError(f"--set {key}={raw}: {key} takes {_type_name(hint)} (now "
                                 f"{getattr(target, field_name)!r}); write VALUE as JSON of that type, "
                                 f"e.g. --set '{key}={example}'") from None
        if target_name == "stage":
            cfg = dataclasses.replace(cfg, stage=dataclasses.replace(cfg.stage, **{field_name: value}))
        else:
            cfg = dataclasses.replace(cfg, **{field_name: value})
    return cfg


def validate_config(cfg: ExperimentConfig) -> None:
    """Checks that need no data, run before anything is built or written (ValueError naming the fix)."""
    arms = list(cfg.arms)
    if not arms:
        raise ValueError(f"arms is empty; choose from {','.join(ARMS)} (--arms)")
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise ValueError(f"unknown arms {unknown}; choose a comma list from {','.join(ARMS)} (--arms)")
    if len(set(arms)) != len(arms):
        raise ValueError(f"arms {arms} repeat an arm; name each once (--arms)")
    if cfg.sft_steps < 1:
        raise ValueError(f"sft_steps = {cfg.sft_steps}: every arm ends with SFT; pass --sft-steps >= 1")
    if cfg.cpt_steps < 1 and any(a != BASELINE_ARM for a in arms):
        raise ValueError(f"cpt_steps = {cfg.cpt_steps}: the CPT arms need --cpt-steps >= 1")
    for name in ("cpt_docs_per_family", "sft_pairs_per_family", "test_per_family", "tokenizer_vocab",
                 "max_new_tokens", "eval_workers", "eval_batch_size"):
        if getattr(cfg, name) < 1:
            raise ValueError(f"{name} = {getattr(cfg, name)}: must be >= 1 (--set {name}=N)")
    for name in ("seq_len", "micro_batch", "grad_accum"):
        if getattr(cfg.stage, name) < 1:
            raise ValueError(f"stage.{name} = {getattr(cfg.stage, name)}: must be >= 1 (--set stage.{name}=N)")
    if any(n < 0 for n in cfg.split_sizes):
        raise ValueError(f"split_sizes {cfg.split_sizes}: sizes must be >= 0 (--set split_sizes=[6,4,4])")
    if not 0.0 <= cfg.general_share < 1.0:
        raise ValueError(f"general_share = {cfg.general_share}: must be in [0, 1) (--set general_share=0.5)")
    if cfg.max_new_tokens_quantile is not None and not 0.0 < cfg.max_new_tokens_quantile <= 1.0:
        raise ValueError(f"max_new_tokens_quantile = {cfg.max_new_tokens_quantile}: must be in (0, 1] or null")


# ---------------------------------------------------------------------------------- family split
def split_families(cfg: ExperimentConfig, available: Sequence[str]) -> dict[str, list[str]]:
    explicit = {"seen": cfg.seen_families, "cpt_only": cfg.cpt_only_families, "held_out": cfg.held_out_families}
    if any(explicit.values()):
        split = {k: list(v) for k, v in explicit.items()}
    else:
        need = sum(cfg.split_sizes)
        if need > len(available):
            raise ValueError(f"split_sizes {cfg.split_sizes} need {need} families but the source has "
                             f"{len(available)} ({sorted(available)}); lower split_sizes")
        order = sorted(available)
        random.Random(cfg.seed).shuffle(order)
        a, b, c = cfg.split_sizes
        split = {"seen": order[:a], "cpt_only": order[a:a + b], "held_out": order[a + b:a + b + c]}
    names = [f for v in split.values() for f in v]
    if len(names) != len(set(names)):
        raise ValueError(f"family split overlaps: {split}; every family belongs to one split")
    unknown = sorted(set(names) - set(available))
    if unknown:
        raise ValueError(f"families {unknown} are not produced by the data source ({sorted(available)})")
    if not split["seen"]:
        raise ValueError("the seen split is empty; SFT needs at least one family")
    return split


# ----------------------------------------------------------------------------------- corpora
def _write_jsonl(path: Path, rows: Iterable[dict]) -> dict:
    path.parent.mkdir(parents=True, exist_ok=True)
    digest, n, chars = hashlib.sha256(), 0, 0
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            line = json.dumps(row, ensure_ascii=False)
            f.write(line + "\n")
            digest.update(line.encode())
            n += 1
            chars += len(row.get("text", "")) + len(row.get("prompt", "")) + len(row.get("response", ""))
    tmp.replace(path)
    return {"path": str(path), "rows": n, "chars": chars, "sha256": digest.hexdigest()}


def _read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def build_corpora(cfg: ExperimentConfig, source: ORDataSource, split: dict[str, list[str]],
                  work: Path) -> dict:
    """CPT (pure, balanced), SFT and test files in ``work/data``; returns their manifests."""
    data = work / "data"
    cpt_families = split["seen"] + split["cpt_only"]
    or_docs = list(source.cpt_documents(cpt_families, cfg.cpt_docs_per_family, SEED_BASE["cpt"] + cfg.seed))
    if not or_docs:
        raise ValueError("the data source produced no CPT documents")
    manifests = {"cpt_pure": _write_jsonl(data / "cpt_pure.jsonl", or_docs)}
    or_chars = sum(len(d["text"]) for d in or_docs)
    # Balanced: general text takes general_share of the characters; OR docs are subsampled so that
    # the corpus has the same size as the pure one (same number of distinct tokens, equal compute).
    general_target = int(or_chars * cfg.general_share)
    general_manifest = build_general_corpus(data / "general.jsonl", max_chars=general_target)
    general_docs = _read_jsonl(data / "general.jsonl")
    rng = random.Random(cfg.seed)
    kept_or, kept_chars = [], 0
    for d in rng.sample(or_docs, len(or_docs)):
        if kept_chars >= or_chars - general_manifest["chars"]:
            break
        kept_or.append(d)
        kept_chars += len(d["text"])
    balanced = [{"text": d["text"], "source": "or", "family": d.get("family")} for d in kept_or] + \
               [{"text": d["text"], "source": d["source"], "name": d["name"]} for d in general_docs]
    rng.shuffle(balanced)
    manifests["cpt_balanced"] = _write_jsonl(data / "cpt_balanced.jsonl", balanced)
    manifests["cpt_balanced"]["or_chars"] = kept_chars
    manifests["cpt_balanced"]["general_chars"] = general_manifest["chars"]
    # below general_share when the local standard library holds fewer characters than asked for
    manifests["cpt_balanced"]["general_share_actual"] = round(
        general_manifest["chars"] / max(1, general_manifest["chars"] + kept_chars), 4)
    manifests["general"] = general_manifest
    pairs = list(source.sft_pairs(split["seen"], cfg.sft_pairs_per_family, SEED_BASE["sft"] + cfg.seed))
    if not pairs:
        raise ValueError("the data source produced no SFT pairs")
    # the sources yield questions; the row's prompt is format_prompt(question), the text decoding
    # starts from (generate.generate_responses) and the same as `trex or-data generate`'s SFT export
    manifests["sft"] = _write_jsonl(data / "sft.jsonl", (
        {"prompt": format_prompt(p["question"]), "response": p["response"], "family": p.get("family")}
        for p in pairs))
    all_families = [f for s in SPLITS for f in split[s]]
    family_split = {f: s for s in SPLITS for f in split[s]}
    problems = source.test_problems(all_families, cfg.test_per_family, SEED_BASE["test"] + cfg.seed)
    problems = [dataclasses.replace(p, split=family_split.get(p.family)) for p in problems]
    missing = [p.id for p in problems if p.split is None]
    if missing:
        raise ValueError(f"test problems without a family in the split: {missing[:5]}")
    manifests["test"] = _write_jsonl(data / "test.jsonl", (
        {"id": p.id, "question": p.question, "objective": p.reference_objective,
         "status": p.reference_status.value, "family": p.family, "split": p.split, **p.meta} for p in problems))
    return {"manifests": manifests, "problems": problems}


def train_tokenizer(cfg: ExperimentConfig, work: Path) -> tuple[ORTokenizer, Path]:
    """One BPE for every arm, trained on the training files only (never on test problems)."""
    data = work / "data"

    # the same texts `trex or-data tokenizer --corpus cpt_pure.jsonl general.jsonl sft.jsonl` trains on
    tok = ORTokenizer.train(corpus_texts(data / name for name in ("cpt_pure.jsonl", "general.jsonl", "sft.jsonl")),
                            vocab_size=cfg.tokenizer_vocab)
    return tok, tok.save(work / TOKENIZER_FILENAME)


def fit_sft_to_window(cfg: ExperimentConfig, tokenizer: ORTokenizer, work: Path,
                      problems: Sequence[ORProblem]) -> dict:
    """Keep only SFT rows that fit the training window whole, and measure the test prompts.

    The training loop cuts an SFT row (bos prompt response eos) at seq_len + 1 tokens from the
    right, so a row whose prompt fills the window teaches nothing (its loss mask is empty) and a
    cut response teaches a program without its end. Such rows are dropped (counted here)."""
    path = work / "data" / "sft.jsonl"
    rows = _read_jsonl(path)
    window = cfg.stage.seq_len + 1
    prompt_tokens = [1 + len(tokenizer.encode(r["prompt"])) for r in rows]           # bos + prompt
    response_tokens = [len(tokenizer.encode(r["response"])) + 1 for r in rows]       # response + eos
    lengths = [p + q for p, q in zip(prompt_tokens, response_tokens)]
    kept = [r for r, n in zip(rows, lengths) if n <= window]
    kept_response_tokens = sorted(q for q, n in zip(response_tokens, lengths) if n <= window)
    if not kept:
        raise ValueError(f"no SFT row fits data.seq_len = {cfg.stage.seq_len} (shortest row: {min(lengths)} "
                         f"tokens); raise stage.seq_len or shorten the prompts")
    manifest = _write_jsonl(path, kept)
    prompt_lengths = sorted(1 + len(tokenizer.encode(format_prompt(p.question))) for p in problems)
    return {**manifest, "rows_before_fit": len(rows), "rows_dropped_too_long": len(rows) - len(kept),
            "row_tokens_max": max(lengths), "row_tokens_median": sorted(lengths)[len(lengths) // 2],
            # what decoding must produce (sizes max_new_tokens: plan_max_new_tokens)
            "response_tokens_quantiles": {str(q): quantile(kept_response_tokens, q) for q in sorted(
                {0.5, 0.9, 0.95, 0.99, 1.0} | ({cfg.max_new_tokens_quantile} if cfg.max_new_tokens_quantile else set()))},
            "test_prompt_tokens_median": prompt_lengths[len(prompt_lengths) // 2],
            "test_prompt_tokens_max": prompt_lengths[-1],
            "test_prompts_longer_than_window": sum(n >= cfg.stage.seq_len for n in prompt_lengths)}


def quantile(sorted_values: Sequence[int], q: float) -> int:
    """The smallest value with at least a fraction ``q`` of ``sorted_values`` at or below it."""
    if not sorted_values:
        raise ValueError("quantile of an empty list")
    if not 0 < q <= 1:
        raise ValueError(f"quantile q must be in (0, 1], got {q}")
    import math
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def plan_max_new_tokens(cfg: ExperimentConfig, sft_manifest: dict, prompt_tokens_max: int) -> dict:
    """The decoding length: ``cfg.max_new_tokens``; or, with ``max_new_tokens_quantile``, that
    quantile of the SFT responses' token lengths plus the margin, capped by ``cfg.max_new_tokens``
    and by the window: the longest decoded prompt plus its response must fit ``stage.seq_len``, so
    that no row slides the window and every row decodes with the KV cache."""
    window_cap = cfg.stage.seq_len - prompt_tokens_max + 1
    plan = {"max_new_tokens_config": cfg.max_new_tokens, "prompt_tokens_max": prompt_tokens_max,
            "window": cfg.stage.seq_len, "window_cap": window_cap, "max_new_tokens": cfg.max_new_tokens,
            "capped_by_window": False}
    if cfg.max_new_tokens_quantile is None:
        return plan
    from_data = sft_manifest.get("response_tokens_quantiles", {}).get(str(cfg.max_new_tokens_quantile))
    if from_data is None:
        raise ValueError("max_new_tokens_quantile needs the SFT manifest's response_tokens_quantiles "
                         "(fit_sft_to_window writes them)")
    if window_cap < 1:
        raise ValueError(f"a decoded prompt has {prompt_tokens_max} tokens, more than stage.seq_len = "
                         f"{cfg.stage.seq_len}: raise stage.seq_len, or set max_new_tokens_quantile=null "
                         f"to decode with a fixed max_new_tokens (long rows then slide the window)")
    wanted = min(cfg.max_new_tokens, from_data + cfg.max_new_tokens_margin)
    plan.update(quantile=cfg.max_new_tokens_quantile, margin=cfg.max_new_tokens_margin,
                response_tokens_at_quantile=from_data, max_new_tokens=min(wanted, window_cap),
                capped_by_window=wanted > window_cap)
    return plan


# ------------------------------------------------------------------------------------ training
def stage_overrides(cfg: ExperimentConfig, kind: str, data_path: Path, steps: int, ckpt: Path,
                    log: Path) -> list[tuple[str, object]]:
    s = cfg.stage
    overrides = dict(s.model_overrides)
    return [
        ("model.name", s.model), ("model.overrides", overrides), ("model.compile", s.compile),
        ("data.kind", kind), ("data.paths", [str(data_path)]), ("data.format", "jsonl"),
        ("data.tokenizer", "trex.training.or_tokenizer:from_env"),
        ("data.seq_len", s.seq_len), ("data.micro_batch", s.micro_batch), ("data.seed", cfg.seed),
        ("optim.lr", s.lr if kind == "cpt" else s.sft_lr),
        ("schedule.warmup_steps", min(s.warmup_steps, max(1, steps // 2))),
        ("train.steps", steps), ("train.grad_accum", s.grad_accum), ("train.precision", s.precision),
        ("train.device", s.device), ("train.seed", cfg.seed),
        ("checkpoint.dir", str(ckpt)), ("checkpoint.every", 0), ("checkpoint.keep", 1),
        ("checkpoint.resume", False), ("log.jsonl", str(log)), ("log.progress", False),
    ]


def run_stage(cfg: ExperimentConfig, kind: str, data_path: Path, steps: int, out: Path, tokenizer_path: Path,
              init_from: Path | None) -> dict:
    """One training-loop run; returns its losses and timing. ``out`` becomes a checkpoint.dir."""
    import os

    from trex.training.config import load_config
    from trex.training.or_eval.warm_start import init_from as warm
    from trex.training.train import train

    if out.exists():
        shutil.rmtree(out)   # a stale run of the same arm must not be resumed or mixed in
    overrides = stage_overrides(cfg, kind, data_path, steps, out / "ckpt", out / "log.jsonl")
    train_cfg = load_config(None, overrides)
    old = os.environ.get(TOKENIZER_ENV)
    os.environ[TOKENIZER_ENV] = str(tokenizer_path)
    t0 = time.perf_counter()
    try:
        with warm(init_from):
            result = train(train_cfg)
    finally:
        if old is None:
            os.environ.pop(TOKENIZER_ENV, None)
        else:
            os.environ[TOKENIZER_ENV] = old
    tokens = sum(r["tokens"] for r in result.records)
    wall = time.perf_counter() - t0
    step_times = sorted(r["step_time_s"] for r in result.records)
    return {"kind": kind, "data": str(data_path), "steps": result.final_step, "tokens": tokens,
            "init_from": str(init_from) if init_from else None, "wall_s": round(wall, 2),
            # the first step holds the compile (the first stage's) ; setup = dataset, model, checkpoint
            "first_step_s": round(result.records[0]["step_time_s"], 3) if result.records else None,
            "median_step_s": round(step_times[len(step_times) // 2], 4) if step_times else None,
            "setup_s": round(wall - sum(step_times), 2),
            "first_loss": result.losses[0] if result.losses else None,
            "last_loss": result.losses[-1] if result.losses else None,
            "checkpoint": str(out / "ckpt"), "overrides": {k: v for k, v in overrides}}


def train_arm(cfg: ExperimentConfig, arm: str, work: Path, tokenizer_path: Path) -> tuple[Path, list[dict]]:
    data = work / "data"
    runs = work / "arms" / arm
    sft_kind = "sft_packed" if cfg.stage.sft_packed else "sft"
    if arm == "sft_only":
        st = run_stage(cfg, sft_kind, data / "sft.jsonl", cfg.cpt_steps + cfg.sft_steps, runs / "sft",
                       tokenizer_path, None)
        return Path(st["checkpoint"]), [st]
    cpt_file = {"cpt_balanced_sft": "cpt_balanced.jsonl", "cpt_pure_sft": "cpt_pure.jsonl"}.get(arm)
    if cpt_file is None:
        raise ValueError(f"unknown arm {arm!r}; choose from {ARMS}")
    cpt = run_stage(cfg, "cpt", data / cpt_file, cfg.cpt_steps, runs / "cpt", tokenizer_path, None)
    sft = run_stage(cfg, sft_kind, data / "sft.jsonl", cfg.sft_steps, runs / "sft", tokenizer_path,
                    Path(cpt["checkpoint"]))
    return Path(sft["checkpoint"]), [cpt, sft]


# ------------------------------------------------------------------------------------ analysis
def analyse(problems: Sequence[ORProblem], verdicts: dict[str, list[bool | None]],
            rules: Sequence[str] = (PRIMARY_RULE, "legacy_5pct_rounded")) -> dict:
    """verdicts[arm][rule] -> per-item booleans in ``problems`` order. Wilson per arm x split, and
    exact McNemar of every arm against the baseline on the same items (n/a verdicts dropped)."""
    out: dict = {"rules": {}}
    groups = {"all": list(range(len(problems)))}
    for s in SPLITS:
        groups[s] = [i for i, p in enumerate(problems) if p.split == s]
    for rule in rules:
        per_rule: dict = {"pass_at_1": {}, "mcnemar_vs_" + BASELINE_ARM: {}}
        for arm, by_rule in verdicts.items():
            per_rule["pass_at_1"][arm] = {}
            for g, idx in groups.items():
                v = [by_rule[rule][i] for i in idx if by_rule[rule][i] is not None]
                per_rule["pass_at_1"][arm][g] = wilson_interval(sum(v), len(v)).as_dict()
        if BASELINE_ARM in verdicts:
            base = verdicts[BASELINE_ARM][rule]
            for arm, by_rule in verdicts.items():
                if arm == BASELINE_ARM:
                    continue
                per_rule["mcnemar_vs_" + BASELINE_ARM][arm] = {}
                for g, idx in groups.items():
                    keep = [i for i in idx if by_rule[rule][i] is not None and base[i] is not None]
                    per_rule["mcnemar_vs_" + BASELINE_ARM][arm][g] = mcnemar(
                        [by_rule[rule][i] for i in keep], [base[i] for i in keep]).as_dict()
        out["rules"][rule] = per_rule
    return out


def plot(analysis: dict, path: Path, title: str, rule: str = PRIMARY_RULE) -> str | None:
    """Grouped bars (split x arm) with Wilson intervals. Returns a note when the plot is skipped."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed here; plot skipped (the JSON holds every number)"
    rates = analysis["rules"][rule]["pass_at_1"]
    arms = list(rates)
    groups = ["all", *SPLITS]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / max(1, len(arms))
    for k, arm in enumerate(arms):
        xs, ys, lo, hi = [], [], [], []
        for g, name in enumerate(groups):
            r = rates[arm][name]
            if r["rate"] is None:
                continue
            xs.append(g + (k - (len(arms) - 1) / 2) * width)
            ys.append(100 * r["rate"])
            lo.append(100 * (r["rate"] - r["low"]))
            hi.append(100 * (r["high"] - r["rate"]))
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=arm)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(f"Pass@1 (%), {rule}, 95% Wilson")
    ax.set_ylim(0, 100)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    tmp.replace(path)
    return None


# ------------------------------------------------------------------------------------------ run
def priority_order(problems: Sequence[ORProblem]) -> list[int]:
    """Indices of ``problems`` round-robin over families (1st of each family, then 2nd, ...), so a
    decoding cut short between batches leaves every family and split about equally covered. Inside
    one batch a deadline drops the longest responses instead, which concentrates in the families
    with the longest programs (session 11's sft_only: 32 of 68 items in four families, none in two)."""
    rank: dict[str, int] = {}
    keyed = []
    for i, p in enumerate(problems):
        k = rank.get(p.family or "", 0)
        rank[p.family or ""] = k + 1
        keyed.append((k, p.family or "", i))
    return [i for _, _, i in sorted(keyed)]


class _Clock:
    """The run's wall-clock budget (ExperimentConfig.time_budget_s) and the decisions taken on it."""

    def __init__(self, budget_s: float | None, reserve_s: float):
        self.t0 = time.monotonic()
        self.budget_s, self.reserve_s = budget_s, reserve_s
        self.events: list[str] = []

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def left(self) -> float:
        return float("inf") if self.budget_s is None else self.budget_s - self.reserve_s - self.elapsed()


def _generate_all(cfg: ExperimentConfig, model, tok, questions: list[str], deadline: float | None,
                  max_new_tokens: int) -> list:
    import torch

    from trex.training.or_eval.generate import generate_responses
    from trex.training.or_eval.model_io import resolve_device
    device = resolve_device(cfg.stage.device)
    # decode in the precision the model was trained in (bf16 autocast on the GPU)
    amp = (torch.autocast(device_type=device.type, dtype=torch.bfloat16)
           if cfg.stage.precision == "bf16" and device.type == "cuda" else contextlib.nullcontext())
    with amp:
        return generate_responses(model, tok, questions, max_new_tokens, batch_size=cfg.eval_batch_size,
                                  padded=True, deadline=deadline)


def _evaluate_subset(problems: Sequence[ORProblem], responses: Sequence[str | None], executor,
                     cfg: ExperimentConfig, max_new_tokens: int, meta: dict) -> tuple[dict | None, list[int]]:
    """evaluate() on the items that got a response; returns (report or None, their indices)."""
    done = [i for i, r in enumerate(responses) if r is not None]
    if not done:
        return None, done
    by_question = {}
    for i in done:
        by_question.setdefault(problems[i].question, responses[i])
    report = evaluate([problems[i] for i in done], lambda qs: [by_question[q] for q in qs], executor,
                      EvalConfig(max_new_tokens=max_new_tokens, workers=cfg.eval_workers), meta=meta)
    return report, done


PREFLIGHT_PROGRAM = """import gurobipy as gp
from gurobipy import GRB
m = gp.Model()
x = m.addVar(ub=3, name="x")
y = m.addVar(vtype=GRB.INTEGER, ub=2.5, name="y")
m.addConstr(x + y <= 4)
m.setObjective(2 * x + y, GRB.MAXIMIZE)
m.optimize()
"""


PYTHON_I_HINT = ("The sandbox runs `python -I` (PYTHONPATH and the current folder ignored): install highspy "
                 "into the interpreter's own site-packages (pip install --no-index --no-deps <highspy wheel>) "
                 "and make this checkout importable there (pip install -e . or a .pth file in site-packages "
                 "holding the checkout's path)")


def sandbox_preflight(executor) -> dict:
    """Run one known program (optimum 7) in the sandbox before anything else, so a machine whose
    sandbox cannot solve fails in seconds instead of scoring every arm 0%. The sandbox starts
    ``python -I``, which ignores PYTHONPATH and the current folder: highspy and this checkout
    must be importable from the interpreter's own site-packages."""
    from trex.training.or_eval.benchmarks import RefStatus
    from trex.training.or_eval.scoring import RunStatus
    probe = ORProblem(id="preflight", benchmark="generated", question="", reference_objective=7.0,
                      reference_status=RefStatus.OPTIMAL)
    try:
        outcome = executor(PREFLIGHT_PROGRAM, probe)
    except RuntimeError as exc:   # e.g. the zygote cannot import the checkout under `python -I`
        raise RuntimeError(f"sandbox preflight failed: {exc}. {PYTHON_I_HINT}") from exc
    if outcome.status is not RunStatus.OPTIMAL or outcome.objective is None or abs(outcome.objective - 7.0) > 1e-6:
        raise RuntimeError(f"sandbox preflight failed: a known program (optimum 7) gave status "
                           f"{outcome.status.value}, objective {outcome.objective}, error {outcome.error!r}. "
                           f"{PYTHON_I_HINT}")
    isolation = getattr(executor, "isolation", None)
    return {"status": outcome.status.value, "objective": outcome.objective,
            **({"isolation": isolation} if isolation is not None else {})}


def run_experiment(cfg: ExperimentConfig, source: ORDataSource, command: str | None = None) -> dict:
    validate_config(cfg)
    clock = _Clock(cfg.time_budget_s, cfg.reserve_s)
    work, out_dir = Path(cfg.work_dir), Path(cfg.out_dir)
    work.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    return _run_after_preflight(cfg, source, command, clock, work, out_dir, _preflight(cfg))


def _preflight(cfg: ExperimentConfig) -> dict:
    # its own short-lived sandbox: the evaluation's is opened after the data stage's process pool
    try:
        probe = SandboxExecutor(workers=1)
    except RuntimeError as exc:
        raise RuntimeError(f"sandbox preflight failed: {exc}. {PYTHON_I_HINT}") from exc
    with probe:
        return sandbox_preflight(probe)


def prepare_shared(cfg: ExperimentConfig, source: ORDataSource, clock: "_Clock", work: Path,
                   preflight: dict | None = None) -> dict:
    """Everything the arms share, built once: the sandbox preflight (unless given), the family split,
    the corpora and test problems, the tokenizer, the SFT window fit, the public benchmark items, the
    decoding prompts (round-robin over families, then the public items) and the decoding length."""
    if preflight is None:
        preflight = _preflight(cfg)
    t_data = clock.elapsed()
    timing: dict[str, float] = {"preflight_s": round(t_data, 1)}
    split = split_families(cfg, source.families())
    built = build_corpora(cfg, source, split, work)
    t_tokenizer = clock.elapsed()
    timing["data_s"] = round(t_tokenizer - t_data, 1)
    problems: list[ORProblem] = built["problems"]
    tokenizer, tokenizer_path = train_tokenizer(cfg, work)
    built["manifests"]["sft"] = fit_sft_to_window(cfg, tokenizer, work, problems)
    timing["tokenizer_s"] = round(clock.elapsed() - t_tokenizer, 1)
    order = priority_order(problems)
    render = getattr(source, "render_prompt", lambda q: q)   # public questions get the same wrapper
    public_sets, public_unavailable = {}, {}
    for bench in cfg.public_benchmarks:
        try:
            public_sets[bench] = load_benchmark(bench, limit=cfg.public_limit)
        except (FileNotFoundError, ValueError) as exc:   # e.g. a machine without ../shared: say so, go on
            public_unavailable[bench] = f"{type(exc).__name__}: {exc}"
    questions = [problems[i].question for i in order]
    public_items = [(b, p) for b, ps in public_sets.items() for p in ps]
    questions += [render(p.question) for _, p in public_items]
    # the prompt generate_responses builds: bos + the formatted question
    prompt_tokens_max = max(1 + len(tokenizer.encode(format_prompt(q))) for q in questions)
    decoding = plan_max_new_tokens(cfg, built["manifests"]["sft"], prompt_tokens_max)
    return {"preflight": preflight, "timing_s": timing, "split": split, "manifests": built["manifests"],
            "problems": problems, "tokenizer": tokenizer.describe(), "tokenizer_path": tokenizer_path,
            "order": order, "public_sets": public_sets, "public_unavailable": public_unavailable,
            "questions": questions, "decoding": decoding}


def _run_after_preflight(cfg: ExperimentConfig, source: ORDataSource, command: str | None, clock: "_Clock",
                         work: Path, out_dir: Path, preflight: dict) -> dict:
    shared = prepare_shared(cfg, source, clock, work, preflight)
    timing, split, problems, order = shared["timing_s"], shared["split"], shared["problems"], shared["order"]
    built = {"manifests": shared["manifests"]}
    tokenizer_path, public_sets = shared["tokenizer_path"], shared["public_sets"]
    public_unavailable, questions, decoding = shared["public_unavailable"], shared["questions"], shared["decoding"]
    max_new_tokens = decoding["max_new_tokens"]
    arms: dict = {}
    verdicts: dict[str, dict[str, list]] = {}
    item_reports: dict[str, dict] = {}
    skipped_arms: list[str] = []
    isolation: dict | None = None     # the evaluation sandbox's layers, filled in as arms are scored
    json_path = out_dir / f"{cfg.name}.json"
    items_path = out_dir / f"{cfg.name}_items.json"
    step_s: list[float] = []      # median step time of every stage so far
    setup_s: list[float] = []     # per-stage time outside the steps
    overhead_s: list[float] = []  # per arm: evaluation time outside decoding (model load, sandbox, reports)
    decode_share_s: float | None = None   # every arm's decoding share, fixed after the first arm's training

    def predicted_overhead_s() -> float:
        return max(overhead_s) if overhead_s else cfg.eval_overhead_s

    def predicted_train_s() -> float:
        """One more arm's training: its steps at the median step time seen so far, plus two stage
        set-ups (no compile: every stage after the first reuses the compiled graph)."""
        return (cfg.cpt_steps + cfg.sft_steps) * max(step_s) + 2 * max(setup_s)

    def result_so_far(final: bool) -> dict:
        common = _common_verdicts(verdicts, len(problems))
        from trex.training.or_eval.evaluate import _git_commit
        return {
            "experiment": cfg.name, "complete": final and not skipped_arms,
            "question": "does CPT on OR documents before SFT lift greedy Pass@1, and does a balanced "
                        "OR/general mixture beat pure OR data, at equal compute?",
            "command": command, "config": cfg.to_dict(), "family_split": split,
            "data": built["manifests"], "tokenizer": shared["tokenizer"],
            "n_test_problems": len(problems),
            "n_test_problems_evaluated_in_every_arm": sum(
                v is not None for v in next(iter(common.values()))[PRIMARY_RULE]) if common else 0,
            "arms": arms, "arms_not_run": skipped_arms, "public_benchmarks_unavailable": public_unavailable,
            "analysis": analyse(problems, common) if common else None,
            "primary": {"rule": PRIMARY_RULE, "split": "cpt_only",
                        "comparison": "cpt_* vs sft_only, exact McNemar on the same items"},
            "decoding": decoding, "sandbox_preflight": preflight, "sandbox_isolation": isolation,
            "time_guard": {"budget_s": cfg.time_budget_s, "reserve_s": cfg.reserve_s,
                           "decode_share_s": None if decode_share_s is None else round(decode_share_s, 1),
                           "events": clock.events},
            "timing_s": timing, "wall_s": round(clock.elapsed(), 1), "commit": _git_commit(),
        }

    atomic_write_json(json_path, result_so_far(final=False))   # data manifests even if training never ends
    with SandboxExecutor(workers=cfg.eval_workers) as executor:
        for n_arm, arm in enumerate(cfg.arms):
            t_arm = clock.elapsed()
            arms_left = len(cfg.arms) - n_arm
            if decode_share_s is not None and \
                    predicted_train_s() + predicted_overhead_s() + 0.5 * decode_share_s > clock.left():
                skipped_arms += list(cfg.arms[n_arm:])
                clock.events.append(f"{clock.elapsed():.0f}s: arms {skipped_arms} not run: one needs ~"
                                    f"{predicted_train_s():.0f}s of training + {predicted_overhead_s():.0f}s of "
                                    f"evaluation + half a decoding share ({0.5 * decode_share_s:.0f}s) and "
                                    f"{clock.left():.0f}s of the budget were left")
                break
            ckpt, stages = train_arm(cfg, arm, work, tokenizer_path)
            step_s += [st["median_step_s"] for st in stages if st.get("median_step_s") is not None]
            setup_s += [st["setup_s"] for st in stages if st.get("setup_s") is not None]
            step_s, setup_s = step_s or [0.0], setup_s or [0.0]
            t_eval = clock.elapsed()
            from trex.training.or_eval.model_io import load_for_eval
            model, tok, info = load_for_eval(ckpt, device=cfg.stage.device)
            deadline, allowance = None, None
            if cfg.time_budget_s is not None:
                later = arms_left - 1
                if decode_share_s is None:
                    # equal shares of what is left once the later arms' training (at the step times
                    # seen, compile excluded) and every arm's evaluation overhead are set aside
                    decode_share_s = max(0.0, (clock.left() - later * predicted_train_s()
                                               - arms_left * predicted_overhead_s()) / arms_left)
                    clock.events.append(f"{clock.elapsed():.0f}s: decoding share {decode_share_s:.0f}s per arm "
                                        f"({later} later arms of ~{predicted_train_s():.0f}s training and every "
                                        f"arm's ~{predicted_overhead_s():.0f}s evaluation overhead set aside)")
                # this arm's share, less only what earlier slippage took: the later arms keep theirs
                allowance = max(0.0, min(decode_share_s, clock.left() - predicted_overhead_s() - later * (
                    predicted_train_s() + decode_share_s + predicted_overhead_s())))
                if allowance < decode_share_s - 0.5:   # (not for rounding: min() of two near-equal sums)
                    clock.events.append(f"{clock.elapsed():.0f}s: {arm}: decoding allowance {allowance:.0f}s, "
                                        f"below the {decode_share_s:.0f}s share (earlier stages ran long)")
                deadline = time.monotonic() + allowance
            t_gen = time.perf_counter()
            responses = _generate_all(cfg, model, tok, questions, deadline, max_new_tokens)
            gen_s = round(time.perf_counter() - t_gen, 1)
            test_responses: list[str | None] = [None] * len(problems)
            for k, i in enumerate(order):
                test_responses[i] = responses[k]
            n_missing = sum(r is None for r in responses)
            if n_missing:
                clock.events.append(f"{clock.elapsed():.0f}s: {arm}: decoding deadline passed; {n_missing} of "
                                    f"{len(responses)} responses not complete (not evaluated)")
            report, done = _evaluate_subset(problems, test_responses, executor, cfg, max_new_tokens,
                                            {"arm": arm, "checkpoint": info})
            verdicts[arm] = {r: [None] * len(problems) for r in (PRIMARY_RULE, "legacy_5pct_rounded")}
            if report is not None:
                for i, item in zip(done, report["items"]):
                    for r in verdicts[arm]:
                        verdicts[arm][r][i] = item["correct"].get(r)
            item_reports[arm] = {"generated": report}
            public = {}
            offset = len(problems)
            for bench, ps in public_sets.items():
                bench_responses = responses[offset:offset + len(ps)]
                offset += len(ps)
                rep, _ = _evaluate_subset(ps, bench_responses, executor, cfg, max_new_tokens,
                                          {"arm": arm, "benchmark": bench})
                item_reports[arm][bench] = rep
                overall = rep["summary"]["overall"] if rep else {"n": 0}
                public[bench] = {"n": overall["n"], "not_evaluated": len(ps) - overall["n"]}
                if rep is not None:
                    public[bench].update({"format_rate": overall["format_rate"],
                                          "execution_rate": overall["execution_rate"],
                                          "rules": overall["rules"], "rule_labels": rep["rule_labels"]})
            arms[arm] = {"stages": stages, "checkpoint": str(ckpt),
                         "train_tokens": sum(s["tokens"] for s in stages),
                         "train_steps": sum(s["steps"] for s in stages),
                         "generated": report["summary"] if report else None,
                         "n_evaluated": len(done), "n_not_evaluated": len(problems) - len(done),
                         "public_benchmarks": public,
                         "timing_s": {"train": round(t_eval - t_arm, 1), "generate": gen_s,
                                      "decode_allowance": None if allowance is None else round(allowance, 1),
                                      "evaluate_total": round(clock.elapsed() - t_eval, 1)}}
            del model
            overhead_s.append(max(0.0, clock.elapsed() - t_eval - gen_s))
            isolation = executor.isolation
            atomic_write_json(json_path, result_so_far(final=False))   # a partial result survives a kill
    t_out = clock.elapsed()
    result = result_so_far(final=True)
    atomic_write_json(items_path, {"experiment": cfg.name, "arms": item_reports})
    note = None
    if result["analysis"] is not None:
        note = plot(result["analysis"], out_dir / f"{cfg.name}.png",
                    f"{cfg.name}: greedy Pass@1 by family split ({cfg.stage.model})")
    else:
        note = "no arm was evaluated; plot skipped"
    result["plot"] = str(out_dir / f"{cfg.name}.png") if note is None else None
    result["plot_note"] = note
    result["items_file"] = str(items_path)
    timing["write_s"] = round(clock.elapsed() - t_out, 1)
    result["wall_s"] = round(clock.elapsed(), 1)
    atomic_write_json(json_path, result)
    return result


def _common_verdicts(verdicts: dict[str, dict[str, list]], n: int) -> dict[str, dict[str, list]]:
    """Verdicts restricted to the items evaluated in every arm (the others become None, i.e. dropped),
    so every rate and McNemar test compares the arms on the same items."""
    if not verdicts:
        return {}
    evaluated = [all(any(v[r][i] is not None for r in v) for v in verdicts.values()) for i in range(n)]
    return {arm: {r: [x if evaluated[i] else None for i, x in enumerate(vals)] for r, vals in by_rule.items()}
            for arm, by_rule in verdicts.items()}


def combine_runs(run_jsons: Sequence[str | Path], out_dir: str | Path, name: str) -> dict:
    """Pair single-arm runs (the h200_arm preset: one arm per device call) item by item: the
    verdicts of each run's ``<name>_items.json``, aligned by item id, into one analysis (Wilson per
    arm and split, exact McNemar against sft_only on the items every arm evaluated), tokens and
    steps per arm, one JSON and one plot. The runs must share the seed, the split and the test set."""
    runs = [json.loads(Path(p).read_text()) for p in run_jsons]
    items_by_arm: dict[str, dict[str, dict]] = {}
    arms: dict[str, dict] = {}
    for path, run in zip(run_jsons, runs):
        items = json.loads(Path(run["items_file"] if Path(run.get("items_file", "")).is_file()
                                else Path(path).with_name(Path(path).stem + "_items.json")).read_text())
        for arm, reports in items["arms"].items():
            if arm in items_by_arm:
                raise ValueError(f"arm {arm!r} appears in two runs; pass one run per arm")
            generated = (reports.get("generated") or {}).get("items", [])
            items_by_arm[arm] = {it["id"]: it for it in generated}
            arms[arm] = {k: run["arms"][arm].get(k) for k in ("train_tokens", "train_steps", "stages",
                                                                "public_benchmarks", "timing_s", "generated",
                                                                "n_evaluated", "n_not_evaluated")}
            arms[arm]["run"] = str(path)
    splits = {json.dumps(r.get("family_split"), sort_keys=True) for r in runs}
    if len(splits) != 1:
        raise ValueError("the runs have different family splits; combine runs of one seed and preset")
    ids = sorted(set.union(*(set(v) for v in items_by_arm.values()))) if items_by_arm else []
    problems = []
    for i in ids:
        split = next(v[i]["split"] for v in items_by_arm.values() if i in v)
        problems.append(types.SimpleNamespace(id=i, split=split))
    rules = (PRIMARY_RULE, "legacy_5pct_rounded")
    verdicts = {arm: {r: [(v[i]["correct"].get(r) if i in v else None) for i in ids] for r in rules}
                for arm, v in items_by_arm.items()}
    verdicts = _common_verdicts(verdicts, len(ids))
    paired = sum(all(verdicts[a][PRIMARY_RULE][k] is not None for a in verdicts) for k in range(len(ids)))
    result = {"experiment": name, "runs": [str(p) for p in run_jsons], "family_split": runs[0].get("family_split"),
              "n_items": len(ids), "n_paired": paired, "arms": arms,
              "equal_compute": len({a["train_tokens"] for a in arms.values()}) == 1
              and len({a["train_steps"] for a in arms.values()}) == 1,
              "analysis": analyse(problems, verdicts, rules) if ids else None}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    note = plot(result["analysis"], out / f"{name}.png", f"{name}: greedy Pass@1 by family split") \
        if result["analysis"] else "nothing to plot"
    result["plot"] = None if note else str(out / f"{name}.png")
    result["plot_note"] = note
    atomic_write_json(out / f"{name}.json", result)
    return result


def make_source(name: str) -> ORDataSource:
    if name == "or_data":
        from trex.training.or_eval.or_data_source import ORDataPipelineSource
        return ORDataPipelineSource()
    if name == "toy":
        from trex.training.or_eval.toy_source import ToySource
        return ToySource()
    raise ValueError(f"unknown data source {name!r}; choose or_data or toy")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m trex.training.or_eval.experiment", description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="toy", choices=sorted(PRESETS))
    p.add_argument("--combine", nargs="+", default=None, metavar="RUN_JSON",
                   help="pair single-arm runs (one JSON per arm, same seed and preset) into one analysis; "
                        "writes <out-dir>/<name>.json and .png, runs nothing")
    p.add_argument("--source", default=None, choices=("or_data", "toy"),
                   help="data source (default: toy for the toy preset, or_data otherwise)")
    p.add_argument("--out-dir", default=None)
    p.add_argument("--work-dir", default=None)
    p.add_argument("--name", default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--cpt-steps", type=int, default=None)
    p.add_argument("--sft-steps", type=int, default=None)
    p.add_argument("--arms", default=None, help=f"comma-separated subset of {','.join(ARMS)}")
    p.add_argument("--device", default=None, help="training and decoding device (cpu, cuda, auto)")
    p.add_argument("--time-budget-s", type=float, default=None,
                   help="wall-clock guard in seconds (0 = none); see ExperimentConfig.time_budget_s")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config field, e.g. --set test_per_family=2 --set stage.seq_len=256 "
                        "(VALUE is read as JSON, else as a string)")
    args = p.parse_args(argv)
    if args.combine:
        missing = [f for f in args.combine if not Path(f).is_file()]
        if missing:
            p.error(f"argument --combine: {missing} not found; pass the JSON of each single-arm run")
        try:
            combined = combine_runs(args.combine, args.out_dir or "bench/results", args.name or "or_cpt_ablation")
        except (ValueError, KeyError) as exc:
            p.error(f"argument --combine: {exc}")
        print(f"paired {combined['n_paired']} of {combined['n_items']} items over arms {sorted(combined['arms'])}; "
              f"equal compute: {combined['equal_compute']}")
        return 0
    changes = {k: v for k, v in {"out_dir": args.out_dir, "work_dir": args.work_dir, "name": args.name,
                                 "seed": args.seed, "cpt_steps": args.cpt_steps,
                                 "sft_steps": args.sft_steps}.items() if v is not None}
    if args.arms is not None:
        changes["arms"] = tuple(a.strip() for a in args.arms.split(",") if a.strip())
    if args.time_budget_s is not None:
        changes["time_budget_s"] = args.time_budget_s or None
    # Every check that needs no data runs here, so a bad argument costs no work and writes no file.
    try:
        cfg = apply_settings(preset(args.preset, **changes), args.set)
        if args.device is not None:
            cfg = dataclasses.replace(cfg, stage=dataclasses.replace(cfg.stage, device=args.device))
        validate_config(cfg)
        source = make_source(args.source or ("toy" if args.preset == "toy" else "or_data"))
        split_families(cfg, source.families())
    except ValueError as exc:
        p.error(str(exc))   # usage + message on stderr, exit status 2
    command = " ".join(["python -m trex.training.or_eval.experiment", *(argv if argv is not None else sys.argv[1:])])
    result = run_experiment(cfg, source, command=command)
    rates = result["analysis"]["rules"][PRIMARY_RULE]["pass_at_1"] if result["analysis"] else {}
    def cell(r: dict) -> str:
        return "-" if r["rate"] is None else f"{100 * r['rate']:.1f}%"
    for arm, by_split in rates.items():
        print(f"{arm:18s} " + "  ".join(f"{s}={cell(by_split[s])}" for s in ("all", *SPLITS)))
    for event in result["time_guard"]["events"]:
        print(f"time guard: {event}")
    print(f"wrote {Path(cfg.out_dir) / (cfg.name + '.json')} in {result['wall_s']}s"
          + (f" ({result['plot_note']})" if result["plot_note"] else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
