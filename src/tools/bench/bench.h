// `pvgpu bench NAME`: pvgpu's benchmarks. Each runs the same work through the guest
// library over the channel and on an adapter called in-process (the native baseline), in one
// run, and reports the ratios. Speed is never asserted: tests check only shape and results.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/status.h"
#include "tools/bench/svg_plot.h"

namespace pvgpu::tools::bench {

struct BenchOptions {
  std::string name;                 // latency, bandwidth, nbody, matmul, contention
  bool json = false;                // --json: machine output instead of the table
  std::string plot;                 // --plot FILE: an SVG chart
  std::optional<std::string> host;  // --host ADDR
  bool quick = false;               // --quick: tiny iteration counts (tests)
  int n = 0;                        // --n: bodies (nbody) or matrix order (matmul); 0 = default
  int iterations = 0;               // --iterations (nbody); 0 = default
  std::string device = "both";      // --device gpu|cpu|both (matmul)
  // --cpus GUEST,HOST: this process (the guest side and the in-process work) runs only on CPU
  // GUEST, and a private pvgpud (always started then) only on CPU HOST.
  struct Cpus {
    int guest = 0;
    int host = 0;
  };
  std::optional<Cpus> cpus;
  // Internal (--channel-only): measure only the channel half and print its JSON; used to run
  // the PVGPU_PIPELINE=0 half of `latency` in a child process.
  bool channel_only = false;
  // Internal (--contention-worker): a guest of `contention`, one answer per request line.
  bool contention_worker = false;
};

// What a benchmark hands back: machine output, the human table, and optionally a chart.
struct BenchReport {
  nlohmann::ordered_json json;
  std::string table;
  std::optional<Plot> plot;
  bool line_plot = false;  // LineChartSvg rather than BarChartSvg
  bool results_ok = true;  // false when the two implementations disagreed
};

StatusOr<BenchReport> RunLatency(const BenchOptions& options);
StatusOr<BenchReport> RunBandwidth(const BenchOptions& options);
StatusOr<BenchReport> RunNbody(const BenchOptions& options);
StatusOr<BenchReport> RunMatmul(const BenchOptions& options);
StatusOr<BenchReport> RunContention(const BenchOptions& options);
// Graphs (graph.cc, docs/graphs.md).
StatusOr<BenchReport> RunGraph(const BenchOptions& options);

// Facts about this machine that every report carries, since the ratios depend on them.
nlohmann::ordered_json MachineJson();

}  // namespace pvgpu::tools::bench
