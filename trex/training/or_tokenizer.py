"""Byte-level BPE tokenizer for the OR post-training runs, trained offline with HF `tokenizers`.

Why these choices (reference/or_posttraining.md §5, "Tokenizer"):
- tiktoken fetches its merge files from the network on first use, so it cannot be used offline;
  a small BPE trained on our own training split takes seconds and is frozen for every arm.
- Digits are split one by one *before* BPE sees the text (``Digits(individual_digits=True)``),
  so no merge can ever glue digits together: the model copies numbers digit by digit, which is
  what an objective value or a coefficient in a word problem needs.
- Byte-level pre-tokenisation maps every byte to a symbol of the initial alphabet, so any UTF-8
  string encodes and decodes back exactly (no unknown token).

Special tokens: ``<|pad|>`` ``<|bos|>`` ``<|eos|>`` ``<|prompt|>`` ``<|response|>``. A prompt for
generation is ``<|bos|><|prompt|>{question}<|response|>``; an SFT example continues with
``{response}<|eos|>`` and its loss mask covers only the response and the eos (``encode_sft``).

The interface (``encode``/``decode``/``vocab_size``/``bos_id``/``eos_id``/``pad_id``) is what the
training loop needs from a pluggable tokenizer. The tokenizer is saved as ``tokenizer.json`` (the
`tokenizers` serialisation, which carries the special tokens) next to the model checkpoint.

It lives in trex.training, not in or_eval: the OR data pipeline (its SFT export and the `trex or-data
tokenizer` command) and the evaluation both use it, and neither imports the other.
"""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

PAD = "<|pad|>"
BOS = "<|bos|>"
EOS = "<|eos|>"
PROMPT = "<|prompt|>"
RESPONSE = "<|response|>"
SPECIAL_TOKENS = (PAD, BOS, EOS, PROMPT, RESPONSE)

TOKENIZER_FILENAME = "tokenizer.json"


def _atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _empty_bpe() -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    return tok


def format_prompt(question: str) -> str:
    """The SFT prompt text: ``<|prompt|>{question}<|response|>`` (the training loop adds bos).

    The one definition of the prompt format: decoding (generate.generate_responses), the experiment's
    SFT file and ``trex or-data generate``'s SFT export all call it."""
    return f"{PROMPT}{question}{RESPONSE}"


def unformat_prompt(prompt: str) -> str | None:
    """The question inside ``format_prompt(question)``; None for text not in that format."""
    if prompt.startswith(PROMPT) and prompt.endswith(RESPONSE) and len(prompt) >= len(PROMPT) + len(RESPONSE):
        return prompt[len(PROMPT):len(prompt) - len(RESPONSE)]
    return None


def smallest_vocab_size() -> int:
    """The least ``vocab_size`` ``ORTokenizer.train`` accepts: the byte alphabet plus the specials."""
    return len(pre_tokenizers.ByteLevel.alphabet()) + len(SPECIAL_TOKENS)


# The largest vocab_size ORTokenizer.train accepts. The Rust trainer reserves memory for the whole
# vocabulary up front and aborts the process (no Python exception) when that fails (2**40 did);
# 2**20 is 8x DeepSeek-V4's 129280 tokens.
LARGEST_VOCAB_SIZE = 1 << 20


def saved_path(path: str | os.PathLike) -> Path:
    """The file ``ORTokenizer.save(path)`` writes: ``path`` itself for a ``.json`` name, else
    ``path/tokenizer.json``."""
    p = Path(path)
    return p if p.suffix == ".json" else p / TOKENIZER_FILENAME


def writable_or_error(path: str | os.PathLike) -> str | None:
    """None if ``ORTokenizer.save(path)`` can write there (its folder exists or can be made, and is
    writable), else why not; checked before training, which can take minutes."""
    folder = saved_path(path).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create {folder} ({exc.strerror or exc})"
    if not os.access(folder, os.W_OK):
        return f"{folder} is not writable"
    return None


def record_text(row: dict) -> str:
    """The text a training-file row gives the tokenizer: a CPT document's ``text``, else an SFT
    pair's ``prompt + response`` (the experiment's files and `trex or-data generate`'s alike)."""
    if "text" in row:
        return str(row["text"])
    if "prompt" in row and "response" in row:
        return str(row["prompt"]) + str(row["response"])
    raise ValueError(f"row has neither 'text' nor 'prompt' and 'response' (keys {sorted(row)}); pass CPT "
                     f"documents or SFT pairs")


def corpus_texts(paths: Iterable[str | os.PathLike]) -> Iterable[str]:
    """Training texts from files: ``.jsonl`` -> ``record_text`` of each row; any other file -> its
    whole content as one document."""
    for path in map(Path, paths):
        if not path.is_file():
            raise FileNotFoundError(f"corpus file {path} not found; pass existing JSONL or text files")
        if path.suffix != ".jsonl":
            yield path.read_text(encoding="utf-8")
            continue
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    if not isinstance(row, dict):
                        raise ValueError(f"a JSON {type(row).__name__}, not an object")
                    yield record_text(row)
                except ValueError as exc:   # json.JSONDecodeError is a ValueError
                    raise ValueError(f"{path}:{lineno}: {exc}") from exc


