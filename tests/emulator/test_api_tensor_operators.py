"""LocalTensor operator overloads (asc-devkit include/basic_api/kernel_tensor.h, impl/basic_api/
kernel_operator_symbol_override_impl.h): `dst = a OP b` issues Add/Sub/Mul/Div/Or/And over dst.GetSize()
elements (And/Or on 32-bit integers as twice as many 16-bit ones) and `dst = a >= b` etc. Compare over
a.GetSize(). Several blocks, outputs poisoned, the instruction counted once per expression; an element type
the instruction does not take does not compile."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorCompileError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

N = 512  # elements per block (a whole number of repeats, as Compare's count form needs)
OPS = ["add", "sub", "mul", "div", "or", "and", "lt", "gt", "eq", "ne", "le", "ge"]

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

template <class T, class D>
__aicore__ inline void Body(GM_ADDR a, GM_ADDR b, GM_ADDR out, uint32_t op) {
  constexpr uint32_t N = 512;
  GlobalTensor<T> ag, bg;
  ag.SetGlobalBuffer((__gm__ T*)a + GetBlockIdx() * N, N);
  bg.SetGlobalBuffer((__gm__ T*)b + GetBlockIdx() * N, N);
  GlobalTensor<D> og;
  const uint32_t outN = op >= 6 ? N / 8 / sizeof(D) : N;
  og.SetGlobalBuffer((__gm__ D*)out + GetBlockIdx() * outN, outN);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> qa, qb;
  TQue<TPosition::VECOUT, 1> qo;
  pipe.InitBuffer(qa, 1, N * sizeof(T));
  pipe.InitBuffer(qb, 1, N * sizeof(T));
  pipe.InitBuffer(qo, 1, N * sizeof(T));
  LocalTensor<T> x = qa.AllocTensor<T>(), y = qb.AllocTensor<T>();
  DataCopy(x, ag, N);
  DataCopy(y, bg, N);
  qa.EnQue(x); qb.EnQue(y);
  x = qa.DeQue<T>(); y = qb.DeQue<T>();
  LocalTensor<T> z = qo.AllocTensor<T>();
  LocalTensor<uint8_t> mask = z.template ReinterpretCast<uint8_t>();
  switch (op) {
    case 0: z = x + y; break;
    case 1: z = x - y; break;
    case 2: z = x * y; break;
    case 3: if constexpr (sizeof(T) == 4 && !std::is_same<T, int32_t>::value) z = x / y; break;
    case 4: if constexpr (std::is_same<T, int32_t>::value) z = x | y; break;
    case 5: if constexpr (std::is_same<T, int32_t>::value) z = x & y; break;
    case 6: if constexpr (!std::is_same<T, int32_t>::value) mask = x < y; break;
    case 7: if constexpr (!std::is_same<T, int32_t>::value) mask = x > y; break;
    case 8: if constexpr (!std::is_same<T, int32_t>::value) mask = x == y; break;
    case 9: if constexpr (!std::is_same<T, int32_t>::value) mask = x != y; break;
    case 10: if constexpr (!std::is_same<T, int32_t>::value) mask = x <= y; break;
    case 11: if constexpr (!std::is_same<T, int32_t>::value) mask = x >= y; break;
  }
  qo.EnQue(z);
  z = qo.DeQue<T>();
  DataCopy(og, z.template ReinterpretCast<D>(), outN);
  qo.FreeTensor(z);
  qa.FreeTensor(x); qb.FreeTensor(y);
}
extern "C" __global__ __aicore__ void ops_float(GM_ADDR a, GM_ADDR b, GM_ADDR out, uint32_t op) { Body<float, float>(a, b, out, op); }
extern "C" __global__ __aicore__ void ops_int32(GM_ADDR a, GM_ADDR b, GM_ADDR out, uint32_t op) { Body<int32_t, int32_t>(a, b, out, op); }
extern "C" __global__ __aicore__ void cmp_float(GM_ADDR a, GM_ADDR b, GM_ADDR out, uint32_t op) { Body<float, uint8_t>(a, b, out, op); }
"""


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def operands(dtype, blocks):
    g = torch.Generator().manual_seed(blocks)
    if dtype == torch.int32:
        return (torch.randint(-1000, 1000, (blocks * N,), generator=g, dtype=torch.int32),
                torch.randint(-1000, 1000, (blocks * N,), generator=g, dtype=torch.int32))
    a = torch.randn(blocks * N, generator=g)
    b = torch.randn(blocks * N, generator=g)
    b[::3] = a[::3]  # ties, for == and <=
    return a, b


@pytest.mark.parametrize("op, dtype, want", [
    ("add", torch.float32, torch.add), ("sub", torch.float32, torch.sub), ("mul", torch.float32, torch.mul),
    ("div", torch.float32, torch.div), ("add", torch.int32, torch.add), ("mul", torch.int32, torch.mul),
    ("or", torch.int32, torch.bitwise_or), ("and", torch.int32, torch.bitwise_and)])
@pytest.mark.parametrize("blocks", [1, 3])
def test_arithmetic_and_logic_over_the_whole_destination(lib, op, dtype, want, blocks):
    a, b = operands(dtype, blocks)
    out = torch.full_like(a, -7)
    counters = lib.launch("ops_float" if dtype == torch.float32 else "ops_int32", blocks, a, b, out, OPS.index(op))
    assert torch.equal(out, want(a, b))
    name = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "or": "Or", "and": "And"}[op]
    assert counters["vector_calls"][name] == blocks


@pytest.mark.parametrize("op, want", [("lt", torch.lt), ("gt", torch.gt), ("eq", torch.eq), ("ne", torch.ne),
                                      ("le", torch.le), ("ge", torch.ge)])
def test_comparisons_write_a_bit_mask(lib, op, want):
    blocks = 2
    a, b = operands(torch.float32, blocks)
    out = torch.full((blocks * N // 8,), 0xA5, dtype=torch.uint8)
    lib.launch("cmp_float", blocks, a, b, out, OPS.index(op))
    bits = ((out[:, None].int() >> torch.arange(8)) & 1).flatten().bool()  # bit i of byte j: element 8j + i
    assert torch.equal(bits, want(a, b))


def test_division_of_integers_does_not_compile():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    src = ('#include "kernel_operator.h"\nusing namespace AscendC;\n'
           'extern "C" __global__ __aicore__ void k(GM_ADDR x) { LocalTensor<int32_t> a; a = a / a; }\n')
    with pytest.raises(EmulatorCompileError, match=r"LocalTensor operator/: Div's types"):
        compile_kernel(src)
