// `pvgpu adapters` and `pvgpu smi` against a real pvgpud with two cpu adapters and a live
// guest (testdata/hold_context.c) that holds a context and memory on device 1.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/adapters_command.h"
#include "tools/host_status.h"

extern char** environ;

namespace pvgpu::tools {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kHeldBytes = 5u << 20;

struct Output {
  int exit_code = -1;
  std::string text;
};

// Runs a shell command line and returns its exit status and standard output.
Output Capture(const std::string& command) {
  Output out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.text.append(buffer, n);
  const int status = pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// Starts `argv` with stdout on a pipe (returned in *out_fd) and, if `in_fd` is given, its stdin
// on another pipe whose write end is returned there.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
            int* out_fd, int* in_fd, int inherit_fd = -1) {
  int out_pipe[2], in_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(in_pipe, O_CLOEXEC) != 0) return -1;
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(in_pipe[0], STDIN_FILENO);
    if (inherit_fd >= 0) fcntl(inherit_fd, F_SETFD, 0);
    std::vector<char*> args, envp;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    args.push_back(nullptr);
    envp.push_back(nullptr);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(in_pipe[0]);
  *out_fd = out_pipe[0];
  if (in_fd != nullptr) {
    *in_fd = in_pipe[1];
  } else {
    close(in_pipe[1]);
  }
  return pid;
}

std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

class StatusCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/pvgpu-status-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    address_ = "unix:" + dir_ + "/pvgpud.sock";

    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    fcntl(ready[0], F_SETFD, FD_CLOEXEC);
    fcntl(ready[1], F_SETFD, FD_CLOEXEC);
    int daemon_out;
    daemon_ = Spawn({PVGPUD_BINARY, "--listen", address_, "--adapters", "cpu,cpu", "--ready-fd",
                     std::to_string(ready[1]), "--log-file", dir_ + "/pvgpud.log"},
                    {}, &daemon_out, nullptr, ready[1]);
    close(ready[1]);
    close(daemon_out);
    ASSERT_GT(daemon_, 0);
    ASSERT_EQ(ReadLine(ready[0]), "ready") << "pvgpud did not start; see " << dir_;
    close(ready[0]);

    guest_ = Spawn({HOLD_CONTEXT_BINARY, "1", std::to_string(kHeldBytes)},
                   {"PVGPU_HOST=" + address_, std::string("LD_LIBRARY_PATH=") + GUEST_LIB_DIR},
                   &guest_out_, &guest_in_);
    ASSERT_GT(guest_, 0);
    ASSERT_EQ(ReadLine(guest_out_), "ready") << "the guest could not hold a context";
  }

  void TearDown() override {
    if (guest_ > 0) {
      close(guest_in_);
      int status = 0;
      waitpid(guest_, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      close(guest_out_);
    }
    if (daemon_ > 0) {
      kill(daemon_, SIGTERM);
      waitpid(daemon_, nullptr, 0);
    }
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  Output Pvgpu(const std::string& args) {
    return Capture(std::string(PVGPU_BINARY) + " " + args + " 2>&1");
  }

  std::string dir_;
  std::string address_;
  pid_t daemon_ = -1;
  pid_t guest_ = -1;
  int guest_out_ = -1;
  int guest_in_ = -1;
};

TEST_F(StatusCommandsTest, AdaptersJson) {
  Output out = Pvgpu("adapters --json --host " + address_);
  ASSERT_EQ(out.exit_code, 0) << out.text;
  const json doc = json::parse(out.text);
  EXPECT_EQ(doc["host"]["address"], address_);
  EXPECT_EQ(doc["host"]["driver_version"].get<int>() / 1000, 13);
  ASSERT_EQ(doc["adapters"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const json& a = doc["adapters"][i];
    EXPECT_EQ(a["index"], i);
    EXPECT_EQ(a["kind"], "cpu");
    EXPECT_EQ(a["software"], true);
    EXPECT_GT(a["memory_total"].get<uint64_t>(), kHeldBytes);
    EXPECT_EQ(a["uuid"].get<std::string>().rfind("GPU-", 0), 0u);
    EXPECT_NE(a["luid"].get<uint64_t>(), 0u);
    EXPECT_FALSE(a["driver_version"].get<std::string>().empty());
    EXPECT_FALSE(a["pci_bus_id"].get<std::string>().empty());
    EXPECT_NE(a["compute_capability"].get<std::string>().find('.'), std::string::npos);
  }
  EXPECT_NE(doc["adapters"][0]["uuid"], doc["adapters"][1]["uuid"]);
  EXPECT_NE(doc["adapters"][0]["luid"], doc["adapters"][1]["luid"]);

  // Both are software adapters, so either preference keeps the host's order.
  Output ordered = Pvgpu("adapters --json --order minimum-power --host " + address_);
  ASSERT_EQ(ordered.exit_code, 0) << ordered.text;
  EXPECT_EQ(json::parse(ordered.text)["adapters"], doc["adapters"]);
}

TEST_F(StatusCommandsTest, SmiJsonShowsTheGuest) {
  Output out = Pvgpu("smi --json --host " + address_);
  ASSERT_EQ(out.exit_code, 0) << out.text;
  const json doc = json::parse(out.text);
  ASSERT_EQ(doc["adapters"].size(), 2u);
  EXPECT_GE(doc["adapters"][1]["memory_used"].get<uint64_t>(), kHeldBytes);
  EXPECT_LT(doc["adapters"][0]["memory_used"].get<uint64_t>(), kHeldBytes);
  EXPECT_LE(doc["adapters"][1]["utilization_percent"].get<unsigned>(), 100u);
  const json* guest = nullptr;
  for (const json& s : doc["sessions"]) {
    if (s["pid"] == guest_) guest = &s;
  }
  ASSERT_NE(guest, nullptr) << doc.dump(2);
  EXPECT_EQ((*guest)["memory_used"].get<uint64_t>(), kHeldBytes);
  EXPECT_EQ((*guest)["contexts"], 1);
  EXPECT_EQ((*guest)["devices"], json::array({1}));
  EXPECT_EQ((*guest)["name"].get<std::string>().rfind("pvgpu_hold", 0), 0u);
}

TEST_F(StatusCommandsTest, Tables) {
  Output smi = Pvgpu("smi --host " + address_);
  ASSERT_EQ(smi.exit_code, 0) << smi.text;
  EXPECT_NE(smi.text.find("Processes:"), std::string::npos) << smi.text;
  EXPECT_NE(smi.text.find(std::to_string(guest_)), std::string::npos) << smi.text;
  EXPECT_NE(smi.text.find("5.0 MiB"), std::string::npos) << smi.text;
  Output adapters = Pvgpu("adapters --host " + address_);
  ASSERT_EQ(adapters.exit_code, 0) << adapters.text;
  EXPECT_NE(adapters.text.find("INDEX"), std::string::npos) << adapters.text;
  EXPECT_NE(adapters.text.find("software"), std::string::npos) << adapters.text;
}

TEST_F(StatusCommandsTest, PvgpuHostIsTheDefault) {
  Output out = Capture("PVGPU_HOST=" + address_ + " " + PVGPU_BINARY + " adapters --json");
  ASSERT_EQ(out.exit_code, 0) << out.text;
  EXPECT_EQ(json::parse(out.text)["host"]["address"], address_);
}

TEST(StatusCommandsNoHostTest, ClearErrorWhenNoHostAnswers) {
  for (const char* command : {"smi", "adapters"}) {
    Output out = Capture(std::string(PVGPU_BINARY) + " " + command +
                         " --host unix:/nonexistent-pvgpu/pvgpud.sock 2>&1");
    EXPECT_EQ(out.exit_code, 1) << out.text;
    EXPECT_NE(out.text.find("pvgpu: error: "), std::string::npos) << out.text;
    EXPECT_NE(out.text.find("unix:/nonexistent-pvgpu/pvgpud.sock"), std::string::npos) << out.text;
    EXPECT_NE(out.text.find("start pvgpud"), std::string::npos) << out.text;
  }
}

json Adapter(int index, bool software, bool integrated) {
  return {{"index", index}, {"software", software}, {"integrated", integrated}};
}

TEST(OrderAdaptersTest, Preferences) {
  const json adapters = json::array({Adapter(0, true, true), Adapter(1, false, true),
                                     Adapter(2, false, false), Adapter(3, true, false)});
  auto indices = [](const json& list) {
    std::vector<int> out;
    for (const json& a : list) out.push_back(a["index"]);
    return out;
  };
  EXPECT_EQ(indices(OrderAdapters(adapters, AdapterOrder::kHost)), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(indices(OrderAdapters(adapters, AdapterOrder::kHighPerformance)),
            (std::vector<int>{2, 1, 3, 0}));
  EXPECT_EQ(indices(OrderAdapters(adapters, AdapterOrder::kMinimumPower)),
            (std::vector<int>{0, 1, 3, 2}));
}

TEST(GuestProcessesTest, MergesSessionsPerPidAndDropsOwn) {
  const json status = {
      {"sessions",
       json::array(
           {{{"pid", 10}, {"name", "a"}, {"memory_used", 100}, {"contexts", 1}, {"devices", {0}}},
            {{"pid", 11},
             {"name", "smi"},
             {"memory_used", 0},
             {"contexts", 0},
             {"devices", json::array()}},
            {{"pid", 10},
             {"name", "a"},
             {"memory_used", 50},
             {"contexts", 1},
             {"devices", {0, 1}}}})}};
  const json processes = GuestProcesses(status, 11);
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0]["pid"], 10);
  EXPECT_EQ(processes[0]["memory_used"], 150);
  EXPECT_EQ(processes[0]["contexts"], 2);
  EXPECT_EQ(processes[0]["devices"], json::array({0, 1}));
}

TEST(FormatBytesTest, Units) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1024), "1.0 KiB");
  EXPECT_EQ(FormatBytes(5u << 20), "5.0 MiB");
  EXPECT_EQ(FormatBytes(3ull << 30), "3.0 GiB");
}

}  // namespace
}  // namespace pvgpu::tools
