// Tensor-core instructions (ops_mma.cc, ops_mma_sp.cc): each mma.sync and mma.sp form against a
// host GEMM, with the fragments packed on the host from the PTX ISA's fragment tables; wmma
// load/store/mma; and ldmatrix / stmatrix / movmatrix; plus the faults (partial warp,
// misaligned, out of bounds) and the forms that must fail to load.
#include <bit>
#include <cmath>
#include <functional>
#include <random>

#include "ptx/half.h"
#include "ptx/snippet_util.h"

namespace pvgpu::ptx {
namespace {

using testing::F2U;
using testing::RunSnippet;
using testing::U2F;

struct RC {
  int row, col;
};
// (lane, element index within the lane's fragment) -> matrix position, as the ISA's tables say.
using FragMap = std::function<RC(int lane, int i)>;

enum class T { kF16, kBF16, kTF32, kF32, kF64, kE4M3, kE5M2, kS8, kU8, kS4, kU4, kB1, kS32 };
int Bits(T t) {
  switch (t) {
    case T::kF16:
    case T::kBF16:
      return 16;
    case T::kF64:
      return 64;
    case T::kE4M3:
    case T::kE5M2:
    case T::kS8:
    case T::kU8:
      return 8;
    case T::kS4:
    case T::kU4:
      return 4;
    case T::kB1:
      return 1;
    default:
      return 32;
  }
}

// A random element value (exactly representable) and its bit pattern.
struct Val {
  double v;
  uint64_t bits;
};
Val RandomVal(T t, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(-64, 64);
  const int x = d(rng);
  switch (t) {
    case T::kF16: {
      uint16_t h = FloatToHalf(static_cast<float>(x) / 16.0f);
      return {HalfToFloat(h), h};
    }
    case T::kBF16: {
      uint16_t h = FloatToBf16(static_cast<float>(x) / 8.0f);
      return {Bf16ToFloat(h), h};
    }
    case T::kTF32: {
      // Low 13 bits set: mma must ignore them.
      const float f = static_cast<float>(x) / 4.0f + 1.0f / 1024.0f;
      const uint32_t u = F2U(f) | 0x1FFFu;
      return {U2F(u & 0xFFFFE000u), u};
    }
    case T::kF32:
      return {static_cast<double>(x) * 0.75, F2U(static_cast<float>(x) * 0.75f)};
    case T::kF64: {
      const double v = static_cast<double>(x) / 3.0;
      return {v, std::bit_cast<uint64_t>(v)};
    }
    case T::kE4M3:
    case T::kE5M2: {
      // Any finite byte; the value assembled as an f32 bit pattern (normal) or scaled (subnormal).
      const bool e4 = t == T::kE4M3;
      for (;;) {
        const uint32_t b = std::uniform_int_distribution<uint32_t>(0, 255)(rng);
        const uint32_t e = e4 ? (b >> 3) & 15 : (b >> 2) & 31, m = e4 ? b & 7 : b & 3;
        if (e4 ? (e == 15 && m == 7) : e == 31) continue;
        const int bias = e4 ? 7 : 15, mbits = e4 ? 3 : 2;
        float f = e == 0 ? std::ldexp(static_cast<float>(m), 1 - bias - mbits)
                         : U2F(((e - bias + 127) << 23) | (m << (23 - mbits)));
        if (b & 0x80) f = -f;
        return {f, b};
      }
    }
    case T::kS8: {
      const int v = std::uniform_int_distribution<int>(-128, 127)(rng);
      return {static_cast<double>(v), static_cast<uint8_t>(v)};
    }
    case T::kU8: {
      const int v = std::uniform_int_distribution<int>(0, 255)(rng);
      return {static_cast<double>(v), static_cast<uint64_t>(v)};
    }
    case T::kS4: {
      const int v = std::uniform_int_distribution<int>(-8, 7)(rng);
      return {static_cast<double>(v), static_cast<uint64_t>(v & 15)};
    }
    case T::kU4: {
      const int v = std::uniform_int_distribution<int>(0, 15)(rng);
      return {static_cast<double>(v), static_cast<uint64_t>(v)};
    }
    case T::kB1: {
      const int v = std::uniform_int_distribution<int>(0, 1)(rng);
      return {static_cast<double>(v), static_cast<uint64_t>(v)};
    }
    default: {
      const int v = std::uniform_int_distribution<int>(-100000, 100000)(rng);
      return {static_cast<double>(v), static_cast<uint32_t>(v)};
    }
  }
}

struct MmaForm {
  std::string inst;  // the instruction, operands written by the harness
  int M, N, K;
  T a, b, c, d;
  int na, nb, nc, nd;  // registers per fragment
  FragMap amap, bmap, cmap;
  enum Op { kMul, kXor, kAnd } op = kMul;
  bool sat = false;
  // m8n8k4 f16: four products, stacked block-diagonally (the maps add 8 * computation to rows
  // of A and C and columns of B and C); C's off-diagonal blocks are not in any fragment.
  bool block_diag = false;
};

// Fragment registers of the harness kernels: %r1... (%x0... for 64-bit fragments) hold the
// inputs, %r20... (%x16...) receive D.
std::string FragReg(bool wide, int i) { return (wide ? "%x" : "%r") + std::to_string(i); }
std::string FragList(bool wide, int first, int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + FragReg(wide, first + i);
  return s + "}";
}
int FirstIn(bool wide) { return wide ? 0 : 1; }
int FirstD(bool wide) { return wide ? 16 : 20; }

// Kernel body: each lane loads `in_regs` registers from its `words` words of the input, runs
// `inst` (a complete instruction), and stores its `nd` D registers at the same place of the
// output.
std::string FragmentKernel(const std::string& inst, int in_regs, int nd, int words, bool wide) {
  const std::string ldt = wide ? "b64" : "b32";
  const int rb = wide ? 8 : 4, first = FirstIn(wide), d0 = FirstD(wide);
  std::string body = std::string(wide ? "  .reg .f64 %x<20>;\n" : "") +
                     "  mul.wide.u32 %rd2, %r0, " + std::to_string(words * 4) +
                     ";\n  add.s64 %rd3, %rd1, %rd2;\n  add.s64 %rd4, %rd0, %rd2;\n";
  for (int i = 0; i < in_regs; ++i)
    body += "  ld.global." + ldt + " " + FragReg(wide, first + i) + ", [%rd3+" +
            std::to_string(i * rb) + "];\n";
  body += "  " + inst + "\n";
  for (int i = 0; i < nd; ++i)
    body += "  st.global." + ldt + " [%rd4+" + std::to_string(i * rb) + "], " +
            FragReg(wide, d0 + i) + ";\n";
  return body;
}

// Runs one mma on random matrices: the host packs each lane's fragment registers from the ISA
// maps, the kernel loads them, runs the instruction, stores D; the host checks D.
void CheckMma(const MmaForm& f, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  const bool wide = f.a == T::kF64;
  std::vector<double> A(f.M * f.K), B(f.K * f.N), C(f.M * f.N);
  // Per lane: na + nb + nc input registers; 64-bit registers take two words.
  const int word_per_reg = wide ? 2 : 1;
  const int in_regs = f.na + f.nb + f.nc;
  const int words = std::max(in_regs, f.nd) * word_per_reg;
  std::vector<uint64_t> regs(32 * std::max(in_regs, f.nd), 0);
  auto pack = [&](T t, int base, int nregs, const FragMap& map, std::vector<double>& mat,
                  int cols) {
    const int bits = Bits(t), per = t == T::kF64 ? 1 : 32 / bits;
    std::vector<bool> seen(mat.size(), false);
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < nregs * per; ++i) {
        RC p = map(lane, i);
        ASSERT_FALSE(seen[p.row * cols + p.col]) << f.inst << " lane " << lane << " i " << i;
        seen[p.row * cols + p.col] = true;
        Val v = RandomVal(t, rng);
        if (f.sat && t == T::kS32)
          v = {v.v * 20000, static_cast<uint32_t>(static_cast<int32_t>(v.v * 20000))};
        mat[p.row * cols + p.col] = v.v;
        regs[lane * (words / word_per_reg) + base + i / per] |= v.bits << ((i % per) * bits);
      }
    }
    if (f.block_diag && &mat == &C) return;
    for (bool s : seen) ASSERT_TRUE(s) << f.inst << ": the map misses an element";
  };
  pack(f.a, 0, f.na, f.amap, A, f.K);
  pack(f.b, f.na, f.nb, f.bmap, B, f.N);
  pack(f.c, f.na + f.nb, f.nc, f.cmap, C, f.N);
  std::vector<uint32_t> in;
  for (uint64_t r : regs) {
    in.push_back(static_cast<uint32_t>(r));
    if (wide) in.push_back(static_cast<uint32_t>(r >> 32));
  }
  const bool w = wide;
  const int first = FirstIn(w);
  const std::string body = FragmentKernel(
      f.inst + " " + FragList(w, FirstD(w), f.nd) + ", " + FragList(w, first, f.na) + ", " +
          FragList(w, first + f.na, f.nb) + ", " + FragList(w, first + f.na + f.nb, f.nc) + ";",
      in_regs, f.nd, words, w);
  auto r = RunSnippet(body, in, 32 * words, 32);
  ASSERT_TRUE(r.status.ok()) << f.inst << ": " << r.status.ToString();
  // Host reference: one accumulation per output element in k order.
  const bool is_int = f.a >= T::kS8;
  const int dbits = Bits(f.d), dper = f.d == T::kF64 ? 1 : 32 / dbits;
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < f.nd * dper; ++i) {
      RC p = f.cmap(lane, i);
      double want;
      if (is_int) {
        int64_t acc = static_cast<int64_t>(C[p.row * f.N + p.col]);
        for (int k = 0; k < f.K; ++k) {
          auto a = static_cast<int64_t>(A[p.row * f.K + k]),
               b = static_cast<int64_t>(B[k * f.N + p.col]);
          acc += f.op == MmaForm::kXor ? (a ^ b) : f.op == MmaForm::kAnd ? (a & b) : a * b;
        }
        if (f.sat) acc = std::clamp<int64_t>(acc, INT32_MIN, INT32_MAX);
        want = static_cast<int32_t>(static_cast<uint32_t>(acc));
      } else if (wide) {
        double acc = C[p.row * f.N + p.col];
        for (int k = 0; k < f.K; ++k) acc = std::fma(A[p.row * f.K + k], B[k * f.N + p.col], acc);
        want = acc;
      } else {
        float acc = static_cast<float>(C[p.row * f.N + p.col]);
        for (int k = 0; k < f.K; ++k)
          acc = std::fma(static_cast<float>(A[p.row * f.K + k]),
                         static_cast<float>(B[k * f.N + p.col]), acc);
        want = f.d == T::kF16 ? HalfToFloat(FloatToHalf(acc)) : acc;
      }
      const size_t w = static_cast<size_t>(lane * words + (i / dper) * word_per_reg);
      double got;
      if (wide) {
        got = std::bit_cast<double>(uint64_t{r.out[w]} | (uint64_t{r.out[w + 1]} << 32));
      } else if (f.d == T::kF16) {
        got = HalfToFloat(static_cast<uint16_t>(r.out[w] >> (16 * (i % 2))));
      } else if (f.d == T::kF32) {
        got = U2F(r.out[w]);
      } else {
        got = static_cast<int32_t>(r.out[w]);
      }
      ASSERT_EQ(got, want) << f.inst << " lane " << lane << " element " << i << " (" << p.row << ","
                           << p.col << ")";
    }
  }
}

