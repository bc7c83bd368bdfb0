#include "adapters/cpu/device_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace pvgpu::adapters::cpu {
namespace {

constexpr uint64_t kAlignment = 512;    // stronger than CUDA's documented 256
constexpr uint64_t kGuardBytes = 4096;  // unmapped device addresses after each block
constexpr uint64_t kMapThreshold = 1u << 20;

uint64_t RoundUp(uint64_t value, uint64_t align) { return (value + align - 1) / align * align; }

}  // namespace

uint64_t AddressRange::Reserve(uint64_t size, uint64_t alignment) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (size > end_ - base_ || alignment > end_ - base_) return 0;
  const uint64_t span = RoundUp(size, kAlignment) + kGuardBytes;
  const uint64_t start = RoundUp(next_, alignment);
  if (start <= end_ && end_ - start >= span) {
    next_ = start + span;
    live_[start] = span;
    return start;
  }
  // The window is used up once: fall back to the first gap between live ranges.
  uint64_t candidate = RoundUp(base_, alignment);
  for (const auto& [begin, reserved] : live_) {
    if (begin >= candidate && begin - candidate >= span) break;
    if (begin + reserved > candidate) candidate = RoundUp(begin + reserved, alignment);
  }
  if (candidate > end_ || end_ - candidate < span) return 0;
  live_[candidate] = span;
  return candidate;
}

void AddressRange::Release(uint64_t address) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_.erase(address);
}

DeviceMemory::~DeviceMemory() {
  for (const auto& [address, entry] : blocks_) {
    Release(entry.value, entry.size);
    if (!entry.value.placed) range_->Release(address);
  }
  for (const auto& [address, entry] : reservations_) {
    munmap(entry.value.host, entry.value.size);
    range_->Release(address);
  }
}

void DeviceMemory::Release(const Block& block, uint64_t size) {
  if (block.external) return;
  if (block.mapped) {
    munmap(block.data, RoundUp(size, 4096));
  } else {
    std::free(block.data);
  }
}

StatusOr<uint64_t> DeviceMemory::Allocate(uint64_t size) {
  if (size == 0) return Error(Code::kInvalidValue, "allocation of 0 bytes");
  Block block{nullptr, size >= kMapThreshold, false, false};
  if (block.mapped) {
    void* p = mmap(nullptr, RoundUp(size, 4096), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return Error(Code::kOutOfMemory, "host mmap failed");
    block.data = static_cast<uint8_t*>(p);
  } else {
    block.data = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, RoundUp(size, kAlignment)));
    if (block.data == nullptr) return Error(Code::kOutOfMemory, "host allocation failed");
    std::memset(block.data, 0, size);
  }
  const uint64_t address = range_->Reserve(size);
  std::unique_lock lock(mutex_);
  if (address == 0 || !blocks_.Insert(address, size, block)) {
    lock.unlock();
    Release(block, size);
    if (address != 0) range_->Release(address);
    return Error(Code::kOutOfMemory, "device address space exhausted");
  }
  used_ += size;
  return address;
}

StatusOr<uint64_t> DeviceMemory::AddExternal(uint8_t* data, uint64_t size) {
  if (size == 0 || data == nullptr) return Error(Code::kInvalidValue, "empty host mapping");
  const uint64_t address = range_->Reserve(size);
  if (address == 0) return Error(Code::kOutOfMemory, "device address space exhausted");
  std::unique_lock lock(mutex_);
  if (!blocks_.Insert(address, size, Block{data, false, true, false})) {
    range_->Release(address);
    return Error(Code::kOutOfMemory, "device address space exhausted");
  }
  return address;
}

Status DeviceMemory::AddExternalAt(uint64_t address, uint8_t* data, uint64_t size) {
  if (size == 0 || data == nullptr || address + size < address) {
    return Error(Code::kInvalidValue, "empty host mapping");
  }
  // Addresses of the window are the adapter's to hand out; one placed there could collide.
  if (range_->Overlaps(address, size)) {
    return Error(Code::kInvalidValue, "address inside the adapter's device address window");
  }
  std::unique_lock lock(mutex_);
  if (!blocks_.Insert(address, size, Block{data, false, true, true})) {
    return Error(Code::kInvalidValue, "address overlaps device memory");
  }
  return Status::Ok();
}

Status DeviceMemory::Free(uint64_t address) {
  Block block;
  uint64_t size = 0;
  {
    std::unique_lock lock(mutex_);
    auto it = blocks_.FindBase(address);
    if (it == blocks_.end()) return Error(Code::kInvalidValue, "not the start of an allocation");
    block = it->second.value;
    size = it->second.size;
    if (!block.external) used_ -= size;
    blocks_.erase(it);
  }
  Release(block, size);
  if (!block.placed) range_->Release(address);
  return Status::Ok();
}

