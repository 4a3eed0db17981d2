"""AscendC::Std type traits (std_type_traits.h) as asc-devkit 82b89a1 defines them (impl/utils/std/type_traits/):
the standard ones, and where asc-devkit's differ from <type_traits> (is_integral without wchar_t/char16_t but with
integral_constant, is_floating_point with half, remove_pointer of cv pointers, Int<> arithmetic, is_constant,
is_one_of, is_same_uncvref); compile-time checks in a program built against kernel_operator.h, its printed values
checked, and asc-devkit's 11_utils/type_traits example run when the corpus is here."""
import os
import subprocess
from pathlib import Path

import pytest

from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

PROGRAM = r'''
#include "kernel_operator.h"
namespace S = AscendC::Std;
struct Base {};
struct Derived : Base {};
union U1 { int a; float b; };
using Fn = int(double);
struct Conv { operator int() const { return 1; } };

// asc-devkit's own choices (differ from <type_traits>)
static_assert(S::is_integral_v<bool> && S::is_integral_v<const volatile unsigned long long>);
static_assert(!S::is_integral_v<wchar_t> && !S::is_integral_v<char16_t> && !S::is_integral_v<char32_t>);
static_assert(S::is_integral<S::integral_constant<int, 3>>::value && S::is_integral_v<S::Int<4>>);
static_assert(S::is_floating_point_v<half> && S::is_floating_point_v<const half> && !S::is_floating_point_v<bfloat16_t>);
static_assert(S::is_floating_point_v<long double> && !S::is_floating_point_v<float*>);
static_assert(S::is_same_v<S::remove_pointer_t<int* const volatile>, int>);
static_assert(S::is_same_v<S::remove_pointer_t<int**>, int*>);
static_assert(S::is_same_v<decltype(S::Int<6>{} * S::Int<7>{}), S::Int<42>>);
static_assert(S::is_same_v<decltype(S::Int<7>{} % S::Int<4>{}), S::Int<3>>);
static_assert(S::is_same_v<decltype(S::Int<7>{} - S::Int<4>{} + S::Int<1>{}), S::Int<4>>);
static_assert(S::is_constant<5, S::Int<5>>::value && S::is_constant<5, const S::Int<5>&>::value);
static_assert(!S::is_constant<5, S::Int<6>>::value && !S::is_constant<5, int>::value);
static_assert(S::is_one_of_v<float, int, float> && !S::is_one_of_v<double, int, float> && !S::is_one_of_v<int>);
static_assert(S::is_one_of_value_v<int, 3, 1, 2, 3> && !S::is_one_of_value_v<int, 4, 1, 2, 3>);
static_assert(S::is_same_uncvref<const int&, int>::value && !S::is_same_uncvref<int*, int>::value);
static_assert(S::IsSame<int, int>::value && S::IsNotSame<int, long>::value);
// the standard ones
static_assert(S::integral_constant<int, 9>::value == 9 && S::integral_constant<int, 9>{}() == 9);
static_assert(S::true_type::value && !S::false_type::value && S::bool_constant<true>::value);
static_assert(S::is_same_v<S::enable_if_t<true, int>, int> && S::is_same_v<S::enable_if_t<true>, void>);
static_assert(S::is_same_v<S::conditional_t<true, int, float>, int> && S::is_same_v<S::conditional_t<false, int, float>, float>);
static_assert(S::is_void_v<const volatile void> && !S::is_void_v<void*>);
static_assert(S::is_array_v<int[]> && S::is_array_v<const int[3][4]> && !S::is_array_v<int*>);
static_assert(S::is_pointer_v<int* const> && S::is_pointer_v<void (*)(int)> && !S::is_pointer_v<int[2]>);
static_assert(S::is_reference_v<int&&> && S::is_lvalue_reference_v<int&> && !S::is_rvalue_reference_v<int&>);
static_assert(S::is_const_v<const int[5]> && !S::is_const_v<const int*> && !S::is_const_v<const int&>);
static_assert(S::is_function_v<Fn> && !S::is_function_v<Fn*> && !S::is_function_v<int>);
static_assert(S::is_referenceable<int>::value && S::is_referenceable<Fn>::value && !S::is_referenceable<void>::value);
static_assert(S::is_class_v<Base> && !S::is_class_v<U1> && S::is_union_v<U1> && !S::is_class_v<int>);
static_assert(S::is_base_of_v<Base, Derived> && S::is_base_of_v<Base, Base> && !S::is_base_of_v<Derived, Base>);
static_assert(!S::is_base_of_v<int, int>);
static_assert(S::is_convertible_v<Conv, int> && !S::is_convertible_v<int, Conv> && S::is_convertible_v<void, void>);
static_assert(S::is_convertible_v<Derived*, Base*> && !S::is_convertible_v<Base*, Derived*>);
static_assert(S::is_same_v<S::remove_cv_t<const volatile int>, int> && S::is_same_v<S::remove_cvref_t<const int&>, int>);
static_assert(S::is_same_v<S::remove_const_t<const int*>, const int*> && S::is_same_v<S::remove_volatile_t<volatile int>, int>);
static_assert(S::is_same_v<S::remove_reference_t<int&&>, int> && S::is_same_v<S::remove_extent_t<int[3][4]>, int[4]>);
static_assert(S::is_same_v<S::add_const_t<int&>, int&> && S::is_same_v<S::add_cv_t<int>, const volatile int>);
static_assert(S::is_same_v<S::add_volatile_t<const int>, const volatile int>);
static_assert(S::is_same_v<S::add_pointer_t<int&>, int*> && S::is_same_v<S::add_pointer_t<Fn>, Fn*>);
static_assert(S::is_same_v<S::add_pointer_t<const void>, const void*>);
static_assert(S::is_same_v<S::add_lvalue_reference_t<int&&>, int&> && S::is_same_v<S::add_lvalue_reference_t<void>, void>);
static_assert(S::is_same_v<S::add_rvalue_reference_t<int&>, int&> && S::is_same_v<S::add_rvalue_reference_t<int>, int&&>);
static_assert(S::is_same_v<S::decay_t<const int&>, int> && S::is_same_v<S::decay_t<int[3]>, int*>);
static_assert(S::is_same_v<S::decay_t<Fn>, Fn*> && S::is_same_v<S::decay_t<const int[3]>, const int*>);

template <typename T, S::enable_if_t<S::is_floating_point_v<T>, int> = 0>
__aicore__ inline int Kind(T) { return 1; }
template <typename T, S::enable_if_t<S::is_integral_v<T>, int> = 0>
__aicore__ inline int Kind(T) { return 2; }

int main() {
  // the example's style: AscendC::printf of ::value with %d, and ascendc_assert on is_same_v
  AscendC::printf("%d %d %d %d\n", S::is_integral<int>::value, S::is_floating_point<half>::value,
                  S::is_pointer<int&>::value, S::is_const<int* const>::value);
  ascendc_assert((S::is_same_v<S::remove_pointer_t<double* volatile>, double>));
  std::printf("%d %d %d\n", Kind(1.5f), Kind(half(2.0f)), Kind(7u));
  return 0;
}
'''

