/* Runs copies and launches in a loop for a while, as a long job on a remote host would, so a
 * test can cut the network (or kill the host) mid-run.
 *
 *   long_run SAXPY_PTX SECONDS [MIB]
 *
 * MIB (default 0): each round also copies a block of that many MiB to the device and back and
 * compares it; with tens of MiB a round is mostly copies, so a cut lands in the middle of one.
 *
 * Prints "iteration N" after each verified round. Exits 0 after SECONDS, 3 when a call fails
 * with CUDA_ERROR_DEVICE_UNAVAILABLE (the documented error for a lost host), 1 on any other
 * failure. On failure it also prints how long the failing call took. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "e2e/read_file.h"

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double call_start;

static void Check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* name = "?";
  cuGetErrorName(result, &name);
  printf("FAILED %s: %s (%d) after %.2f s in the call\n", what, name, (int)result,
         Now() - call_start);
  fflush(stdout);
  exit(result == CUDA_ERROR_DEVICE_UNAVAILABLE ? 3 : 1);
}
#define CHECK(call) (call_start = Now(), Check((call), #call))

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: %s SAXPY_PTX SECONDS [MIB]\n", argv[0]);
    return 2;
  }
  const int mib = argc == 4 ? atoi(argv[3]) : 0;
  if (mib < 0 || mib > 1024) {
    fprintf(stderr, "MIB must be 0 to 1024\n");
    return 2;
  }
  const double seconds = atof(argv[2]);
  char* ptx = ReadTextFile(argv[1]);
  CUdevice device;
  CUcontext context;
  CUmodule module;
  CUfunction saxpy;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuCtxCreate(&context, NULL, 0, device));
  CHECK(cuModuleLoadData(&module, ptx));
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));

  int n = 1 << 18; /* 1 MiB per vector: several chunks in flight per copy */
  size_t bytes = (size_t)n * sizeof(float);
  float* x = (float*)malloc(bytes);
  float* y = (float*)malloc(bytes);
  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc(&dx, bytes));
  CHECK(cuMemAlloc(&dy, bytes));
  const size_t block_bytes = (size_t)mib << 20;
  unsigned char* block = (unsigned char*)malloc(block_bytes ? block_bytes : 1);
  unsigned char* back = (unsigned char*)malloc(block_bytes ? block_bytes : 1);
  CUdeviceptr dblock = 0;
  if (block_bytes) CHECK(cuMemAlloc(&dblock, block_bytes));
  const double end = Now() + seconds;
  for (long iteration = 1; Now() < end; ++iteration) {
    for (int i = 0; i < n; ++i) {
      x[i] = (float)(i % 1000);
      y[i] = (float)iteration;
    }
    CHECK(cuMemcpyHtoD(dx, x, bytes));
    CHECK(cuMemcpyHtoD(dy, y, bytes));
    float a = 2.0f;
    void* params[] = {&n, &a, &dx, &dy};
    for (int launch = 0; launch < 4; ++launch) {
      CHECK(
          cuLaunchKernel(saxpy, (unsigned)(n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    }
    CHECK(cuMemcpyDtoH(y, dy, bytes));
    for (int i = 0; i < n; i += 4099) {
      const float expected = (float)iteration + 4.0f * a * (float)(i % 1000);
      if (y[i] != expected) {
        printf("FAILED: y[%d] = %f, expected %f\n", i, y[i], expected);
        return 1;
      }
    }
    if (block_bytes) {
      for (size_t i = 0; i < block_bytes; i += 4096)
        block[i] = (unsigned char)(i / 4096 + iteration);
      CHECK(cuMemcpyHtoD(dblock, block, block_bytes));
      CHECK(cuMemcpyDtoH(back, dblock, block_bytes));
      for (size_t i = 0; i < block_bytes; i += 4096) {
        if (back[i] != block[i]) {
          printf("FAILED: block byte %zu came back different\n", i);
          return 1;
        }
      }
    }
    printf("iteration %ld\n", iteration);
    fflush(stdout);
  }
  CHECK(cuCtxDestroy(context));
  printf("done\n");
  return 0;
}
