/* Pinned host memory: allocation, copies straight from and to it (sync and async), kernels
 * writing through a device pointer to host memory, registration of application memory. */
#include "common.h"

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext ctx;
  CHECK(cuCtxCreate(&ctx, NULL, 0, device));
  const size_t n = (size_t)3 << 20; /* bigger than one ring message */
  unsigned char* pinned = NULL;
  CHECK(cuMemAllocHost((void**)&pinned, n));
  unsigned int flags = 99;
  CHECK(cuMemHostGetFlags(&flags, pinned + 100));
  EXPECT_TRUE(flags == 0);
  for (size_t i = 0; i < n; ++i) pinned[i] = (unsigned char)(i * 31 + 7);

  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, n));
  CHECK(cuMemcpyHtoD(d, pinned, n));
  memset(pinned, 0, n); /* the synchronous copy is complete: the buffer is ours again */
  CHECK(cuMemcpyDtoH(pinned, d, n));
  for (size_t i = 0; i < n; ++i) {
    if (pinned[i] != (unsigned char)(i * 31 + 7)) {
      fprintf(stderr, "pinned round trip differs at %zu\n", i);
      return 1;
    }
  }
  /* Asynchronous copies into pinned memory complete with the stream. */
  CUstream stream;
  CHECK(cuStreamCreate(&stream, 0));
  CHECK(cuMemsetD8Async(d, 0x3c, n, stream));
  CHECK(cuMemcpyDtoHAsync(pinned, d, n, stream));
  CHECK(cuStreamSynchronize(stream));
  EXPECT_TRUE(pinned[0] == 0x3c && pinned[n - 1] == 0x3c);
  /* Part of a region, at an offset */
  CHECK(cuMemsetD8(d, 0x11, 64));
  CHECK(cuMemcpyDtoH(pinned + 1000, d, 64));
  EXPECT_TRUE(pinned[999] == 0x3c && pinned[1000] == 0x11 && pinned[1063] == 0x11 &&
              pinned[1064] == 0x3c);

  /* Mapped pinned memory: a kernel writes into host memory directly. */
  unsigned int* mapped = NULL;
  CHECK(cuMemHostAlloc((void**)&mapped, 1024 * sizeof(unsigned int), CU_MEMHOSTALLOC_DEVICEMAP));
  CUdeviceptr mapped_d;
  CHECK(cuMemHostGetDevicePointer(&mapped_d, mapped, 0));
  char* ptx = ReadPtx("basics");
  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx));
  CUfunction write_index;
  CHECK(cuModuleGetFunction(&write_index, module, "write_index"));
  void* args[] = {&mapped_d};
  CHECK(cuLaunchKernel(write_index, 4, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
  CHECK(cuCtxSynchronize());
  for (unsigned int i = 0; i < 1024; ++i) EXPECT_TRUE(mapped[i] == i);
  CUdeviceptr mapped_again;
  CHECK(cuMemHostGetDevicePointer(&mapped_again, mapped + 10, 0));
  EXPECT_TRUE(mapped_again == mapped_d + 10 * sizeof(unsigned int));

  /* Registered application memory: known to the driver, copied through the channel. */
  size_t reg_size = 1 << 16;
  unsigned char* reg = (unsigned char*)aligned_alloc(4096, reg_size);
  CHECK(cuMemHostRegister(reg, reg_size, CU_MEMHOSTREGISTER_PORTABLE));
  EXPECT_RESULT(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, cuMemHostRegister(reg + 8, 16, 0));
  CHECK(cuMemHostGetFlags(&flags, reg));
  EXPECT_TRUE(flags == CU_MEMHOSTREGISTER_PORTABLE);
  memset(reg, 0x77, reg_size);
  CHECK(cuMemcpyHtoD(d, reg, reg_size));
  memset(reg, 0, reg_size);
  CHECK(cuMemcpyDtoH(reg, d, reg_size));
  EXPECT_TRUE(reg[0] == 0x77 && reg[reg_size - 1] == 0x77);
  CHECK(cuMemHostUnregister(reg));
  EXPECT_RESULT(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(reg));
  free(reg);

  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(pinned + 1));
  CHECK(cuMemFreeHost(pinned));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(pinned));
  CHECK(cuMemFreeHost(mapped));
  CHECK(cuModuleUnload(module));
  CHECK(cuStreamDestroy(stream));
  CHECK(cuMemFree(d));
  CHECK(cuCtxDestroy(ctx));
  free(ptx);
  printf("pinned memory: all checks passed\n");
  return 0;
}
