// Streams and events as the CUDA samples' simpleStreams uses them: the work is cut into chunks,
// each chunk's copy in, kernel and copy out queued on its own stream from pinned memory so that
// chunks can overlap; events time the whole and order a dependency across two streams.
#include <vector>

#include "runtime_check.h"

__global__ void Polynomial(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float x = in[i];
    out[i] = (0.5f * x + 2.f) * x - 1.f;
  }
}

__global__ void AddInto(const float* from, float* to, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) to[i] += from[i];
}

float Reference(float x) { return (0.5f * x + 2.f) * x - 1.f; }

int main() {
  constexpr int kStreams = 4;
  const int chunk = 1 << 14;
  const int n = kStreams * chunk;
  float *host_in, *host_out;
  CHECK(cudaMallocHost(&host_in, n * sizeof(float)));
  CHECK(cudaMallocHost(&host_out, n * sizeof(float)));
  for (int i = 0; i < n; ++i) host_in[i] = static_cast<float>(i % 1000) * 0.01f;
  float *in, *out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  cudaStream_t streams[kStreams];
  for (auto& stream : streams) CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));

  CHECK(cudaEventRecord(start, 0));
  for (int s = 0; s < kStreams; ++s) {
    const size_t offset = size_t(s) * chunk;
    CHECK(cudaMemcpyAsync(in + offset, host_in + offset, chunk * sizeof(float),
                          cudaMemcpyHostToDevice, streams[s]));
    Polynomial<<<chunk / 256, 256, 0, streams[s]>>>(in + offset, out + offset, chunk);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(host_out + offset, out + offset, chunk * sizeof(float),
                          cudaMemcpyDeviceToHost, streams[s]));
  }
  for (auto& stream : streams) CHECK(cudaEventRecord(stop, stream));  // last one wins
  for (auto& stream : streams) CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaEventSynchronize(stop));
  float ms = -1.f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  EXPECT_TRUE(ms >= 0.f);
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) want[i] = Reference(host_in[i]);
  // The device may contract to fused multiply-adds where the host does not.
  ExpectNear(host_out, want.data(), n, 1e-6f, "chunked streams");
  EXPECT_TRUE(cudaStreamQuery(streams[0]) == cudaSuccess);
  EXPECT_TRUE(cudaEventQuery(stop) == cudaSuccess);

  // Across streams: stream 1 must see what stream 0 wrote before the event.
  cudaEvent_t written;
  CHECK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
  Polynomial<<<n / 256, 256, 0, streams[0]>>>(in, out, n);
  CHECK(cudaEventRecord(written, streams[0]));
  CHECK(cudaStreamWaitEvent(streams[1], written, 0));
  AddInto<<<n / 256, 256, 0, streams[1]>>>(out, in, n);  // in += out
  CHECK(cudaMemcpyAsync(host_out, in, n * sizeof(float), cudaMemcpyDeviceToHost, streams[1]));
  CHECK(cudaStreamSynchronize(streams[1]));
  for (int i = 0; i < n; ++i) want[i] = host_in[i] + Reference(host_in[i]);
  ExpectNear(host_out, want.data(), n, 1e-6f, "after the cross-stream wait");
  for (auto& stream : streams) CHECK(cudaStreamDestroy(stream));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaEventDestroy(written));
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  CHECK(cudaFreeHost(host_in));
  CHECK(cudaFreeHost(host_out));
  std::printf("%d streams x %d elements: ok, %.3f ms between the events\n", kStreams, chunk, ms);
  return 0;
}
