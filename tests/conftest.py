"""Shared pytest setup: hypothesis profiles.

TREX_FUZZ_PROFILE=ci (default) keeps the default run under the CI budget and is derandomized: every
run draws the same examples, so a red run reproduces; =nightly is the long fuzzing profile with
random seeds (tests marked `nightly` use it whatever the variable says; the default run deselects
them with -m "not slow and not nightly"); =dev is quick for local iteration. Area fixtures live in each tests/<area>/conftest.py.
"""
import os

import pytest
import torch
from hypothesis import HealthCheck, settings

# Without a GPU, Triton kernels can only run in Triton's interpreter. Triton decides that when a
# function is decorated, so it must be set before any test module imports a @triton.jit function.
# A user's tuning store (filled by `trex tune`) must not change what the tests see as the model's choice.
os.environ.setdefault("TREX_TUNING_STORE", "none")

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# Under pytest-xdist (scripts/test.sh runs two workers) each worker gets its share of the cores for
# torch's intra-op threads and for the OpenMP of the processes it starts: two workers with two threads
# each on CI's 2 cores spin-wait against each other (see one_intra_op_thread below).
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _workers > 1:
    # the cores this process may use, not the host's (no affinity call on macOS: its count)
    _cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    _threads = max(1, _cores // _workers)
    torch.set_num_threads(_threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(_threads))

settings.register_profile("dev", max_examples=20, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=200, deadline=None, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("nightly", max_examples=5000, deadline=None, derandomize=False, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("TREX_FUZZ_PROFILE", "ci"))


@pytest.fixture
def one_intra_op_thread():
    """One intra-op thread for the test (areas whose ops are tiny make it autouse). The tiny model's
    ops are too small to gain from threads; on the shared 2-core machine two OpenMP threads per test
    process made a training step ~10x slower (spin-waiting under load), and 100 tiny-model forwards
    took 65.7 CPU s with two threads against 1.95 with one."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def noised_tiny_model():
    """Factory: the tiny model (vocab 300, 128 positions, ``**changes``) in eval mode with seeded noise
    on every parameter and float buffer. At initialisation the absolute position embeddings,
    attention sinks, mHC bases and router biases are 0 and the norm weights 1, so a KV cache that
    dropped one of them would still match (a review planted a cache without `ape`: 6.9e-7 at init,
    0.32 with noise)."""
    from trex.training.model import Transformer, get_config

    def make(**changes):
        torch.manual_seed(0)
        args = get_config("tiny").replace(**{"vocab_size": 300, "max_seq_len": 128, **changes})
        model = Transformer(args).eval()
        g = torch.Generator().manual_seed(11)
        with torch.no_grad():
            for t in [*model.parameters(), *model.buffers()]:
                if t.is_floating_point():
                    t.add_(torch.randn(t.shape, generator=g) * 0.1)
        return model
    return make

