/* Dynamic parallelism: kernels compiled with nvcc -rdc=true that launch grids from device code
 * (CDP2), loaded as PTX through the driver API: a quicksort launching a grid per partition into
 * device-side streams, checked against the C library's qsort; blocks each launching a child
 * grid; launches nested past the device runtime's limit of 24 levels refused, the levels above
 * it run. */
#include "common.h"

#include <stdint.h>

static int CompareUint(const void* a, const void* b) {
  const unsigned int x = *(const unsigned int*)a, y = *(const unsigned int*)b;
  return (x > y) - (x < y);
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK(cuCtxCreate(&context, NULL, 0, device));
  char* ptx = ReadPtx("dynamic_parallelism");
  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx));
  CUfunction quicksort, deeper, fill_parent;
  CHECK(cuModuleGetFunction(&quicksort, module, "quicksort"));
  CHECK(cuModuleGetFunction(&deeper, module, "deeper"));
  CHECK(cuModuleGetFunction(&fill_parent, module, "fill_parent"));

  /* Quicksort of 20000 pseudo-random values. */
  const int n = 20000;
  unsigned int* values = (unsigned int*)malloc(n * sizeof(unsigned int));
  unsigned int* sorted = (unsigned int*)malloc(n * sizeof(unsigned int));
  uint32_t state = 12345;
  for (int i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    values[i] = state >> 8;
  }
  CUdeviceptr data;
  CHECK(cuMemAlloc(&data, n * sizeof(unsigned int)));
  CHECK(cuMemcpyHtoD(data, values, n * sizeof(unsigned int)));
  int left = 0, right = n - 1, depth = 0;
  void* qs_args[] = {&data, &left, &right, &depth};
  CHECK(cuLaunchKernel(quicksort, 1, 1, 1, 1, 1, 1, 0, NULL, qs_args, NULL));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(sorted, data, n * sizeof(unsigned int)));
  qsort(values, (size_t)n, sizeof(unsigned int), CompareUint);
  for (int i = 0; i < n; ++i) {
    if (sorted[i] != values[i]) {
      fprintf(stderr, "sorted[%d] = %u, expected %u\n", i, sorted[i], values[i]);
      return 1;
    }
  }

  /* Eight blocks, each launching a grid of 64 threads. */
  CUdeviceptr out;
  CHECK(cuMemAlloc(&out, 8 * 64 * sizeof(int)));
  CHECK(cuMemsetD32(out, 0xFFFFFFFFu, 8 * 64));
  int value = 1000;
  void* fill_args[] = {&out, &value};
  CHECK(cuLaunchKernel(fill_parent, 8, 1, 1, 32, 1, 1, 0, NULL, fill_args, NULL));
  int filled[8 * 64];
  CHECK(cuMemcpyDtoH(filled, out, sizeof(filled)));
  for (int i = 0; i < 8 * 64; ++i) EXPECT_TRUE(filled[i] == 1000 + i);

  /* Nesting: the host's grid is level 0; levels 1 to 24 run, the launch of level 25 fails. */
  CUdeviceptr depths;
  CHECK(cuMemAlloc(&depths, 40 * sizeof(int)));
  CHECK(cuMemsetD32(depths, 0xFFFFFFFFu, 40));
  int start = 0;
  void* deep_args[] = {&depths, &start};
  CHECK(cuLaunchKernel(deeper, 1, 1, 1, 1, 1, 1, 0, NULL, deep_args, NULL));
  CHECK(cuCtxSynchronize());
  int levels[40];
  CHECK(cuMemcpyDtoH(levels, depths, sizeof(levels)));
  for (int i = 0; i < 40; ++i) EXPECT_TRUE(levels[i] == (i <= 24 ? i : -1));

  CHECK(cuMemFree(data));
  CHECK(cuMemFree(out));
  CHECK(cuMemFree(depths));
  CHECK(cuModuleUnload(module));
  CHECK(cuCtxDestroy(context));
  free(values);
  free(sorted);
  free(ptx);
  printf("dynamic parallelism: quicksort, per-block children and nesting limit correct\n");
  return 0;
}
