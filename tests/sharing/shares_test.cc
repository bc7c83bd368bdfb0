// Compute shares, priorities and accounting against a real pvgpud (docs/sharing.md): two
// guests saturating one cpu adapter through listeners of shares 3 and 1 complete kernels in
// that ratio; what the host counts for a guest (kernels, bytes, memory) is what it did, and
// NVML in the guest and `pvgpu smi` say the same.
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/hostile/harness.h"

namespace pvgpu::hostile {
namespace {

using nlohmann::json;

std::string ListenerConfig(const std::string& dir) {
  json config = {{"listeners",
                  json::array({{{"address", "unix:" + dir + "/heavy.sock"},
                                {"compute_share", 3},
                                {"mode", "0666"}},
                               {{"address", "unix:" + dir + "/light.sock"},
                                {"compute_share", 1},
                                {"mode", "0666"}},
                               {{"address", "unix:" + dir + "/urgent.sock"},
                                {"priority", "high"},
                                {"mode", "0666"}}})}};
  const std::string path = dir + "/config.json";
  std::ofstream(path) << config.dump(2);
  return path;
}

class SharesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char dir[] = "/tmp/pvgpu-sharing-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    // Two workers whatever the machine, so that the ratio is the scheduler's, not the cores'.
    daemon_ = new Daemon({"--config", ListenerConfig(dir_), "--threads", "2"});
  }
  static void TearDownTestSuite() {
    delete daemon_;
    for (const char* name : {"heavy.sock", "light.sock", "urgent.sock", "config.json"}) {
      std::remove((dir_ + "/" + name).c_str());
    }
    rmdir(dir_.c_str());
  }
  static std::string Socket(const char* name) { return "unix:" + dir_ + "/" + name; }

  // Kernels the host counted for the sessions of each listener (by socket name).
  static std::map<std::string, uint64_t> KernelsByListener() {
    std::map<std::string, uint64_t> out;
    const json status = daemon_->Status();
    for (const json& s : status["sessions"]) {
      const std::string listener = s.value("listener", "");
      const std::string name = listener.substr(listener.rfind('/') + 1);
      for (const json& u : s["usage"]) out[name] += u.value("kernels", uint64_t{0});
    }
    return out;
  }

  static inline std::string dir_;
  static inline Daemon* daemon_ = nullptr;
};

TEST_F(SharesTest, SharesThreeAndOneCompleteKernelsThreeToOne) {
  // Each kernel is 16 blocks, so that either guest alone would keep both workers busy, and
  // long enough (even compiled) that the guests' synchronize after every 8 launches leaves
  // their queues empty only briefly: while one guest's queue is empty the other may use the
  // whole adapter, which is right, but it is not the ratio of two backlogged guests.
  const std::vector<std::string> flood = {PVGPU_SHARE_WORKER, "flood", PVGPU_SHARE_PTX, "5.5",
                                          "16",               "24000"};
  GuestProcess heavy(Socket("heavy.sock"), flood);
  GuestProcess light(Socket("light.sock"), flood);
  ASSERT_EQ(heavy.ReadLine(), "ready");
  ASSERT_EQ(light.ReadLine(), "ready");
  heavy.WriteLine("go");
  light.WriteLine("go");
  // Counted by the host over windows in which both are surely flooding: after both started,
  // well before either stops. Kernels, not time, are what the shares must divide. The median
  // of six half-second windows: one window in which the machine's other load kept a guest's
  // threads off the cores says nothing about the scheduler.
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  std::vector<double> ratios;
  double heavy_kernels = 0, light_kernels = 0;
  auto previous = KernelsByListener();
  for (int window = 0; window < 6; ++window) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const auto now = KernelsByListener();
    const double h = double(now.at("heavy.sock") - previous.at("heavy.sock"));
    const double l = double(now.at("light.sock") - previous.at("light.sock"));
    heavy_kernels += h;
    light_kernels += l;
    if (l > 0) ratios.push_back(h / l);
    previous = now;
  }
  ASSERT_GT(light_kernels, 10) << "the light guest must not be starved";
  ASSERT_GE(ratios.size(), 4u);
  std::sort(ratios.begin(), ratios.end());
  const double ratio = (ratios[(ratios.size() - 1) / 2] + ratios[ratios.size() / 2]) / 2;
  EXPECT_GT(ratio, 3.0 * 0.85) << heavy_kernels << " : " << light_kernels;
  EXPECT_LT(ratio, 3.0 * 1.15) << heavy_kernels << " : " << light_kernels;
  // The guests' own counts (their kernels' counter, copied back) confirm every launch ran.
  const std::string heavy_done = heavy.ReadLine();
  const std::string light_done = light.ReadLine();
  EXPECT_EQ(heavy_done.rfind("kernels ", 0), 0u) << heavy_done;
  EXPECT_EQ(light_done.rfind("kernels ", 0), 0u) << light_done;
  EXPECT_EQ(heavy.Wait(), 0);
  EXPECT_EQ(light.Wait(), 0);
  std::printf("shares 3:1 -> kernels %.0f : %.0f (median window ratio %.2f)\n", heavy_kernels,
              light_kernels, ratio);
}

