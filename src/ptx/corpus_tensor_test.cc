// Tensor-core GEMMs from tests/ptx_corpus/tensor.cu (WMMA through <mma.h>, inline-asm mma.sync
// with ldmatrix, integer mma.sync, 2:4-sparse mma.sp) against plain host GEMMs. The inputs are
// small multiples of powers of two so that every sum is exact in the accumulator type: the
// references do not depend on the accumulation order.
#include <algorithm>
#include <cstring>

#include "ptx/corpus_fixture.h"
#include "ptx/half.h"

namespace pvgpu::ptx {
namespace {

class TensorCorpusTest : public CorpusTest {
 protected:
  // Random f16 values x * scale with |x| <= range.
  std::vector<uint16_t> Halves(size_t n, int range, float scale) {
    std::uniform_int_distribution<int> d(-range, range);
    std::vector<uint16_t> v(n);
    for (auto& h : v) h = FloatToHalf(static_cast<float>(d(rng_)) * scale);
    return v;
  }
};
INSTANTIATE_TEST_SUITE_P(Arch, TensorCorpusTest, ::testing::Values(80, 90),
                         [](const auto& info) { return "sm" + std::to_string(info.param); });

TEST_P(TensorCorpusTest, WmmaGemmF16InF32Accumulate) {
  auto& r = Load("tensor");
  const int m = 32, n = 48, k = 64;
  auto a = Halves(m * k, 16, 1.0f / 8);  // row-major
  auto b = Halves(k * n, 16, 1.0f / 4);  // column-major: b[j * k + kk]
  uint64_t da = r.mem().Upload(a), db = r.mem().Upload(b), dc = r.mem().Alloc(m * n * 4);
  ASSERT_TRUE(r.Launch("wmma_gemm", {n / 16, m / 16, 1}, {32, 1, 1}, {da, db, dc, m, n, k}).ok());
  auto c = r.mem().Download<float>(dc, m * n);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int kk = 0; kk < k; ++kk)
        want += double{HalfToFloat(a[i * k + kk])} * HalfToFloat(b[j * k + kk]);
      ASSERT_EQ(c[i * n + j], 2 * want) << i << "," << j;
    }
  }
}

TEST_P(TensorCorpusTest, WmmaGemmM32N8F16AccumulateColumnMajor) {
  auto& r = Load("tensor");
  const int m = 64, n = 16, k = 32;
  auto a = Halves(m * k, 2, 1.0f / 4);  // row-major
  auto b = Halves(k * n, 2, 1.0f / 2);  // row-major
  auto c0 = Halves(m * n, 8, 1.0f);     // column-major: c[j * m + i]
  uint64_t da = r.mem().Upload(a), db = r.mem().Upload(b), dc = r.mem().Upload(c0);
  ASSERT_TRUE(
      r.Launch("wmma_gemm_m32n8", {n / 8, m / 32, 1}, {32, 1, 1}, {da, db, dc, m, n, k}).ok());
  auto c = r.mem().Download<uint16_t>(dc, m * n);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double want = HalfToFloat(c0[j * m + i]);
      for (int kk = 0; kk < k; ++kk)
        want += double{HalfToFloat(a[i * k + kk])} * HalfToFloat(b[kk * n + j]);
      ASSERT_EQ(HalfToFloat(c[j * m + i]), want) << i << "," << j;
    }
  }
}

TEST_P(TensorCorpusTest, MmaSyncGemmWithLdmatrix) {
  auto& r = Load("tensor");
  const int m = 32, n = 16, k = 48;
  auto a = Halves(m * k, 16, 1.0f / 8);  // row-major
  auto b = Halves(k * n, 16, 1.0f / 8);  // row-major
  uint64_t da = r.mem().Upload(a), db = r.mem().Upload(b), dc = r.mem().Alloc(m * n * 4);
  ASSERT_TRUE(r.Launch("mma_gemm", {n / 8, m / 16, 1}, {32, 1, 1}, {da, db, dc, m, n, k}).ok());
  auto c = r.mem().Download<float>(dc, m * n);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int kk = 0; kk < k; ++kk)
        want += double{HalfToFloat(a[i * k + kk])} * HalfToFloat(b[kk * n + j]);
      ASSERT_EQ(c[i * n + j], want) << i << "," << j;
    }
  }
}

TEST_P(TensorCorpusTest, IntegerMmaSaturates) {
  auto& r = Load("tensor");
  const int m = 32, n = 16, k = 64;
  std::vector<int8_t> a(m * k);   // row-major
  std::vector<uint8_t> b(k * n);  // column-major: b[j * k + kk]
  std::uniform_int_distribution<int> d(0, 255);
  for (auto& x : a) x = static_cast<int8_t>(d(rng_) - 128);
  for (auto& x : b) x = static_cast<uint8_t>(d(rng_));
  // Near the top of the s32 range: positive sums saturate, negative ones do not.
  const int bias = 2147480000;
  uint64_t da = r.mem().Upload(a), db = r.mem().Upload(b), dc = r.mem().Alloc(m * n * 4);
  ASSERT_TRUE(
      r.Launch("imma_gemm", {n / 8, m / 16, 1}, {32, 1, 1}, {da, db, dc, bias, m, n, k}).ok());
  auto c = r.mem().Download<int32_t>(dc, m * n);
  int saturated = 0;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      // Each mma.sync (32 k-steps) saturates its own result.
      int64_t want = bias;
      for (int k0 = 0; k0 < k; k0 += 32) {
        for (int kk = k0; kk < k0 + 32; ++kk) want += int64_t{a[i * k + kk]} * b[j * k + kk];
        saturated += want > INT32_MAX;
        want = std::min<int64_t>(want, INT32_MAX);
      }
      ASSERT_EQ(c[i * n + j], want) << i << "," << j;
    }
  }
  EXPECT_GT(saturated, 0);
  EXPECT_LT(saturated, m * n * (k / 32));
}

