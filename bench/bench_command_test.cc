// Runs `pvgpu bench` as a user would, with the smallest sizes, against a private host, and
// checks the machine output: every key docs/benchmarks.md names, plausible numbers, and agreement between
// the implementations. Speed is never asserted (DEVELOPERS.md).
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

using Json = nlohmann::json;

struct Output {
  int status = -1;
  std::string out;
};

// Runs a shell command line and collects its stdout and exit status.
Output RunShell(const std::string& command) {
  Output result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.out.append(buffer, got);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

Output RunPvgpu(const std::string& args) {
  return RunShell(std::string(PVGPU_BINARY) + " " + args);
}

Json RunJson(const std::string& args) {
  Output output = RunPvgpu(args);
  EXPECT_EQ(output.status, 0) << args << "\n" << output.out;
  Json json = Json::parse(output.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(json.is_discarded()) << args << " printed no JSON:\n" << output.out;
  return json;
}

bool Positive(const Json& value) { return value.is_number() && value.get<double>() > 0; }

TEST(BenchCommand, LatencyReportsEveryModeAndTarget) {
  const std::string plot = testing::TempDir() + "/latency.svg";
  Json json = RunJson("bench latency --json --quick --plot " + plot);
  ASSERT_TRUE(json.is_object());
  for (const char* key : {"launch_async_us", "launch_sync_us", "launch_call_us", "query_us",
                          "copy_small_us", "copy_htod_small_us", "copy_dtoh_small_us"}) {
    ASSERT_TRUE(json[key].is_object()) << key;
    for (const char* mode : {"inprocess", "channel", "channel_unpipelined"}) {
      EXPECT_TRUE(json[key][mode].is_number()) << key << "." << mode;
      EXPECT_GE(json[key][mode].get<double>(), 0) << key << "." << mode;
    }
    EXPECT_TRUE(Positive(json[key]["channel"])) << key;
  }
  for (const char* key : {"launch_async", "launch_sync", "copy_htod_small", "copy_dtoh_small"}) {
    for (const char* mode : {"inprocess", "channel", "channel_unpipelined"}) {
      const Json& switches = json["context_switches_per_op"][key][mode];
      EXPECT_TRUE(switches.is_number() && switches.get<double>() >= 0) << key << "." << mode;
    }
  }
  EXPECT_FALSE(json.contains("cpus"));
  EXPECT_TRUE(Positive(json["ratios"]["launch_async_channel_vs_inprocess"]));
  EXPECT_TRUE(Positive(json["ratios"]["launch_throughput_pipelined_vs_unpipelined"]));
  EXPECT_TRUE(Positive(json["ratios"]["launch_call_unpipelined_vs_pipelined"]));
  ASSERT_EQ(json["targets"].size(), 3u);
  for (const Json& target : json["targets"]) EXPECT_TRUE(target["pass"].is_boolean());

  std::ifstream svg(plot);
  std::stringstream text;
  text << svg.rdbuf();
  EXPECT_EQ(text.str().rfind("<svg", 0), 0u) << "no chart at " << plot;
}

int FirstAllowedCpu() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) return cpu;
  }
  return -1;
}

// Guest and host pinned to one CPU must take turns: a launch + synchronize cannot finish
// without the guest's thread leaving the CPU for the host's and coming back.
TEST(BenchCommand, LatencyWithBothOnOneCpuCountsTheirTurns) {
  const int cpu = FirstAllowedCpu();
  ASSERT_GE(cpu, 0);
  const std::string cpus = std::to_string(cpu) + "," + std::to_string(cpu);
  Json json = RunJson("bench latency --json --quick --cpus " + cpus);
  ASSERT_TRUE(json.is_object());
  EXPECT_EQ(json["cpus"]["guest"], cpu);
  EXPECT_EQ(json["cpus"]["host"], cpu);
  const Json& sync = json["context_switches_per_op"]["launch_sync"];
  EXPECT_GE(sync["channel"].get<double>(), 1.0) << sync;
  EXPECT_GE(sync["channel_unpipelined"].get<double>(), 1.0) << sync;
  EXPECT_LT(sync["inprocess"].get<double>(), 1.0) << sync;
}