int G(int lane) { return lane >> 2; }
int Tq(int lane) { return lane % 4; }

// C/D of every m16n8 shape, and of the m8n8 ones (i < 2 only).
RC MapC(int lane, int i) { return {i < 2 ? G(lane) : G(lane) + 8, Tq(lane) * 2 + (i & 1)}; }

TEST(MmaTest, F16M16N8K16) {
  FragMap a = [](int l, int i) {
    return RC{(i < 2 || (i >= 4 && i < 6)) ? G(l) : G(l) + 8,
              Tq(l) * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
  };
  FragMap b = [](int l, int i) { return RC{Tq(l) * 2 + (i & 1) + (i >= 2 ? 8 : 0), G(l)}; };
  CheckMma({"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 16, 8, 16, T::kF16, T::kF16,
            T::kF32, T::kF32, 4, 2, 4, 4, a, b, MapC});
  CheckMma({"mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 16, 8, 16, T::kF16, T::kF16,
            T::kF16, T::kF16, 4, 2, 2, 2, a, b, MapC});
  CheckMma({"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16", 16, 8, 16, T::kF16, T::kF16,
            T::kF16, T::kF32, 4, 2, 2, 4, a, b, MapC});
  CheckMma({"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 16, 8, 16, T::kBF16, T::kBF16,
            T::kF32, T::kF32, 4, 2, 4, 4, a, b, MapC});
}

TEST(MmaTest, F16M16N8K8) {
  FragMap a = [](int l, int i) { return RC{i < 2 ? G(l) : G(l) + 8, Tq(l) * 2 + (i & 1)}; };
  FragMap b = [](int l, int i) { return RC{Tq(l) * 2 + i, G(l)}; };
  CheckMma({"mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f32", 16, 8, 8, T::kF16, T::kF16, T::kF32,
            T::kF16, 2, 1, 4, 2, a, b, MapC});
  CheckMma({"mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32", 16, 8, 8, T::kBF16, T::kBF16,
            T::kF32, T::kF32, 2, 1, 4, 4, a, b, MapC});
}

TEST(MmaTest, Tf32) {
  FragMap a8 = [](int l, int i) {
    return RC{(i == 0 || i == 2) ? G(l) : G(l) + 8, i < 2 ? Tq(l) : Tq(l) + 4};
  };
  FragMap b8 = [](int l, int i) { return RC{i == 0 ? Tq(l) : Tq(l) + 4, G(l)}; };
  CheckMma({"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 16, 8, 8, T::kTF32, T::kTF32,
            T::kF32, T::kF32, 4, 2, 4, 4, a8, b8, MapC});
  FragMap a4 = [](int l, int i) { return RC{i == 0 ? G(l) : G(l) + 8, Tq(l)}; };
  FragMap b4 = [](int l, int) { return RC{Tq(l), G(l)}; };
  CheckMma({"mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32", 16, 8, 4, T::kTF32, T::kTF32,
            T::kF32, T::kF32, 2, 1, 4, 4, a4, b4, MapC});
}

TEST(MmaTest, F64M8N8K4) {
  FragMap a = [](int l, int) { return RC{G(l), Tq(l)}; };
  FragMap b = [](int l, int) { return RC{Tq(l), G(l)}; };
  CheckMma({"mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 8, 8, 4, T::kF64, T::kF64, T::kF64,
            T::kF64, 1, 1, 2, 2, a, b, MapC});
  // The sm_90 shapes.
  FragMap a4 = [](int l, int i) { return RC{i == 0 ? G(l) : G(l) + 8, Tq(l)}; };
  CheckMma({"mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64.rn", 16, 8, 4, T::kF64, T::kF64,
            T::kF64, T::kF64, 2, 1, 4, 4, a4, b, MapC});
  FragMap a8 = [](int l, int i) {
    return RC{(i == 0 || i == 2) ? G(l) : G(l) + 8, i < 2 ? Tq(l) : Tq(l) + 4};
  };
  FragMap b8 = [](int l, int i) { return RC{i == 0 ? Tq(l) : Tq(l) + 4, G(l)}; };
  CheckMma({"mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64", 16, 8, 8, T::kF64, T::kF64, T::kF64,
            T::kF64, 4, 2, 4, 4, a8, b8, MapC});
  FragMap a16 = [](int l, int i) {
    return RC{i % 2 == 0 ? G(l) : G(l) + 8, i % 2 == 0 ? i * 2 + Tq(l) : i * 2 - 2 + Tq(l)};
  };
  FragMap b16 = [](int l, int i) { return RC{Tq(l) + i * 4, G(l)}; };
  CheckMma({"mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64", 16, 8, 16, T::kF64, T::kF64,
            T::kF64, T::kF64, 8, 4, 4, 4, a16, b16, MapC});
}

TEST(MmaTest, Int8) {
  FragMap a32 = [](int l, int i) {
    return RC{(i < 4 || (i >= 8 && i < 12)) ? G(l) : G(l) + 8,
              Tq(l) * 4 + (i & 3) + (i >= 8 ? 16 : 0)};
  };
  FragMap b32 = [](int l, int i) { return RC{Tq(l) * 4 + (i & 3) + (i >= 4 ? 16 : 0), G(l)}; };
  MmaForm f{"mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32",
            16,
            8,
            32,
            T::kS8,
            T::kU8,
            T::kS32,
            T::kS32,
            4,
            2,
            4,
            4,
            a32,
            b32,
            MapC};
  f.sat = true;  // C values near the s32 limits: some outputs saturate
  CheckMma(f);
  CheckMma({"mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32", 16, 8, 32, T::kU8, T::kS8, T::kS32,
            T::kS32, 4, 2, 4, 4, a32, b32, MapC});
  FragMap a16 = [](int l, int i) { return RC{i < 4 ? G(l) : G(l) + 8, Tq(l) * 4 + (i & 3)}; };
  FragMap b16 = [](int l, int i) { return RC{Tq(l) * 4 + i, G(l)}; };
  CheckMma({"mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32", 16, 8, 16, T::kS8, T::kS8, T::kS32,
            T::kS32, 2, 1, 4, 4, a16, b16, MapC});
  FragMap a8 = [](int l, int i) { return RC{G(l), Tq(l) * 4 + i}; };
  FragMap b8 = [](int l, int i) { return RC{Tq(l) * 4 + i, G(l)}; };
  CheckMma({"mma.sync.aligned.m8n8k16.row.col.s32.u8.u8.s32", 8, 8, 16, T::kU8, T::kU8, T::kS32,
            T::kS32, 1, 1, 2, 2, a8, b8, MapC});
}

TEST(MmaTest, Fp8) {
  FragMap a32 = [](int l, int i) {
    return RC{(i < 4 || (i >= 8 && i < 12)) ? G(l) : G(l) + 8,
              Tq(l) * 4 + (i & 3) + (i >= 8 ? 16 : 0)};
  };
  FragMap b32 = [](int l, int i) { return RC{Tq(l) * 4 + (i & 3) + (i >= 4 ? 16 : 0), G(l)}; };
  CheckMma({"mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32", 16, 8, 32, T::kE4M3, T::kE5M2,
            T::kF32, T::kF32, 4, 2, 4, 4, a32, b32, MapC});
  CheckMma({"mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32", 16, 8, 32, T::kE5M2, T::kE4M3,
            T::kF32, T::kF32, 4, 2, 4, 4, a32, b32, MapC});
  // m16n8k16 with f16 accumulators (sm_89, PTX 8.7): the s8 m16n8k16 layout.
  FragMap a16 = [](int l, int i) { return RC{i < 4 ? G(l) : G(l) + 8, Tq(l) * 4 + (i & 3)}; };
  FragMap b16 = [](int l, int i) { return RC{Tq(l) * 4 + i, G(l)}; };
  CheckMma({"mma.sync.aligned.m16n8k16.row.col.f16.e4m3.e4m3.f16", 16, 8, 16, T::kE4M3, T::kE4M3,
            T::kF16, T::kF16, 2, 1, 2, 2, a16, b16, MapC});
}

TEST(MmaTest, Int4AndB1) {
  FragMap a32 = [](int l, int i) { return RC{G(l), Tq(l) * 8 + i}; };
  FragMap b32 = [](int l, int i) { return RC{Tq(l) * 8 + i, G(l)}; };
  CheckMma({"mma.sync.aligned.m8n8k32.row.col.s32.s4.u4.s32", 8, 8, 32, T::kS4, T::kU4, T::kS32,
            T::kS32, 1, 1, 2, 2, a32, b32, MapC});
  FragMap a64 = [](int l, int i) {
    return RC{(i < 8 || (i >= 16 && i < 24)) ? G(l) : G(l) + 8,
              Tq(l) * 8 + (i & 7) + (i >= 16 ? 32 : 0)};
  };
  FragMap b64 = [](int l, int i) { return RC{Tq(l) * 8 + (i & 7) + (i >= 8 ? 32 : 0), G(l)}; };
  CheckMma({"mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32", 16, 8, 64, T::kS4, T::kS4, T::kS32,
            T::kS32, 4, 2, 4, 4, a64, b64, MapC});
  FragMap a128 = [](int l, int i) { return RC{G(l), Tq(l) * 32 + i}; };
  FragMap b128 = [](int l, int i) { return RC{Tq(l) * 32 + i, G(l)}; };
  MmaForm x{"mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.xor.popc",
            8,
            8,
            128,
            T::kB1,
            T::kB1,
            T::kS32,
            T::kS32,
            1,
            1,
            2,
            2,
            a128,
            b128,
            MapC};
  x.op = MmaForm::kXor;
  CheckMma(x);
  FragMap a256 = [](int l, int i) {
    return RC{(i < 32 || (i >= 64 && i < 96)) ? G(l) : G(l) + 8,
              Tq(l) * 32 + (i & 31) + (i >= 64 ? 128 : 0)};
  };
  FragMap b256 = [](int l, int i) { return RC{Tq(l) * 32 + (i & 31) + (i >= 32 ? 128 : 0), G(l)}; };
  MmaForm y{"mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc",
            16,
            8,
            256,
            T::kB1,
            T::kB1,
            T::kS32,
            T::kS32,
            4,
            2,
            4,
            4,
            a256,
            b256,
            MapC};
  y.op = MmaForm::kAnd;
  CheckMma(y);
}

TEST(MmaTest, F16M8N8K4FourProducts) {
  auto q8 = [](int l) { return 8 * ((l % 16) / 4); };  // computation offset in the stack
  auto hi = [](int l) { return l < 16 ? 0 : 4; };
  FragMap a_row = [=](int l, int i) { return RC{q8(l) + l % 4 + hi(l), i}; };
  FragMap a_col = [=](int l, int i) { return RC{q8(l) + i % 4 + hi(l), l % 4}; };
  FragMap b_row = [=](int l, int i) { return RC{l % 4, q8(l) + i + hi(l)}; };
  FragMap b_col = [=](int l, int i) { return RC{i, q8(l) + l % 4 + hi(l)}; };
  FragMap c16 = [=](int l, int i) { return RC{q8(l) + l % 4 + hi(l), q8(l) + i}; };
  FragMap c32 = [=](int l, int i) {
    const int x = (l & 1) + (i & 2);
    return RC{q8(l) + x + hi(l), q8(l) + (i & 4) + (l & 2) + (i & 1)};
  };
  struct Case {
    const char* layouts;
    FragMap a, b;
  } cases[] = {{"row.col", a_row, b_col},
               {"row.row", a_row, b_row},
               {"col.row", a_col, b_row},
               {"col.col", a_col, b_col}};
  for (const auto& k : cases) {
    const std::string p = std::string("mma.sync.aligned.m8n8k4.") + k.layouts;
    MmaForm f32{p + ".f32.f16.f16.f32",
                32,
                32,
                4,
                T::kF16,
                T::kF16,
                T::kF32,
                T::kF32,
                2,
                2,
                8,
                8,
                k.a,
                k.b,
                c32};
    f32.block_diag = true;
    CheckMma(f32);
    MmaForm f16{p + ".f16.f16.f16.f16",
                32,
                32,
                4,
                T::kF16,
                T::kF16,
                T::kF16,
                T::kF16,
                2,
                2,
                4,
                4,
                k.a,
                k.b,
                c16};
    f16.block_diag = true;
    CheckMma(f16);
  }
}

TEST(MmaTest, PartialWarpFaultsAndBadFormsFailToLoad) {
  auto r = RunSnippet(R"(
  mov.b32 %r1, 0;
  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r1, %r1, %r1, %r1}, {%r1, %r1}, {%f0, %f1, %f2, %f3};
  )",
                      {}, 1, 16);
  EXPECT_EQ(r.status.code(), Code::kIllegalInstruction) << r.status.ToString();
  EXPECT_NE(r.status.message().find("warp-collective"), std::string::npos) << r.status.ToString();
  // A divergent guard leaves half the warp out.
  r = RunSnippet(R"(
  mov.b32 %r1, 0;
  setp.lt.u32 %p1, %r0, 8;
  @%p1 ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r2}, [%r1];
  )",
                 {}, 1, 32, ".shared .align 16 .b8 s[128];");
  EXPECT_EQ(r.status.code(), Code::kIllegalInstruction) << r.status.ToString();
  for (const char* bad : {
           "mma.sync.aligned.m16n8k16.row.row.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r1, %r1, "
           "%r1, %r1}, {%r1, %r1}, {%f0, %f1, %f2, %f3};",
           "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r1, %r1}, "
           "{%r1, %r1}, {%f0, %f1, %f2, %f3};",
           "mma.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r1, %r1, "
           "%r1, %r1}, {%r1, %r1}, {%f0, %f1, %f2, %f3};",
           "mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32 {%r2, %r3}, {%r1}, {%r1}, {%r2, %r3};",
       }) {
    r = RunSnippet(bad, {}, 1, 32);
    EXPECT_FALSE(r.status.ok()) << bad;
  }
}

