// PrivateHost's CPU pinning (`pvgpu bench --cpus`), with the real pvgpud: every thread of the
// daemon, including those it starts after start-up, must be confined to the chosen CPU, and
// without a CPU it must run wherever its parent may.
#include "tools/private_host.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace pvgpu::tools {
namespace {

namespace fs = std::filesystem;

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// Cpus_allowed_list of every thread of `pid`.
std::vector<std::string> ThreadCpuLists(pid_t pid) {
  std::vector<std::string> lists;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0) {
        lists.push_back(line.substr(line.find_first_not_of(" \t", 18)));
      }
    }
  }
  return lists;
}

std::string ListOf(const std::vector<int>& cpus) {
  // The kernel writes ranges ("0-3"); compare through a parse of ours instead of its format.
  std::string text;
  for (int cpu : cpus) text += (text.empty() ? "" : ",") + std::to_string(cpu);
  return text;
}

std::string Normalize(const std::string& list) {
  std::vector<int> cpus;
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string part = list.substr(at, end - at);
    const size_t dash = part.find('-');
    const int first = std::stoi(part.substr(0, dash));
    const int last = dash == std::string::npos ? first : std::stoi(part.substr(dash + 1));
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    at = end + 1;
  }
  return ListOf(cpus);
}

PrivateHost::Options DaemonOptions() {
  PrivateHost::Options options;
  options.daemon_path = PVGPUD_BINARY;
  return options;
}

TEST(PrivateHostTest, PinnedDaemonRunsEveryThreadOnItsCpu) {
  const std::vector<int> allowed = AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  // The last allowed CPU: unless there is only one, not where this process may run alone.
  const int cpu = allowed.back();
  PrivateHost::Options options = DaemonOptions();
  options.cpu = cpu;
  auto host = PrivateHost::Start(options);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  const std::vector<std::string> lists = ThreadCpuLists((*host)->pid());
  // The listener and the cpu adapter's workers at least.
  EXPECT_GE(lists.size(), 2u);
  for (const std::string& list : lists) EXPECT_EQ(Normalize(list), std::to_string(cpu));
  (*host)->Stop();
}

TEST(PrivateHostTest, UnpinnedDaemonMayRunWhereItsParentMay) {
  auto host = PrivateHost::Start(DaemonOptions());
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  for (const std::string& list : ThreadCpuLists((*host)->pid())) {
    EXPECT_EQ(Normalize(list), ListOf(AllowedCpus()));
  }
  (*host)->Stop();
}

}  // namespace
}  // namespace pvgpu::tools