// The PVGPU_PIPELINE=0 half runs in a child that does one round per line it is sent, so that
// the modes take turns; each operation stands alone (a 4-byte DtoH copy first still reads what
// the copies carry); a malformed request ends it with an error, not a guess.
TEST(BenchCommand, LatencyChildDoesOneRoundPerLine) {
  Output output = RunShell(
      "printf 'copy_dtoh 5\\nlaunch_sync 10\\nevent_query 5\\nlaunch_call 3\\nbogus 1\\n"
      "launch_sync 1\\n' | PVGPU_PIPELINE=0 " +
      std::string(PVGPU_BINARY) + " bench latency --channel-only");
  EXPECT_EQ(output.status, 1) << output.out;
  std::istringstream lines(output.out);
  std::string line;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(std::getline(lines, line)) << output.out;
    std::istringstream words(line);
    std::string ok;
    double seconds = -1;
    long switches = -1;
    ASSERT_TRUE(words >> ok >> seconds >> switches) << line;
    EXPECT_EQ(ok, "ok");
    EXPECT_GT(seconds, 0) << line;
    EXPECT_GE(switches, 0) << line;
  }
  ASSERT_TRUE(std::getline(lines, line)) << output.out;
  EXPECT_EQ(line, "error malformed request 'bogus 1'");
  EXPECT_FALSE(std::getline(lines, line)) << "answered after the error: " << line;
}

TEST(BenchCommand, BadCpusAreRefused) {
  Output output = RunPvgpu("bench latency --quick --cpus 0,100000 2>&1");
  EXPECT_EQ(output.status, 1) << output.out;
  EXPECT_NE(output.out.find("CPU 100000 is not one this process may run on"), std::string::npos)
      << output.out;
  output = RunPvgpu("bench latency --quick --cpus 0 2>&1");
  EXPECT_EQ(output.status, 2) << output.out;
  EXPECT_NE(output.out.find("--cpus takes GUEST,HOST"), std::string::npos) << output.out;
  const int cpu = FirstAllowedCpu();
  output = RunPvgpu("bench latency --quick --cpus " + std::to_string(cpu) + "," +
                    std::to_string(cpu) + " --host unix:/nonexistent.sock 2>&1");
  EXPECT_EQ(output.status, 1) << output.out;
  EXPECT_NE(output.out.find("cannot be combined with --host"), std::string::npos) << output.out;
}

TEST(BenchCommand, BandwidthCoversEverySizeAndPath) {
  Json json = RunJson("bench bandwidth --json --quick");
  ASSERT_TRUE(json["sizes"].is_array());
  ASSERT_FALSE(json["sizes"].empty());
  ASSERT_EQ(json["rows"].size(), json["sizes"].size());
  const bool pinned = json["pinned"] == "available";
  for (const Json& row : json["rows"]) {
    for (const char* key :
         {"memcpy", "htod_inprocess", "dtoh_inprocess", "htod_pageable", "dtoh_pageable"}) {
      EXPECT_TRUE(Positive(row[key])) << key << " at " << row["bytes"];
    }
    for (const char* key : {"htod_pinned", "dtoh_pinned"}) {
      EXPECT_TRUE(pinned ? Positive(row[key]) : row[key].is_null()) << key;
    }
  }
  ASSERT_EQ(json["targets"].size(), 1u);
}

TEST(BenchCommand, NbodyAgreesWithPlainCpp) {
  Json json = RunJson("bench nbody --n 256 --json");
  EXPECT_EQ(json["bodies"], 256);
  EXPECT_EQ(json["results_agree"], true);
  ASSERT_GE(json["runs"].size(), 3u);
  for (const Json& run : json["runs"]) {
    EXPECT_TRUE(Positive(run["gflops"])) << run["implementation"];
    EXPECT_TRUE(Positive(run["interactions_per_second"])) << run["implementation"];
    EXPECT_EQ(run["agrees"], true) << run["implementation"] << " " << run["max_difference"];
  }
  // The engines are named; what the compiling engine did is counted where it is known.
  for (const char* where : {"channel", "in_process"}) {
    const Json& e = json["engine"][where];
    EXPECT_TRUE(e["engine"] == "interp" || e["engine"] == "jit" || e["engine"] == "auto") << e;
    ASSERT_TRUE(e["jit"].is_object()) << where << ": " << e;
    EXPECT_GE(e["jit"]["kernels"].get<uint64_t>(),
              e["jit"]["compiled"].get<uint64_t>() + e["jit"]["disk_hits"].get<uint64_t>());
    // Untimed runs while the kernel compiled (engine=auto) are counted, never hidden.
    EXPECT_TRUE(e["jit"]["warmup_runs"].is_number_integer()) << e;
    EXPECT_GE(e["jit"]["warmup_seconds"].get<double>(), 0) << e;
    if (e["engine"] == "interp") EXPECT_EQ(e["jit"]["warmup_runs"], 0) << e;
  }
  // PoCL's row when PoCL is installed (scripts/install-deps.sh --pocl), else the note why not.
  bool pocl_row = false;
  for (const Json& run : json["runs"]) {
    pocl_row = pocl_row || run["implementation"].get<std::string>().rfind("PoCL", 0) == 0;
  }
  if (json["pocl"].is_null()) {
    EXPECT_FALSE(pocl_row);
    EXPECT_NE(json["pocl_note"].get<std::string>().find("no PoCL row"), std::string::npos);
  } else {
    EXPECT_TRUE(pocl_row) << json["runs"];
    EXPECT_TRUE(Positive(json["channel_speed_vs_pocl"]));
  }
}

