#include "host/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace pvgpu::host {
namespace {

TEST(HostConfig, ParsesListenersWithDefaults) {
  auto config = ParseHostConfig(R"({
    "adapters": "cpu,cpu",
    "listeners": [
      {"address": "unix:/run/pvgpu/pvgpud.sock", "admin": true, "mode": "0600"},
      {"address": "unix:/run/pvgpu/devices/gpu-1.sock", "adapters": [1],
       "memory_quota": "512M"},
      {"address": "unix:/run/pvgpu/devices/all.sock", "adapters": "all", "memory_quota": 4096,
       "limits": {"streams": 16, "allocations": 100}}
    ]})",
                                "test.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->adapters, "cpu,cpu");
  ASSERT_EQ(config->listeners.size(), 3u);
  EXPECT_TRUE(config->listeners[0].admin);
  EXPECT_EQ(config->listeners[0].mode, 0600);
  EXPECT_TRUE(config->listeners[0].adapters.empty());  // all
  EXPECT_FALSE(config->listeners[1].admin);            // container-facing by default
  EXPECT_EQ(config->listeners[1].adapters, std::vector<uint32_t>{1});
  EXPECT_EQ(config->listeners[1].memory_quota, 512ull << 20);
  EXPECT_EQ(config->listeners[1].mode, 0660);
  EXPECT_TRUE(config->listeners[2].adapters.empty());
  EXPECT_EQ(config->listeners[2].memory_quota, 4096u);
  const SessionLimits defaults;
  EXPECT_EQ(config->listeners[1].limits.streams, defaults.streams);
  EXPECT_EQ(config->listeners[2].limits.streams, 16u);
  EXPECT_EQ(config->listeners[2].limits.allocations, 100u);
  EXPECT_EQ(config->listeners[2].limits.events, defaults.events);  // not named: the default
}

TEST(SessionLimitsTest, ParsesNamedCountsAndKeepsTheRest) {
  SessionLimits limits;
  ASSERT_TRUE(ParseSessionLimits("contexts=2,events=10", &limits).ok());
  EXPECT_EQ(limits.contexts, 2u);
  EXPECT_EQ(limits.events, 10u);
  EXPECT_EQ(limits.streams, SessionLimits{}.streams);
  ASSERT_TRUE(ParseSessionLimits("", &limits).ok());
  EXPECT_EQ(limits.contexts, 2u);
}

TEST(SessionLimitsTest, RefusesWhatItCannotRead) {
  for (const char* bad : {"streams", "streams=", "streams=0", "streams=-1", "streams=1x",
                          "stream=4", "streams=99999999999999999999"}) {
    SessionLimits limits;
    const Status status = ParseSessionLimits(bad, &limits);
    EXPECT_EQ(status.code(), Code::kInvalidValue) << bad;
    EXPECT_NE(status.message().find("bad limit"), std::string::npos) << status.message();
    EXPECT_EQ(limits.streams, SessionLimits{}.streams) << "left as it was: " << bad;
  }
}

// Each malformed file is refused with a message that names the problem and where it is.
struct BadCase {
  const char* text;
  const char* expected;
};

class HostConfigRejects : public testing::TestWithParam<BadCase> {};

