"""Kernel signature parsing (no compiler needed)."""
import ctypes

import pytest

from trex.codegen_ascendc.emulator import SignatureError, parse_kernel_signatures

SOURCE = r'''
#include "kernel_operator.h"
// extern "C" __global__ __aicore__ void commented_out(GM_ADDR x) {}
/* extern "C" __global__ __aicore__ void also_commented(GM_ADDR x) {} */
__aicore__ inline void helper(GM_ADDR x) {}
extern "C" __global__ __aicore__ void k1(GM_ADDR x, GM_ADDR y,
                                          uint32_t n, float eps) {
}
extern "C" __global__ __aicore__ void k2(__gm__ float* __restrict__ out, const int32_t rows) { }
__global__ __aicore__ void k3() { }
'''


def test_finds_only_global_kernels_in_order():
    sigs = parse_kernel_signatures(SOURCE)
    assert list(sigs) == ["k1", "k2", "k3"]


def test_parameter_kinds_and_types():
    sigs = parse_kernel_signatures(SOURCE)
    k1 = sigs["k1"]
    assert [(p.name, p.is_pointer, p.scalar_type) for p in k1.params] == [
        ("x", True, None), ("y", True, None), ("n", False, "uint32_t"), ("eps", False, "float")]
    assert k1.params[2].ctypes_type is ctypes.c_uint32
    assert k1.params[3].ctypes_type is ctypes.c_float
    k2 = sigs["k2"]
    assert k2.params[0].is_pointer and k2.params[0].ctypes_type is ctypes.c_void_p
    assert k2.params[1].scalar_type == "int32_t"
    assert sigs["k3"].params == ()


def test_unsupported_parameter_type_names_the_parameter():
    with pytest.raises(SignatureError, match=r"parameter t has type 'MyStruct'"):
        parse_kernel_signatures('extern "C" __global__ __aicore__ void k(MyStruct t) {}')
