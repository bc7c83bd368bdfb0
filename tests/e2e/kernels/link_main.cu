// Relocatable device code: calls a function and reads a variable defined in link_lib.cu.
extern __device__ int scale(int x);
extern __device__ int offset;

extern "C" __global__ void linked_kernel(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = scale(i) + offset;
}
