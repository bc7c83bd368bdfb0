/* CUDA graphs and stream capture: graphs built by hand (kernel, memset, memcpy, host, event,
 * empty and child graph nodes) and queried, launched several times, changed through the exec
 * setters and cuGraphExecUpdate; graphs captured from streams with a fork and a join; the errors
 * CUDA defines for what capture forbids; a cycle; an error inside a launched graph; user
 * objects; the DOT output. Every result is checked against a CPU reference. */
#include <pthread.h>

#include "common.h"

enum { kN = 256, kBlock = 128 };

static CUmodule g_module;
static CUfunction g_add, g_scale, g_sum;
static int g_host_calls = 0;
static int g_host_seen = -1;
static int* g_host_watch = NULL;
static int g_destroyed = 0;

static void HostNode(void* data) {
  ++g_host_calls;
  if (g_host_watch != NULL) g_host_seen = g_host_watch[0];
  (void)data;
}

static void Destructor(void* data) { g_destroyed += (int)(uintptr_t)data; }

static void ExpectAll(const int* values, int expected, const char* what) {
  for (int i = 0; i < kN; ++i) {
    if (values[i] != expected) {
      fprintf(stderr, "%s: element %d is %d, expected %d\n", what, i, values[i], expected);
      exit(1);
    }
  }
}

static void ReadBack(CUdeviceptr src, int* out) {
  CHECK(cuMemcpyDtoH(out, src, kN * sizeof(int)));
}

static CUDA_KERNEL_NODE_PARAMS KernelParams(CUfunction f, void** args) {
  CUDA_KERNEL_NODE_PARAMS p;
  memset(&p, 0, sizeof(p));
  p.func = f;
  p.gridDimX = kN / kBlock;
  p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = kBlock;
  p.blockDimY = p.blockDimZ = 1;
  p.kernelParams = args;
  return p;
}

static CUDA_MEMCPY3D Copy1D(CUmemorytype src_type, const void* src_host, CUdeviceptr src,
                            CUmemorytype dst_type, void* dst_host, CUdeviceptr dst, size_t bytes) {
  CUDA_MEMCPY3D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = src_type;
  c.srcHost = src_host;
  c.srcDevice = src;
  c.dstMemoryType = dst_type;
  c.dstHost = dst_host;
  c.dstDevice = dst;
  c.WidthInBytes = bytes;
  c.Height = 1;
  c.Depth = 1;
  return c;
}

/* memset(a, 1) -> add(a, add_value) -> scale(a, 3)  \
 * memset(b, 5) ------------------------------------- > copy b -> c, host node, copy a -> host */
