// Kernels for the hostile-guest and load tests: ordinary work with checkable results, and
// kernels that misbehave in each way a guest's kernel can (fault, trap, assert, never end).
#include <assert.h>

// y[i] = a * x[i] + i: the result depends on every input, so a lost or stale copy shows.
extern "C" __global__ void axpi(const unsigned int* x, unsigned int* y, unsigned int a,
                                unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + i;
}

// Writes far outside any allocation: an illegal address on hardware and on the cpu adapter.
extern "C" __global__ void out_of_bounds(unsigned int* data) {
  data[threadIdx.x + (1u << 28)] = 1;
}

extern "C" __global__ void trap_kernel(unsigned int* data) {
  if (threadIdx.x == 0) asm volatile("trap;");
  data[threadIdx.x] = 1;
}

extern "C" __global__ void assert_kernel(unsigned int* data) {
  assert(data[threadIdx.x] == 12345u);
}

// Spins until *flag becomes non-zero, which nothing ever writes: a kernel that never ends.
extern "C" __global__ void spin_forever(volatile unsigned int* flag) {
  while (*flag == 0) {
  }
}