StatusOr<uint64_t> DeviceMemory::Reserve(uint64_t size, uint64_t alignment) {
  if (size == 0 || size % 4096 != 0 || alignment < kAlignment || (alignment & (alignment - 1))) {
    return Error(Code::kInvalidValue, "reservation size or alignment not usable");
  }
  void* host = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (host == MAP_FAILED) return Error(Code::kOutOfMemory, "host address space exhausted");
  const uint64_t address = range_->Reserve(size, alignment);
  std::unique_lock lock(mutex_);
  if (address == 0 ||
      !reservations_.Insert(address, size, Reservation{static_cast<uint8_t*>(host), size})) {
    lock.unlock();
    munmap(host, size);
    if (address != 0) range_->Release(address);
    return Error(Code::kOutOfMemory, "device address space exhausted");
  }
  return address;
}

Status DeviceMemory::Unreserve(uint64_t base) {
  std::unique_lock lock(mutex_);
  auto it = reservations_.FindBase(base);
  if (it == reservations_.end()) return Error(Code::kInvalidValue, "not a reservation");
  const Reservation reservation = it->second.value;
  for (const auto& [address, entry] : blocks_) {
    if (entry.value.reservation == base) {
      return Error(Code::kInvalidValue, "reservation still has accessible mappings");
    }
  }
  reservations_.erase(it);
  lock.unlock();
  munmap(reservation.host, reservation.size);
  range_->Release(base);
  return Status::Ok();
}

const DeviceMemory::Reservation* DeviceMemory::ReservationOf(uint64_t address, uint64_t size,
                                                             uint64_t* base) const {
  auto it = reservations_.Find(address, size);
  if (it == reservations_.end()) return nullptr;
  *base = it->first;
  return &it->second.value;
}

Status DeviceMemory::Map(uint64_t address, uint64_t size, int fd, uint64_t offset) {
  std::unique_lock lock(mutex_);
  uint64_t base = 0;
  const Reservation* reservation = ReservationOf(address, size, &base);
  if (reservation == nullptr) return Error(Code::kInvalidValue, "mapping outside a reservation");
  void* target = reservation->host + (address - base);
  void* p = mmap(target, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                 static_cast<off_t>(offset));
  if (p == MAP_FAILED) {
    return Error(Code::kOutOfMemory, std::string("mapping physical memory: ") + strerror(errno));
  }
  return Status::Ok();
}

Status DeviceMemory::Unmap(uint64_t address, uint64_t size) {
  std::unique_lock lock(mutex_);
  uint64_t base = 0;
  const Reservation* reservation = ReservationOf(address, size, &base);
  if (reservation == nullptr) return Error(Code::kInvalidValue, "unmapping outside a reservation");
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    const bool inside = it->first >= address && it->first - address < size;
    it = inside && it->second.value.reservation == base ? blocks_.erase(it) : std::next(it);
  }
  // The pages go back to PROT_NONE reserved addresses; the memfd keeps its own until released.
  void* target = reservation->host + (address - base);
  if (mmap(target, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
           0) == MAP_FAILED) {
    return Error(Code::kOutOfMemory, std::string("unmapping physical memory: ") + strerror(errno));
  }
  return Status::Ok();
}

Status DeviceMemory::SetAccess(uint64_t address, uint64_t size, bool accessible) {
  std::unique_lock lock(mutex_);
  uint64_t base = 0;
  const Reservation* reservation = ReservationOf(address, size, &base);
  if (reservation == nullptr) return Error(Code::kInvalidValue, "access outside a reservation");
  auto it = blocks_.FindBase(address);
  if (!accessible) {
    if (it != blocks_.end() && it->second.value.reservation == base) blocks_.erase(it);
    return Status::Ok();
  }
  if (it != blocks_.end() && it->second.size == size && it->second.value.reservation == base) {
    return Status::Ok();  // accessible already
  }
  Block block{reservation->host + (address - base), false, true, true, base};
  if (!blocks_.Insert(address, size, block)) {
    return Error(Code::kInvalidValue, "access range overlaps another mapping's");
  }
  return Status::Ok();
}

void DeviceMemory::AddPhysical(int64_t delta) {
  std::unique_lock lock(mutex_);
  used_ += static_cast<uint64_t>(delta);
}

uint8_t* DeviceMemory::Translate(uint64_t address, uint64_t size) {
  Range range;
  return Lookup(address, size, &range) ? range.host + (address - range.base) : nullptr;
}

bool DeviceMemory::Lookup(uint64_t address, uint64_t size, Range* out) {
  std::shared_lock lock(mutex_);
  auto it = blocks_.Find(address, size);
  if (it != blocks_.end()) {
    *out = Range{it->first, it->second.size, it->second.value.data};
    return true;
  }
  // A range across accessible mappings of one reservation: adjacent in device addresses and so
  // in host memory (see Reserve), they are one buffer.
  uint64_t end = 0;
  auto first = std::as_const(blocks_).FindRun(
      address, size,
      [](const Block& a, const Block& b) {
        return a.reservation != 0 && a.reservation == b.reservation;
      },
      &end);
  if (first == blocks_.end()) return false;
  *out = Range{first->first, end - first->first, first->second.value.data};
  return true;
}

uint64_t DeviceMemory::used_bytes() const {
  std::shared_lock lock(mutex_);
  return used_;
}

}  // namespace pvgpu::adapters::cpu
