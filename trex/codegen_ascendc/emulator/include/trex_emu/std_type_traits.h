// std_type_traits.h: AscendC::Std type traits (asc-devkit include/utils/std/type_traits.h, docs/zh/api/SIMD-API/
// 高阶API/工具类/type_traits) as asc-devkit 82b89a1 defines them, usable in kernel and host code alike.
//
// Most follow the C++ standard; where asc-devkit's differ, these do as asc-devkit's do:
//   is_integral: bool, char, signed/unsigned char, short, int, long, long long (and unsigned), cv-qualified; also
//     true for Std::integral_constant<T, v>; false for wchar_t, char8/16/32_t and __int128.
//   is_floating_point: float, double, long double and half (not bfloat16_t), cv-qualified.
//   remove_pointer: strips one pointer with its own cv (T* const volatile -> T).
//   Int<n> = integral_constant<size_t, n>, with + - * / % of two Int<> giving an Int<>.
//   is_constant<n, T>: T (cv/ref stripped) is an integral_constant whose value == n.
//   is_one_of<T, Ts...> / is_one_of_value<T, v, vs...>, remove_cvref, is_same_uncvref, IsSame / IsNotSame.
// Not here: is_tuple (it needs Std::tuple / tuple_size, which the emulator does not model yet).
#pragma once
#include <cstddef>
#include <type_traits>

#include "trex_emu/float16.h"

