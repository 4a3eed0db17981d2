// trex AscendC emulator: the LocalTensor operator overloads (asc-devkit include/basic_api/kernel_tensor.h,
// impl/basic_api/kernel_operator_symbol_override_impl.h). `dst = a * b` issues the vector instruction over the
// whole destination: Add/Sub/Mul/Div/Or/And(dst, a, b, dst.GetSize()) (And/Or on 32-bit integers as twice as
// many 16-bit elements, as the impl does), and `dst = a < b` (> != == <= >=) Compare(dst, a, b, mode,
// a.GetSize()) (the count is the source's). The expression object is what `a * b` returns; on its own it does
// nothing.
#pragma once
#include "trex_emu/vec.h"
#include "trex_emu/vec_misc.h"

namespace trex_emu {
enum class SymbolOp { kAdd, kSub, kMul, kDiv, kOr, kAnd };

template <class T, SymbolOp OP>
struct SymbolOverrideBinary {
  using TrexTensorExpr = void;
  AscendC::LocalTensor<T> src0, src1;
  void Process(const AscendC::LocalTensor<T>& dst) const {
    const uint32_t n = dst.GetSize();
    switch (OP) {
      case SymbolOp::kAdd: AscendC::Add(dst, src0, src1, n); break;
      case SymbolOp::kSub: AscendC::Sub(dst, src0, src1, n); break;
      case SymbolOp::kMul: AscendC::Mul(dst, src0, src1, n); break;
      case SymbolOp::kDiv:
        if constexpr (kFloatTypes<T>) AscendC::Div(dst, src0, src1, n);
        break;
      case SymbolOp::kOr:
      case SymbolOp::kAnd:
        if constexpr (sizeof(T) == 4) {
          const auto d = dst.template ReinterpretCast<int16_t>();
          const auto a = src0.template ReinterpretCast<int16_t>(), b = src1.template ReinterpretCast<int16_t>();
          if (OP == SymbolOp::kOr) AscendC::Or(d, a, b, n * 2);
          else AscendC::And(d, a, b, n * 2);
        } else if constexpr (kLogicTypes<T>) {
          if (OP == SymbolOp::kOr) AscendC::Or(dst, src0, src1, n);
          else AscendC::And(dst, src0, src1, n);
        }
        break;
    }
  }
};

template <class T>
struct SymbolOverrideCompare {
  using TrexTensorExpr = void;
  AscendC::LocalTensor<T> src0, src1;
  AscendC::CMPMODE mode;
  template <class U>
  void Process(const AscendC::LocalTensor<U>& dst) const {
    AscendC::Compare(dst, src0, src1, mode, src0.GetSize());
  }
};
}  // namespace trex_emu

namespace AscendC {
#define TREX_EMU_SYMBOL_BINARY(OPERATOR, OP, CHECK, WHAT)                                                         \
  template <class T>                                                                                              \
  inline trex_emu::SymbolOverrideBinary<T, trex_emu::SymbolOp::OP> operator OPERATOR(const LocalTensor<T>& a,       \
                                                                                     const LocalTensor<T>& b) {     \
    static_assert(CHECK, WHAT);                                                                                   \
    return {a, b};                                                                                                \
  }
TREX_EMU_SYMBOL_BINARY(+, kAdd, trex_emu::kArithTypes<T>, "LocalTensor operator+: Add's types (half, float, int16_t, int32_t)")
TREX_EMU_SYMBOL_BINARY(-, kSub, trex_emu::kArithTypes<T>, "LocalTensor operator-: Sub's types (half, float, int16_t, int32_t)")
TREX_EMU_SYMBOL_BINARY(*, kMul, trex_emu::kArithTypes<T>, "LocalTensor operator*: Mul's types (half, float, int16_t, int32_t)")
TREX_EMU_SYMBOL_BINARY(/, kDiv, trex_emu::kFloatTypes<T>, "LocalTensor operator/: Div's types (half, float)")
TREX_EMU_SYMBOL_BINARY(|, kOr, trex_emu::kLogicTypes<T> || sizeof(T) == 4, "LocalTensor operator|: 16- and 32-bit integers")
TREX_EMU_SYMBOL_BINARY(&, kAnd, trex_emu::kLogicTypes<T> || sizeof(T) == 4, "LocalTensor operator&: 16- and 32-bit integers")
#undef TREX_EMU_SYMBOL_BINARY
#define TREX_EMU_SYMBOL_COMPARE(OPERATOR, MODE)                                                                    \
  template <class T>                                                                                              \
  inline trex_emu::SymbolOverrideCompare<T> operator OPERATOR(const LocalTensor<T>& a, const LocalTensor<T>& b) {  \
    return {a, b, CMPMODE::MODE};                                                                                 \
  }
TREX_EMU_SYMBOL_COMPARE(<, LT)
TREX_EMU_SYMBOL_COMPARE(>, GT)
TREX_EMU_SYMBOL_COMPARE(==, EQ)
TREX_EMU_SYMBOL_COMPARE(!=, NE)
TREX_EMU_SYMBOL_COMPARE(<=, LE)
TREX_EMU_SYMBOL_COMPARE(>=, GE)
#undef TREX_EMU_SYMBOL_COMPARE
}  // namespace AscendC
