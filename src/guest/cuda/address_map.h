// AddressMap<V>: a RangeMap (common/range_map.h) under its own lock, for the guest's "which
// allocation or region holds this address" questions, asked from any thread. Lookups return a
// copy of the range, so nothing refers into the map once its lock is released.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "common/mutex.h"
#include "common/range_map.h"

namespace pvgpu::guest {

template <typename Value>
class AddressMap {
 public:
  struct Range {
    uint64_t base;
    uint64_t size;
    Value value;
  };

  // Adds [base, base + size); false when it is empty, wraps, or overlaps a range present.
  bool Insert(uint64_t base, uint64_t size, Value value) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    return ranges_.Insert(base, size, std::move(value));
  }

  // Adds [base, base + size), first dropping every range it overlaps: for records that the
  // host's answer shows are stale (it handed the memory out again).
  void Assign(uint64_t base, uint64_t size, Value value) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    if (ranges_.Insert(base, size, value)) return;
    for (auto it = ranges_.begin(); it != ranges_.end();) {
      const bool overlaps = it->first - base < size || base - it->first < it->second.size;
      it = overlaps ? ranges_.erase(it) : std::next(it);
    }
    ranges_.Insert(base, size, std::move(value));
  }

  // The range holding all of [address, address + size) (size 0 counts as 1 byte).
  std::optional<Range> Find(uint64_t address, uint64_t size = 1) const EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    return Copy(ranges_.Find(address, size));
  }
  // The first range of a run of adjacent ranges holding all of [address, address + size), each
  // neighbour pair accepted by `joined` (RangeMap::FindRun).
  template <typename Joined>
  std::optional<Range> FindRun(uint64_t address, uint64_t size, Joined joined) const
      EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    return Copy(ranges_.FindRun(address, size, joined));
  }
  // The range starting exactly at `base`.
  std::optional<Range> FindBase(uint64_t base) const EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    return Copy(ranges_.FindBase(base));
  }

  // Removes the range starting at `base` and returns it.
  std::optional<Range> TakeBase(uint64_t base) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    auto it = ranges_.FindBase(base);
    std::optional<Range> range = Copy(it);
    if (range.has_value()) ranges_.erase(it);
    return range;
  }
  // Removes every range whose value `pred(const Value&)` holds for (called with the map locked).
  template <typename Pred>
  void EraseIf(Pred pred) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    for (auto it = ranges_.begin(); it != ranges_.end();) {
      it = pred(static_cast<const Value&>(it->second.value)) ? ranges_.erase(it) : std::next(it);
    }
  }

 private:
  template <typename It>
  std::optional<Range> Copy(It it) const REQUIRES(mutex_) {
    if (it == ranges_.end()) return std::nullopt;
    return Range{it->first, it->second.size, it->second.value};
  }

  mutable Mutex mutex_;
  RangeMap<Value> ranges_ GUARDED_BY(mutex_);
};

}  // namespace pvgpu::guest
