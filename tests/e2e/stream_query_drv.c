/* What streams and contexts answer about themselves (ids, context, device), the stream
 * capture queries of streams that are not capturing (every ABI version of the calls; capture
 * itself: graph_drv.c), the thread's capture mode, and cuEventRecordWithFlags. Run with two
 * devices. */
#include <cudaTypedefs.h>
#include <pthread.h>

#include "common.h"

static CUstreamCaptureMode thread_mode_seen = (CUstreamCaptureMode)-1;
static unsigned long long thread_stream_id = 0;
static CUcontext shared_ctx;

static void* OtherThread(void* unused) {
  (void)unused;
  /* The capture mode is per thread: this one starts at the default. */
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  CHECK(cuThreadExchangeStreamCaptureMode(&mode));
  thread_mode_seen = mode;
  CHECK(cuCtxSetCurrent(shared_ctx));
  CHECK(cuStreamGetId(CU_STREAM_PER_THREAD, &thread_stream_id));
  return NULL;
}

static void TestCaptureQueries(CUstream created) {
  const CUstream streams[] = {NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, created};
  PFN_cuStreamGetCaptureInfo_v10010 info_v1;
  PFN_cuStreamGetCaptureInfo_v11030 info_v2;
  PFN_cuStreamGetCaptureInfo_v12030 info_v3;
  CUdriverProcAddressQueryResult found;
  CHECK(cuGetProcAddress("cuStreamGetCaptureInfo", (void**)&info_v1, 10010, 0, &found));
  CHECK(cuGetProcAddress("cuStreamGetCaptureInfo", (void**)&info_v2, 11030, 0, &found));
  CHECK(cuGetProcAddress("cuStreamGetCaptureInfo", (void**)&info_v3, 12030, 0, &found));
  EXPECT_TRUE(info_v1 != NULL && info_v2 != NULL && info_v3 != NULL);
  for (size_t i = 0; i < sizeof(streams) / sizeof(streams[0]); ++i) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CHECK(cuStreamIsCapturing(streams[i], &status));
    EXPECT_TRUE(status == CU_STREAM_CAPTURE_STATUS_NONE);
    cuuint64_t id = 77;
    CUgraph graph = (CUgraph)&id;
    const CUgraphNode* deps = (const CUgraphNode*)&id;
    const CUgraphEdgeData* edges = (const CUgraphEdgeData*)&id;
    size_t count = 77;
    status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CHECK(info_v3(streams[i], &status, &id, &graph, &deps, &edges, &count));
    EXPECT_TRUE(status == CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT_TRUE(id == 0 && graph == NULL && deps == NULL && edges == NULL && count == 0);
    status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    CHECK(info_v2(streams[i], &status, NULL, NULL, NULL, NULL));
    EXPECT_TRUE(status == CU_STREAM_CAPTURE_STATUS_NONE);
    status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CHECK(info_v1(streams[i], &status, NULL));
    EXPECT_TRUE(status == CU_STREAM_CAPTURE_STATUS_NONE);
    /* Through the names a program built against CUDA 13 calls. */
    status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CHECK(cuStreamGetCaptureInfo(streams[i], &status, NULL, NULL, NULL, NULL, NULL));
    EXPECT_TRUE(status == CU_STREAM_CAPTURE_STATUS_NONE);
    /* Edge data needs the dependencies it annotates. */
    EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                  info_v3(streams[i], &status, NULL, NULL, NULL, &edges, NULL));
  }
  CUstreamCaptureStatus status;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuStreamIsCapturing(NULL, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, info_v1(NULL, NULL, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuStreamIsCapturing((CUstream)&status, &status));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE,
                cuStreamGetCaptureInfo((CUstream)&status, &status, NULL, NULL, NULL, NULL, NULL));

  /* The thread's mode: exchanged, kept per thread, validated. */
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  CHECK(cuThreadExchangeStreamCaptureMode(&mode));
  EXPECT_TRUE(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
  pthread_t thread;
  EXPECT_TRUE(pthread_create(&thread, NULL, OtherThread, NULL) == 0);
  EXPECT_TRUE(pthread_join(thread, NULL) == 0);
  EXPECT_TRUE(thread_mode_seen == CU_STREAM_CAPTURE_MODE_GLOBAL);
  mode = (CUstreamCaptureMode)7;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuThreadExchangeStreamCaptureMode(&mode));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuThreadExchangeStreamCaptureMode(NULL));
  mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  CHECK(cuThreadExchangeStreamCaptureMode(&mode));
  EXPECT_TRUE(mode == CU_STREAM_CAPTURE_MODE_RELAXED); /* the invalid one changed nothing */
}

