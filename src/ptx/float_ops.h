// Float operation functors shared by the arithmetic family: flush-to-zero and saturation are
// template parameters so the common (plain .rn) instantiations stay branch-free.
#pragma once

#include <cmath>
#include <limits>

#include "ptx/exec_util.h"
#include "ptx/types.h"

namespace pvgpu::ptx {

// Float ops with flush-to-zero and saturation folded in at compile time.
template <typename T, bool kFtz, bool kSat>
T Post(T r) {
  if constexpr (kFtz) r = FlushDenormal(r);
  if constexpr (kSat) r = Saturate(r);
  return r;
}
template <typename T, bool kFtz>
T Pre(T a) {
  if constexpr (kFtz) return FlushDenormal(a);
  return a;
}
template <typename T, bool F, bool S>
struct FAdd {
  static constexpr NOp kNative = (F || S) ? NOp::kNone : NOp::kFAdd;
  static T Apply(T a, T b) { return Post<T, F, S>(Pre<T, F>(a) + Pre<T, F>(b)); }
};
template <typename T, bool F, bool S>
struct FSub {
  static constexpr NOp kNative = (F || S) ? NOp::kNone : NOp::kFSub;
  static T Apply(T a, T b) { return Post<T, F, S>(Pre<T, F>(a) - Pre<T, F>(b)); }
};
template <typename T, bool F, bool S>
struct FMul {
  static constexpr NOp kNative = (F || S) ? NOp::kNone : NOp::kFMul;
  static T Apply(T a, T b) { return Post<T, F, S>(Pre<T, F>(a) * Pre<T, F>(b)); }
};
template <typename T, bool F, bool S>
struct FDiv {
  static constexpr NOp kNative = (F || S) ? NOp::kNone : NOp::kFDiv;
  static T Apply(T a, T b) { return Post<T, F, S>(Pre<T, F>(a) / Pre<T, F>(b)); }
};
template <typename T, bool F, bool S>
struct FFma {
  static constexpr NOp kNative = (F || S) ? NOp::kNone : NOp::kFFma;
  static T Apply(T a, T b, T c) {
    return Post<T, F, S>(std::fma(Pre<T, F>(a), Pre<T, F>(b), Pre<T, F>(c)));
  }
};
template <typename T, bool F, bool S>
struct FAbs {
  static constexpr NOp kNative = F ? NOp::kNone : NOp::kFAbs;
  static T Apply(T a) { return Post<T, F, false>(std::fabs(Pre<T, F>(a))); }
};
template <typename T, bool F, bool S>
struct FNeg {
  static constexpr NOp kNative = F ? NOp::kNone : NOp::kFNeg;
  static T Apply(T a) { return Post<T, F, false>(-Pre<T, F>(a)); }
};
// min/max: a NaN operand yields the other one (IEEE minNum); .NaN propagates (kSat reused).
// Of two zeros min takes the negative one and max the positive one.
template <typename T, bool F, bool kNaN, bool kMax>
struct FMinMax {
  static constexpr NOp kNative = F       ? NOp::kNone
                                 : kNaN ? (kMax ? NOp::kFMaxNaN : NOp::kFMinNaN)
                                        : (kMax ? NOp::kFMax : NOp::kFMin);
  static T Apply(T a, T b) {
    a = Pre<T, F>(a);
    b = Pre<T, F>(b);
    if (std::isnan(a) || std::isnan(b)) {
      if (kNaN || (std::isnan(a) && std::isnan(b))) return std::numeric_limits<T>::quiet_NaN();
      return std::isnan(a) ? b : a;
    }
    if (a == b) return std::signbit(a) != kMax ? a : b;
    return (kMax ? a > b : a < b) ? a : b;
  }
};
template <typename T, bool F, bool kNaN>
using FMin = FMinMax<T, F, kNaN, false>;
template <typename T, bool F, bool kNaN>
using FMax = FMinMax<T, F, kNaN, true>;

template <template <typename, bool, bool> class Op, int kArgs>
ExecFn PickFloat(Ty t, bool ftz, bool sat) {
  return WithFloatType<ExecFn>(t, [&]<typename T>() -> ExecFn {
    auto pick = [&]<bool F, bool S>() -> ExecFn {
      if constexpr (kArgs == 1)
        return &ExecUnary<T, T, Op<T, F, S>>;
      else if constexpr (kArgs == 2)
        return &ExecBinary<T, T, Op<T, F, S>>;
      else
        return &ExecTernary<T, T, Op<T, F, S>>;
    };
    if (ftz)
      return sat ? pick.template operator()<true, true>() : pick.template operator()<true, false>();
    return sat ? pick.template operator()<false, true>() : pick.template operator()<false, false>();
  });
}

}  // namespace pvgpu::ptx
