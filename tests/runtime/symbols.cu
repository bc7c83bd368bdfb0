// __constant__ and __device__ variables reached from the host by symbol: cudaMemcpyToSymbol,
// cudaMemcpyFromSymbol, cudaGetSymbolAddress and cudaGetSymbolSize.
#include "runtime_check.h"

constexpr int kCoefficients = 8;
__constant__ float coefficients[kCoefficients];
__device__ int counter;
__device__ float results[256];

// Evaluates the polynomial with `coefficients` at x = i / 256 and counts the calls.
__global__ void Evaluate() {
  const int i = threadIdx.x;
  const float x = i / 256.f;
  float y = 0.f;
  for (int c = kCoefficients - 1; c >= 0; --c) y = y * x + coefficients[c];
  results[i] = y;
  atomicAdd(&counter, 1);
}

int main() {
  float host_coefficients[kCoefficients];
  for (int c = 0; c < kCoefficients; ++c) host_coefficients[c] = 1.f / (c + 1);
  CHECK(cudaMemcpyToSymbol(coefficients, host_coefficients, sizeof(host_coefficients)));
  const int start = 1000;
  CHECK(cudaMemcpyToSymbol(counter, &start, sizeof(start)));
  size_t size = 0;
  CHECK(cudaGetSymbolSize(&size, results));
  EXPECT_TRUE(size == sizeof(float) * 256);
  void* address = nullptr;
  CHECK(cudaGetSymbolAddress(&address, results));
  CHECK(cudaMemset(address, 0, size));

  Evaluate<<<1, 256>>>();
  CHECK_LAUNCH();
  Evaluate<<<1, 256>>>();
  CHECK_LAUNCH();

  int count = 0;
  CHECK(cudaMemcpyFromSymbol(&count, counter, sizeof(count)));
  EXPECT_TRUE(count == start + 2 * 256);
  float host_results[256];
  CHECK(cudaMemcpyFromSymbol(host_results, results, sizeof(host_results)));
  for (int i = 0; i < 256; ++i) {
    const float x = i / 256.f;
    float want = 0.f;
    for (int c = kCoefficients - 1; c >= 0; --c) want = want * x + host_coefficients[c];
    if (std::fabs(host_results[i] - want) > 1e-5f) {
      std::fprintf(stderr, "results[%d] = %g, want %g\n", i, host_results[i], want);
      return 1;
    }
  }
  // With an offset: the second half of the constants only.
  const float halves[4] = {10.f, 20.f, 30.f, 40.f};
  CHECK(cudaMemcpyToSymbol(coefficients, halves, sizeof(halves), 4 * sizeof(float)));
  float back[kCoefficients];
  CHECK(cudaMemcpyFromSymbol(back, coefficients, sizeof(back)));
  for (int c = 0; c < kCoefficients; ++c) {
    EXPECT_TRUE(back[c] == (c < 4 ? host_coefficients[c] : halves[c - 4]));
  }
  std::printf("constant and device symbols: ok (%d kernel calls counted)\n", count - start);
  return 0;
}