TEST(BenchCommand, MatmulPrintsTheScriptsOutputAndAgrees) {
  Output output = RunPvgpu("bench matmul --n 64");
  ASSERT_EQ(output.status, 0) << output.out;
  EXPECT_NE(output.out.find("Shape: (64, 64) Device: /gpu:0"), std::string::npos) << output.out;
  EXPECT_NE(output.out.find("Shape: (64, 64) Device: /cpu:0"), std::string::npos) << output.out;
  EXPECT_NE(output.out.find("Time taken: 0:00:"), std::string::npos) << output.out;

  Json json = RunJson("bench matmul --n 64 --json");
  EXPECT_EQ(json["results_agree"], true);
  // Three products (tiled, WMMA tf32, tiled with cp.async) through the channel and in-process,
  // the tiled one in PoCL where it is installed, and the CPU.
  const bool pocl = json["pocl"].get<std::string>().rfind("PoCL: ", 0) == 0;
  ASSERT_EQ(json["runs"].size(), pocl ? 8u : 7u) << json["pocl"];
  EXPECT_TRUE(json["engine"]["in_process"]["engine"].is_string());
  // sum(A A^T) = sum_k (column sum k)^2; for uniform [0,1) entries its mean is
  // n * (n/12 + n^2/4), about 65,877 for n = 64.
  for (const Json& run : json["runs"]) {
    EXPECT_NEAR(run["result"].get<double>(), 65877.0, 6000.0) << run["how"];
  }
  // The reduction alone: tree and shuffles through the channel and in-process, the tree in
  // PoCL, the C++ loop last. The sum of 4096 uniform [0,1) values is 2048 give or take 18
  // (one standard deviation); every row sums the same matrix, so they agree closely.
  ASSERT_EQ(json["reductions"].size(), pocl ? 6u : 5u);
  const double cpp = json["reductions"].back()["result"].get<double>();
  EXPECT_NEAR(cpp, 2048.0, 150.0);
  for (const Json& run : json["reductions"]) {
    EXPECT_NEAR(run["result"].get<double>(), cpp, 1e-2) << run["how"];
    EXPECT_GT(run["seconds_per_pass"].get<double>(), 0.0) << run["how"];
    EXPECT_TRUE(run.contains("time_vs_cpp")) << run["how"];
  }
  EXPECT_EQ(json["reductions"].back()["how"], "plain C++ 1 thread");
}

// Graphs (docs/graphs.md): every size, every way, a positive figure.
TEST(BenchCommand, GraphReportsEverySizeAndWay) {
  Json json = RunJson("bench graph --json --quick");
  EXPECT_EQ(json["benchmark"], "graph");
  ASSERT_EQ(json["sizes"].size(), 3u);
  int expected[] = {1, 10, 100};
  for (size_t i = 0; i < 3; ++i) {
    const Json& size = json["sizes"][i];
    EXPECT_EQ(size["kernels"], expected[i]);
    for (const char* way : {"inprocess_us", "launches_pipelined_us", "graph_pipelined_us",
                            "launches_sync_us", "graph_sync_us"}) {
      EXPECT_TRUE(Positive(size[way])) << way << " " << size;
    }
  }
}

TEST(BenchCommand, UnknownBenchmarkIsAUsageError) {
  EXPECT_EQ(RunPvgpu("bench nosuch 2>/dev/null").status, 2);
}

}  // namespace
