// CUDA graphs as a cudart program uses them (the CUDA samples' simpleCudaGraphs, PyTorch's CUDA
// graphs): a step of kernels, copies and a host callback captured from a stream with a fork and
// a join, instantiated once and replayed many times; a parameter changed with
// cudaGraphExecKernelNodeSetParams; a graph built by hand; a captured temporary buffer
// (cudaMallocAsync and cudaFreeAsync inside the capture become memory nodes); the capture
// status queries; the error of a synchronization inside capture. Results are checked against a
// CPU reference.
#include <vector>

#include "runtime_check.h"

__global__ void Axpb(float* x, float a, float b, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = a * x[i] + b;
}

__global__ void Add(const float* a, const float* b, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

static int g_callbacks = 0;
static void CUDART_CB Callback(void*) { ++g_callbacks; }

int main() {
  const int n = 1 << 12;
  const int threads = 256, blocks = n / threads;
  std::vector<float> host(n), out(n);
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i % 100);
  float *x, *y, *z;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMalloc(&z, n * sizeof(float)));
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaStreamCreate(&s2));
  cudaEvent_t fork, join;
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));

  // The step: x = host; fork: y = x * 2 + 1 on s2; x = x * 3 on s1; join; z = x + y; back.
  cudaStreamCaptureStatus status;
  CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CHECK(cudaStreamIsCapturing(s1, &status));
  if (status != cudaStreamCaptureStatusActive) return std::fprintf(stderr, "not capturing\n"), 1;
  CHECK(cudaMemcpyAsync(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice, s1));
  CHECK(cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice, s1));
  CHECK(cudaEventRecord(fork, s1));
  CHECK(cudaStreamWaitEvent(s2, fork, 0));
  Axpb<<<blocks, threads, 0, s2>>>(y, 2.f, 1.f, n);
  CHECK(cudaEventRecord(join, s2));
  Axpb<<<blocks, threads, 0, s1>>>(x, 3.f, 0.f, n);
  CHECK(cudaStreamWaitEvent(s1, join, 0));
  Add<<<blocks, threads, 0, s1>>>(x, y, z, n);
  CHECK(cudaLaunchHostFunc(s1, Callback, nullptr));
  CHECK(cudaMemcpyAsync(out.data(), z, n * sizeof(float), cudaMemcpyDeviceToHost, s1));
  cudaGraph_t graph;
  CHECK(cudaStreamEndCapture(s1, &graph));
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  if (nodes != 7) return std::fprintf(stderr, "captured %zu nodes, expected 7\n", nodes), 1;
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int step = 0; step < 20; ++step) {
    for (int i = 0; i < n; ++i) host[i] = static_cast<float>((i + step) % 100);
    std::fill(out.begin(), out.end(), -1.f);
    CHECK(cudaGraphLaunch(exec, s1));
    CHECK(cudaStreamSynchronize(s1));
    for (int i = 0; i < n; ++i) {
      const float v = host[i];
      const float expected = 3.f * v + (2.f * v + 1.f);
      if (std::fabs(out[i] - expected) > 1e-4f) {
        std::fprintf(stderr, "step %d: out[%d] = %f, expected %f\n", step, i, out[i], expected);
        return 1;
      }
    }
  }
  if (g_callbacks != 20) return std::fprintf(stderr, "%d callbacks\n", g_callbacks), 1;

  // A graph built by hand whose kernel parameter is changed in the executable graph.
  cudaGraph_t manual;
  CHECK(cudaGraphCreate(&manual, 0));
  float a = 2.f, b = 5.f;
  int count = n;
  void* args[] = {&x, &a, &b, &count};
  cudaKernelNodeParams kp = {};
  kp.func = reinterpret_cast<void*>(Axpb);
  kp.gridDim = dim3(blocks);
  kp.blockDim = dim3(threads);
  kp.kernelParams = args;
  cudaGraphNode_t memset_node, kernel_node;
  cudaMemsetParams ms = {};
  ms.dst = x;
  ms.value = 0;
  ms.elementSize = 4;
  ms.width = n;
  ms.height = 1;
  CHECK(cudaGraphAddMemsetNode(&memset_node, manual, nullptr, 0, &ms));
  CHECK(cudaGraphAddKernelNode(&kernel_node, manual, &memset_node, 1, &kp));
  cudaGraphExec_t manual_exec;
  CHECK(cudaGraphInstantiate(&manual_exec, manual, 0));
  CHECK(cudaGraphLaunch(manual_exec, s1));
  CHECK(cudaMemcpyAsync(out.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost, s1));
  CHECK(cudaStreamSynchronize(s1));
  for (int i = 0; i < n; ++i) {
    if (out[i] != 5.f) return std::fprintf(stderr, "manual graph: %f\n", out[i]), 1;
  }
  b = 9.f;
  CHECK(cudaGraphExecKernelNodeSetParams(manual_exec, kernel_node, &kp));
  CHECK(cudaGraphLaunch(manual_exec, s1));
  CHECK(cudaMemcpy(out.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    if (out[i] != 9.f) return std::fprintf(stderr, "after the exec update: %f\n", out[i]), 1;
  }

  // A temporary from the stream-ordered allocator inside the capture: the graph owns it.
  CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  float* scratch = nullptr;
  CHECK(cudaMallocAsync(&scratch, n * sizeof(float), s1));
  CHECK(cudaMemcpyAsync(scratch, y, n * sizeof(float), cudaMemcpyDeviceToDevice, s1));
  Axpb<<<blocks, threads, 0, s1>>>(scratch, 2.f, 0.f, n);
  Add<<<blocks, threads, 0, s1>>>(scratch, x, z, n);
  CHECK(cudaFreeAsync(scratch, s1));
  cudaGraph_t with_memory;
  CHECK(cudaStreamEndCapture(s1, &with_memory));
  cudaGraphExec_t with_memory_exec;
  CHECK(cudaGraphInstantiate(&with_memory_exec, with_memory, 0));
  for (int replay = 0; replay < 3; ++replay) {
    CHECK(cudaGraphLaunch(with_memory_exec, s1));
  }
  CHECK(cudaMemcpyAsync(out.data(), z, n * sizeof(float), cudaMemcpyDeviceToHost, s1));
  CHECK(cudaStreamSynchronize(s1));
  std::vector<float> ys(n), xs(n);
  CHECK(cudaMemcpy(ys.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(xs.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    if (out[i] != 2.f * ys[i] + xs[i]) {
      return std::fprintf(stderr, "graph with memory: %f at %d\n", out[i], i), 1;
    }
  }
  unsigned long long graph_memory = 0;  // the attribute is a uint64_t
  CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &graph_memory));
  if (graph_memory != n * sizeof(float)) {
    return std::fprintf(stderr, "graph memory in use: %llu\n", graph_memory), 1;
  }
  CHECK(cudaGraphExecDestroy(with_memory_exec));
  CHECK(cudaGraphDestroy(with_memory));
  CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &graph_memory));
  if (graph_memory != 0) return std::fprintf(stderr, "graph memory kept: %llu\n", graph_memory), 1;

  // Synchronizing a capturing stream is an error and invalidates the capture.
  CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  Axpb<<<blocks, threads, 0, s1>>>(x, 1.f, 1.f, n);
  EXPECT_ERROR(cudaErrorStreamCaptureUnsupported, cudaStreamSynchronize(s1));
  cudaGraph_t broken = nullptr;
  EXPECT_ERROR(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s1, &broken));
  if (broken != nullptr) return std::fprintf(stderr, "an invalidated capture gave a graph\n"), 1;
  (void)cudaGetLastError();

  CHECK(cudaGraphExecDestroy(manual_exec));
  CHECK(cudaGraphDestroy(manual));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaEventDestroy(fork));
  CHECK(cudaEventDestroy(join));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(z));
  std::printf("graphs: ok\n");
  return 0;
}
