/* Per-node controls of graphs and launch attributes: kernel and memset nodes of an executable
 * graph disabled and enabled again (each launch checked against a CPU reference), kernel node
 * attributes set, read back and copied, and cuLaunchKernelEx with hint attributes and a
 * completion event; the errors for attributes pvgpu cannot honour; capture of the per-thread
 * default stream. */
#include "common.h"

static CUDA_KERNEL_NODE_PARAMS Node(CUfunction f, void** args, int n) {
  CUDA_KERNEL_NODE_PARAMS k;
  memset(&k, 0, sizeof(k));
  k.func = f;
  k.gridDimX = (unsigned)((n + 127) / 128);
  k.gridDimY = k.gridDimZ = 1;
  k.blockDimX = 128;
  k.blockDimY = k.blockDimZ = 1;
  k.kernelParams = args;
  return k;
}

/* y = 1; y += 2 x (k1); y += 3 x (k2), with the enabled nodes only. */
static void Expect(CUdeviceptr y_dev, const float* x, int n, int memset_on, int k1, int k2,
                   float before) {
  float* y = (float*)malloc(n * sizeof(float));
  CHECK(cuMemcpyDtoH(y, y_dev, n * sizeof(float)));
  for (int i = 0; i < n; ++i) {
    float want = memset_on ? 1.0f : before;
    if (k1) want = 2.0f * x[i] + want;
    if (k2) want = 3.0f * x[i] + want;
    if (y[i] != want) {
      fprintf(stderr, "y[%d] = %f, expected %f (memset %d, k1 %d, k2 %d)\n", i, y[i], want,
              memset_on, k1, k2);
      exit(1);
    }
  }
  free(y);
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK(cuCtxCreate(&context, NULL, 0, device));
  char* ptx = ReadPtx("saxpy");
  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx));
  CUfunction saxpy;
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));

  const int n = 4000;
  float* x = (float*)malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) x[i] = (float)(i % 37) - 10.0f;
  CUdeviceptr x_dev, y_dev;
  CHECK(cuMemAlloc(&x_dev, n * sizeof(float)));
  CHECK(cuMemAlloc(&y_dev, n * sizeof(float)));
  CHECK(cuMemcpyHtoD(x_dev, x, n * sizeof(float)));

  CUgraph graph;
  CHECK(cuGraphCreate(&graph, 0));
  CUDA_MEMSET_NODE_PARAMS fill;
  memset(&fill, 0, sizeof(fill));
  fill.dst = y_dev;
  fill.value = 0x3f800000u; /* 1.0f */
  fill.elementSize = 4;
  fill.width = (size_t)n;
  fill.height = 1;
  CUgraphNode memset_node, k1, k2, empty;
  CHECK(cuGraphAddMemsetNode(&memset_node, graph, NULL, 0, &fill, context));
  int count = n;
  float a1 = 2.0f, a2 = 3.0f;
  void* args1[] = {&count, &a1, &x_dev, &y_dev};
  void* args2[] = {&count, &a2, &x_dev, &y_dev};
  CUDA_KERNEL_NODE_PARAMS p1 = Node(saxpy, args1, n), p2 = Node(saxpy, args2, n);
  CHECK(cuGraphAddKernelNode(&k1, graph, &memset_node, 1, &p1));
  CHECK(cuGraphAddKernelNode(&k2, graph, &k1, 1, &p2));
  CHECK(cuGraphAddEmptyNode(&empty, graph, &k2, 1));

  /* Kernel node attributes. */
  CUkernelNodeAttrValue value;
  memset(&value, 0, sizeof(value));
  value.priority = 1;
  CHECK(cuGraphKernelNodeSetAttribute(k1, CU_LAUNCH_ATTRIBUTE_PRIORITY, &value));
  memset(&value, 0, sizeof(value));
  value.accessPolicyWindow.base_ptr = (void*)(uintptr_t)x_dev;
  value.accessPolicyWindow.num_bytes = n * sizeof(float);
  value.accessPolicyWindow.hitRatio = 0.5f;
  value.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
  CHECK(cuGraphKernelNodeSetAttribute(k1, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &value));
  memset(&value, 0, sizeof(value));
  value.clusterDim.x = value.clusterDim.y = value.clusterDim.z = 1;
  CHECK(cuGraphKernelNodeSetAttribute(k1, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &value));
  value.clusterDim.x = 2;
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED,
                cuGraphKernelNodeSetAttribute(k1, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &value));
  CUkernelNodeAttrValue got;
  CHECK(cuGraphKernelNodeGetAttribute(k1, CU_LAUNCH_ATTRIBUTE_PRIORITY, &got));
  EXPECT_TRUE(got.priority == 1);
  CHECK(cuGraphKernelNodeGetAttribute(k1, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &got));
  EXPECT_TRUE(got.clusterDim.x == 1 && got.clusterDim.y == 1);
  CHECK(cuGraphKernelNodeGetAttribute(k2, CU_LAUNCH_ATTRIBUTE_PRIORITY, &got));
  EXPECT_TRUE(got.priority == 0); /* never set: the default */
  CHECK(cuGraphKernelNodeCopyAttributes(k2, k1));
  CHECK(cuGraphKernelNodeGetAttribute(k2, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &got));
  EXPECT_TRUE(got.accessPolicyWindow.num_bytes == n * sizeof(float));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGraphKernelNodeCopyAttributes(k2, memset_node));
  CUevent done;
  CHECK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
  memset(&value, 0, sizeof(value));
  value.programmaticEvent.event = done;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuGraphKernelNodeSetAttribute(k1, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, &value));

  /* Disabling and enabling nodes of the executable graph. */
  CUgraphExec exec;
  CHECK(cuGraphInstantiate(&exec, graph, 0));
  CHECK(cuGraphLaunch(exec, NULL));
  CHECK(cuCtxSynchronize());
  Expect(y_dev, x, n, 1, 1, 1, 0.0f);
  unsigned int enabled = 0;
  CHECK(cuGraphNodeGetEnabled(exec, k2, &enabled));
  EXPECT_TRUE(enabled == 1);
  CHECK(cuGraphNodeSetEnabled(exec, k2, 0));
  CHECK(cuGraphNodeGetEnabled(exec, k2, &enabled));
  EXPECT_TRUE(enabled == 0);
  CHECK(cuGraphLaunch(exec, NULL));
  CHECK(cuCtxSynchronize());
  Expect(y_dev, x, n, 1, 1, 0, 0.0f);
  /* Without the memset, k1 adds to what the last launch left: y = (2x + 1) + 2x. */
  CHECK(cuGraphNodeSetEnabled(exec, memset_node, 0));
  CHECK(cuGraphLaunch(exec, NULL));
  CHECK(cuCtxSynchronize());
  {
    float* y = (float*)malloc(n * sizeof(float));
    CHECK(cuMemcpyDtoH(y, y_dev, n * sizeof(float)));
    for (int i = 0; i < n; ++i) EXPECT_TRUE(y[i] == 2.0f * x[i] + (2.0f * x[i] + 1.0f));
    free(y);
  }
  CHECK(cuGraphNodeSetEnabled(exec, memset_node, 1));
  CHECK(cuGraphNodeSetEnabled(exec, k2, 1));
  CHECK(cuGraphLaunch(exec, NULL));
  CHECK(cuCtxSynchronize());
  Expect(y_dev, x, n, 1, 1, 1, 0.0f);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGraphNodeSetEnabled(exec, empty, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGraphNodeGetEnabled(exec, empty, &enabled));
  /* The graph's own node, not the executable graph's, stays as it was. */
  CHECK(cuGraphExecDestroy(exec));
  CHECK(cuGraphInstantiate(&exec, graph, 0));
  CHECK(cuGraphNodeGetEnabled(exec, k2, &enabled));
  EXPECT_TRUE(enabled == 1);
  CHECK(cuGraphExecDestroy(exec));
  CHECK(cuGraphDestroy(graph));

  /* cuLaunchKernelEx: hints accepted, a completion event recorded after the kernel. */
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuMemsetD32(y_dev, 0x3f800000u, (size_t)n));
  CUlaunchAttribute attrs[4];
  memset(attrs, 0, sizeof(attrs));
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attrs[0].value.programmaticStreamSerializationAllowed = 1;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
  attrs[1].value.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
  attrs[2].id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
  attrs[2].value.launchCompletionEvent.event = done;
  attrs[3].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  attrs[3].value.priority = 0;
  CUlaunchConfig config;
  memset(&config, 0, sizeof(config));
  config.gridDimX = (unsigned)((n + 127) / 128);
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 128;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = stream;
  config.attrs = attrs;
  config.numAttrs = 4;
  CHECK(cuLaunchKernelEx(&config, saxpy, args1, NULL));
  CHECK(cuEventSynchronize(done));
  Expect(y_dev, x, n, 1, 1, 0, 0.0f);
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attrs[0].value.clusterDim.x = 2;
  attrs[0].value.clusterDim.y = 1;
  attrs[0].value.clusterDim.z = 1;
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED, cuLaunchKernelEx(&config, saxpy, args1, NULL));

  /* Capture of the per-thread default stream: a kernel captured and replayed there; the legacy
   * stream used meanwhile joins it implicitly, which CUDA refuses and which ends the capture. */
  CHECK(cuMemsetD32(y_dev, 0x3f800000u, (size_t)n));
  CHECK(cuStreamBeginCapture(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  CHECK(cuStreamIsCapturing(CU_STREAM_PER_THREAD, &capturing));
  EXPECT_TRUE(capturing == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK(cuLaunchKernel(saxpy, (unsigned)((n + 127) / 128), 1, 1, 128, 1, 1, 0,
                       CU_STREAM_PER_THREAD, args1, NULL));
  CUgraph per_thread;
  CHECK(cuStreamEndCapture(CU_STREAM_PER_THREAD, &per_thread));
  size_t captured_nodes = 0;
  CHECK(cuGraphGetNodes(per_thread, NULL, &captured_nodes));
  EXPECT_TRUE(captured_nodes == 1);
  Expect(y_dev, x, n, 1, 0, 0, 0.0f); /* captured, not run */
  CHECK(cuGraphInstantiate(&exec, per_thread, 0));
  CHECK(cuGraphLaunch(exec, CU_STREAM_PER_THREAD));
  CHECK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  Expect(y_dev, x, n, 1, 1, 0, 0.0f);
  CHECK(cuGraphExecDestroy(exec));
  CHECK(cuGraphDestroy(per_thread));
  CHECK(cuStreamBeginCapture(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_MODE_RELAXED));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuMemsetD32Async(y_dev, 0, 4, NULL));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                cuStreamEndCapture(CU_STREAM_PER_THREAD, &per_thread));

  /* Batch memory operation nodes: built by hand and captured from cuStreamWriteValue32 and
   * cuStreamWaitValue32; the values are written at each launch, not at capture. */
  CUdeviceptr flags_dev;
  CHECK(cuMemAlloc(&flags_dev, 16));
  CHECK(cuMemsetD32(flags_dev, 0, 4));
  CUstreamBatchMemOpParams ops[3];
  memset(ops, 0, sizeof(ops));
  ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[0].writeValue.address = flags_dev;
  ops[0].writeValue.value = 41;
  ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
  ops[1].waitValue.address = flags_dev;
  ops[1].waitValue.value = 41;
  ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
  ops[2].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  ops[2].writeValue.address = flags_dev + 8;
  ops[2].writeValue.value64 = 0x1122334455667788ull;
  CUDA_BATCH_MEM_OP_NODE_PARAMS batch;
  memset(&batch, 0, sizeof(batch));
  batch.ctx = context;
  batch.count = 3;
  batch.paramArray = ops;
  CUgraph memops;
  CHECK(cuGraphCreate(&memops, 0));
  CUgraphNode batch_node;
  CHECK(cuGraphAddBatchMemOpNode(&batch_node, memops, NULL, 0, &batch));
  CUDA_BATCH_MEM_OP_NODE_PARAMS batch_back;
  CHECK(cuGraphBatchMemOpNodeGetParams(batch_node, &batch_back));
  EXPECT_TRUE(batch_back.count == 3 && batch_back.paramArray[2].writeValue.value64 == 0x1122334455667788ull);
  CHECK(cuGraphInstantiate(&exec, memops, 0));
  unsigned int words[4] = {0, 0, 0, 0};
  CHECK(cuMemcpyDtoH(words, flags_dev, 16));
  EXPECT_TRUE(words[0] == 0); /* instantiated, not run */
  CHECK(cuGraphLaunch(exec, stream));
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH(words, flags_dev, 16));
  EXPECT_TRUE(words[0] == 41 && words[2] == 0x55667788u && words[3] == 0x11223344u);
  ops[0].writeValue.value = 42; /* through the executable graph: the wait then holds at once */
  ops[1].waitValue.value = 42;
  CHECK(cuGraphExecBatchMemOpNodeSetParams(exec, batch_node, &batch));
  CHECK(cuGraphLaunch(exec, stream));
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH(words, flags_dev, 4));
  EXPECT_TRUE(words[0] == 42);
  CHECK(cuGraphExecDestroy(exec));
  CHECK(cuGraphDestroy(memops));
  ops[0].writeValue.address = flags_dev + 2; /* misaligned */
  CHECK(cuGraphCreate(&memops, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGraphAddBatchMemOpNode(&batch_node, memops, NULL, 0, &batch));
  CHECK(cuGraphDestroy(memops));
  /* Captured: nothing is written until the graph runs. */
  CHECK(cuMemsetD32(flags_dev, 0, 4));
  CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(cuStreamWriteValue32(stream, flags_dev + 4, 7, 0));
  CHECK(cuStreamWaitValue32(stream, flags_dev + 4, 7, CU_STREAM_WAIT_VALUE_GEQ));
  CHECK(cuStreamEndCapture(stream, &memops));
  CHECK(cuMemcpyDtoH(words, flags_dev, 16));
  EXPECT_TRUE(words[1] == 0);
  size_t memop_nodes = 0;
  CHECK(cuGraphGetNodes(memops, NULL, &memop_nodes));
  EXPECT_TRUE(memop_nodes == 2);
  CHECK(cuGraphInstantiate(&exec, memops, 0));
  CHECK(cuGraphLaunch(exec, stream));
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH(words, flags_dev, 16));
  EXPECT_TRUE(words[1] == 7);
  CHECK(cuGraphExecDestroy(exec));
  CHECK(cuGraphDestroy(memops));
  CHECK(cuMemFree(flags_dev));

  CHECK(cuStreamDestroy(stream));
  CHECK(cuEventDestroy(done));
  CHECK(cuMemFree(x_dev));
  CHECK(cuMemFree(y_dev));
  CHECK(cuCtxDestroy(context));
  free(x);
  free(ptx);
  printf("graph nodes: enable/disable, kernel node attributes and launch attributes correct\n");
  return 0;
}
