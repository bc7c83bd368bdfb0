/* Driver-API modules and launches: JIT logs, functions and globals, both parameter-passing
 * forms, 3D grids, streams and events, and a faulting kernel that poisons only its context. */
#include "common.h"

static CUmodule LoadBasics(void) {
  char* ptx = ReadPtx("basics");
  CUmodule module;
  char error_log[4096] = "";
  char info_log[4096] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_OPTIMIZATION_LEVEL};
  void* values[] = {error_log, (void*)(uintptr_t)sizeof(error_log), info_log,
                    (void*)(uintptr_t)sizeof(info_log), (void*)(uintptr_t)3};
  CHECK(cuModuleLoadDataEx(&module, ptx, 5, options, values));
  free(ptx);
  return module;
}

static void TestBadPtx(void) {
  CUmodule module;
  char error_log[4096] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log, (void*)(uintptr_t)sizeof(error_log)};
  const char* bad =
      ".version 9.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry broken(.param .u64 p)\n{\n  .reg .b32 %r<2>;\n"
      "  mov.u32 %r1, ;\n  ret;\n}\n";
  EXPECT_RESULT(CUDA_ERROR_INVALID_PTX, cuModuleLoadDataEx(&module, bad, 2, options, values));
  if (strstr(error_log, "line 7") == NULL) {
    fprintf(stderr, "JIT error log does not name line 7: '%s'\n", error_log);
    exit(1);
  }
  EXPECT_RESULT(CUDA_ERROR_INVALID_PTX, cuModuleLoadData(&module, "this is not ptx"));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuModuleLoadData(&module, NULL));
  EXPECT_RESULT(CUDA_ERROR_FILE_NOT_FOUND, cuModuleLoad(&module, "/nonexistent/kernel.ptx"));
}

