// Asynchronous copies, mbarriers and half-precision math from tests/ptx_corpus/async.cu
// (compute_80 and compute_90), against host references.
#include <cmath>

#include "ptx/corpus_fixture.h"

namespace pvgpu::ptx {
namespace {

class AsyncCorpusTest : public CorpusTest {};

INSTANTIATE_TEST_SUITE_P(Arch, AsyncCorpusTest, ::testing::Values(80, 90),
                         [](const auto& info) { return "sm" + std::to_string(info.param); });

// IEEE binary16 bits of a value that binary16 represents exactly (the inputs below).
uint16_t ExactHalf(float f) {
  if (f == 0) return std::signbit(f) ? 0x8000 : 0;
  uint16_t sign = f < 0 ? 0x8000 : 0;
  int e;
  float m = std::frexp(std::fabs(f), &e);  // f = m * 2^e, m in [0.5, 1)
  int exp = e - 1 + 15;
  EXPECT_GT(exp, 0);
  return static_cast<uint16_t>(sign | (exp << 10) |
                               static_cast<uint16_t>(std::ldexp(m * 2 - 1, 10)));
}

float HalfValue(uint16_t h) {
  int exp = (h >> 10) & 0x1F, frac = h & 0x3FF;
  float v = exp == 0    ? std::ldexp(static_cast<float>(frac), -24)
            : exp == 31 ? (frac ? NAN : INFINITY)
                        : std::ldexp(1.0f + frac / 1024.0f, exp - 15);
  return (h & 0x8000) ? -v : v;
}

TEST_P(AsyncCorpusTest, PipelinePrimitivesDoubleBuffer) {
  auto& r = Load("async");
  const int blocks = 3, threads = 64, chunks = 5;
  std::vector<float> in(blocks * threads * chunks);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 97) * 0.5f - 7;
  uint64_t din = r.mem().Upload(in);
  uint64_t dout = r.mem().Alloc(in.size() * 4);
  ASSERT_TRUE(r.Launch("pipeline_scale", {blocks, 1, 1}, {threads, 1, 1}, {din, dout, chunks},
                       2 * threads * 4)
                  .ok());
  auto out = r.mem().Download<float>(dout, in.size());
  for (int b = 0; b < blocks; ++b)
    for (int k = 0; k < threads * chunks; ++k) {
      size_t i = static_cast<size_t>(b) * threads * chunks + k;
      ASSERT_EQ(out[i], 2 * in[i] + b) << i;
    }
}

TEST_P(AsyncCorpusTest, MemcpyAsyncWithCudaBarrier) {
  auto& r = Load("async");
  const int blocks = 4, n = 200, threads = 96;
  std::vector<int> in(blocks * n);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i * 7 + 3);
  uint64_t din = r.mem().Upload(in);
  uint64_t dout = r.mem().Alloc(in.size() * 4);
  Status s = r.Launch("barrier_reverse", {blocks, 1, 1}, {threads, 1, 1}, {din, dout, n}, n * 4);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto out = r.mem().Download<int>(dout, in.size());
  for (int b = 0; b < blocks; ++b)
    for (int i = 0; i < n; ++i) ASSERT_EQ(out[b * n + i], in[b * n + n - 1 - i] + threads) << i;
}

TEST_P(AsyncCorpusTest, AlignedMemcpyAsyncIsABulkCopyOnSm90) {
  auto& r = Load("async");
  const int blocks = 3, n4 = 96, threads = 64;
  std::vector<float> in(blocks * n4 * 4);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 19) - 9;
  uint64_t din = r.mem().Upload(in);
  uint64_t dout = r.mem().Upload(std::vector<float>(blocks, 0.0f));
  Status s = r.Launch("bulk_sum", {blocks, 1, 1}, {threads, 1, 1}, {din, dout, n4}, n4 * 16);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto out = r.mem().Download<float>(dout, blocks);
  for (int b = 0; b < blocks; ++b) {
    double ref = 0;
    for (int i = 0; i < n4 * 4; ++i) ref += in[b * n4 * 4 + i];
    EXPECT_EQ(out[b], static_cast<float>(ref)) << b;  // small integers: every order is exact
  }
}

