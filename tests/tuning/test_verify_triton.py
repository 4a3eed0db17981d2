"""The verifier's CUDA-target path (the candidate's Triton source, poisoned outputs), run on the CPU
through Triton's interpreter in a verifier process started with TRITON_INTERPRET=1 (Triton reads it
when first imported, so it must be set before the process starts); skips without Triton."""
import importlib.util

import pytest

from trex.tuning import harness
from trex.tuning.verify import Verifier

pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed")

SIZES = {"ROWS": 13, "D": 64}
CONFIG = {"rows_per_tile": 4, "col_chunk": None, "num_warps": 4, "num_stages": 1, "programs": None,
          "reverse_second_pass": True, "second_chunk": None, "hist_scratch": True}


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TREX_TRITON_CACHE", str(tmp_path))
    monkeypatch.delenv("TREX_TRITON_POISON", raising=False)


def _request(source):
    return {"target": "cuda", "pattern": "rms_norm", "dtype": "fp32", "sizes": SIZES, "scalars": {"eps": 1e-6},
            "kernel": {"source": source, "config": CONFIG}, "checks": 2}


def test_triton_candidate_source_is_what_gets_verified():
    from trex.codegen_triton.printer import Tiling, print_program
    p = harness.build_program("rms_norm", "fp32")
    ks = print_program(p, {k: v for k, v in harness.symbol_sizes({"D": 64}).items()}, Tiling(**CONFIG))
    # the planted bug: the last partial tile's rows (13 % 4 = 1) are masked off, never stored
    assert "row_hi = ROWS\n" in ks.source
    wrong = ks.source.replace("row_hi = ROWS\n", "row_hi = ROWS - ROWS % 4\n")
    with Verifier() as v:
        assert v.verify(_request(ks.source)) == {"ok": True, "checks": 2}
        ans = v.verify(_request(wrong))
        assert not ans["ok"] and "non-finite" in ans["reason"]
        # the honest source again: the launcher's cache must not keep serving the planted module
        assert v.verify(_request(ks.source))["ok"]
