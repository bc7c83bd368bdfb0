/* Host functions in streams (cuLaunchHostFunc, cuStreamAddCallback): each runs after the work
 * before it on its stream, work after it on that stream waits for it, other non-blocking
 * streams do not, and queries and synchronization see it. */
#include <pthread.h>
#include <semaphore.h>

#include "common.h"

enum { kN = 1 << 16 };

static unsigned int* g_pinned;  /* written by write_index through its device mapping */
static int g_seen_complete = -1;
static int g_order[8];
static int g_calls = 0;
static sem_t g_release;
static pthread_t g_main_thread;
static int g_on_other_thread = -1;

/* Checks that the kernel before it has finished: every index written. */
static void CheckKernelDone(void* data) {
  (void)data;
  int complete = 1;
  for (int i = 0; i < kN; ++i) complete &= g_pinned[i] == (unsigned int)i;
  g_seen_complete = complete;
  g_on_other_thread = !pthread_equal(pthread_self(), g_main_thread);
  g_order[g_calls++] = 1;
}

/* Writes a value that the copy submitted after it must carry. */
static void WriteMarker(void* data) {
  g_pinned[0] = 0xC0FFEEu;
  g_order[g_calls++] = (int)(uintptr_t)data;
}

static void RecordOrder(void* data) { g_order[g_calls++] = (int)(uintptr_t)data; }

static void Blocking(void* data) {
  (void)data;
  sem_wait(&g_release);
  g_order[g_calls++] = 3;
}

static CUstream g_callback_stream;
static CUresult g_callback_status = CUDA_ERROR_UNKNOWN;
static void Callback(CUstream stream, CUresult status, void* data) {
  g_callback_status = stream == g_callback_stream ? status : CUDA_ERROR_INVALID_HANDLE;
  g_order[g_calls++] = (int)(uintptr_t)data;
}

int main(void) {
  g_main_thread = pthread_self();
  sem_init(&g_release, 0, 0);
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
  CHECK(cuMemHostAlloc((void**)&g_pinned, kN * sizeof(unsigned int), CU_MEMHOSTALLOC_DEVICEMAP));
  memset(g_pinned, 0, kN * sizeof(unsigned int));
  CUdeviceptr mapped;
  CHECK(cuMemHostGetDevicePointer(&mapped, g_pinned, 0));
  CUstream stream, other;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));

  /* 1. After the kernel before it, on another thread. */
  void* args[] = {&mapped};
  CHECK(cuLaunchKernel(write_index, kN / 256, 1, 1, 256, 1, 1, 0, stream, args, NULL));
  CHECK(cuLaunchHostFunc(stream, CheckKernelDone, NULL));
  /* 2. Before the copy after it: the copy carries the marker the host function wrote. */
  CHECK(cuLaunchHostFunc(stream, WriteMarker, (void*)(uintptr_t)2));
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, 4));
  CHECK(cuMemcpyHtoDAsync(d, g_pinned, 4, stream));
  CHECK(cuStreamSynchronize(stream));
  EXPECT_TRUE(g_seen_complete == 1);
  EXPECT_TRUE(g_on_other_thread == 1);
  unsigned int marker = 0;
  CHECK(cuMemcpyDtoH(&marker, d, 4));
  EXPECT_TRUE(marker == 0xC0FFEEu);

  /* 3. A host function that has not returned: its stream is not ready, another non-blocking
   * stream's work goes on, and the stream completes once it returns. */
  CHECK(cuLaunchHostFunc(stream, Blocking, NULL));
  EXPECT_RESULT(CUDA_ERROR_NOT_READY, cuStreamQuery(stream));
  CHECK(cuMemsetD32Async(d, 7, 1, other));
  CHECK(cuStreamSynchronize(other));
  CHECK(cuMemcpyDtoH(&marker, d, 4));
  EXPECT_TRUE(marker == 7u);
  CUevent event;
  CHECK(cuEventCreate(&event, 0));
  sem_post(&g_release);
  CHECK(cuEventRecord(event, stream));  /* held back until Blocking returns */
  CHECK(cuEventSynchronize(event));
  EXPECT_TRUE(g_calls == 3 && g_order[2] == 3);
  CHECK(cuStreamQuery(stream));

  /* 4. cuStreamAddCallback, on the default stream, with the stream and status; and
   * cuCtxSynchronize waits for host functions. */
  g_callback_stream = NULL;
  CHECK(cuStreamAddCallback(NULL, Callback, (void*)(uintptr_t)4, 0));
  CHECK(cuCtxSynchronize());
  EXPECT_TRUE(g_calls == 4 && g_order[3] == 4);
  EXPECT_TRUE(g_callback_status == CUDA_SUCCESS);

  /* 5. Bad arguments. */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLaunchHostFunc(stream, NULL, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuStreamAddCallback(stream, Callback, NULL, 1));
  CHECK(cuStreamDestroy(other));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuLaunchHostFunc(other, WriteMarker, NULL));

  /* 6. Many in a row run in order, and destroying the context waits for them. */
  for (int i = 0; i < 3; ++i) CHECK(cuLaunchHostFunc(stream, RecordOrder, (void*)(uintptr_t)(10 + i)));
  CHECK(cuEventDestroy(event));
  CHECK(cuStreamDestroy(stream));
  CHECK(cuMemFree(d));
  CHECK(cuMemFreeHost(g_pinned));
  CHECK(cuModuleUnload(module));
  free(ptx);
  CHECK(cuCtxDestroy(ctx));
  EXPECT_TRUE(g_calls == 7 && g_order[4] == 10 && g_order[5] == 11 && g_order[6] == 12);
  printf("hostfunc_drv: OK\n");
  return 0;
}
