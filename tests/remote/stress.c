/* Many threads and streams sharing one remote host: asynchronous copies small and large,
 * launches, event records and every kind of synchronize, with every result checked, the way
 * a real application's streams interleave on one connection.
 *
 *   stress SAXPY_PTX THREADS ROUNDS
 *
 * Each thread has its own stream (thread 0 uses the legacy default stream) and buffers. A round
 * copies x and y in (cuMemcpyHtoDAsync, pageable memory), runs saxpy three times, records an
 * event, synchronizes (event, stream or context, in turn) and copies y back to check it; every
 * eighth round also moves a 1-4 MiB block through the device and back. Prints one line with the
 * counts and exits 0, or names the first failure and exits 1 (3 for
 * CUDA_ERROR_DEVICE_UNAVAILABLE). A hang is for the caller's deadline to catch. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2e/read_file.h"

static CUcontext context;
static CUfunction saxpy;
static int rounds;
static long operations; /* API calls made, all threads (under counter_lock) */
static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;

static void Fail(CUresult result, const char* what, int thread, int round) {
  const char* name = "?";
  cuGetErrorName(result, &name);
  printf("FAILED thread %d round %d: %s: %s (%d)\n", thread, round, what, name, (int)result);
  fflush(stdout);
  exit(result == CUDA_ERROR_DEVICE_UNAVAILABLE ? 3 : 1);
}
#define CHECK(call)                                         \
  do {                                                      \
    CUresult r_ = (call);                                   \
    if (r_ != CUDA_SUCCESS) Fail(r_, #call, thread, round); \
    ++calls;                                                \
  } while (0)

static void* Worker(void* arg) {
  const int thread = (int)(long)arg;
  int round = 0;
  long calls = 0;
  CHECK(cuCtxSetCurrent(context));
  CUstream stream = NULL;
  if (thread != 0) CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUevent event;
  CHECK(cuEventCreate(&event, CU_EVENT_DEFAULT));
  enum { kMaxN = 4096, kMaxBlock = 4 << 20 };
  float* x = (float*)malloc(kMaxN * sizeof(float));
  float* y = (float*)malloc(kMaxN * sizeof(float));
  float* out = (float*)malloc(kMaxN * sizeof(float));
  unsigned char* block = (unsigned char*)malloc(kMaxBlock);
  unsigned char* back = (unsigned char*)malloc(kMaxBlock);
  CUdeviceptr dx, dy, dblock, dcopy;
  CHECK(cuMemAlloc(&dx, kMaxN * sizeof(float)));
  CHECK(cuMemAlloc(&dy, kMaxN * sizeof(float)));
  CHECK(cuMemAlloc(&dblock, kMaxBlock));
  CHECK(cuMemAlloc(&dcopy, kMaxBlock));
  unsigned seed = 12345u + (unsigned)thread;
  for (round = 0; round < rounds; ++round) {
    seed = seed * 1103515245u + 12345u;
    int n = 1 + (int)((seed >> 8) % kMaxN);
    for (int i = 0; i < n; ++i) {
      x[i] = (float)((i + thread) % 97);
      y[i] = (float)(round % 89);
    }
    CHECK(cuMemcpyHtoDAsync(dx, x, (size_t)n * sizeof(float), stream));
    CHECK(cuMemcpyHtoDAsync(dy, y, (size_t)n * sizeof(float), stream));
    float a = 0.5f;
    void* params[] = {&n, &a, &dx, &dy};
    for (int launch = 0; launch < 3; ++launch) {
      CHECK(cuLaunchKernel(saxpy, (unsigned)(n + 127) / 128, 1, 1, 128, 1, 1, 0, stream, params,
                           NULL));
    }
    CHECK(cuEventRecord(event, stream));
    switch (round % 3) {
      case 0:
        CHECK(cuEventSynchronize(event));
        break;
      case 1:
        CHECK(cuStreamSynchronize(stream));
        break;
      default:
        while (cuEventQuery(event) == CUDA_ERROR_NOT_READY) {
        }
        ++calls;
        break;
    }
    CHECK(cuMemcpyDtoHAsync(out, dy, (size_t)n * sizeof(float), stream));
    CHECK(cuStreamSynchronize(stream));
    for (int i = 0; i < n; ++i) {
      const float expected = y[i] + 1.5f * x[i];
      if (out[i] != expected) {
        printf("FAILED thread %d round %d: y[%d] = %f, expected %f\n", thread, round, i, out[i],
               expected);
        exit(1);
      }
    }
    if (round % 8 == 7) {
      const size_t bytes = (1u << 20) + (seed % (3u << 20));
      for (size_t i = 0; i < bytes; ++i) block[i] = (unsigned char)(i * 13 + round + thread);
      CHECK(cuMemcpyHtoDAsync(dblock, block, bytes, stream));
      CHECK(cuMemcpyDtoDAsync(dcopy, dblock, bytes, stream));
      memset(back, 0, bytes);
      CHECK(cuMemcpyDtoHAsync(back, dcopy, bytes, stream));
      if (round % 16 == 15) CHECK(cuCtxSynchronize());
      CHECK(cuStreamSynchronize(stream));
      if (memcmp(back, block, bytes) != 0) {
        printf("FAILED thread %d round %d: a %zu-byte block came back different\n", thread, round,
               bytes);
        exit(1);
      }
    }
  }
  CHECK(cuMemFree(dx));
  CHECK(cuMemFree(dy));
  CHECK(cuMemFree(dblock));
  CHECK(cuMemFree(dcopy));
  CHECK(cuEventDestroy(event));
  if (stream != NULL) CHECK(cuStreamDestroy(stream));
  free(x);
  free(y);
  free(out);
  free(block);
  free(back);
  pthread_mutex_lock(&counter_lock);
  operations += calls;
  pthread_mutex_unlock(&counter_lock);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s SAXPY_PTX THREADS ROUNDS\n", argv[0]);
    return 2;
  }
  const int threads = atoi(argv[2]);
  rounds = atoi(argv[3]);
  if (threads < 1 || threads > 64 || rounds < 1) {
    fprintf(stderr, "THREADS must be 1 to 64 and ROUNDS at least 1\n");
    return 2;
  }
  char* ptx = ReadTextFile(argv[1]);
  int thread = -1, round = -1;
  long calls = 0;
  CUdevice device;
  CUmodule module;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuCtxCreate(&context, NULL, 0, device));
  CHECK(cuModuleLoadData(&module, ptx));
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  pthread_t ids[64];
  for (long t = 0; t < threads; ++t) {
    if (pthread_create(&ids[t], NULL, Worker, (void*)t) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      return 1;
    }
  }
  for (int t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
  clock_gettime(CLOCK_MONOTONIC, &end);
  CHECK(cuCtxDestroy(context));
  const double seconds =
      (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) * 1e-9;
  printf("stress: %d threads x %d rounds, %ld API calls checked, in %.2f s\n", threads, rounds,
         operations + calls, seconds);
  free(ptx);
  return 0;
}
