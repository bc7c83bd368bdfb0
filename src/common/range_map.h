// RangeMap: disjoint address ranges [base, base + size) keyed by base, each with a value, and
// the one lookup everything that checks addresses needs: which range holds [address, address +
// size) entirely. Used for device allocations (guest and host), pinned host regions and the cpu
// adapter's memory blocks, so that the overflow-safe containment test is written once.
//
// Not synchronized: the owner guards it (its lock, or a single thread).
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <utility>

namespace pvgpu {

template <typename Value>
class RangeMap {
 public:
  struct Entry {
    uint64_t size;
    Value value;
  };
  using Map = std::map<uint64_t, Entry>;
  using iterator = typename Map::iterator;
  using const_iterator = typename Map::const_iterator;

  // Adds [base, base + size); false (nothing added) when it is empty, wraps around, or overlaps
  // a range already present.
  bool Insert(uint64_t base, uint64_t size, Value value) {
    if (size == 0 || base + size < base) return false;
    auto next = ranges_.lower_bound(base);
    if (next != ranges_.end() && next->first - base < size) return false;
    if (next != ranges_.begin()) {
      auto prev = std::prev(next);
      if (base - prev->first < prev->second.size) return false;
    }
    ranges_.emplace_hint(next, base, Entry{size, std::move(value)});
    return true;
  }

  // The range holding all of [address, address + size) (size 0 counts as 1 byte), or end().
  iterator Find(uint64_t address, uint64_t size = 1) { return FindIn(ranges_, address, size); }
  const_iterator Find(uint64_t address, uint64_t size = 1) const {
    return FindIn(ranges_, address, size);
  }
  // The first of a run of adjacent ranges ([b0, b1), [b1, b2), ...) that together hold all of
  // [address, address + size), each neighbour pair accepted by `joined(const Value&, const
  // Value&)`; end() when there is none. One range holding it all is a run of one. For ranges
  // that behave as one buffer when they touch (mappings of one reservation). `run_end`, when
  // given, receives the end of the whole run (past the range asked for, as far as it goes).
  template <typename Joined>
  const_iterator FindRun(uint64_t address, uint64_t size, Joined joined,
                         uint64_t* run_end = nullptr) const {
    if (size == 0) size = 1;
    if (address + size < address) return end();
    const_iterator first = Find(address);
    if (first == end()) return end();
    const_iterator it = first;
    uint64_t covered = it->first + it->second.size;
    while (covered < address + size) {
      const_iterator next = std::next(it);
      if (next == end() || next->first != covered || !joined(it->second.value, next->second.value)) {
        return end();
      }
      covered += next->second.size;
      it = next;
    }
    if (run_end != nullptr) {
      for (const_iterator next = std::next(it); next != end() && next->first == covered &&
                                                joined(it->second.value, next->second.value);
           it = next++) {
        covered += next->second.size;
      }
      *run_end = covered;
    }
    return first;
  }

  // The range starting exactly at `base`, or end().
  iterator FindBase(uint64_t base) { return ranges_.find(base); }
  const_iterator FindBase(uint64_t base) const { return ranges_.find(base); }
  bool Contains(uint64_t address, uint64_t size = 1) const { return Find(address, size) != end(); }

  iterator erase(iterator it) { return ranges_.erase(it); }
  size_t erase(uint64_t base) { return ranges_.erase(base); }
  void clear() { ranges_.clear(); }

  bool empty() const { return ranges_.empty(); }
  size_t size() const { return ranges_.size(); }
  iterator begin() { return ranges_.begin(); }
  iterator end() { return ranges_.end(); }
  const_iterator begin() const { return ranges_.begin(); }
  const_iterator end() const { return ranges_.end(); }

 private:
  template <typename M>
  static auto FindIn(M& ranges, uint64_t address, uint64_t size) -> decltype(ranges.end()) {
    if (size == 0) size = 1;
    auto it = ranges.upper_bound(address);
    if (it == ranges.begin()) return ranges.end();
    --it;
    const uint64_t offset = address - it->first;
    if (offset >= it->second.size || size > it->second.size - offset) return ranges.end();
    return it;
  }

  Map ranges_;
};

}  // namespace pvgpu
