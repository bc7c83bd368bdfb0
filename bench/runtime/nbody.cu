// All-pairs gravity, the CUDA samples' `nbody -benchmark` experiment from the WSL GPU-PV
// articles, written as an ordinary CUDA runtime program (<<<>>>, nvcc's static cudart). The
// kernel, initial state and reporting are those of `pvgpu bench nbody`, which launches the same
// step through the driver API and runs this program for its "CUDA runtime" row, so the two can
// be compared. Before the benchmark, a small system is checked against a CPU reference.
//
//   nbody [-benchmark] [-numbodies=N] [-iterations=N] [-dump=FILE]
//
// -dump=FILE writes the final positions (4 floats per body, native byte order) to FILE, and the
// last line of the output is then `timed seconds: S` (wall clock around the timed steps and
// their synchronize, as `pvgpu bench nbody` times its own runs).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    const cudaError_t check_error_ = (call);                                               \
    if (check_error_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "nbody: %s:%d: %s failed: %s (%d): %s\n", __FILE__, __LINE__,   \
                   #call, cudaGetErrorName(check_error_), static_cast<int>(check_error_), \
                   cudaGetErrorString(check_error_));                                      \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

constexpr int kTile = 256;  // bodies staged per block; also the block size
constexpr float kDt = 0.01f;
constexpr float kSoftening2 = 0.01f;  // softening 0.1, squared, as in the samples
constexpr double kFlopsPerInteraction = 20;

__global__ void NbodyStep(const float4* pos, float4* vel, float4* pos_out, int n, float dt,
                          float softening2) {
  __shared__ float4 tile[kTile];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float4 self = i < n ? pos[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int base = 0; base < n; base += blockDim.x) {
    const int j = base + threadIdx.x;
    tile[threadIdx.x] = j < n ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);  // zero mass pads
    __syncthreads();
    const int count = min(static_cast<int>(blockDim.x), n - base);
    for (int k = 0; k < count; ++k) {
      const float4 other = tile[k];
      const float dx = other.x - self.x, dy = other.y - self.y, dz = other.z - self.z;
      const float inv = rsqrtf(dx * dx + dy * dy + dz * dz + softening2);
      const float s = other.w * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    __syncthreads();
  }
  if (i < n) {
    float4 v = vel[i];
    v.x += ax * dt;
    v.y += ay * dt;
    v.z += az * dt;
    vel[i] = v;
    pos_out[i] = make_float4(self.x + v.x * dt, self.y + v.y * dt, self.z + v.z * dt, self.w);
  }
}

// Bodies uniformly in a cube, at rest, equal masses adding up to 1 (as `pvgpu bench nbody`).
std::vector<float> InitialPositions(int n) {
  std::vector<float> pos(4 * size_t(n));
  std::mt19937 random(20201);
  std::uniform_real_distribution<float> coordinate(-1.f, 1.f);
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < 3; ++c) pos[4 * i + c] = coordinate(random);
    pos[4 * i + 3] = 1.f / static_cast<float>(n);
  }
  return pos;
}

