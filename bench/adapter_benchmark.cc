// The cpu adapter called directly, through the same InprocessDevice that `pvgpu bench` uses as
// its native baseline: the floor under every channel figure, tracked on its own while the
// adapter and the PTX engine change.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <vector>

#include "tools/bench/inprocess_device.h"
#include "tools/bench/kernels.h"

namespace pvgpu::tools::bench {
namespace {

InprocessDevice& Device() {
  static InprocessDevice* device = [] {
    auto opened = InprocessDevice::Open();
    if (!opened.ok()) std::abort();
    return std::move(opened).value().release();
  }();
  return *device;
}

void BM_EmptyLaunch(benchmark::State& state) {
  auto index = Device().KernelIndex(kEmptyKernel);
  const std::vector<uint8_t> no_params;
  for (auto _ : state) {
    if (!Device().LaunchPrepared(*index, {1}, {32}, no_params).ok()) state.SkipWithError("launch");
  }
}
BENCHMARK(BM_EmptyLaunch);

void BM_Upload(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> host(bytes, 1);
  auto buffer = Device().Allocate(bytes);
  for (auto _ : state) {
    if (!Device().Upload(*buffer, host.data(), bytes).ok()) state.SkipWithError("upload");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  (void)Device().Free(*buffer);
}
BENCHMARK(BM_Upload)->Arg(4)->Arg(64 << 10)->Arg(16 << 20);

void BM_NbodyStep(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<float> zeros(4 * static_cast<size_t>(n), 0.f);
  for (int i = 0; i < n; ++i) zeros[4 * i] = static_cast<float>(i), zeros[4 * i + 3] = 1.f;
  auto pos = Device().Allocate(zeros.size() * 4), vel = Device().Allocate(zeros.size() * 4),
       out = Device().Allocate(zeros.size() * 4);
  (void)Device().Upload(*pos, zeros.data(), zeros.size() * 4);
  const float dt = 0.01f, softening2 = 0.01f;
  for (auto _ : state) {
    Status launched =
        Device().Launch(kNbodyKernel, {(n + kNbodyBlock - 1) / kNbodyBlock}, {kNbodyBlock},
                        {Arg(*pos), Arg(*vel), Arg(*out), Arg(n), Arg(dt), Arg(softening2)});
    if (!launched.ok()) state.SkipWithError("nbody step");
  }
  state.counters["interactions/s"] =
      benchmark::Counter(static_cast<double>(n) * n, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_NbodyStep)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pvgpu::tools::bench

BENCHMARK_MAIN();
