"""Compiler-test fixtures: every test starts from a fresh Dynamo cache."""
import pytest
import torch

import trex.compiler.backend  # noqa: F401 - registers backend="trex"


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