// A 2:4-sparse A (two zeros in every chunk of four columns) compressed for mma.sp: the kept
// elements of each row in order, and per chunk a 4-bit field with the kept positions (the
// smaller in bits 0-1), four chunks to a 16-bit word. A chunk with fewer than two non-zeros
// keeps zeros at its first free positions.
struct Sparse24 {
  std::vector<uint16_t> kept, meta;
};
Sparse24 Compress24(const std::vector<uint16_t>& dense, int m, int k) {
  Sparse24 s;
  s.kept.reserve(dense.size() / 2);
  s.meta.assign(static_cast<size_t>(m) * k / 16, 0);
  for (int i = 0; i < m; ++i) {
    for (int ch = 0; ch < k / 4; ++ch) {
      const uint16_t* x = &dense[static_cast<size_t>(i) * k + ch * 4];
      int pos[2], n = 0;
      for (int q = 0; q < 4 && n < 2; ++q)
        if ((x[q] & 0x7FFF) != 0) pos[n++] = q;
      for (int q = 0; q < 4 && n < 2; ++q)
        if ((x[q] & 0x7FFF) == 0 && (n == 0 || pos[0] != q)) pos[n++] = q;
      if (pos[0] > pos[1]) std::swap(pos[0], pos[1]);
      s.kept.push_back(x[pos[0]]);
      s.kept.push_back(x[pos[1]]);
      s.meta[static_cast<size_t>(i) * (k / 16) + ch / 4] |=
          static_cast<uint16_t>((pos[0] | (pos[1] << 2)) << (4 * (ch % 4)));
    }
  }
  return s;
}

TEST_P(TensorCorpusTest, SparseMmaGemm) {
  auto& r = Load("tensor");
  const int m = 32, n = 16, k = 96;
  // Dense A with two random columns of every chunk of four zeroed (some kept values are zero
  // too); row-major.
  auto a = Halves(m * k, 16, 1.0f / 8);
  for (int i = 0; i < m * k; i += 4) {
    const int x = static_cast<int>(rng_() % 4), y = (x + 1 + static_cast<int>(rng_() % 3)) % 4;
    a[i + x] = a[i + y] = 0;
  }
  auto b = Halves(k * n, 16, 1.0f / 8);  // column-major: b[j * k + kk]
  Sparse24 s = Compress24(a, m, k);
  uint64_t da = r.mem().Upload(s.kept), dm = r.mem().Upload(s.meta), db = r.mem().Upload(b),
           dc = r.mem().Alloc(m * n * 4);
  ASSERT_TRUE(
      r.Launch("spmma_gemm", {n / 8, m / 16, 1}, {32, 1, 1}, {da, dm, db, dc, m, n, k}).ok());
  auto c = r.mem().Download<float>(dc, m * n);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int kk = 0; kk < k; ++kk)
        want += double{HalfToFloat(a[i * k + kk])} * HalfToFloat(b[j * k + kk]);
      ASSERT_EQ(c[i * n + j], want) << i << "," << j;
    }
  }
}

// tf32 inputs: f32 values rounded to tf32 (nearest, ties away) by the kernel itself. The
// inputs have up to 13 significant bits, so rounding drops some: the reference rounds them the way
// the ISA defines cvt.rna.tf32.f32 and then sums exactly (every product and partial sum fits f32).
float RoundToTf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits = (bits + 0x1000u) & ~0x1FFFu;
  std::memcpy(&x, &bits, 4);
  return x;
}

TEST_P(TensorCorpusTest, WmmaTf32GemmRoundsItsInputs) {
  auto& r = Load("tensor");
  const int m = 16, n = 32, k = 32;
  std::uniform_int_distribution<int> d(-8191, 8191);
  std::vector<float> a(m * k), b(k * n);
  for (auto& v : a) v = static_cast<float>(d(rng_)) / 4096.0f;  // up to 13 significant bits
  for (auto& v : b) v = static_cast<float>(d(rng_) % 64) / 16.0f;
  uint64_t da = r.mem().Upload(a), db = r.mem().Upload(b), dc = r.mem().Alloc(m * n * 4);
  ASSERT_TRUE(
      r.Launch("wmma_tf32_gemm", {n / 16, m / 16, 1}, {32, 1, 1}, {da, db, dc, m, n, k}).ok());
  auto c = r.mem().Download<float>(dc, m * n);
  int rounded = 0;
  for (float v : a) rounded += RoundToTf32(v) != v;
  EXPECT_GT(rounded, 0) << "no input needed rounding: the test would not see it";
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int kk = 0; kk < k; ++kk)
        want += double{RoundToTf32(a[i * k + kk])} * RoundToTf32(b[kk * n + j]);
      ASSERT_EQ(c[i * n + j], want) << i << "," << j;
    }
  }
}

}  // namespace
}  // namespace pvgpu::ptx