class ORTokenizer:
    """A frozen BPE tokenizer with the special tokens of the OR prompt/response format."""

    def __init__(self, tokenizer: Tokenizer):
        missing = [t for t in SPECIAL_TOKENS if tokenizer.token_to_id(t) is None]
        if missing:
            raise ValueError(f"tokenizer lacks the special tokens {missing}; build it with "
                             f"ORTokenizer.train(...) so that all of {list(SPECIAL_TOKENS)} exist")
        self._tok = tokenizer
        self.pad_id = tokenizer.token_to_id(PAD)
        self.bos_id = tokenizer.token_to_id(BOS)
        self.eos_id = tokenizer.token_to_id(EOS)
        self.prompt_id = tokenizer.token_to_id(PROMPT)
        self.response_id = tokenizer.token_to_id(RESPONSE)

    # ----------------------------------------------------------------------------------- build
    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int = 4096, min_frequency: int = 2) -> "ORTokenizer":
        """Train a BPE on ``texts`` (the training split only; never on evaluation problems)."""
        alphabet = pre_tokenizers.ByteLevel.alphabet()
        floor = smallest_vocab_size()
        if vocab_size < floor:
            raise ValueError(f"vocab_size={vocab_size} is below the byte alphabet plus specials "
                             f"({floor}); pass vocab_size >= {floor}")
        if vocab_size > LARGEST_VOCAB_SIZE:
            raise ValueError(f"vocab_size={vocab_size} is above {LARGEST_VOCAB_SIZE}; pass a vocab_size in "
                             f"[{floor}, {LARGEST_VOCAB_SIZE}]")
        tok = _empty_bpe()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                      special_tokens=list(SPECIAL_TOKENS), initial_alphabet=alphabet,
                                      show_progress=False)
        tok.train_from_iterator(texts, trainer)
        return cls(tok)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "ORTokenizer":
        """Load from a ``tokenizer.json`` file or from a directory (checkpoint) that holds one."""
        p = Path(path)
        if p.is_dir():
            p = p / TOKENIZER_FILENAME
        if not p.is_file():
            raise FileNotFoundError(f"no tokenizer at {p}; save one with ORTokenizer.save(dir) or "
                                    f"pass the checkpoint directory that holds {TOKENIZER_FILENAME}")
        return cls(Tokenizer.from_file(str(p)))

    def save(self, path: str | os.PathLike) -> Path:
        """Write ``tokenizer.json`` atomically; ``path`` is a directory or a ``.json`` file name."""
        p = saved_path(path)
        _atomic_write_text(p, self._tok.to_str(pretty=False))
        return p

    # ------------------------------------------------------------------------------ interface
    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        ids = self._tok.encode(text, add_special_tokens=False).ids
        return ([self.bos_id] if add_bos else []) + ids + ([self.eos_id] if add_eos else [])

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """Inverse of ``encode``: ``decode(encode(s)) == s`` for every string ``s``."""
        return self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        return [self._tok.id_to_token(i) for i in ids]

    # ------------------------------------------------------------------ prompt/response format
    def encode_prompt(self, question: str) -> list[int]:
        """Token ids that a model continues greedily: ``<|bos|><|prompt|>q<|response|>``.

        Equal to ``[bos] + encode(format_prompt(q))``: the special tokens written as text are
        matched as special ids, so the training loop's SFT rows (``bos prompt response eos``, with
        the prompt field holding ``format_prompt(q)``) see exactly these ids.
        """
        return [self.bos_id] + self.encode(format_prompt(question))

    def encode_sft(self, question: str, response: str) -> tuple[list[int], list[int]]:
        """(ids, loss_mask) for one SFT pair; the mask is 1 on the response tokens and the eos."""
        prompt = self.encode_prompt(question)
        answer = self.encode(response) + [self.eos_id]
        return prompt + answer, [0] * len(prompt) + [1] * len(answer)

    def describe(self) -> dict:
        return {"kind": "bpe-bytelevel-digits", "vocab_size": self.vocab_size,
                "special_tokens": {t: self._tok.token_to_id(t) for t in SPECIAL_TOKENS}}

    def __repr__(self) -> str:
        return f"ORTokenizer({json.dumps(self.describe())})"


TOKENIZER_ENV = "TREX_OR_TOKENIZER"


def from_env() -> ORTokenizer:
    """Zero-argument factory for the training loop (``data.tokenizer =
    "trex.training.or_tokenizer:from_env"``): loads the tokenizer saved at ``$TREX_OR_TOKENIZER``."""
    path = os.environ.get(TOKENIZER_ENV)
    if not path:
        raise RuntimeError(f"${TOKENIZER_ENV} is not set; point it at a saved tokenizer.json (or the "
                           f"checkpoint directory holding one) before the training loop builds its data")
    return ORTokenizer.load(path)
