"""Training data: corpora -> token samples -> deterministic, resumable batches.

* Corpora: JSONL (one object per line) and plain text (one document per file), named by paths
  or glob patterns.
* Tokenizers: anything with the `Tokenizer` protocol (trex.training.tokenizer names and loads them).
* CPT: documents become `bos doc eos` and are packed end to end into one token stream, cut into
  windows of seq_len + 1 tokens (inputs and next-token labels; the MTP head's target, one token
  further, is labels shifted by one inside lm_loss). Attention runs across document boundaries
  inside a window (plain packing).
* SFT: `bos prompt response eos`, one pair per row, truncated/padded to the window; the loss mask is
  0 on prompt and padding positions, so only response tokens (and eos) are learned.
* SFT packed (``sft_packed``): consecutive pairs fill a window end to end (a pair that does not fit
  starts the next row), loss on response tokens only; attention crosses pair boundaries inside a
  row (plain packing, as CPT), so no window is mostly padding.
* Order: a per-epoch permutation drawn from (seed, epoch); the loader's state is the number of
  samples consumed, so resuming continues with exactly the next batch.
"""
from __future__ import annotations

import glob
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import torch

from .errors import ConfigError
from .tokenizer import Tokenizer

# ---------------------------------------------------------------------------------------------
# Corpora


def expand_paths(patterns: list[str]) -> list[Path]:
    files: list[Path] = []
    for pattern in patterns:
        matched = sorted(glob.glob(pattern, recursive=True))
        if not matched:
            raise FileNotFoundError(f"data.paths: {pattern!r} matches no file")
        files += [Path(m) for m in matched if Path(m).is_file()]
    return files


def _format_of(path: Path, fmt: str) -> str:
    if fmt != "auto":
        return fmt
    return "jsonl" if path.suffix in (".jsonl", ".ndjson") else "text"


def read_records(patterns: list[str], fmt: str = "auto") -> Iterator[dict]:
    """JSONL lines as dicts; a plain-text file as {"text": whole file}."""
    for path in expand_paths(patterns):
        if _format_of(path, fmt) == "jsonl":
            with open(path, encoding="utf-8") as f:
                for lineno, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            yield json.loads(line)
                        except json.JSONDecodeError as e:
                            raise ConfigError(f"data.paths: {path}:{lineno}: not valid JSON ({e}); fix the line or "
                                              f"name the file with another suffix to read it as text") from None
        else:
            yield {"text": path.read_text(encoding="utf-8", errors="replace")}


def _field(record: dict, name: str, where: str, kind: str) -> str:
    if name not in record:
        plain_text = " (a plain-text file is one record with the field 'text')" if set(record) == {"text"} else ""
        fix = ("point data.prompt_field and data.response_field at the records' prompt and response "
               "fields (JSONL), or train plain text with data.kind = 'cpt'") if kind == "sft" else \
              f"set {where} to the field holding the document text"
        raise ConfigError(f"{where} = {name!r}: a record has no such field (its fields: {sorted(record)})"
                          f"{plain_text}; data.kind = {kind!r}: {fix}")
    return str(record[name])


# ---------------------------------------------------------------------------------------------
# Datasets: each sample is (tokens [T], labels [T], loss_mask [T]); labels[t] is the token after
# tokens[t] (docs/contracts.md: labels arrive already shifted).


@dataclass
class Sample:
    tokens: torch.Tensor     # int64 [T]
    labels: torch.Tensor     # int64 [T]
    loss_mask: torch.Tensor  # float32 [T]


class PackedDataset:
    """CPT: all documents packed into one stream, cut into non-overlapping windows."""

    def __init__(self, records: Iterator[dict], tokenizer: Tokenizer, seq_len: int, text_field: str = "text"):
        ids: list[int] = []
        for rec in records:
            ids.append(tokenizer.bos_id)
            ids += tokenizer.encode(_field(rec, text_field, "data.text_field", "cpt"))
            ids.append(tokenizer.eos_id)
        self.stream = torch.tensor(ids, dtype=torch.int64)
        self.seq_len = seq_len
        # windows of seq_len + 1 tokens overlap by one (the last label is the next window's first input)
        self.num_samples = (len(ids) - 1) // seq_len
        if self.num_samples == 0:
            raise ConfigError(f"corpus has {len(ids)} tokens, fewer than one window of {seq_len + 1} "
                              f"(data.seq_len + 1); add data or lower data.seq_len")

    def __len__(self) -> int:
        return self.num_samples

    def __getitem__(self, i: int) -> Sample:
        start = i * self.seq_len
        window = self.stream[start:start + self.seq_len + 1]
        return Sample(window[:-1].clone(), window[1:].clone(), torch.ones(self.seq_len))


