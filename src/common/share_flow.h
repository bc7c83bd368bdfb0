// One session's claim on one adapter's compute, and what it used there (docs/sharing.md).
//
// The host makes one per session and adapter; the adapter's scheduler reads its weight and
// priority, keeps its own scheduling state in it, and counts what ran. The counters are
// atomics, read by the host's status and metrics at any time; the scheduling state belongs to
// the scheduler, under the scheduler's own lock.
#pragma once

#include <atomic>
#include <cstdint>

namespace pvgpu {

struct ShareFlow {
  // Set by the host before the flow is used; constant afterwards.
  uint32_t weight = 1;         // compute_share: a positive weight
  bool high_priority = false;  // priority "high": its work goes ahead of normal flows'

  // What the flow's work used, counted by the adapter or the host's gate.
  std::atomic<uint64_t> kernels{0};      // launches that ran
  std::atomic<uint64_t> busy_ns{0};      // time its kernels ran (merged, not summed per kernel)
  std::atomic<uint64_t> queued_ns{0};    // time its launches waited for the scheduler
  std::atomic<uint64_t> worker_ns{0};    // cpu adapter: worker time its blocks took
  std::atomic<uint64_t> bytes_htod{0};   // copied to the device (host counts)
  std::atomic<uint64_t> bytes_dtoh{0};   // copied back to the host (host counts)

  // The scheduler's state (cpu executor: ptx/executor.cc; cuda: host/share_gate.cc), under its
  // lock. `vtime` is the service received divided by the weight, in nanoseconds (cpu) or
  // launches (cuda); the flow whose work is picked next is the one with the lowest.
  double vtime = 0;
  uint32_t active = 0;       // jobs (cpu) or launches in flight (cuda) the scheduler holds now
  double block_ns = 0;       // cpu: running estimate of one block's worker time
  int64_t busy_since_ns = 0;  // cuda: since when it has had launches in flight
  int64_t last_end_ns = 0;    // cpu: when its last launch ended
  double gap_ns = 0;          // cpu: running estimate of the gap between its launches
};

}  // namespace pvgpu
