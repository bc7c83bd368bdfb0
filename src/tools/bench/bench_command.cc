#include "tools/bench/bench_command.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include "tools/bench/bench.h"
#include "tools/bench/report.h"
#include "tools/bench/svg_plot.h"
#include "tools/console.h"

namespace pvgpu::tools {
namespace {

constexpr char kDescription[] =
    "Run one of issue #5's benchmarks. Each runs the same work through pvgpu's guest\n"
    "libcuda.so.1 over the channel to a host (a private pvgpud on the cpu adapter unless\n"
    "--host or PVGPU_HOST names one) and on the cpu adapter called in this process (the\n"
    "native baseline), in one run, and reports the ratios.\n\n"
    "  latency    empty-kernel launch (pipelined, and with synchronize), stream/event query,\n"
    "             4-byte copies: in-process, channel, channel with PVGPU_PIPELINE=0\n"
    "  bandwidth  HtoD and DtoH, pageable and pinned, 4 KiB to 256 MiB, next to memcpy\n"
    "  nbody      the CUDA samples' nbody -benchmark: all-pairs gravity, GFLOP/s at 20 flops\n"
    "             per interaction, next to plain C++ on one core and on all cores\n"
    "  matmul     the WSL article's script: sum(A * A^T) for a random NxN matrix A, printed\n"
    "             with shape, device and time for --device gpu and cpu\n";

// CPU model name from /proc/cpuinfo, for the reports' machine facts.
std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" ", colon + 1));
    }
  }
  return "unknown";
}

// `pvgpu --help` lists the one-line summary; `pvgpu bench --help` shows the whole description.
class BenchFormatter : public CLI::Formatter {
 public:
  std::string make_description(const CLI::App* app) const override {
    return std::string(kDescription) + "\n";
  }
};

int RunBench(const bench::BenchOptions& options) {
  StatusOr<bench::BenchReport> report = Error(Code::kInvalidValue, "unknown benchmark");
  if (options.name == "latency") {
    report = bench::RunLatency(options);
  } else if (options.name == "bandwidth") {
    report = bench::RunBandwidth(options);
  } else if (options.name == "nbody") {
    report = bench::RunNbody(options);
  } else if (options.name == "matmul") {
    report = bench::RunMatmul(options);
  }
  if (!report.ok()) {
    PrintError("bench " + options.name + ": " + report.status().message());
    return 1;
  }
  if (options.json) {
    std::printf("%s\n", report->json.dump(2).c_str());
  } else {
    std::printf("%s", report->table.c_str());
  }
  std::fflush(stdout);
  if (!options.plot.empty()) {
    if (!report->plot) {
      PrintWarning("bench " + options.name + " has no chart; --plot ignored");
    } else {
      const std::string svg = report->line_plot ? bench::LineChartSvg(*report->plot)
                                                : bench::BarChartSvg(*report->plot);
      if (Status written = bench::WriteTextFile(options.plot, svg); !written.ok()) {
        PrintError(written.message());
        return 1;
      }
    }
  }
  // The two implementations disagreeing is a failure even though the timing worked.
  return report->results_ok ? 0 : 1;
}

}  // namespace

namespace bench {

nlohmann::ordered_json MachineJson() {
  return nlohmann::ordered_json{{"cpus", std::thread::hardware_concurrency()},
                                {"cpu_model", CpuModel()}};
}

}  // namespace bench

Subcommand RegisterBenchCommand(CLI::App& app) {
  auto options = std::make_shared<bench::BenchOptions>();
  CLI::App* command = app.add_subcommand("bench", "Measure pvgpu against the in-process adapter");
  command->formatter(std::make_shared<BenchFormatter>());
  command->add_option("NAME", options->name, "latency, bandwidth, nbody or matmul")
      ->required()
      ->check(CLI::IsMember({"latency", "bandwidth", "nbody", "matmul"}));
  command->add_flag("--json", options->json, "Print JSON instead of the table");
  command->add_option("--plot", options->plot, "Write a chart of the results (SVG) to FILE")
      ->type_name("FILE");
  auto host_text = std::make_shared<std::string>();
  CLI::Option* host =
      command->add_option("--host", *host_text, "Use the host at ADDR instead of a private pvgpud")
          ->type_name("ADDR");
  command->add_flag("--quick", options->quick, "Tiny iteration counts (for tests)");
  command
      ->add_option("--n", options->n,
                   "Bodies (nbody, default 4096) or matrix order (matmul, default 512)")
      ->check(CLI::Range(1, 1 << 20));
  command->add_option("--iterations", options->iterations, "Timed steps (nbody, default 5)")
      ->check(CLI::Range(1, 100000));
  command->add_option("--device", options->device, "matmul: gpu, cpu or both (default)")
      ->check(CLI::IsMember({"gpu", "cpu", "both"}));
  // Internal: the PVGPU_PIPELINE=0 half of `latency`, run by pvgpu itself in a child.
  command->add_flag("--channel-only", options->channel_only)->group("");

  auto run = [options, host, host_text]() -> int {
    if (host->count() > 0) options->host = *host_text;
    return RunBench(*options);
  };
  return Subcommand{command, run, /*takes_trailing_arguments=*/false};
}

}  // namespace pvgpu::tools
