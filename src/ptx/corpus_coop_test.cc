// Cooperative launches (tests/ptx_corpus/coop.cu): grid barriers and blocks that wait on each
// other, with more blocks than worker threads, checked against host references; faults and
// cancellation inside such launches.
#include <chrono>
#include <numeric>
#include <thread>

#include "ptx/cooperative_budget.h"
#include "ptx/corpus_fixture.h"

namespace pvgpu::ptx {
namespace {

using CoopCorpusTest = CorpusTest;

// One worker thread: a block that ran to completion before the others started would never see
// them arrive at a grid barrier.
Executor& OneWorker() {
  static Executor* e = new Executor(1);
  return *e;
}

void CheckNeighbours(testing::Runner& r, Executor& ex, uint32_t blocks, uint32_t threads) {
  const int n = static_cast<int>(blocks * threads) - 3;
  uint64_t data = r.mem().Alloc(n * 4), sum = r.mem().Alloc(8);
  Status s =
      r.LaunchCooperative(ex, "coop_neighbours", {blocks, 1, 1}, {threads, 1, 1}, {data, n, sum});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto out = r.mem().Download<int>(data, n);
  long long want_sum = 0;
  for (int i = 0; i < n; ++i) {
    const int want = i + (i + 1) % n;
    want_sum += want;
    ASSERT_EQ(out[i], want) << i;
  }
  EXPECT_EQ(r.mem().Download<long long>(sum, 1)[0], want_sum);
}

TEST_P(CoopCorpusTest, GridSyncWithMoreBlocksThanWorkers) {
  auto& r = Load("coop");
  CheckNeighbours(r, OneWorker(), 16, 128);
  CheckNeighbours(r, testing::SharedExecutor(), 32, 96);  // a partial warp per block
}

TEST_P(CoopCorpusTest, ReductionInPhases) {
  auto& r = Load("coop");
  const int n = 50000;
  std::vector<int> in(n);
  for (int& v : in) v = static_cast<int>(rng_() % 2001) - 1000;
  const long long want = std::accumulate(in.begin(), in.end(), 0LL);
  uint64_t din = r.mem().Upload(in);
  for (uint32_t blocks : {16u, 13u}) {  // log2 levels of barriers, and an odd tree
    uint64_t partial = r.mem().Alloc(blocks * 8), out = r.mem().Alloc(8);
    Status s = r.LaunchCooperative(OneWorker(), "coop_reduce", {blocks, 1, 1}, {64, 1, 1},
                                   {din, n, partial, out}, 64 * 8);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(r.mem().Download<long long>(out, 1)[0], want) << blocks;
  }
}

TEST_P(CoopCorpusTest, StencilWithABarrierPerIteration) {
  auto& r = Load("coop");
  const int n = 1000;  // more elements than threads: a grid-stride loop between barriers
  std::vector<uint32_t> init(n);
  for (uint32_t& v : init) v = static_cast<uint32_t>(rng_() % 1000003);
  for (int iters : {12, 7}) {
    uint64_t a = r.mem().Upload(init), b = r.mem().Alloc(n * 4);
    Status s =
        r.LaunchCooperative(OneWorker(), "coop_stencil", {16, 1, 1}, {32, 1, 1}, {a, b, n, iters});
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::vector<uint32_t> cur = init, next(n);
    for (int it = 0; it < iters; ++it) {
      for (int i = 0; i < n; ++i) {
        const uint32_t l = cur[(i + n - 1) % n], c = cur[i], rt = cur[(i + 1) % n];
        next[i] = (l * 3u + c * 5u + (rt ^ 0x9e37u)) % 1000003u;
      }
      cur.swap(next);
    }
    EXPECT_EQ(r.mem().Download<uint32_t>(iters % 2 == 0 ? a : b, n), cur) << iters;
  }
}

TEST_P(CoopCorpusTest, GridGroupRanksInA2dGrid) {
  auto& r = Load("coop");
  const Dim3 grid{3, 2, 1}, block{16, 2, 2};
  const uint64_t threads = grid.Count() * block.Count();
  uint64_t out = r.mem().Alloc(threads * 8 * 8);
  Status s = r.LaunchCooperative(OneWorker(), "coop_ranks", grid, block, {out});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto o = r.mem().Download<uint64_t>(out, threads * 8);
  for (uint32_t by = 0; by < grid.y; ++by) {
    for (uint32_t bx = 0; bx < grid.x; ++bx) {
      for (uint32_t t = 0; t < block.Count(); ++t) {
        const uint32_t tx = t % block.x;
        const uint64_t block_rank = by * grid.x + bx, rank = block_rank * block.Count() + t;
        const uint64_t* v = &o[8 * rank];
        ASSERT_EQ(v[0], rank);
        EXPECT_EQ(v[1], threads);
        EXPECT_EQ(v[2], threads);
        EXPECT_EQ(v[3], block_rank);
        EXPECT_EQ(v[4], grid.Count());
        EXPECT_EQ(v[5], 1u);
        EXPECT_EQ(v[6], (uint64_t{bx} << 40) | (uint64_t{by} << 20));
        EXPECT_EQ(v[7], (uint64_t{bx * block.x + tx} << 40) | (uint64_t{grid.y} << 20) | grid.z);
      }
    }
  }
}

TEST_P(CoopCorpusTest, IsValidOnlyInACooperativeLaunch) {
  auto& r = Load("coop");
  uint64_t out = r.mem().Upload(std::vector<int>(128, 7));
  ASSERT_TRUE(r.Launch("coop_valid", {2, 1, 1}, {64, 1, 1}, {out}).ok());
  EXPECT_EQ(r.mem().Download<int>(out, 128), std::vector<int>(128, 0));
  Status s = r.LaunchCooperative(OneWorker(), "coop_valid", {2, 1, 1}, {64, 1, 1}, {out});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(r.mem().Download<int>(out, 128), std::vector<int>(128, 1));
}

// Outside a cooperative launch %envreg1/%envreg2 are 0, and cooperative_groups traps.
TEST_P(CoopCorpusTest, GridSyncInAnOrdinaryLaunchTraps) {
  auto& r = Load("coop");
  uint64_t data = r.mem().Alloc(64 * 4), sum = r.mem().Alloc(8);
  Status s = r.Launch("coop_neighbours", {2, 1, 1}, {32, 1, 1}, {data, 64, sum});
  EXPECT_EQ(s.code(), Code::kLaunchFailed) << s.ToString();
  EXPECT_NE(s.message().find("trap"), std::string::npos) << s.message();
}

TEST_P(CoopCorpusTest, SplitBarrier) {
  auto& r = Load("coop");
  const int n = 12 * 64 - 5;
  uint64_t data = r.mem().Alloc(n * 4), other = r.mem().Alloc(n * 4);
  Status s =
      r.LaunchCooperative(OneWorker(), "coop_split", {12, 1, 1}, {64, 1, 1}, {data, other, n});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto out = r.mem().Download<int>(other, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], i * i + 2 * (n - 1 - i) + 1) << i;
}

// Without cooperative groups: block b spins until block b + 1 has finished, so they finish in
// reverse order, whatever order the single worker starts them in.
TEST_P(CoopCorpusTest, BlocksWaitingOnEachOtherInAChain) {
  auto& r = Load("coop");
  const uint32_t blocks = 16;
  uint64_t flags = r.mem().Upload(std::vector<int>(blocks, 0));
  uint64_t order = r.mem().Upload(std::vector<int>(blocks + 1, 0));
  Status s =
      r.LaunchCooperative(OneWorker(), "coop_chain", {blocks, 1, 1}, {32, 1, 1}, {flags, order});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto got = r.mem().Download<int>(order, blocks + 1);
  for (uint32_t b = 0; b < blocks; ++b) EXPECT_EQ(got[b], static_cast<int>(blocks - 1 - b)) << b;
  EXPECT_EQ(got[blocks], static_cast<int>(blocks));
}

TEST_P(CoopCorpusTest, SpinLockAcrossBlocks) {
  auto& r = Load("coop");
  const uint32_t blocks = 12;
  const int iters = 200;
  uint64_t lock = r.mem().Upload(std::vector<int>{0}),
           counter = r.mem().Upload(std::vector<int>{0});
  Status s = r.LaunchCooperative(testing::SharedExecutor(), "coop_lock", {blocks, 1, 1}, {64, 1, 1},
                                 {lock, counter, iters});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(r.mem().Download<int>(counter, 1)[0], static_cast<int>(blocks) * iters);
  EXPECT_EQ(r.mem().Download<int>(lock, 1)[0], 0);
}

// A fault in one block ends the launch although the others wait at a barrier it never reaches.
TEST_P(CoopCorpusTest, FaultStopsBlocksWaitingAtABarrier) {
  auto& r = Load("coop");
  const uint32_t blocks = 8, threads = 64;
  uint64_t data = r.mem().Alloc(blocks * threads * 4);
  Status s = r.LaunchCooperative(OneWorker(), "coop_fault", {blocks, 1, 1}, {threads, 1, 1},
                                 {data, int64_t{1} << 30, 5u});
  EXPECT_EQ(s.code(), Code::kIllegalAddress) << s.ToString();
  EXPECT_NE(s.message().find("coop_fault"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("block (5,0,0)"), std::string::npos) << s.message();
  auto out = r.mem().Download<int>(data, blocks * threads);
  EXPECT_EQ(out, std::vector<int>(blocks * threads, 1));  // nobody passed the second barrier
  // The executor is usable afterwards.
  CheckNeighbours(r, OneWorker(), 4, 32);
}

TEST_P(CoopCorpusTest, NeverEndingCooperativeKernelIsCancellable) {
  auto& r = Load("coop");
  uint64_t flag = r.mem().Upload(std::vector<int>{0});
  uint64_t rounds = r.mem().Upload(std::vector<uint32_t>{0});
  std::atomic<bool> cancel{false};
  Status s;
  std::thread launcher([&] {
    s = r.LaunchCooperative(OneWorker(), "coop_forever", {8, 1, 1}, {64, 1, 1}, {flag, rounds}, 0,
                            &cancel);
  });
  // Cancel once the blocks have passed many grid barriers together. The deadline only turns a
  // hang into a failure.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  const volatile uint32_t* count = reinterpret_cast<uint32_t*>(r.mem().Host(rounds));
  while (*count < 50 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(*count, 50u);
  cancel = true;
  launcher.join();
  EXPECT_EQ(s.code(), Code::kLaunchFailed) << s.ToString();
  EXPECT_NE(s.message().find("cancelled"), std::string::npos) << s.message();
  CheckNeighbours(r, OneWorker(), 4, 32);
}

// Every block's registers, local and shared memory stay resident: a grid whose state would
// not fit the engine's bound is refused before anything runs.
TEST_P(CoopCorpusTest, ResidentStateOverTheLimitIsRefused) {
  auto& r = Load("coop");
  uint64_t flag = r.mem().Upload(std::vector<int>{1}), rounds = r.mem().Upload(std::vector<int>{0});
  Status s = r.LaunchCooperative(OneWorker(), "coop_forever", {1u << 20, 1, 1}, {1024, 1, 1},
                                 {flag, rounds});
  EXPECT_EQ(s.code(), Code::kLaunchOutOfResources) << s.ToString();
  s = r.LaunchCooperative(OneWorker(), "coop_forever", {4, 1, 1}, {1024, 1, 1}, {flag, rounds});
  EXPECT_TRUE(s.ok()) << s.ToString();  // flag set: the kernel ends at once
}

// What cooperative launches hold resident is bounded for all of them together: a launch that
// fits alone but not beside a running one waits for it to end (and gives up if cancelled
// meanwhile); one that can never fit is refused at once.
TEST_P(CoopCorpusTest, LaunchesWaitForResidentStateOthersHold) {
  auto& r = Load("coop");
  auto upload = [&r](int v) { return r.mem().Upload(std::vector<int>{v}); };
  auto value = [&r](uint64_t dptr) { return *reinterpret_cast<volatile int*>(r.mem().Host(dptr)); };
  // What one block of this shape holds resident: the refusal of a grid far too large names it.
  const uint64_t flag = upload(0), rounds = upload(0);
  Status s = r.LaunchCooperative(OneWorker(), "coop_forever", {1u << 20, 1, 1}, {64, 1, 1},
                                 {flag, rounds});
  ASSERT_EQ(s.code(), Code::kLaunchOutOfResources) << s.ToString();
  const size_t at = s.message().find(" needs ");
  ASSERT_NE(at, std::string::npos) << s.message();
  const uint64_t per_block = std::stoull(s.message().substr(at + 7));
  SetCooperativeResidentBudgetForTesting(6 * per_block);  // one 4-block launch, not two
  Executor ex(2);  // workers to spare: only the budget holds the second launch back

  // Ended by cancellation: a flag would let some blocks leave while others wait at a barrier.
  std::atomic<bool> cancel_first{false};
  Status first;
  std::thread a([&] {
    first = r.LaunchCooperative(ex, "coop_forever", {4, 1, 1}, {64, 1, 1}, {flag, rounds}, 0,
                                &cancel_first);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (value(rounds) < 5 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_GE(value(rounds), 5);  // the first launch is running

  // The second waits behind it: it passes no barrier, and gives up when cancelled.
  const uint64_t flag2 = upload(0), rounds2 = upload(0);
  std::atomic<bool> cancel{false};
  Status second;
  std::thread b([&] {
    second = r.LaunchCooperative(ex, "coop_forever", {4, 1, 1}, {64, 1, 1}, {flag2, rounds2}, 0,
                                 &cancel);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(value(rounds2), 0);
  cancel = true;
  b.join();
  EXPECT_EQ(second.code(), Code::kLaunchFailed) << second.ToString();
  EXPECT_NE(second.message().find("waiting"), std::string::npos) << second.message();
  EXPECT_EQ(value(rounds2), 0);

  // More than the whole bound is refused, not left waiting.
  s = r.LaunchCooperative(ex, "coop_forever", {7, 1, 1}, {64, 1, 1}, {flag2, rounds2});
  EXPECT_EQ(s.code(), Code::kLaunchOutOfResources) << s.ToString();

  // Once the first launch ends, the second runs.
  cancel_first = true;
  a.join();
  EXPECT_EQ(first.code(), Code::kLaunchFailed) << first.ToString();
  *reinterpret_cast<volatile int*>(r.mem().Host(flag2)) = 1;
  s = r.LaunchCooperative(ex, "coop_forever", {4, 1, 1}, {64, 1, 1}, {flag2, rounds2});
  EXPECT_TRUE(s.ok()) << s.ToString();
  SetCooperativeResidentBudgetForTesting(kMaxCooperativeResidentBytes);
}

// A cooperative launch and ordinary ones share the workers: neither starves the other.
TEST_P(CoopCorpusTest, SharesTheWorkersWithOrdinaryLaunches) {
  auto& r = Load("coop");
  std::thread other([&] {
    auto& ex = testing::SharedExecutor();
    for (int i = 0; i < 20; ++i) CheckNeighbours(r, ex, 8, 64);
  });
  for (int i = 0; i < 20; ++i) {
    uint64_t out = r.mem().Upload(std::vector<int>(256, 7));
    ASSERT_TRUE(r.Launch("coop_valid", {4, 1, 1}, {64, 1, 1}, {out}).ok());
    EXPECT_EQ(r.mem().Download<int>(out, 256), std::vector<int>(256, 0));
  }
  other.join();
}

PVGPU_CORPUS_INSTANTIATE(CoopCorpusTest);

}  // namespace
}  // namespace pvgpu::ptx
