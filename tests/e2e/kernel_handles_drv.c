/* A CUkernel is accepted by every call that takes a CUfunction and stands for its function in
 * the current context (the CUDA 13 runtime passes CUkernels everywhere); every function
 * attribute, the cluster ones included, has an answer; an opt-in set with cuKernelSetAttribute
 * holds for the device across a reset of its primary context. */
#define CUDA_ENABLE_DEPRECATED 1 /* cuFuncSetSharedMemConfig, cuFuncSetBlockShape, ... */
#include "common.h"

static void ExpectSameAttributes(CUfunction function, CUkernel kernel, CUdevice device) {
  for (int attrib = 0; attrib < CU_FUNC_ATTRIBUTE_MAX; ++attrib) {
    int from_function = -100, through_kernel = -200, from_kernel = -300;
    CHECK(cuFuncGetAttribute(&from_function, (CUfunction_attribute)attrib, function));
    CHECK(cuFuncGetAttribute(&through_kernel, (CUfunction_attribute)attrib, (CUfunction)kernel));
    CHECK(cuKernelGetAttribute(&from_kernel, (CUfunction_attribute)attrib, kernel, device));
    if (from_function != through_kernel || from_function != from_kernel) {
      fprintf(stderr, "attribute %d: %d, %d through the CUkernel, %d from cuKernelGetAttribute\n",
              attrib, from_function, through_kernel, from_kernel);
      exit(1);
    }
  }
  int value = 0;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX, (CUfunction)kernel));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuFuncGetAttribute(&value, (CUfunction_attribute)-1, function));
}

/* The thread block cluster attributes: no function requires a cluster. */
static void TestClusterAttributes(CUfunction function, CUkernel kernel, CUdevice device) {
  const CUfunction_attribute cluster[] = {CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
                                          CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
                                          CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
                                          CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
                                          CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                                          CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE};
  for (size_t i = 0; i < sizeof(cluster) / sizeof(cluster[0]); ++i) {
    int value = -1;
    CHECK(cuFuncGetAttribute(&value, cluster[i], function));
    EXPECT_TRUE(value == 0);
    value = -1;
    CHECK(cuKernelGetAttribute(&value, cluster[i], kernel, device));
    EXPECT_TRUE(value == 0);
  }
  /* No cluster required is what every function has; requiring one is not supported. */
  CHECK(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 0));
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED,
                cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 2));
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED,
                cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, 2, kernel, device));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, -1));
  CHECK(cuFuncSetAttribute((CUfunction)kernel, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                           1));
  EXPECT_RESULT(
      CUDA_ERROR_INVALID_VALUE,
      cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 2));
  CHECK(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
                           CU_CLUSTER_SCHEDULING_POLICY_SPREAD));
  EXPECT_RESULT(
      CUDA_ERROR_INVALID_VALUE,
      cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, 7));
  /* Read-only. */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_NUM_REGS, 8));
}

