/* CUDA 2.x's execution control, as pycuda and older programs use it: the block shape, dynamic
 * shared memory size and parameter buffer kept per function (cuFuncSetBlockShape,
 * cuFuncSetSharedSize, cuParamSetSize, cuParamSeti/f/v), the launches that use them (cuLaunch,
 * cuLaunchGrid, cuLaunchGridAsync), and a context's use count (cuCtxAttach, cuCtxDetach). */
#define CUDA_ENABLE_DEPRECATED 1 /* these calls are deprecated; using them is the point */
#include "common.h"

/* The parameter buffer holds the kernel's parameters at the offsets device code has them:
 * saxpy(int n, float a, const float* x, float* y) is n at 0, a at 4, x at 8, y at 16. */
static void TestSaxpyByOffsets(CUmodule saxpy_module) {
  CUfunction saxpy;
  CHECK(cuModuleGetFunction(&saxpy, saxpy_module, "saxpy"));
  enum { kN = 1000, kBlock = 128 };
  float x[kN], y[kN], got[kN];
  for (int i = 0; i < kN; ++i) {
    x[i] = (float)i;
    y[i] = 1.0f - (float)i;
  }
  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc(&dx, sizeof(x)));
  CHECK(cuMemAlloc(&dy, sizeof(y)));
  CHECK(cuMemcpyHtoD(dx, x, sizeof(x)));
  CHECK(cuMemcpyHtoD(dy, y, sizeof(y)));

  /* Nothing set yet: no block shape, no parameters. */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLaunch(saxpy));
  CHECK(cuFuncSetBlockShape(saxpy, kBlock, 1, 1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLaunchGrid(saxpy, 8, 1)); /* parameters missing */

  CHECK(cuParamSetSize(saxpy, 24));
  CHECK(cuParamSeti(saxpy, 0, kN));
  CHECK(cuParamSetf(saxpy, 4, 2.0f));
  CHECK(cuParamSetv(saxpy, 8, &dx, sizeof(dx)));
  CHECK(cuParamSetv(saxpy, 16, &dy, sizeof(dy)));
  CHECK(cuLaunchGrid(saxpy, (kN + kBlock - 1) / kBlock, 1));
  CHECK(cuMemcpyDtoH(got, dy, sizeof(got)));
  for (int i = 0; i < kN; ++i) EXPECT_TRUE(got[i] == 2.0f * x[i] + y[i]);

  /* The state stays: change only the factor, launch again on a stream. */
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuMemcpyHtoD(dy, y, sizeof(y)));
  CHECK(cuParamSetf(saxpy, 4, -3.0f));
  CHECK(cuLaunchGridAsync(saxpy, (kN + kBlock - 1) / kBlock, 1, stream));
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH(got, dy, sizeof(got)));
  for (int i = 0; i < kN; ++i) EXPECT_TRUE(got[i] == -3.0f * x[i] + y[i]);

  /* cuLaunch is a grid of one block: only the first kBlock elements change. */
  CHECK(cuMemcpyHtoD(dy, y, sizeof(y)));
  CHECK(cuParamSetf(saxpy, 4, 1.0f));
  CHECK(cuLaunch(saxpy));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(got, dy, sizeof(got)));
  for (int i = 0; i < kN; ++i) EXPECT_TRUE(got[i] == (i < kBlock ? x[i] + y[i] : y[i]));

  /* A buffer shorter than the kernel's parameters is refused at launch; enlarging it keeps
   * what was written. */
  CHECK(cuParamSetSize(saxpy, 16));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLaunch(saxpy));
  CHECK(cuParamSetSize(saxpy, 24));
  CHECK(cuParamSetv(saxpy, 16, &dy, sizeof(dy)));
  CHECK(cuMemcpyHtoD(dy, y, sizeof(y)));
  CHECK(cuLaunchGrid(saxpy, (kN + kBlock - 1) / kBlock, 1));
  CHECK(cuMemcpyDtoH(got, dy, sizeof(got)));
  for (int i = 0; i < kN; ++i) EXPECT_TRUE(got[i] == x[i] + y[i]);

  /* Writes outside the buffer, bad shapes and grids. */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuParamSeti(saxpy, 24, 1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuParamSeti(saxpy, 21, 1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuParamSetf(saxpy, -4, 1.0f));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuParamSetv(saxpy, 20, &dy, sizeof(dy)));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuParamSetv(saxpy, 0, NULL, 4));
  CHECK(cuParamSetv(saxpy, 24, NULL, 0)); /* nothing to copy, at the end: fine */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuParamSetSize(saxpy, 32765));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuFuncSetBlockShape(saxpy, 0, 1, 1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuFuncSetBlockShape(saxpy, 2048, 1, 1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuFuncSetBlockShape(saxpy, 1, 1, 65));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuFuncSetBlockShape(saxpy, 32, 32, 2));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLaunchGrid(saxpy, 0, 1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLaunchGrid(saxpy, 1, -1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuFuncSetBlockShape((CUfunction)&stream, 1, 1, 1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuParamSetSize(NULL, 4));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuLaunchGridAsync(saxpy, 1, 1, (CUstream)&got));

  /* cuLaunchKernel on the same function is independent of that state. */
  CHECK(cuMemcpyHtoD(dy, y, sizeof(y)));
  int n = kN;
  float a = 0.5f;
  void* params[] = {&n, &a, &dx, &dy};
  CHECK(cuLaunchKernel(saxpy, (kN + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
  CHECK(cuMemcpyDtoH(got, dy, sizeof(got)));
  for (int i = 0; i < kN; ++i) EXPECT_TRUE(got[i] == 0.5f * x[i] + y[i]);

  CHECK(cuStreamDestroy(stream));
  CHECK(cuMemFree(dx));
  CHECK(cuMemFree(dy));
}

/* Offsets are the caller's, never realigned: mixed_params(char c, double d, short s,
 * long long* out, int i) has c at 0, d at 8 (aligned to 8), s at 16, out at 24, i at 32. */
static void TestAlignedOffsets(CUmodule basics) {
  CUfunction mixed;
  CHECK(cuModuleGetFunction(&mixed, basics, "mixed_params"));
  CUdeviceptr out;
  CHECK(cuMemAlloc(&out, 4 * sizeof(long long)));
  char c = -7;
  double d = 20.25;
  short s = -300;
  int i = 123456;
  CHECK(cuFuncSetBlockShape(mixed, 1, 1, 1));
  CHECK(cuParamSetSize(mixed, 36));
  CHECK(cuParamSetv(mixed, 0, &c, sizeof(c)));
  CHECK(cuParamSetv(mixed, 8, &d, sizeof(d)));
  CHECK(cuParamSetv(mixed, 16, &s, sizeof(s)));
  CHECK(cuParamSetv(mixed, 24, &out, sizeof(out)));
  CHECK(cuParamSeti(mixed, 32, (unsigned int)i));
  CHECK(cuLaunch(mixed));
  long long got[4];
  CHECK(cuMemcpyDtoH(got, out, sizeof(got)));
  EXPECT_TRUE(got[0] == -7 && got[1] == 40 && got[2] == -300 && got[3] == 123456);

  /* A program that packs the double right after the char (offset 1, unaligned) does not get
   * it where the kernel reads it: the driver copies where it is told. */
  CHECK(cuMemsetD8(out, 0, sizeof(got)));
  double zero = 0.0;
  CHECK(cuParamSetv(mixed, 8, &zero, sizeof(zero)));
  CHECK(cuParamSetv(mixed, 1, &d, sizeof(d)));
  CHECK(cuParamSetv(mixed, 16, &s, sizeof(s)));
  CHECK(cuLaunch(mixed));
  CHECK(cuMemcpyDtoH(got, out, sizeof(got)));
  EXPECT_TRUE(got[1] != 40);
  CHECK(cuMemFree(out));
}

/* cuFuncSetSharedSize: dynamic shared memory of every block of the next legacy launch. Each
 * function keeps its own state. */
static void TestSharedSizeAndPerFunctionState(CUmodule basics) {
  CUfunction reverse, index;
  CHECK(cuModuleGetFunction(&reverse, basics, "reverse_block"));
  CHECK(cuModuleGetFunction(&index, basics, "write_index"));
  enum { kBlock = 64, kBlocks = 3, kN = kBlock * kBlocks };
  int host[kN];
  for (int i = 0; i < kN; ++i) host[i] = i;
  CUdeviceptr data, indices;
  CHECK(cuMemAlloc(&data, sizeof(host)));
  CHECK(cuMemAlloc(&indices, 2 * 3 * 4 * 2 * 2 * sizeof(unsigned int)));
  CHECK(cuMemcpyHtoD(data, host, sizeof(host)));

  CHECK(cuFuncSetBlockShape(reverse, kBlock, 1, 1));
  CHECK(cuFuncSetSharedSize(reverse, kBlock * sizeof(int)));
  CHECK(cuParamSetSize(reverse, sizeof(CUdeviceptr)));
  CHECK(cuParamSetv(reverse, 0, &data, sizeof(data)));
  /* A 3-D block and a 2-D grid on another function meanwhile. */
  CHECK(cuFuncSetBlockShape(index, 4, 2, 2));
  CHECK(cuParamSetSize(index, sizeof(CUdeviceptr)));
  CHECK(cuParamSetv(index, 0, &indices, sizeof(indices)));
  CHECK(cuLaunchGrid(index, 3, 2));

  CHECK(cuLaunchGrid(reverse, kBlocks, 1));
  int got[kN];
  CHECK(cuMemcpyDtoH(got, data, sizeof(got)));
  for (int b = 0; b < kBlocks; ++b) {
    for (int t = 0; t < kBlock; ++t)
      EXPECT_TRUE(got[b * kBlock + t] == b * kBlock + kBlock - 1 - t);
  }
  unsigned int written[2 * 3 * 4 * 2 * 2];
  CHECK(cuMemcpyDtoH(written, indices, sizeof(written)));
  for (unsigned int i = 0; i < sizeof(written) / sizeof(written[0]); ++i) {
    EXPECT_TRUE(written[i] == i);
  }

  /* More dynamic shared memory than a block may have fails at launch. */
  int per_block = 0;
  CHECK(cuDeviceGetAttribute(&per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 0));
  CHECK(cuFuncSetSharedSize(reverse, (unsigned int)per_block + 1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLaunchGrid(reverse, kBlocks, 1));
  CHECK(cuFuncSetSharedSize(reverse, kBlock * sizeof(int)));
  CHECK(cuLaunchGrid(reverse, kBlocks, 1)); /* reversed twice: as it was */
  CHECK(cuMemcpyDtoH(got, data, sizeof(got)));
  for (int i = 0; i < kN; ++i) EXPECT_TRUE(got[i] == i);
  CHECK(cuMemFree(data));
  CHECK(cuMemFree(indices));
}

/* cuCtxAttach takes one more use of the current context, cuCtxDetach gives one back; the last
 * one destroys the context (and takes it off the thread's stack). A primary context's uses are
 * its retains. */
static void TestAttachDetach(CUdevice device) {
  CUcontext attached = NULL;
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxAttach(&attached, 0)); /* nothing current */

  CUcontext ctx, current;
  CHECK(cuCtxCreate(&ctx, NULL, 0, device));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuCtxAttach(&attached, 1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuCtxAttach(NULL, 0));
  CHECK(cuCtxAttach(&attached, 0));
  EXPECT_TRUE(attached == ctx);
  CHECK(cuCtxAttach(&attached, 0)); /* three uses */
  unsigned int version = 0;
  CHECK(cuCtxDetach(ctx));
  CHECK(cuCtxDetach(ctx));
  CHECK(cuCtxGetApiVersion(ctx, &version)); /* one use left: alive, still current */
  CHECK(cuCtxGetCurrent(&current));
  EXPECT_TRUE(current == ctx);
  CUdeviceptr p;
  CHECK(cuMemAlloc(&p, 64));

  /* Only the current context can be detached. */
  CUcontext other;
  CHECK(cuCtxCreate(&other, NULL, 0, device)); /* pushed: now current */
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDetach(ctx));
  CHECK(cuCtxDetach(other)); /* its last use: destroyed and popped */
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetApiVersion(other, &version));
  CHECK(cuCtxGetCurrent(&current));
  EXPECT_TRUE(current == ctx);
  CHECK(cuCtxDetach(ctx));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetApiVersion(ctx, &version));
  CHECK(cuCtxGetCurrent(&current));
  EXPECT_TRUE(current == NULL);
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDetach(ctx));

  /* The primary context: attach is a retain, detach a release. */
  CUcontext primary;
  unsigned int flags = 0;
  int active = 0;
  CHECK(cuDevicePrimaryCtxRetain(&primary, device));
  CHECK(cuCtxSetCurrent(primary));
  CHECK(cuCtxAttach(&attached, 0));
  EXPECT_TRUE(attached == primary);
  CHECK(cuCtxDetach(primary));
  CHECK(cuDevicePrimaryCtxGetState(device, &flags, &active));
  EXPECT_TRUE(active == 1); /* the first retain still holds it */
  CHECK(cuCtxDetach(primary));
  CHECK(cuDevicePrimaryCtxGetState(device, &flags, &active));
  EXPECT_TRUE(active == 0);
  CHECK(cuCtxSetCurrent(NULL));
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  TestAttachDetach(device);

  CUcontext ctx;
  CHECK(cuCtxCreate(&ctx, NULL, 0, device));
  char* saxpy_ptx = ReadPtx("saxpy");
  char* basics_ptx = ReadPtx("basics");
  CUmodule saxpy_module, basics;
  CHECK(cuModuleLoadData(&saxpy_module, saxpy_ptx));
  CHECK(cuModuleLoadData(&basics, basics_ptx));
  TestSaxpyByOffsets(saxpy_module);
  TestAlignedOffsets(basics);
  TestSharedSizeAndPerFunctionState(basics);
  CHECK(cuModuleUnload(saxpy_module));
  CHECK(cuModuleUnload(basics));
  CHECK(cuCtxDestroy(ctx));
  free(saxpy_ptx);
  free(basics_ptx);
  printf("legacy execution control and context use counts: ok\n");
  return 0;
}
