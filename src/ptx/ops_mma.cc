// Tensor-core instructions: mma.sync (the shapes defined up to sm_90, not wgmma; the sparse
// mma.sp forms are in ops_mma_sp.cc), wmma.load / wmma.store / wmma.mma, and ldmatrix /
// stmatrix / movmatrix. Each is warp-collective: the handler reads the fragments of all 32 lanes
// at once, so the whole warp must execute it together (.sync.aligned) and a partial warp faults.
// Accumulation order and rounding, and the wmma fragment layout the ISA leaves unspecified, are
// described in docs/tensor-cores.md.
#include <bit>
#include <cstdio>

#include "ptx/half.h"
#include "ptx/memory.h"
#include "ptx/mma_common.h"

namespace pvgpu::ptx {
namespace mma {

El ParseEl(const std::string& m) {
  static const std::pair<const char*, El> kNames[] = {
      {".f16", El::kF16},  {".bf16", El::kBF16}, {".tf32", El::kTF32}, {".f32", El::kF32},
      {".f64", El::kF64},  {".s8", El::kS8},     {".u8", El::kU8},     {".s4", El::kS4},
      {".u4", El::kU4},    {".b1", El::kB1},     {".s32", El::kS32},   {".e4m3", El::kE4M3},
      {".e5m2", El::kE5M2}};
  for (const auto& [name, el] : kNames)
    if (m == name) return el;
  return El::kNone;
}

// The element-type modifiers of the current instruction, in order.
std::vector<El> ElMods(const LowerCtx& c) {
  std::vector<El> v;
  for (const auto& m : c.inst().mods)
    if (El e = ParseEl(m); e != El::kNone) v.push_back(e);
  return v;
}

double Decode(El e, uint64_t word, uint32_t j) {
  const uint32_t bits = ElBits(e);
  const uint64_t v = bits == 64 ? word : (word >> (j * bits)) & ((uint64_t{1} << bits) - 1);
  switch (e) {
    case El::kF16:
      return HalfToFloat(static_cast<uint16_t>(v));
    case El::kBF16:
      return Bf16ToFloat(static_cast<uint16_t>(v));
    case El::kTF32:
      // The low 13 mantissa bits are not part of a tf32 value.
      return std::bit_cast<float>(static_cast<uint32_t>(v) & 0xFFFFE000u);
    case El::kF32:
      return std::bit_cast<float>(static_cast<uint32_t>(v));
    case El::kF64:
      return std::bit_cast<double>(v);
    case El::kE4M3: {
      // 1-4-3, bias 7, no infinities; S.1111.111 is NaN.
      const double sign = (v & 0x80) ? -1 : 1;
      const int e = static_cast<int>(v >> 3) & 15, f = static_cast<int>(v & 7);
      if (e == 15 && f == 7) return std::nan("");
      return sign * (e == 0 ? std::ldexp(f, -9) : std::ldexp(8 + f, e - 10));
    }
    case El::kE5M2: {
      // 1-5-2, bias 15, IEEE-like.
      const double sign = (v & 0x80) ? -1 : 1;
      const int e = static_cast<int>(v >> 2) & 31, f = static_cast<int>(v & 3);
      if (e == 31) return f ? std::nan("") : sign * HUGE_VAL;
      return sign * (e == 0 ? std::ldexp(f, -16) : std::ldexp(4 + f, e - 17));
    }
    case El::kS8:
      return static_cast<int8_t>(v);
    case El::kS4:
      return static_cast<int>(v ^ 8) - 8;
    case El::kS32:
      return static_cast<int32_t>(v);
    default:  // u8, u4, b1
      return static_cast<double>(v);
  }
}

uint64_t Encode(El e, double v, bool sat) {
  switch (e) {
    case El::kF16:
      return FloatToHalf(static_cast<float>(v));
    case El::kF64:
      return std::bit_cast<uint64_t>(v);
    case El::kS32: {
      const auto x = static_cast<int64_t>(v);
      if (sat)
        return static_cast<uint32_t>(
            static_cast<int32_t>(x < INT32_MIN ? INT32_MIN : (x > INT32_MAX ? INT32_MAX : x)));
      return static_cast<uint32_t>(x);
    }
    default:
      return std::bit_cast<uint32_t>(static_cast<float>(v));
  }
}

bool NeedFullWarp(const Inst& in, Warp& w, uint32_t m, const char* what) {
  if (m == kFullMask) return true;
  char buf[160];
  std::snprintf(buf, sizeof(buf),
                "%s is warp-collective (.sync.aligned): all 32 lanes must execute it together, "
                "but only lanes 0x%08x do",
                what, m);
  w.Fault(Code::kIllegalInstruction, in, __builtin_ctz(m), buf);
  return false;
}

namespace {
uint64_t RegWord(uint8_t* r, uint32_t off, int lane, bool wide) {
  return wide ? LoadReg<uint64_t>(r, off, lane) : LoadReg<uint32_t>(r, off, lane);
}
void SetRegWord(uint8_t* r, uint32_t off, int lane, bool wide, uint64_t v) {
  if (wide)
    StoreReg<uint64_t>(r, off, lane, v);
  else
    StoreReg<uint32_t>(r, off, lane, static_cast<uint32_t>(v));
}
}  // namespace

void GatherFragment(Which which, El el, uint8_t* r, const uint32_t* regs, uint32_t count,
                    uint32_t cols, double* out) {
  const uint32_t per = PerReg(el);
  const bool wide = el == El::kF64;
  for (int lane = 0; lane < 32; ++lane) {
    for (uint32_t q = 0; q < count; ++q) {
      const uint64_t word = RegWord(r, regs[q], lane, wide);
      for (uint32_t j = 0; j < per; ++j) {
        const Pos p = MmaPos(which, lane, q, j, per);
        out[p.row * cols + p.col] = Decode(el, word, j);
      }
    }
  }
}

void ScatterFragment(El el, uint8_t* r, const uint32_t* regs, uint32_t count, uint32_t cols,
                     const double* D, bool sat) {
  const uint32_t per = PerReg(el), bits = ElBits(el);
  const bool wide = el == El::kF64;
  for (int lane = 0; lane < 32; ++lane) {
    for (uint32_t q = 0; q < count; ++q) {
      uint64_t word = 0;
      for (uint32_t j = 0; j < per; ++j) {
        const Pos p = MmaPos(kC, lane, q, j, per);
        word |= Encode(el, D[p.row * cols + p.col], sat) << (j * bits);
      }
      SetRegWord(r, regs[q], lane, wide, word);
    }
  }
}

namespace {

// Multiply's body, compiled once for the baseline x86-64 the build targets and once each for
// AVX2 and AVX-512, chosen at run time by what the CPU has: the f32 chains' loop over a row's
// columns is vector code, eight doubles wide with AVX-512 and two with the baseline's SSE2.
// The results are the same in each: every operation is an IEEE double operation rounded the
// same way, and where the compiler contracts a product and a sum into an fma the product of
// two narrow inputs is exact, so the fma rounds the same sum once as the addition does.
[[gnu::always_inline]] inline void MultiplyBody(const MmaDesc& s, uint8_t flags, const double* A,
                                                const double* B, const double* C, double* D) {
  const uint32_t M = s.m, N = s.n, K = s.k;
  if (IsIntEl(s.a)) {
    for (uint32_t i = 0; i < M; ++i) {
      for (uint32_t j = 0; j < N; ++j) {
        auto acc = static_cast<int64_t>(C[i * N + j]);
        for (uint32_t k = 0; k < K; ++k) {
          const auto a = static_cast<int64_t>(A[i * K + k]);
          const auto b = static_cast<int64_t>(B[k * N + j]);
          acc += (flags & 2) ? (a ^ b) : (flags & 4) ? (a & b) : a * b;
        }
        D[i * N + j] = static_cast<double>(acc);
      }
    }
    return;
  }
  if (s.d == El::kF64) {
    for (uint32_t i = 0; i < M; ++i) {
      for (uint32_t j = 0; j < N; ++j) {
        double acc = C[i * N + j];
        for (uint32_t k = 0; k < K; ++k) acc = std::fma(A[i * K + k], B[k * N + j], acc);
        D[i * N + j] = acc;
      }
    }
    return;
  }
  // f32 chains, a row's columns stepping through k together (each element's order is the same).
  // Each step is fmaf(a, b, acc): the product of two f16/bf16/tf32/e4m3/e5m2 values is exact in
  // a double, and their double sum rounded to f32 is the once-rounded f32 result (a double has
  // more than twice the precision of an f32).
  for (uint32_t i = 0; i < M; ++i) {
    double acc[32];
    for (uint32_t j = 0; j < N; ++j) acc[j] = static_cast<float>(C[i * N + j]);
    for (uint32_t k = 0; k < K; ++k) {
      const double a = A[i * K + k];
      const double* b = B + k * N;
      for (uint32_t j = 0; j < N; ++j) acc[j] = static_cast<float>(acc[j] + a * b[j]);
    }
    for (uint32_t j = 0; j < N; ++j) D[i * N + j] = acc[j];
  }
}

#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void MultiplyAvx2(const MmaDesc& s, uint8_t flags, const double* A,
                                              const double* B, const double* C, double* D) {
  MultiplyBody(s, flags, A, B, C, D);
}
[[gnu::target("avx512f,avx512vl,avx512dq,avx2,fma")]] void MultiplyAvx512(
    const MmaDesc& s, uint8_t flags, const double* A, const double* B, const double* C,
    double* D) {
  MultiplyBody(s, flags, A, B, C, D);
}
#endif
void MultiplyBaseline(const MmaDesc& s, uint8_t flags, const double* A, const double* B,
                      const double* C, double* D) {
  MultiplyBody(s, flags, A, B, C, D);
}

using MultiplyFn = void (*)(const MmaDesc&, uint8_t, const double*, const double*, const double*,
                            double*);
MultiplyFn ChooseMultiply() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    return MultiplyAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return MultiplyAvx2;
#endif
  return MultiplyBaseline;
}

}  // namespace

