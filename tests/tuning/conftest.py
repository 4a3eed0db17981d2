"""Fixtures of the tuning tests: a private store file per test, and one verifier process per module."""
import os

import pytest


@pytest.fixture
def store_path(tmp_path, monkeypatch):
    path = tmp_path / "store.json"
    monkeypatch.setenv("TREX_TUNING_STORE", str(path))
    return path


@pytest.fixture(scope="module")
def verifier():
    from trex.tuning.verify import Verifier
    with Verifier() as v:
        yield v
