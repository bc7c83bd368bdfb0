/* A guest for the status-command tests: creates a context on device ARGV[1] through pvgpu's
 * libcuda, allocates ARGV[2] bytes there, prints "ready" and holds both until its standard
 * input closes, so that the test decides how long the session lives. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s DEVICE BYTES\n", argv[0]);
    return 2;
  }
  CUdevice device;
  CUcontext context;
  CUdeviceptr memory;
  CUresult r = cuInit(0);
  if (r == CUDA_SUCCESS) r = cuDeviceGet(&device, atoi(argv[1]));
  if (r == CUDA_SUCCESS) r = cuCtxCreate(&context, NULL, 0, device);
  if (r == CUDA_SUCCESS) r = cuMemAlloc(&memory, (size_t)strtoull(argv[2], NULL, 10));
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "hold_context: CUDA error %d\n", (int)r);
    return 1;
  }
  printf("ready\n");
  fflush(stdout);
  char buffer[64];
  while (read(STDIN_FILENO, buffer, sizeof(buffer)) > 0) {
  }
  cuMemFree(memory);
  cuCtxDestroy(context);
  return 0;
}
