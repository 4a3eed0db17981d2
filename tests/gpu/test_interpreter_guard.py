"""The interpreter tests' guard (gpu_cases.use_triton_interpreter): in a process whose triton.language was
imported for the GPU, an interpreted kernel fails at its first library call, so the test skips and names the
command that runs it alone; where the library is interpreted (or not imported yet) it sets the interpreter up."""
from __future__ import annotations

import os
import sys
import types

import pytest

from gpu_cases import INTERPRETER_COMMAND, use_triton_interpreter


def _standard_with(sum_fn):
    module = types.ModuleType("triton.language.standard")
    module.sum = sum_fn
    return module


def test_skips_with_the_command_where_the_library_was_built_for_the_gpu(monkeypatch, tmp_path):
    class JITFunction:          # what triton.jit returns without TRITON_INTERPRET=1
        pass
    monkeypatch.setitem(sys.modules, "triton.language.standard", _standard_with(JITFunction()))
    with pytest.raises(pytest.skip.Exception, match="TRITON_INTERPRET=1 python -m pytest") as skipped:
        use_triton_interpreter(monkeypatch, tmp_path)
    assert INTERPRETER_COMMAND in str(skipped.value)


def test_sets_the_interpreter_up_where_the_library_is_interpreted(monkeypatch, tmp_path):
    class InterpretedFunction:  # what triton.jit returns under TRITON_INTERPRET=1
        pass
    monkeypatch.setitem(sys.modules, "triton.language.standard", _standard_with(InterpretedFunction()))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    use_triton_interpreter(monkeypatch, tmp_path)
    assert os.environ["TRITON_INTERPRET"] == "1" and os.environ["TREX_TRITON_CACHE"] == str(tmp_path)
