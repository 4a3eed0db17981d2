"""Shared pytest setup: hypothesis profiles.

TREX_FUZZ_PROFILE=ci (default) keeps the default run under the CI budget; =nightly is the long
fuzzing profile; =dev is quick for local iteration. Area fixtures live in each tests/<area>/conftest.py.
"""
import os

import torch
from hypothesis import HealthCheck, settings

# Without a GPU, Triton kernels can only run in Triton's interpreter. Triton decides that when a
# function is decorated, so it must be set before any test module imports a @triton.jit function.
# A user's tuning store (filled by `trex tune`) must not change what the tests see as the model's choice.
os.environ.setdefault("TREX_TUNING_STORE", "none")

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

settings.register_profile("dev", max_examples=20, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=200, deadline=None, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("nightly", max_examples=5000, deadline=None, derandomize=False, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("TREX_FUZZ_PROFILE", "ci"))
