// Scalar arithmetic, conversions and math kernels from tests/ptx_corpus/basic.cu.
#include <bit>
#include <cfenv>
#include <cmath>

#include "ptx/corpus_fixture.h"

namespace pvgpu::ptx {
namespace {

using BasicCorpusTest = CorpusTest;

TEST_P(BasicCorpusTest, Saxpy) {
  auto& r = Load("basic");
  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = i * 0.25f, y[i] = 3.0f - i;
  uint64_t dx = r.mem().Upload(x), dy = r.mem().Upload(y);
  ASSERT_TRUE(r.Launch("saxpy", {8, 1, 1}, {128, 1, 1}, {n, 1.5f, dx, dy}).ok());
  auto out = r.mem().Download<float>(dy, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], std::fma(1.5f, x[i], y[i])) << i;
}

uint32_t BytePerm(uint32_t x, uint32_t y, uint32_t s) {
  uint64_t v = (uint64_t{y} << 32) | x;
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k)
    r |= static_cast<uint32_t>((v >> (8 * ((s >> (4 * k)) & 7))) & 0xFF) << (8 * k);
  return r;
}

TEST_P(BasicCorpusTest, IntOps) {
  auto& r = Load("basic");
  const int n = 256;
  std::vector<int> in(2 * n);
  std::uniform_int_distribution<int> d(-100000, 100000);
  for (auto& v : in) v = d(rng_);
  in[0] = 7, in[1] = 0;
  in[2] = -1, in[3] = 31;
  in[4] = 0x7FFFFFFF, in[5] = -3;
  uint64_t din = r.mem().Upload(in), dout = r.mem().Alloc(16 * n * 4);
  ASSERT_TRUE(r.Launch("int_ops", {2, 1, 1}, {128, 1, 1}, {din, dout, n}).ok());
  auto out = r.mem().Download<int>(dout, 16 * n);
  for (int i = 0; i < n; ++i) {
    int a = in[2 * i], b = in[2 * i + 1];
    uint32_t ua = a, ub = b;
    int e[16];
    e[0] = b ? a / b : 0;
    e[1] = b ? a % b : 0;
    e[2] = ub ? ua / ub : 0;
    e[3] = ub ? ua % ub : 0;
    // 32-bit wrapping arithmetic, as the kernel's (computed unsigned: int overflow is UB).
    e[4] = static_cast<int>(uint32_t(std::min(a, b)) + uint32_t(std::max(a, b)) * 3u);
    e[5] = (a < 0 ? -a : a) ^ (ua >> (b & 31));
    e[6] = a >> (b & 31);
    e[7] = std::popcount(ua) + std::countl_zero(ua) * 100;
    uint32_t rev = 0;
    for (int k = 0; k < 32; ++k) rev |= ((ua >> k) & 1) << (31 - k);
    e[8] = rev;
    e[9] = static_cast<int>((int64_t{a} * b) >> 32);
    e[10] = static_cast<int>((uint64_t{ua} * ub) >> 32);
    e[11] = static_cast<int>((int64_t{a} * b) >> 7);
    e[12] = BytePerm(ua, ub, 0x5140);
    e[13] = static_cast<int>(static_cast<uint32_t>(((uint64_t{ub} << 32 | ua) << (b & 31)) >> 32));
    e[14] = (a ? std::countr_zero(ua) + 1 : 0) +
            static_cast<int>((a > b ? uint32_t(a) - uint32_t(b) : uint32_t(b) - uint32_t(a)) + 5u);
    e[15] = (ua * 2654435761u) ^ (ua << 5) ^ ~ub;
    for (int k = 0; k < 16; ++k)
      ASSERT_EQ(out[16 * i + k], e[k])
          << "thread " << i << " word " << k << " a=" << a << " b=" << b;
  }
}

TEST_P(BasicCorpusTest, Int64Ops) {
  auto& r = Load("basic");
  const int n = 128;
  std::vector<uint64_t> in(2 * n);
  for (auto& v : in) v = (uint64_t{rng_()} << 32) | rng_();
  in[1] = 0;
  in[3] = 5;
  uint64_t din = r.mem().Upload(in), dout = r.mem().Alloc(8 * n * 8);
  ASSERT_TRUE(r.Launch("int64_ops", {1, 1, 1}, {128, 1, 1}, {din, dout, n}).ok());
  auto out = r.mem().Download<uint64_t>(dout, 8 * n);
  for (int i = 0; i < n; ++i) {
    uint64_t a = in[2 * i], b = in[2 * i + 1];
    unsigned __int128 p = static_cast<unsigned __int128>(a) * b + a;
    uint64_t rev = 0;
    for (int k = 0; k < 64; ++k) rev |= ((a >> k) & 1) << (63 - k);
    uint64_t e[8] = {a * b + (a >> 3),
                     b ? a / b : 0,
                     b ? a % b : 0,
                     static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64),
                     static_cast<uint64_t>(p >> 64) ^ static_cast<uint64_t>(p),
                     static_cast<uint64_t>(std::popcount(a) + std::countl_zero(b)),
                     static_cast<uint64_t>(static_cast<int64_t>(a) >> (b & 63)),
                     rev};
    for (int k = 0; k < 8; ++k) ASSERT_EQ(out[8 * i + k], e[k]) << i << " " << k;
  }
}

