/* Managed memory through the driver API: one pointer from cuMemAllocManaged written by the
 * program, read and written by kernels, read back by the program with no copy, checked against
 * a CPU reference; its pointer attributes, prefetches and advice; and cuMemFree. Nothing in it
 * knows about pvgpu. */
#include "common.h"

#include <stdint.h>

static const char kPtx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry scale(.param .u64 data, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p<2>;\n  .reg .b32 %r<8>;\n  .reg .f32 %f<4>;\n  .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [data];\n  ld.param.u32 %r1, [n];\n"
    "  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n  setp.ge.u32 %p1, %r5, %r1;\n  @%p1 bra DONE;\n"
    "  mul.wide.u32 %rd2, %r5, 4;\n  add.s64 %rd3, %rd1, %rd2;\n"
    "  ld.global.f32 %f1, [%rd3];\n  fma.rn.f32 %f2, %f1, 0f40000000, 0f3F800000;\n"
    "  st.global.f32 [%rd3], %f2;\n"
    "DONE:\n  ret;\n}\n";

int main(void) {
  (void)ReadPtx; /* common.h's; the kernel is here */
  enum { n = 100000 };
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  int managed = 0, concurrent = 0;
  CHECK(cuDeviceGetAttribute(&managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, device));
  CHECK(cuDeviceGetAttribute(&concurrent, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, device));
  CUcontext context;
  CHECK(cuCtxCreate(&context, NULL, 0, device));
  CUdeviceptr dptr = 0;
  if (!managed) {
    /* A device without managed memory (pvgpu over a remote channel) must refuse it clearly. */
    EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED, cuMemAllocManaged(&dptr, 4096, CU_MEM_ATTACH_GLOBAL));
    printf("managed_drv: no managed memory on this device; refused as expected\n");
    return 0;
  }
  EXPECT_TRUE(concurrent == 1);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(&dptr, 0, CU_MEM_ATTACH_GLOBAL));
  CHECK(cuMemAllocManaged(&dptr, n * sizeof(float), CU_MEM_ATTACH_GLOBAL));
  float* data = (float*)(uintptr_t)dptr;
  for (int i = 0; i < n; ++i) data[i] = (float)i; /* the program writes it directly */

  unsigned int type = 0;
  int is_managed = 0;
  void* host = NULL;
  CUdeviceptr device_pointer = 0;
  CHECK(cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, dptr + 64));
  EXPECT_TRUE(is_managed == 1);
  CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr));
  EXPECT_TRUE(type == CU_MEMORYTYPE_DEVICE);
  CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                 CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED};
  is_managed = 0;
  void* values[] = {&host, &device_pointer, &is_managed};
  CHECK(cuPointerGetAttributes(3, which, values, dptr));
  EXPECT_TRUE(host == data && device_pointer == dptr && is_managed == 1);

  CUmemLocation location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
  CHECK(cuMemAdvise(dptr, n * sizeof(float), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, location));
  CHECK(cuMemPrefetchAsync(dptr, n * sizeof(float), location, 0, NULL));
  CUdeviceptr plain;
  CHECK(cuMemAlloc(&plain, 4096));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemPrefetchAsync(plain, 4096, location, 0, NULL));

  CUmodule module;
  CHECK(cuModuleLoadData(&module, kPtx));
  CUfunction scale;
  CHECK(cuModuleGetFunction(&scale, module, "scale"));
  unsigned int count = n;
  void* params[] = {&dptr, &count};
  CHECK(cuLaunchKernel(scale, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
  CHECK(cuCtxSynchronize());
  for (int i = 0; i < n; ++i) { /* read back directly, against the CPU's answer */
    if (data[i] != 2.f * (float)i + 1.f) {
      fprintf(stderr, "data[%d] = %g, expected %g\n", i, data[i], 2.f * (float)i + 1.f);
      return 1;
    }
  }
  /* The kernel sees what the program writes after it, and a copy reads the same pages. */
  for (int i = 0; i < n; ++i) data[i] = 1.f;
  CHECK(cuLaunchKernel(scale, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
  float copied[4];
  CHECK(cuMemcpyDtoH(copied, dptr + 4 * (n - 4), sizeof(copied)));
  EXPECT_TRUE(copied[0] == 3.f && copied[3] == 3.f && data[0] == 3.f);

  CHECK(cuMemFree(dptr));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemAdvise(dptr, 4, CU_MEM_ADVISE_SET_READ_MOSTLY,
                                                      location));
  CHECK(cuMemFree(plain));

  /* Destroying a context frees its managed memory, as it frees its other allocations: the
   * pointer is no longer managed memory in the context that remains. */
  CUcontext second;
  CHECK(cuCtxCreate(&second, NULL, 0, device));
  CUdeviceptr doomed;
  CHECK(cuMemAllocManaged(&doomed, 1 << 20, CU_MEM_ATTACH_GLOBAL));
  ((volatile char*)(uintptr_t)doomed)[0] = 1;
  CHECK(cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, doomed));
  EXPECT_TRUE(is_managed == 1);
  CHECK(cuCtxDestroy(second));
  CHECK(cuCtxSetCurrent(context));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemAdvise(doomed, 4, CU_MEM_ADVISE_SET_READ_MOSTLY,
                                                      location));
  CUdeviceptr again;
  CHECK(cuMemAllocManaged(&again, 1 << 20, CU_MEM_ATTACH_GLOBAL));
  CHECK(cuMemFree(again));

  CHECK(cuCtxDestroy(context));
  printf("managed_drv: %d floats shared by the program and kernels: OK\n", n);
  return 0;
}
