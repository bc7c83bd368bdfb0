// Address resolution for every state space, shared by loads/stores, atomics, printf and calls.
// This is where guest-controlled addresses become host pointers: every path bounds-checks.
#pragma once

#include <cstring>

#include "ptx/lower.h"
#include "ptx/warp.h"

namespace pvgpu::ptx {

inline uint8_t* GlobalPtr(Warp& w, uint64_t addr, uint32_t size) {
  const TranslateCache& c = *w.cache;
  uint64_t end = addr + size;
  if (addr >= c.lo && end <= c.hi && end >= addr) return c.host + (addr - c.lo);
  return TranslateGlobal(w, addr, size);
}

// Host pointer for `size` bytes at `addr` in space S for `lane`, or nullptr when out of bounds.
// `writable` rejects the read-only kernel parameter buffer.
template <MemSpace S>
inline uint8_t* Resolve(Warp& w, int lane, uint64_t addr, uint32_t size, bool writable) {
  if constexpr (S == MemSpace::kGlobal) {
    return GlobalPtr(w, addr, size);
  } else if constexpr (S == MemSpace::kShared) {
    if (addr > w.block->shared_size || size > w.block->shared_size - addr) return nullptr;
    return w.block->shared + addr;
  } else if constexpr (S == MemSpace::kLocal) {
    if (addr > w.local_stride || size > w.local_stride - addr) return nullptr;
    return w.local + static_cast<size_t>(lane) * w.local_stride + addr;
  } else if constexpr (S == MemSpace::kKParam) {
    const auto& p = w.launch->params;
    if (writable || addr > p.size() || size > p.size() - addr) return nullptr;
    return const_cast<uint8_t*>(p.data()) + addr;
  } else {
    if (addr >= kWindowFloor) {
      if (addr - kSharedWindow < kWindowSize)
        return Resolve<MemSpace::kShared>(w, lane, addr - kSharedWindow, size, writable);
      if (addr - kLocalWindow < kWindowSize)
        return Resolve<MemSpace::kLocal>(w, lane, addr - kLocalWindow, size, writable);
      if (addr - kParamWindow < kWindowSize)
        return Resolve<MemSpace::kKParam>(w, lane, addr - kParamWindow, size, writable);
      if (addr - kLaunchBufferWindow < kWindowSize) {
        const uint64_t offset = addr - kLaunchBufferWindow;
        const uint64_t used = w.launch->device_used.load(std::memory_order_acquire);
        if (offset > used || size > used - offset) return nullptr;
        return w.launch->device_buffers.data() + offset;
      }
      return nullptr;
    }
    return GlobalPtr(w, addr, size);
  }
}

inline uint8_t* ResolveAny(Warp& w, MemSpace s, int lane, uint64_t addr, uint32_t size,
                           bool writable) {
  switch (s) {
    case MemSpace::kGlobal:
      return Resolve<MemSpace::kGlobal>(w, lane, addr, size, writable);
    case MemSpace::kShared:
      return Resolve<MemSpace::kShared>(w, lane, addr, size, writable);
    case MemSpace::kLocal:
      return Resolve<MemSpace::kLocal>(w, lane, addr, size, writable);
    case MemSpace::kKParam:
      return Resolve<MemSpace::kKParam>(w, lane, addr, size, writable);
    default:
      return Resolve<MemSpace::kGeneric>(w, lane, addr, size, writable);
  }
}

inline uint64_t LaneAddress(const Inst& in, Warp& w, int lane, uint32_t base_slot) {
  uint64_t base = 0;
  if (in.a[base_slot] != kNoReg) {
    base = (in.flags & 1) ? LoadReg<uint32_t>(w.regs, in.a[base_slot], lane)
                          : LoadReg<uint64_t>(w.regs, in.a[base_slot], lane);
  }
  return base + static_cast<uint64_t>(in.imm);
}

const char* SpaceName(MemSpace s);
// Reports an out-of-bounds or misaligned access and stops the warp.
void AddressFault(Warp& w, const Inst& in, int lane, uint64_t addr, uint32_t size, MemSpace s,
                  bool misaligned);

// The engine's built-in external functions (printf, assert, the device runtime) take their
// arguments from the caller's .param frame, one frame offset per argument (in.a[k]), and write
// their result at frame offset in.aux when in.flags bit 0 is set (LowerCall, ops_control.cc).
inline uint8_t* FrameSlot(Warp& w, int lane, uint32_t off, uint32_t size) {
  const uint64_t fp = LoadReg<uint64_t>(w.regs, w.launch->image->sp.fp, lane);
  return Resolve<MemSpace::kLocal>(w, lane, fp + off, size, true);
}
template <typename T>
T ReadFrameArg(Warp& w, int lane, uint32_t off) {
  T v{};
  if (const uint8_t* p = FrameSlot(w, lane, off, sizeof(T))) std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void WriteFrameResult(const Inst& in, Warp& w, int lane, T v) {
  if ((in.flags & 1) == 0) return;
  if (uint8_t* p = FrameSlot(w, lane, static_cast<uint32_t>(in.aux), sizeof(T))) {
    std::memcpy(p, &v, sizeof(T));
  }
}

// Reads a NUL-terminated string from a generic address (printf, assert). Stops at `max` bytes.
bool ReadCString(Warp& w, int lane, uint64_t addr, std::string* out, size_t max = 4096);

}  // namespace pvgpu::ptx
