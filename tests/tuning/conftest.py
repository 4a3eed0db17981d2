"""Fixtures of the tuning tests: a private store file per test, and one verifier process per module."""
import os
import sys

import pytest

# `tuning` is a top-level package of the repository; until the editable install lists it, import it
# from the checkout (the same directory pytest runs from).
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


@pytest.fixture
def store_path(tmp_path, monkeypatch):
    path = tmp_path / "store.json"
    monkeypatch.setenv("TREX_TUNING_STORE", str(path))
    return path


@pytest.fixture(scope="module")
def verifier():
    from tuning.verify import Verifier
    with Verifier() as v:
        yield v