void Multiply(const MmaDesc& s, uint8_t flags, const double* A, const double* B, const double* C,
              double* D) {
  static const MultiplyFn chosen = ChooseMultiply();
  chosen(s, flags, A, B, C, D);
}

Status FragmentRegs(LowerCtx& c, const ast::Operand& o, uint32_t count, Ty t, bool dst,
                    std::vector<uint32_t>* out) {
  std::vector<ast::Operand> elems;
  if (o.kind == ast::Operand::Kind::kVector)
    elems = o.elems;
  else
    elems.push_back(o);
  if (elems.size() != count)
    return c.ErrAt(o, "expected a fragment of " + std::to_string(count) + " registers");
  for (const auto& e : elems) {
    uint32_t reg;
    if (dst) {
      PVGPU_ASSIGN_OR_RETURN(reg, c.DstOp(e, t));
    } else {
      PVGPU_ASSIGN_OR_RETURN(reg, c.SrcOp(e, t));
    }
    out->push_back(reg);
  }
  return Status::Ok();
}

bool ParseShape(const LowerCtx& c, uint32_t* m, uint32_t* n, uint32_t* k) {
  for (const auto& s : c.inst().mods) {
    unsigned mm, nn, kk;
    char tail;
    if (std::sscanf(s.c_str(), ".m%un%uk%u%c", &mm, &nn, &kk, &tail) == 3) {
      *m = mm;
      *n = nn;
      *k = kk;
      return true;
    }
  }
  return false;
}

