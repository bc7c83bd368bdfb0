// The lowered form the interpreter executes: a flat array of decoded instructions per kernel
// image, each with a handler chosen at load time and operands resolved to byte offsets in the
// warp's register file. Nothing is parsed or looked up by name at run time.
//
// Register file layout (per warp, structure-of-arrays so that lane loops vectorize):
//   predicate register: one uint32_t bit mask (bit i = lane i)
//   32-bit class (b8..b32, f16, f32): uint32_t[32]; 8/16-bit values are kept zero-extended
//   64-bit class: uint64_t[32]
// Immediates and special registers live in the same file (filled when a warp starts), so every
// handler reads its sources from registers only.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ptx/ptx.h"

namespace pvgpu::ptx {

struct Warp;
struct Inst;
struct JitSlot;  // jit.h

// Returns false in the common case (the loop advances pc). Returns true when the handler changed
// control state (pc, masks, fault, barrier); the loop then reschedules the warp.
using ExecFn = bool (*)(const Inst& in, Warp& w, uint32_t mask);

inline constexpr uint32_t kNoReg = 0xFFFFFFFFu;
inline constexpr uint32_t kFullMask = 0xFFFFFFFFu;

struct Inst {
  ExecFn fn = nullptr;
  uint32_t guard = kNoReg;  // predicate register offset
  uint8_t guard_neg = 0;
  uint8_t flags = 0;  // handler specific
  uint16_t n = 0;     // handler specific (vector width, bytes...)
  uint32_t a[6] = {kNoReg, kNoReg, kNoReg, kNoReg, kNoReg, kNoReg};  // register offsets
  int64_t imm = 0;   // address offset or small constant
  uint64_t aux = 0;  // handler specific (target pc, compare op, rounding ...)
};

// Storage helpers. The pvgpu_ptx library is built with -fno-strict-aliasing because registers
// are typed by the instruction that reads them, exactly like PTX .b registers.
template <typename T>
struct RegStorage {
  using type = std::conditional_t<(sizeof(T) < 4), uint32_t, T>;
};

template <typename T>
inline T* RegPtr(uint8_t* regs, uint32_t off) {
  return reinterpret_cast<T*>(regs + off);
}

template <typename T>
inline T LoadReg(uint8_t* regs, uint32_t off, int lane) {
  using S = typename RegStorage<T>::type;
  return static_cast<T>(reinterpret_cast<const S*>(regs + off)[lane]);
}

template <typename T>
inline void StoreReg(uint8_t* regs, uint32_t off, int lane, T v) {
  using S = typename RegStorage<T>::type;
  if constexpr (sizeof(T) < 4) {
    reinterpret_cast<S*>(regs + off)[lane] =
        static_cast<S>(static_cast<std::make_unsigned_t<T>>(v));
  } else {
    reinterpret_cast<S*>(regs + off)[lane] = v;
  }
}

// Calls f(lane) for each lane in mask; the full-mask loop has a constant trip count so the
// compiler can vectorize it.
template <typename F>
inline void ForLanes(uint32_t mask, F&& f) {
  if (mask == kFullMask) {
    for (int i = 0; i < 32; ++i) f(i);
  } else {
    while (mask) {
      int i = __builtin_ctz(mask);
      mask &= mask - 1;
      f(i);
    }
  }
}

// Generic address windows for shared, local and kernel-parameter memory. Device (global)
// addresses handed out by the adapter must lie below kWindowFloor.
inline constexpr uint64_t kWindowFloor = 0xF000000000000000ull;
inline constexpr uint64_t kParamWindow = 0xFC00000000000000ull;
inline constexpr uint64_t kSharedWindow = 0xFD00000000000000ull;
inline constexpr uint64_t kLocalWindow = 0xFE00000000000000ull;
inline constexpr uint64_t kWindowSize = uint64_t{1} << 40;
// Function "addresses" (virtual tables, function pointers): kFuncWindow + 16 * function index.
inline constexpr uint64_t kFuncWindow = 0xFB00000000000000ull;
// Parameter buffers of device-side launches (dynamic parallelism, device_launch.cc): offsets
// into the launching grid's buffer arena.
inline constexpr uint64_t kLaunchBufferWindow = 0xFA00000000000000ull;

// Where an instruction came from, for fault messages.
struct DebugInfo {
  int line = 0;
  std::string text;  // opcode with modifiers
};

struct CallCopy {
  uint32_t from = 0, to = 0, size = 0;  // frame-relative offsets (caller / callee)
};

struct CallSite {
  uint32_t callee_pc = 0;
  uint32_t caller_frame = 0;  // size of the caller's frame: callee FP = caller FP + this
  uint32_t callee_frame = 0;
  std::vector<CallCopy> args;  // caller frame -> callee frame
  std::vector<CallCopy> rets;  // callee frame -> caller frame
  // Registers of the callee saved across a (possibly) recursive call: {offset, bytes per lane}.
  std::vector<std::pair<uint32_t, uint32_t>> saved_regs;
  uint32_t save_bytes = 0;  // per lane, stored in the callee frame after its locals
  uint32_t save_offset = 0;
};

// Targets of one indirect call: (function address, call site) for every function whose
// address the module takes and whose signature fits the call.
using IndirectTargets = std::vector<std::pair<uint64_t, uint32_t>>;

// A global symbol's address materialized into a constant register at launch.
struct LaunchConst {
  uint32_t reg = 0;
  bool wide = true;  // 64-bit register class
  int global = -1;   // index into Program::globals()
  int64_t addend = 0;
};

// The shared memory NVIDIA's system software reserves in every block on sm_80 and later, which
// the %reserved_smem_offset_* registers describe and cooperative groups uses (for the barrier
// of tiles larger than a warp). A kernel that names one of them gets kBytes more shared memory
// per block, after its static and dynamic shared memory: [begin, end), cap bytes, with the two
// internal locations in its two halves. Its contents start at zero, as all shared memory here.
struct ReservedShared {
  enum Which : uint8_t { kBegin, kEnd, kCap, kOffset0, kOffset1 };
  static constexpr uint32_t kBytes = 1024;  // CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK
  // The register's value for a region starting at `begin`.
  static uint32_t Value(Which which, uint32_t begin) {
    switch (which) {
      case kBegin:
      case kOffset0:
        return begin;
      case kEnd:
        return begin + kBytes;
      case kCap:
        return kBytes;
      case kOffset1:
        return begin + kBytes / 2;
    }
    return begin;
  }
};

// Special registers kept in fixed slots of every kernel image.
struct SpecialSlots {
  uint32_t tid[3], ntid[3], ctaid[3], nctaid[3];
  uint32_t laneid, warpid, nwarpid, smid, nsmid, gridid;
  uint32_t lanemask_eq, lanemask_lt, lanemask_le, lanemask_gt, lanemask_ge;
  uint32_t dynamic_smem, total_smem;
  uint32_t fp;  // 64-bit frame pointer into per-thread local memory
  uint32_t cc;  // carry flag (predicate class) for add.cc / addc
};

// Operands of a texture or surface instruction (tex, tld4, txq, suld, sust, sured, suq), more
// than an Inst holds; the Inst's aux indexes KernelImage::tex (ops_texture.cc).
struct TexOperands {
  uint32_t dst[4] = {kNoReg, kNoReg, kNoReg, kNoReg};  // results; kNoReg: none or '_'
  uint32_t src[4] = {kNoReg, kNoReg, kNoReg, kNoReg};  // sust/sured values
  uint32_t handle = kNoReg;                            // 64-bit register: the object
  uint32_t coord[4] = {kNoReg, kNoReg, kNoReg, kNoReg};
  uint32_t lod = kNoReg;
  uint32_t dx[3] = {kNoReg, kNoReg, kNoReg}, dy[3] = {kNoReg, kNoReg, kNoReg};
  uint8_t geometry = 0;  // texture::Geometry
  uint8_t lod_mode = 0;  // tex::LodMode
  int8_t gather = -1;    // tld4's component
  uint8_t int_coords = 0;
  uint8_t boundary = 0;   // tex::Boundary
  uint8_t vec = 1;        // values moved
  uint8_t bytes = 0;      // bytes per value (surfaces)
  uint8_t formatted = 0;  // .p
  uint8_t op = 0;         // sured: 0 add, 1 min, 2 max, 3 and, 4 or
  uint8_t is_signed = 0;  // sured min/max
  uint8_t dst64 = 0;      // results are 64-bit registers (suld .b64)
  char query[24] = {};    // txq, suq
};

// Everything needed to run one kernel: its code plus the .func bodies it can reach.
struct KernelImage {
  std::string name;
  std::vector<Inst> code;
  std::vector<DebugInfo> debug;  // parallel to code
  std::vector<CallSite> calls;
  std::vector<IndirectTargets> indirect;
  std::vector<LaunchConst> launch_consts;
  // %envregN the kernel reads: {N, register offset}, filled from LaunchEnv::envreg at launch.
  // Slots exist only for the registers a kernel names, so other kernels' files do not grow.
  std::vector<std::pair<uint32_t, uint32_t>> envregs;
  // The %reserved_smem_offset_* registers the kernel reads, and their register offsets.
  std::vector<std::pair<ReservedShared::Which, uint32_t>> reserved_shared;
  std::vector<uint8_t> reg_template;  // initial register file (constants filled in)
  uint32_t reg_bytes = 0;
  SpecialSlots sp{};
  uint32_t frame_bytes = 0;  // kernel's own frame (locals + call-site params)
  uint32_t local_bytes = 0;  // per-thread local memory including call frames
  bool recursive = false;
  uint32_t static_shared = 0;
  uint32_t shared_align = 16;
  bool uses_printf = false;
  bool uses_device_launch = false;  // calls the device runtime's launch (device_launch.cc)
  std::vector<TexOperands> tex;     // texture and surface instructions' operands
  // Register offsets of instructions with more operands than an Inst holds (mma, wmma); the
  // Inst's aux is where its list starts (ops_mma.cc).
  std::vector<uint32_t> reg_lists;
  // The compiling engine's code for this image (jit.h), made at load time.
  std::shared_ptr<JitSlot> jit;
};

}  // namespace pvgpu::ptx
