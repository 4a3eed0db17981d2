"""trex's key in Inductor's on-disk caches (trex.compiler.cache_key): a warm cache hits across processes
for the same trex and environment, and a change to either is a different key."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from trex.compiler import cache_key
from trex.compiler.backend import TrexOptions, _inductor_patches


def test_inductor_patches_carry_trex_key_unless_the_user_sets_a_post_grad_pass():
    patches = _inductor_patches(TrexOptions.from_dict({"inductor": {"max_autotune": True}}))
    assert isinstance(patches["post_grad_custom_post_pass"], cache_key.TrexCacheKey)
    assert patches["max_autotune"] is True
    own = object()
    assert cache_key.inductor_patches({"post_grad_custom_post_pass": own})["post_grad_custom_post_pass"] is own


def test_the_key_follows_the_kernel_environment_not_the_cache_location(monkeypatch):
    base = cache_key.fingerprint()
    monkeypatch.setenv("TREX_TRITON_CACHE", "/elsewhere")
    assert cache_key.fingerprint() == base
    monkeypatch.setenv("TREX_TRITON_POISON", "1")
    assert cache_key.fingerprint() != base
    assert cache_key.TrexCacheKey().uuid() == cache_key.fingerprint()


_CHILD = textwrap.dedent("""
    import json, torch
    import trex.compiler.backend  # noqa: F401
    from trex.compiler import logs

    def chain(x, w):
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(v + 1e-6)).to(x.dtype) * w

    x = torch.randn(4, 16, requires_grad=True)
    w = torch.randn(16, requires_grad=True)
    with logs.capture() as reports:
        torch.compile(chain, backend="trex", options={"rest": "inductor"})(x, w).sum().backward()
    counters = torch._dynamo.utils.counters["aot_autograd"]
    print(json.dumps({"hit": counters["autograd_cache_hit"], "miss": counters["autograd_cache_miss"],
                      "fused": sum(len(r.matches) for r in reports)}))
""")


@pytest.mark.slow
def test_a_second_process_hits_the_cache_and_a_changed_trex_misses(tmp_path):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"), TORCHINDUCTOR_COMPILE_THREADS="1")

    def run(**extra):
        out = subprocess.run([sys.executable, "-c", _CHILD], env={**env, **extra}, capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    cold = run()
    assert cold["fused"] == 1 and cold["hit"] == 0 and cold["miss"] == 1, cold
    warm = run()
    assert warm["hit"] == 1 and warm["miss"] == 0, warm
    changed = run(TREX_TRITON_POISON="1")       # another kernel environment: another key
    assert changed["hit"] == 0 and changed["miss"] == 1, changed
