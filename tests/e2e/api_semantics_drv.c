/* Driver-API semantics without kernels: initialization order, devices, contexts and their
 * stacks, primary contexts, memory and the errors the driver API documents for bad input. */
#include "common.h"

static void TestBeforeInit(void) {
  int count = -1;
  CUdevice device;
  CUcontext ctx;
  CUdeviceptr ptr;
  EXPECT_RESULT(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&count));
  EXPECT_RESULT(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGet(&device, 0));
  EXPECT_RESULT(CUDA_ERROR_NOT_INITIALIZED, cuCtxGetCurrent(&ctx));
  EXPECT_RESULT(CUDA_ERROR_NOT_INITIALIZED, cuMemAlloc(&ptr, 16));
  int version = 0;
  CHECK(cuDriverGetVersion(&version)); /* allowed before cuInit */
  EXPECT_TRUE(version >= 12000);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuInit(1));
}

static void TestDevices(void) {
  int count = 0;
  CHECK(cuDeviceGetCount(&count));
  EXPECT_TRUE(count >= 1);
  CUdevice device;
  EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&device, count));
  EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&device, -1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuDeviceGet(NULL, 0));
  CHECK(cuDeviceGet(&device, 0));
  char name[8];
  CHECK(cuDeviceGetName(name, sizeof(name), device)); /* truncates, NUL-terminated */
  EXPECT_TRUE(strlen(name) == sizeof(name) - 1);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetName(NULL, 8, device));
  int value = 0;
  CHECK(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, device));
  EXPECT_TRUE(value == 32);
  CHECK(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device));
  EXPECT_TRUE(value == 1024);
  CHECK(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
  EXPECT_TRUE(value >= 1);
  /* What the CUDA runtime reads into cudaDeviceProp, consistent with what the driver does. */
  CHECK(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, device));
  EXPECT_TRUE(value == 1);
  CHECK(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_NUMA_CONFIG, device));
  EXPECT_TRUE(value == CU_DEVICE_NUMA_CONFIG_NONE);
  CHECK(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_NUMA_ID, device));
  EXPECT_TRUE(value == -1);
  CHECK(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, device));
  EXPECT_TRUE(value == -1);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuDeviceGetAttribute(&value, (CUdevice_attribute)100000, device));
  EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE,
                cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1000));
  size_t total = 0;
  CHECK(cuDeviceTotalMem(&total, device));
  EXPECT_TRUE(total > 0);
  CUuuid uuid;
  CHECK(cuDeviceGetUuid(&uuid, device));
  int nonzero = 0;
  for (int i = 0; i < 16; ++i) nonzero |= uuid.bytes[i];
  EXPECT_TRUE(nonzero != 0);
}

static void TestContexts(void) {
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext current = (CUcontext)1;
  CHECK(cuCtxGetCurrent(&current));
  EXPECT_TRUE(current == NULL);
  CUdeviceptr ptr;
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuMemAlloc(&ptr, 16));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxSynchronize());

  CUcontext a, b;
  CHECK(cuCtxCreate(&a, NULL, 0, device));
  CHECK(cuCtxGetCurrent(&current));
  EXPECT_TRUE(current == a);
  CHECK(cuCtxCreate(&b, NULL, CU_CTX_SCHED_BLOCKING_SYNC, device));
  CHECK(cuCtxGetCurrent(&current));
  EXPECT_TRUE(current == b);
  unsigned int flags = 0;
  CHECK(cuCtxGetFlags(&flags));
  EXPECT_TRUE((flags & CU_CTX_SCHED_MASK) == CU_CTX_SCHED_BLOCKING_SYNC);
  CUcontext popped;
  CHECK(cuCtxPopCurrent(&popped));
  EXPECT_TRUE(popped == b);
  CHECK(cuCtxGetCurrent(&current));
  EXPECT_TRUE(current == a);
  CHECK(cuCtxPushCurrent(b));
  CHECK(cuCtxSetCurrent(a)); /* replaces the top of the stack */
  CHECK(cuCtxPopCurrent(&popped));
  EXPECT_TRUE(popped == a);
  CHECK(cuCtxPopCurrent(&popped));
  EXPECT_TRUE(popped == a);
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(&popped));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuCtxCreate(&a, NULL, 0xffff0000u, device));
  EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE, cuCtxCreate(&popped, NULL, 0, 77));

  /* Memory belongs to its context and dies with it. */
  CHECK(cuCtxSetCurrent(b));
  CHECK(cuMemAlloc(&ptr, 1024));
  CHECK(cuCtxDestroy(b));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFree(ptr));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy(b));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxPushCurrent(b));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy((CUcontext)0x1234));
  CHECK(cuCtxSetCurrent(NULL));
  CHECK(cuCtxDestroy(a));
}

