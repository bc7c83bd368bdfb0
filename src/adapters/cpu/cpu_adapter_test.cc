// Cooperative launches through the cpu adapter: co-residency limits from the attributes the
// guest's occupancy calculator reads, the grid workspace's lifetime, faults and cancellation.
// Kernels: tests/ptx_corpus/coop.cu, compiled by nvcc at build time.
#include "adapters/cpu/cpu_adapter.h"

#include <cuda.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace pvgpu::adapters::cpu {
namespace {

// One kernel argument as raw bytes.
struct Arg {
  std::vector<uint8_t> bytes;
  template <typename T>
  Arg(T v) : bytes(sizeof(T)) {  // NOLINT: implicit on purpose
    std::memcpy(bytes.data(), &v, sizeof(T));
  }
};

class CpuAdapterCoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One worker: the grid's blocks cannot simply run one after another.
    CpuAdapterOptions options;
    options.memory_bytes = 1ull << 30;
    adapter_ = std::make_unique<CpuAdapter>(options, std::make_shared<ptx::Executor>(1));
    auto context = adapter_->CreateContext();
    ASSERT_TRUE(context.ok()) << context.status().ToString();
    ctx_ = std::move(context).value();
    std::ifstream file(std::string(PVGPU_PTX_CORPUS_DIR) + "/coop_sm75.ptx");
    std::stringstream text;
    text << file.rdbuf();
    const std::string ptx = text.str();
    ASSERT_FALSE(ptx.empty());
    std::string error_log, info_log;
    auto module = ctx_->LoadModule(ImageKind::kPtx,
                                   {reinterpret_cast<const uint8_t*>(ptx.data()), ptx.size()},
                                   &error_log, &info_log);
    ASSERT_TRUE(module.ok()) << module.status().ToString() << error_log;
    module_ = std::move(module).value();
  }

  Status Launch(const std::string& kernel, Dim3 grid, Dim3 block, std::vector<Arg> args,
                bool cooperative = true, uint32_t shared = 0) {
    const auto& kernels = module_->kernels();
    for (uint32_t k = 0; k < kernels.size(); ++k) {
      if (kernels[k].name != kernel) continue;
      std::vector<uint8_t> params(kernels[k].param_bytes);
      for (size_t i = 0; i < args.size() && i < kernels[k].param_offsets.size(); ++i)
        std::memcpy(params.data() + kernels[k].param_offsets[i], args[i].bytes.data(),
                    std::min<size_t>(args[i].bytes.size(), kernels[k].param_sizes[i]));
      LaunchConfig config;
      config.grid = grid;
      config.block = block;
      config.shared_bytes = shared;
      config.cooperative = cooperative;
      return ctx_->Launch(*module_, k, config, params, [](std::string_view) {});
    }
    return Error(Code::kNotFound, "no kernel " + kernel);
  }

  template <typename T>
  uint64_t Upload(const std::vector<T>& v) {
    auto a = ctx_->Allocate(v.size() * sizeof(T));
    EXPECT_TRUE(a.ok());
    EXPECT_TRUE(
        ctx_->Write(*a, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)}).ok());
    return *a;
  }
  template <typename T>
  std::vector<T> Download(uint64_t address, size_t n) {
    std::vector<T> v(n);
    EXPECT_TRUE(ctx_->Read(address, {reinterpret_cast<uint8_t*>(v.data()), n * sizeof(T)}).ok());
    return v;
  }

  std::unique_ptr<CpuAdapter> adapter_;
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Module> module_;
};

TEST_F(CpuAdapterCoopTest, ReportsCooperativeLaunchesOnOneDevice) {
  EXPECT_EQ(adapter_->info().attributes[CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH], 1);
  EXPECT_EQ(adapter_->info().attributes[CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH], 0);
  EXPECT_EQ(adapter_->info().attributes[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT], 1);
}

// With one multiprocessor, 128-thread blocks: 16 resident (the blocks-per-SM limit), so 16 run
// with three grid barriers and 17 are refused before anything runs.
TEST_F(CpuAdapterCoopTest, LargestResidentGridRunsAndOneMoreBlockIsRefused) {
  for (uint32_t blocks : {16u, 17u}) {
    const int n = static_cast<int>(blocks * 128) - 3;
    uint64_t data = Upload(std::vector<int>(n, -1)), sum = Upload(std::vector<long long>{-1});
    const uint64_t used = ctx_->used_bytes();
    Status s = Launch("coop_neighbours", {blocks, 1, 1}, {128, 1, 1}, {data, n, sum});
    EXPECT_EQ(ctx_->used_bytes(), used);
    auto out = Download<int>(data, n);
    if (blocks == 17) {
      EXPECT_EQ(s.code(), Code::kCooperativeLaunchTooLarge) << s.ToString();
      EXPECT_EQ(out, std::vector<int>(n, -1));
      continue;
    }
    ASSERT_TRUE(s.ok()) << s.ToString();
    long long want = 0;
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], i + (i + 1) % n) << i;
      want += out[i];
    }
    EXPECT_EQ(Download<long long>(sum, 1)[0], want);
  }
}

