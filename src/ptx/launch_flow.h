// Which share flow (common/share_flow.h) the calling thread's launches draw on: the cpu
// adapter names its context's session flow around each Executor::Launch, which hands the
// launch's blocks out by the flows' weights and priorities (executor.cc, docs/sharing.md).
#pragma once

#include "common/share_flow.h"

namespace pvgpu::ptx {

class ScopedLaunchFlow {
 public:
  explicit ScopedLaunchFlow(ShareFlow* flow) : previous_(current_) { current_ = flow; }
  ~ScopedLaunchFlow() { current_ = previous_; }
  ScopedLaunchFlow(const ScopedLaunchFlow&) = delete;
  ScopedLaunchFlow& operator=(const ScopedLaunchFlow&) = delete;
  // Null: the launch is a flow of its own, of weight 1.
  static ShareFlow* Current() { return current_; }

 private:
  ShareFlow* previous_;
  static inline thread_local ShareFlow* current_ = nullptr;
};

}  // namespace pvgpu::ptx
