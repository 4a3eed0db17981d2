"""General text/code corpus for the "balanced" CPT mixture, built offline from the local Python.

Provenance: the Python standard library installed with the interpreter that runs this code
(``sysconfig.get_paths()["stdlib"]``) under the Python Software Foundation License
(``LICENSE.txt`` in that folder, recorded in the manifest). Two kinds of documents:
- ``stdlib_source``: every ``.py`` file of the standard library, except test suites
  (``test``/``tests`` folders), ``idlelib``, ``site-packages`` and files over ``max_file_bytes``
  (generated tables), one document per file;
- ``python_docs``: the reference-manual topics that ship in ``pydoc_data/topics.py`` (the text
  behind ``help('if')``, ``help('with')``...), one document per topic.

The output is deterministic for a given Python build (sorted paths, no randomness), so the
manifest's sha256 identifies the corpus; the H200 image's Python (3.12) gives a different but
equally documented corpus. Nothing is downloaded.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import platform
import sysconfig
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

EXCLUDED_PARTS = frozenset({"test", "tests", "idlelib", "site-packages", "dist-packages", "__pycache__"})


@dataclass(frozen=True)
class GeneralDoc:
    source: str      # stdlib_source | python_docs
    name: str        # path relative to the stdlib folder, or the docs topic name
    text: str


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def iter_stdlib_sources(max_file_bytes: int = 200_000) -> Iterator[GeneralDoc]:
    root = stdlib_root()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if EXCLUDED_PARTS.intersection(rel.parts) or path.stat().st_size > max_file_bytes:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if text.strip():
            yield GeneralDoc("stdlib_source", rel.as_posix(), text)


def iter_python_docs() -> Iterator[GeneralDoc]:
    try:
        topics = importlib.import_module("pydoc_data.topics").topics
    except ImportError:   # some distributions strip pydoc_data; the source part still stands
        return
    for name in sorted(topics):
        text = topics[name]
        if text.strip():
            yield GeneralDoc("python_docs", name, text)


def iter_general_docs(max_file_bytes: int = 200_000) -> Iterator[GeneralDoc]:
    yield from iter_python_docs()
    yield from iter_stdlib_sources(max_file_bytes)


def build_general_corpus(out_path: str | os.PathLike, max_chars: int | None = None,
                         max_file_bytes: int = 200_000) -> dict:
    """Write ``{"text", "source", "name"}`` JSONL (CPT documents) and return its manifest.

    ``max_chars`` caps the total text (documents are taken in order, the last one cut at the cap;
    when the whole library is smaller, all of it is taken and ``chars`` says how much); the manifest
    (written next to the JSONL as ``<name>.manifest.json``) records what was taken and its hash.
    """
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    counts: dict[str, int] = {}
    chars = 0
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for doc in iter_general_docs(max_file_bytes):
                if max_chars is not None and chars >= max_chars:
                    break
                if max_chars is not None and chars + len(doc.text) > max_chars:
                    # cut the last document so the corpus holds exactly max_chars characters
                    doc = GeneralDoc(doc.source, doc.name, doc.text[:max_chars - chars])
                line = json.dumps({"text": doc.text, "source": doc.source, "name": doc.name},
                                  ensure_ascii=False)
                f.write(line + "\n")
                digest.update(line.encode("utf-8"))
                counts[doc.source] = counts.get(doc.source, 0) + 1
                chars += len(doc.text)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    root = stdlib_root()
    manifest = {
        "path": str(out), "documents": counts, "chars": chars, "sha256": digest.hexdigest(),
        "provenance": {
            "what": "Python standard library sources and pydoc_data reference topics of the local interpreter",
            "python": platform.python_version(), "implementation": platform.python_implementation(),
            "stdlib_root": str(root),
            "license": "Python Software Foundation License (see LICENSE.txt in stdlib_root)",
            "license_file_present": (root / "LICENSE.txt").is_file(),
            "excluded": sorted(EXCLUDED_PARTS), "max_file_bytes": max_file_bytes, "max_chars": max_chars,
        },
    }
    manifest_path = out.with_name(out.stem + ".manifest.json")
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=".manifest.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
    os.replace(tmp, manifest_path)
    return manifest
