// The latency benchmark's figures and how they become JSON, the table and the targets
// docs/benchmarks.md states.
#pragma once

#include <string>

#include "tools/bench/bench.h"

namespace pvgpu::tools::bench {

// Microseconds per operation in one mode.
struct LatencyFigures {
  double launch_async = 0;  // empty kernel, many launches then one synchronize, per launch
  double launch_sync = 0;   // launch followed by synchronize, per pair
  double launch_call = 0;   // the caller's time inside one launch call, in bursts
  double stream_query = 0;  // cuStreamQuery on completed work
  double event_query = 0;   // cuEventQuery on a completed event
  double copy_htod = 0;     // 4-byte cuMemcpyHtoD
  double copy_dtoh = 0;     // 4-byte cuMemcpyDtoH
  // Context switches of the calling thread per operation, over all rounds. About one per
  // round trip means that guest and host took turns on one CPU (docs/benchmarks.md).
  struct Switches {
    double launch_async = 0;
    double launch_sync = 0;
    double copy_htod = 0;
    double copy_dtoh = 0;
  } switches;
};

// The report for the three modes; `host` says which host the channel modes used, `rounds`
// how many rounds each figure is the best of.
BenchReport MakeLatencyReport(const LatencyFigures& inprocess, const LatencyFigures& channel,
                              const LatencyFigures& unpipelined, const std::string& host,
                              int rounds);

}  // namespace pvgpu::tools::bench
