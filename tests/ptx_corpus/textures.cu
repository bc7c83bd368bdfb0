// Texture and surface objects as CUDA C++ writes them: tex2D<float> sampling and surf2Dwrite
// (src/ptx/texture_test.cc runs them on the engine).
#include <cuda_runtime.h>

extern "C" __global__ void write_image(cudaSurfaceObject_t s, int w, int h) {
  int x = threadIdx.x, y = blockIdx.x;
  if (x < w && y < h) surf2Dwrite(10.0f * x + y, s, x * 4, y);
}

extern "C" __global__ void sample_image(cudaTextureObject_t t, float* out, int w, int h) {
  int x = threadIdx.x, y = blockIdx.x;
  if (x < w && y < h) out[y * w + x] = tex2D<float>(t, x + 0.5f, y + 0.5f) + tex2D<float>(t, x + 1.0f, y + 0.5f);
}
