// A program whose fat binary holds machine code for one GPU and no PTX (built with
// -gencode arch=compute_80,code=sm_80), as PyTorch's wheels are. On a device that runs PTX only
// its launches must fail as NVIDIA's runtime fails them on a GPU the binary has no code for,
// cudaErrorNoKernelImageForDevice ("no kernel image is available for execution on the
// device"), the error such users search for, and not as an invalid handle; and nothing else may
// break: memory and copies keep working, and a second launch says the same.
#include <vector>

#include "runtime_check.h"

__global__ void Fill(int* p, int v) { p[threadIdx.x] = v; }

int main() {
  int* d;
  CHECK(cudaMalloc(&d, 32 * sizeof(int)));
  CHECK(cudaMemset(d, 0, 32 * sizeof(int)));
  for (int attempt = 0; attempt < 2; ++attempt) {
    Fill<<<1, 32>>>(d, 7);
    EXPECT_ERROR(cudaErrorNoKernelImageForDevice, cudaGetLastError());
  }
  // Not a sticky error: the context still works.
  CHECK(cudaDeviceSynchronize());
  std::vector<int> h(32, -1);
  CHECK(cudaMemcpy(h.data(), d, 32 * sizeof(int), cudaMemcpyDeviceToHost));
  for (int v : h) EXPECT_TRUE(v == 0);
  CHECK(cudaFree(d));
  std::printf("machine code only: launches refused with cudaErrorNoKernelImageForDevice, ok\n");
  return 0;
}
