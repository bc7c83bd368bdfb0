// Kernels for the graph tests (graph_drv.c) and the graph benchmark (pvgpu bench graph).
extern "C" __global__ void add_value(int n, int value, int* data) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += value;
}

extern "C" __global__ void scale_by(int n, int factor, int* data) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

// data[i] = a[i] + b[i]: joins two branches.
extern "C" __global__ void sum_into(int n, const int* a, const int* b, int* data) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = a[i] + b[i];
}

extern "C" __global__ void empty_kernel() {}
