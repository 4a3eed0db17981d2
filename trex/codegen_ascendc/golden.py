"""Golden snapshots of the generated AscendC (one per fused op with a kernel spec, bf16, double-buffered).

`python -m trex.codegen_ascendc.golden` rewrites them after an intended printer change; the test
tests/codegen/test_golden.py fails on any unreviewed difference."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from trex.codegen_ascendc.printer import print_kernel
from trex.compiler import registry

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


def golden_source(name: str) -> str:
    return print_kernel(registry.kernel_specs()[name].program("bf16"), buffer_depth=2)


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.cpp"


def update() -> list[Path]:
    """Write the golden file of every kernel spec whose printed source differs from it (a new op's
    file appears; unchanged ones are left alone, so a diff shows exactly what moved). Returns the
    files written."""
    GOLDEN_DIR.mkdir(exist_ok=True)
    out = []
    for name in registry.kernel_specs():
        path = golden_path(name)
        source = golden_source(name)
        if path.is_file() and path.read_text() == source:
            continue
        fd, tmp = tempfile.mkstemp(dir=GOLDEN_DIR, prefix=path.name + ".")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
        out.append(path)
    return out


if __name__ == "__main__":
    for p in update():
        print(p)
    sys.exit(0)