// The limit follows threads and shared memory per multiprocessor, as occupancy does: 1024-thread
// blocks fit 2 per SM (2048 threads), and so do blocks with 40 KiB of shared memory (96 KiB).
TEST_F(CpuAdapterCoopTest, LimitFollowsThreadsAndSharedMemoryPerMultiprocessor) {
  uint64_t out = Upload(std::vector<int>(3 * 1024, 0));
  EXPECT_TRUE(Launch("coop_valid", {2, 1, 1}, {1024, 1, 1}, {out}).ok());
  EXPECT_EQ(Download<int>(out, 2048), std::vector<int>(2048, 1));
  EXPECT_EQ(Launch("coop_valid", {3, 1, 1}, {1024, 1, 1}, {out}).code(),
            Code::kCooperativeLaunchTooLarge);
  std::vector<int> in(1000);
  for (int i = 0; i < 1000; ++i) in[i] = i % 17 - 8;
  uint64_t din = Upload(in), partial = Upload(std::vector<long long>(3, 0)),
           total = Upload(std::vector<long long>{0});
  const uint32_t shared = 40 << 10;
  Status s =
      Launch("coop_reduce", {2, 1, 1}, {64, 1, 1}, {din, 1000, partial, total}, true, shared);
  ASSERT_TRUE(s.ok()) << s.ToString();
  long long want = 0;
  for (int v : in) want += v;
  EXPECT_EQ(Download<long long>(total, 1)[0], want);
  EXPECT_EQ(Launch("coop_reduce", {3, 1, 1}, {64, 1, 1}, {din, 1000, partial, total}, true, shared)
                .code(),
            Code::kCooperativeLaunchTooLarge);
}

// The kernel finds a zeroed workspace in device memory (its barrier word flipped once by one
// grid barrier); it is gone after the launch.
TEST_F(CpuAdapterCoopTest, WorkspaceIsZeroedDeviceMemoryForTheLaunchOnly) {
  uint64_t out = Upload(std::vector<uint64_t>(3, 7));
  const uint64_t used = ctx_->used_bytes();
  Status s = Launch("coop_workspace", {4, 1, 1}, {32, 1, 1}, {out});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto got = Download<uint64_t>(out, 3);
  EXPECT_NE(got[0], 0u);
  EXPECT_EQ(got[1], 0u);
  EXPECT_EQ(got[2], 0x80000000u);
  EXPECT_EQ(ctx_->used_bytes(), used);
  uint8_t byte;
  EXPECT_FALSE(ctx_->Read(got[0], {&byte, 1}).ok());
}

TEST_F(CpuAdapterCoopTest, OrdinaryLaunchesHaveNoWorkspace) {
  uint64_t out = Upload(std::vector<int>(128, 7));
  ASSERT_TRUE(Launch("coop_valid", {2, 1, 1}, {64, 1, 1}, {out}, false).ok());
  EXPECT_EQ(Download<int>(out, 128), std::vector<int>(128, 0));
}

TEST_F(CpuAdapterCoopTest, FaultIsReportedAndTheWorkspaceFreed) {
  uint64_t data = Upload(std::vector<int>(8 * 64, 0));
  const uint64_t used = ctx_->used_bytes();
  Status s = Launch("coop_fault", {8, 1, 1}, {64, 1, 1}, {data, int64_t{1} << 32, 3u});
  EXPECT_EQ(s.code(), Code::kIllegalAddress) << s.ToString();
  EXPECT_NE(s.message().find("block (3,0,0)"), std::string::npos) << s.message();
  EXPECT_EQ(ctx_->used_bytes(), used);
  EXPECT_EQ(Download<int>(data, 8 * 64), std::vector<int>(8 * 64, 1));
}

// Cancel (the guest went away) ends a cooperative kernel that would never end; the workspace
// is freed.
TEST_F(CpuAdapterCoopTest, NeverEndingKernelIsCancelled) {
  uint64_t flag = Upload(std::vector<int>{0}), rounds = Upload(std::vector<uint32_t>{0});
  const uint64_t used = ctx_->used_bytes();
  Status s;
  std::thread launcher([&] { s = Launch("coop_forever", {16, 1, 1}, {64, 1, 1}, {flag, rounds}); });
  // Cancel once the blocks have passed many grid barriers together; the deadline only turns a
  // hang into a failure.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  uint32_t passed = 0;
  while (passed < 50 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(ctx_->Read(rounds, {reinterpret_cast<uint8_t*>(&passed), 4}).ok());
  }
  EXPECT_GE(passed, 50u);
  ctx_->Cancel();
  launcher.join();
  EXPECT_EQ(s.code(), Code::kLaunchFailed) << s.ToString();
  EXPECT_EQ(ctx_->used_bytes(), used);
}

}  // namespace
}  // namespace pvgpu::adapters::cpu
