// The first program of every CUDA course: c = a + b with <<<>>>, checked on the CPU.
#include <vector>

#include "runtime_check.h"

__global__ void VectorAdd(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  const int n = 100000;  // not a multiple of the block: the bounds check matters
  std::vector<float> a(n), b(n), c(n), want(n);
  for (int i = 0; i < n; ++i) {
    a[i] = 0.5f * i;
    b[i] = 1000.f - i;
    want[i] = a[i] + b[i];
  }
  float *da, *db, *dc;
  const size_t bytes = n * sizeof(float);
  CHECK(cudaMalloc(&da, bytes));
  CHECK(cudaMalloc(&db, bytes));
  CHECK(cudaMalloc(&dc, bytes));
  CHECK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dc, 0xff, bytes));
  const int block = 256;
  VectorAdd<<<(n + block - 1) / block, block>>>(da, db, dc, n);
  CHECK_LAUNCH();
  CHECK(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
  ExpectNear(c.data(), want.data(), n, 0.f, "vector add");
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  std::printf("vector add of %d elements: ok\n", n);
  return 0;
}
