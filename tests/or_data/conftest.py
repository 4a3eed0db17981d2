import os

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def or_sandbox():
    """One warm sandbox shared by the or_data tests (a fresh child process per program)."""
    from trex.training.or_data.sandbox import Sandbox

    with Sandbox(workers=1) as sb:
        yield sb