bool ParseMmaDesc(const LowerCtx& c, MmaDesc* s, uint32_t* m, uint32_t* n, uint32_t* k) {
  std::vector<El> t = ElMods(c);
  if (!ParseShape(c, m, n, k) || t.size() != 4) return false;
  s->m = static_cast<uint8_t>(*m);
  s->n = static_cast<uint8_t>(*n);
  s->k = static_cast<uint16_t>(*k);
  s->d = t[0];
  s->a = t[1];
  s->b = t[2];
  s->c = t[3];
  return true;
}

bool Layouts(const LowerCtx& c, const char* first, const char* second) {
  const auto& mods = c.inst().mods;
  for (size_t i = 0; i + 1 < mods.size(); ++i)
    if (mods[i] == first && mods[i + 1] == second) return true;
  return false;
}

StatusOr<Inst> MmaInst(LowerCtx& c, ExecFn fn, const MmaDesc& s, uint8_t flags, uint32_t na,
                       uint32_t nb, uint32_t nc, uint32_t nd) {
  std::vector<uint32_t> list = {na, nb, nc, nd};
  PVGPU_TRY(FragmentRegs(c, c.ops()[1], na, RegTy(s.a), false, &list));
  PVGPU_TRY(FragmentRegs(c, c.ops()[2], nb, RegTy(s.b), false, &list));
  PVGPU_TRY(FragmentRegs(c, c.ops()[3], nc, RegTy(s.c), false, &list));
  PVGPU_TRY(FragmentRegs(c, c.ops()[0], nd, RegTy(s.d), true, &list));
  Inst in;
  in.fn = fn;
  in.flags = flags;
  in.imm = std::bit_cast<int64_t>(s);
  auto& lists = c.img().reg_lists;
  in.aux = lists.size();
  lists.insert(lists.end(), list.begin(), list.end());
  return in;
}

