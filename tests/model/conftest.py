"""Fixtures for the DeepSeek-V4 model tests (tiny config, CPU)."""
import pytest
import torch

from trex.training.model import Transformer, get_config


@pytest.fixture(autouse=True)
def _one_thread(one_intra_op_thread):
    """Every model test runs with one intra-op thread (tests/conftest.py says why)."""


@pytest.fixture
def tiny_args():
    return get_config("tiny")


@pytest.fixture
def tiny_model(tiny_args):
    torch.manual_seed(0)
    return Transformer(tiny_args)