static void TestPrimaryContext(void) {
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  unsigned int flags = 99;
  int active = 99;
  CHECK(cuDevicePrimaryCtxGetState(device, &flags, &active));
  EXPECT_TRUE(active == 0);
  CHECK(cuDevicePrimaryCtxSetFlags(device, CU_CTX_SCHED_YIELD));
  CUcontext p1, p2;
  CHECK(cuDevicePrimaryCtxRetain(&p1, device));
  CHECK(cuDevicePrimaryCtxRetain(&p2, device));
  EXPECT_TRUE(p1 == p2);
  CHECK(cuDevicePrimaryCtxGetState(device, &flags, &active));
  EXPECT_TRUE(active == 1 && flags == CU_CTX_SCHED_YIELD);
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy(p1)); /* primaries are released */
  CHECK(cuCtxSetCurrent(p1));
  CUdeviceptr ptr;
  CHECK(cuMemAlloc(&ptr, 4096));
  CHECK(cuDevicePrimaryCtxReset(device)); /* frees everything, the handle stays usable */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFree(ptr));
  CHECK(cuMemAlloc(&ptr, 4096));
  CHECK(cuMemFree(ptr));
  CHECK(cuDevicePrimaryCtxRelease(device));
  CHECK(cuDevicePrimaryCtxGetState(device, &flags, &active));
  EXPECT_TRUE(active == 1);
  CHECK(cuDevicePrimaryCtxRelease(device));
  CHECK(cuDevicePrimaryCtxGetState(device, &flags, &active));
  EXPECT_TRUE(active == 0);
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuDevicePrimaryCtxRelease(device));
  CHECK(cuCtxSetCurrent(NULL));
}

static void TestMemory(void) {
  CUdevice device;
  CUcontext ctx;
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuCtxCreate(&ctx, NULL, 0, device));
  CUdeviceptr a, b;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemAlloc(&a, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemAlloc(NULL, 16));
  CHECK(cuMemAlloc(&a, 1000));
  CHECK(cuMemAlloc(&b, 1000));
  EXPECT_TRUE(a % 256 == 0 && b % 256 == 0 && a != b);
  size_t free_bytes = 0, total_bytes = 0;
  CHECK(cuMemGetInfo(&free_bytes, &total_bytes));
  EXPECT_TRUE(free_bytes <= total_bytes && total_bytes > 0);
  CUdeviceptr base;
  size_t size;
  CHECK(cuMemGetAddressRange(&base, &size, a + 10));
  EXPECT_TRUE(base == a && size == 1000);

  unsigned char host[1000];
  unsigned char back[1000];
  for (int i = 0; i < 1000; ++i) host[i] = (unsigned char)(i * 7);
  CHECK(cuMemcpyHtoD(a, host, sizeof(host)));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(a + 1, host, sizeof(host)));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(back, a + 999, 2));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(0x1234, host, 4));
  CHECK(cuMemcpyDtoD(b, a, 1000));
  memset(back, 0, sizeof(back));
  CHECK(cuMemcpyDtoH(back, b, sizeof(back)));
  EXPECT_TRUE(memcmp(host, back, sizeof(host)) == 0);

  CHECK(cuMemsetD8(a, 0xab, 1000));
  CHECK(cuMemsetD32(b, 0x01020304u, 250));
  CHECK(cuMemsetD16(b + 2, 0xbeef, 1));
  CHECK(cuMemcpyDtoH(back, a, 1000));
  EXPECT_TRUE(back[0] == 0xab && back[999] == 0xab);
  unsigned int words[250];
  CHECK(cuMemcpyDtoH(words, b, sizeof(words)));
  EXPECT_TRUE(words[0] == 0xbeef0304u && words[1] == 0x01020304u && words[249] == 0x01020304u);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemsetD32(b + 2, 0, 1)); /* misaligned */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemsetD32(b, 0, 251)); /* past the end */
  /* 2D: 10 rows of 8 bytes, 100 bytes apart */
  CHECK(cuMemsetD8(a, 0, 1000));
  CHECK(cuMemsetD2D8(a, 100, 0x5a, 8, 10));
  CHECK(cuMemcpyDtoH(back, a, 1000));
  EXPECT_TRUE(back[0] == 0x5a && back[7] == 0x5a && back[8] == 0 && back[900] == 0x5a &&
              back[907] == 0x5a && back[908] == 0);

  /* A large copy crosses the channel in several chunks. */
  size_t big = (size_t)48 << 20;
  unsigned char* src = (unsigned char*)malloc(big);
  unsigned char* dst = (unsigned char*)malloc(big);
  for (size_t i = 0; i < big; ++i) src[i] = (unsigned char)(i * 2654435761u >> 13);
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, big));
  CHECK(cuMemcpyHtoD(d, src, big));
  CHECK(cuMemcpyDtoH(dst, d, big));
  EXPECT_TRUE(memcmp(src, dst, big) == 0);
  CHECK(cuMemFree(d));
  free(src);
  free(dst);

  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFree(a + 8));
  CHECK(cuMemFree(a));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFree(a));
  CHECK(cuMemFree(b));
  CHECK(cuMemFree(0));
  CHECK(cuCtxDestroy(ctx));
}

static void TestErrorStrings(void) {
  const char* text = NULL;
  CHECK(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &text));
  EXPECT_TRUE(strcmp(text, "CUDA_ERROR_ILLEGAL_ADDRESS") == 0);
  CHECK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text));
  EXPECT_TRUE(text != NULL && strlen(text) > 10);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGetErrorName((CUresult)123456, &text));
}

int main(void) {
  TestBeforeInit();
  CHECK(cuInit(0));
  CHECK(cuInit(0)); /* idempotent */
  TestDevices();
  TestContexts();
  TestPrimaryContext();
  TestMemory();
  TestErrorStrings();
  printf("api semantics: all checks passed\n");
  return 0;
}
