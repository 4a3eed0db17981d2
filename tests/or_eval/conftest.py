"""Fixtures for the OR evaluation tests: a small trained tokenizer and the benchmark data root."""
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


@pytest.fixture(scope="session")
def small_tokenizer() -> ORTokenizer:
    return ORTokenizer.train(_CORPUS, vocab_size=400, min_frequency=2)


@pytest.fixture(scope="session")
def data_root():
    try:
        return benchmarks.default_data_root()
    except FileNotFoundError as exc:
        pytest.skip(f"OR benchmark data not available: {exc}")