/* Ids: unique for the life of the process, stable for one object; the null stream is the
 * legacy stream; each thread has its own per-thread stream; a context's ids change when its
 * host side is made again (a reset primary context is a new context). */
static void TestIds(CUcontext a, CUcontext b, CUstream created_a, CUdevice second) {
  unsigned long long ctx_a = 0, ctx_b = 0, again = 0, current = 0;
  CHECK(cuCtxGetId(a, &ctx_a));
  CHECK(cuCtxGetId(b, &ctx_b));
  CHECK(cuCtxGetId(a, &again));
  EXPECT_TRUE(ctx_a != 0 && ctx_b != 0 && ctx_a != ctx_b && again == ctx_a);
  CHECK(cuCtxSetCurrent(b));
  CHECK(cuCtxGetId(NULL, &current));
  EXPECT_TRUE(current == ctx_b);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuCtxGetId(a, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetId((CUcontext)&current, &current));

  unsigned long long null_b, legacy_b, per_thread_b, created, created_again, null_a;
  CHECK(cuStreamGetId(NULL, &null_b));
  CHECK(cuStreamGetId(CU_STREAM_LEGACY, &legacy_b));
  CHECK(cuStreamGetId(CU_STREAM_PER_THREAD, &per_thread_b));
  CHECK(cuStreamGetId(created_a, &created)); /* another context's stream: fine */
  CHECK(cuStreamGetId(created_a, &created_again));
  EXPECT_TRUE(null_b == legacy_b && legacy_b != per_thread_b && created == created_again);
  EXPECT_TRUE(created != legacy_b && created != per_thread_b && created != 0);
  CHECK(cuCtxSetCurrent(a));
  CHECK(cuStreamGetId(NULL, &null_a));
  EXPECT_TRUE(null_a != null_b && null_a != created);
  pthread_t thread;
  EXPECT_TRUE(pthread_create(&thread, NULL, OtherThread, NULL) == 0);
  EXPECT_TRUE(pthread_join(thread, NULL) == 0);
  EXPECT_TRUE(thread_stream_id != 0 && thread_stream_id != per_thread_b &&
              thread_stream_id != legacy_b);
  unsigned long long id;
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuStreamGetId((CUstream)&id, &id));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuStreamGetId(created_a, NULL));

  /* A primary context after cuDevicePrimaryCtxReset: the same handle, new ids. */
  CUcontext primary;
  CHECK(cuDevicePrimaryCtxRetain(&primary, second));
  CHECK(cuCtxPushCurrent(primary));
  unsigned long long before_ctx, before_stream, after_ctx, after_stream;
  CHECK(cuCtxGetId(primary, &before_ctx));
  CHECK(cuStreamGetId(NULL, &before_stream));
  CHECK(cuDevicePrimaryCtxReset(second));
  CHECK(cuCtxGetId(primary, &after_ctx));
  CHECK(cuStreamGetId(NULL, &after_stream));
  EXPECT_TRUE(after_ctx != before_ctx && after_stream != before_stream);
  CHECK(cuCtxPopCurrent(NULL));
  CHECK(cuDevicePrimaryCtxRelease(second));
}