class SFTDataset:
    """SFT: one prompt/response pair per row; loss only on the response and its eos."""

    def __init__(self, records: Iterator[dict], tokenizer: Tokenizer, seq_len: int,
                 prompt_field: str = "prompt", response_field: str = "response"):
        self.seq_len, self.pad_id = seq_len, tokenizer.pad_id
        self.rows: list[tuple[torch.Tensor, int]] = []   # (ids, index of the first response token)
        for rec in records:
            prompt = [tokenizer.bos_id] + tokenizer.encode(_field(rec, prompt_field, "data.prompt_field", "sft"))
            response = tokenizer.encode(_field(rec, response_field, "data.response_field", "sft")) + [tokenizer.eos_id]
            ids = torch.tensor(prompt + response, dtype=torch.int64)
            self.rows.append((ids, len(prompt)))
        if not self.rows:
            raise ConfigError("data.paths: the SFT corpus has no records; name JSONL files with prompt/response pairs")

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> Sample:
        ids, first_response = self.rows[i]
        window = self.seq_len + 1
        full = torch.full((window,), self.pad_id, dtype=torch.int64)
        n = min(len(ids), window)
        full[:n] = ids[:n]
        # position j of labels holds token j + 1; it is learned if that token is a real response token
        pos = torch.arange(1, window)
        mask = ((pos >= first_response) & (pos < n)).float()
        return Sample(full[:-1].clone(), full[1:].clone(), mask)


class PackedSFTDataset(SFTDataset):
    """SFT pairs packed into full windows: ``bos prompt response eos`` after one another, a pair
    that does not fit the rest of a window starting the next one (a pair longer than a window is
    cut, as in SFTDataset); the loss mask is 1 on response tokens (and eos) only."""

    def __init__(self, records: Iterator[dict], tokenizer: Tokenizer, seq_len: int,
                 prompt_field: str = "prompt", response_field: str = "response"):
        super().__init__(records, tokenizer, seq_len, prompt_field, response_field)
        window = seq_len + 1
        packed: list[tuple[torch.Tensor, torch.Tensor]] = []
        ids_now: list[torch.Tensor] = []
        learn_now: list[torch.Tensor] = []
        used = 0

        def flush():
            if ids_now:
                packed.append((torch.cat(ids_now), torch.cat(learn_now)))
                ids_now.clear()
                learn_now.clear()

        for ids, first_response in self.rows:
            ids = ids[:window]
            if used + len(ids) > window:
                flush()
                used = 0
            learn = torch.zeros(len(ids), dtype=torch.bool)
            learn[first_response:] = True                      # token j is learned if it is a response token
            ids_now.append(ids)
            learn_now.append(learn)
            used += len(ids)
        flush()
        self.packed = packed

    def __len__(self) -> int:
        return len(self.packed)

    def __getitem__(self, i: int) -> Sample:
        ids, learn = self.packed[i]
        window = self.seq_len + 1
        full = torch.full((window,), self.pad_id, dtype=torch.int64)
        full[:len(ids)] = ids
        learned = torch.zeros(window, dtype=torch.bool)
        learned[:len(learn)] = learn
        # position j of labels holds token j + 1
        return Sample(full[:-1].clone(), full[1:].clone(), learned[1:].float())


def build_dataset(cfg, tokenizer: Tokenizer):
    """cfg: trex.training.config.DataConfig."""
    records = read_records(cfg.paths, cfg.format)
    if cfg.kind == "cpt":
        return PackedDataset(records, tokenizer, cfg.seq_len, cfg.text_field)
    dataset = PackedSFTDataset if cfg.kind == "sft_packed" else SFTDataset
    return dataset(records, tokenizer, cfg.seq_len, cfg.prompt_field, cfg.response_field)


# ---------------------------------------------------------------------------------------------
# Loader


class DataLoader:
    """Deterministic batches: the global micro-batch of `micro_batch * world` samples at position
    `consumed` in the (seed, epoch) permutation; rank r takes its contiguous slice. With the same
    global batch, one process and N processes see the same samples."""

    def __init__(self, dataset, micro_batch: int, seed: int = 0, rank: int = 0, world: int = 1):
        self.dataset, self.micro_batch, self.seed = dataset, micro_batch, seed
        self.rank, self.world = rank, world
        self.consumed = 0
        self._perm_epoch, self._perm = -1, None

    def _index(self, global_pos: int) -> int:
        n = len(self.dataset)
        epoch, pos = divmod(global_pos, n)
        if epoch != self._perm_epoch:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            self._perm, self._perm_epoch = torch.randperm(n, generator=g), epoch
        return int(self._perm[pos])

    def next_batch(self) -> dict[str, torch.Tensor]:
        start = self.consumed + self.rank * self.micro_batch
        samples = [self.dataset[self._index(start + j)] for j in range(self.micro_batch)]
        self.consumed += self.micro_batch * self.world
        return {"tokens": torch.stack([s.tokens for s in samples]),
                "labels": torch.stack([s.labels for s in samples]),
                "loss_mask": torch.stack([s.loss_mask for s in samples])}

    @property
    def epoch(self) -> float:
        return self.consumed / len(self.dataset)

    def state_dict(self) -> dict:
        return {"consumed": self.consumed, "seed": self.seed, "num_samples": len(self.dataset)}

    def load_state_dict(self, state: dict) -> None:
        if state["num_samples"] != len(self.dataset) or state["seed"] != self.seed:
            raise ConfigError(f"checkpoint data position is for {state['num_samples']} samples / seed "
                              f"{state['seed']}, but this corpus has {len(self.dataset)} / seed {self.seed}; "
                              f"resume with the same data.paths (the same files, unchanged), data.seq_len and "
                              f"data.seed, or pass --checkpoint.resume false")
        self.consumed = state["consumed"]
