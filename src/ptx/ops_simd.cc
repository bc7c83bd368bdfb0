// Hot handlers compiled for AVX2+FMA with per-function target attributes, chosen at load time
// when the host CPU supports them. Without hardware FMA, std::fma is a libm call per lane.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "ptx/exec_util.h"
#include "ptx/families.h"

namespace pvgpu::ptx {
namespace {

#if defined(__x86_64__)
template <typename T>
__attribute__((target("avx2,fma"))) bool ExecFmaAvx2(const Inst& in, Warp& w, uint32_t m) {
  PVGPU_NATIVE((&ExecFmaAvx2<T>), NOp::kFFma, TyOf<T>(), TyOf<T>());
  uint8_t* r = w.regs;
  T* d = RegPtr<T>(r, in.a[0]);
  const T* a = RegPtr<T>(r, in.a[1]);
  const T* b = RegPtr<T>(r, in.a[2]);
  const T* c = RegPtr<T>(r, in.a[3]);
  if (m == kFullMask) {
    if constexpr (sizeof(T) == 4) {
      for (int i = 0; i < 32; ++i) d[i] = __builtin_fmaf(a[i], b[i], c[i]);
    } else {
      for (int i = 0; i < 32; ++i) d[i] = __builtin_fma(a[i], b[i], c[i]);
    }
    return false;
  }
  while (m) {
    int i = __builtin_ctz(m);
    m &= m - 1;
    if constexpr (sizeof(T) == 4)
      d[i] = __builtin_fmaf(a[i], b[i], c[i]);
    else
      d[i] = __builtin_fma(a[i], b[i], c[i]);
  }
  return false;
}

bool HasAvx2Fma() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}

// Loads 8 lanes at byte offsets `off` from base. Tiled kernels mostly read either 8
// consecutive words or one word for all 8 lanes, which plain loads serve much faster than a
// hardware gather.
__attribute__((target("avx2"))) inline __m256i Load8(const uint8_t* base, __m256i off) {
  const uint32_t first = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm256_castsi256_si128(off)));
  const __m256i splat = _mm256_set1_epi32(static_cast<int32_t>(first));
  const __m256i iota = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  if (_mm256_movemask_epi8(_mm256_cmpeq_epi32(off, _mm256_add_epi32(splat, iota))) == -1)
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + first));
  if (_mm256_movemask_epi8(_mm256_cmpeq_epi32(off, splat)) == -1) {
    int32_t v;
    std::memcpy(&v, base + first, 4);
    return _mm256_set1_epi32(v);
  }
  return _mm256_i32gather_epi32(reinterpret_cast<const int*>(base), off, 1);
}

__attribute__((target("avx2"))) void GatherAvx2(const uint8_t* base, const uint32_t* off,
                                                uint32_t* dst) {
  for (int k = 0; k < 4; ++k) {
    __m256i idx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(off + 8 * k));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 8 * k), Load8(base, idx));
  }
}

// ld.shared.b32 with a 32-bit base register and a full warp: bounds and alignment are checked
// for all lanes at once, then one gather per 8 lanes. Returns false when the fast path does
// not apply (the caller then takes the per-lane path, which reports faults).
__attribute__((target("avx2"))) bool LdShared32Avx2(const Inst& in, Warp& w, uint32_t m) {
  if (m != kFullMask) return false;
  const uint32_t* b = RegPtr<uint32_t>(w.regs, in.a[4]);
  const __m256i imm = _mm256_set1_epi32(static_cast<int32_t>(in.imm));
  __m256i v[4], hi = _mm256_setzero_si256(), ors = _mm256_setzero_si256();
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 8 * k)), imm);
    hi = _mm256_max_epu32(hi, v[k]);
    ors = _mm256_or_si256(ors, v[k]);
  }
  alignas(32) uint32_t hv[8], ov[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(hv), hi);
  _mm256_store_si256(reinterpret_cast<__m256i*>(ov), ors);
  uint32_t max = 0, any = 0;
  for (int k = 0; k < 8; ++k) {
    max = hv[k] > max ? hv[k] : max;
    any |= ov[k];
  }
  const uint64_t limit = w.block->shared_size;
  // A negative immediate that wraps the 32-bit sum shows up as a huge address here.
  if ((any & 3) || uint64_t{max} + 4 > limit || in.imm < INT32_MIN || in.imm > INT32_MAX)
    return false;
  uint32_t* d = RegPtr<uint32_t>(w.regs, in.a[0]);
  const uint8_t* base = w.block->shared;
  for (int k = 0; k < 4; ++k)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 8 * k), Load8(base, v[k]));
  return true;
}
#endif

void GatherScalar(const uint8_t* base, const uint32_t* off, uint32_t* dst) {
  for (int i = 0; i < 32; ++i) std::memcpy(&dst[i], base + off[i], 4);
}

}  // namespace

const GatherFn kGather32 =
#if defined(__x86_64__)
    (__builtin_cpu_supports("avx2") ? &GatherAvx2 : &GatherScalar);
#else
    &GatherScalar;
#endif

FastLdFn FastSharedLd32() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) return &LdShared32Avx2;
#endif
  return nullptr;
}

ExecFn SimdFma(Ty t) {
#if defined(__x86_64__)
  if (!HasAvx2Fma()) return nullptr;
  if (t == Ty::kF32) return &ExecFmaAvx2<float>;
  if (t == Ty::kF64) return &ExecFmaAvx2<double>;
#endif
  return nullptr;
}

// Packs per-lane 0/-1 words into a lane mask.
uint32_t PackLaneMask(const int32_t* v) {
#if defined(__x86_64__)
  uint32_t out = 0;
  for (int k = 0; k < 8; ++k) {
    __m128 x = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 4 * k)));
    out |= static_cast<uint32_t>(_mm_movemask_ps(x)) << (4 * k);
  }
  return out;
#else
  uint32_t out = 0;
  for (int i = 0; i < 32; ++i) out |= static_cast<uint32_t>(v[i] & 1) << i;
  return out;
#endif
}

}  // namespace pvgpu::ptx