static void TestStreamOwners(CUcontext a, CUcontext b, CUstream created_a, CUdevice second) {
  CHECK(cuCtxSetCurrent(b));
  CUcontext owner = NULL;
  CHECK(cuStreamGetCtx(created_a, &owner));
  EXPECT_TRUE(owner == a);
  CHECK(cuStreamGetCtx(NULL, &owner));
  EXPECT_TRUE(owner == b);
  CHECK(cuStreamGetCtx(CU_STREAM_PER_THREAD, &owner));
  EXPECT_TRUE(owner == b);
  CUgreenCtx green = (CUgreenCtx)&owner;
  CHECK(cuStreamGetCtx_v2(created_a, &owner, &green));
  EXPECT_TRUE(owner == a && green == NULL);
  CHECK(cuStreamGetCtx_v2(CU_STREAM_LEGACY, &owner, NULL));
  EXPECT_TRUE(owner == b);
  CUdevice device = -1;
  CHECK(cuStreamGetDevice(created_a, &device));
  EXPECT_TRUE(device == 0);
  CHECK(cuStreamGetDevice(NULL, &device));
  EXPECT_TRUE(device == second);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuStreamGetCtx(NULL, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuStreamGetDevice((CUstream)&device, &device));
  CHECK(cuCtxSetCurrent(NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuStreamGetCtx(NULL, &owner));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuStreamIsCapturing(NULL, &(CUstreamCaptureStatus){0}));
  CHECK(cuStreamGetCtx(created_a, &owner)); /* a created stream names its context */
  EXPECT_TRUE(owner == a);
  CHECK(cuCtxSetCurrent(a));
}

/* Flags 0 records as cuEventRecord does; CU_EVENT_RECORD_EXTERNAL is valid only while a stream
 * is captured (graph_drv.c). */
static void TestEventRecordWithFlags(CUcontext a, CUcontext b, CUstream created_a) {
  CHECK(cuCtxSetCurrent(a));
  CUevent start, end, other;
  CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
  CHECK(cuEventCreate(&end, CU_EVENT_DEFAULT));
  CUdeviceptr buffer;
  CHECK(cuMemAlloc(&buffer, 1 << 20));
  CHECK(cuEventRecordWithFlags(start, created_a, CU_EVENT_RECORD_DEFAULT));
  CHECK(cuMemsetD32Async(buffer, 7, (1 << 20) / 4, created_a));
  CHECK(cuEventRecordWithFlags(end, created_a, 0));
  CHECK(cuEventSynchronize(end));
  CHECK(cuEventQuery(end));
  float ms = -1.0f;
  CHECK(cuEventElapsedTime(&ms, start, end));
  EXPECT_TRUE(ms >= 0.0f);
  unsigned int word = 0;
  CHECK(cuMemcpyDtoH(&word, buffer + 4096, sizeof(word)));
  EXPECT_TRUE(word == 7);
  CHECK(cuEventRecordWithFlags(start, NULL, 0)); /* the legacy stream */
  CHECK(cuEventSynchronize(start));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuEventRecordWithFlags(start, created_a, CU_EVENT_RECORD_EXTERNAL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuEventRecordWithFlags(start, created_a, 2));
  CHECK(cuCtxSetCurrent(b));
  CHECK(cuEventCreate(&other, CU_EVENT_DEFAULT));
  CHECK(cuCtxSetCurrent(a));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuEventRecordWithFlags(other, created_a, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuEventRecordWithFlags((CUevent)&ms, created_a, 0));
  CHECK(cuEventDestroy(other));
  CHECK(cuEventDestroy(start));
  CHECK(cuEventDestroy(end));
  CHECK(cuMemFree(buffer));
}

int main(void) {
  CHECK(cuInit(0));
  int count = 0;
  CHECK(cuDeviceGetCount(&count));
  EXPECT_TRUE(count >= 2);
  CUcontext a, b;
  CHECK(cuCtxCreate(&a, NULL, 0, 0));
  CUstream created_a;
  CHECK(cuStreamCreate(&created_a, CU_STREAM_NON_BLOCKING));
  CHECK(cuCtxCreate(&b, NULL, 0, 1));
  CHECK(cuCtxPopCurrent(NULL)); /* the stack is [a]: cuCtxSetCurrent replaces its top */
  shared_ctx = b;
  TestCaptureQueries(created_a);
  TestIds(a, b, created_a, 1);
  TestStreamOwners(a, b, created_a, 1);
  TestEventRecordWithFlags(a, b, created_a);
  CHECK(cuStreamDestroy(created_a));
  CHECK(cuCtxDestroy(b));
  CHECK(cuCtxDestroy(a));
  printf("stream and context queries, capture status, event record flags: ok\n");
  return 0;
}
