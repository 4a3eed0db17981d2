"""GatherMask, Gather and the mask/repeat form of ReduceMin/ReduceMax: documented semantics and error
cases, in the kernel-launch style (gather_api.cpp) and a framework-launch, templated ops-repo style kernel
with tiling keys (gather_keyed.cpp); poisoned outputs, multi-block launches (trex's own kernels).
References come from the asc-devkit pages' definitions, computed with torch indexing."""
import struct
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorCompileError, EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.op_project import run_kernel_with_tiling
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"
NAN = float("nan")

# The built-in patterns of the GatherMask page: which element indices of a repeat are kept.
PATTERN_KEEPS = {1: lambda i: i % 2 == 0, 2: lambda i: i % 2 == 1, 3: lambda i: i % 4 == 0,
                 4: lambda i: i % 4 == 1, 5: lambda i: i % 4 == 2, 6: lambda i: i % 4 == 3, 7: lambda i: True}


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(KERNELS / "gather_api.cpp", extra_flags=("-O0",))


@pytest.mark.parametrize("pattern", sorted(PATTERN_KEEPS))
def test_gather_mask_builtin_patterns_multi_block(lib, pattern):
    blocks, n = 3, 128  # two 256-byte repeats of float per block
    x = torch.randn(blocks * n)
    y = torch.full_like(x, NAN)
    cnt = torch.full((blocks * 8,), 0x5A, dtype=torch.int32)
    lib.launch("gather_mask_builtin", blocks, x, y, cnt, n, pattern)
    idx = torch.tensor([i for i in range(64) if PATTERN_KEEPS[pattern](i)])
    for b in range(blocks):
        xs = x[b * n:(b + 1) * n]
        kept = torch.cat([xs[r * 64 + idx] for r in range(2)])  # the same pattern in every repeat
        expected = torch.cat([kept, torch.zeros(n - kept.numel())])
        assert torch.equal(y[b * n:(b + 1) * n], expected)
        assert cnt[b * 8].item() == kept.numel()


