// Shared building blocks for instruction handlers: lane loops over typed registers and the
// float helpers (flush-to-zero, saturation) that several families use.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "ptx/ir.h"
#include "ptx/lower.h"
#include "ptx/native.h"
#include "ptx/warp.h"

namespace pvgpu::ptx {

template <typename T>
inline T FlushDenormal(T v) {
  if constexpr (std::is_same_v<T, float>) {
    if (std::fpclassify(v) == FP_SUBNORMAL) return std::copysign(0.0f, v);
  }
  return v;
}

template <typename T>
inline T Saturate(T v) {
  if (std::isnan(v)) return T(0);
  return v < T(0) ? T(0) : (v > T(1) ? T(1) : v);
}

// dst = Op(srcs...) for each lane; a[0] dst, a[1] .. a[N] the sources. Full warps of 32- and
// 64-bit registers take a plain loop over the register arrays, which the compiler vectorizes.
template <typename D, typename S, typename Op, size_t... k>
bool ExecLanewise(const Inst& in, Warp& w, uint32_t m, std::index_sequence<k...>) {
  uint8_t* r = w.regs;
  if constexpr (sizeof(D) >= 4 && sizeof(S) >= 4) {
    if (m == kFullMask) {
      D* d = RegPtr<D>(r, in.a[0]);
      const S* src[] = {RegPtr<S>(r, in.a[k + 1])...};
      for (int i = 0; i < 32; ++i) d[i] = Op::Apply(src[k][i]...);
      return false;
    }
  }
  ForLanes(m,
           [&](int i) { StoreReg<D>(r, in.a[0], i, Op::Apply(LoadReg<S>(r, in.a[k + 1], i)...)); });
  return false;
}

template <typename D, typename S, typename Op>
bool ExecUnary(const Inst& in, Warp& w, uint32_t m) {
  (void)NativeLanewise<&ExecUnary<D, S, Op>, D, S, Op>::registered;
  return ExecLanewise<D, S, Op>(in, w, m, std::make_index_sequence<1>{});
}

template <typename D, typename S, typename Op>
bool ExecBinary(const Inst& in, Warp& w, uint32_t m) {
  (void)NativeLanewise<&ExecBinary<D, S, Op>, D, S, Op>::registered;
  return ExecLanewise<D, S, Op>(in, w, m, std::make_index_sequence<2>{});
}

template <typename D, typename S, typename Op>
bool ExecTernary(const Inst& in, Warp& w, uint32_t m) {
  (void)NativeLanewise<&ExecTernary<D, S, Op>, D, S, Op>::registered;
  return ExecLanewise<D, S, Op>(in, w, m, std::make_index_sequence<3>{});
}

// make.template operator()<kValue>() for the one of kValues that equals `value`, else nullptr:
// the executor instantiated for an operation known only at lowering time (a comparison, an
// atomic op, a rounded op).
template <typename V, V... kValues, typename Make>
ExecFn Instantiate(V value, std::integer_sequence<V, kValues...>, Make make) {
  ExecFn fn = nullptr;
  // Stops at the first match (||).
  (void)((value == kValues && (fn = make.template operator()<kValues>(), true)) || ...);
  return fn;
}

// Lowering helpers shared by families: "op d, a[, b[, c]]" with one type for all operands.
inline Status LowerSimple(LowerCtx& c, ExecFn fn, Ty dt, Ty st, int nsrc, uint64_t aux = 0,
                          uint8_t flags = 0) {
  if (!fn) return c.Unsupported();
  PVGPU_TRY(c.NeedOps(1 + nsrc));
  Inst in;
  in.fn = fn;
  in.aux = aux;
  in.flags = flags;
  for (int i = 0; i < nsrc; ++i) {
    PVGPU_ASSIGN_OR_RETURN(in.a[1 + i], c.Src(1 + i, st));
  }
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, dt));
  c.Emit(in);
  return Status::Ok();
}

}  // namespace pvgpu::ptx