// ---------------------------------------------------------------------------------------------
// mma.sp: A is structured sparse. The test draws which elements of each chunk of A are kept,
// packs the kept ones into the lanes' A registers from the ISA's table of each shape, writes the
// metadata into the lanes the selector names (every other lane gets random bits, which must be
// ignored), and checks D against a host product over the kept elements in storage order.

// Where element i of lane l's A registers belongs, per the ISA's table: it is kept element
// `pos` of the run of dense columns that starts at `firstcol` in row `row`.
struct SpA {
  int row, firstcol, pos;
};
using SpAMap = std::function<SpA(int lane, int i)>;

struct SpForm {
  std::string inst;  // after "mma.sp" / "mma.sp::ordered_metadata", without the operands
  int K;
  T a, b, acc;       // C and D are of one type
  int na, nb, nacc;  // registers per fragment
  SpAMap amap;
  FragMap bmap;
  int width, kept;  // chunk width and elements kept per chunk: 4/2, 2/1 (tf32), 8/4 (s4/u4)
  bool sat = false;
};

// The metadata lanes of each group of four: a row's chunks come in pieces of four (16 bits of
// metadata) and each piece has its own lane.
int SpMetaLanes(const SpForm& f) { return f.K / f.width / 4; }

void CheckMmaSp(const SpForm& f, int selector, bool ordered, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  const int M = 16, N = 8, chunks = f.K / f.width;
  const std::string inst = (ordered ? "mma.sp::ordered_metadata" : "mma.sp") + f.inst;
  // Kept element s of chunk ch of row i: its column in the chunk and its value.
  auto at = [&](int i, int ch, int s) { return (i * chunks + ch) * f.kept + s; };
  std::vector<int> col(M * chunks * f.kept);
  std::vector<Val> val(M * chunks * f.kept);
  std::vector<uint32_t> field(M * chunks);
  int reversed = 0;
  for (int i = 0; i < M; ++i) {
    for (int ch = 0; ch < chunks; ++ch) {
      uint32_t& fd = field[i * chunks + ch];
      if (f.kept == 1) {
        // tf32, 1:2: 0b0100 keeps element 0 of the chunk, 0b1110 element 1.
        const int e = static_cast<int>(rng() % 2);
        fd = e ? 0b1110 : 0b0100;
        col[at(i, ch, 0)] = e;
      } else {
        // Two different 2-bit indices (of elements for 2:4, of element pairs for 4:8), the
        // one in bits 0-1 for the first kept element (pair); sorted for ::ordered_metadata.
        int x = static_cast<int>(rng() % 4), y = (x + 1 + static_cast<int>(rng() % 3)) % 4;
        if (ordered && x > y) std::swap(x, y);
        reversed += x > y;
        fd = static_cast<uint32_t>(x | (y << 2));
        for (int s = 0; s < f.kept; ++s) {
          const int idx = s < f.kept / 2 ? x : y;
          col[at(i, ch, s)] = f.kept == 2 ? idx : idx * 2 + s % 2;
        }
      }
      for (int s = 0; s < f.kept; ++s) val[at(i, ch, s)] = RandomVal(f.a, rng);
    }
  }
  if (!ordered && f.kept > 1) {
    ASSERT_GT(reversed, 0) << "no unsorted metadata drawn";
  }
  const int in_regs = f.na + f.nb + f.nacc + 1, words = in_regs;
  const int meta_reg = f.na + f.nb + f.nacc;
  std::vector<uint32_t> regs(32 * words, 0);
  for (int lane = 0; lane < 32; ++lane) regs[lane * words + meta_reg] = rng();
  // A: the kept elements.
  const int abits = Bits(f.a), aper = 32 / abits;
  std::vector<bool> seen(val.size(), false);
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < f.na * aper; ++i) {
      const SpA p = f.amap(lane, i);
      const int idx = at(p.row, p.firstcol / f.width + p.pos / f.kept, p.pos % f.kept);
      ASSERT_FALSE(seen[idx]) << inst << " lane " << lane << " i " << i;
      seen[idx] = true;
      regs[lane * words + i / aper] |= static_cast<uint32_t>(val[idx].bits << ((i % aper) * abits));
    }
  }
  for (bool x : seen) ASSERT_TRUE(x) << inst << ": the A map misses an element";
  // B (dense) and C.
  std::vector<double> B(f.K * N), C(M * N);
  auto pack = [&](T t, int base, int nregs, const FragMap& map, std::vector<double>& mat) {
    const int bits = Bits(t), per = 32 / bits;
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < nregs * per; ++i) {
        const RC p = map(lane, i);
        Val v = RandomVal(t, rng);
        if (f.sat && t == T::kS32)
          v = {v.v * 20000, static_cast<uint32_t>(static_cast<int32_t>(v.v * 20000))};
        mat[p.row * N + p.col] = v.v;
        regs[lane * words + base + i / per] |= static_cast<uint32_t>(v.bits << ((i % per) * bits));
      }
    }
  };
  pack(f.b, f.na, f.nb, f.bmap, B);
  pack(f.acc, f.na + f.nb, f.nacc, MapC, C);
  // Metadata: chunk ch of row i is described by lane 4 * (i % 8) + selector * lanes + ch / 4
  // (`lanes` per group), bits 16 * (i / 8) + 4 * (ch % 4) up.
  const int lanes = SpMetaLanes(f);
  for (int i = 0; i < M; ++i) {
    for (int ch = 0; ch < chunks; ++ch) {
      const int lane = 4 * (i % 8) + selector * lanes + ch / 4;
      const int bit = 16 * (i / 8) + 4 * (ch % 4);
      uint32_t& word = regs[lane * words + meta_reg];
      word = (word & ~(15u << bit)) | (field[i * chunks + ch] << bit);
    }
  }
  const int first = FirstIn(false);
  const std::string body =
      FragmentKernel(inst + " " + FragList(false, FirstD(false), f.nacc) + ", " +
                         FragList(false, first, f.na) + ", " + FragList(false, first + f.na, f.nb) +
                         ", " + FragList(false, first + f.na + f.nb, f.nacc) + ", " +
                         FragReg(false, first + meta_reg) + ", " + std::to_string(selector) + ";",
                     in_regs, f.nacc, words, false);
  auto r = RunSnippet(body, regs, 32 * words, 32);
  ASSERT_TRUE(r.status.ok()) << inst << ": " << r.status.ToString();
  const bool is_int = f.acc == T::kS32;
  const int dper = 32 / Bits(f.acc);
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < f.nacc * dper; ++i) {
      const RC p = MapC(lane, i);
      double want;
      if (is_int) {
        auto acc = static_cast<int64_t>(C[p.row * N + p.col]);
        for (int ch = 0; ch < chunks; ++ch)
          for (int s = 0; s < f.kept; ++s)
            acc += static_cast<int64_t>(val[at(p.row, ch, s)].v) *
                   static_cast<int64_t>(B[(ch * f.width + col[at(p.row, ch, s)]) * N + p.col]);
        if (f.sat) acc = std::clamp<int64_t>(acc, INT32_MIN, INT32_MAX);
        want = static_cast<int32_t>(static_cast<uint32_t>(acc));
      } else {
        auto acc = static_cast<float>(C[p.row * N + p.col]);
        for (int ch = 0; ch < chunks; ++ch)
          for (int s = 0; s < f.kept; ++s)
            acc = std::fma(
                static_cast<float>(val[at(p.row, ch, s)].v),
                static_cast<float>(B[(ch * f.width + col[at(p.row, ch, s)]) * N + p.col]), acc);
        want = f.acc == T::kF16 ? HalfToFloat(FloatToHalf(acc)) : acc;
      }
      const uint32_t word = r.out[lane * words + i / dper];
      double got = static_cast<int32_t>(word);
      if (f.acc == T::kF16) got = HalfToFloat(static_cast<uint16_t>(word >> (16 * (i % 2))));
      if (f.acc == T::kF32) got = U2F(word);
      ASSERT_EQ(got, want) << inst << " selector " << selector << " lane " << lane << " element "
                           << i << " (" << p.row << "," << p.col << ")";
    }
  }
}

