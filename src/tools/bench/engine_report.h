// Which PTX engine ran a benchmark's cpu-adapter rows (interp, jit or auto, docs/jit.md) and
// what the compiling engine did meanwhile: kernels compiled, taken from its caches, and the time
// that took. For the channel rows this comes from the host's status before and after the run,
// for the in-process rows from this process's own counts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ptx/jit.h"

namespace pvgpu::tools::bench {

struct EngineUse {
  std::string engine;    // of the adapter the rows ran on; "" when unknown
  bool known = false;    // the counts below could be read
  ptx::JitTotals during;  // the compiling engine's counts during the run
};

// Snapshots around a run.
class EngineWatch {
 public:
  // The host at `address` (its first adapter is the one the benchmarks use).
  static EngineWatch Host(const std::string& address);
  // This process's cpu adapter, run with `engine`.
  static EngineWatch InProcess(std::string engine);
  // The use since the watch was made.
  EngineUse Finish() const;

 private:
  std::string address_;  // empty: in-process
  std::string engine_;
  bool known_ = false;
  ptx::JitTotals start_;
};

// "auto: 2 kernels, 1 compiled, 1 from the disk cache (50% cache hits), 183 ms getting code".
std::string DescribeEngineUse(const EngineUse& use);
nlohmann::ordered_json EngineUseJson(const EngineUse& use);

}  // namespace pvgpu::tools::bench
