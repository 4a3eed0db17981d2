"""Detection of the real NPU path (CANN toolchain + torch_npu). Nothing here imports torch_npu:
merely importing it without CANN fails, and an installed torch_npu can break `import torch`
(reference/ascendc.md §5.3), so detection only looks for files and module specs."""
from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path


def cann_home() -> Path | None:
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_CANN_PACKAGE_PATH"):
        v = os.environ.get(var)
        if v and Path(v).is_dir():
            return Path(v)
    for p in ("/usr/local/Ascend/cann", "/usr/local/Ascend/ascend-toolkit/latest"):
        if Path(p).is_dir():
            return Path(p)
    return None


def npu_status() -> tuple[bool, str]:
    """(available, reason). Available needs a CANN install with bisheng and a torch_npu module."""
    home = cann_home()
    if home is None:
        return False, ("no CANN toolkit found (ASCEND_HOME_PATH unset and no /usr/local/Ascend install); "
                       "the generated project in the dump dir builds on a machine that has one")
    bisheng = shutil.which("bisheng") or next((str(p) for p in home.glob("*/ccec_compiler/bin/bisheng")), None)
    if bisheng is None:
        return False, f"CANN at {home} has no bisheng compiler"
    if importlib.util.find_spec("torch_npu") is None:
        return False, "torch_npu is not installed (needed to launch on the NPU stream)"
    return True, f"CANN at {home}, bisheng at {bisheng}, torch_npu present"


class NpuUnavailable(RuntimeError):
    pass


def require_npu() -> None:
    ok, why = npu_status()
    if not ok:
        raise NpuUnavailable(f"target='npu' is unavailable here: {why}")
