"""Fixtures for the OR evaluation tests: a small trained tokenizer and the benchmark data root."""
import os

import pytest

from trex.training.or_eval import benchmarks
from trex.training.or_tokenizer import ORTokenizer

_CORPUS = [
    "import gurobipy as gp\nfrom gurobipy import GRB\nmodel = gp.Model()\n"
    "x = model.addVar(lb=0, name='x')\nmodel.setObjective(3 * x + 2, GRB.MAXIMIZE)\nmodel.optimize()\n",
    "A factory makes 120 chairs and 45 tables per week; each chair needs 3 hours of labour.",
    "## Variables\n- x[i,j] >= 0 (continuous): tonnes shipped\n## Objective\nminimize sum c[i,j]*x[i,j]\n",
    "Résumé: naïve café, 東京, emoji 🎉; tabs\tand  double  spaces.",
] * 20


@pytest.fixture(autouse=True)
def _one_thread(one_intra_op_thread):
    """Every OR-evaluation test runs the tiny model (decoding, ablation prep, the CLI) with one
    intra-op thread (tests/conftest.py says why)."""


@pytest.fixture(scope="session")
def small_tokenizer() -> ORTokenizer:
    return ORTokenizer.train(_CORPUS, vocab_size=400, min_frequency=2)


@pytest.fixture(scope="session")
def data_root():
    try:
        return benchmarks.default_data_root()
    except FileNotFoundError as exc:
        pytest.skip(f"OR benchmark data not available: {exc}")


@pytest.fixture(scope="session", autouse=True)
def _weak_sandbox_opt_in_where_the_host_lacks_layers():
    """Scoring refuses to run untrusted code without the kernel sandbox layers; these tests score
    known programs, so on a host without the layers they opt in (tests/or_data/test_sandbox_attacks.py
    is what tests the layers, and it skips there naming what is missing)."""
    from trex.training.or_data.sandbox import KERNEL_LAYERS, WEAK_SANDBOX_ENV, host_layers

    if any(host_layers()[layer] for layer in KERNEL_LAYERS) and WEAK_SANDBOX_ENV not in os.environ:
        os.environ[WEAK_SANDBOX_ENV] = "1"
        yield
        del os.environ[WEAK_SANDBOX_ENV]
    else:
        yield