static void TestLaunches(CUmodule module) {
  CUfunction write_index, add_table, mixed;
  CHECK(cuModuleGetFunction(&write_index, module, "write_index"));
  CHECK(cuModuleGetFunction(&add_table, module, "add_table"));
  CHECK(cuModuleGetFunction(&mixed, module, "mixed_params"));
  CUfunction missing;
  EXPECT_RESULT(CUDA_ERROR_NOT_FOUND, cuModuleGetFunction(&missing, module, "no_such_kernel"));

  /* 3D grid of 3D blocks */
  const unsigned int gx = 3, gy = 2, gz = 2, bx = 4, by = 3, bz = 2;
  const unsigned int total = gx * gy * gz * bx * by * bz;
  CUdeviceptr out;
  CHECK(cuMemAlloc(&out, total * sizeof(unsigned int)));
  CHECK(cuMemsetD32(out, 0xffffffffu, total));
  void* args[] = {&out};
  CHECK(cuLaunchKernel(write_index, gx, gy, gz, bx, by, bz, 0, NULL, args, NULL));
  unsigned int* host = (unsigned int*)malloc(total * sizeof(unsigned int));
  CHECK(cuMemcpyDtoH(host, out, total * sizeof(unsigned int)));
  for (unsigned int i = 0; i < total; ++i) EXPECT_TRUE(host[i] == i);
  free(host);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuLaunchKernel(write_index, 0, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuLaunchKernel(write_index, 1, 1, 1, 2048, 1, 1, 0, NULL, args, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuLaunchKernel(write_index, 1, 1, 1, 1, 1, 1, 1 << 20, NULL, args, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE,
                cuLaunchKernel((CUfunction)0x4321, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));

  /* Module globals: visible, initialized, writable */
  CUdeviceptr table;
  size_t table_size = 0;
  CHECK(cuModuleGetGlobal(&table, &table_size, module, "counter_table"));
  EXPECT_TRUE(table_size == 4 * sizeof(int));
  int values[4];
  CHECK(cuMemcpyDtoH(values, table, sizeof(values)));
  EXPECT_TRUE(values[0] == 10 && values[3] == 40);
  int bump[4] = {1, 1, 1, 1};
  CHECK(cuMemcpyHtoD(table, bump, sizeof(bump)));
  CUdeviceptr data;
  CHECK(cuMemAlloc(&data, sizeof(values)));
  int initial[4] = {100, 200, 300, 400};
  CHECK(cuMemcpyHtoD(data, initial, sizeof(initial)));
  void* table_args[] = {&data};
  CHECK(cuLaunchKernel(add_table, 1, 1, 1, 32, 1, 1, 0, NULL, table_args, NULL));
  CHECK(cuMemcpyDtoH(values, data, sizeof(values)));
  EXPECT_TRUE(values[0] == 101 && values[3] == 401);
  CUdeviceptr none;
  EXPECT_RESULT(CUDA_ERROR_NOT_FOUND, cuModuleGetGlobal(&none, NULL, module, "nope"));

  /* Parameters of mixed size and alignment, both forms */
  CUdeviceptr results;
  CHECK(cuMemAlloc(&results, 4 * sizeof(long long)));
  char c = -5;
  double d = 21.25;
  short s = 1234;
  int i = -77;
  void* mixed_args[] = {&c, &d, &s, &results, &i};
  CHECK(cuLaunchKernel(mixed, 1, 1, 1, 1, 1, 1, 0, NULL, mixed_args, NULL));
  long long got[4];
  CHECK(cuMemcpyDtoH(got, results, sizeof(got)));
  EXPECT_TRUE(got[0] == -5 && got[1] == 42 && got[2] == 1234 && got[3] == -77);
  /* The `extra` form takes the same bytes laid out by the parameters' offsets and alignment. */
  struct {
    char c;
    char pad0[7];
    double d;
    short s;
    char pad1[6];
    unsigned long long out;
    int i;
    char pad2[4];
  } buffer = {7, {0}, 1.5, -3, {0}, results, 99, {0}};
  size_t buffer_size = sizeof(buffer);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &buffer_size, CU_LAUNCH_PARAM_END};
  CHECK(cuLaunchKernel(mixed, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
  CHECK(cuMemcpyDtoH(got, results, sizeof(got)));
  EXPECT_TRUE(got[0] == 7 && got[1] == 3 && got[2] == -3 && got[3] == 99);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuLaunchKernel(mixed, 1, 1, 1, 1, 1, 1, 0, NULL, mixed_args, extra));

  CHECK(cuMemFree(out));
  CHECK(cuMemFree(data));
  CHECK(cuMemFree(results));
}

static void TestStreamsAndEvents(CUmodule module) {
  CUfunction write_index;
  CHECK(cuModuleGetFunction(&write_index, module, "write_index"));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUevent start, stop;
  CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
  CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  CHECK(cuEventQuery(start)); /* never recorded: complete */
  CUdeviceptr out;
  const unsigned int n = 4096;
  CHECK(cuMemAlloc(&out, n * sizeof(unsigned int)));
  void* args[] = {&out};
  CHECK(cuEventRecord(start, stream));
  for (int i = 0; i < 20; ++i) {
    CHECK(cuLaunchKernel(write_index, n / 256, 1, 1, 256, 1, 1, 0, stream, args, NULL));
  }
  CHECK(cuEventRecord(stop, stream));
  CHECK(cuEventSynchronize(stop));
  CHECK(cuEventQuery(stop));
  CHECK(cuStreamQuery(stream));
  float ms = -1.0f;
  CHECK(cuEventElapsedTime(&ms, start, stop));
  EXPECT_TRUE(ms >= 0.0f);
  CHECK(cuStreamSynchronize(stream));
  unsigned int last = 0;
  CHECK(cuMemcpyDtoHAsync(&last, out + (n - 1) * sizeof(unsigned int), sizeof(last), stream));
  EXPECT_TRUE(last == n - 1);
  CUevent untimed;
  CHECK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
  CHECK(cuEventRecord(untimed, stream));
  CHECK(cuEventSynchronize(untimed));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(&ms, start, untimed));
  CHECK(cuEventDestroy(untimed));
  CHECK(cuEventDestroy(start));
  CHECK(cuEventDestroy(stop));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(stop));
  CHECK(cuStreamDestroy(stream));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuStreamQuery(stream));
  CHECK(cuMemFree(out));
}

static void TestFaultIsStickyAndLocal(CUdevice device) {
  CUcontext bad, good;
  CHECK(cuCtxCreate(&good, NULL, 0, device));
  CHECK(cuCtxCreate(&bad, NULL, 0, device));
  CUmodule module = LoadBasics();
  CUfunction oob;
  CHECK(cuModuleGetFunction(&oob, module, "out_of_bounds"));
  CUdeviceptr data;
  CHECK(cuMemAlloc(&data, 64));
  void* args[] = {&data};
  CHECK(cuLaunchKernel(oob, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL)); /* asynchronous */
  EXPECT_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
  EXPECT_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize()); /* sticky */
  CUdeviceptr more;
  EXPECT_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemAlloc(&more, 64));
  CHECK(cuCtxDestroy(bad));
  /* The other context carries on. */
  CHECK(cuCtxSetCurrent(good));
  CHECK(cuMemAlloc(&more, 64));
  CHECK(cuMemsetD32(more, 7, 16));
  int check[16];
  CHECK(cuMemcpyDtoH(check, more, sizeof(check)));
  EXPECT_TRUE(check[15] == 7);
  CHECK(cuCtxDestroy(good));
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext ctx;
  CHECK(cuCtxCreate(&ctx, NULL, 0, device));
  TestBadPtx();
  CUmodule module = LoadBasics();
  TestLaunches(module);
  TestStreamsAndEvents(module);
  CHECK(cuModuleUnload(module));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(module));
  CHECK(cuCtxDestroy(ctx));
  TestFaultIsStickyAndLocal(device);
  printf("kernels: all checks passed\n");
  return 0;
}