static void HandBuilt(CUcontext ctx, CUstream stream) {
  CUdeviceptr a, b, c;
  CHECK(cuMemAlloc(&a, kN * sizeof(int)));
  CHECK(cuMemAlloc(&b, kN * sizeof(int)));
  CHECK(cuMemAlloc(&c, kN * sizeof(int)));
  int* host = calloc(kN, sizeof(int));
  CUgraph graph;
  CHECK(cuGraphCreate(&graph, 0));

  CUDA_MEMSET_NODE_PARAMS ms;
  memset(&ms, 0, sizeof(ms));
  ms.dst = a;
  ms.value = 1;
  ms.elementSize = 4;
  ms.width = kN;
  ms.height = 1;
  CUgraphNode set_a, set_b, add, scale, copy_bc, host_node, copy_out, empty;
  CHECK(cuGraphAddMemsetNode(&set_a, graph, NULL, 0, &ms, ctx));
  ms.dst = b;
  ms.value = 5;
  CHECK(cuGraphAddMemsetNode(&set_b, graph, NULL, 0, &ms, ctx));
  int n = kN, add_value = 2, factor = 3;
  void* add_args[] = {&n, &add_value, &a};
  CUDA_KERNEL_NODE_PARAMS kp = KernelParams(g_add, add_args);
  CHECK(cuGraphAddKernelNode(&add, graph, &set_a, 1, &kp));
  add_value = 1000; /* the node took its parameters' values at the call */
  void* scale_args[] = {&n, &factor, &a};
  kp = KernelParams(g_scale, scale_args);
  CHECK(cuGraphAddKernelNode(&scale, graph, &add, 1, &kp));
  CUDA_MEMCPY3D copy = Copy1D(CU_MEMORYTYPE_DEVICE, NULL, b, CU_MEMORYTYPE_DEVICE, NULL, c,
                              kN * sizeof(int));
  CUgraphNode both[] = {scale, set_b};
  CHECK(cuGraphAddEmptyNode(&empty, graph, both, 2));
  CHECK(cuGraphAddMemcpyNode(&copy_bc, graph, &empty, 1, &copy, ctx));
  CUDA_HOST_NODE_PARAMS hp = {HostNode, NULL};
  CHECK(cuGraphAddHostNode(&host_node, graph, &copy_bc, 1, &hp));
  copy = Copy1D(CU_MEMORYTYPE_DEVICE, NULL, a, CU_MEMORYTYPE_HOST, host, 0, kN * sizeof(int));
  CHECK(cuGraphAddMemcpyNode(&copy_out, graph, &host_node, 1, &copy, ctx));

  /* Queries. */
  size_t count = 0;
  CHECK(cuGraphGetNodes(graph, NULL, &count));
  EXPECT_TRUE(count == 8);
  CHECK(cuGraphGetRootNodes(graph, NULL, &count));
  EXPECT_TRUE(count == 2);
  CUgraphNode roots[2];
  CHECK(cuGraphGetRootNodes(graph, roots, &count));
  EXPECT_TRUE(roots[0] == set_a && roots[1] == set_b);
  CHECK(cuGraphGetEdges(graph, NULL, NULL, NULL, &count));
  EXPECT_TRUE(count == 7);
  CHECK(cuGraphNodeGetDependencies(empty, NULL, NULL, &count));
  EXPECT_TRUE(count == 2);
  CHECK(cuGraphNodeGetDependentNodes(add, NULL, NULL, &count));
  EXPECT_TRUE(count == 1);
  CUgraphNodeType type;
  CHECK(cuGraphNodeGetType(host_node, &type));
  EXPECT_TRUE(type == CU_GRAPH_NODE_TYPE_HOST);
  CUDA_KERNEL_NODE_PARAMS got;
  CHECK(cuGraphKernelNodeGetParams(add, &got));
  EXPECT_TRUE(got.func == g_add && got.blockDimX == kBlock && got.gridDimX == kN / kBlock);
  EXPECT_TRUE(*(int*)got.kernelParams[1] == 2);

  /* Three launches, each from scratch (the memsets start it again). */
  CUgraphExec exec;
  CHECK(cuGraphInstantiate(&exec, graph, 0));
  g_host_watch = NULL;
  int* out = calloc(kN, sizeof(int));
  for (int round = 1; round <= 3; ++round) {
    memset(host, 0, kN * sizeof(int));
    CHECK(cuGraphLaunch(exec, stream));
    CHECK(cuStreamSynchronize(stream));
    ExpectAll(host, (1 + 2) * 3, "hand-built graph, copy to host");
    ReadBack(c, out);
    ExpectAll(out, 5, "hand-built graph, copy b -> c");
    EXPECT_TRUE(g_host_calls == round);
  }

  /* The exec's own kernel parameters change; the graph's stay. */
  add_value = 10;
  void* new_args[] = {&n, &add_value, &a};
  kp = KernelParams(g_add, new_args);
  CHECK(cuGraphExecKernelNodeSetParams(exec, add, &kp));
  CHECK(cuGraphLaunch(exec, stream));
  CHECK(cuStreamSynchronize(stream));
  ExpectAll(host, (1 + 10) * 3, "after cuGraphExecKernelNodeSetParams");
  ms.dst = b;
  ms.value = 7;
  CHECK(cuGraphExecMemsetNodeSetParams(exec, set_b, &ms, ctx));
  CHECK(cuGraphLaunch(exec, stream));
  CHECK(cuStreamSynchronize(stream));
  ReadBack(c, out);
  ExpectAll(out, 7, "after cuGraphExecMemsetNodeSetParams");

  /* cuGraphExecUpdate from a copy whose scale factor is 4. */
  CUgraph changed;
  CHECK(cuGraphClone(&changed, graph));
  CUgraphNode changed_scale;
  CHECK(cuGraphNodeFindInClone(&changed_scale, scale, changed));
  factor = 4;
  kp = KernelParams(g_scale, scale_args);
  CHECK(cuGraphKernelNodeSetParams(changed_scale, &kp));
  CUgraphExecUpdateResultInfo info;
  CHECK(cuGraphExecUpdate(exec, changed, &info));
  EXPECT_TRUE(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
  CHECK(cuGraphLaunch(exec, stream));
  CHECK(cuStreamSynchronize(stream));
  ExpectAll(host, (1 + 2) * 4, "after cuGraphExecUpdate");
  /* A graph of another shape cannot update it. */
  CUgraphNode extra;
  CHECK(cuGraphAddEmptyNode(&extra, changed, NULL, 0));
  EXPECT_RESULT(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate(exec, changed, &info));
  EXPECT_TRUE(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  CHECK(cuGraphLaunch(exec, stream)); /* still the updated graph */
  CHECK(cuStreamSynchronize(stream));
  ExpectAll(host, (1 + 2) * 4, "after a refused cuGraphExecUpdate");

  /* DOT output. */
  char path[] = "/tmp/pvgpu_graph_dot_XXXXXX";
  int fd = mkstemp(path);
  EXPECT_TRUE(fd >= 0);
  close(fd);
  CHECK(cuGraphDebugDotPrint(graph, path, 0));
  char* dot = ReadTextFile(path);
  EXPECT_TRUE(strstr(dot, "digraph") != NULL && strstr(dot, "add_value") != NULL);
  free(dot);
  unlink(path);

  CHECK(cuGraphExecDestroy(exec));
  CHECK(cuGraphDestroy(changed));
  CHECK(cuGraphDestroy(graph));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGraphDestroy(graph));
  CHECK(cuMemFree(a));
  CHECK(cuMemFree(b));
  CHECK(cuMemFree(c));
  free(host);
  free(out);
}

/* A child graph used twice, and an event record node. */
static void ChildGraphs(CUcontext ctx, CUstream stream) {
  CUdeviceptr a;
  CHECK(cuMemAlloc(&a, kN * sizeof(int)));
  CHECK(cuMemsetD32(a, 0, kN));
  CUgraph child, parent;
  CHECK(cuGraphCreate(&child, 0));
  int n = kN, one = 1, two = 2;
  void* args1[] = {&n, &one, &a};
  void* args2[] = {&n, &two, &a};
  CUDA_KERNEL_NODE_PARAMS kp = KernelParams(g_add, args1);
  CUgraphNode k1, k2;
  CHECK(cuGraphAddKernelNode(&k1, child, NULL, 0, &kp));
  kp = KernelParams(g_scale, args2);
  CHECK(cuGraphAddKernelNode(&k2, child, &k1, 1, &kp)); /* x = (x + 1) * 2 */
  CHECK(cuGraphCreate(&parent, 0));
  CUgraphNode c1, c2, rec;
  CHECK(cuGraphAddChildGraphNode(&c1, parent, NULL, 0, child));
  CHECK(cuGraphAddChildGraphNode(&c2, parent, &c1, 1, child));
  CUevent event;
  CHECK(cuEventCreate(&event, 0));
  CHECK(cuGraphAddEventRecordNode(&rec, parent, &c2, 1, event));
  CUgraph inner;
  CHECK(cuGraphChildGraphNodeGetGraph(c1, &inner));
  size_t count = 0;
  CHECK(cuGraphGetNodes(inner, NULL, &count));
  EXPECT_TRUE(count == 2);
  CUgraphExec exec;
  CHECK(cuGraphInstantiateWithFlags(&exec, parent, 0));
  CHECK(cuGraphLaunch(exec, stream));
  CHECK(cuEventSynchronize(event));
  int out[kN];
  ReadBack(a, out);
  ExpectAll(out, ((0 + 1) * 2 + 1) * 2, "child graphs");
  CHECK(cuGraphLaunch(exec, stream));
  CHECK(cuStreamSynchronize(stream));
  ReadBack(a, out);
  ExpectAll(out, ((6 + 1) * 2 + 1) * 2, "child graphs, second launch");
  CHECK(cuEventQuery(event));
  CHECK(cuGraphExecDestroy(exec));
  CHECK(cuGraphDestroy(parent));
  CHECK(cuGraphDestroy(child));
  CHECK(cuEventDestroy(event));
  CHECK(cuMemFree(a));
  (void)ctx;
}

/* s1: memset a, add 1 to a; fork to s2: memset b to 10; s1: scale a by 3; join; sum a + b into
 * c; host function; copy c back to pageable memory. */
static void Captured(CUstream s1, CUstream s2) {
  CUdeviceptr a, b, c;
  CHECK(cuMemAlloc(&a, kN * sizeof(int)));
  CHECK(cuMemAlloc(&b, kN * sizeof(int)));
  CHECK(cuMemAlloc(&c, kN * sizeof(int)));
  int* host = calloc(kN, sizeof(int));
  CUevent fork, join;
  CHECK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  CHECK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
  int n = kN, one = 1, three = 3;
  void* add_args[] = {&n, &one, &a};
  void* scale_args[] = {&n, &three, &a};
  void* sum_args[] = {&n, &a, &b, &c};

  CUstreamCaptureStatus status;
  CHECK(cuStreamIsCapturing(s1, &status));
  EXPECT_TRUE(status == CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(cuStreamIsCapturing(s1, &status));
  EXPECT_TRUE(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK(cuMemsetD32Async(a, 4, kN, s1));
  CHECK(cuLaunchKernel(g_add, kN / kBlock, 1, 1, kBlock, 1, 1, 0, s1, add_args, NULL));
  CHECK(cuEventRecord(fork, s1));
  CHECK(cuStreamWaitEvent(s2, fork, 0));
  CHECK(cuStreamIsCapturing(s2, &status));
  EXPECT_TRUE(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK(cuMemsetD32Async(b, 10, kN, s2));
  CHECK(cuEventRecord(join, s2));
  CHECK(cuLaunchKernel(g_scale, kN / kBlock, 1, 1, kBlock, 1, 1, 0, s1, scale_args, NULL));
  CHECK(cuStreamWaitEvent(s1, join, 0));
  cuuint64_t id = 0;
  CUgraph capturing = NULL;
  const CUgraphNode* deps = NULL;
  size_t ndeps = 0;
  CHECK(cuStreamGetCaptureInfo(s1, &status, &id, &capturing, &deps, NULL, &ndeps));
  EXPECT_TRUE(status == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0 && capturing != NULL);
  EXPECT_TRUE(ndeps == 2); /* the scale kernel and s2's memset */
  CHECK(cuLaunchKernel(g_sum, kN / kBlock, 1, 1, kBlock, 1, 1, 0, s1, sum_args, NULL));
  CHECK(cuLaunchHostFunc(s1, HostNode, NULL));
  CHECK(cuMemcpyDtoHAsync(host, c, kN * sizeof(int), s1));
  /* Nothing ran: the memory still holds what it did. */
  CUgraph graph;
  CHECK(cuStreamEndCapture(s1, &graph));
  CHECK(cuStreamIsCapturing(s2, &status));
  EXPECT_TRUE(status == CU_STREAM_CAPTURE_STATUS_NONE);
  size_t count = 0;
  CHECK(cuGraphGetNodes(graph, NULL, &count));
  EXPECT_TRUE(count == 7);
  EXPECT_TRUE(host[0] == 0);

  CUgraphExec exec;
  CUDA_GRAPH_INSTANTIATE_PARAMS params;
  memset(&params, 0, sizeof(params));
  CHECK(cuGraphInstantiateWithParams(&exec, graph, &params));
  EXPECT_TRUE(params.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS);
  const int calls = g_host_calls;
  for (int round = 0; round < 2; ++round) {
    memset(host, 0, kN * sizeof(int));
    CHECK(cuGraphLaunch(exec, s1));
    CHECK(cuStreamSynchronize(s1));
    ExpectAll(host, (4 + 1) * 3 + 10, "captured graph");
    EXPECT_TRUE(g_host_calls == calls + round + 1);
  }

  /* A launch captured into another graph becomes a child graph node. */
  CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CHECK(cuGraphLaunch(exec, s1));
  CHECK(cuGraphLaunch(exec, s1));
  CUgraph outer;
  CHECK(cuStreamEndCapture(s1, &outer));
  CHECK(cuGraphGetNodes(outer, NULL, &count));
  EXPECT_TRUE(count == 2);
  CUgraphNode first[2];
  CHECK(cuGraphGetNodes(outer, first, &count));
  CUgraphNodeType type;
  CHECK(cuGraphNodeGetType(first[0], &type));
  EXPECT_TRUE(type == CU_GRAPH_NODE_TYPE_GRAPH);
  CUgraphExec outer_exec;
  CHECK(cuGraphInstantiate(&outer_exec, outer, 0));
  CHECK(cuGraphLaunch(outer_exec, s1));
  CHECK(cuStreamSynchronize(s1));
  ExpectAll(host, (4 + 1) * 3 + 10, "a captured graph launch");
  EXPECT_TRUE(g_host_calls == calls + 4);
  CHECK(cuGraphExecDestroy(outer_exec));
  CHECK(cuGraphDestroy(outer));
  CHECK(cuGraphExecDestroy(exec));
  CHECK(cuGraphDestroy(graph));
  CHECK(cuEventDestroy(fork));
  CHECK(cuEventDestroy(join));
  CHECK(cuMemFree(a));
  CHECK(cuMemFree(b));
  CHECK(cuMemFree(c));
  free(host);
}

static CUresult g_other_thread_result;
static void* OtherThread(void* data) {
  CUcontext ctx = data;
  cuCtxSetCurrent(ctx);
  CUdeviceptr p;
  g_other_thread_result = cuMemAlloc(&p, 64);
  if (g_other_thread_result == CUDA_SUCCESS) cuMemFree(p);
  return NULL;
}

/* What capture forbids, and the errors CUDA gives for it. */
static void CaptureErrors(CUcontext ctx, CUstream s1, CUstream s2) {
  CUdeviceptr a;
  CHECK(cuMemAlloc(&a, kN * sizeof(int)));
  CUgraph graph = (CUgraph)1;
  CUstreamCaptureStatus status;

  /* Synchronizing a capturing stream invalidates its capture. */
  CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(cuMemsetD32Async(a, 1, kN, s1));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamSynchronize(s1));
  CHECK(cuStreamIsCapturing(s1, &status));
  EXPECT_TRUE(status == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuMemsetD32Async(a, 2, kN, s1));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s1, &graph));
  EXPECT_TRUE(graph == NULL);
  CHECK(cuStreamSynchronize(s1)); /* usable again */

  /* The legacy stream while a blocking stream captures. */
  CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuMemsetD32Async(a, 3, kN, NULL));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuStreamIsCapturing(NULL, &status));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s1, &graph));

  /* Potentially unsafe calls: refused in global and thread-local mode, not in relaxed mode
   * or for a thread whose own mode is relaxed. */
  CUdeviceptr p;
  CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  pthread_t thread;
  pthread_create(&thread, NULL, OtherThread, ctx);
  pthread_join(thread, NULL);
  EXPECT_TRUE(g_other_thread_result == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  CHECK(cuThreadExchangeStreamCaptureMode(&mode));
  EXPECT_TRUE(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
  CHECK(cuMemAlloc(&p, 64));
  CHECK(cuMemFree(p));
  CHECK(cuThreadExchangeStreamCaptureMode(&mode));
  CHECK(cuMemsetD32Async(a, 1, kN, s1));
  CHECK(cuStreamEndCapture(s1, &graph)); /* not invalidated by the other thread's refusal */
  CHECK(cuGraphDestroy(graph));
  CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuMemAlloc(&p, 64));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s1, &graph));
  CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  pthread_create(&thread, NULL, OtherThread, ctx);
  pthread_join(thread, NULL);
  EXPECT_TRUE(g_other_thread_result == CUDA_SUCCESS); /* another thread's thread-local capture */
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuCtxSynchronize());
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s1, &graph));
  CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_RELAXED));
  CHECK(cuMemAlloc(&p, 64));
  CHECK(cuMemFree(p));
  CHECK(cuStreamEndCapture(s1, &graph));
  CHECK(cuGraphDestroy(graph));

  /* A fork never joined back. */
  CUevent fork;
  CHECK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(cuEventRecord(fork, s1));
  EXPECT_RESULT(CUDA_ERROR_CAPTURED_EVENT, cuEventQuery(fork));
  CHECK(cuStreamWaitEvent(s2, fork, 0));
  CHECK(cuMemsetD32Async(a, 1, kN, s2));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, cuStreamEndCapture(s2, &graph));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, cuStreamEndCapture(s1, &graph));
  EXPECT_TRUE(graph == NULL);
  CHECK(cuStreamIsCapturing(s2, &status));
  EXPECT_TRUE(status == CU_STREAM_CAPTURE_STATUS_NONE);

  /* A wait on an event recorded outside the capture. */
  CHECK(cuEventRecord(fork, s2));
  CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, cuStreamWaitEvent(s1, fork, 0));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s1, &graph));

  /* CU_EVENT_RECORD_EXTERNAL: an event record node inside a capture, invalid outside one. */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuEventRecordWithFlags(fork, s1, CU_EVENT_RECORD_EXTERNAL));
  CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(cuEventRecordWithFlags(fork, s1, CU_EVENT_RECORD_EXTERNAL));
  CHECK(cuStreamEndCapture(s1, &graph));
  CUgraphNode record_node;
  size_t records = 1;
  CHECK(cuGraphGetNodes(graph, &record_node, &records));
  CUgraphNodeType record_type;
  CHECK(cuGraphNodeGetType(record_node, &record_type));
  EXPECT_TRUE(records == 1 && record_type == CU_GRAPH_NODE_TYPE_EVENT_RECORD);
  CHECK(cuGraphDestroy(graph));

  /* Wrong streams and states. */
  EXPECT_RESULT(CUDA_ERROR_ILLEGAL_STATE, cuStreamEndCapture(s1, &graph));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_RESULT(CUDA_ERROR_ILLEGAL_STATE, cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(cuStreamEndCapture(s1, &graph)); /* an empty capture */
  size_t count = 1;
  CHECK(cuGraphGetNodes(graph, NULL, &count));
  EXPECT_TRUE(count == 0);
  CHECK(cuGraphDestroy(graph));
  EXPECT_RESULT(CUDA_ERROR_ILLEGAL_STATE, cuStreamUpdateCaptureDependencies(s1, NULL, NULL, 0, 0));

  CHECK(cuStreamSynchronize(s1));
  CHECK(cuStreamSynchronize(s2));
  CHECK(cuEventDestroy(fork));
  CHECK(cuMemFree(a));
}

