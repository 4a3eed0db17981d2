"""trex's part of Inductor's on-disk cache keys.

A graph trex hands Inductor (``rest="inductor"``) holds ``torch.ops.trex.*`` calls whose lowering
(the printed Triton kernels, their tilings) is trex's code, not the graph's: AOTAutograd's cache keys
a compiled graph by the graph it receives, so after a change to a printer, a tiling rule or a
calibration table a warm cache would hand back the kernels of the old code. Inductor keys both of
its caches (the AOTAutograd and the FX graph cache) on the ``uuid()`` of every custom graph pass in
its config, so trex installs a post-grad pass that does nothing and whose uuid is the fingerprint of the parts
of trex that decide what a fused op lowers to on that path (every source and data file of
``_KERNEL_PACKAGES``: the backend, the passes and their IR, the Triton printer and its calibration
tables, the cost models, the tuning store's code) and of the ``TREX_*`` environment that selects
kernels. A warm cache then hits only for the same trex, and misses after a change there. The AscendC
printer, its emulator and the training stack are left out: no Inductor graph depends on them, and
keying on them would throw warm caches away for unrelated edits.
"""
from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from torch._inductor.custom_graph_pass import CustomGraphPass

_PACKAGE = Path(__file__).resolve().parent.parent          # trex/
_KERNEL_PACKAGES = ("compiler", "passes", "codegen_triton", "cost_models", "tuning")
_SUFFIXES = (".py", ".json", ".h", ".cpp", ".yaml", ".toml")
# environment that changes which kernels trex emits (not where caches live, nor logging)
_ENV_IGNORED = ("TREX_CACHE_DIR", "TREX_TRITON_CACHE", "TREX_LOGS", "TREX_COMMIT")


@functools.lru_cache(maxsize=1)
def package_fingerprint() -> str:
    """sha256 over the paths and bytes of the source and data files of ``_KERNEL_PACKAGES`` (once per
    process)."""
    digest = hashlib.sha256()
    files = (p for package in _KERNEL_PACKAGES for p in (_PACKAGE / package).rglob("*")
             if p.suffix in _SUFFIXES and "__pycache__" not in p.parts)
    for path in sorted(files):
        digest.update(str(path.relative_to(_PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def fingerprint() -> str:
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("TREX_") and k not in _ENV_IGNORED)
    return hashlib.sha256(f"{package_fingerprint()}{env}".encode()).hexdigest()


class TrexCacheKey(CustomGraphPass):
    """A post-grad pass that changes nothing; its uuid keys Inductor's caches on trex (module docstring)."""

    def __call__(self, graph) -> None:
        return None

    def uuid(self) -> str:
        return fingerprint()


def inductor_patches(patches: dict) -> dict:
    """``patches`` plus trex's cache key, unless the caller set a post-grad post pass of their own (then
    theirs is kept and, as Inductor requires of it, keys the caches itself)."""
    if patches.get("post_grad_custom_post_pass") is None:
        return {**patches, "post_grad_custom_post_pass": TrexCacheKey()}
    return patches
