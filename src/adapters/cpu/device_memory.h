// Device memory of one cpu-adapter context: host buffers behind fake device addresses.
//
// Addresses come from a per-adapter AddressRange so that pointers are unique across the
// adapter's contexts (as with CUDA's unified addressing), are never reused while the window
// lasts (a stale pointer faults instead of hitting a newer allocation), and are separated by
// guard gaps (an overrun past the end faults instead of reaching a neighbour).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "common/range_map.h"
#include "common/status.h"
#include "ptx/ptx.h"

namespace pvgpu::adapters::cpu {

// Hands out device address ranges inside [base, base + window).
class AddressRange {
 public:
  AddressRange(uint64_t base, uint64_t window) : base_(base), end_(base + window), next_(base) {}
  // Whether [address, address + size) overlaps the window.
  bool Overlaps(uint64_t address, uint64_t size) const {
    return address < end_ && address + size > base_;
  }
  // Returns a free range start for `size` bytes aligned to `alignment` (a power of two, at
  // least 512), or 0 when the window is exhausted.
  uint64_t Reserve(uint64_t size, uint64_t alignment = 512);
  void Release(uint64_t address);

 private:
  std::mutex mutex_;
  uint64_t base_, end_, next_;
  std::map<uint64_t, uint64_t> live_;  // start -> reserved size
};

class DeviceMemory final : public ptx::AddressSpace {
 public:
  explicit DeviceMemory(AddressRange* range) : range_(range) {}
  ~DeviceMemory() override;

  StatusOr<uint64_t> Allocate(uint64_t size);
  Status Free(uint64_t address);
  // Gives caller-owned memory a device address (pinned host memory). Not counted as used.
  StatusOr<uint64_t> AddExternal(uint8_t* data, uint64_t size);
  // The same at device address `address` chosen by the caller (managed memory, at the guest's
  // own address); kInvalidValue when it overlaps a block or the adapter's address window.
  Status AddExternalAt(uint64_t address, uint8_t* data, uint64_t size);
  // Virtual memory management (adapters::Context's ReserveAddress ... SetAccess, whose checks
  // the session has made). A reservation is one host range of PROT_NONE pages at the same
  // offsets as its device addresses; mapping physical memory (a memfd) places its pages there
  // with MAP_FIXED, so adjacent mappings of one reservation are contiguous host memory too, and
  // an accessible mapping is a block that Lookup joins with its accessible neighbours.
  StatusOr<uint64_t> Reserve(uint64_t size, uint64_t alignment);
  Status Unreserve(uint64_t base);
  Status Map(uint64_t address, uint64_t size, int fd, uint64_t offset);
  Status Unmap(uint64_t address, uint64_t size);
  Status SetAccess(uint64_t address, uint64_t size, bool accessible);
  // Physical memory counted as used (created and not yet destroyed).
  void AddPhysical(int64_t delta);

  uint8_t* Translate(uint64_t address, uint64_t size) override;
  bool Lookup(uint64_t address, uint64_t size, Range* out) override;
  uint64_t used_bytes() const;

 private:
  struct Block {
    uint8_t* data;
    bool mapped;    // mmap'd (large) rather than heap-allocated
    bool external;  // owned by someone else: never released here
    bool placed;    // at a caller's address, not one of range_'s
    uint64_t reservation = 0;  // a mapping's reservation: joined with its neighbours there
  };
  struct Reservation {
    uint8_t* host;
    uint64_t size;
  };
  // The reservation holding [address, address + size), or nullptr.
  const Reservation* ReservationOf(uint64_t address, uint64_t size, uint64_t* base) const;
  static void Release(const Block& block, uint64_t size);

  AddressRange* range_;
  mutable std::shared_mutex mutex_;
  RangeMap<Block> blocks_;
  RangeMap<Reservation> reservations_;
  uint64_t used_ = 0;
};

}  // namespace pvgpu::adapters::cpu
