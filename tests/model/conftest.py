"""Fixtures for the DeepSeek-V4 model tests (tiny config, CPU)."""
import pytest
import torch

from trex.training.model import Transformer, get_config


@pytest.fixture(autouse=True)
def one_intra_op_thread():
    """The tiny model's ops are too small to gain from threads; on the shared 2-core machine two
    OpenMP threads per test process made a training step ~10x slower (spin-waiting under load)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def tiny_args():
    return get_config("tiny")


@pytest.fixture
def tiny_model(tiny_args):
    torch.manual_seed(0)
    return Transformer(tiny_args)
