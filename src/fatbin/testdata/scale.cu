// The kernel in the fatbin tests: small, so that the checked-in fuzzing seeds stay small.
extern "C" __global__ void scale(float* data, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}
