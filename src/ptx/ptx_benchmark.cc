// Interpreter versus plain C++ on the corpus kernels (single worker thread against a single
// native thread, so the ratio is the interpreter's per-core overhead), and a cooperative
// launch's grid barriers against a launch per step ("coop").
//   ptx_benchmark [corpus_dir] [sgemm|wgemm|nbody|reduce|coop]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>

#include "ptx/half.h"
#include "ptx/test_util.h"

namespace pvgpu::ptx {
namespace {

using Clock = std::chrono::steady_clock;

// Process CPU time rather than wall time: the ratio stays meaningful on a loaded machine
// (the launching thread sleeps while the single worker runs).
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Best of `reps` runs: the minimum is the least disturbed by other load on the machine.
template <typename F>
double TimeIt(F&& f, int reps) {
  f();  // warm up
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    double t0 = CpuSeconds();
    f();
    best = std::min(best, CpuSeconds() - t0);
  }
  return best;
}

// Native references written the way a C++ programmer would write them (compiled -O3).
__attribute__((noinline)) void NativeSgemm(int n, const float* a, const float* b, float* c) {
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) c[i * n + j] = 0;
    for (int k = 0; k < n; ++k) {
      float aik = a[i * n + k];
      for (int j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
    }
  }
}

__attribute__((noinline)) void NativeNbody(int n, const float* pos, float* acc) {
  for (int i = 0; i < n; ++i) {
    float ax = 0, ay = 0, az = 0;
    for (int j = 0; j < n; ++j) {
      float dx = pos[4 * j] - pos[4 * i], dy = pos[4 * j + 1] - pos[4 * i + 1],
            dz = pos[4 * j + 2] - pos[4 * i + 2];
      float r2 = dx * dx + dy * dy + dz * dz + 0.01f;
      float inv = 1.0f / std::sqrt(r2);
      float s = pos[4 * j + 3] * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    acc[3 * i] = ax, acc[3 * i + 1] = ay, acc[3 * i + 2] = az;
  }
}

__attribute__((noinline)) float NativeReduce(const float* in, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i) s += in[i];
  return s;
}

// Grid barriers against a launch per step: coop_stencil runs `iters` steps in one cooperative
// launch (16 blocks resident, a grid.sync() per step); stencil_step does one step per ordinary
// launch. Wall time says how long the blocks wait for each other; CPU time what the waiting
// (spinning on the barrier) costs the host.
void CoopRows(const std::string& dir) {
  testing::Runner r(testing::Runner::ReadFile(dir + "/coop_sm75.ptx"));
  if (!r.ok()) {
    std::fprintf(stderr, "cannot load coop_sm75.ptx: %s\n", r.load_status().ToString().c_str());
    return;
  }
  const int n = 1 << 16, iters = 32;
  std::vector<uint32_t> init(n);
  for (int i = 0; i < n; ++i) init[i] = static_cast<uint32_t>(i * 2654435761u % 1000003u);
  uint64_t a = r.mem().Upload(init), b = r.mem().Alloc(n * 4);
  // Best of 5 for wall and CPU time separately.
  auto measure = [](auto&& f, double* wall, double* cpu) {
    *wall = *cpu = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      auto t0 = Clock::now();
      double c0 = CpuSeconds();
      f();
      *cpu = std::min(*cpu, CpuSeconds() - c0);
      *wall = std::min(*wall, std::chrono::duration<double>(Clock::now() - t0).count());
    }
  };
  std::printf(
      "\n%d stencil steps over %d words, 16 blocks x 128 threads: one cooperative launch"
      " with a grid barrier per step vs a launch per step (best of 5, ms)\n"
      "%-8s %12s %12s %12s %12s\n",
      iters, n, "workers", "barrier wall", "launch wall", "barrier cpu", "launch cpu");
  for (unsigned workers : {1u, 2u}) {
    Executor ex(workers);
    double cw, cc, lw, lc;
    measure(
        [&] {
          Status s =
              r.LaunchCooperative(ex, "coop_stencil", {16, 1, 1}, {128, 1, 1}, {a, b, n, iters});
          if (!s.ok()) std::fprintf(stderr, "coop_stencil: %s\n", s.ToString().c_str());
        },
        &cw, &cc);
    measure(
        [&] {
          for (int it = 0; it < iters; ++it) {
            Status s = r.Launch(ex, "stencil_step", {16, 1, 1}, {128, 1, 1},
                                {it & 1 ? b : a, it & 1 ? a : b, n});
            if (!s.ok()) std::fprintf(stderr, "stencil_step: %s\n", s.ToString().c_str());
          }
        },
        &lw, &lc);
    std::printf("%-8u %12.2f %12.2f %12.2f %12.2f\n", workers, cw * 1e3, lw * 1e3, cc * 1e3,
                lc * 1e3);
  }
}