/* Every other call that takes a CUfunction, given the CUkernel instead. */
static void TestKernelAsFunction(CUkernel kernel, CUfunction function, CUmodule module) {
  const char* name = NULL;
  CHECK(cuFuncGetName(&name, (CUfunction)kernel));
  EXPECT_TRUE(strcmp(name, "mixed_params") == 0);
  CUmodule owner = NULL;
  CHECK(cuFuncGetModule(&owner, (CUfunction)kernel));
  EXPECT_TRUE(owner == module);
  CUfunctionLoadingState state = CU_FUNCTION_LOADING_STATE_UNLOADED;
  CHECK(cuFuncIsLoaded(&state, (CUfunction)kernel));
  EXPECT_TRUE(state == CU_FUNCTION_LOADING_STATE_LOADED);
  CHECK(cuFuncLoad((CUfunction)kernel));

  /* mixed_params(char c, double d, short s, long long* out, int i) */
  const size_t offsets[] = {0, 8, 16, 24, 32}, sizes[] = {1, 8, 2, 8, 4};
  for (size_t i = 0; i < 5; ++i) {
    size_t offset = 99, size = 99, kernel_offset = 98, kernel_size = 98;
    CHECK(cuFuncGetParamInfo((CUfunction)kernel, i, &offset, &size));
    CHECK(cuKernelGetParamInfo(kernel, i, &kernel_offset, &kernel_size));
    EXPECT_TRUE(offset == offsets[i] && size == sizes[i]);
    EXPECT_TRUE(kernel_offset == offsets[i] && kernel_size == sizes[i]);
    CHECK(cuFuncGetParamInfo(function, i, &offset, NULL)); /* the size is optional */
    EXPECT_TRUE(offset == offsets[i]);
  }
  size_t offset = 0;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(function, 5, &offset, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuKernelGetParamInfo(kernel, 5, &offset, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(function, 0, NULL, NULL));

  CHECK(cuFuncSetCacheConfig((CUfunction)kernel, CU_FUNC_CACHE_PREFER_SHARED));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuFuncSetCacheConfig((CUfunction)kernel, 9));
  CHECK(cuFuncSetSharedMemConfig((CUfunction)kernel, CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE));
  CHECK(cuKernelSetCacheConfig(kernel, CU_FUNC_CACHE_PREFER_L1, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuKernelSetCacheConfig(kernel, 9, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE, cuKernelSetCacheConfig(kernel, 0, 1000));

  /* Occupancy: the same answers for the function and its CUkernel. */
  int a = -1, b = -2;
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&a, function, 128, 0));
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&b, (CUfunction)kernel, 128, 0));
  EXPECT_TRUE(a == b && a >= 1);
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&b, (CUfunction)kernel, 128, 0, 0));
  EXPECT_TRUE(a == b);
  int grid_a = 0, block_a = 0, grid_b = -1, block_b = -1;
  CHECK(cuOccupancyMaxPotentialBlockSize(&grid_a, &block_a, function, NULL, 0, 0));
  CHECK(cuOccupancyMaxPotentialBlockSize(&grid_b, &block_b, (CUfunction)kernel, NULL, 0, 0));
  EXPECT_TRUE(grid_a == grid_b && block_a == block_b && block_a >= 32);
  CHECK(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid_b, &block_b, (CUfunction)kernel, NULL, 0, 0,
                                                  0));
  EXPECT_TRUE(grid_a == grid_b && block_a == block_b);
  size_t avail_a = 0, avail_b = 1;
  CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&avail_a, function, 2, 128));
  CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&avail_b, (CUfunction)kernel, 2, 128));
  EXPECT_TRUE(avail_a == avail_b && avail_a > 0);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuOccupancyAvailableDynamicSMemPerBlock(&avail_a, function, 0, 128));

  /* Launches through the CUkernel: cuLaunchKernelEx and the legacy calls. */
  CUdeviceptr out;
  CHECK(cuMemAlloc(&out, 4 * sizeof(long long)));
  char c = 3;
  double d = 4.5;
  short s = 6;
  int i = 7;
  void* params[] = {&c, &d, &s, &out, &i};
  CUlaunchConfig config;
  memset(&config, 0, sizeof(config));
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = config.blockDimY = config.blockDimZ = 1;
  CHECK(cuLaunchKernelEx(&config, (CUfunction)kernel, params, NULL));
  long long got[4];
  CHECK(cuMemcpyDtoH(got, out, sizeof(got)));
  EXPECT_TRUE(got[0] == 3 && got[1] == 9 && got[2] == 6 && got[3] == 7);
  CHECK(cuFuncSetBlockShape((CUfunction)kernel, 1, 1, 1));
  CHECK(cuParamSetSize((CUfunction)kernel, 36));
  c = 10;
  CHECK(cuParamSetv((CUfunction)kernel, 0, &c, 1));
  CHECK(cuParamSetv((CUfunction)kernel, 8, &d, 8));
  CHECK(cuParamSetv((CUfunction)kernel, 16, &s, 2));
  CHECK(cuParamSetv((CUfunction)kernel, 24, &out, 8));
  CHECK(cuParamSeti((CUfunction)kernel, 32, 11));
  CHECK(cuLaunch((CUfunction)kernel));
  CHECK(cuMemcpyDtoH(got, out, sizeof(got)));
  EXPECT_TRUE(got[0] == 10 && got[3] == 11);
  /* The legacy state is the function's: the CUkernel set it for `function`. */
  c = 12;
  CHECK(cuParamSetv(function, 0, &c, 1));
  CHECK(cuLaunch(function));
  CHECK(cuMemcpyDtoH(got, out, sizeof(got)));
  EXPECT_TRUE(got[0] == 12 && got[3] == 11);
  CHECK(cuMemFree(out));

  /* A handle that is neither. */
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuFuncGetName(&name, (CUfunction)&state));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuFuncGetModule(&owner, NULL));
}

/* An opt-in of dynamic shared memory through cuKernelSetAttribute holds for the device: in the
 * context of the call, and in the same primary context after cuDevicePrimaryCtxReset (where the
 * library is loaded again), as cudaFuncSetAttribute before cudaDeviceReset does with CUDA. A
 * cuFuncSetAttribute on the function wins over it. */
