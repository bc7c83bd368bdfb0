// libFuzzer target: PTX text from a guest must never crash the loader, whatever it contains.
// Loads that succeed are also launched briefly on a tiny grid with a cancel budget, so the
// lowering of every accepted instruction is exercised by the interpreter.
//
// Built a second time with PVGPU_FUZZ_JIT as ptx_jit_fuzzer: every accepted kernel is then
// compiled by the compiling engine (jit.cc) before it runs, so that guest-controlled PTX
// reaches LLVM's optimizer and code generator too. A compilation that never ends (LLVM 19's
// instruction selection looped on some inputs once) is libFuzzer's -timeout; a kernel the
// compiler refuses runs interpreted, as in pvgpud. The disk cache is off: every input compiles.
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <thread>

#include "ptx/ptx.h"

namespace {

class NullMemory final : public pvgpu::ptx::AddressSpace {
 public:
  uint8_t* Translate(uint64_t address, uint64_t size) override {
    if (address < 0x1000 || address - 0x1000 > sizeof(buf_) ||
        size > sizeof(buf_) - (address - 0x1000))
      return nullptr;
    return buf_ + (address - 0x1000);
  }

 private:
  uint8_t buf_[4096] = {};
};

}  // namespace

#ifdef PVGPU_FUZZ_JIT
constexpr pvgpu::ptx::Engine kEngine = pvgpu::ptx::Engine::kJit;
// The launch waits for its kernel's compilation first; the budget covers that and a moment
// of the compiled code.
constexpr int kBudgetMs = 2000;
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("PVGPU_JIT_CACHE_DIR", "off", 1);
  return 0;
}
#else
constexpr pvgpu::ptx::Engine kEngine = pvgpu::ptx::Engine::kInterp;
constexpr int kBudgetMs = 20;
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string log;
  auto program = pvgpu::ptx::LoadProgram(text, &log);
  if (!program.ok()) return 0;
  static pvgpu::ptx::Executor executor(1);
  NullMemory memory;
  for (const auto& k : (*program)->kernels()) {
    std::vector<uint8_t> params(k.param_bytes, 0);
    for (const auto& p : k.params)
      if (p.size == 8) {
        uint64_t a = 0x1000;
        std::memcpy(params.data() + p.offset, &a, 8);
      }
    std::vector<uint64_t> globals((*program)->globals().size(), 0x1000);
    std::atomic<bool> cancel{false};
    pvgpu::ptx::LaunchEnv env;
    env.memory = &memory;
    env.global_addresses = globals;
    env.cancel = &cancel;
    env.engine = kEngine;
    env.print = [](std::string_view) {};
    std::atomic<bool> done{false};
    std::thread stopper([&] {
      for (int i = 0; i < kBudgetMs && !done; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      cancel = true;
    });
    pvgpu::ptx::Dim3 block{k.reqntid.x ? k.reqntid.x : 32, k.reqntid.x ? k.reqntid.y : 1,
                           k.reqntid.x ? k.reqntid.z : 1};
    (void)executor.Launch(**program, k, {{1, 1, 1}, block, 0}, params, env);
    done = true;
    stopper.join();
  }
  return 0;
}
