// C = A * B for non-square matrices whose sides are not multiples of the tile, with the classic
// shared-memory tiling (each block stages one tile of A and one of B per step), checked against
// a CPU product computed in double.
#include <vector>

#include "runtime_check.h"

constexpr int kTile = 16;

__global__ void MatMulTiled(const float* a, const float* b, float* c, int m, int k, int n) {
  __shared__ float a_tile[kTile][kTile];
  __shared__ float b_tile[kTile][kTile + 1];  // padded: column reads avoid one bank
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float sum = 0.f;
  for (int k0 = 0; k0 < k; k0 += kTile) {
    const int ak = k0 + threadIdx.x;
    const int bk = k0 + threadIdx.y;
    a_tile[threadIdx.y][threadIdx.x] = row < m && ak < k ? a[row * k + ak] : 0.f;
    b_tile[threadIdx.y][threadIdx.x] = bk < k && col < n ? b[bk * n + col] : 0.f;
    __syncthreads();
    for (int kk = 0; kk < kTile; ++kk) sum += a_tile[threadIdx.y][kk] * b_tile[kk][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = sum;
}

int main() {
  const int m = 70, k = 45, n = 83;
  std::vector<float> a(m * k), b(k * n), c(m * n), want(m * n);
  for (int i = 0; i < m * k; ++i) a[i] = static_cast<float>((i * 7) % 13) - 6.f;
  for (int i = 0; i < k * n; ++i) b[i] = static_cast<float>((i * 5) % 11) * 0.25f - 1.f;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int l = 0; l < k; ++l) sum += double(a[i * k + l]) * b[l * n + j];
      want[i * n + j] = static_cast<float>(sum);
    }
  }
  float *da, *db, *dc;
  CHECK(cudaMalloc(&da, a.size() * sizeof(float)));
  CHECK(cudaMalloc(&db, b.size() * sizeof(float)));
  CHECK(cudaMalloc(&dc, c.size() * sizeof(float)));
  CHECK(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
  const dim3 block(kTile, kTile);
  const dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  MatMulTiled<<<grid, block>>>(da, db, dc, m, k, n);
  CHECK_LAUNCH();
  CHECK(cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
  // Small integers and quarters: every partial sum is exact in float.
  ExpectNear(c.data(), want.data(), c.size(), 0.f, "tiled matmul");
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  std::printf("tiled matmul %dx%d * %dx%d: ok\n", m, k, k, n);
  return 0;
}