// The same step on the CPU, summing in the same order.
void CpuStep(const std::vector<float>& pos, std::vector<float>& vel, std::vector<float>& out,
             int n) {
  for (int i = 0; i < n; ++i) {
    float ax = 0.f, ay = 0.f, az = 0.f;
    for (int j = 0; j < n; ++j) {
      const float dx = pos[4 * j] - pos[4 * i], dy = pos[4 * j + 1] - pos[4 * i + 1],
                  dz = pos[4 * j + 2] - pos[4 * i + 2];
      const float inv = 1.f / std::sqrt(dx * dx + dy * dy + dz * dz + kSoftening2);
      const float s = pos[4 * j + 3] * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    vel[4 * i] += ax * kDt;
    vel[4 * i + 1] += ay * kDt;
    vel[4 * i + 2] += az * kDt;
    for (int c = 0; c < 3; ++c) out[4 * i + c] = pos[4 * i + c] + vel[4 * i + c] * kDt;
    out[4 * i + 3] = pos[4 * i + 3];
  }
}

struct Simulation {
  int n;
  float4 *pos[2], *vel;
  int current = 0;

  explicit Simulation(const std::vector<float>& initial) : n(int(initial.size() / 4)) {
    const size_t bytes = initial.size() * sizeof(float);
    CHECK(cudaMalloc(&pos[0], bytes));
    CHECK(cudaMalloc(&pos[1], bytes));
    CHECK(cudaMalloc(&vel, bytes));
    CHECK(cudaMemcpy(pos[0], initial.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(vel, 0, bytes));
  }
  ~Simulation() {
    CHECK(cudaFree(pos[0]));
    CHECK(cudaFree(pos[1]));
    CHECK(cudaFree(vel));
  }
  void Step() {
    NbodyStep<<<(n + kTile - 1) / kTile, kTile>>>(pos[current], vel, pos[1 - current], n, kDt,
                                                  kSoftening2);
    CHECK(cudaGetLastError());
    current = 1 - current;
  }
  std::vector<float> Positions() {
    std::vector<float> out(4 * size_t(n));
    CHECK(cudaMemcpy(out.data(), pos[current], out.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return out;
  }
};

// The value of `-name=VALUE` among the arguments, or nullptr.
const char* Flag(int argc, char** argv, const char* name) {
  const size_t length = std::strlen(name);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, length) == 0 && argv[i][length] == '=') {
      return argv[i] + length + 1;
    }
  }
  return nullptr;
}

int IntFlag(int argc, char** argv, const char* name, int fallback) {
  const char* value = Flag(argc, argv, name);
  return value != nullptr ? std::atoi(value) : fallback;
}

// Compares n floats with a CPU reference; prints the first mismatch and exits non-zero.
void ExpectNear(const float* got, const float* want, size_t n, float tolerance,
                const char* what) {
  for (size_t i = 0; i < n; ++i) {
    const float scale = std::fmax(1.f, std::fabs(want[i]));
    if (!(std::fabs(got[i] - want[i]) <= tolerance * scale)) {
      std::fprintf(stderr, "nbody: %s: element %zu is %.9g, the CPU reference says %.9g\n",
                   what, i, got[i], want[i]);
      std::exit(1);
    }
  }
}

int main(int argc, char** argv) {
  const int n = IntFlag(argc, argv, "-numbodies", 4096);
  const int steps = IntFlag(argc, argv, "-iterations", 5);
  const char* dump = Flag(argc, argv, "-dump");
  if (n <= 0 || steps <= 0) {
    std::fprintf(stderr,
                 "usage: nbody [-benchmark] [-numbodies=N] [-iterations=N] [-dump=FILE]\n");
    return 2;
  }
  {  // Correctness first, on a system small enough for the CPU: 2 steps of 300 bodies.
    const int small = 300;
    std::vector<float> pos = InitialPositions(small), vel(pos.size(), 0.f), next(pos.size());
    Simulation simulation(pos);
    for (int s = 0; s < 2; ++s) {
      simulation.Step();
      CpuStep(pos, vel, next, small);
      pos.swap(next);
    }
    const std::vector<float> got = simulation.Positions();
    ExpectNear(got.data(), pos.data(), got.size(), 1e-4f, "nbody positions against the CPU");
  }
  Simulation simulation(InitialPositions(n));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  simulation.Step();  // warm-up, as `pvgpu bench nbody`
  CHECK(cudaDeviceSynchronize());
  const auto wall_start = std::chrono::steady_clock::now();
  CHECK(cudaEventRecord(start));
  for (int s = 0; s < steps; ++s) simulation.Step();
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  const double wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  float ms = 0.f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  const double interactions = double(n) * n * steps;
  const double seconds = ms / 1e3;
  std::printf("nbody (CUDA runtime): %d bodies, %d timed steps after 1 warm-up\n", n, steps);
  std::printf("%d bodies, total time for %d iterations: %.3f ms\n", n, steps, ms);
  std::printf("= %.4f billion interactions per second\n", interactions / seconds / 1e9);
  std::printf("= %.3f single-precision GFLOP/s at %d flops per interaction\n",
              interactions / seconds * kFlopsPerInteraction / 1e9,
              static_cast<int>(kFlopsPerInteraction));
  std::printf("ms/step %.2f\n", ms / steps);
  if (dump != nullptr) {
    const std::vector<float> positions = simulation.Positions();
    std::FILE* file = std::fopen(dump, "wb");
    if (file == nullptr ||
        std::fwrite(positions.data(), sizeof(float), positions.size(), file) != positions.size() ||
        std::fclose(file) != 0) {
      std::fprintf(stderr, "nbody: cannot write %s\n", dump);
      return 1;
    }
    std::printf("timed seconds: %.9f\n", wall_seconds);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return 0;
}