TEST_F(SharesTest, AnIdleGuestsShareGoesToTheOther) {
  // The light guest alone gets both workers: as many kernels per second as the heavy one
  // would alone, not a quarter of them.
  const std::vector<std::string> flood = {PVGPU_SHARE_WORKER, "flood", PVGPU_SHARE_PTX, "1.5",
                                          "16",               "24000"};
  GuestProcess light(Socket("light.sock"), flood);
  ASSERT_EQ(light.ReadLine(), "ready");
  light.WriteLine("go");
  const std::string light_done = light.ReadLine();
  GuestProcess heavy(Socket("heavy.sock"), flood);
  ASSERT_EQ(heavy.ReadLine(), "ready");
  heavy.WriteLine("go");
  const std::string heavy_done = heavy.ReadLine();
  ASSERT_EQ(light.Wait(), 0);
  ASSERT_EQ(heavy.Wait(), 0);
  const double light_alone = std::atof(light_done.c_str() + std::strlen("kernels "));
  const double heavy_alone = std::atof(heavy_done.c_str() + std::strlen("kernels "));
  ASSERT_GT(heavy_alone, 0);
  // Not a timing assertion: a share of 1 against 3 would be a quarter; alone it is the whole.
  EXPECT_GT(light_alone / heavy_alone, 0.6) << light_alone << " vs " << heavy_alone;
}

TEST_F(SharesTest, HostNvmlAndSmiAgreeWithTheWorkDone) {
  constexpr int kKernels = 40;
  constexpr uint64_t kBytes = 1 << 20;
  GuestProcess guest(Socket("heavy.sock"), {PVGPU_SHARE_WORKER, "account", PVGPU_SHARE_PTX,
                                            std::to_string(kKernels), std::to_string(kBytes)});
  const std::string nvml = guest.ReadLine();
  ASSERT_EQ(nvml.rfind("nvml ", 0), 0u) << nvml;
  ASSERT_EQ(guest.ReadLine(), "done");
  unsigned long long nvml_memory = 0, start = 0;
  unsigned util = 0, accounting_util = 0, samples = 0, sm = 0;
  ASSERT_EQ(std::sscanf(nvml.c_str(),
                        "nvml memory %llu util %u accounting_util %u start %llu samples %u sm %u",
                        &nvml_memory, &util, &accounting_util, &start, &samples, &sm),
            6)
      << nvml;

  // The host's own count of this process's sessions.
  const json status = daemon_->Status();
  uint64_t kernels = 0, htod = 0, dtoh = 0, memory = 0, busy = 0, started = 0;
  int share = 0;
  for (const json& s : status["sessions"]) {
    if (s.value("pid", 0) != guest.pid()) continue;
    memory += s.value("memory_used", uint64_t{0});
    share = std::max(share, s.value("compute_share", 0));
    const uint64_t t = s.value("started_us", uint64_t{0});
    if (started == 0 || t < started) started = t;
    for (const json& u : s["usage"]) {
      kernels += u.value("kernels", uint64_t{0});
      htod += u.value("bytes_htod", uint64_t{0});
      dtoh += u.value("bytes_dtoh", uint64_t{0});
      busy += u.value("busy_ns", uint64_t{0});
    }
  }
  EXPECT_EQ(kernels, uint64_t{kKernels});
  EXPECT_EQ(htod, kBytes);
  EXPECT_EQ(dtoh, kBytes + 4) << "the copy back and the kernels' 4-byte counter";
  EXPECT_GT(busy, 0u);
  EXPECT_EQ(share, 3);
  // NVML in the guest reports the same process, memory and start.
  EXPECT_EQ(nvml_memory, memory);
  EXPECT_GE(memory, kBytes);
  EXPECT_EQ(start, started);
  EXPECT_GE(samples, 1u);
  EXPECT_LE(sm, 100u) << "the guest's own pid has a utilization sample";
  EXPECT_LE(accounting_util, 100u);

  // pvgpu smi (admin socket) shows the same figures for the process.
  const std::string command = std::string(PVGPU_PVGPU_TOOL) + " smi --json --host " +
                              daemon_->address();
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string text;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) text.append(buffer, n);
  ASSERT_EQ(pclose(pipe), 0) << text;
  const json smi = json::parse(text);
  bool found = false;
  for (const json& p : smi["sessions"]) {
    if (p.value("pid", 0) != guest.pid()) continue;
    found = true;
    EXPECT_EQ(p.value("kernels", uint64_t{0}), uint64_t{kKernels});
    EXPECT_EQ(p.value("bytes_htod", uint64_t{0}), kBytes);
    EXPECT_EQ(p.value("bytes_dtoh", uint64_t{0}), kBytes + 4);
    EXPECT_EQ(p.value("memory_used", uint64_t{0}), memory);
    EXPECT_EQ(p.value("compute_share", 0), 3);
    EXPECT_LE(p.value("busy_percent", 101u), 100u);
  }
  EXPECT_TRUE(found) << text;
  guest.WriteLine("exit");
  EXPECT_EQ(guest.Wait(), 0);
}

TEST_F(SharesTest, HighPriorityListenerIsReported) {
  GuestProcess guest(Socket("urgent.sock"),
                     {PVGPU_SHARE_WORKER, "latency", PVGPU_SHARE_PTX, "50"});
  ASSERT_EQ(guest.ReadLine(), "ready");
  const json status = daemon_->Status();
  bool found = false;
  for (const json& s : status["sessions"]) {
    if (s.value("pid", 0) != guest.pid()) continue;
    found = true;
    EXPECT_EQ(s.value("priority", ""), "high");
  }
  EXPECT_TRUE(found);
  guest.WriteLine("go");
  const std::string line = guest.ReadLine();
  EXPECT_EQ(line.rfind("latency_us ", 0), 0u) << line;
  EXPECT_EQ(guest.Wait(), 0);
}

}  // namespace
}  // namespace pvgpu::hostile