// Host reference for directed rounding: volatile keeps the operation after fesetround.
template <typename F>
float Rounded(int mode, F f) {
  int old = std::fegetround();
  std::fesetround(mode);
  volatile float v = f();
  std::fesetround(old);
  return v;
}

uint16_t HalfRn(float f) {
  _Float16 h = static_cast<_Float16>(f);
  return std::bit_cast<uint16_t>(h);
}
uint16_t HalfRz(float f) {
  uint16_t h = HalfRn(f);
  float back = static_cast<float>(std::bit_cast<_Float16>(h));
  if ((h & 0x7FFF) != 0 && (h & 0x7C00) != 0x7C00 && std::fabs(back) > std::fabs(f)) --h;
  if ((h & 0x7C00) == 0x7C00 && !std::isinf(f)) h = static_cast<uint16_t>((h & 0x8000) | 0x7BFF);
  return h;
}

TEST_P(BasicCorpusTest, Conversions) {
  auto& r = Load("basic");
  std::vector<float> f = {0.5f,   1.5f, 2.5f,     -0.5f,   -1.5f,  -2.7f,    3.3f,    1e9f,
                          -1e10f, 0.0f, 123.456f, -77.77f, 1e-30f, 65519.0f, 70000.f, 3.999f};
  std::vector<double> d = {0.5,  1.5,   2.5, -0.5,       -1.5,   -2.7,         3.3,
                           1e9,  -1e10, 0.0, 123.456789, -77.77, 1.0000000001, 3.14159265358979,
                           1e40, -1e-5};
  const int n = static_cast<int>(f.size());
  uint64_t df = r.mem().Upload(f), dd = r.mem().Upload(d), dout = r.mem().Alloc(16 * n * 4);
  ASSERT_TRUE(r.Launch("conversions", {1, 1, 1}, {32, 1, 1}, {df, dd, dout, n}).ok());
  auto out = r.mem().Download<int32_t>(dout, 16 * n);
  auto sat = [](double v) {
    return v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : static_cast<int>(v);
  };
  for (int i = 0; i < n; ++i) {
    float x = f[i];
    double y = d[i];
    int32_t e[16];
    e[0] = sat(std::nearbyint(x));
    e[1] = sat(std::trunc(x));
    e[2] = sat(std::floor(x));
    e[3] = sat(std::ceil(x));
    e[4] = static_cast<int32_t>(x <= 0               ? 0u
                                : x >= 4294967295.0f ? 0xFFFFFFFFu
                                                     : static_cast<uint32_t>(std::nearbyint(x)));
    e[5] = std::bit_cast<int32_t>(
        static_cast<float>(static_cast<int32_t>(uint32_t(e[0]) * 3u + 1u)));  // wraps, as the kernel
    e[6] = sat(std::nearbyint(y));
    e[7] = std::bit_cast<int32_t>(static_cast<float>(y));
    e[8] = std::bit_cast<int32_t>(Rounded(FE_TOWARDZERO, [&] {
      volatile double v = y;
      return static_cast<float>(v);
    }));
    e[9] = std::bit_cast<int32_t>(Rounded(FE_UPWARD, [&] {
      volatile double v = y;
      return static_cast<float>(v);
    }));
    e[10] = std::bit_cast<int32_t>(Rounded(FE_TOWARDZERO, [&] {
      volatile float v = x;
      return v + 1.0e-8f;
    }));
    e[11] = std::bit_cast<int32_t>(Rounded(FE_UPWARD, [&] {
      volatile float v = x;
      return v * 1.1f;
    }));
    e[12] = std::bit_cast<int32_t>(Rounded(FE_DOWNWARD, [&] {
      volatile float v = x;
      return v / 3.0f;
    }));
    e[13] = std::bit_cast<int32_t>(std::rint(x) + std::trunc(x) + std::floor(x) + std::ceil(x));
    e[14] = static_cast<int32_t>(static_cast<int64_t>(y * 1000.0));
    e[15] = static_cast<int32_t>(HalfRn(x) | (uint32_t{HalfRz(x)} << 16));
    for (int k = 0; k < 16; ++k) {
      if (k == 14 && std::fabs(y) > 1e15)
        continue;  // out-of-range conversion: implementation defined on host
      EXPECT_EQ(out[16 * i + k], e[k]) << "value " << i << " (" << x << ", " << y << ") word " << k;
    }
  }
}

