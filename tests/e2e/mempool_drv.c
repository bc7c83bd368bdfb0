/* Stream-ordered allocation: cuMemAllocAsync and cuMemFreeAsync on the default pool, an
 * explicit pool (cuMemPoolCreate, cuMemAllocFromPoolAsync, cuDeviceSetMemPool), the pools'
 * attributes and counters, trimming and the release threshold, access descriptors, and the
 * errors CUDA defines. A saxpy over pool memory is checked against a CPU reference. */
#include "common.h"

#include <math.h>
#include <stdint.h>

static cuuint64_t PoolAttr(CUmemoryPool pool, CUmemPool_attribute attr) {
  cuuint64_t value = 0;
  CHECK(cuMemPoolGetAttribute(pool, attr, &value));
  return value;
}

static void SetPoolAttr(CUmemoryPool pool, CUmemPool_attribute attr, cuuint64_t value) {
  CHECK(cuMemPoolSetAttribute(pool, attr, &value));
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  int supported = 0;
  CHECK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device));
  EXPECT_TRUE(supported == 1);
  CUcontext context;
  CHECK(cuCtxCreate(&context, NULL, 0, device));
  char* ptx = ReadPtx("saxpy");
  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx));
  CUfunction saxpy;
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  CUmemoryPool default_pool = NULL, current = NULL;
  CHECK(cuDeviceGetDefaultMemPool(&default_pool, device));
  CHECK(cuDeviceGetMemPool(&current, device));
  EXPECT_TRUE(default_pool != NULL && default_pool == current);

  /* saxpy over pool memory, all on one stream. */
  const int n = 100000;
  const float a = 1.5f;
  const size_t bytes = n * sizeof(float);
  float* x = (float*)malloc(bytes);
  float* y = (float*)malloc(bytes);
  float* out = (float*)malloc(bytes);
  for (int i = 0; i < n; ++i) {
    x[i] = (float)(i % 1000) * 0.25f;
    y[i] = (float)(n - i);
  }
  CUdeviceptr dx = 0, dy = 0;
  CHECK(cuMemAllocAsync(&dx, bytes, stream));
  CHECK(cuMemAllocAsync(&dy, bytes, stream));
  EXPECT_TRUE(dx != 0 && dy != 0 && dx != dy);
  EXPECT_TRUE(dx % 256 == 0 && dy % 256 == 0);
  CUdeviceptr base = 0;
  size_t size = 0;
  CHECK(cuMemGetAddressRange(&base, &size, dy + 4));
  EXPECT_TRUE(base == dy && size == bytes);
  EXPECT_TRUE(PoolAttr(default_pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) >= 2 * bytes);
  EXPECT_TRUE(PoolAttr(default_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >=
              PoolAttr(default_pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT));
  CHECK(cuMemcpyHtoDAsync(dx, x, bytes, stream));
  CHECK(cuMemcpyHtoDAsync(dy, y, bytes, stream));
  int n_arg = n;
  float a_arg = a;
  void* args[] = {&n_arg, &a_arg, &dx, &dy};
  CHECK(cuLaunchKernel(saxpy, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream, args, NULL));
  CHECK(cuMemcpyDtoHAsync(out, dy, bytes, stream));
  CHECK(cuMemFreeAsync(dx, stream));
  CHECK(cuMemFreeAsync(dy, stream));
  CHECK(cuStreamSynchronize(stream));
  for (int i = 0; i < n; ++i) {
    const float expected = a * x[i] + y[i];
    if (fabsf(out[i] - expected) > 1e-5f * fabsf(expected)) {
      fprintf(stderr, "y[%d] = %f, expected %f\n", i, out[i], expected);
      return 1;
    }
  }
  EXPECT_TRUE(PoolAttr(default_pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
  EXPECT_TRUE(PoolAttr(default_pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH) >= 2 * bytes);
  /* The default release threshold is 0: the synchronization gave everything back. */
  EXPECT_TRUE(PoolAttr(default_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);

  /* With a high threshold the pool keeps its memory and reuses it: no growth. */
  SetPoolAttr(default_pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, UINT64_MAX);
  EXPECT_TRUE(PoolAttr(default_pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == UINT64_MAX);
  CUdeviceptr first = 0, again = 0;
  CHECK(cuMemAllocAsync(&first, 4096, stream));
  const cuuint64_t reserved = PoolAttr(default_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
  EXPECT_TRUE(reserved >= 4096);
  CHECK(cuMemFreeAsync(first, NULL));  /* freed on another stream: still in order */
  CHECK(cuStreamSynchronize(stream));
  EXPECT_TRUE(PoolAttr(default_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == reserved);
  for (int round = 0; round < 50; ++round) {
    CHECK(cuMemAllocAsync(&again, 4096, stream));
    CHECK(cuMemsetD32Async(again, (unsigned)round, 1024, stream));
    unsigned int probe = 0;
    CHECK(cuMemcpyDtoHAsync(&probe, again + 4092, 4, stream));
    CHECK(cuStreamSynchronize(stream));
    EXPECT_TRUE(probe == (unsigned)round);
    CHECK(cuMemFreeAsync(again, stream));
  }
  EXPECT_TRUE(again == first);  /* the same block, reused */
  EXPECT_TRUE(PoolAttr(default_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == reserved);
  /* High-water marks reset to the current value; the current counters are read-only. */
  SetPoolAttr(default_pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0);
  EXPECT_TRUE(PoolAttr(default_pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 0);
  cuuint64_t value = 5;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuMemPoolSetAttribute(default_pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &value));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuMemPoolSetAttribute(default_pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &value));
  int reuse = 0;
  CHECK(cuMemPoolGetAttribute(default_pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
  EXPECT_TRUE(reuse == 1);
  reuse = 0;
  CHECK(cuMemPoolSetAttribute(default_pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
  reuse = 1;
  CHECK(cuMemPoolGetAttribute(default_pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
  EXPECT_TRUE(reuse == 0);
  CHECK(cuMemPoolTrimTo(default_pool, 0));
  EXPECT_TRUE(PoolAttr(default_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);

  /* An explicit pool, made the device's current one. */
  CUmemPoolProps props;
  memset(&props, 0, sizeof(props));
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  CUmemoryPool pool;
  CHECK(cuMemPoolCreate(&pool, &props));
  EXPECT_TRUE(pool != default_pool);
  CUdeviceptr p1 = 0, p2 = 0;
  CHECK(cuMemAllocFromPoolAsync(&p1, 3 << 20, pool, stream));  /* larger than one chunk */
  EXPECT_TRUE(PoolAttr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= (3u << 20));
  CHECK(cuMemsetD8Async(p1, 0x5a, 3 << 20, stream));
  unsigned char tail[16];
  CHECK(cuMemcpyDtoHAsync(tail, p1 + (3 << 20) - 16, 16, stream));
  CHECK(cuStreamSynchronize(stream));
  for (int i = 0; i < 16; ++i) EXPECT_TRUE(tail[i] == 0x5a);
  /* A trim never takes memory still allocated. */
  CHECK(cuMemPoolTrimTo(pool, 0));
  EXPECT_TRUE(PoolAttr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= (3u << 20));
  CHECK(cuDeviceSetMemPool(device, pool));
  CHECK(cuDeviceGetMemPool(&current, device));
  EXPECT_TRUE(current == pool);
  const cuuint64_t used_before = PoolAttr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
  CHECK(cuMemAllocAsync(&p2, 1000, stream));
  EXPECT_TRUE(PoolAttr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) > used_before);
  EXPECT_TRUE(PoolAttr(default_pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
  /* Access: the owner always reads and writes; no other device may be granted access. */
  CUmemAccessDesc access;
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK(cuMemPoolSetAccess(pool, &access, 1));
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemPoolSetAccess(pool, &access, 1));
  CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  CHECK(cuMemPoolGetAccess(&flags, pool, &access.location));
  EXPECT_TRUE(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  /* cuMemFree takes pool memory too. */
  CHECK(cuMemFree(p2));
  /* Destroyed with an allocation outstanding: the allocation stays usable until freed, and
   * the device falls back to its default pool. */
  CHECK(cuMemPoolDestroy(pool));
  CHECK(cuDeviceGetMemPool(&current, device));
  EXPECT_TRUE(current == default_pool);
  CHECK(cuMemsetD8Async(p1, 0x11, 16, stream));
  CHECK(cuMemcpyDtoHAsync(tail, p1, 16, stream));
  CHECK(cuStreamSynchronize(stream));
  EXPECT_TRUE(tail[0] == 0x11 && tail[15] == 0x11);
  CHECK(cuMemFreeAsync(p1, stream));
  CHECK(cuStreamSynchronize(stream));

  /* Errors. */
  CUdeviceptr none = 0;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemAllocAsync(&none, 0, stream));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(0x1234, stream));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(default_pool));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemAllocFromPoolAsync(&none, 64, pool, stream));
  EXPECT_RESULT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocAsync(&none, (size_t)1 << 62, stream));
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED, cuMemPoolCreate(&pool, &props));
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.id = 99;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &props));

  /* Allocations outstanding when the context goes are freed with it. */
  CHECK(cuMemAllocAsync(&none, 1 << 20, stream));
  CHECK(cuStreamDestroy(stream));
  CHECK(cuModuleUnload(module));
  CHECK(cuCtxDestroy(context));
  EXPECT_TRUE(PoolAttr(default_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
  free(x);
  free(y);
  free(out);
  free(ptx);
  printf("mempool: default and explicit pools, counters, reuse and release correct\n");
  return 0;
}
