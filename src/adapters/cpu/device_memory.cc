#include "adapters/cpu/device_memory.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

namespace pvgpu::adapters::cpu {
namespace {

constexpr uint64_t kAlignment = 512;    // stronger than CUDA's documented 256
constexpr uint64_t kGuardBytes = 4096;  // unmapped device addresses after each block
constexpr uint64_t kMapThreshold = 1u << 20;

uint64_t RoundUp(uint64_t value, uint64_t align) { return (value + align - 1) / align * align; }

}  // namespace

uint64_t AddressRange::Reserve(uint64_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t span = RoundUp(size, kAlignment) + kGuardBytes;
  if (span < size) return 0;  // overflow
  if (end_ - next_ >= span) {
    const uint64_t address = next_;
    next_ += span;
    live_[address] = span;
    return address;
  }
  // The window is used up once: fall back to the first gap between live ranges.
  uint64_t candidate = base_;
  for (const auto& [start, reserved] : live_) {
    if (start - candidate >= span) break;
    candidate = start + reserved;
  }
  if (end_ - candidate < span) return 0;
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
  Block block{nullptr, size >= kMapThreshold, false};
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
  if (!blocks_.Insert(address, size, Block{data, false, true})) {
    range_->Release(address);
    return Error(Code::kOutOfMemory, "device address space exhausted");
  }
  return address;
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
  range_->Release(address);
  return Status::Ok();
}

uint8_t* DeviceMemory::Translate(uint64_t address, uint64_t size) {
  Range range;
  return Lookup(address, size, &range) ? range.host + (address - range.base) : nullptr;
}

bool DeviceMemory::Lookup(uint64_t address, uint64_t size, Range* out) {
  std::shared_lock lock(mutex_);
  auto it = blocks_.Find(address, size);
  if (it == blocks_.end()) return false;
  *out = Range{it->first, it->second.size, it->second.value.data};
  return true;
}

uint64_t DeviceMemory::used_bytes() const {
  std::shared_lock lock(mutex_);
  return used_;
}

}  // namespace pvgpu::adapters::cpu