/* A cycle, an error inside a launched graph, and user objects. */
static void GraphErrors(CUcontext ctx, CUstream stream) {
  CUgraph graph;
  CHECK(cuGraphCreate(&graph, 0));
  CUgraphNode x, y;
  CHECK(cuGraphAddEmptyNode(&x, graph, NULL, 0));
  CHECK(cuGraphAddEmptyNode(&y, graph, &x, 1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGraphAddDependencies(graph, &x, &y, NULL, 1)); /* twice */
  CHECK(cuGraphAddDependencies(graph, &y, &x, NULL, 1));
  CUgraphExec exec;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiate(&exec, graph, 0));
  CHECK(cuGraphRemoveDependencies(graph, &y, &x, NULL, 1));
  CHECK(cuGraphInstantiate(&exec, graph, 0));
  CHECK(cuGraphLaunch(exec, stream)); /* empty nodes only: nothing to run */
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuGraphExecDestroy(exec));

  /* A memset node whose memory is freed before the launch: the host refuses it when the
   * graph runs, and the error surfaces at the next synchronization like any asynchronous
   * error. */
  CUdeviceptr gone;
  CHECK(cuMemAlloc(&gone, 4096));
  CUDA_MEMSET_NODE_PARAMS ms;
  memset(&ms, 0, sizeof(ms));
  ms.dst = gone;
  ms.value = 9;
  ms.elementSize = 1;
  ms.width = 4096;
  ms.height = 1;
  CUgraphNode set;
  CHECK(cuGraphAddMemsetNode(&set, graph, &y, 1, &ms, ctx));
  CHECK(cuGraphInstantiate(&exec, graph, 0));
  CHECK(cuMemFree(gone));
  /* Posted without waiting; under PVGPU_PIPELINE=0 the launch waits and returns it too. */
  const CUresult launched = cuGraphLaunch(exec, stream);
  EXPECT_TRUE(launched == CUDA_SUCCESS || launched == CUDA_ERROR_INVALID_VALUE);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuStreamSynchronize(stream));
  CHECK(cuStreamSynchronize(stream)); /* reported once */
  CHECK(cuGraphExecDestroy(exec));

  /* User objects: the graph and its executable copy keep the object alive. */
  CUuserObject object;
  CHECK(cuUserObjectCreate(&object, (void*)(uintptr_t)1, Destructor, 1,
                           CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
  CHECK(cuGraphRetainUserObject(graph, object, 1, CU_GRAPH_USER_OBJECT_MOVE));
  CHECK(cuUserObjectRetain(object, 2));
  CHECK(cuUserObjectRelease(object, 2));
  CHECK(cuGraphRemoveDependencies(graph, &y, &set, NULL, 1));
  CHECK(cuGraphDestroyNode(set));
  CHECK(cuGraphInstantiate(&exec, graph, 0));
  CHECK(cuGraphDestroy(graph));
  EXPECT_TRUE(g_destroyed == 0);
  CHECK(cuGraphExecDestroy(exec));
  EXPECT_TRUE(g_destroyed == 1);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuUserObjectRelease(object, 1));
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext ctx;
  CHECK(cuCtxCreate(&ctx, NULL, 0, device));
  char* ptx = ReadPtx("graphs");
  CHECK(cuModuleLoadData(&g_module, ptx));
  free(ptx);
  CHECK(cuModuleGetFunction(&g_add, g_module, "add_value"));
  CHECK(cuModuleGetFunction(&g_scale, g_module, "scale_by"));
  CHECK(cuModuleGetFunction(&g_sum, g_module, "sum_into"));
  CUstream s1, s2;
  CHECK(cuStreamCreate(&s1, 0));
  CHECK(cuStreamCreate(&s2, 0));

  HandBuilt(ctx, s1);
  ChildGraphs(ctx, s1);
  Captured(s1, s2);
  CaptureErrors(ctx, s1, s2);
  GraphErrors(ctx, s1);

  CHECK(cuStreamDestroy(s1));
  CHECK(cuStreamDestroy(s2));
  CHECK(cuModuleUnload(g_module));
  CHECK(cuCtxDestroy(ctx));
  printf("graph_drv: ok\n");
  return 0;
}