// Every selector the ISA defines for the form, with .sp (indices in either order) and
// ::ordered_metadata (sorted indices).
void CheckMmaSpAll(const SpForm& f) {
  for (int selector = 0; selector < 4 / SpMetaLanes(f); ++selector) {
    CheckMmaSp(f, selector, false, 10 + selector);
    CheckMmaSp(f, selector, true, 20 + selector);
  }
}

// The A tables of the ISA's sparse fragment sections.
SpA SpA16x16F16(int l, int i) { return {i < 2 ? G(l) : G(l) + 8, Tq(l) * 4, i & 1}; }
SpA SpA16x32F16(int l, int i) {
  return {(i < 2 || (i >= 4 && i < 6)) ? G(l) : G(l) + 8, Tq(l) * 4 + (i >= 4 ? 16 : 0), i & 1};
}
SpA SpA16x32I8(int l, int i) { return {i < 4 ? G(l) : G(l) + 8, Tq(l) * 8, i & 3}; }
SpA SpA16x64I8(int l, int i) {
  return {(i < 4 || (i >= 8 && i < 12)) ? G(l) : G(l) + 8, Tq(l) * 8 + (i >= 8 ? 32 : 0), i & 3};
}
// B as in the dense mma.sync tables of the same K.
RC SpB16F16(int l, int i) { return {Tq(l) * 2 + (i & 1) + (i >= 2 ? 8 : 0), G(l)}; }
RC SpB32F16(int l, int i) { return {Tq(l) * 2 + (i & 1) + 8 * (i / 2), G(l)}; }
RC SpB32I8(int l, int i) { return {Tq(l) * 4 + (i & 3) + (i >= 4 ? 16 : 0), G(l)}; }
RC SpB64I8(int l, int i) { return {Tq(l) * 4 + (i & 3) + 16 * (i / 4), G(l)}; }

