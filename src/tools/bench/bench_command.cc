#include "tools/bench/bench_command.h"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string_view>

#include "common/cpus.h"
#include "tools/bench/bench.h"
#include "tools/bench/report.h"
#include "tools/bench/svg_plot.h"
#include "tools/console.h"

namespace pvgpu::tools {
namespace {

constexpr char kDescription[] =
    "Run one of pvgpu's benchmarks. Each runs the same work through pvgpu's guest\n"
    "libcuda.so.1 over the channel to a host (a private pvgpud on the cpu adapter unless\n"
    "--host or PVGPU_HOST names one) and on the cpu adapter called in this process (the\n"
    "native baseline), in one run, and reports the ratios. With a remote host (--host\n"
    "tcp://... or tls://...), bandwidth and latency also measure the path itself in the\n"
    "same run (a plain TCP connection between the same two ends and, for TLS, the cipher\n"
    "on one core) and give the channel's figures as fractions of those limits.\n\n"
    "  latency    empty-kernel launch (pipelined, and with synchronize), stream/event query,\n"
    "             4-byte copies: in-process, channel, channel with PVGPU_PIPELINE=0 (and the\n"
    "             raw path's round trip, for a remote host)\n"
    "  bandwidth  HtoD and DtoH, pageable and pinned, 4 KiB to 256 MiB, next to memcpy (and\n"
    "             the raw path's throughput each way, for a remote host)\n"
    "  nbody      the CUDA samples' nbody -benchmark: all-pairs gravity, GFLOP/s at 20 flops\n"
    "             per interaction, next to plain C++ on one core and on all cores\n"
    "  matmul     the WSL article's script: sum(A * A^T) for a random NxN matrix A, printed\n"
    "             with shape, device and time for --device gpu and cpu\n"
    "  graph      a graph of 1, 10 and 100 empty kernels launched as one message, against\n"
    "             the same kernels launched one by one through the channel and in-process\n";

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

// "GUEST,HOST" as two CPU numbers.
std::optional<bench::BenchOptions::Cpus> ParseCpus(const std::string& text) {
  const size_t comma = text.find(',');
  if (comma == std::string::npos) return std::nullopt;
  bench::BenchOptions::Cpus cpus;
  auto number = [](std::string_view digits, int* out) {
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), *out);
    return error == std::errc() && end == digits.data() + digits.size() && *out >= 0;
  };
  const std::string_view all(text);
  if (!number(all.substr(0, comma), &cpus.guest) || !number(all.substr(comma + 1), &cpus.host)) {
    return std::nullopt;
  }
  return cpus;
}

// Checks that both CPUs are ones this process may use, then confines it to the guest's (the
// private host, forked later, sets its own).
Status PinGuest(const bench::BenchOptions::Cpus& cpus) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    return Error(Code::kUnknown, std::string("--cpus: sched_getaffinity: ") + std::strerror(errno));
  }
  for (int cpu : {cpus.guest, cpus.host}) {
    if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) {
      std::string list;
      for (int i = 0; i < CPU_SETSIZE; ++i) {
        if (CPU_ISSET(i, &allowed)) list += (list.empty() ? "" : ",") + std::to_string(i);
      }
      return Error(Code::kInvalidValue, "--cpus: CPU " + std::to_string(cpu) +
                                            " is not one this process may run on (" + list + ")");
    }
  }
  cpu_set_t only;
  CPU_ZERO(&only);
  CPU_SET(cpus.guest, &only);
  if (sched_setaffinity(0, sizeof(only), &only) != 0) {
    return Error(Code::kUnknown, std::string("--cpus: sched_setaffinity: ") + std::strerror(errno));
  }
  return Status::Ok();
}

int RunBench(const bench::BenchOptions& options) {
  if (options.cpus) {
    if (Status pinned = PinGuest(*options.cpus); !pinned.ok()) {
      PrintError("bench " + options.name + ": " + pinned.message());
      return 1;
    }
  }
  StatusOr<bench::BenchReport> report = Error(Code::kInvalidValue, "unknown benchmark");
  if (options.name == "latency") {
    report = bench::RunLatency(options);
  } else if (options.name == "bandwidth") {
    report = bench::RunBandwidth(options);
  } else if (options.name == "nbody") {
    report = bench::RunNbody(options);
  } else if (options.name == "matmul") {
    report = bench::RunMatmul(options);
  } else if (options.name == "contention") {
    report = bench::RunContention(options);
  } else if (options.name == "graph") {
    report = bench::RunGraph(options);
  }
  if (!report.ok()) {
    PrintError("bench " + options.name + ": " + report.status().message());
    return 1;
  }
  if (options.cpus) {
    report->json["cpus"] = {{"guest", options.cpus->guest}, {"host", options.cpus->host}};
    report->table += "Pinned: this process to CPU " + std::to_string(options.cpus->guest) +
                     ", the private pvgpud to CPU " + std::to_string(options.cpus->host) + ".\n";
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
  return nlohmann::ordered_json{{"cpus", UsableCpus()}, {"cpu_model", CpuModel()}};
}

}  // namespace bench

Subcommand RegisterBenchCommand(CLI::App& app) {
  auto options = std::make_shared<bench::BenchOptions>();
  CLI::App* command = app.add_subcommand("bench", "Measure pvgpu against the in-process adapter");
  command->formatter(std::make_shared<BenchFormatter>());
  command->add_option("NAME", options->name,
                      "latency, bandwidth, nbody, matmul, contention or graph")
      ->required()
      ->check(CLI::IsMember({"latency", "bandwidth", "nbody", "matmul", "contention", "graph"}));
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
  auto cpus_text = std::make_shared<std::string>();
  CLI::Option* cpus =
      command
          ->add_option("--cpus", *cpus_text,
                       "Run this process on CPU GUEST and a private pvgpud on CPU HOST (the "
                       "same CPU or two different ones), instead of where the scheduler puts them")
          ->type_name("GUEST,HOST");
  // Internal: the PVGPU_PIPELINE=0 half of `latency`, run by pvgpu itself in a child.
  command->add_flag("--channel-only", options->channel_only)->group("");
  // Internal: a guest process of `contention`.
  command->add_flag("--contention-worker", options->contention_worker)->group("");

  auto run = [options, host, host_text, cpus, cpus_text]() -> int {
    if (host->count() > 0) options->host = *host_text;
    if (cpus->count() > 0) {
      options->cpus = ParseCpus(*cpus_text);
      if (!options->cpus) {
        PrintError("bench: --cpus takes GUEST,HOST (two CPU numbers), not '" + *cpus_text + "'");
        return 2;
      }
    }
    return RunBench(*options);
  };
  return Subcommand{command, run, /*takes_trailing_arguments=*/false};
}

}  // namespace pvgpu::tools
