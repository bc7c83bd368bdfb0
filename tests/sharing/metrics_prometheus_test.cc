// GET /metrics scraped by Debian's real Prometheus server (docs/metrics.md): pvgpud serves the
// text format on loopback, `promtool check metrics` accepts it, and a prometheus started here
// on loopback scrapes it and answers a query with what a guest did. Exits 77 (skipped) with
// the reason when prometheus or promtool is not installed (scripts/install-deps.sh installs
// them).
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <thread>

#include "tests/hostile/harness.h"

namespace pvgpu::hostile {
namespace {

using nlohmann::json;

std::string Which(const std::string& name) {
  for (const char* dir : {"/usr/bin/", "/usr/local/bin/", "/usr/sbin/"}) {
    const std::string path = std::string(dir) + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

// A loopback port nobody listens on now.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// The port pvgpud logged for --metrics-listen 127.0.0.1:0.
int MetricsPort(const Daemon& daemon) {
  EXPECT_TRUE(daemon.AwaitLog("serving metrics on http://127.0.0.1:"));
  std::smatch match;
  const std::string log = daemon.Log();
  if (!std::regex_search(log, match, std::regex("serving metrics on http://127\\.0\\.0\\.1:(\\d+)"))) {
    return 0;
  }
  return std::stoi(match[1]);
}

TEST(MetricsPrometheus, PromtoolAcceptsAndPrometheusScrapesWhatAGuestDid) {
  Daemon daemon({"--metrics-listen", "127.0.0.1:0"});
  const int port = MetricsPort(daemon);
  ASSERT_GT(port, 0) << daemon.Log();

  constexpr int kKernels = 12;
  GuestProcess guest(daemon.address(), {PVGPU_SHARE_WORKER, "account", PVGPU_SHARE_PTX,
                                        std::to_string(kKernels), "65536"});
  ASSERT_EQ(guest.ReadLine().rfind("nvml ", 0), 0u);
  ASSERT_EQ(guest.ReadLine(), "done");

  httplib::Client client("127.0.0.1", port);
  auto response = client.Get("/metrics");
  ASSERT_TRUE(response) << "no answer from pvgpud's metrics endpoint";
  ASSERT_EQ(response->status, 200);
  const std::string text = response->body;
  EXPECT_NE(response->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  const std::string pid = std::to_string(guest.pid());
  EXPECT_TRUE(std::regex_search(text, std::regex("pvgpu_session_kernels_total\\{[^}]*pid=\"" +
                                                 pid + "\"[^}]*\\} " +
                                                 std::to_string(kKernels) + "\n")))
      << text;
  EXPECT_TRUE(std::regex_search(
      text, std::regex("pvgpu_session_copied_bytes_total\\{[^}]*pid=\"" + pid +
                       "\"[^}]*direction=\"htod\"\\} 65536\n")))
      << text;
  EXPECT_NE(text.find("pvgpu_adapter_memory_total_bytes{adapter=\"0\",kind=\"cpu\"}"),
            std::string::npos);
  EXPECT_EQ(client.Get("/nothing")->status, 404);

  // promtool: the exposition is valid (it reads the metrics on stdin).
  const std::string promtool = Which("promtool");
  ASSERT_FALSE(promtool.empty());
  const std::string metrics_file = daemon.dir() + "/metrics.txt";
  std::ofstream(metrics_file) << text;
  const std::string check = promtool + " check metrics < " + metrics_file + " 2>&1";
  FILE* pipe = popen(check.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string said;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) said.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << "promtool check metrics: " << said;
  std::remove(metrics_file.c_str());

  // A real Prometheus on loopback scrapes pvgpud every second.
  const int prometheus_port = FreePort();
  const std::string dir = daemon.dir() + "/prometheus";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  std::ofstream(dir + "/prometheus.yml")
      << "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: pvgpu\n"
      << "    static_configs:\n      - targets: ['127.0.0.1:" << port << "']\n";
  const pid_t prometheus = fork();
  if (prometheus == 0) {
    const std::string config = "--config.file=" + dir + "/prometheus.yml";
    const std::string storage = "--storage.tsdb.path=" + dir + "/data";
    const std::string web = "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port);
    freopen((dir + "/prometheus.log").c_str(), "w", stderr);
    execl(Which("prometheus").c_str(), "prometheus", config.c_str(), storage.c_str(), web.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  httplib::Client query("127.0.0.1", prometheus_port);
  std::string last;
  const bool scraped = Await(
      [&] {
        auto answer = query.Get("/api/v1/query?query=pvgpu_session_kernels_total%7Bpid%3D%22" +
                                pid + "%22%7D");
        if (!answer || answer->status != 200) return false;
        last = answer->body;
        const json result = json::parse(answer->body, nullptr, false);
        if (result.is_discarded()) return false;
        for (const json& series : result["data"]["result"]) {
          if (series["value"][1] == std::to_string(kKernels)) return true;
        }
        return false;
      },
      std::chrono::seconds(40));
  EXPECT_TRUE(scraped) << "prometheus never reported the guest's kernels; last answer: " << last;
  auto up = query.Get("/api/v1/query?query=up%7Bjob%3D%22pvgpu%22%7D");
  ASSERT_TRUE(up);
  EXPECT_NE(up->body.find("\"1\"]"), std::string::npos) << up->body;
  kill(prometheus, SIGTERM);
  int status = 0;
  waitpid(prometheus, &status, 0);
  std::system(("rm -rf " + dir).c_str());

  guest.WriteLine("exit");
  EXPECT_EQ(guest.Wait(), 0);
}

TEST(MetricsPrometheus, OtherThanLoopbackIsRefusedUnlessAllowed) {
  // pvgpud refuses a non-loopback metrics address without --metrics-allow-remote.
  const std::string command = DaemonPath() + " --listen unix:/tmp/pvgpu-metrics-refused-" +
                              std::to_string(getpid()) +
                              ".sock --metrics-listen 0.0.0.0:0 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string said;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) said.append(buffer, n);
  EXPECT_NE(pclose(pipe), 0);
  EXPECT_NE(said.find("--metrics-allow-remote"), std::string::npos) << said;
  std::remove(("/tmp/pvgpu-metrics-refused-" + std::to_string(getpid()) + ".sock").c_str());
}

}  // namespace
}  // namespace pvgpu::hostile

int main(int argc, char** argv) {
  for (const char* tool : {"prometheus", "promtool"}) {
    if (pvgpu::hostile::Which(tool).empty()) {
      std::printf("SKIPPED: %s is not installed (scripts/install-deps.sh installs Debian's "
                  "prometheus package)\n", tool);
      return 77;
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