TEST(MmaSpTest, F16AndBf16) {
  CheckMmaSpAll({".sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 16, T::kF16, T::kF16, T::kF32, 2,
                 2, 4, SpA16x16F16, SpB16F16, 4, 2});
  CheckMmaSpAll({".sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 16, T::kF16, T::kF16, T::kF16, 2,
                 2, 2, SpA16x16F16, SpB16F16, 4, 2});
  CheckMmaSpAll({".sync.aligned.m16n8k32.row.col.f32.f16.f16.f32", 32, T::kF16, T::kF16, T::kF32, 4,
                 4, 4, SpA16x32F16, SpB32F16, 4, 2});
  CheckMmaSpAll({".sync.aligned.m16n8k32.row.col.f16.f16.f16.f16", 32, T::kF16, T::kF16, T::kF16, 4,
                 4, 2, SpA16x32F16, SpB32F16, 4, 2});
  CheckMmaSpAll({".sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 16, T::kBF16, T::kBF16,
                 T::kF32, 2, 2, 4, SpA16x16F16, SpB16F16, 4, 2});
  CheckMmaSpAll({".sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32", 32, T::kBF16, T::kBF16,
                 T::kF32, 4, 4, 4, SpA16x32F16, SpB32F16, 4, 2});
}

TEST(MmaSpTest, Tf32) {
  SpAMap a8 = [](int l, int i) { return SpA{i == 0 ? G(l) : G(l) + 8, Tq(l) * 2, 0}; };
  FragMap b8 = [](int l, int i) { return RC{i == 0 ? Tq(l) : Tq(l) + 4, G(l)}; };
  CheckMmaSpAll({".sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 8, T::kTF32, T::kTF32, T::kF32,
                 2, 2, 4, a8, b8, 2, 1});
  SpAMap a16 = [](int l, int i) {
    return SpA{(i == 0 || i == 2) ? G(l) : G(l) + 8, Tq(l) * 2 + (i >= 2 ? 8 : 0), 0};
  };
  FragMap b16 = [](int l, int i) { return RC{Tq(l) + 4 * i, G(l)}; };
  CheckMmaSpAll({".sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32", 16, T::kTF32, T::kTF32,
                 T::kF32, 4, 4, 4, a16, b16, 2, 1});
}

TEST(MmaSpTest, Int8) {
  SpForm k32{".sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32",
             32,
             T::kS8,
             T::kU8,
             T::kS32,
             2,
             2,
             4,
             SpA16x32I8,
             SpB32I8,
             4,
             2};
  k32.sat = true;  // C near the s32 limits: some outputs saturate
  CheckMmaSpAll(k32);
  CheckMmaSpAll({".sync.aligned.m16n8k32.row.col.s32.u8.u8.s32", 32, T::kU8, T::kU8, T::kS32, 2, 2,
                 4, SpA16x32I8, SpB32I8, 4, 2});
  CheckMmaSpAll({".sync.aligned.m16n8k64.row.col.s32.u8.s8.s32", 64, T::kU8, T::kS8, T::kS32, 4, 4,
                 4, SpA16x64I8, SpB64I8, 4, 2});
  SpForm k64{".sync.aligned.m16n8k64.row.col.satfinite.s32.s8.s8.s32",
             64,
             T::kS8,
             T::kS8,
             T::kS32,
             4,
             4,
             4,
             SpA16x64I8,
             SpB64I8,
             4,
             2};
  k64.sat = true;
  CheckMmaSpAll(k64);
}

