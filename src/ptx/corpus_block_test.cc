// Warp and block kernels from tests/ptx_corpus/warp.cu and block.cu.
#include <cmath>

#include "ptx/corpus_fixture.h"

namespace pvgpu::ptx {
namespace {

using WarpCorpusTest = CorpusTest;
using BlockCorpusTest = CorpusTest;

TEST_P(WarpCorpusTest, ShuffleAfterDivergence) {
  auto& r = Load("warp");
  const int n = 128;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<int>(rng_() % 1000) - 500;
  uint64_t din = r.mem().Upload(in), dout = r.mem().Alloc(5 * n * 4);
  ASSERT_TRUE(r.Launch("shfl_after_divergence", {2, 1, 1}, {64, 1, 1}, {din, dout}).ok());
  auto out = r.mem().Download<int>(dout, 5 * n);
  for (int w = 0; w < n / 32; ++w) {
    int v[32];
    for (int l = 0; l < 32; ++l) {
      int t = w * 32 + l, tid = t % 64;
      int x = in[t];
      if (tid & 1) {
        for (int k = 0; k < (tid & 7); ++k) x = x * 3 + k;
      } else {
        x -= 7;
      }
      v[l] = x;
    }
    for (int off = 16; off > 0; off >>= 1) {
      int s[32];
      for (int l = 0; l < 32; ++l) s[l] = v[l] + (l + off < 32 ? v[l + off] : v[l]);
      std::copy(s, s + 32, v);
    }
    for (int l = 0; l < 32; ++l) {
      int t = w * 32 + l;
      EXPECT_EQ(out[5 * t], v[l]) << t;
      EXPECT_EQ(out[5 * t + 1], l < 3 ? in[t] : in[t - 3]) << t;
      EXPECT_EQ(out[5 * t + 2], in[w * 32 + (l ^ 5)]) << t;
      EXPECT_EQ(out[5 * t + 3], in[w * 32 + ((l * 7) & 31)]) << t;
      EXPECT_EQ(out[5 * t + 4], in[w * 32 + (l & ~7) + 2]) << t;
    }
  }
}

TEST_P(WarpCorpusTest, Votes) {
  auto& r = Load("warp");
  const int n = 64;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<int>(rng_() % 200) - 100;
  in[40] = 42;
  uint64_t din = r.mem().Upload(in), dout = r.mem().Alloc(5 * n * 4);
  ASSERT_TRUE(r.Launch("votes", {1, 1, 1}, {64, 1, 1}, {din, dout}).ok());
  auto out = r.mem().Download<uint32_t>(dout, 5 * n);
  for (int w = 0; w < 2; ++w) {
    uint32_t ballot = 0, odd = 0;
    bool any42 = false;
    for (int l = 0; l < 32; ++l) {
      int v = in[w * 32 + l];
      ballot |= static_cast<uint32_t>(v > 0) << l;
      odd |= static_cast<uint32_t>(v & 1) << l;
      any42 |= v == 42;
    }
    for (int l = 0; l < 32; ++l) {
      int t = w * 32 + l;
      uint32_t match = 0;
      for (int j = 0; j < 32; ++j)
        match |= static_cast<uint32_t>((in[w * 32 + j] & 3) == (in[t] & 3)) << j;
      EXPECT_EQ(out[5 * t], ballot);
      EXPECT_EQ(out[5 * t + 1], 1u);
      EXPECT_EQ(out[5 * t + 2], any42 ? 1u : 0u);
      EXPECT_EQ(out[5 * t + 3], (in[t] & 1) ? odd : 0u) << t;
      EXPECT_EQ(out[5 * t + 4], match) << t;
    }
  }
}

TEST_P(WarpCorpusTest, Redux) {
  auto& r = Load("warp");
  const int n = 64;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<int>(rng_() % 2000) - 1000;
  uint64_t din = r.mem().Upload(in), dout = r.mem().Alloc(3 * n * 4);
  ASSERT_TRUE(r.Launch("redux_ops", {2, 1, 1}, {32, 1, 1}, {din, dout}).ok());
  auto out = r.mem().Download<int>(dout, 3 * n);
  for (int w = 0; w < 2; ++w) {
    int s = 0, mx = INT32_MIN;
    uint32_t o = 0;
    for (int l = 0; l < 32; ++l) {
      s += in[w * 32 + l];
      mx = std::max(mx, in[w * 32 + l]);
      o |= static_cast<uint32_t>(in[w * 32 + l]);
    }
    for (int l = 0; l < 32; ++l) {
      int t = w * 32 + l;
      EXPECT_EQ(out[3 * t], s);
      EXPECT_EQ(out[3 * t + 1], mx);
      EXPECT_EQ(out[3 * t + 2], static_cast<int>(o));
    }
  }
}

TEST_P(BlockCorpusTest, SharedReductionWithAtomics) {
  auto& r = Load("block");
  const int n = 4096;
  std::vector<float> in(n);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += (in[i] = static_cast<float>(i % 17) * 0.5f);
  uint64_t din = r.mem().Upload(in), dout = r.mem().Upload(std::vector<float>{0.0f});
  ASSERT_TRUE(r.Launch("block_reduce", {n / 256, 1, 1}, {256, 1, 1}, {din, dout, n}, 256 * 4).ok());
  EXPECT_FLOAT_EQ(r.mem().Download<float>(dout, 1)[0], static_cast<float>(sum));
}

TEST_P(BlockCorpusTest, SyncthreadsCountAndOr) {
  auto& r = Load("block");
  std::vector<int> in(3 * 96);
  for (int i = 0; i < 96; ++i) in[i] = i % 3 == 0 ? 1 : -1;  // block 0: 32 positive
  for (int i = 96; i < 192; ++i) in[i] = 1;                  // block 1: all positive
  for (int i = 192; i < 288; ++i) in[i] = i == 250 ? 5 : 0;  // block 2: one 5
  uint64_t din = r.mem().Upload(in), dout = r.mem().Alloc(9 * 4);
  ASSERT_TRUE(r.Launch("sync_counts", {3, 1, 1}, {96, 1, 1}, {din, dout}).ok());
  auto out = r.mem().Download<int>(dout, 9);
  EXPECT_EQ(out[0], 32);
  EXPECT_EQ(out[1], 0);
  EXPECT_EQ(out[2], 0);
  EXPECT_EQ(out[3], 96);
  EXPECT_EQ(out[4], 1);
  EXPECT_EQ(out[6], 1);
  EXPECT_EQ(out[7], 0);
  EXPECT_EQ(out[8], 1);
}

TEST_P(BlockCorpusTest, SharedAtomicHistogram) {
  auto& r = Load("block");
  const int n = 100000;
  std::vector<uint8_t> data(n);
  std::vector<uint32_t> expect(64, 0);
  for (auto& v : data) {
    v = static_cast<uint8_t>(rng_());
    ++expect[v & 63];
  }
  uint64_t dd = r.mem().Upload(data), dbins = r.mem().Upload(std::vector<uint32_t>(64, 0));
  ASSERT_TRUE(r.Launch("histogram", {8, 1, 1}, {128, 1, 1}, {dd, n, dbins}).ok());
  EXPECT_EQ(r.mem().Download<uint32_t>(dbins, 64), expect);
}

TEST_P(BlockCorpusTest, GlobalAtomicsAcrossBlocks) {
  auto& r = Load("block");
  const int threads = 64 * 16;
  std::vector<int> c = {0, 0, 0, 0, 0, -1, 0, 0, 1000, 3};
  uint64_t dc = r.mem().Upload(c), dw = r.mem().Upload(std::vector<uint64_t>{0}),
           df = r.mem().Upload(std::vector<float>{0}), dd = r.mem().Upload(std::vector<double>{0});
  ASSERT_TRUE(r.Launch("atomics_mix", {16, 1, 1}, {64, 1, 1}, {dc, dw, df, dd}).ok());
  auto out = r.mem().Download<int>(dc, 10);
  EXPECT_EQ(out[0], threads - 1);
  EXPECT_EQ(out[1], -(threads - 1));
  EXPECT_EQ(out[2], threads % 10);  // inc wraps at 9: 0..9 cycle
  EXPECT_EQ(out[3], -1);
  int x = 0;
  for (int t = 0; t < threads; ++t) x ^= t;
  EXPECT_EQ(out[4], x);
  EXPECT_EQ(out[5], static_cast<int>(0xFFFF0000u));
  EXPECT_EQ(out[6], 2 * threads);
  EXPECT_EQ(out[7], 77);
  EXPECT_EQ(out[8], 1000 - 3 * threads);
  EXPECT_EQ(r.mem().Download<uint64_t>(dw, 1)[0], uint64_t{threads} * (threads - 1) / 2);
  EXPECT_EQ(r.mem().Download<float>(df, 1)[0], 0.5f * threads);
  EXPECT_EQ(r.mem().Download<double>(dd, 1)[0], 0.25 * threads);
}

TEST_P(BlockCorpusTest, TiledSgemm) {
  auto& r = Load("block");
  const int n = 64;
  std::vector<float> a(n * n), b(n * n);
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto& v : a) v = d(rng_);
  for (auto& v : b) v = d(rng_);
  uint64_t da = r.mem().Upload(a), db = r.mem().Upload(b), dc = r.mem().Alloc(n * n * 4);
  ASSERT_TRUE(r.Launch("sgemm", {n / 16, n / 16, 1}, {16, 16, 1}, {n, da, db, dc}).ok());
  auto c = r.mem().Download<float>(dc, n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0;
      for (int k = 0; k < n; ++k) acc = std::fma(a[i * n + k], b[k * n + j], acc);
      ASSERT_NEAR(c[i * n + j], acc, 1e-4f) << i << "," << j;
    }
}

TEST_P(BlockCorpusTest, Nbody) {
  auto& r = Load("block");
  const int n = 256;
  std::vector<float> pos(4 * n);
  std::uniform_real_distribution<float> d(-10, 10);
  for (auto& v : pos) v = d(rng_);
  for (int i = 0; i < n; ++i) pos[4 * i + 3] = std::fabs(pos[4 * i + 3]) + 1.0f;
  uint64_t dp = r.mem().Upload(pos), da = r.mem().Alloc(3 * n * 4);
  ASSERT_TRUE(r.Launch("nbody", {n / 64, 1, 1}, {64, 1, 1}, {n, dp, da}, 64 * 16).ok());
  auto acc = r.mem().Download<float>(da, 3 * n);
  for (int i = 0; i < n; ++i) {
    double ax = 0, ay = 0, az = 0;
    for (int j = 0; j < n; ++j) {
      double dx = pos[4 * j] - pos[4 * i], dy = pos[4 * j + 1] - pos[4 * i + 1],
             dz = pos[4 * j + 2] - pos[4 * i + 2];
      double r2 = dx * dx + dy * dy + dz * dz + 0.01;
      double s = pos[4 * j + 3] / (r2 * std::sqrt(r2));
      ax += dx * s, ay += dy * s, az += dz * s;
    }
    ASSERT_NEAR(acc[3 * i], ax, 1e-3 * std::max(1.0, std::fabs(ax))) << i;
    ASSERT_NEAR(acc[3 * i + 1], ay, 1e-3 * std::max(1.0, std::fabs(ay))) << i;
    ASSERT_NEAR(acc[3 * i + 2], az, 1e-3 * std::max(1.0, std::fabs(az))) << i;
  }
}

TEST_P(BlockCorpusTest, ThreadIdsWithPartialWarp) {
  auto& r = Load("block");
  Dim3 grid{3, 2, 1}, block{7, 5, 2};
  const int total = 6 * 70;
  uint64_t dout = r.mem().Alloc(2 * total * 4);
  ASSERT_TRUE(r.Launch("thread_ids", grid, block, {dout}).ok());
  auto out = r.mem().Download<uint32_t>(dout, 2 * total);
  for (uint32_t by = 0; by < 2; ++by)
    for (uint32_t bx = 0; bx < 3; ++bx)
      for (uint32_t z = 0; z < 2; ++z)
        for (uint32_t y = 0; y < 5; ++y)
          for (uint32_t x = 0; x < 7; ++x) {
            uint32_t lin = (z * 5 + y) * 7 + x;
            uint32_t t = (by * 3 + bx) * 70 + lin;
            EXPECT_EQ(out[2 * t], x | (y << 8) | (z << 16) | (bx << 24));
            EXPECT_EQ(out[2 * t + 1], (lin % 32) | (7u << 8) | (2u << 16));
          }
}

PVGPU_CORPUS_INSTANTIATE(WarpCorpusTest);
PVGPU_CORPUS_INSTANTIATE(BlockCorpusTest);

}  // namespace
}  // namespace pvgpu::ptx
