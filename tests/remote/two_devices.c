/* Every host named in PVGPU_HOST contributes its adapters as devices, in order. Runs saxpy on
 * each device with a different factor and checks every result.
 *
 *   two_devices SAXPY_PTX EXPECTED_DEVICE_COUNT */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "e2e/read_file.h"

#define CHECK(call)                                                                   \
  do {                                                                                \
    CUresult r_ = (call);                                                             \
    if (r_ != CUDA_SUCCESS) {                                                         \
      const char* name_ = "?";                                                        \
      cuGetErrorName(r_, &name_);                                                     \
      fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call, name_, \
              (int)r_);                                                               \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s SAXPY_PTX EXPECTED_DEVICE_COUNT\n", argv[0]);
    return 2;
  }
  char* ptx = ReadTextFile(argv[1]);
  const int expected = atoi(argv[2]);
  CHECK(cuInit(0));
  int count = 0;
  CHECK(cuDeviceGetCount(&count));
  if (count != expected) {
    fprintf(stderr, "expected %d devices, found %d\n", expected, count);
    return 1;
  }
  const int n = 100000;
  for (int d = 0; d < count; ++d) {
    CUdevice device;
    CUcontext context;
    CUmodule module;
    CUfunction saxpy;
    char name[128];
    CHECK(cuDeviceGet(&device, d));
    CHECK(cuDeviceGetName(name, sizeof(name), device));
    CHECK(cuCtxCreate(&context, NULL, 0, device));
    CHECK(cuModuleLoadData(&module, ptx));
    CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
    float* x = (float*)malloc(n * sizeof(float));
    float* y = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) {
      x[i] = (float)i;
      y[i] = 1.0f;
    }
    CUdeviceptr dx, dy;
    CHECK(cuMemAlloc(&dx, n * sizeof(float)));
    CHECK(cuMemAlloc(&dy, n * sizeof(float)));
    CHECK(cuMemcpyHtoD(dx, x, n * sizeof(float)));
    CHECK(cuMemcpyHtoD(dy, y, n * sizeof(float)));
    float a = (float)(d + 2);
    int count_arg = n;
    void* params[] = {&count_arg, &a, &dx, &dy};
    CHECK(cuLaunchKernel(saxpy, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    CHECK(cuMemcpyDtoH(y, dy, n * sizeof(float)));
    for (int i = 0; i < n; ++i) {
      if (y[i] != a * (float)i + 1.0f) {
        fprintf(stderr, "device %d: y[%d] = %f, expected %f\n", d, i, y[i], a * (float)i + 1.0f);
        return 1;
      }
    }
    printf("device %d (%s): saxpy with a=%.0f correct\n", d, name, a);
    CHECK(cuCtxDestroy(context));
    free(x);
    free(y);
  }
  return 0;
}
