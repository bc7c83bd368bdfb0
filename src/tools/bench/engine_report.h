// Which PTX engine ran a benchmark's cpu-adapter rows (interp, jit or auto, docs/jit.md) and
// what the compiling engine did meanwhile: kernels compiled, taken from its caches, and the time
// that took. For the channel rows this comes from the host's status before and after the run,
// for the in-process rows from this process's own counts.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

#include "ptx/jit.h"

namespace pvgpu::tools::bench {

struct EngineUse {
  std::string engine;    // of the adapter the rows ran on; "" when unknown
  bool known = false;    // the counts below could be read
  ptx::JitTotals during;  // the compiling engine's counts during the run
  int warmup_runs = 0;        // untimed runs while kernels waited for their code
  double warmup_seconds = 0;  // and the time they took
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
  // The engine of the adapter watched, as read when the watch was made ("" when unknown).
  const std::string& engine() const { return engine_; }

  // Whether a kernel is waiting for its compiled code now (false when that cannot be known).
  bool CodePending() const;
  // Runs `run` (one untimed repetition of the work about to be timed) again while a kernel
  // waits for its compiled code, for at most kCodeWaitLimit: under engine=auto the first
  // launches are interpreted while the kernel compiles, and what a benchmark times is the
  // engine's steady state, as a GPU's timed run excludes the driver's compilation of PTX at
  // module load. Counted in the report (warm-up runs and their time). Returns how many runs
  // it made this time.
  StatusOr<int> RepeatWhileCodePending(const std::function<Status()>& run);
  // Waits, running nothing, until no kernel waits for its code (at most kCodeWaitLimit).
  void WaitWhileCodePending();

  static constexpr double kCodeWaitLimit = 120;  // seconds

 private:
  std::string address_;  // empty: in-process
  std::string engine_;
  bool known_ = false;
  ptx::JitTotals start_;
  int warmup_runs_ = 0;
  double warmup_seconds_ = 0;
};

// "auto: 2 kernels, 1 compiled, 1 from the disk cache (50% cache hits), 183 ms getting code".
std::string DescribeEngineUse(const EngineUse& use);
nlohmann::ordered_json EngineUseJson(const EngineUse& use);

}  // namespace pvgpu::tools::bench