int Main(int argc, char** argv) {
  std::string dir = argc > 1 && argv[1][0] ? argv[1] : PVGPU_PTX_CORPUS_DIR;
  std::string only = argc > 2 ? argv[2] : "";  // run one kernel (for profiling)
  auto want = [&](const char* name) { return only.empty() || only == name; };
  std::string ptx = testing::Runner::ReadFile(dir + "/block_sm75.ptx");
  testing::TestMemory mem;
  auto loaded = testing::LoadInto(ptx, mem);
  if (!loaded.program) {
    std::fprintf(stderr, "cannot load %s/block_sm75.ptx: %s\n", dir.c_str(),
                 loaded.error_log.c_str());
    return 1;
  }
  Executor exec(1);
  auto launch = [&](const char* name, Dim3 grid, Dim3 block, uint32_t shared,
                    std::vector<testing::Arg> args) {
    const KernelInfo* k = loaded.program->FindKernel(name);
    std::vector<uint8_t> buf(k->param_bytes);
    for (size_t i = 0; i < args.size(); ++i)
      std::memcpy(buf.data() + k->params[i].offset, args[i].bytes.data(), args[i].bytes.size());
    LaunchEnv env;
    env.memory = &mem;
    env.global_addresses = loaded.global_addrs;
    Status s = exec.Launch(*loaded.program, *k, {grid, block, shared}, buf, env);
    if (!s.ok()) std::fprintf(stderr, "%s failed: %s\n", name, s.ToString().c_str());
  };
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);

  std::printf("best CPU time per run, 1 worker thread vs 1 native thread\n%-12s %12s %12s %8s\n",
              "kernel", "interp (ms)", "native (ms)", "ratio");
  if (want("sgemm")) {
    const int n = 256;
    std::vector<float> a(n * n), b(n * n), c(n * n);
    for (auto& v : a) v = d(rng);
    for (auto& v : b) v = d(rng);
    uint64_t da = mem.Upload(a), db = mem.Upload(b), dc = mem.Alloc(n * n * 4);
    double ti = TimeIt(
        [&] {
          launch("sgemm", {n / 16, n / 16, 1}, {16, 16, 1}, 0, {n, da, db, dc});
        },
        3);
    double tn = TimeIt([&] { NativeSgemm(n, a.data(), b.data(), c.data()); }, 10);
    std::printf("%-12s %12.2f %12.2f %8.1f\n", "sgemm256", ti * 1e3, tn * 1e3, ti / tn);
  }
  if (want("wgemm")) {
    // WMMA GEMM (tensor.cu: f16 in, f32 accumulate, one warp per 16x16 tile) against the
    // native sgemm on the same values as floats.
    auto tensor = testing::LoadInto(testing::Runner::ReadFile(dir + "/tensor_sm80.ptx"), mem);
    const KernelInfo* k = tensor.program ? tensor.program->FindKernel("wmma_gemm") : nullptr;
    if (!k) {
      std::fprintf(stderr, "cannot load %s/tensor_sm80.ptx\n", dir.c_str());
      return 1;
    }
    const int n = 256;
    std::vector<uint16_t> ha(n * n), hb(n * n);
    std::vector<float> a(n * n), b(n * n), c(n * n);
    for (int i = 0; i < n * n; ++i) {
      ha[i] = FloatToHalf(d(rng));
      hb[i] = FloatToHalf(d(rng));
      a[i] = HalfToFloat(ha[i]);
      b[i] = HalfToFloat(hb[i]);
    }
    uint64_t da = mem.Upload(ha), db = mem.Upload(hb), dc = mem.Alloc(n * n * 4);
    std::vector<testing::Arg> args = {da, db, dc, n, n, n};
    std::vector<uint8_t> buf(k->param_bytes);
    for (size_t i = 0; i < args.size(); ++i)
      std::memcpy(buf.data() + k->params[i].offset, args[i].bytes.data(), args[i].bytes.size());
    LaunchEnv env;
    env.memory = &mem;
    double ti = TimeIt(
        [&] {
          Status s =
              exec.Launch(*tensor.program, *k, {{n / 16, n / 16, 1}, {32, 1, 1}, 0}, buf, env);
          if (!s.ok()) std::fprintf(stderr, "wmma_gemm failed: %s\n", s.ToString().c_str());
        },
        3);
    double tn = TimeIt([&] { NativeSgemm(n, a.data(), b.data(), c.data()); }, 10);
    std::printf("%-12s %12.2f %12.2f %8.1f\n", "wgemm256", ti * 1e3, tn * 1e3, ti / tn);
  }
  if (want("nbody")) {
    const int n = 4096;
    std::vector<float> pos(4 * n), acc(3 * n);
    for (auto& v : pos) v = d(rng) * 10;
    uint64_t dp = mem.Upload(pos), dacc = mem.Alloc(3 * n * 4);
    double ti = TimeIt(
        [&] {
          launch("nbody", {n / 128, 1, 1}, {128, 1, 1}, 128 * 16, {n, dp, dacc});
        },
        2);
    double tn = TimeIt([&] { NativeNbody(n, pos.data(), acc.data()); }, 3);
    std::printf("%-12s %12.2f %12.2f %8.1f\n", "nbody4096", ti * 1e3, tn * 1e3, ti / tn);
  }
  if (want("reduce")) {
    const int n = 1 << 22;
    std::vector<float> in(n);
    for (auto& v : in) v = d(rng);
    uint64_t din = mem.Upload(in), dout = mem.Alloc(4);
    double ti = TimeIt(
        [&] {
          launch("block_reduce", {n / 256, 1, 1}, {256, 1, 1}, 256 * 4, {din, dout, n});
        },
        3);
    volatile float sink = 0;
    double tn = TimeIt([&] { sink = NativeReduce(in.data(), n); }, 10);
    std::printf("%-12s %12.2f %12.2f %8.1f\n", "reduce4M", ti * 1e3, tn * 1e3, ti / tn);
  }
  if (want("coop")) CoopRows(dir);
  return 0;
}

}  // namespace
}  // namespace pvgpu::ptx

int main(int argc, char** argv) { return pvgpu::ptx::Main(argc, argv); }
