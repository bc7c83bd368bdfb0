/* A driver-API program written the way CUDA samples are: allocate, copy, load PTX, launch,
 * synchronize, copy back, check. Nothing in it knows about pvgpu. */
#include "common.h"

#include <math.h>

int main(void) {
  const int n = 1 << 20;
  const float a = 2.5f;
  CHECK(cuInit(0));
  int count = 0;
  CHECK(cuDeviceGetCount(&count));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  char name[256];
  CHECK(cuDeviceGetName(name, sizeof(name), device));
  size_t total = 0;
  CHECK(cuDeviceTotalMem(&total, device));
  int major = 0, minor = 0;
  CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  printf("device 0 of %d: %s, compute %d.%d, %zu MiB\n", count, name, major, minor, total >> 20);

  CUcontext context;
  CHECK(cuCtxCreate(&context, NULL, 0, device));
  char* ptx = ReadPtx("saxpy");
  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx));
  CUfunction saxpy;
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));

  float* x = (float*)malloc(n * sizeof(float));
  float* y = (float*)malloc(n * sizeof(float));
  float* out = (float*)malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) {
    x[i] = (float)i * 0.5f;
    y[i] = (float)(n - i);
  }
  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc(&dx, n * sizeof(float)));
  CHECK(cuMemAlloc(&dy, n * sizeof(float)));
  CHECK(cuMemcpyHtoD(dx, x, n * sizeof(float)));
  CHECK(cuMemcpyHtoD(dy, y, n * sizeof(float)));

  int n_arg = n;
  float a_arg = a;
  void* args[] = {&n_arg, &a_arg, &dx, &dy};
  const unsigned int block = 256;
  CHECK(cuLaunchKernel(saxpy, (n + block - 1) / block, 1, 1, block, 1, 1, 0, NULL, args, NULL));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(out, dy, n * sizeof(float)));

  int errors = 0;
  for (int i = 0; i < n; ++i) {
    float expected = a * x[i] + y[i];
    if (fabsf(out[i] - expected) > 1e-5f * fabsf(expected)) {
      if (errors++ < 5) fprintf(stderr, "y[%d] = %f, expected %f\n", i, out[i], expected);
    }
  }
  CHECK(cuMemFree(dx));
  CHECK(cuMemFree(dy));
  CHECK(cuModuleUnload(module));
  CHECK(cuCtxDestroy(context));
  free(x);
  free(y);
  free(out);
  free(ptx);
  if (errors != 0) {
    printf("saxpy: FAILED, %d wrong elements of %d\n", errors, n);
    return 1;
  }
  printf("saxpy: %d elements correct\n", n);
  return 0;
}
