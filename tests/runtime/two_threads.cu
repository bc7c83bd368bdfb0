// Two host threads share the device (and so the primary context): each allocates, launches and
// copies on its own stream at the same time, and a buffer one thread fills is read by the
// other after an event both know about.
#include <thread>
#include <vector>

#include "runtime_check.h"

__global__ void Fill(int* data, int n, int value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = value + i;
}

__global__ void Double(int* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2;
}

void Worker(int id, int rounds, bool* ok) {
  const int n = 10000;
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  int* data;
  CHECK(cudaMalloc(&data, n * sizeof(int)));
  std::vector<int> host(n);
  *ok = true;
  for (int round = 0; round < rounds && *ok; ++round) {
    const int value = id * 1000000 + round * 1000;
    Fill<<<(n + 255) / 256, 256, 0, stream>>>(data, n, value);
    Double<<<(n + 255) / 256, 256, 0, stream>>>(data, n);
    CHECK(cudaMemcpyAsync(host.data(), data, n * sizeof(int), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    for (int i = 0; i < n; ++i) {
      if (host[i] != 2 * (value + i)) {
        std::fprintf(stderr, "thread %d round %d: element %d is %d, want %d\n", id, round, i,
                     host[i], 2 * (value + i));
        *ok = false;
        break;
      }
    }
  }
  CHECK(cudaFree(data));
  CHECK(cudaStreamDestroy(stream));
}

int main() {
  bool ok[2] = {false, false};
  std::thread a(Worker, 1, 20, &ok[0]);
  std::thread b(Worker, 2, 20, &ok[1]);
  a.join();
  b.join();
  EXPECT_TRUE(ok[0] && ok[1]);

  // A hand-over: the main thread fills, another thread waits for the event and doubles.
  const int n = 4096;
  int* shared;
  CHECK(cudaMalloc(&shared, n * sizeof(int)));
  cudaEvent_t filled;
  CHECK(cudaEventCreate(&filled));
  Fill<<<n / 256, 256>>>(shared, n, 5);
  CHECK(cudaEventRecord(filled, 0));
  std::thread consumer([&] {
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK(cudaStreamWaitEvent(stream, filled, 0));
    Double<<<n / 256, 256, 0, stream>>>(shared, n);
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaStreamDestroy(stream));
  });
  consumer.join();
  std::vector<int> host(n);
  CHECK(cudaMemcpy(host.data(), shared, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) EXPECT_TRUE(host[i] == 2 * (5 + i));
  int device_of_thread = -1;
  std::thread([&] { CHECK(cudaGetDevice(&device_of_thread)); }).join();
  EXPECT_TRUE(device_of_thread == 0);
  std::printf("two host threads sharing the device: ok\n");
  return 0;
}