def test_gather_mask_user_pattern_counter_mode(lib):
    # Counter mode (A2 form): 70 elements per repeat, 2 repeats, second repeat 4 blocks (32 floats) in;
    # the 64-bit pattern (two uint32 words) is consumed continuously, then 6 more bits of word 2.
    blocks, n = 2, 256
    x = torch.randn(blocks * n)
    words = torch.tensor([0x0000F00F, 0x80000001, 0b101101, 0, 0, 0, 0, 0], dtype=torch.int64).to(torch.uint32)
    y = torch.full_like(x, NAN)
    cnt = torch.full((blocks * 8,), 0x5A, dtype=torch.int32)
    lib.launch("gather_mask_user", blocks, x, words, y, cnt, n, 70, 2, 4)
    bits = [(int(words[i // 32]) >> (i % 32)) & 1 for i in range(70)]
    for b in range(blocks):
        xs = x[b * n:(b + 1) * n]
        kept = [xs[r * 32 + i] for r in range(2) for i in range(70) if bits[i]]
        expected = torch.cat([torch.stack(kept), torch.zeros(n - len(kept))])
        assert torch.equal(y[b * n:(b + 1) * n], expected)
        assert cnt[b * 8].item() == len(kept)


def test_gather_mask_pattern_out_of_range_raises(lib):
    with pytest.raises(EmulatorError, match=r"GatherMask: built-in src1Pattern=9 is outside \[1, 7\]"):
        lib.launch("gather_mask_builtin", 1, torch.zeros(64), torch.zeros(64), torch.zeros(8, dtype=torch.int32), 64, 9)


@pytest.mark.parametrize("in_place", [0, 1])
def test_gather_by_byte_offsets_multi_block(lib, in_place):
    blocks, m, n = 4, 64, 96
    table = torch.randn(blocks * m)
    idx = torch.randint(0, m, (blocks * n,), generator=torch.Generator().manual_seed(3))
    y = torch.full((blocks * n,), NAN)
    lib.launch("gather_table", blocks, table, (idx * 4).to(torch.int32), y, m, n, in_place)
    expected = torch.cat([table[b * m:(b + 1) * m][idx[b * n:(b + 1) * n]] for b in range(blocks)])
    assert torch.equal(y, expected)


def test_gather_offset_errors(lib):
    m, n = 64, 64
    with pytest.raises(EmulatorError, match=r"Gather: srcBaseAddr \+ srcOffset\[0\] = 6 B is not a multiple of "
                                            r"sizeof\(float\) = 4"):
        lib.launch("gather_table", 1, torch.zeros(m), torch.full((n,), 6, dtype=torch.int32), torch.zeros(n), m, n, 0)
    with pytest.raises(EmulatorError, match=r"Gather: src \(at srcOffset\) accesses UB bytes .* outside its buffer"):
        lib.launch("gather_table", 1, torch.zeros(m), torch.full((n,), 4 * m, dtype=torch.int32), torch.zeros(n), m, n, 0)


@pytest.mark.parametrize("is_max", [0, 1])
@pytest.mark.parametrize("stride", [8, 16])
def test_reduce_min_max_mask_form_multi_block(lib, is_max, stride):
    blocks, repeats = 3, 3
    n = repeats * stride * 8
    x = torch.randn(blocks * n)
    lo, hi = 0xF0F0F0F0F0F0F0F0, 0  # float: 64 elements per repeat, lanes 4..7, 12..15, ...
    out = torch.full((blocks * 8,), NAN)
    lib.launch("reduce_masked", blocks, x, out, n, repeats, stride, lo, hi, is_max)
    lanes = [i for i in range(64) if (lo >> i) & 1]
    for b in range(blocks):
        xs = x[b * n:(b + 1) * n]
        vals = torch.stack([xs[r * stride * 8 + i] for r in range(repeats) for i in lanes])
        pos = [r * 64 + i for r in range(repeats) for i in lanes]  # the page's index: repeat * 64 + lane
        k = int(vals.argmax() if is_max else vals.argmin())
        assert out[b * 8].item() == vals[k].item()
        assert out[b * 8 + 1:b * 8 + 2].view(torch.int32).item() == pos[k]
        assert torch.equal(out[b * 8 + 2:b * 8 + 8], torch.zeros(6))


@pytest.fixture(scope="module")
def keyed():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")

    def run(dtype, key, x, y, per, blocks):
        return run_kernel_with_tiling(KERNELS / "gather_keyed.cpp", blocks, x, y, None, struct.pack("<I", per),
                                      tiling_key=key, dtypes={"x": dtype},
                                      tiling_header=KERNELS / "gather_keyed_tiling.h", opt="-O0")
    return run


@pytest.mark.parametrize("dtype, tdt", [("float32", torch.float32), ("float16", torch.float16)])
@pytest.mark.parametrize("key", [1, 2, 3])
def test_framework_launch_templated_kernel_per_tiling_key(keyed, dtype, tdt, key):
    blocks, per = 4, 256
    x = torch.randn(blocks * per).to(tdt)
    y = torch.full_like(x, NAN)
    counters = keyed(dtype, key, x, y, per, blocks)
    assert counters["blocks_run"] == blocks
    for b in range(blocks):
        xs, ys = x[b * per:(b + 1) * per], y[b * per:(b + 1) * per]
        if key == 1:  # pattern 2: the odd elements of every 256-byte repeat, compacted
            expected = torch.cat([xs[1::2], torch.zeros(per // 2, dtype=tdt)])
            assert torch.equal(ys, expected)
        elif key == 2:  # Gather with byte offsets (per-1-i)*sizeof(T): the slice reversed
            assert torch.equal(ys, xs.flip(0))
        else:  # ReduceMax over the whole slice with calIndex: [value, index bits], zeros after
            k = int(xs.float().argmax())
            assert ys[0].item() == xs[k].item()
            assert ys[1:2].view(torch.int16 if tdt == torch.float16 else torch.int32).item() == k
            assert torch.equal(ys[2:], torch.zeros(per - 2, dtype=tdt))


def test_gather_on_an_unsupported_type_is_a_compile_error():
    if not compiler_available():
        pytest.skip("no C++ compiler")
    src = ('#include "kernel_operator.h"\nusing namespace AscendC;\n'
           'extern "C" __global__ __aicore__ void k(GM_ADDR x) {\n'
           '  LocalTensor<int8_t> a; LocalTensor<uint32_t> o; uint64_t c = 0;\n'
           '  GatherMask(a, a, (uint8_t)1, false, 0, {1, 1, 8, 0}, c);\n}\n')
    with pytest.raises(EmulatorCompileError, match=r"GatherMask: element type not supported on Atlas A2/A3"):
        compile_kernel(src, extra_flags=("-O0",))