TEST(MmaSpTest, Int4) {
  // 4:8 in pairs: each chunk of eight keeps two pairs of adjacent elements.
  SpAMap a64 = [](int l, int i) { return SpA{i < 8 ? G(l) : G(l) + 8, Tq(l) * 16, i & 7}; };
  FragMap b64 = [](int l, int i) { return RC{Tq(l) * 8 + (i & 7) + (i >= 8 ? 32 : 0), G(l)}; };
  CheckMmaSpAll({".sync.aligned.m16n8k64.row.col.s32.s4.u4.s32", 64, T::kS4, T::kU4, T::kS32, 2, 2,
                 4, a64, b64, 8, 4});
  SpAMap a128 = [](int l, int i) {
    return SpA{(i < 8 || (i >= 16 && i < 24)) ? G(l) : G(l) + 8, Tq(l) * 16 + (i >= 16 ? 64 : 0),
               i & 7};
  };
  FragMap b128 = [](int l, int i) { return RC{Tq(l) * 8 + (i & 7) + 32 * (i / 8), G(l)}; };
  SpForm k128{".sync.aligned.m16n8k128.row.col.satfinite.s32.u4.s4.s32",
              128,
              T::kU4,
              T::kS4,
              T::kS32,
              4,
              4,
              4,
              a128,
              b128,
              8,
              4};
  k128.sat = true;
  CheckMmaSpAll(k128);
}

TEST(MmaSpTest, Fp8) {
  // sm_89: m16n8k64 with f32 accumulators only (the f16 forms and m16n8k32 are sm_120).
  CheckMmaSpAll({".sync.aligned.m16n8k64.row.col.f32.e4m3.e5m2.f32", 64, T::kE4M3, T::kE5M2,
                 T::kF32, 4, 4, 4, SpA16x64I8, SpB64I8, 4, 2});
  CheckMmaSpAll({".sync.aligned.m16n8k64.row.col.f32.e5m2.e4m3.f32", 64, T::kE5M2, T::kE4M3,
                 T::kF32, 4, 4, 4, SpA16x64I8, SpB64I8, 4, 2});
}

TEST(MmaSpTest, PartialWarpFaults) {
  auto r = RunSnippet(R"(
  mov.b32 %r1, 0x44444444;
  mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r1, %r1}, {%r1, %r1}, {%f0, %f1, %f2, %f3}, %r1, 0;
  )",
                      {}, 1, 16);
  EXPECT_EQ(r.status.code(), Code::kIllegalInstruction) << r.status.ToString();
  EXPECT_NE(r.status.message().find("mma.sp"), std::string::npos) << r.status.ToString();
}

// Selectors the ISA leaves undefined for the shape, and forms it does not define, fail to load.
TEST(MmaSpTest, BadSelectorsAndFormsFailToLoad) {
  const std::string f4 = "{%f0, %f1, %f2, %f3}", r2 = "{%r1, %r2}", r4 = "{%r1, %r2, %r3, %r4}";
  struct Bad {
    std::string inst;
    bool selector;  // the message names the selector
  } bad[] = {
      // m16n8k32 f16: a lane pair holds the metadata, so only 0 and 1.
      {"mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 " + f4 + ", " + r4 + ", " + r4 + ", " +
           f4 + ", %r5, 2",
       true},
      // m16n8k64 s8: all four lanes, so only 0.
      {"mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.s32.s8.s8.s32 " + r4 + ", " + r4 +
           ", " + r4 + ", " + r4 + ", %r5, 1",
       true},
      {"mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 " + f4 + ", " + r2 + ", " + r2 + ", " +
           f4 + ", %r5, 4",
       true},
      {"mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 " + f4 + ", " + r2 + ", " + r2 + ", " +
           f4 + ", %r5, %r6",
       true},
      // C and D must be of one type; shapes and types outside the ISA's list.
      {"mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16 " + f4 + ", " + r2 + ", " + r2 + ", " +
           r2 + ", %r5, 0",
       false},
      {"mma.sp.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 " + r4 + ", {%r1}, {%r1}, " + r4 +
           ", %r5, 0",
       false},
      {"mma.sp.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 " + f4 + ", " + r2 + ", " + r2 +
           ", " + f4 + ", %r5, 0",
       false},
      {"mma.sp.sync.aligned.m16n8k128.row.col.s32.b1.b1.s32.xor.popc " + r4 + ", " + r4 + ", " +
           r4 + ", " + r4 + ", %r5, 0",
       false},
      {"mma.sp.sync.aligned.m16n8k16.row.row.f32.f16.f16.f32 " + f4 + ", " + r2 + ", " + r2 + ", " +
           f4 + ", %r5, 0",
       false},
      {"mma.sp.sync.aligned.m16n8k32.row.col.satfinite.f32.bf16.bf16.f32 " + f4 + ", " + r4 + ", " +
           r4 + ", " + f4 + ", %r5, 0",
       false},
      {"mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f32.e3m2.e2m3.f32 " +
           f4 + ", " + r4 + ", " + r4 + ", " + f4 + ", %r5, 0",
       false},
      // The wrong number of A registers, and no selector.
      {"mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 " + f4 + ", " + r2 + ", " + r4 + ", " +
           f4 + ", %r5, 0",
       false},
      {"mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 " + f4 + ", " + r2 + ", " + r2 + ", " +
           f4 + ", %r5",
       false},
  };
  for (const auto& b : bad) {
    testing::Runner runner(testing::SnippetKernel(b.inst + ";"));
    ASSERT_FALSE(runner.ok()) << b.inst;
    if (b.selector) {
      EXPECT_NE(runner.load_status().message().find("sparsity selector"), std::string::npos)
          << runner.load_status().ToString();
    }
  }
  // The largest defined selector of each kind loads.
  for (const std::string& ok : {
           "mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 " + f4 + ", " + r2 + ", " + r2 +
               ", " + f4 + ", %r5, 3",
           "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 " + f4 + ", " + r4 + ", " + r4 +
               ", " + f4 + ", %r5, 0x1",
           "mma.sp.sync.aligned.m16n8k128.row.col.s32.u4.u4.s32.satfinite " + r4 + ", " + r4 +
               ", " + r4 + ", " + r4 + ", %r5, 0",
       }) {
    testing::Runner runner(testing::SnippetKernel(ok + ";"));
    EXPECT_TRUE(runner.ok()) << ok << ": " << runner.load_status().ToString();
  }
}

// ldmatrix of four 8x8 matrices (plain and .trans), stmatrix back (with .trans), movmatrix.
TEST(LdMatrixTest, LoadStoreMove) {
  // Shared: 4 matrices of 8 rows, row q of matrix i at byte (i * 8 + q) * 32 (padded rows).
  // Element (i, q, c) is in[i * 64 + q * 8 + c].
  std::vector<uint32_t> in(4 * 8 * 8);  // 16-bit values, one per word
  const std::string body = R"(
  // Fill shared from in: lane l copies 8 words.
  mul.wide.u32 %rd2, %r0, 32;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r1, s;
  mul.lo.u32 %r2, %r0, 32;
  add.u32 %r3, %r1, %r2;
  ld.global.v4.b32 {%r4, %r5, %r6, %r7}, [%rd3];
  ld.global.v4.b32 {%r8, %r9, %r10, %r11}, [%rd3+16];
  shl.b32 %r5, %r5, 16;
  or.b32 %r4, %r4, %r5;
  shl.b32 %r7, %r7, 16;
  or.b32 %r6, %r6, %r7;
  shl.b32 %r9, %r9, 16;
  or.b32 %r8, %r8, %r9;
  shl.b32 %r11, %r11, 16;
  or.b32 %r10, %r10, %r11;
  st.shared.v4.b32 [%r3], {%r4, %r6, %r8, %r10};
  bar.warp.sync -1;
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r12, %r13, %r14, %r15}, [%r3];
  ldmatrix.sync.aligned.m8n8.x2.trans.shared::cta.b16 {%r16, %r17}, [%r3];
  movmatrix.sync.aligned.m8n8.trans.b16 %r18, %r12;
  // stmatrix.trans of the x4 fragment into a second area at s + 1024.
  add.u32 %r19, %r3, 1024;
  stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%r19], {%r12, %r13, %r14, %r15};
  ld.shared.v4.b32 {%r4, %r5, %r6, %r7}, [%r19];
  mul.wide.u32 %rd2, %r0, 48;
  add.s64 %rd4, %rd0, %rd2;
  st.global.v4.b32 [%rd4], {%r12, %r13, %r14, %r15};
  st.global.v4.b32 [%rd4+16], {%r4, %r5, %r6, %r7};
  st.global.v2.b32 [%rd4+32], {%r16, %r17};
  st.global.b32 [%rd4+40], %r18;
  )";
  for (uint32_t i = 0; i < in.size(); ++i) in[i] = i * 3 + 1;
  auto r = RunSnippet(body, in, 32 * 12, 32, ".shared .align 16 .b8 s[2048];");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  auto el = [&](int i, int q, int c) { return in[i * 64 + q * 8 + c] & 0xFFFF; };
  for (int l = 0; l < 32; ++l) {
    const uint32_t* o = &r.out[l * 12];
    const int g = l / 4, c0 = 2 * (l % 4);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(o[i], el(i, g, c0) | (el(i, g, c0 + 1) << 16)) << "ldmatrix lane " << l;
    for (int i = 0; i < 2; ++i)
      EXPECT_EQ(o[8 + i], el(i, c0, g) | (el(i, c0 + 1, g) << 16)) << "trans lane " << l;
    EXPECT_EQ(o[10], el(0, c0, g) | (el(0, c0 + 1, g) << 16)) << "movmatrix lane " << l;
    // Lane l's row of the stored area: matrix l / 8, row l % 8 holds the transpose.
    const int mi = l / 8, q = l % 8;
    for (int c = 0; c < 8; c += 2) {
      uint32_t word = o[4 + c / 2];
      EXPECT_EQ(word & 0xFFFF, el(mi, c, q)) << "stmatrix lane " << l;
      EXPECT_EQ(word >> 16, el(mi, c + 1, q)) << "stmatrix lane " << l;
    }
  }
}

