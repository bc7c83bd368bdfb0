// Kernels for conditional graph nodes: they set a node's condition from the device.
#include <cuda_runtime.h>

// The while loop's body: counts down and keeps the loop going while the count is positive.
extern "C" __global__ void count_down(cudaGraphConditionalHandle handle, int* counter) {
  if (threadIdx.x == 0) {
    const int left = --*counter;
    cudaGraphSetConditional(handle, left > 0 ? 1u : 0u);
  }
}

extern "C" __global__ void set_condition(cudaGraphConditionalHandle handle, unsigned int value) {
  if (threadIdx.x == 0) cudaGraphSetConditional(handle, value);
}

extern "C" __global__ void add(int* x, int amount) { x[threadIdx.x] += amount; }
