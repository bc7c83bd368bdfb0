/* Driver API beyond the basics: pointer attributes, unified-address copies, extended launches,
 * function attributes, stream waits on events and the occupancy calculators. */
#include "common.h"

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext ctx;
  CHECK(cuCtxCreate(&ctx, NULL, 0, device));
  char* ptx = ReadPtx("basics");
  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx));
  CUfunction write_index;
  CHECK(cuModuleGetFunction(&write_index, module, "write_index"));

  /* Pointer attributes */
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, 4096));
  unsigned int type = 0;
  CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 100));
  EXPECT_TRUE(type == CU_MEMORYTYPE_DEVICE);
  CUcontext owner = NULL;
  CHECK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, d));
  EXPECT_TRUE(owner == ctx);
  CUdeviceptr start = 0;
  size_t range = 0;
  CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 100));
  CHECK(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 100));
  EXPECT_TRUE(start == d && range == 4096);
  void* pinned = NULL;
  CHECK(cuMemAllocHost(&pinned, 1 << 20));
  CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)pinned));
  EXPECT_TRUE(type == CU_MEMORYTYPE_HOST);
  int local = 0;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)&local));
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_MAPPED};
  unsigned int t2 = 99;
  int mapped = 99;
  void* values[] = {&t2, &mapped};
  CHECK(cuPointerGetAttributes(2, attrs, values, (CUdeviceptr)&local));
  EXPECT_TRUE(t2 == 0 && mapped == 0);

  /* cuMemcpy works out directions from the pointers */
  unsigned int host[1024];
  for (int i = 0; i < 1024; ++i) host[i] = (unsigned int)i * 3u;
  CHECK(cuMemcpy(d, (CUdeviceptr)host, sizeof(host)));
  memset(host, 0, sizeof(host));
  CHECK(cuMemcpy((CUdeviceptr)host, d, sizeof(host)));
  EXPECT_TRUE(host[1023] == 3069u);

  /* Extended launch, with a priority attribute */
  CUlaunchAttribute attr;
  memset(&attr, 0, sizeof(attr));
  attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  attr.value.priority = 0;
  CUlaunchConfig config;
  memset(&config, 0, sizeof(config));
  config.gridDimX = 4;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 256;
  config.blockDimY = config.blockDimZ = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
  void* args[] = {&d};
  CHECK(cuLaunchKernelEx(&config, write_index, args, NULL));
  CHECK(cuMemcpyDtoH(host, d, sizeof(host)));
  EXPECT_TRUE(host[0] == 0 && host[1023] == 1023);
  /* ... and cooperatively: four blocks are resident at once on any device that has one */
  attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attr.value.cooperative = 1;
  CHECK(cuMemsetD32(d, 0, 1024));
  CHECK(cuLaunchKernelEx(&config, write_index, args, NULL));
  CHECK(cuMemcpyDtoH(host, d, sizeof(host)));
  EXPECT_TRUE(host[1] == 1 && host[1023] == 1023);

  /* Function attributes */
  int value = 0;
  CHECK(cuFuncSetAttribute(write_index, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024));
  CHECK(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, write_index));
  EXPECT_TRUE(value == 64 * 1024);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuFuncSetAttribute(write_index, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   1 << 30));
  CHECK(cuFuncSetCacheConfig(write_index, CU_FUNC_CACHE_PREFER_SHARED));

  /* Occupancy */
  int blocks = 0, min_grid = 0, block_size = 0;
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, write_index, 256, 0));
  EXPECT_TRUE(blocks >= 1);
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, write_index, 4096, 0));
  EXPECT_TRUE(blocks == 0);
  CHECK(cuOccupancyMaxPotentialBlockSize(&min_grid, &block_size, write_index, NULL, 0, 0));
  EXPECT_TRUE(block_size >= 32 && block_size <= 1024 && block_size % 32 == 0 && min_grid >= 1);

  /* A stream waiting on another stream's event */
  CUstream a, b;
  CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  CUevent done;
  CHECK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
  CHECK(cuMemsetD32Async(d, 7, 1024, a));
  CHECK(cuEventRecord(done, a));
  CHECK(cuStreamWaitEvent(b, done, 0));
  CHECK(cuMemcpyDtoHAsync(host, d, sizeof(host), b));
  CHECK(cuStreamSynchronize(b));
  EXPECT_TRUE(host[0] == 7 && host[1023] == 7);
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuStreamWaitEvent(b, (CUevent)0x999, 0));

  /* Pitched allocation and 2D copies in every direction */
  CUdeviceptr pitched;
  size_t pitch = 0;
  CHECK(cuMemAllocPitch(&pitched, &pitch, 100, 8, 4));
  EXPECT_TRUE(pitch >= 100 && pitch % 256 == 0);
  unsigned char rows[8][100];
  unsigned char back[8][100];
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 100; ++c) rows[r][c] = (unsigned char)(r * 16 + c);
  CUDA_MEMCPY2D copy;
  memset(&copy, 0, sizeof(copy));
  copy.srcMemoryType = CU_MEMORYTYPE_HOST;
  copy.srcHost = rows;
  copy.srcPitch = 100;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = pitched;
  copy.dstPitch = pitch;
  copy.WidthInBytes = 100;
  copy.Height = 8;
  CHECK(cuMemcpy2D(&copy));
  CUdeviceptr second;
  size_t pitch2 = 0;
  CHECK(cuMemAllocPitch(&second, &pitch2, 100, 8, 4));
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = pitched;
  copy.srcPitch = pitch;
  copy.dstDevice = second;
  copy.dstPitch = pitch2;
  CHECK(cuMemcpy2DAsync(&copy, NULL));
  memset(back, 0, sizeof(back));
  copy.srcDevice = second;
  copy.srcPitch = pitch2;
  copy.dstMemoryType = CU_MEMORYTYPE_HOST;
  copy.dstHost = back;
  copy.dstPitch = 100;
  CHECK(cuMemcpy2D(&copy));
  EXPECT_TRUE(memcmp(rows, back, sizeof(rows)) == 0);
  /* An array operand that names no array (arrays_drv copies with real ones). */
  copy.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  copy.dstArray = NULL;
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuMemcpy2D(&copy));
  CHECK(cuMemFree(pitched));
  CHECK(cuMemFree(second));

  /* Context-independent loading: libraries and kernels */
  CUlibrary library;
  CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, NULL, NULL, 0));
  CUkernel kernel;
  CHECK(cuLibraryGetKernel(&kernel, library, "write_index"));
  CUkernel missing_kernel;
  EXPECT_RESULT(CUDA_ERROR_NOT_FOUND, cuLibraryGetKernel(&missing_kernel, library, "nope"));
  unsigned int kernel_count = 0;
  CHECK(cuLibraryGetKernelCount(&kernel_count, library));
  EXPECT_TRUE(kernel_count == 5);
  const char* kernel_name = NULL;
  CHECK(cuKernelGetName(&kernel_name, kernel));
  EXPECT_TRUE(strcmp(kernel_name, "write_index") == 0);
  CHECK(cuMemsetD32(d, 0, 1024));
  CHECK(cuLaunchKernel((CUfunction)kernel, 4, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
  CHECK(cuMemcpyDtoH(host, d, sizeof(host)));
  EXPECT_TRUE(host[1023] == 1023);
  CUfunction from_kernel;
  CHECK(cuKernelGetFunction(&from_kernel, kernel));
  CUdeviceptr table;
  size_t table_size = 0;
  CHECK(cuLibraryGetGlobal(&table, &table_size, library, "counter_table"));
  EXPECT_TRUE(table_size == 16);
  CHECK(cuLibraryUnload(library));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuLibraryUnload(library));

  CHECK(cuEventDestroy(done));
  CHECK(cuStreamDestroy(a));
  CHECK(cuStreamDestroy(b));
  CHECK(cuMemFreeHost(pinned));
  CHECK(cuMemFree(d));
  CHECK(cuModuleUnload(module));
  /* 3D copies: a 4x3x5 box of a 16x8x6 host volume into a pitched device volume at an offset,
   * back out into a zeroed host volume, and device to device; only the box moves. */
  {
    enum { W = 16, H = 8, D = 6, BW = 4, BH = 3, BD = 5 };
    static unsigned char host_volume[D][H][W], back[D][H][W];
    for (int z = 0; z < D; ++z)
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) host_volume[z][y][x] = (unsigned char)(x + 16 * y + 128 * z);
    size_t pitch = 0;
    CUdeviceptr volume, other;
    CHECK(cuMemAllocPitch(&volume, &pitch, W, H * D, 4));
    CHECK(cuMemAllocPitch(&other, &pitch, W, H * D, 4));
    CHECK(cuMemsetD8(volume, 0, pitch * H * D));
    CUDA_MEMCPY3D copy;
    memset(&copy, 0, sizeof(copy));
    copy.srcMemoryType = CU_MEMORYTYPE_HOST;
    copy.srcHost = host_volume;
    copy.srcPitch = W;
    copy.srcHeight = H;
    copy.srcXInBytes = 2;
    copy.srcY = 1;
    copy.srcZ = 1;
    copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = volume;
    copy.dstPitch = pitch;
    copy.dstHeight = H;
    copy.dstXInBytes = 2;
    copy.dstY = 1;
    copy.dstZ = 1;
    copy.WidthInBytes = BW;
    copy.Height = BH;
    copy.Depth = BD;
    CHECK(cuMemcpy3D(&copy));
    /* device to device, whole volume, asynchronously */
    CUDA_MEMCPY3D whole;
    memset(&whole, 0, sizeof(whole));
    whole.srcMemoryType = whole.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    whole.srcDevice = volume;
    whole.dstDevice = other;
    whole.srcPitch = whole.dstPitch = pitch;
    whole.srcHeight = whole.dstHeight = H;
    whole.WidthInBytes = W;
    whole.Height = H;
    whole.Depth = D;
    CHECK(cuMemcpy3DAsync(&whole, NULL));
    /* back to the host, whole volume */
    whole.srcDevice = other;
    whole.dstMemoryType = CU_MEMORYTYPE_HOST;
    whole.dstHost = back;
    whole.dstPitch = W;
    CHECK(cuMemcpy3D(&whole));
    for (int z = 0; z < D; ++z)
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
          int inside = z >= 1 && z < 1 + BD && y >= 1 && y < 1 + BH && x >= 2 && x < 2 + BW;
          EXPECT_TRUE(back[z][y][x] == (inside ? host_volume[z][y][x] : 0));
        }
    /* slices that cannot hold the rows, and arrays */
    copy.Depth = 2;
    copy.srcHeight = 2;
    EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&copy));
    copy.srcHeight = H;
    copy.srcMemoryType = CU_MEMORYTYPE_ARRAY;  /* naming no array (arrays_drv has real ones) */
    copy.srcArray = NULL;
    EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuMemcpy3D(&copy));
    CHECK(cuMemFree(volume));
    CHECK(cuMemFree(other));
  }

  CHECK(cuCtxDestroy(ctx));
  free(ptx);
  printf("extras: all checks passed\n");
  return 0;
}