TEST(LdMatrixTest, MisalignedAndOutOfBoundsRowsFault) {
  auto r = RunSnippet(R"(
  mul.lo.u32 %r1, %r0, 16;
  add.u32 %r1, %r1, 8;
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r2, %r3, %r4, %r5}, [%r1];
  )",
                      {}, 1, 32, "", 1024);
  EXPECT_EQ(r.status.code(), Code::kMisalignedAddress) << r.status.ToString();
  r = RunSnippet(R"(
  mul.lo.u32 %r1, %r0, 32;
  stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r1], {%r2, %r3, %r4, %r5};
  )",
                 {}, 1, 32, "", 512);
  EXPECT_EQ(r.status.code(), Code::kIllegalAddress) << r.status.ToString();
}

// wmma on global memory: C (f32, row-major, stride 24) = A (row-major, stride 16) *
// B (col-major, stride 16) + C, m16n16k16; an element-wise scale of the A fragment in between;
// then D stored column-major.
TEST(WmmaTest, LoadMmaStoreWithStridesAndElementwise) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> d(-16, 16);
  std::vector<uint16_t> a(16 * 16), b(16 * 16);
  std::vector<float> c(16 * 24);
  for (auto& x : a) x = FloatToHalf(d(rng) / 8.0f);
  for (auto& x : b) x = FloatToHalf(d(rng) / 4.0f);
  for (auto& x : c) x = static_cast<float>(d(rng));
  // in: a (128 words), b (128 words), c (384 words).
  std::vector<uint32_t> in;
  for (size_t i = 0; i < a.size(); i += 2) in.push_back(a[i] | (uint32_t{a[i + 1]} << 16));
  for (size_t i = 0; i < b.size(); i += 2) in.push_back(b[i] | (uint32_t{b[i + 1]} << 16));
  for (float x : c) in.push_back(F2U(x));
  auto r = RunSnippet(R"(
  add.s64 %rd2, %rd1, 512;
  add.s64 %rd3, %rd1, 1024;
  wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd1], 16;
  wmma.load.b.sync.aligned.col.m16n16k16.f16 {%r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16}, [%rd2];
  mov.b32 %r17, 24;
  wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, [%rd3], %r17;
  // A *= 2 element-wise (as CUDA's frag.x[i] loops do), on every register.
  mov.b32 %r18, 0x40004000;
  mul.rn.f16x2 %r1, %r1, %r18;
  mul.rn.f16x2 %r2, %r2, %r18;
  mul.rn.f16x2 %r3, %r3, %r18;
  mul.rn.f16x2 %r4, %r4, %r18;
  mul.rn.f16x2 %r5, %r5, %r18;
  mul.rn.f16x2 %r6, %r6, %r18;
  mul.rn.f16x2 %r7, %r7, %r18;
  mul.rn.f16x2 %r8, %r8, %r18;
  wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f8, %f9, %f10, %f11, %f12, %f13, %f14, %f15}, {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, {%r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16}, {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7};
  wmma.store.d.sync.aligned.col.m16n16k16.global.f32 [%rd0], {%f8, %f9, %f10, %f11, %f12, %f13, %f14, %f15}, 16;
  )",
                      in, 256, 32);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) {
      float acc = c[i * 24 + j];
      for (int k = 0; k < 16; ++k)
        acc = std::fma(2.0f * HalfToFloat(a[i * 16 + k]), HalfToFloat(b[j * 16 + k]), acc);
      EXPECT_EQ(U2F(r.out[j * 16 + i]), acc) << i << "," << j;
    }
  }
}

// wmma.load a (row-major) / b (column-major) / c (row-major) from global memory, wmma.mma,
// wmma.store d (row-major), for the element types the f16 test above does not cover.
struct WmmaForm {
  std::string shape, atype, ctype, mma;  // mma: the wmma.mma opcode with types
  int M, N, K;
  T a, c;
  int na, nb, nc;
  MmaForm::Op op = MmaForm::kMul;
};
void CheckWmma(const WmmaForm& f) {
  std::mt19937 rng(11);
  const int bits = Bits(f.a);
  std::vector<double> A(f.M * f.K), B(f.K * f.N), C(f.M * f.N);
  // Bytes of A (row-major), B (column-major), each padded to 256 bytes, then C (row-major).
  const size_t ab_bytes = std::max<size_t>(256, f.M * f.K * bits / 8);
  std::vector<uint8_t> mem(2 * ab_bytes + 4 * f.M * f.N, 0);
  auto put = [&](size_t base, size_t index, uint64_t v, int b) {
    for (int k = 0; k < b; ++k)
      if ((v >> k) & 1)
        mem[base + (index * b + k) / 8] |= static_cast<uint8_t>(1 << ((index * b + k) % 8));
  };
  for (int i = 0; i < f.M; ++i)
    for (int k = 0; k < f.K; ++k) {
      Val v = RandomVal(f.a, rng);
      A[i * f.K + k] = v.v;
      put(0, i * f.K + k, v.bits, bits);
    }
  for (int k = 0; k < f.K; ++k)
    for (int j = 0; j < f.N; ++j) {
      Val v = RandomVal(f.a, rng);
      B[k * f.N + j] = v.v;
      put(ab_bytes, j * f.K + k, v.bits, bits);
    }
  for (int i = 0; i < f.M * f.N; ++i) {
    Val v = RandomVal(f.c, rng);
    C[i] = v.v;
    put(2 * ab_bytes, i, v.bits, 32);
  }
  std::vector<uint32_t> in(mem.size() / 4);
  std::memcpy(in.data(), mem.data(), mem.size());
  auto list = [](int first, int n) {
    std::string s = "{";
    for (int i = 0; i < n; ++i) s += (i ? ", %r" : "%r") + std::to_string(first + i);
    return s + "}";
  };
  const std::string A_ = list(1, f.na), B_ = list(1 + f.na, f.nb), C_ = list(1 + f.na + f.nb, f.nc),
                    D_ = list(20, f.nc);
  const std::string K = std::to_string(f.K), N = std::to_string(f.N);
  const std::string body =
      "  add.s64 %rd2, %rd1, " + std::to_string(ab_bytes) + ";\n  add.s64 %rd3, %rd1, " +
      std::to_string(2 * ab_bytes) + ";\n  wmma.load.a.sync.aligned.row." + f.shape + ".global." +
      f.atype + " " + A_ + ", [%rd1], " + K + ";\n  wmma.load.b.sync.aligned.col." + f.shape +
      ".global." + f.atype + " " + B_ + ", [%rd2], " + K + ";\n  wmma.load.c.sync.aligned.row." +
      f.shape + ".global." + f.ctype + " " + C_ + ", [%rd3], " + N + ";\n  " + f.mma + " " + D_ +
      ", " + A_ + ", " + B_ + ", " + C_ + ";\n  wmma.store.d.sync.aligned.row." + f.shape +
      ".global." + f.ctype + " [%rd0], " + D_ + ", " + N + ";\n";
  auto r = RunSnippet(body, in, f.M * f.N, 32);
  ASSERT_TRUE(r.status.ok()) << f.mma << ": " << r.status.ToString();
  for (int i = 0; i < f.M; ++i) {
    for (int j = 0; j < f.N; ++j) {
      double want;
      if (f.c == T::kS32) {
        int64_t acc = static_cast<int64_t>(C[i * f.N + j]);
        for (int k = 0; k < f.K; ++k) {
          auto a = static_cast<int64_t>(A[i * f.K + k]), b = static_cast<int64_t>(B[k * f.N + j]);
          acc += f.op == MmaForm::kXor ? (a ^ b) : a * b;
        }
        want = static_cast<int32_t>(static_cast<uint32_t>(acc));
        ASSERT_EQ(static_cast<int32_t>(r.out[i * f.N + j]), want) << f.mma << " " << i << "," << j;
      } else {
        float acc = static_cast<float>(C[i * f.N + j]);
        for (int k = 0; k < f.K; ++k)
          acc =
              std::fma(static_cast<float>(A[i * f.K + k]), static_cast<float>(B[k * f.N + j]), acc);
        ASSERT_EQ(U2F(r.out[i * f.N + j]), acc) << f.mma << " " << i << "," << j;
      }
    }
  }
}