TEST_P(HostConfigRejects, WithClearMessage) {
  auto config = ParseHostConfig(GetParam().text, "host.json");
  ASSERT_FALSE(config.ok()) << GetParam().text;
  EXPECT_EQ(config.status().code(), Code::kInvalidValue);
  EXPECT_NE(config.status().message().find(GetParam().expected), std::string::npos)
      << config.status().message();
  EXPECT_EQ(config.status().message().rfind("host.json", 0), 0u) << config.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HostConfigRejects,
    testing::Values(
        BadCase{"{", "not valid JSON"}, BadCase{"[]", "top level must be an object"},
        BadCase{R"({"adapter": "cpu"})", "unknown key \"adapter\""},
        BadCase{R"({"adapters": 3})", "\"adapters\" must be"},
        BadCase{R"({"listeners": {}})", "\"listeners\" must be a list"},
        BadCase{R"({"listeners": [{"adapters": [0]}]})", "listeners[0]: \"address\""},
        BadCase{R"({"listeners": [{"address": "tcp://x:1"}]})", "is not supported"},
        BadCase{R"({"listeners": [{"address": "unix:rel.sock"}]})", "absolute path"},
        BadCase{R"({"listeners": [{"address": "unix:/a", "memory_qouta": "1G"}]})",
                "unknown key \"memory_qouta\""},
        BadCase{R"({"listeners": [{"address": "unix:/a", "adapters": [-1]}]})", "adapter index -1"},
        BadCase{R"({"listeners": [{"address": "unix:/a", "adapters": []}]})", "non-empty list"},
        BadCase{R"({"listeners": [{"address": "unix:/a", "adapters": "some"}]})",
                "\"all\" or a non-empty list"},
        BadCase{R"({"listeners": [{"address": "unix:/a", "adapters": [0, 0]}]})", "listed twice"},
        BadCase{R"({"listeners": [{"address": "unix:/a", "memory_quota": "lots"}]})",
                "bad \"memory_quota\" \"lots\""},
        BadCase{R"({"listeners": [{"address": "unix:/a", "memory_quota": -5}]})",
                "bad \"memory_quota\""},
        BadCase{R"({"listeners": [{"address": "unix:/a", "admin": "yes"}]})",
                "\"admin\" must be true or false"},
        BadCase{R"({"listeners": [{"address": "unix:/a", "mode": 660}]})", "bad \"mode\""},
        BadCase{R"({"listeners": [{"address": "unix:/a", "mode": "0999"}]})", "bad \"mode\""},
        BadCase{R"({"listeners": [{"address": "unix:/a"}, {"address": "unix:/a"}]})",
                "used by two listeners"},
        BadCase{R"({"listeners": [{"address": "unix:/a", "limits": 5}]})",
                "\"limits\" must be an object"},
        BadCase{R"({"listeners": [{"address": "unix:/a", "limits": {"threads": 5}}]})",
                "unknown limit \"threads\""},
        BadCase{R"({"listeners": [{"address": "unix:/a", "limits": {"events": 0}}]})",
                "must be a positive integer"},
        BadCase{R"({"listeners": [{"address": "unix:/a", "limits": {"events": "many"}}]})",
                "must be a positive integer"}));

TEST(HostConfig, ValidatesIndicesAgainstTheHost) {
  auto config = ParseHostConfig(R"({"listeners": [{"address": "unix:/a", "adapters": [0, 2]}]})",
                                "host.json");
  ASSERT_TRUE(config.ok());
  EXPECT_TRUE(ValidateListeners(config->listeners, 3, "host.json").ok());
  Status status = ValidateListeners(config->listeners, 2, "host.json");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("names adapter 2 but the host has 2"), std::string::npos)
      << status.message();
}

TEST(HostConfig, SocketModes) {
  int mode = 0;
  EXPECT_TRUE(ParseSocketMode("0660", &mode));
  EXPECT_EQ(mode, 0660);
  EXPECT_TRUE(ParseSocketMode("666", &mode));
  EXPECT_EQ(mode, 0666);
  EXPECT_FALSE(ParseSocketMode("1777", &mode));  // no sticky or set-id bits on sockets
  EXPECT_FALSE(ParseSocketMode("66", &mode));
  EXPECT_FALSE(ParseSocketMode("0x1ff", &mode));
}

