/* The per-thread default stream: built with CUDA_API_PER_THREAD_DEFAULT_STREAM, as nvcc's
 * --default-stream per-thread builds programs, so that every call names the _ptds/_ptsz entry
 * points and stream 0 means the calling thread's own default stream. A thread's per-thread
 * stream holds only its own work: while another thread's kernel runs, this thread's stream is
 * idle; the legacy stream (CU_STREAM_LEGACY) still follows everything. */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include <pthread.h>
#include <semaphore.h>

#include "common.h"

enum { kThreads = 1 << 24 };  /* long enough to be still running when the main thread looks */

static CUcontext g_ctx;
static CUfunction g_write_index;
static CUdeviceptr g_big;
static sem_t g_launched;
static sem_t g_checked;

static void* Worker(void* arg) {
  (void)arg;
  CHECK(cuCtxSetCurrent(g_ctx));
  void* args[] = {&g_big};
  CHECK(cuLaunchKernel(g_write_index, kThreads / 256, 1, 1, 256, 1, 1, 0, 0, args, NULL));
  sem_post(&g_launched);
  sem_wait(&g_checked);
  CHECK(cuStreamSynchronize(0));  /* this thread's stream: its kernel */
  EXPECT_RESULT(CUDA_SUCCESS, cuStreamQuery(0));
  return NULL;
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuCtxCreate(&g_ctx, NULL, 0, device));
  char* ptx = ReadPtx("basics");
  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx));
  CHECK(cuModuleGetFunction(&g_write_index, module, "write_index"));
  CHECK(cuMemAlloc(&g_big, (size_t)kThreads * sizeof(unsigned int)));
  sem_init(&g_launched, 0, 0);
  sem_init(&g_checked, 0, 0);

  /* This thread's per-thread stream: work on it is ordered and completes. */
  CUdeviceptr small;
  CHECK(cuMemAlloc(&small, 64));
  CHECK(cuMemsetD32Async(small, 5, 16, 0));
  unsigned int values[16] = {0};
  CHECK(cuMemcpyDtoHAsync(values, small, sizeof(values), 0));
  CHECK(cuStreamSynchronize(0));
  EXPECT_TRUE(values[0] == 5u && values[15] == 5u);
  CHECK(cuStreamQuery(0));

  pthread_t worker;
  EXPECT_TRUE(pthread_create(&worker, NULL, Worker, NULL) == 0);
  sem_wait(&g_launched);
  /* The worker's kernel is submitted (and, at this size, still running): it is not on this
   * thread's per-thread stream, which is idle; CU_STREAM_PER_THREAD names the same stream. */
  EXPECT_RESULT(CUDA_SUCCESS, cuStreamQuery(0));
  EXPECT_RESULT(CUDA_SUCCESS, cuStreamQuery(CU_STREAM_PER_THREAD));
  /* The legacy stream follows all work in the context, the worker's kernel included. */
  CHECK(cuStreamSynchronize(CU_STREAM_LEGACY));
  EXPECT_RESULT(CUDA_SUCCESS, cuStreamQuery(CU_STREAM_LEGACY));
  sem_post(&g_checked);
  EXPECT_TRUE(pthread_join(worker, NULL) == 0);
  unsigned int last = 0;
  CHECK(cuMemcpyDtoH(&last, g_big + (size_t)(kThreads - 1) * sizeof(unsigned int), sizeof(last)));
  EXPECT_TRUE(last == (unsigned int)(kThreads - 1));

  CHECK(cuMemFree(small));
  CHECK(cuMemFree(g_big));
  CHECK(cuModuleUnload(module));
  free(ptx);
  CHECK(cuCtxDestroy(g_ctx));
  printf("ptds_drv: OK\n");
  return 0;
}
