// libFuzzer target: the two PTX engines must agree. An input is a list of choices: its first
// byte sets the number of operations, the rest, four bytes at a time, make every choice of
// random_kernel.h's generator (zero once the input runs out), so that libFuzzer's mutations
// change a kernel a little at a time. The kernel runs on 2 blocks of 64 threads in the
// interpreter, the reference, and compiled by the compiling engine; a difference in the launch's
// result or in any byte it leaves in memory aborts (the payload of a NaN in a float register
// excepted, as in jit_test.cc: PTX defines none). The generator's kernels are well-formed by
// construction, so the loader refusing one aborts too: that is the generator's defect.
//
// The inputs the kernels read come from a fixed seed; the disk cache is off, so every input
// compiles (about a second each under the sanitizers).
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ptx/jit.h"
#include "ptx/random_kernel.h"

namespace {

using pvgpu::ptx::Dim3;
using pvgpu::ptx::Engine;

constexpr Dim3 kGrid{2, 1, 1};
constexpr Dim3 kBlock{64, 1, 1};
constexpr size_t kThreads = 128;

pvgpu::ptx::testing::KernelRun Run(Engine engine, const std::string& ptx,
                                   const std::vector<uint32_t>& in) {
  pvgpu::ptx::testing::KernelRun run =
      pvgpu::ptx::testing::RunKernel(engine, ptx, in, kThreads * 16, kGrid, kBlock);
  if (!run.load.ok()) {
    std::fprintf(stderr, "the generator wrote PTX the loader refuses: %s\n%s\n",
                 run.load.message().c_str(), ptx.c_str());
    abort();
  }
  return run;
}

bool IsNan(uint32_t w) { return (w & 0x7F800000u) == 0x7F800000u && (w & 0x7FFFFFu) != 0; }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("PVGPU_JIT_CACHE_DIR", "off", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  size_t pos = 1;
  auto next = [&]() -> uint32_t {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | (pos < size ? data[pos++] : 0u);
    return v;
  };
  const int ops = 1 + data[0] % 64;
  const std::string ptx = pvgpu::ptx::testing::RandomKernel(next, ops);

  std::mt19937 rng(20261204);
  std::vector<uint32_t> in(kThreads * 4);
  for (auto& v : in) v = rng();
  for (size_t i = 0; i < in.size(); i += 3) {  // some ordinary floats too
    const float x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 37.0f;
    std::memcpy(&in[i], &x, 4);
  }
  const auto a = Run(Engine::kInterp, ptx, in);
  if (Run(Engine::kInterp, ptx, in).out != a.out) {
    // An undefined result (say, a register read before it is written): the generator's defect.
    std::fprintf(stderr, "the generator wrote a kernel whose result is not determined\n%s\n",
                 ptx.c_str());
    abort();
  }
  const auto b = Run(Engine::kJit, ptx, in);
  if (a.launch.code() != b.launch.code()) {
    std::fprintf(stderr, "engines disagree on the launch: interpreter %s, compiled %s\n%s\n",
                 a.launch.message().c_str(), b.launch.message().c_str(), ptx.c_str());
    abort();
  }
  for (size_t i = 0; i < a.out.size(); ++i) {
    if (i % 16 >= 8 && IsNan(a.out[i]) && IsNan(b.out[i])) continue;
    if (a.out[i] != b.out[i]) {
      std::fprintf(stderr,
                   "engines disagree: thread %zu word %zu: interpreter 0x%08x, compiled 0x%08x\n%s\n",
                   i / 16, i % 16, a.out[i], b.out[i], ptx.c_str());
      abort();
    }
  }
  return 0;
}
