// The compute share of asynchronous adapters (cuda): a gate in front of each adapter that
// bounds how many launches each session has in flight there and orders who submits next, by
// weighted fair queueing of launches (docs/sharing.md).
//
// A session alone on the adapter is never held: it submits as fast as it can. Once another
// session has work in flight or waiting, each normal-priority session may keep at most its
// weighted part of kDepth launches in flight (at least one), and the session that goes next
// when a launch completes is the one with the fewest launches per unit of weight (its virtual
// time), so that the device's queue holds the sessions' work in proportion to their shares. A
// high-priority session is never held, and while it has launches in flight every normal one
// is held to one. The gate orders submissions; it cannot stop a kernel the device already runs,
// nor decide how the device's own scheduler interleaves the contexts it was given.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "common/share_flow.h"

namespace pvgpu::host {

class ShareGate {
 public:
  // Launches in flight the normal sessions of an adapter share when more than one is busy.
  static constexpr uint32_t kDepth = 16;

  // Waits until `flow` may submit one more launch, then counts it in flight (and its queued
  // time). False, counting nothing, once `stop` is true (the session is ending).
  bool Admit(ShareFlow& flow, const std::atomic<bool>& stop);
  // One launch Admit let through has completed (any thread).
  void Done(ShareFlow& flow);
  // Time during which any launch through the gate was in flight.
  uint64_t busy_ns();

 private:
  bool MayGo(const ShareFlow& flow) const;  // mutex_ held
  uint32_t Cap(const ShareFlow& flow) const;  // mutex_ held

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<ShareFlow*> waiting_;  // one entry per waiting flow (one session thread each)
  std::vector<ShareFlow*> busy_;     // flows with launches in flight
  uint64_t busy_ns_ = 0;
  int64_t busy_since_ns_ = 0;
};

}  // namespace pvgpu::host
