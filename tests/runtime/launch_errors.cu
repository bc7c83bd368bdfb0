// Launch-configuration errors as cudart reports them: an impossible shape is an error of the
// launch, from cudaGetLastError (and cudaPeekAtLastError, which keeps it), not sticky: the next
// correct launch runs.
//
// Which error: cudart reports the code cuLaunchKernel returns. pvgpu's driver returns
// CUDA_ERROR_INVALID_VALUE, as NVIDIA's does to driver-API programs, so the runtime reports
// cudaErrorInvalidValue; on NVIDIA's driver a cudart program sees cudaErrorInvalidConfiguration,
// which that driver produces for the runtime alone, by no public interface (docs/cudart.md,
// "Launch-configuration errors").
#include "runtime_check.h"

constexpr cudaError_t kShapeError = cudaErrorInvalidValue;

__global__ void Touch(int* data) {
  const int i = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) data[i] = i + 1;
}

void ExpectGoodLaunch(int* data) {
  CHECK(cudaMemset(data, 0, 4 * sizeof(int)));
  Touch<<<4, 32>>>(data);
  CHECK_LAUNCH();
  int host[4];
  CHECK(cudaMemcpy(host, data, sizeof(host), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(host[i] == i + 1);
}

void ExpectRefusedShape(const char* what, dim3 grid, dim3 block, int* data) {
  Touch<<<grid, block>>>(data);
  const cudaError_t peeked = cudaPeekAtLastError();
  const cudaError_t last = cudaGetLastError();
  if (peeked != kShapeError || last != kShapeError) {
    std::fprintf(stderr, "%s: peek %s, last %s, expected %s\n", what, cudaGetErrorName(peeked),
                 cudaGetErrorName(last), cudaGetErrorName(kShapeError));
    std::exit(1);
  }
  CHECK(cudaGetLastError());       // read once, then cleared
  CHECK(cudaDeviceSynchronize());  // nothing ran, nothing failed
}

int main() {
  int* data;
  CHECK(cudaMalloc(&data, 4 * sizeof(int)));
  ExpectGoodLaunch(data);
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  ExpectRefusedShape("too many threads per block", dim3(1), dim3(prop.maxThreadsPerBlock * 2),
                     data);
  ExpectGoodLaunch(data);
  ExpectRefusedShape("block z beyond its limit", dim3(1), dim3(1, 1, prop.maxThreadsDim[2] + 1),
                     data);
  ExpectRefusedShape("grid y beyond its limit", dim3(1, prop.maxGridSize[1] + 1), dim3(32), data);
  ExpectRefusedShape("empty grid", dim3(0), dim3(32), data);
  ExpectGoodLaunch(data);
  CHECK(cudaFree(data));
  std::printf("launch-configuration errors: ok\n");
  return 0;
}
