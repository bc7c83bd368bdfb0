// Stream memory operations on the adapters (cuStreamWaitValue32/64): the condition a wait
// checks and the polling loop both adapters wait with. docs/memory.md says why a wait is the
// daemon polling memory rather than the device driver's own wait: a poll can always be
// cancelled when the guest or its context goes, and it holds no lock another session needs.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/function_ref.h"
#include "common/status.h"

namespace pvgpu::adapters {

// CUstreamWaitValue_flags' conditions (cuda.h values).
enum class WaitCondition : uint32_t { kGeq = 0, kEq = 1, kAnd = 2, kNor = 3 };

// Whether `current`, a `width`-byte value (4 or 8), satisfies `condition` against `value`, as
// cuda.h defines each: GEQ compares with wraparound ((int32_t)(*addr - value) >= 0).
inline bool WaitSatisfied(uint64_t current, uint64_t value, uint32_t width,
                          WaitCondition condition) {
  const uint64_t mask = width == 4 ? 0xffffffffull : ~0ull;
  current &= mask;
  value &= mask;
  switch (condition) {
    case WaitCondition::kGeq:
      return width == 4 ? static_cast<int32_t>(static_cast<uint32_t>(current - value)) >= 0
                        : static_cast<int64_t>(current - value) >= 0;
    case WaitCondition::kEq:
      return current == value;
    case WaitCondition::kAnd:
      return (current & value) != 0;
    case WaitCondition::kNor:
      return (~(current | value) & mask) != 0;
  }
  return false;
}

// Calls `read` until it yields a value `satisfied` accepts, backing off from spinning to
// sleeping (up to 1 ms between reads), or until `cancel` is set (kLaunchFailed, as a cancelled
// kernel) or `read` fails (its error). wait_value.cc.
Status PollValue(FunctionRef<StatusOr<uint64_t>()> read, FunctionRef<bool(uint64_t)> satisfied,
                 const std::atomic<bool>& cancel);

}  // namespace pvgpu::adapters
