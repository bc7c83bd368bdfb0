// Kernels of the compute-sharing tests and `pvgpu bench contention`.

// Busy work: every thread runs `iters` rounds of a linear congruential step; a grid of many
// blocks keeps every worker of the cpu adapter busy.
extern "C" __global__ void spin(unsigned int iters, unsigned int* out) {
  unsigned int v = threadIdx.x + blockIdx.x * blockDim.x;
  for (unsigned int i = 0; i < iters; ++i) v = v * 1664525u + 1013904223u;
  if (v == 0x9e3779b9u) out[1] = v;  // practically never: keeps the loop from being dropped
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(out, 1u);
}

// The smallest kernel: counts its launches.
extern "C" __global__ void tick(unsigned int* out) {
  if (threadIdx.x == 0) atomicAdd(out, 1u);
}