// Integer and single-bit forms: flags for .satfinite and the b1 operation.
StatusOr<uint8_t> IntFlags(LowerCtx& c, El a) {
  uint8_t flags = c.Has(".satfinite") ? 1 : 0;
  if (a == El::kB1) {
    if (flags || !c.Has(".popc")) return c.Unsupported("b1 mma needs .xor.popc or .and.popc");
    if (c.Has(".xor")) return uint8_t{2};
    if (c.Has(".and")) return uint8_t{4};
    return c.Unsupported("b1 mma needs .xor.popc or .and.popc");
  }
  return flags;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Matrix multiply-accumulate: mma.sync and wmma.mma share the arithmetic and differ in where a
// fragment element lives.

// wmma fragments (our layout; the ISA leaves it unspecified): element e of lane `lane` is entry
// (e * 32 + lane) mod (rows * cols) of the matrix in row-major order. f16 A and B fragments have
// 16 elements per lane whatever the shape, so they hold entries once (32x16 A, 16x32 B), twice
// (16x16) or four times (16x8 B of m32n8k16, 8x16 A of m8n32k16).
Pos WmmaPos(int lane, uint32_t e, uint32_t rows, uint32_t cols) {
  const uint32_t idx = (e * 32 + static_cast<uint32_t>(lane)) % (rows * cols);
  return {idx / cols, idx % cols};
}

// mma.m8n8k4 with .f16 inputs is four independent 8x8x4 products: computation q runs on the
// "low group" lanes 4q..4q+3 and the "high group" 16+4q..16+4q+3. With l = lane % 4, h = 4 for
// the high group (else 0) and i the element index in the fragment (the ISA's table):
//   A row-major: (l + h, i); column-major: (i + h, l)
//   B row-major: (l, i + h); column-major: (i, l + h)
//   C, D f16: (l + h, i); f32: ((lane & 1) + (i & 2) + h, (i & 4) + (lane & 2) + (i & 1))
Pos Mma884Pos(Which which, int lane, uint32_t i, bool col_major, bool f32) {
  const uint32_t l = static_cast<uint32_t>(lane) % 4, h = lane >= 16 ? 4 : 0;
  const auto bits = static_cast<uint32_t>(lane);
  switch (which) {
    case kA:
      return col_major ? Pos{i + h, l} : Pos{l + h, i};
    case kB:
      return col_major ? Pos{i, l + h} : Pos{l, i + h};
    default:
      if (!f32) return {l + h, i};
      return {(bits & 1) + (i & 2) + h, (i & 4) + (bits & 2) + (i & 1)};
  }
}

enum Layout : int { kMmaLayout, kWmmaLayout, kMma884Layout };

// Register list: nA, nB, nC, nD, then the registers of a, b, c and d.
// flags: bit0 .satfinite, bit1 .xor.popc, bit2 .and.popc (b1), bit3 A column-major, bit4 B
// column-major (m8n8k4 only).
template <int kLayout>
bool ExecMma(const Inst& in, Warp& w, uint32_t m) {
  if (!NeedFullWarp(in, w, m, kLayout == kWmmaLayout ? "wmma.mma" : "mma")) return true;
  const auto s = std::bit_cast<MmaDesc>(in.imm);
  const uint32_t* list = w.launch->image->reg_lists.data() + in.aux;
  const uint32_t na = list[0], nb = list[1], nc = list[2], nd = list[3];
  const uint32_t* ra = list + 4;
  const uint32_t* rb = ra + na;
  const uint32_t* rc = rb + nb;
  const uint32_t* rd = rc + nc;
  const uint32_t M = s.m, N = s.n, K = s.k;
  uint8_t* r = w.regs;
  auto pos = [&](Which which, int lane, uint32_t q, uint32_t j, uint32_t per, uint32_t rows,
                 uint32_t cols) {
    if constexpr (kLayout == kMmaLayout) return MmaPos(which, lane, q, j, per);
    if constexpr (kLayout == kWmmaLayout) return WmmaPos(lane, q * per + j, rows, cols);
    return Mma884Pos(which, lane, q * per + j, in.flags & (which == kA ? 8 : 16), per == 1);
  };
  // The lanes of one product: all 32, or the eight of an m8n8k4 computation.
  const int groups = kLayout == kMma884Layout ? 4 : 1;
  for (int grp = 0; grp < groups; ++grp) {
    int lanes[32];
    int nlanes = 0;
    for (int lane = 0; lane < 32; ++lane)
      if (groups == 1 || (lane % 16) / 4 == grp) lanes[nlanes++] = lane;
    double A[kMaxA], B[kMaxB], C[kMaxC], D[kMaxC];
    auto gather = [&](Which which, El el, const uint32_t* regs, uint32_t count, double* out,
                      uint32_t rows, uint32_t cols) {
      const uint32_t per = PerReg(el);
      const bool wide = el == El::kF64;
      if constexpr (kLayout == kWmmaLayout) {
        // Entry e * 32 + lane (WmmaPos without the copies): the first rows * cols / 32 elements.
        const uint32_t first = rows * cols / 32, shift = std::countr_zero(per);
        for (uint32_t e = 0; e < first; ++e) {
          const uint32_t* reg = RegPtr<uint32_t>(r, regs[e >> shift]);
          double* o = out + e * 32;
          if (el == El::kTF32 || el == El::kF32) {
            // Decode's two 32-bit float forms, written out so that the loop is vector code.
            const uint32_t keep = el == El::kTF32 ? 0xFFFFE000u : 0xFFFFFFFFu;
            for (int lane = 0; lane < 32; ++lane) o[lane] = std::bit_cast<float>(reg[lane] & keep);
            continue;
          }
          for (int lane = 0; lane < 32; ++lane) o[lane] = Decode(el, reg[lane], e & (per - 1));
        }
        return;
      }
      if constexpr (kLayout == kMmaLayout) {
        GatherFragment(which, el, r, regs, count, cols, out);
        return;
      }
      for (int x = 0; x < nlanes; ++x) {
        const int lane = lanes[x];
        for (uint32_t q = 0; q < count; ++q) {
          const uint64_t word = RegWord(r, regs[q], lane, wide);
          for (uint32_t j = 0; j < per; ++j) {
            const Pos p = pos(which, lane, q, j, per, rows, cols);
            out[p.row * cols + p.col] = Decode(el, word, j);
          }
        }
      }
    };
    gather(kA, s.a, ra, na, A, M, K);
    gather(kB, s.b, rb, nb, B, K, N);
    gather(kC, s.c, rc, nc, C, M, N);
    Multiply(s, in.flags, A, B, C, D);
    const bool sat = in.flags & 1;
    if constexpr (kLayout == kMmaLayout) {
      ScatterFragment(s.d, r, rd, nd, N, D, sat);
      return false;
    }
    const uint32_t per = PerReg(s.d), bits = ElBits(s.d);
    const bool wide = s.d == El::kF64;
    for (int x = 0; x < nlanes; ++x) {
      const int lane = lanes[x];
      for (uint32_t q = 0; q < nd; ++q) {
        uint64_t word = 0;
        for (uint32_t j = 0; j < per; ++j) {
          const Pos p = pos(kC, lane, q, j, per, M, N);
          word |= Encode(s.d, D[p.row * N + p.col], sat) << (j * bits);
        }
        SetRegWord(r, rd[q], lane, wide, word);
      }
    }
  }
  return false;
}

// Emits an mma-like instruction of four operands with its register list.
Status EmitMma(LowerCtx& c, ExecFn fn, const MmaDesc& s, uint8_t flags, uint32_t na, uint32_t nb,
               uint32_t nc, uint32_t nd) {
  PVGPU_TRY(c.NeedOps(4));
  PVGPU_ASSIGN_OR_RETURN(Inst in, MmaInst(c, fn, s, flags, na, nb, nc, nd));
  c.Emit(in);
  return Status::Ok();
}

// mma.sync.aligned.shape.row.col{.satfinite}.dtype.atype.btype.ctype{.op.popc} d, a, b, c.
Status LowerMmaSync(LowerCtx& c) {
  if (!c.Has(".sync") || !c.Has(".aligned")) return c.Unsupported("mma needs .sync.aligned");
  if (c.Has(".block_scale")) return c.Unsupported("block-scaled mma");
  if (c.Has(".sp") || c.Has(".sp::ordered_metadata")) return LowerMmaSparse(c);
  uint32_t M, N, K;
  MmaDesc s;
  if (!ParseMmaDesc(c, &s, &M, &N, &K)) return c.Unsupported();
  // Shapes per element type (PTX ISA, "Matrix shape" of mma), all with N = 8.
  auto shape_is = [&](uint32_t m, uint32_t k) { return M == m && N == 8 && K == k; };
  bool ok = false;
  const bool fp_acc = (s.c == El::kF16 || s.c == El::kF32) && (s.d == El::kF16 || s.d == El::kF32);
  const bool f32_acc = s.c == El::kF32 && s.d == El::kF32;
  const bool s32_acc = s.c == El::kS32 && s.d == El::kS32;
  auto both = [&](El x, El y) { return (s.a == x || s.a == y) && (s.b == x || s.b == y); };
  if (s.a == El::kF16 && s.b == El::kF16) {
    ok = fp_acc && (shape_is(16, 8) || shape_is(16, 16));
  } else if (s.a == El::kBF16 && s.b == El::kBF16) {
    ok = f32_acc && (shape_is(16, 8) || shape_is(16, 16));
  } else if (s.a == El::kTF32 && s.b == El::kTF32) {
    ok = f32_acc && (shape_is(16, 4) || shape_is(16, 8));
  } else if (s.a == El::kF64 && s.b == El::kF64) {
    ok = s.c == El::kF64 && s.d == El::kF64 &&
         (shape_is(8, 4) || shape_is(16, 4) || shape_is(16, 8) || shape_is(16, 16));
  } else if (both(El::kE4M3, El::kE5M2)) {
    ok = fp_acc && (shape_is(16, 16) || shape_is(16, 32));
  } else if (both(El::kS8, El::kU8)) {
    ok = s32_acc && (shape_is(8, 16) || shape_is(16, 16) || shape_is(16, 32));
  } else if (both(El::kS4, El::kU4)) {
    ok = s32_acc && (shape_is(8, 32) || shape_is(16, 32) || shape_is(16, 64));
  } else if (s.a == El::kB1 && s.b == El::kB1) {
    ok = s32_acc && (shape_is(8, 128) || shape_is(16, 128) || shape_is(16, 256));
  }
  if (s.a == El::kF16 && s.b == El::kF16 && M == 8 && N == 8 && K == 4 && fp_acc) {
    // The one shape that takes any layouts: four 8-lane products.
    uint8_t flags = 0;
    if (Layouts(c, ".col", ".row") || Layouts(c, ".col", ".col")) flags |= 8;
    if (Layouts(c, ".row", ".col") || Layouts(c, ".col", ".col")) flags |= 16;
    if (!(flags & 8) && !(flags & 16) && !Layouts(c, ".row", ".row"))
      return c.Unsupported("mma without .alayout.blayout");
    if (c.Has(".satfinite")) return c.Unsupported(".satfinite on a floating-point mma");
    return EmitMma(c, &ExecMma<kMma884Layout>, s, flags, 2, 2, s.c == El::kF16 ? 4 : 8,
                   s.d == El::kF16 ? 4 : 8);
  }
  if (!ok) return c.Unsupported("this mma shape and type combination");
  // Every other shape takes A row-major and B column-major.
  if (!Layouts(c, ".row", ".col")) return c.Unsupported("mma layouts other than .row.col");
  uint8_t flags = 0;
  if (IsIntEl(s.a)) {
    PVGPU_ASSIGN_OR_RETURN(flags, IntFlags(c, s.a));
  } else if (c.Has(".satfinite")) {
    return c.Unsupported(".satfinite on a floating-point mma");
  }
  auto regs = [&](El e, uint32_t elems) { return elems / (32 * PerReg(e)); };
  return EmitMma(c, &ExecMma<kMmaLayout>, s, flags, regs(s.a, M * K), regs(s.b, K * N),
                 regs(s.c, M * N), regs(s.d, M * N));
}

// ---------------------------------------------------------------------------------------------
// wmma

// The matrix a wmma fragment holds: rows x cols, and its elements per lane.
struct WmmaFrag {
  uint32_t rows = 0, cols = 0, elems = 0;
};
WmmaFrag FragOf(char which, El el, uint32_t M, uint32_t N, uint32_t K) {
  WmmaFrag f;
  f.rows = which == 'b' ? K : M;
  f.cols = which == 'a' ? K : N;
  // f16 A and B fragments are 8 registers in every shape (the ISA's counts), however many
  // entries the matrix has.
  f.elems = el == El::kF16 && which != 'c' ? 16 : f.rows * f.cols / 32;
  return f;
}

bool WmmaShapeOk(uint32_t M, uint32_t N, uint32_t K, El in_el) {
  const bool big = (M == 16 && N == 16 && K == 16) || (M == 32 && N == 8 && K == 16) ||
                   (M == 8 && N == 32 && K == 16);
  switch (in_el) {
    case El::kF16:
    case El::kBF16:
    case El::kS8:
    case El::kU8:
      return big;
    case El::kTF32:
      return M == 16 && N == 16 && K == 8;
    case El::kS4:
    case El::kU4:
      return M == 8 && N == 8 && K == 32;
    case El::kB1:
      return M == 8 && N == 8 && K == 128;
    default:
      return false;
  }
}

// wmma.load / wmma.store. a[4]: base register, a[5]: stride register (kNoReg: the default),
// imm: address offset; flags bit0: 32-bit base, bit1: column-major, bit2: store.
// Register list: rows, cols, element type, elements per lane, then the registers.
template <MemSpace S>
bool ExecWmmaLdSt(const Inst& in, Warp& w, uint32_t m) {
  const bool store = in.flags & 4;
  if (!NeedFullWarp(in, w, m, store ? "wmma.store" : "wmma.load")) return true;
  const uint32_t* list = w.launch->image->reg_lists.data() + in.aux;
  const uint32_t rows = list[0], cols = list[1], elems = list[3];
  const El el = static_cast<El>(list[2]);
  const uint32_t* regs = list + 4;
  const bool col_major = in.flags & 2;
  uint8_t* r = w.regs;
  // One matrix per warp: every lane must name the same one.
  const uint64_t addr = LaneAddress(in, w, 0, 4);
  const uint32_t stride =
      in.a[5] == kNoReg ? (col_major ? rows : cols) : LoadReg<uint32_t>(r, in.a[5], 0);
  for (int lane = 1; lane < 32; ++lane) {
    if (LaneAddress(in, w, lane, 4) != addr ||
        (in.a[5] != kNoReg && LoadReg<uint32_t>(r, in.a[5], lane) != stride)) {
      w.Fault(Code::kIllegalInstruction, in, lane,
              "wmma lanes disagree on the matrix address or stride (the warp shares one)");
      return true;
    }
  }
  if constexpr (S == MemSpace::kGeneric) {
    // wmma reaches global and shared memory only (and one matrix for the whole warp).
    if (addr - kLocalWindow < kWindowSize || addr - kParamWindow < kWindowSize) {
      AddressFault(w, in, 0, addr, 1, S, false);
      return true;
    }
  }
  // Sub-byte elements (s4, u4, b1: loads only) are packed from bit 0 of each byte up.
  const uint32_t bits = ElBits(el), per = PerReg(el);
  const uint32_t bytes = bits < 8 ? 1 : bits / 8;
  const uint32_t mask = bits == 32 ? ~0u : (1u << bits) - 1;
  const uint32_t nregs = elems / per, shift = std::countr_zero(per);
  // Entry idx of the matrix (row-major) is element idx / 32 of lane idx % 32, and again every
  // `total / 32` elements in the fragments that hold it more than once (WmmaPos).
  const uint32_t total = rows * cols, copies = elems * 32 / total;
  uint32_t words[32][16] = {};
  if (store) {
    for (uint32_t q = 0; q < nregs; ++q)
      for (int lane = 0; lane < 32; ++lane) words[lane][q] = LoadReg<uint32_t>(r, regs[q], lane);
  }
  // The whole matrix checked once when it is in bounds; otherwise entry by entry, which
  // reports the first bad one.
  const uint64_t span =
      col_major ? uint64_t{cols - 1} * stride + rows : uint64_t{rows - 1} * stride + cols;
  const uint64_t span_bytes = (span * bits + 7) / 8;
  uint8_t* base = nullptr;
  if ((addr & (bytes - 1)) == 0 && span_bytes <= UINT32_MAX)
    base = Resolve<S>(w, 0, addr, static_cast<uint32_t>(span_bytes), store);
  // The common load (tf32, f32, s32 elements, the matrix in bounds and aligned): each entry is
  // one 32-bit word, in every copy that holds it; the checked loop below does the rest.
  const bool unchecked = base != nullptr && !store && bits == 32;
  if (unchecked) {
    const uint32_t step = total / 32;
    for (uint32_t row = 0; row < rows; ++row) {
      for (uint32_t col = 0; col < cols; ++col) {
        const uint32_t idx = row * cols + col;
        const uint64_t index =
            col_major ? uint64_t{col} * stride + row : uint64_t{row} * stride + col;
        uint32_t v;
        std::memcpy(&v, base + index * 4, 4);
        for (uint32_t k = 0; k < copies; ++k) words[idx & 31][(idx >> 5) + k * step] = v;
      }
    }
  }
  for (uint32_t row = 0; !unchecked && row < rows; ++row) {
    for (uint32_t col = 0; col < cols; ++col) {
      const uint32_t idx = row * cols + col;
      const int lane = static_cast<int>(idx & 31);
      const uint64_t index =
          col_major ? uint64_t{col} * stride + row : uint64_t{row} * stride + col;
      const uint64_t a = addr + index * bits / 8;
      uint8_t* host = base ? base + index * bits / 8 : Resolve<S>(w, lane, a, bytes, store);
      if (!host || (a & (bytes - 1))) {
        AddressFault(w, in, lane, a, bytes, S, host != nullptr);
        return true;
      }
      const uint32_t e = idx >> 5;
      if (store) {
        const uint32_t v = (words[lane][e >> shift] >> ((e & (per - 1)) * bits)) & mask;
        std::memcpy(host, &v, bytes);
        continue;
      }
      uint32_t v;
      if (bytes == 4) {
        std::memcpy(&v, host, 4);
      } else if (bytes == 2) {
        uint16_t h;
        std::memcpy(&h, host, 2);
        v = h;
      } else {
        v = (*host >> (index * bits % 8)) & mask;
      }
      for (uint32_t k = 0; k < copies; ++k) {
        const uint32_t ek = e + k * (total / 32);
        words[lane][ek >> shift] |= v << ((ek & (per - 1)) * bits);
      }
    }
  }
  if (!store) {
    for (uint32_t q = 0; q < nregs; ++q)
      for (int lane = 0; lane < 32; ++lane) StoreReg<uint32_t>(r, regs[q], lane, words[lane][q]);
  }
  return false;
}

// wmma.load.{a,b,c}.sync.aligned.layout.shape{.ss}.type r, [p]{, stride};
// wmma.store.d.sync.aligned.layout.shape{.ss}.type [p], r{, stride};
Status LowerWmmaLdSt(LowerCtx& c, bool store) {
  if (!c.Has(".sync") || !c.Has(".aligned")) return c.Unsupported("wmma needs .sync.aligned");
  char which = store ? 'c' : c.Has(".a") ? 'a' : c.Has(".b") ? 'b' : c.Has(".c") ? 'c' : 0;
  if (store && !c.Has(".d")) which = 0;
  const bool row = c.Has(".row"), col = c.Has(".col");
  uint32_t M, N, K;
  std::vector<El> t = ElMods(c);
  if (!which || row == col || !ParseShape(c, &M, &N, &K) || t.size() != 1) return c.Unsupported();
  const El el = t[0];
  const bool ok_el = which == 'c' ? (el == El::kF16 || el == El::kF32 || el == El::kS32)
                                  : (el != El::kF32 && el != El::kS32);
  // The input element type decides the shapes: f16 accumulators go with f16 inputs, s32 with
  // integer ones, f32 with any floating-point input.
  bool shape_ok;
  if (which != 'c' || el == El::kF16)
    shape_ok = WmmaShapeOk(M, N, K, el);
  else if (el == El::kS32)
    shape_ok = WmmaShapeOk(M, N, K, El::kS8) || WmmaShapeOk(M, N, K, El::kS4) ||
               WmmaShapeOk(M, N, K, El::kB1);
  else
    shape_ok = WmmaShapeOk(M, N, K, El::kF16) || WmmaShapeOk(M, N, K, El::kTF32);
  // Sub-byte fragments: A row-major and B column-major only.
  const bool sub_byte = ElBits(el) < 8;
  if (sub_byte && (which == 'a' ? col : row)) shape_ok = false;
  if (!ok_el || !shape_ok) return c.Unsupported("this wmma shape and type combination");
  const size_t nops = c.ops().size();
  if (nops != 2 && nops != 3) return c.Err("wmma.load/store expects 2 or 3 operands");
  const WmmaFrag f = FragOf(which, el, M, N, K);
  const uint32_t nregs = f.elems / PerReg(el);
  MemSpace space = c.Has(".global")                              ? MemSpace::kGlobal
                   : (c.Has(".shared") || c.Has(".shared::cta")) ? MemSpace::kShared
                                                                 : MemSpace::kGeneric;
  PVGPU_ASSIGN_OR_RETURN(Addr a, c.Address(c.ops()[store ? 0 : 1], space));
  Inst in;
  in.a[4] = a.base;
  in.imm = a.imm;
  in.flags = (a.base32 ? 1 : 0) | (col ? 2 : 0) | (store ? 4 : 0);
  switch (a.space) {
    case MemSpace::kGlobal:
      in.fn = &ExecWmmaLdSt<MemSpace::kGlobal>;
      break;
    case MemSpace::kShared:
      in.fn = &ExecWmmaLdSt<MemSpace::kShared>;
      break;
    case MemSpace::kGeneric:
      in.fn = &ExecWmmaLdSt<MemSpace::kGeneric>;
      break;
    default:
      return c.Unsupported("wmma outside global and shared memory");
  }
  if (nops == 3) {
    PVGPU_ASSIGN_OR_RETURN(in.a[5], c.Src(2, Ty::kU32));
  }
  std::vector<uint32_t> list = {f.rows, f.cols, static_cast<uint32_t>(el), f.elems};
  PVGPU_TRY(FragmentRegs(c, c.ops()[store ? 1 : 0], nregs, RegTy(el), !store, &list));
  auto& lists = c.img().reg_lists;
  in.aux = lists.size();
  lists.insert(lists.end(), list.begin(), list.end());
  c.Emit(in);
  return Status::Ok();
}

// wmma.mma.sync.aligned.alayout.blayout.shape.dtype.ctype d, a, b, c;  (f16 inputs)
// wmma.mma.sync.aligned.alayout.blayout.shape.dtype.atype.btype.ctype{.satfinite} d, a, b, c;
// The layouts only say how the fragments were loaded, which our layout does not depend on.
Status LowerWmmaMma(LowerCtx& c) {
  if (!c.Has(".sync") || !c.Has(".aligned")) return c.Unsupported("wmma needs .sync.aligned");
  uint32_t M, N, K;
  std::vector<El> t = ElMods(c);
  if (!ParseShape(c, &M, &N, &K)) return c.Unsupported();
  MmaDesc s;
  if (t.size() == 2) {
    s.d = t[0];
    s.c = t[1];
    s.a = s.b = El::kF16;
  } else if (t.size() == 4) {
    s.d = t[0];
    s.a = t[1];
    s.b = t[2];
    s.c = t[3];
  } else {
    return c.Unsupported();
  }
  s.m = static_cast<uint8_t>(M);
  s.n = static_cast<uint8_t>(N);
  s.k = static_cast<uint16_t>(K);
  bool ok = WmmaShapeOk(M, N, K, s.a);
  if (s.a == El::kF16) {
    ok = ok && s.b == El::kF16 && (s.c == El::kF16 || s.c == El::kF32) &&
         (s.d == El::kF16 || s.d == El::kF32);
  } else if (s.a == El::kBF16 || s.a == El::kTF32) {
    ok = ok && s.b == s.a && s.c == El::kF32 && s.d == El::kF32;
  } else if (s.a == El::kS8 || s.a == El::kU8) {
    ok = ok && (s.b == El::kS8 || s.b == El::kU8) && s.c == El::kS32 && s.d == El::kS32;
  } else {
    ok = ok && (s.a == El::kB1 ? s.b == El::kB1 : (s.b == El::kS4 || s.b == El::kU4)) &&
         s.c == El::kS32 && s.d == El::kS32 && Layouts(c, ".row", ".col");
  }
  if (!ok) return c.Unsupported("this wmma shape and type combination");
  uint8_t flags = 0;
  if (IsIntEl(s.a)) {
    PVGPU_ASSIGN_OR_RETURN(flags, IntFlags(c, s.a));
  } else if (c.Has(".satfinite")) {
    return c.Unsupported(".satfinite on a floating-point wmma.mma");
  }
  auto regs = [&](char which, El e) { return FragOf(which, e, M, N, K).elems / PerReg(e); };
  return EmitMma(c, &ExecMma<kWmmaLayout>, s, flags, regs('a', s.a), regs('b', s.b), regs('c', s.c),
                 regs('c', s.d));
}

Status LowerWmma(LowerCtx& c) {
  if (c.Has(".load")) return LowerWmmaLdSt(c, false);
  if (c.Has(".store")) return LowerWmmaLdSt(c, true);
  if (c.Has(".mma")) return LowerWmmaMma(c);
  return c.Unsupported();
}

// ---------------------------------------------------------------------------------------------
// ldmatrix / stmatrix / movmatrix: 8x8 matrices of b16 elements. Row q of matrix i is at the
// address lane 8 * i + q gives (16 bytes, 16-byte aligned); in the fragment, lane L holds
// elements (L / 4, 2 * (L % 4)) and (L / 4, 2 * (L % 4) + 1) of each matrix, in the low and high
// half of the register (with .trans: of the transposed matrix).

// The element of an 8x8 fragment register file at (row, col): {lane, half}.
inline uint16_t FragHalf(const uint32_t* lanes, uint32_t row, uint32_t col) {
  return static_cast<uint16_t>(lanes[row * 4 + col / 2] >> (16 * (col & 1)));
}

// a[0..3]: fragment registers, a[4]: address register; flags bit0: 32-bit address register,
// bit1: .trans, bit2: store (stmatrix). n: matrices (1, 2, 4).
template <MemSpace S>
bool ExecLdStMatrix(const Inst& in, Warp& w, uint32_t m) {
  const bool store = in.flags & 4, trans = in.flags & 2;
  if (!NeedFullWarp(in, w, m, store ? "stmatrix" : "ldmatrix")) return true;
  uint8_t* r = w.regs;
  for (uint32_t i = 0; i < in.n; ++i) {
    uint16_t mat[8][8];  // [row][col] as in memory
    uint8_t* rows[8];
    for (int q = 0; q < 8; ++q) {
      const int lane = static_cast<int>(8 * i) + q;
      const uint64_t a = LaneAddress(in, w, lane, 4);
      rows[q] = Resolve<S>(w, lane, a, 16, store);
      if (!rows[q] || (a & 15)) {
        AddressFault(w, in, lane, a, 16, S, rows[q] != nullptr);
        return true;
      }
      if (!store) std::memcpy(mat[q], rows[q], 16);
    }
    if (store) {
      uint32_t lanes[32];
      for (int lane = 0; lane < 32; ++lane) lanes[lane] = LoadReg<uint32_t>(r, in.a[i], lane);
      for (uint32_t row = 0; row < 8; ++row)
        for (uint32_t col = 0; col < 8; ++col)
          mat[row][col] = trans ? FragHalf(lanes, col, row) : FragHalf(lanes, row, col);
      for (int q = 0; q < 8; ++q) std::memcpy(rows[q], mat[q], 16);
    } else {
      for (int lane = 0; lane < 32; ++lane) {
        const uint32_t g = static_cast<uint32_t>(lane) / 4,
                       c0 = 2 * (static_cast<uint32_t>(lane) % 4);
        const uint32_t lo = trans ? mat[c0][g] : mat[g][c0];
        const uint32_t hi = trans ? mat[c0 + 1][g] : mat[g][c0 + 1];
        StoreReg<uint32_t>(r, in.a[i], lane, lo | (hi << 16));
      }
    }
  }
  return false;
}

// ldmatrix.sync.aligned.m8n8.num{.trans}{.shared{::cta}}.b16 r, [p];
// stmatrix.sync.aligned.m8n8.num{.trans}{.shared{::cta}}.b16 [p], r;
Status LowerLdStMatrix(LowerCtx& c, bool store) {
  if (!c.Has(".sync") || !c.Has(".aligned") || !c.Has(".m8n8") || !c.Has(".b16"))
    return c.Unsupported();
  const uint16_t num = c.Has(".x1") ? 1 : c.Has(".x2") ? 2 : c.Has(".x4") ? 4 : 0;
  if (num == 0) return c.Unsupported();
  PVGPU_TRY(c.NeedOps(2));
  const bool shared = c.Has(".shared") || c.Has(".shared::cta");
  PVGPU_ASSIGN_OR_RETURN(
      Addr a, c.Address(c.ops()[store ? 0 : 1], shared ? MemSpace::kShared : MemSpace::kGeneric));
  Inst in;
  in.a[4] = a.base;
  in.imm = a.imm;
  in.n = num;
  in.flags = (a.base32 ? 1 : 0) | (c.Has(".trans") ? 2 : 0) | (store ? 4 : 0);
  if (a.space == MemSpace::kShared)
    in.fn = &ExecLdStMatrix<MemSpace::kShared>;
  else if (a.space == MemSpace::kGeneric)
    in.fn = &ExecLdStMatrix<MemSpace::kGeneric>;
  else
    return c.Unsupported("ldmatrix/stmatrix outside shared memory");
  std::vector<uint32_t> regs;
  PVGPU_TRY(FragmentRegs(c, c.ops()[store ? 1 : 0], num, Ty::kB32, !store, &regs));
  for (uint32_t i = 0; i < num; ++i) in.a[i] = regs[i];
  c.Emit(in);
  return Status::Ok();
}
Status LowerLdMatrix(LowerCtx& c) { return LowerLdStMatrix(c, false); }
Status LowerStMatrix(LowerCtx& c) { return LowerLdStMatrix(c, true); }

// movmatrix.sync.aligned.m8n8.trans.b16 d, a: a[0] d, a[1] a.
bool ExecMovMatrix(const Inst& in, Warp& w, uint32_t m) {
  if (!NeedFullWarp(in, w, m, "movmatrix")) return true;
  uint8_t* r = w.regs;
  uint32_t src[32];
  std::memcpy(src, RegPtr<uint32_t>(r, in.a[1]), sizeof(src));
  for (int lane = 0; lane < 32; ++lane) {
    const uint32_t g = static_cast<uint32_t>(lane) / 4, c0 = 2 * (static_cast<uint32_t>(lane) % 4);
    const uint32_t lo = FragHalf(src, c0, g), hi = FragHalf(src, c0 + 1, g);
    StoreReg<uint32_t>(r, in.a[0], lane, lo | (hi << 16));
  }
  return false;
}
Status LowerMovMatrix(LowerCtx& c) {
  if (!c.Has(".sync") || !c.Has(".aligned") || !c.Has(".m8n8") || !c.Has(".trans") ||
      !c.Has(".b16"))
    return c.Unsupported();
  PVGPU_TRY(c.NeedOps(2));
  Inst in;
  in.fn = ExecMovMatrix;
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, Ty::kB32));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kB32));
  c.Emit(in);
  return Status::Ok();
}

}  // namespace
}  // namespace mma

void RegisterMma(OpTable& t) {
  t.Add("mma", mma::LowerMmaSync);
  t.Add("wmma", mma::LowerWmma);
  t.Add("ldmatrix", mma::LowerLdMatrix);
  t.Add("stmatrix", mma::LowerStMatrix);
  t.Add("movmatrix", mma::LowerMovMatrix);
}

}  // namespace pvgpu::ptx