TEST(WmmaTest, Bf16Tf32Int4B1) {
  CheckWmma({"m16n16k16", "bf16", "f32",
             "wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32", 16, 16, 16, T::kBF16,
             T::kF32, 4, 4, 8});
  CheckWmma({"m32n8k16", "bf16", "f32", "wmma.mma.sync.aligned.row.col.m32n8k16.f32.bf16.bf16.f32",
             32, 8, 16, T::kBF16, T::kF32, 8, 2, 8});
  CheckWmma({"m16n16k8", "tf32", "f32", "wmma.mma.sync.aligned.row.col.m16n16k8.f32.tf32.tf32.f32",
             16, 16, 8, T::kTF32, T::kF32, 4, 4, 8});
  CheckWmma({"m8n8k32", "s4", "s32", "wmma.mma.sync.aligned.row.col.m8n8k32.s32.s4.s4.s32", 8, 8,
             32, T::kS4, T::kS32, 1, 1, 2});
  WmmaForm b1{
      "m8n8k128", "b1", "s32", "wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32",
      8,          8,    128,   T::kB1,
      T::kS32,    1,    1,     2};
  b1.op = MmaForm::kXor;
  CheckWmma(b1);
}

// An integer wmma (m32n8k16 s8 x u8, saturating) through shared memory, and a load/store round
// trip that transposes (row-major load, column-major store).
TEST(WmmaTest, IntegerSharedAndTranspose) {
  std::vector<uint32_t> in(32 * 16 / 4 + 16 * 8 / 4);
  std::mt19937 rng(3);
  for (auto& x : in) x = rng();
  auto r = RunSnippet(R"(
  // Copy 160 words of in into shared s (5 words per lane).
  mov.u32 %r1, s;
  mul.lo.u32 %r2, %r0, 20;
  add.u32 %r3, %r1, %r2;
  mul.wide.u32 %rd2, %r0, 20;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.b32 %r4, [%rd3];
  st.shared.b32 [%r3], %r4;
  ld.global.b32 %r4, [%rd3+4];
  st.shared.b32 [%r3+4], %r4;
  ld.global.b32 %r4, [%rd3+8];
  st.shared.b32 [%r3+8], %r4;
  ld.global.b32 %r4, [%rd3+12];
  st.shared.b32 [%r3+12], %r4;
  ld.global.b32 %r4, [%rd3+16];
  st.shared.b32 [%r3+16], %r4;
  bar.warp.sync -1;
  wmma.load.a.sync.aligned.row.m32n8k16.shared.s8 {%r5, %r6, %r7, %r8}, [s], 16;
  wmma.load.b.sync.aligned.row.m32n8k16.shared.u8 {%r9}, [s+512], 8;
  mov.b32 %r10, 2147483000;
  mov.b32 %r11, -2147483000;
  wmma.mma.sync.aligned.row.row.m32n8k16.s32.s8.u8.s32.satfinite {%r12, %r13, %r14, %r15, %r16, %r17, %r18, %r19}, {%r5, %r6, %r7, %r8}, {%r9}, {%r10, %r11, %r10, %r11, %r10, %r11, %r10, %r11};
  wmma.store.d.sync.aligned.row.m32n8k16.global.s32 [%rd0], {%r12, %r13, %r14, %r15, %r16, %r17, %r18, %r19}, 8;
  add.s64 %rd4, %rd0, 1024;
  wmma.load.c.sync.aligned.row.m32n8k16.global.s32 {%r12, %r13, %r14, %r15, %r16, %r17, %r18, %r19}, [%rd0], 8;
  wmma.store.d.sync.aligned.col.m32n8k16.global.s32 [%rd4], {%r12, %r13, %r14, %r15, %r16, %r17, %r18, %r19}, 32;
  )",
                      in, 512, 32, ".shared .align 32 .b8 s[640];");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  auto a = [&](int i, int k) { return static_cast<int8_t>(in[(i * 16 + k) / 4] >> (8 * (k % 4))); };
  auto b = [&](int k, int j) {
    return static_cast<uint8_t>(in[128 + (k * 8 + j) / 4] >> (8 * (j % 4)));
  };
  // The C fragment's registers alternate the two constants, so which C element got which value
  // follows from our layout: element e of lane l is entry (e * 32 + l) mod 256, and e's register
  // is e (one s32 per register).
  for (int i = 0; i < 32; ++i) {
    for (int j = 0; j < 8; ++j) {
      const int idx = i * 8 + j, e = idx / 32;
      int64_t acc = e % 2 == 0 ? 2147483000 : -2147483000;
      for (int k = 0; k < 16; ++k) acc += int64_t{a(i, k)} * b(k, j);
      acc = std::clamp<int64_t>(acc, INT32_MIN, INT32_MAX);
      EXPECT_EQ(static_cast<int32_t>(r.out[i * 8 + j]), acc) << i << "," << j;
      EXPECT_EQ(r.out[256 + j * 32 + i], r.out[i * 8 + j]) << "transposed " << i << "," << j;
    }
  }
}

TEST(WmmaTest, LanesMustAgreeAndBoundsAreChecked) {
  auto r = RunSnippet(R"(
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, [%rd3], 16;
  )",
                      std::vector<uint32_t>(512), 1, 32);
  EXPECT_EQ(r.status.code(), Code::kIllegalInstruction) << r.status.ToString();
  // 16 x 16 f32 with stride 16 reads 1 KiB; the input holds 64 words.
  r = RunSnippet(R"(
  wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, [%rd1], 16;
  )",
                 std::vector<uint32_t>(64), 1, 32);
  EXPECT_EQ(r.status.code(), Code::kIllegalAddress) << r.status.ToString();
}

}  // namespace
}  // namespace pvgpu::ptx
