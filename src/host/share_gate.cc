#include "host/share_gate.h"

#include <algorithm>

namespace pvgpu::host {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool Before(const ShareFlow& a, const ShareFlow& b) {
  if (a.high_priority != b.high_priority) return a.high_priority;
  return a.vtime < b.vtime;
}

double Weight(const ShareFlow& flow) { return flow.weight == 0 ? 1.0 : double(flow.weight); }

// How many launches behind the busy flows a returning flow may start.
constexpr double kIdleCreditLaunches = 4;

void Remove(std::vector<ShareFlow*>& flows, ShareFlow* flow) {
  flows.erase(std::remove(flows.begin(), flows.end(), flow), flows.end());
}

}  // namespace

uint32_t ShareGate::Cap(const ShareFlow& flow) const {
  bool high_busy = false;
  double total = 0;
  auto add = [&](const ShareFlow* f) {
    if (f->high_priority) high_busy = true;
    total += Weight(*f);
  };
  for (const ShareFlow* f : busy_) add(f);
  for (const ShareFlow* f : waiting_) {
    if (std::find(busy_.begin(), busy_.end(), f) == busy_.end()) add(f);
  }
  if (high_busy && !flow.high_priority) return 1;
  if (total <= 0) return kDepth;
  return std::max<uint32_t>(1, static_cast<uint32_t>(kDepth * Weight(flow) / total));
}

bool ShareGate::MayGo(const ShareFlow& flow) const {
  if (flow.high_priority) return true;
  const bool others = std::any_of(busy_.begin(), busy_.end(),
                                  [&](const ShareFlow* f) { return f != &flow; }) ||
                      std::any_of(waiting_.begin(), waiting_.end(),
                                  [&](const ShareFlow* f) { return f != &flow; });
  if (!others) return true;  // alone: the whole adapter
  if (flow.active >= Cap(flow)) return false;
  // A waiter that could go and is further behind goes first.
  for (const ShareFlow* f : waiting_) {
    if (f != &flow && Before(*f, flow) && f->active < Cap(*f)) return false;
  }
  return true;
}

bool ShareGate::Admit(ShareFlow& flow, const std::atomic<bool>& stop) {
  const int64_t arrived = NowNs();
  std::unique_lock<std::mutex> lock(mutex_);
  if (flow.active == 0 && std::find(waiting_.begin(), waiting_.end(), &flow) == waiting_.end()) {
    // Back from idle: no further behind the busy flows than the credit.
    bool any = false;
    double least = 0;
    for (const ShareFlow* f : busy_) {
      if (f == &flow) continue;
      if (!any || f->vtime < least) least = f->vtime;
      any = true;
    }
    if (any) flow.vtime = std::max(flow.vtime, least - kIdleCreditLaunches / Weight(flow));
  }
  waiting_.push_back(&flow);
  while (!MayGo(flow)) {
    if (stop.load()) {
      Remove(waiting_, &flow);
      changed_.notify_all();
      return false;
    }
    changed_.wait_for(lock, std::chrono::milliseconds(10));
  }
  Remove(waiting_, &flow);
  const int64_t now = NowNs();
  if (flow.active++ == 0) {
    busy_.push_back(&flow);
    flow.busy_since_ns = now;
  }
  if (busy_.size() == 1 && flow.active == 1) busy_since_ns_ = now;
  flow.vtime += 1.0 / Weight(flow);
  flow.kernels.fetch_add(1, std::memory_order_relaxed);
  flow.queued_ns.fetch_add(static_cast<uint64_t>(now - arrived), std::memory_order_relaxed);
  changed_.notify_all();
  return true;
}

void ShareGate::Done(ShareFlow& flow) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (flow.active == 0) return;
  if (--flow.active == 0) {
    const int64_t now = NowNs();
    flow.busy_ns.fetch_add(static_cast<uint64_t>(now - flow.busy_since_ns),
                           std::memory_order_relaxed);
    Remove(busy_, &flow);
    if (busy_.empty()) busy_ns_ += static_cast<uint64_t>(now - busy_since_ns_);
  }
  changed_.notify_all();
}

uint64_t ShareGate::busy_ns() {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_ns_ + (busy_.empty() ? 0 : static_cast<uint64_t>(NowNs() - busy_since_ns_));
}

}  // namespace pvgpu::host
