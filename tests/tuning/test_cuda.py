"""`trex tune --target cuda` on a real GPU (skipped without CUDA and Triton): measured profile, the
Triton verifier path, never slower than the tiling model's choice, store answer without compiling."""
import pytest

from trex.tuning import harness
from trex.tuning.cuda import available, interpreted

_ok, _why = available()
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not _ok or interpreted(),
                                                   reason=f"needs a CUDA GPU ({_why or 'Triton interpreter only'})")]

CASES = {"rms_norm": {"ROWS": 4096, "D": 2048}, "swiglu_limited": {"ROWS": 2048, "F": 1024}}


@pytest.mark.parametrize("pattern", sorted(CASES))
def test_cuda_tune_is_measured_never_slower_and_stored(pattern, store_path, verifier):
    from trex.tuning.search import tune
    res = tune("cuda", pattern, "bf16", CASES[pattern], max_candidates=4, verifier=verifier)
    assert res.profile_label.startswith("measured")
    root = next(n for n in res.nodes if n.status == "root")
    assert res.time_s <= root.time_s == res.baseline_time_s
    compiles = harness.COMPILE_COUNT["n"]
    again = tune("cuda", pattern, "bf16", CASES[pattern], max_candidates=4, verifier=verifier)
    assert again.from_store and harness.COMPILE_COUNT["n"] == compiles