TEST(HostConfig, DeviceSockets) {
  auto listeners = DeviceSocketListeners("/run/pvgpu/devices", 2, 1 << 20, 0660);
  ASSERT_EQ(listeners.size(), 3u);
  EXPECT_EQ(listeners[0].address, "unix:/run/pvgpu/devices/gpu-0.sock");
  EXPECT_EQ(listeners[0].adapters, std::vector<uint32_t>{0});
  EXPECT_EQ(listeners[1].address, "unix:/run/pvgpu/devices/gpu-1.sock");
  EXPECT_EQ(listeners[1].adapters, std::vector<uint32_t>{1});
  EXPECT_EQ(listeners[2].address, "unix:/run/pvgpu/devices/all.sock");
  EXPECT_TRUE(listeners[2].adapters.empty());
  for (const auto& listener : listeners) {
    EXPECT_FALSE(listener.admin);
    EXPECT_EQ(listener.memory_quota, 1u << 20);
    EXPECT_EQ(listener.mode, 0660);
  }
}

TEST(HostConfig, LoadsFilesAndCreatesSocketDirectories) {
  char dir_template[] = "/tmp/pvgpu-config-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  { std::ofstream(dir + "/host.json") << R"({"listeners": [{"address": "unix:/x.sock"}]})"; }
  auto config = LoadHostConfig(dir + "/host.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->listeners.size(), 1u);
  auto missing = LoadHostConfig(dir + "/absent.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("absent.json"), std::string::npos);

  ASSERT_TRUE(EnsureSocketDirectory("unix:" + dir + "/a/b/gpu-0.sock").ok());
  struct stat st;
  ASSERT_EQ(stat((dir + "/a/b").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  rmdir((dir + "/a/b").c_str());
  rmdir((dir + "/a").c_str());
  unlink((dir + "/host.json").c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace pvgpu::host

namespace pvgpu::host {
namespace {

TEST(HostConfig, ComputeShareAndPriorityPerListener) {
  auto config = ParseHostConfig(R"({"listeners": [
      {"address": "unix:/run/a.sock", "compute_share": 3, "priority": "high"},
      {"address": "unix:/run/b.sock"}]})",
                                "test.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->listeners[0].compute_share, 3u);
  EXPECT_TRUE(config->listeners[0].high_priority);
  EXPECT_EQ(config->listeners[1].compute_share, 1u);  // the defaults
  EXPECT_FALSE(config->listeners[1].high_priority);
}

TEST(HostConfig, BadComputeShareOrPriorityIsRefused) {
  for (const char* entry : {R"("compute_share": 0)", R"("compute_share": -2)",
                            R"("compute_share": 2.5)", R"("compute_share": "3")",
                            R"("compute_share": 1000001)", R"("priority": "urgent")",
                            R"("priority": 1)"}) {
    auto config = ParseHostConfig(
        std::string(R"({"listeners": [{"address": "unix:/run/a.sock", )") + entry + "}]}",
        "test.json");
    EXPECT_FALSE(config.ok()) << entry;
    if (!config.ok()) {
      EXPECT_NE(config.status().message().find("listeners[0]"), std::string::npos)
          << config.status().message();
    }
  }
}

TEST(HostConfig, ComputeSharesForDeviceSockets) {
  auto sockets = DeviceSocketListeners("/run/pvgpu/devices", 2, 0, 0660);
  ASSERT_TRUE(ApplyComputeShares("4", &sockets).ok());
  for (const ListenerConfig& l : sockets) EXPECT_EQ(l.compute_share, 4u) << l.address;

  sockets = DeviceSocketListeners("/run/pvgpu/devices", 2, 0, 0660);
  ASSERT_TRUE(ApplyComputeShares("gpu-1=3,all=2", &sockets).ok());
  EXPECT_EQ(sockets[0].compute_share, 1u);  // gpu-0: not named
  EXPECT_EQ(sockets[1].compute_share, 3u);
  EXPECT_EQ(sockets[2].compute_share, 2u);  // all.sock

  for (const char* bad : {"0", "gpu-9=1", "gpu-0=", "gpu-0=x", "=3", "gpu-0=3,,all=1", ""}) {
    auto fresh = DeviceSocketListeners("/run/pvgpu/devices", 2, 0, 0660);
    EXPECT_FALSE(ApplyComputeShares(bad, &fresh).ok()) << bad;
  }
}

}  // namespace
}  // namespace pvgpu::host
