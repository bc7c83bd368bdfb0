// Unified memory: one pointer from cudaMallocManaged used by the host and by kernels, with
// prefetches and advice, and cudaPointerGetAttributes reporting it as managed.
#include "runtime_check.h"

__global__ void Scale(float* data, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * factor + 1.f;
}

int main() {
  int device = 0, managed = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, device));
  EXPECT_TRUE(managed == 1);
  const int n = 50000;
  float* data = nullptr;
  CHECK(cudaMallocManaged(&data, n * sizeof(float)));
  for (int i = 0; i < n; ++i) data[i] = static_cast<float>(i);  // written by the host
  cudaPointerAttributes attributes;
  CHECK(cudaPointerGetAttributes(&attributes, data));
  EXPECT_TRUE(attributes.type == cudaMemoryTypeManaged);
  EXPECT_TRUE(attributes.devicePointer == data && attributes.hostPointer == data);
  cudaMemLocation location = {cudaMemLocationTypeDevice, device};
  CHECK(cudaMemAdvise(data, n * sizeof(float), cudaMemAdviseSetPreferredLocation, location));
  CHECK(cudaMemPrefetchAsync(data, n * sizeof(float), location, 0, 0));
  Scale<<<(n + 255) / 256, 256>>>(data, n, 2.f);
  CHECK_LAUNCH();
  for (int i = 0; i < n; ++i) {  // read by the host, no copy
    EXPECT_TRUE(data[i] == 2.f * i + 1.f);
  }
  // A second kernel sees what the host writes after the first.
  for (int i = 0; i < n; ++i) data[i] = 1.f;
  Scale<<<(n + 255) / 256, 256>>>(data, n, 3.f);
  CHECK_LAUNCH();
  for (int i = 0; i < n; ++i) EXPECT_TRUE(data[i] == 4.f);
  CHECK(cudaFree(data));
  std::printf("managed memory, %d floats shared by host and kernels: ok\n", n);
  return 0;
}