namespace AscendC {
namespace Std {
// ------------------------------------------------------------------ integral_constant
template <typename Tp, Tp v>
struct integral_constant {
  static constexpr const Tp value = v;
  using value_type = Tp;
  using type = integral_constant;
  constexpr operator value_type() const noexcept { return value; }
  constexpr value_type operator()() const noexcept { return value; }
};
template <typename Tp, Tp v>
constexpr const Tp integral_constant<Tp, v>::value;
template <bool b>
using bool_constant = integral_constant<bool, b>;
using true_type = bool_constant<true>;
using false_type = bool_constant<false>;
template <size_t v>
using Int = integral_constant<size_t, v>;
#define TREX_EMU_STD_INT_OP(OP)                                              \
  template <auto t, auto u>                                                  \
  inline constexpr Int<(t OP u)> operator OP(Int<t>, Int<u>) { return {}; }
TREX_EMU_STD_INT_OP(+)
TREX_EMU_STD_INT_OP(-)
TREX_EMU_STD_INT_OP(*)
TREX_EMU_STD_INT_OP(/)
TREX_EMU_STD_INT_OP(%)
#undef TREX_EMU_STD_INT_OP

// ------------------------------------------------------------------ enable_if / conditional / is_same
template <bool B, typename Tp = void>
struct enable_if {};
template <typename Tp>
struct enable_if<true, Tp> { using type = Tp; };
template <bool B, typename Tp = void>
using enable_if_t = typename enable_if<B, Tp>::type;

template <bool B, typename If, typename Then>
struct conditional { using type = If; };
template <typename If, typename Then>
struct conditional<false, If, Then> { using type = Then; };
template <bool B, typename If, typename Then>
using conditional_t = typename conditional<B, If, Then>::type;

template <typename Tp, typename Up>
struct is_same : false_type {};
template <typename Tp>
struct is_same<Tp, Tp> : true_type {};
template <typename Tp, typename Up>
constexpr bool is_same_v = is_same<Tp, Up>::value;
template <typename Tp, typename Up>
using IsSame = bool_constant<is_same_v<Tp, Up>>;
template <typename Tp, typename Up>
using IsNotSame = bool_constant<!is_same_v<Tp, Up>>;

// ------------------------------------------------------------------ cv / reference / pointer / extent removal
template <typename Tp> struct remove_const { using type = Tp; };
template <typename Tp> struct remove_const<const Tp> { using type = Tp; };
template <typename Tp> using remove_const_t = typename remove_const<Tp>::type;
template <typename Tp> struct remove_volatile { using type = Tp; };
template <typename Tp> struct remove_volatile<volatile Tp> { using type = Tp; };
template <typename Tp> using remove_volatile_t = typename remove_volatile<Tp>::type;
template <typename Tp> struct remove_cv { using type = remove_const_t<remove_volatile_t<Tp>>; };
template <typename Tp> using remove_cv_t = typename remove_cv<Tp>::type;
template <typename Tp> struct remove_reference { using type = Tp; };
template <typename Tp> struct remove_reference<Tp&> { using type = Tp; };
template <typename Tp> struct remove_reference<Tp&&> { using type = Tp; };
template <typename Tp> using remove_reference_t = typename remove_reference<Tp>::type;
template <typename Tp> using remove_cvref_t = remove_cv_t<remove_reference_t<Tp>>;
template <typename Tp> struct remove_cvref { using type = remove_cvref_t<Tp>; };
template <typename Tp, typename Up>
struct is_same_uncvref : IsSame<remove_cvref_t<Tp>, remove_cvref_t<Up>> {};
template <typename Tp> struct remove_pointer { using type = Tp; };
template <typename Tp> struct remove_pointer<Tp*> { using type = Tp; };
template <typename Tp> struct remove_pointer<Tp* const> { using type = Tp; };
template <typename Tp> struct remove_pointer<Tp* volatile> { using type = Tp; };
template <typename Tp> struct remove_pointer<Tp* const volatile> { using type = Tp; };
template <typename Tp> using remove_pointer_t = typename remove_pointer<Tp>::type;
template <typename Tp> struct remove_extent { using type = Tp; };
template <typename Tp> struct remove_extent<Tp[]> { using type = Tp; };
template <typename Tp, size_t N> struct remove_extent<Tp[N]> { using type = Tp; };
template <typename Tp> using remove_extent_t = typename remove_extent<Tp>::type;

// ------------------------------------------------------------------ categories
template <typename Tp> struct is_void : is_same<remove_cv_t<Tp>, void> {};
template <typename Tp> constexpr bool is_void_v = is_void<Tp>::value;

namespace detail {
template <typename Tp, typename... Us>
constexpr bool UnqualifiedOneOf() { return (false || ... || is_same_v<remove_cv_t<Tp>, Us>); }
}  // namespace detail
template <typename Tp>
struct is_integral
    : bool_constant<detail::UnqualifiedOneOf<Tp, bool, char, signed char, unsigned char, short, unsigned short, int,
                                             unsigned int, long, unsigned long, long long, unsigned long long>()> {};
template <typename Tp, Tp v>
struct is_integral<integral_constant<Tp, v>> : true_type {};
template <typename Tp> constexpr bool is_integral_v = is_integral<Tp>::value;
template <typename Tp>
struct is_floating_point : bool_constant<detail::UnqualifiedOneOf<Tp, float, double, long double, half>()> {};
template <typename Tp> constexpr bool is_floating_point_v = is_floating_point<Tp>::value;

template <typename Tp> struct is_array : false_type {};
template <typename Tp> struct is_array<Tp[]> : true_type {};
template <typename Tp, size_t N> struct is_array<Tp[N]> : true_type {};
template <typename Tp> constexpr bool is_array_v = is_array<Tp>::value;

namespace detail {
template <typename Tp> struct PointerOf : false_type {};
template <typename Tp> struct PointerOf<Tp*> : true_type {};
}  // namespace detail
template <typename Tp> struct is_pointer : detail::PointerOf<remove_cv_t<Tp>> {};
template <typename Tp> constexpr bool is_pointer_v = is_pointer<Tp>::value;

template <typename Tp> struct is_lvalue_reference : false_type {};
template <typename Tp> struct is_lvalue_reference<Tp&> : true_type {};
template <typename Tp> struct is_rvalue_reference : false_type {};
template <typename Tp> struct is_rvalue_reference<Tp&&> : true_type {};
template <typename Tp> struct is_reference : bool_constant<is_lvalue_reference<Tp>::value || is_rvalue_reference<Tp>::value> {};
template <typename Tp> constexpr bool is_lvalue_reference_v = is_lvalue_reference<Tp>::value;
template <typename Tp> constexpr bool is_rvalue_reference_v = is_rvalue_reference<Tp>::value;
template <typename Tp> constexpr bool is_reference_v = is_reference<Tp>::value;

template <typename Tp> struct is_const : false_type {};
template <typename Tp> struct is_const<const Tp> : true_type {};
template <typename Tp> constexpr bool is_const_v = is_const<Tp>::value;

// Only function types (and references) stay unqualified under `const`.
template <typename Tp> struct is_function : bool_constant<!(is_reference_v<Tp> || is_const_v<const Tp>)> {};
template <typename Tp> constexpr bool is_function_v = is_function<Tp>::value;

namespace detail {
template <typename Tp, typename = void> struct Referenceable : false_type {};
template <typename Tp> struct Referenceable<Tp, std::void_t<Tp&>> : true_type {};
}  // namespace detail
template <typename Tp> struct is_referenceable : detail::Referenceable<Tp> {};

template <typename Tp> struct is_union : bool_constant<std::is_union<Tp>::value> {};
template <typename Tp> constexpr bool is_union_v = is_union<Tp>::value;
template <typename Tp> struct is_class : bool_constant<std::is_class<Tp>::value> {};
template <typename Tp> constexpr bool is_class_v = is_class<Tp>::value;
template <typename Base, typename Derived>
struct is_base_of : bool_constant<is_class_v<Base> && is_class_v<Derived> && std::is_base_of<Base, Derived>::value> {};
template <typename Base, typename Derived> constexpr bool is_base_of_v = is_base_of<Base, Derived>::value;
template <typename From, typename To>
struct is_convertible : bool_constant<std::is_convertible<From, To>::value> {};
template <typename From, typename To> constexpr bool is_convertible_v = is_convertible<From, To>::value;

template <auto n, typename Tp> struct is_constant : false_type {};
template <auto n, typename Tp> struct is_constant<n, const Tp> : is_constant<n, Tp> {};
template <auto n, typename Tp> struct is_constant<n, Tp&> : is_constant<n, Tp> {};
template <auto n, typename Tp> struct is_constant<n, const Tp&> : is_constant<n, Tp> {};
template <auto n, typename Tp> struct is_constant<n, Tp&&> : is_constant<n, Tp> {};
template <auto n, typename Tp, Tp v> struct is_constant<n, integral_constant<Tp, v>> : bool_constant<v == n> {};

template <typename Tp, typename... Us>
struct is_one_of : bool_constant<(false || ... || is_same_v<Tp, Us>)> {};
template <typename Tp, typename... Us> inline constexpr bool is_one_of_v = is_one_of<Tp, Us...>::value;
template <typename Tp, Tp... Vs> struct is_one_of_value : false_type {};
template <typename Tp, Tp V, Tp... Vs>
struct is_one_of_value<Tp, V, Vs...> : bool_constant<(false || ... || (V == Vs))> {};
template <typename Tp, Tp... Vs> inline constexpr bool is_one_of_value_v = is_one_of_value<Tp, Vs...>::value;

// ------------------------------------------------------------------ adding cv / pointer / reference; decay
template <typename Tp> struct add_const { using type = const Tp; };
template <typename Tp> using add_const_t = typename add_const<Tp>::type;
template <typename Tp> struct add_volatile { using type = volatile Tp; };
template <typename Tp> using add_volatile_t = typename add_volatile<Tp>::type;
template <typename Tp> struct add_cv { using type = const volatile Tp; };
template <typename Tp> using add_cv_t = typename add_cv<Tp>::type;

namespace detail {
template <typename Tp, bool = is_referenceable<Tp>::value || is_void<Tp>::value>
struct AddPointer { using type = remove_reference_t<Tp>*; };
template <typename Tp> struct AddPointer<Tp, false> { using type = Tp; };
template <typename Tp, bool = is_referenceable<Tp>::value> struct AddLref { using type = Tp; };
template <typename Tp> struct AddLref<Tp, true> { using type = Tp&; };
template <typename Tp, bool = is_referenceable<Tp>::value> struct AddRref { using type = Tp; };
template <typename Tp> struct AddRref<Tp, true> { using type = Tp&&; };  // T& && collapses to T&
}  // namespace detail
template <typename Tp> using add_pointer_t = typename detail::AddPointer<Tp>::type;
template <typename Tp> struct add_pointer { using type = add_pointer_t<Tp>; };
template <typename Tp> using add_lvalue_reference_t = typename detail::AddLref<Tp>::type;
template <typename Tp> struct add_lvalue_reference { using type = add_lvalue_reference_t<Tp>; };
template <typename Tp> using add_rvalue_reference_t = typename detail::AddRref<Tp>::type;
template <typename Tp> struct add_rvalue_reference { using type = add_rvalue_reference_t<Tp>; };

template <typename Tp>
struct decay {
 private:
  using Up = remove_reference_t<Tp>;
 public:
  using type = conditional_t<is_array<Up>::value, remove_extent_t<Up>*,
                             conditional_t<is_function<Up>::value, add_pointer_t<Up>, remove_cv_t<Up>>>;
};
template <typename Tp> using decay_t = typename decay<Tp>::type;
}  // namespace Std
}  // namespace AscendC
