/* Graph memory nodes: an explicit graph that allocates a buffer, fills and computes in it, copies
 * the result out and frees it, launched several times with new inputs; the same built by
 * capturing cuMemAllocAsync and cuMemFreeAsync; the node parameters, the graph memory
 * attributes (memory held while a graph, clone or executable graph holds the node, none after),
 * memory left allocated by a launch and freed with cuMemFree, and the errors. Results are
 * checked against a CPU reference. */
#include "common.h"

#include <stdint.h>

static cuuint64_t GraphMem(CUdevice device, CUgraphMem_attribute attr) {
  cuuint64_t value = 0;
  CHECK(cuDeviceGetGraphMemAttribute(device, attr, &value));
  return value;
}

static CUDA_KERNEL_NODE_PARAMS SaxpyNode(CUfunction saxpy, void** args, int n) {
  CUDA_KERNEL_NODE_PARAMS k;
  memset(&k, 0, sizeof(k));
  k.func = saxpy;
  k.gridDimX = (unsigned)((n + 255) / 256);
  k.gridDimY = k.gridDimZ = 1;
  k.blockDimX = 256;
  k.blockDimY = k.blockDimZ = 1;
  k.kernelParams = args;
  return k;
}

static void Check(const float* out, const float* x, int n, float a, const char* what) {
  for (int i = 0; i < n; ++i) {
    const float want = a * x[i] + 1.0f;
    if (out[i] != want) {
      fprintf(stderr, "%s: out[%d] = %f, expected %f\n", what, i, out[i], want);
      exit(1);
    }
  }
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

  const int n = 50000;
  const size_t bytes = n * sizeof(float);
  float* x = (float*)malloc(bytes);
  float* out = (float*)malloc(bytes);
  CUdeviceptr x_dev, out_dev;
  CHECK(cuMemAlloc(&x_dev, bytes));
  CHECK(cuMemAlloc(&out_dev, bytes));
  EXPECT_TRUE(GraphMem(device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);

  /* alloc -> memset 1.0 -> saxpy (a = 2) -> copy out -> free. */
  CUgraph graph;
  CHECK(cuGraphCreate(&graph, 0));
  CUDA_MEM_ALLOC_NODE_PARAMS alloc;
  memset(&alloc, 0, sizeof(alloc));
  alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  alloc.poolProps.location.id = device;
  alloc.bytesize = bytes;
  CUgraphNode alloc_node, memset_node, kernel_node, copy_node, free_node;
  CHECK(cuGraphAddMemAllocNode(&alloc_node, graph, NULL, 0, &alloc));
  const CUdeviceptr tmp = alloc.dptr;
  EXPECT_TRUE(tmp != 0);
  EXPECT_TRUE(GraphMem(device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == bytes);
  CUDA_MEMSET_NODE_PARAMS fill;
  memset(&fill, 0, sizeof(fill));
  fill.dst = tmp;
  fill.value = 0x3f800000u; /* 1.0f */
  fill.elementSize = 4;
  fill.width = (size_t)n;
  fill.height = 1;
  CHECK(cuGraphAddMemsetNode(&memset_node, graph, &alloc_node, 1, &fill, context));
  int count = n;
  float a = 2.0f;
  CUdeviceptr y = tmp;
  void* args[] = {&count, &a, &x_dev, &y};
  CUDA_KERNEL_NODE_PARAMS k = SaxpyNode(saxpy, args, n);
  CHECK(cuGraphAddKernelNode(&kernel_node, graph, &memset_node, 1, &k));
  CUDA_MEMCPY3D copy;
  memset(&copy, 0, sizeof(copy));
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = tmp;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = out_dev;
  copy.WidthInBytes = bytes;
  copy.Height = 1;
  copy.Depth = 1;
  CHECK(cuGraphAddMemcpyNode(&copy_node, graph, &kernel_node, 1, &copy, context));
  CHECK(cuGraphAddMemFreeNode(&free_node, graph, &copy_node, 1, tmp));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGraphAddMemFreeNode(&free_node, graph, NULL, 0, x_dev));

  CUDA_MEM_ALLOC_NODE_PARAMS got;
  CHECK(cuGraphMemAllocNodeGetParams(alloc_node, &got));
  EXPECT_TRUE(got.dptr == tmp && got.bytesize == bytes && got.poolProps.location.id == device);
  CUdeviceptr freed = 0;
  CHECK(cuGraphMemFreeNodeGetParams(free_node, &freed));
  EXPECT_TRUE(freed == tmp);
  CUgraphNodeType type;
  CHECK(cuGraphNodeGetType(free_node, &type));
  EXPECT_TRUE(type == CU_GRAPH_NODE_TYPE_MEM_FREE);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGraphMemFreeNodeGetParams(alloc_node, &freed));

  CUgraphExec exec;
  CHECK(cuGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 3; ++launch) {
    for (int i = 0; i < n; ++i) x[i] = (float)((i * 7 + launch) % 100) * 0.25f;
    CHECK(cuMemcpyHtoD(x_dev, x, bytes));
    CHECK(cuGraphLaunch(exec, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(out, out_dev, bytes));
    Check(out, x, n, 2.0f, "explicit graph");
  }
  /* A clone holds the memory too: it goes with the last holder. */
  CUgraph clone;
  CHECK(cuGraphClone(&clone, graph));
  CHECK(cuGraphDestroy(graph));
  CHECK(cuGraphExecDestroy(exec));
  EXPECT_TRUE(GraphMem(device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == bytes);
  CHECK(cuGraphDestroy(clone));
  EXPECT_TRUE(GraphMem(device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);
  EXPECT_TRUE(GraphMem(device, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) >= bytes);
  cuuint64_t zero = 0;
  CHECK(cuDeviceSetGraphMemAttribute(device, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero));
  EXPECT_TRUE(GraphMem(device, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) == 0);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuDeviceSetGraphMemAttribute(device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &zero));
  CHECK(cuDeviceGraphMemTrim(device));

  /* The same work captured from stream-ordered allocation (a = 3). */
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUdeviceptr captured = 0;
  CHECK(cuMemAllocAsync(&captured, bytes, stream));
  EXPECT_TRUE(captured != 0);
  CHECK(cuMemsetD32Async(captured, 0x3f800000u, (size_t)n, stream));
  a = 3.0f;
  y = captured;
  CHECK(cuLaunchKernel(saxpy, (unsigned)((n + 255) / 256), 1, 1, 256, 1, 1, 0, stream, args,
                       NULL));
  CHECK(cuMemcpyDtoDAsync(out_dev, captured, bytes, stream));
  /* Memory the graph does not own cannot be freed by it. */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(x_dev, stream));
  CHECK(cuMemFreeAsync(captured, stream));
  CUgraph captured_graph;
  CHECK(cuStreamEndCapture(stream, &captured_graph));
  size_t nodes = 0;
  CHECK(cuGraphGetNodes(captured_graph, NULL, &nodes));
  EXPECT_TRUE(nodes == 5);
  CUgraphNode list[5];
  CHECK(cuGraphGetNodes(captured_graph, list, &nodes));
  int allocs = 0, frees = 0;
  for (size_t i = 0; i < nodes; ++i) {
    CHECK(cuGraphNodeGetType(list[i], &type));
    allocs += type == CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    frees += type == CU_GRAPH_NODE_TYPE_MEM_FREE;
  }
  EXPECT_TRUE(allocs == 1 && frees == 1);
  CHECK(cuGraphInstantiate(&exec, captured_graph, 0));
  for (int launch = 0; launch < 2; ++launch) {
    for (int i = 0; i < n; ++i) x[i] = (float)((i * 3 + launch) % 50) * 0.5f;
    CHECK(cuMemcpyHtoDAsync(x_dev, x, bytes, stream));
    CHECK(cuGraphLaunch(exec, stream));
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemcpyDtoH(out, out_dev, bytes));
    Check(out, x, n, 3.0f, "captured graph");
  }
  CHECK(cuGraphExecDestroy(exec));
  CHECK(cuGraphDestroy(captured_graph));
  EXPECT_TRUE(GraphMem(device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);

  /* A graph that leaves its memory allocated: the program frees it after the launch, and
   * the next launch has it again. */
  CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUdeviceptr kept = 0;
  CHECK(cuMemAllocAsync(&kept, bytes, stream));
  CHECK(cuMemsetD32Async(kept, 0x40000000u, (size_t)n, stream)); /* 2.0f */
  CHECK(cuStreamEndCapture(stream, &captured_graph));
  CHECK(cuGraphInstantiate(&exec, captured_graph, 0));
  for (int launch = 0; launch < 2; ++launch) {
    CHECK(cuGraphLaunch(exec, stream));
    CHECK(cuStreamSynchronize(stream));
    float first = 0;
    CHECK(cuMemcpyDtoH(&first, kept, sizeof(first)));
    EXPECT_TRUE(first == 2.0f);
    CHECK(cuMemFree(kept));
  }
  CHECK(cuGraphExecDestroy(exec));
  CHECK(cuGraphDestroy(captured_graph));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFree(kept)); /* gone with its graph */

  /* Bad parameters. */
  CHECK(cuGraphCreate(&graph, 0));
  alloc.bytesize = 0;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGraphAddMemAllocNode(&alloc_node, graph, NULL, 0, &alloc));
  alloc.bytesize = bytes;
  alloc.poolProps.location.id = 99;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGraphAddMemAllocNode(&alloc_node, graph, NULL, 0, &alloc));
  alloc.poolProps.location.id = device;
  alloc.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGraphAddMemAllocNode(&alloc_node, graph, NULL, 0, &alloc));
  CHECK(cuGraphDestroy(graph));
  EXPECT_TRUE(GraphMem(device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);

  CHECK(cuStreamDestroy(stream));
  CHECK(cuMemFree(x_dev));
  CHECK(cuMemFree(out_dev));
  CHECK(cuCtxDestroy(context));
  free(x);
  free(out);
  free(ptx);
  printf("graph memory: allocation and free nodes, capture, attributes and lifetimes correct\n");
  return 0;
}