BAD = r'''
#include "kernel_operator.h"
int main() { ascendc_assert((AscendC::Std::is_same_v<AscendC::Std::add_pointer_t<int>, int>)); return 0; }
'''


def build_and_run(tmp_path, src, name):
    cpp = tmp_path / f"{name}.cpp"
    cpp.write_text(src)
    exe = tmp_path / name
    subprocess.run([find_compiler(), "-std=c++17", f"-I{INCLUDE_DIR}", str(cpp), "-o", str(exe)], check=True)
    return subprocess.run([str(exe)], capture_output=True, text=True)


@pytest.mark.skipif(not compiler_available(), reason="no C++ compiler")
def test_traits_compile_time_and_printed(tmp_path):
    p = build_and_run(tmp_path, PROGRAM, "traits")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n")[:2] == ["1 1 0 1", "1 1 2"]


@pytest.mark.skipif(not compiler_available(), reason="no C++ compiler")
def test_failed_trait_assert_names_the_condition(tmp_path):
    p = build_and_run(tmp_path, BAD, "bad")
    assert p.returncode != 0
    assert "is_same_v<AscendC::Std::add_pointer_t<int>, int>" in p.stderr + p.stdout


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
def test_asc_devkit_type_traits_example_passes():
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api" / "11_utils" / "type_traits")
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