TEST_P(AsyncCorpusTest, CooperativeGroupsMemcpyAsync) {
  auto& r = Load("async");
  const int blocks = 3, n = 256, threads = 128;
  std::vector<float> a(blocks * n), b(blocks * n);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 13) - 6;
    b[i] = static_cast<float>(i % 7) * 0.25f;
  }
  uint64_t da = r.mem().Upload(a), db = r.mem().Upload(b);
  uint64_t dout = r.mem().Alloc(a.size() * 4);
  Status s = r.Launch("cg_multiply", {blocks, 1, 1}, {threads, 1, 1}, {da, db, dout, n}, 2 * n * 4);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto out = r.mem().Download<float>(dout, a.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(out[i], a[i] * b[i]) << i;
}

TEST_P(AsyncCorpusTest, WarpWaitsOnMbarrierAnotherWarpArrivesAt) {
  auto& r = Load("async");
  const int rounds = 6;
  uint64_t dout = r.mem().Upload(std::vector<int>(rounds * 32, -1));
  Status s = r.Launch("mbarrier_handoff", {2, 1, 1}, {64, 1, 1}, {dout, rounds});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto out = r.mem().Download<int>(dout, rounds * 32);
  for (int k = 0; k < rounds; ++k)
    for (int lane = 0; lane < 32; ++lane) ASSERT_EQ(out[k * 32 + lane], k * 100 + lane);
}

TEST_P(AsyncCorpusTest, CpAsyncDoubleBufferedSgemm) {
  auto& r = Load("async");
  const int n = 64;
  std::vector<float> A(n * n), B(n * n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto& v : A) v = dist(rng);
  for (auto& v : B) v = dist(rng);
  uint64_t dA = r.mem().Upload(A), dB = r.mem().Upload(B), dC = r.mem().Alloc(n * n * 4);
  Status s = r.Launch("sgemm_cp_async", {n / 16, n / 16, 1}, {16, 16, 1}, {dA, dB, dC, n});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto C = r.mem().Download<float>(dC, n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0;
      for (int k = 0; k < n; ++k) ref += static_cast<double>(A[i * n + k]) * B[k * n + j];
      ASSERT_NEAR(C[i * n + j], ref, 1e-4) << i << "," << j;
    }
}

TEST_P(AsyncCorpusTest, Half2ArithmeticExpTanh) {
  auto& r = Load("async");
  const int n = 200;
  std::vector<uint32_t> x(n), y(n);
  std::vector<float> xf(2 * n), yf(2 * n);
  for (int i = 0; i < 2 * n; ++i) {
    xf[i] = static_cast<float>(i % 41 - 20) / 16;  // exact in binary16
    yf[i] = static_cast<float>(i % 23 - 11) / 8;
  }
  for (int i = 0; i < n; ++i) {
    x[i] = ExactHalf(xf[2 * i]) | (uint32_t{ExactHalf(xf[2 * i + 1])} << 16);
    y[i] = ExactHalf(yf[2 * i]) | (uint32_t{ExactHalf(yf[2 * i + 1])} << 16);
  }
  uint64_t dx = r.mem().Upload(x), dy = r.mem().Upload(y);
  uint64_t da = r.mem().Alloc(n * 4), de = r.mem().Alloc(n * 4), dt = r.mem().Alloc(n * 4);
  uint64_t dtf = r.mem().Alloc(n * 4);
  Status s = r.Launch("half2_math", {2, 1, 1}, {128, 1, 1}, {dx, dy, da, de, dt, dtf, n});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto arith = r.mem().Download<uint32_t>(da, n), ex = r.mem().Download<uint32_t>(de, n);
  auto th = r.mem().Download<uint32_t>(dt, n);
  auto thf = r.mem().Download<float>(dtf, n);
  for (int i = 0; i < n; ++i) {
    for (int h = 0; h < 2; ++h) {
      const double a = xf[2 * i + h], b = yf[2 * i + h];
      auto half = [&](const std::vector<uint32_t>& v) {
        return HalfValue(static_cast<uint16_t>(v[i] >> (16 * h)));
      };
      // fma(a, b, a + b) rounds a + b and the fma to binary16, then the product: a few ulps.
      double ref = (a * b + (a + b)) * a;
      EXPECT_NEAR(half(arith), ref, 4e-3 * std::max(1.0, std::fabs(ref))) << i << "/" << h;
      EXPECT_NEAR(half(ex), std::exp(a), 2e-3 * std::exp(a)) << i << "/" << h;
      EXPECT_NEAR(half(th), std::tanh(a), 2e-3) << i << "/" << h;
    }
    EXPECT_NEAR(thf[i], std::tanh(static_cast<double>(xf[2 * i])), 1e-6) << i;
  }
}

}  // namespace
}  // namespace pvgpu::ptx