static void TestKernelOptInSurvivesReset(CUdevice device, const char* ptx) {
  CUcontext primary;
  CHECK(cuDevicePrimaryCtxRetain(&primary, device));
  CHECK(cuCtxSetCurrent(primary));
  CUlibrary library;
  CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, NULL, NULL, 0));
  CUkernel reverse;
  CHECK(cuLibraryGetKernel(&reverse, library, "reverse_block"));
  int optin = 0, per_block = 0;
  CHECK(
      cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device));
  CHECK(cuDeviceGetAttribute(&per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, device));
  if (optin <= per_block) {
    printf("kernel opt-in: the device has no opt-in beyond %d bytes, skipped\n", per_block);
  } else {
    const int wanted = optin;
    EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                  cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin + 1,
                                       reverse, device));
    CHECK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, wanted, reverse,
                               device));
    enum { kBlock = 32 };
    int host[kBlock];
    for (int round = 0; round < 2; ++round) {
      int value = 0;
      CHECK(cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, reverse,
                                 device));
      EXPECT_TRUE(value == wanted);
      CUfunction function;
      CHECK(cuKernelGetFunction(&function, reverse));
      CHECK(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function));
      EXPECT_TRUE(value == wanted);
      CUdeviceptr data;
      CHECK(cuMemAlloc(&data, sizeof(host)));
      for (int i = 0; i < kBlock; ++i) host[i] = i;
      CHECK(cuMemcpyHtoD(data, host, sizeof(host)));
      void* params[] = {&data};
      CHECK(cuLaunchKernel((CUfunction)reverse, 1, 1, 1, kBlock, 1, 1, (unsigned)wanted, NULL,
                           params, NULL));
      CHECK(cuMemcpyDtoH(host, data, sizeof(host)));
      for (int i = 0; i < kBlock; ++i) EXPECT_TRUE(host[i] == kBlock - 1 - i);
      CHECK(cuMemFree(data));
      if (round == 0) CHECK(cuDevicePrimaryCtxReset(device)); /* the context's contents go */
    }
    /* cuFuncSetAttribute wins: the launch above no longer fits. */
    CUfunction function;
    CHECK(cuKernelGetFunction(&function, reverse));
    CHECK(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024));
    int value = 0;
    CHECK(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function));
    EXPECT_TRUE(value == 1024);
    CHECK(cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, reverse,
                               device));
    EXPECT_TRUE(value == wanted); /* as CUDA documents: cuKernelGetAttribute reports its own */
    CUdeviceptr data;
    CHECK(cuMemAlloc(&data, sizeof(host)));
    void* params[] = {&data};
    EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                  cuLaunchKernel((CUfunction)reverse, 1, 1, 1, kBlock, 1, 1, (unsigned)wanted, NULL,
                                 params, NULL));
    CHECK(cuMemFree(data));
    printf("kernel opt-in of %d bytes: held across a reset\n", wanted);
  }
  CHECK(cuLibraryUnload(library));
  CHECK(cuDevicePrimaryCtxRelease(device));
  CHECK(cuCtxSetCurrent(NULL));
}

/* A module's functions, counted and listed (the cuda adapter asks for them). basics.cu has five
 * kernels, one of them `function`. */
static void TestEnumerateFunctions(CUmodule module, CUfunction function) {
  unsigned int count = 0;
  CHECK(cuModuleGetFunctionCount(&count, module));
  EXPECT_TRUE(count == 5);
  CUfunction listed[8] = {NULL};
  CHECK(cuModuleEnumerateFunctions(listed, 8, module));
  int found = 0;
  for (unsigned int i = 0; i < count; ++i) {
    const char* name = NULL;
    CHECK(cuFuncGetName(&name, listed[i]));
    CUfunction by_name = NULL;
    CHECK(cuModuleGetFunction(&by_name, module, name));
    EXPECT_TRUE(by_name == listed[i]);
    found += listed[i] == function;
  }
  EXPECT_TRUE(found == 1 && listed[count] == NULL);
  CUfunction two[3] = {NULL, NULL, NULL};
  CHECK(cuModuleEnumerateFunctions(two, 2, module)); /* at most as many as asked for */
  EXPECT_TRUE(two[0] == listed[0] && two[1] == listed[1] && two[2] == NULL);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuModuleGetFunctionCount(NULL, module));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuModuleGetFunctionCount(&count, (CUmodule)&count));
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  char* ptx = ReadPtx("basics");
  CUcontext ctx;
  CHECK(cuCtxCreate(&ctx, NULL, 0, device));
  CUlibrary library;
  CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, NULL, NULL, 0));
  CUkernel kernel;
  CHECK(cuLibraryGetKernel(&kernel, library, "mixed_params"));
  CUfunction function;
  CHECK(cuKernelGetFunction(&function, kernel));
  CUmodule module;
  CHECK(cuLibraryGetModule(&module, library));

  TestEnumerateFunctions(module, function);
  ExpectSameAttributes(function, kernel, device);
  TestClusterAttributes(function, kernel, device);
  TestKernelAsFunction(kernel, function, module);
  ExpectSameAttributes(function, kernel, device);

  /* Without a current context a CUkernel stands for no function. */
  CHECK(cuCtxPopCurrent(NULL));
  int value = 0;
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE,
                cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)kernel));
  CHECK(cuCtxPushCurrent(ctx));
  CHECK(cuLibraryUnload(library));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE,
                cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)kernel));
  CHECK(cuCtxDestroy(ctx));

  TestKernelOptInSurvivesReset(device, ptx);
  free(ptx);
  printf("CUkernel as CUfunction, function attributes: ok\n");
  return 0;
}
