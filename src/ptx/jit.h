// The compiling engine: a kernel image's lowered code (ir.h) becomes native code through LLVM
// (ORC JIT). The compiled code keeps the interpreter's machine model exactly: the same warp
// register file in memory, the same min-pc scheduling of divergent lanes, the same handlers
// for everything it does not emit itself (native.h), so the two engines cannot differ. What it
// gains: no dispatch between instructions, register values held in SIMD registers across a
// straight run of code, immediates folded, and loads and stores of a whole warp as single
// vector accesses after one range check.
//
// A compiled kernel is entered per warp (RunWarp); it runs straight runs of instructions
// (segments) natively while the warp's lanes are converged or the divergent lanes wait beyond
// the segment, and hands single steps to the interpreter otherwise.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "ptx/ir.h"
#include "ptx/ptx.h"
#include "ptx/warp.h"

namespace pvgpu::ptx {


// Arguments of a compiled kernel's entry, filled per warp run.
struct JitArgs {
  Warp* warp;
  uint8_t* regs;
  const Inst* code;
  uint32_t* pc;
  uint32_t* active;
  uint32_t* next_wait;
  WarpState* state;
  uint8_t* shared;
  uint64_t shared_size;
  const uint8_t* params;
  uint64_t param_size;
  TranslateCache* cache;
};

// Where a kernel's code came from.
enum class JitOrigin : uint8_t {
  kCompiled,  // compiled by LLVM now
  kMemory,    // shared with a live compilation of the same code in this process
  kDisk,      // loaded from the disk cache (jit_cache.h)
};
const char* JitOriginName(JitOrigin o);

// Counts of one kernel's compilation, for tests, logs and benchmarks.
struct JitStats {
  uint32_t instructions = 0;  // in the image
  uint32_t native = 0;        // compiled to native code (the rest call their handlers)
  uint32_t segments = 0;
  std::string calls;  // the instructions compiled as handler calls, by PTX line and text
  double compile_ms = 0;  // from the start of code generation to callable code
  JitOrigin origin = JitOrigin::kCompiled;
};

// Process-wide counts of the compiling engine, for logs, metrics and benchmarks.
struct JitTotals {
  uint64_t kernels = 0;      // kernel images given code
  uint64_t compiled = 0;     // of which compiled by LLVM
  uint64_t memory_hits = 0;  // shared with a live compilation of the same code
  uint64_t disk_hits = 0;    // loaded from the disk cache
  uint64_t failed = 0;       // left to the interpreter (compilation failed)
  double compile_ms = 0;     // total time spent getting code, whatever its origin
  uint64_t pending = 0;      // now waiting for their code (queued or compiling); a level
};
JitTotals GetJitTotals();

// Per kernel image: its compiled code once ready. Shared with a background compilation, so
// that an image unloaded meanwhile does not take the result's home with it.
struct JitSlot {
  std::atomic<JitEntry> entry{nullptr};
  std::atomic<int> state{0};  // 0 not started, 1 compiling, 2 ready, 3 failed (interpret)
  JitStats stats;             // valid once state is 2
  std::shared_ptr<void> code;  // keeps the compiled code alive (jit.cc)
};

// The entry to run `img` with under `engine`, or nullptr to interpret: kJit compiles now
// (once per image), kAuto starts a background compilation and returns nullptr until it is done.
JitEntry CompiledEntry(const KernelImage& img, Engine engine);

// The slot's code if it is ready, else nullptr (one atomic load; for warps of a launch that
// started before its kernel was compiled).
inline JitEntry ReadyEntry(const JitSlot& slot) {
  return slot.state.load(std::memory_order_acquire) == 2
             ? slot.entry.load(std::memory_order_acquire)
             : nullptr;
}

// Compiles kernel `name` of `program` now, whatever the engine, and reports its counts; for
// tests and benchmarks.
Status CompileKernelForTest(const Program& program, std::string_view name, JitStats* stats);

// Runs a warp through compiled code (RunWarp's compiled path).
void RunCompiledWarp(JitEntry entry, Warp& w);

}  // namespace pvgpu::ptx
