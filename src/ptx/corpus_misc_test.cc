// printf, assert, faults, cancellation, calls, recursion, local memory and module globals from
// tests/ptx_corpus/misc.cu.
#include <bit>
#include <thread>

#include "ptx/corpus_fixture.h"

namespace pvgpu::ptx {
namespace {

using MiscCorpusTest = CorpusTest;

TEST_P(MiscCorpusTest, Printf) {
  auto& r = Load("misc");
  const char text[] = "hello";
  uint64_t ds = r.mem().Upload(std::vector<char>(text, text + sizeof(text)));
  ASSERT_TRUE(r.Launch("printer", {1, 1, 1}, {32, 1, 1}, {-42, 2.5f, ds}).ok());
  EXPECT_EQ(
      r.printed(),
      "t0 x=-42 f=2.500 e=2.500000e+00 s=hello u=4294967254 hex=ffffffd6 c=A ll=-42000000000 p=%\n"
      "t1 x=-42 f=2.500 e=2.500000e+00 s=hello u=4294967254 hex=ffffffd6 c=B ll=-42000000000 "
      "p=%\n");
}

TEST_P(MiscCorpusTest, AssertFails) {
  auto& r = Load("misc");
  ASSERT_TRUE(r.Launch("asserter", {1, 1, 1}, {64, 1, 1}, {64}).ok());
  Status s = r.Launch("asserter", {2, 1, 1}, {64, 1, 1}, {40});
  EXPECT_EQ(s.code(), Code::kAssert) << s.ToString();
  std::string out = r.printed();
  EXPECT_NE(out.find("misc.cu:"), std::string::npos) << out;
  EXPECT_NE(out.find("block: ["), std::string::npos) << out;
  EXPECT_NE(out.find("thread: [40,0,0] Assertion `threadIdx.x < limit` failed."), std::string::npos)
      << out;
}

TEST_P(MiscCorpusTest, TrapIsLaunchFailed) {
  auto& r = Load("misc");
  ASSERT_TRUE(r.Launch("trapper", {1, 1, 1}, {32, 1, 1}, {99}).ok());
  Status s = r.Launch("trapper", {4, 1, 1}, {32, 1, 1}, {7});
  EXPECT_EQ(s.code(), Code::kLaunchFailed) << s.ToString();
  EXPECT_NE(s.message().find("trap"), std::string::npos);
}

TEST_P(MiscCorpusTest, InfiniteLoopIsCancellable) {
  auto& r = Load("misc");
  uint64_t flag = r.mem().Upload(std::vector<int>{0});
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  Status s = r.Launch("spin", {4, 1, 1}, {64, 1, 1}, {flag}, 0, &cancel);
  canceller.join();
  EXPECT_EQ(s.code(), Code::kLaunchFailed) << s.ToString();
}

TEST_P(MiscCorpusTest, OutOfBoundsStore) {
  auto& r = Load("misc");
  uint64_t p = r.mem().Alloc(64 * 4);
  ASSERT_TRUE(r.Launch("oob_store", {1, 1, 1}, {64, 1, 1}, {p, int64_t{0}}).ok());
  Status s = r.Launch("oob_store", {1, 1, 1}, {64, 1, 1}, {p, int64_t{1}});
  EXPECT_EQ(s.code(), Code::kIllegalAddress) << s.ToString();
  EXPECT_NE(s.message().find("oob_store"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("thread (63,0,0)"), std::string::npos) << s.message();
  s = r.Launch("oob_store", {1, 1, 1}, {1, 1, 1}, {uint64_t{0}, int64_t{0}});
  EXPECT_EQ(s.code(), Code::kIllegalAddress) << s.ToString();
}

TEST_P(MiscCorpusTest, MisalignedLoad) {
  auto& r = Load("misc");
  uint64_t p = r.mem().Alloc(64), out = r.mem().Alloc(4);
  Status s = r.Launch("misaligned_load", {1, 1, 1}, {1, 1, 1}, {p, out});
  EXPECT_EQ(s.code(), Code::kMisalignedAddress) << s.ToString();
}

TEST_P(MiscCorpusTest, CallsAndRecursion) {
  auto& r = Load("misc");
  const int n = 64;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = i * 5 + 1;
  uint64_t din = r.mem().Upload(in), dout = r.mem().Alloc(4 * n * 4);
  Status s = r.Launch("calls", {1, 1, 1}, {n, 1, 1}, {din, dout});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto out = r.mem().Download<int>(dout, 4 * n);
  auto fib = [](int k) {
    int a = 0, b = 1;
    for (int i = 0; i < k; ++i) std::tie(a, b) = std::make_pair(b, a + b);
    return a;
  };
  for (int t = 0; t < n; ++t) {
    EXPECT_EQ(out[4 * t], in[t] * 2);
    EXPECT_EQ(std::bit_cast<float>(out[4 * t + 1]), t + 1.0f);
    EXPECT_EQ(out[4 * t + 2], in[t] * 2);
    EXPECT_EQ(out[4 * t + 3], fib(in[t] & 15)) << t;
  }
}

TEST_P(MiscCorpusTest, DeepRecursionOverflowsStack) {
  auto& r = Load("misc");
  uint64_t dout = r.mem().Alloc(32 * 4);
  ASSERT_TRUE(r.Launch("deep_recursion", {1, 1, 1}, {32, 1, 1}, {100, dout}).ok());
  int expect = 0;
  for (int k = 1; k <= 100; ++k) expect = (expect ^ k) + 1;
  EXPECT_EQ(r.mem().Download<int>(dout, 1)[0], expect);
  Status s = r.Launch("deep_recursion", {1, 1, 1}, {32, 1, 1}, {1000000, dout});
  EXPECT_EQ(s.code(), Code::kHardwareStackError) << s.ToString();
}

TEST_P(MiscCorpusTest, LocalArray) {
  auto& r = Load("misc");
  const int n = 96;
  std::vector<int> idx(n);
  for (int i = 0; i < n; ++i) idx[i] = static_cast<int>(rng_() % 1000);
  uint64_t di = r.mem().Upload(idx), dout = r.mem().Alloc(n * 4);
  ASSERT_TRUE(r.Launch("local_array", {1, 1, 1}, {n, 1, 1}, {di, dout}).ok());
  auto out = r.mem().Download<int>(dout, n);
  for (int t = 0; t < n; ++t) {
    int a = idx[t] & 31, b = (idx[t] + 7) & 31;
    EXPECT_EQ(out[t], a * a + t + b * b + t) << t;
  }
}

TEST_P(MiscCorpusTest, ModuleGlobalsAndConstants) {
  auto& r = Load("misc");
  const int n = 64;
  uint64_t dout = r.mem().Alloc(n * 4);
  ASSERT_TRUE(r.Launch("globals", {1, 1, 1}, {n, 1, 1}, {dout}).ok());
  auto out = r.mem().Download<float>(dout, n);
  const int table[8] = {3, 1, 4, 1, 5, 9, 2, 6};
  const float scale[2] = {0.5f, 4.0f};
  for (int t = 0; t < n; ++t)
    EXPECT_EQ(out[t], table[t & 7] * scale[t & 1] + table[2 + (t & 1)]) << t;
  uint64_t counter = r.GlobalAddress("g_counter");
  ASSERT_NE(counter, 0u);
  EXPECT_EQ(r.mem().Download<int>(counter, 1)[0], n);
}

TEST_P(MiscCorpusTest, VirtualCallsAndDp4a) {
  auto& r = Load("misc");
  const int n = 64;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<int>(rng_() % 2000) - 1000;
  uint64_t din = r.mem().Upload(in), dout = r.mem().Alloc(2 * n * 4);
  Status s = r.Launch("virtual_calls", {1, 1, 1}, {n, 1, 1}, {din, dout});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto out = r.mem().Download<int>(dout, 2 * n);
  for (int t = 0; t < n; ++t) {
    int v = in[t];
    EXPECT_EQ(out[2 * t], (v & 1) ? v * v / 2 : v * v) << t;
    int dp = 7;
    const int8_t b[4] = {-2, 2, -1, 1};  // 0x01FF02FE as signed bytes, low first
    for (int k = 0; k < 4; ++k)
      dp += static_cast<int8_t>(static_cast<uint32_t>(v) >> (8 * k)) * b[k];
    EXPECT_EQ(out[2 * t + 1], dp) << t;
  }
}

PVGPU_CORPUS_INSTANTIATE(MiscCorpusTest);

TEST_P(MiscCorpusTest, ClusterOfOneBlock) {
  if (GetParam() < 90) GTEST_SKIP() << "clusters start at sm_90";
  auto& r = Load("misc");
  constexpr int kBlocks = 3;
  std::vector<int> in(kBlocks * 64);
  for (int i = 0; i < kBlocks * 64; ++i) in[i] = i * 7 - 100;
  uint64_t din = r.mem().Upload(in), dout = r.mem().Alloc((kBlocks * 64 + kBlocks * 3) * 4);
  ASSERT_TRUE(r.Launch("cluster_of_one", {kBlocks, 1, 1}, {64, 1, 1}, {din, dout}).ok());
  auto out = r.mem().Download<int>(dout, kBlocks * 64 + kBlocks * 3);
  for (int b = 0; b < kBlocks; ++b) {
    int want = 0;
    for (int i = 0; i < 64; ++i) want += in[b * 64 + i];
    for (int t = 0; t < 64; ++t) ASSERT_EQ(out[b * 64 + t], want) << b << "," << t;
    EXPECT_EQ(out[kBlocks * 64 + b * 3], 0);      // rank
    EXPECT_EQ(out[kBlocks * 64 + b * 3 + 1], 1);  // blocks in the cluster
    EXPECT_EQ(out[kBlocks * 64 + b * 3 + 2], 0);  // index in the cluster
  }
}

}  // namespace
}  // namespace pvgpu::ptx