TEST_P(BasicCorpusTest, FloatMath) {
  auto& r = Load("basic");
  const int n = 200;
  std::vector<float> in(n);
  std::uniform_real_distribution<float> d(-20.0f, 20.0f);
  for (auto& v : in) v = d(rng_);
  uint64_t din = r.mem().Upload(in), dout = r.mem().Alloc(12 * n * 4);
  ASSERT_TRUE(r.Launch("float_math", {4, 1, 1}, {64, 1, 1}, {din, dout, n}).ok());
  auto out = r.mem().Download<float>(dout, 12 * n);
  for (int i = 0; i < n; ++i) {
    float x = in[i];
    float e[12] = {std::sqrt(std::fabs(x)),
                   1.0f / std::sqrt(std::fabs(x) + 1.0f),
                   std::exp(x * 0.1f),
                   std::log(std::fabs(x) + 1.0f),
                   std::sin(x),
                   std::cos(x),
                   std::sin(x),
                   std::exp(x * 0.1f),
                   std::tanh(x * 0.3f),
                   x / (x * x + 1.0f),
                   std::fmin(x, 0.5f) + std::fmax(x, -0.5f) + std::copysign(2.0f, x),
                   std::pow(std::fabs(x) + 0.5f, 1.7f)};
    for (int k = 0; k < 12; ++k) {
      float tol =
          2e-6f * std::max(1.0f, std::fabs(e[k])) + (k == 11 ? 1e-5f * std::fabs(e[k]) : 0.0f);
      EXPECT_NEAR(out[12 * i + k], e[k], tol) << "x=" << x << " word " << k;
    }
  }
}

TEST_P(BasicCorpusTest, DoubleMath) {
  auto& r = Load("basic");
  std::vector<double> in = {0.0,  1.0, -2.5,     3.75,      100.0, -1e-3,
                            1e10, NAN, INFINITY, -INFINITY, 0.1,   7.0};
  const int n = static_cast<int>(in.size());
  uint64_t din = r.mem().Upload(in), dout = r.mem().Alloc(6 * n * 8);
  ASSERT_TRUE(r.Launch("double_math", {1, 1, 1}, {32, 1, 1}, {din, dout, n}).ok());
  auto out = r.mem().Download<double>(dout, 6 * n);
  for (int i = 0; i < n; ++i) {
    double x = in[i];
    double e[6] = {std::sqrt(std::fabs(x)),
                   x / (x * x + 1.0),
                   std::fma(x, x, -1.0),
                   std::exp(x * 0.1),
                   std::sin(x),
                   std::isnan(x) ? 1.0 : (std::isinf(x) ? 2.0 : std::fmin(x, 3.0))};
    for (int k = 0; k < 6; ++k) {
      if (std::isnan(e[k])) {
        EXPECT_TRUE(std::isnan(out[6 * i + k])) << i << " " << k;
        continue;
      }
      if (std::isinf(e[k])) {
        EXPECT_EQ(out[6 * i + k], e[k]);
        continue;
      }
      EXPECT_NEAR(out[6 * i + k], e[k], 1e-14 * std::max(1.0, std::fabs(e[k])))
          << "x=" << x << " word " << k;
    }
  }
}

TEST_P(BasicCorpusTest, HalfOps) {
  auto& r = Load("basic");
  const int n = 64;
  std::vector<uint32_t> a(n), b(n);
  std::uniform_real_distribution<float> d(-8.0f, 8.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = HalfRn(d(rng_)) | (uint32_t{HalfRn(d(rng_))} << 16);
    b[i] = HalfRn(d(rng_)) | (uint32_t{HalfRn(d(rng_))} << 16);
  }
  uint64_t da = r.mem().Upload(a), db = r.mem().Upload(b), dout = r.mem().Alloc(3 * n * 4),
           dfo = r.mem().Alloc(2 * n * 4);
  ASSERT_TRUE(r.Launch("half_ops", {1, 1, 1}, {64, 1, 1}, {da, db, dout, dfo, n}).ok());
  auto out = r.mem().Download<uint32_t>(dout, 3 * n);
  auto fo = r.mem().Download<float>(dfo, 2 * n);
  auto h = [](uint32_t v, int hi) {
    return static_cast<double>(std::bit_cast<_Float16>(static_cast<uint16_t>(hi ? v >> 16 : v)));
  };
  for (int i = 0; i < n; ++i) {
    for (int hi = 0; hi < 2; ++hi) {
      double x = h(a[i], hi), y = h(b[i], hi);
      EXPECT_EQ((out[3 * i] >> (16 * hi)) & 0xFFFF, HalfRn(static_cast<float>(x + y))) << i;
      EXPECT_EQ((out[3 * i + 1] >> (16 * hi)) & 0xFFFF, HalfRn(static_cast<float>(x * y))) << i;
      EXPECT_EQ((out[3 * i + 2] >> (16 * hi)) & 0xFFFF,
                HalfRn(static_cast<float>(std::fma(x, y, x))))
          << i;
    }
    EXPECT_EQ(fo[2 * i], static_cast<float>(h(a[i], 0)) + static_cast<float>(h(b[i], 1)));
    EXPECT_EQ(fo[2 * i + 1], static_cast<float>(std::max(h(a[i], 0), h(b[i], 1))));
  }
}

PVGPU_CORPUS_INSTANTIATE(BasicCorpusTest);

}  // namespace
}  // namespace pvgpu::ptx
