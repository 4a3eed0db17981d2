"""Per-pipe counters: MTE2/MTE3 bytes and transfers, vector repeats, scalar ops, UB peak."""
import torch

from trex.codegen_ascendc.emulator import cache_dir, compile_kernel, runner

KEYS = {"mte2_bytes", "mte2_transfers", "mte3_bytes", "mte3_transfers", "vector_repeats", "scalar_ops",
        "ub_peak_bytes"}


def test_count_form_counters(api):
    n = 100
    c = api.launch("vec_binary", 1, torch.ones(n), torch.ones(n), torch.zeros(n), n, 0)
    assert KEYS <= set(c)
    assert c["vector_repeats"] == {"Add": 2}           # ceil(100 * 4 / 256)
    assert (c["mte2_bytes"], c["mte2_transfers"]) == (800, 2)  # two DataCopyPad of 400 GM bytes
    assert (c["mte3_bytes"], c["mte3_transfers"]) == (400, 1)
    assert c["ub_peak_bytes"] == 3 * 416              # three buffers of 400 B rounded up to 32
    assert c["scalar_ops"] == 0


def test_scalar_ops_and_sync_idiom(api):
    n = 40
    x = torch.randn(n)
    out = torch.zeros(n)
    c = api.launch("scalar_handoff", 1, x, out, n)
    want = x * x.sum()
    want[:4] += 1.0
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-4)
    assert c["scalar_ops"] == 1 + 4 * 2               # GetValue of the sum, then 4 x (GetValue + SetValue)
    assert c["vector_repeats"] == {"WholeReduceSum": 1, "Muls": 1}


def test_counters_reset_per_launch_and_blocks_run(api):
    n, blocks = 24, 4
    x = torch.arange(blocks * n, dtype=torch.float32)
    out = torch.zeros(n)
    c = api.launch("atomic_accumulate", blocks, x, out, n)
    assert torch.equal(out, x.view(blocks, n).sum(0))  # SetAtomicAdd accumulates across blocks
    assert c["blocks_run"] == blocks
    assert c["mte2_bytes"] == c["mte3_bytes"] == blocks * n * 4
    again = api.launch("atomic_accumulate", 1, x, out, n)
    assert again["mte2_bytes"] == n * 4


def test_isolated_launch_gives_same_results_and_counters(api):
    n = 100
    a, b = torch.randn(n), torch.randn(n)
    out1, out2 = torch.zeros(n), torch.zeros(n)
    c1 = api.launch("vec_binary", 1, a, b, out1, n, 2)
    c2 = api.launch("vec_binary", 1, a, b, out2, n, 2, isolate=True)
    assert torch.equal(out1, out2) and torch.equal(out1, a * b)
    assert c1 == c2


def test_disk_cache_reuses_the_library(kernels_dir, monkeypatch, tmp_path):
    # A private cache: the shared one is bounded (LRU), so another process's compiles may evict this
    # file between the compile and the check (a 2-worker run did: the library was gone). A 27-line
    # kernel without the PCH keeps the cold compile short (api_kernels.cpp plus a PCH: ~12 s).
    monkeypatch.setenv("TREX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TREX_EMU_NO_PCH", "1")
    monkeypatch.setattr(runner, "_LOADED", {})
    first = compile_kernel(kernels_dir / "queue_requeue.cpp", extra_flags=("-O0",))
    assert first.path.parent == cache_dir() and first.path.exists()
    monkeypatch.setattr(runner, "_LOADED", {})

    def no_compiler(*args, **kwargs):
        raise AssertionError(f"g++ must not run for a cached kernel: {args}")

    monkeypatch.setattr(runner.subprocess, "run", no_compiler)
    again = compile_kernel(kernels_dir / "queue_requeue.cpp", extra_flags=("-O0",))
    assert again.path == first.path


def test_cache_dir_follows_trex_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TREX_CACHE_DIR", str(tmp_path))
    assert cache_dir() == tmp_path / "emulator" and (tmp_path / "emulator").is_dir()


def test_tiling_struct_as_gm_argument(api):
    import ctypes
    import struct

    class ScaleTiling(ctypes.Structure):
        _fields_ = [("n", ctypes.c_uint32), ("scale", ctypes.c_float)]

    x = torch.randn(50)
    out = torch.zeros(50)
    api.launch("tiling_struct", 1, x, out, ScaleTiling(50, 2.5))
    assert torch.equal(out, x * 2.5)
    out.zero_()
    api.launch("tiling_struct", 1, x, out, struct.pack("<If", 30, -1.0))  # bytes work too
    assert torch.equal(out[:30], -x[:30]) and torch.all(out[30:] == 0)


def test_precompiled_header_and_repeated_includes(api):
    source = '''#include "kernel_operator.h"
#include "kernel_operator.h"  // e.g. again from a helper header: must stay a no-op
using namespace AscendC;
extern "C" __global__ __aicore__ void twice(GM_ADDR x) {
  GlobalTensor<float> g;
  g.SetGlobalBuffer((__gm__ float*)x);
  g.SetValue(0, g.GetValue(0) + 1.0f);
}
'''
    lib = compile_kernel(source)
    x = torch.zeros(1)
    lib.launch("twice", 1, x)
    assert x.item() == 1.0
    assert list(cache_dir().glob("pch_*/kernel_operator.h.gch")), "the runner builds a precompiled header"
