"""Tokenizers of the train loop: the `Tokenizer` protocol, the byte-level default, and the resolver of
`data.tokenizer` (a registry name, or a "package.module:factory" string such as the OR post-training
BPE tokenizer's, trex.training.or_tokenizer:from_env).

Its own module, below both config and data: config.validate checks that data.tokenizer resolves, and
data builds datasets with the tokenizer, without the two importing each other.
"""
from __future__ import annotations

import importlib
from typing import Callable, Protocol, runtime_checkable

from .errors import ConfigError



@runtime_checkable
class Tokenizer(Protocol):
    vocab_size: int
    bos_id: int
    eos_id: int
    pad_id: int

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


class ByteTokenizer:
    """UTF-8 bytes; ids 0..2 are bos/eos/pad (DeepSeek's bos = 0, eos = 1), byte b is id b + 3."""

    bos_id, eos_id, pad_id = 0, 1, 2
    _offset = 3
    vocab_size = 256 + _offset

    def encode(self, text: str) -> list[int]:
        return [b + self._offset for b in text.encode("utf-8")]

    def decode(self, ids) -> str:
        data = bytes(i - self._offset for i in ids if i >= self._offset)
        return data.decode("utf-8", errors="replace")


TOKENIZERS: dict[str, Callable[[], Tokenizer]] = {"byte": ByteTokenizer}


def tokenizer_factory(spec: str) -> Callable[[], Tokenizer]:
    """The zero-argument factory `data.tokenizer` names: a registry name ("byte") or
    "package.module:factory" (imported here, not called). ConfigError names the key otherwise."""
    if spec in TOKENIZERS:
        return TOKENIZERS[spec]
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"data.tokenizer = {spec!r}: unknown; use one of {sorted(TOKENIZERS)} "
                          f"or 'package.module:factory'")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"data.tokenizer = {spec!r}: cannot load ({e}); give a name from "
                          f"{sorted(TOKENIZERS)} or an importable 'package.module:factory'") from None
    if not callable(factory):
        raise ConfigError(f"data.tokenizer = {spec!r}: {attr} is a {type(factory).__name__}, not a "
                          f"factory; name a function or class that takes no arguments")
    return factory


def load_tokenizer(spec: str) -> Tokenizer:
    """A registry name ("byte") or "package.module:factory" (called with no arguments)."""
    factory = tokenizer_factory(spec)
    try:
        tok = factory()
    # what a factory reports about its inputs: an unset variable (RuntimeError), a missing or
    # unreadable file (OSError), a file of the wrong kind (ValueError / LookupError)
    except (RuntimeError, OSError, ValueError, LookupError) as e:
        raise ConfigError(f"data.tokenizer = {spec!r}: the factory failed: {e}") from None
    if not isinstance(tok, Tokenizer):
        raise ConfigError(f"data.tokenizer = {spec!r} returned {type(tok).__name__}, which lacks the "
                          f"Tokenizer interface (encode, decode, vocab_size, bos_id, eos_id, pad_id)")
    return tok
