// Kernels of textures_drv: texture fetches through texture objects and surface reads and
// writes through surface objects, as CUDA C++ writes them (tex2D<T>(obj, ...), surf2Dwrite).
#include <cuda_runtime.h>

extern "C" __global__ void fetch1d(cudaTextureObject_t t, const float* x, float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1D<float4>(t, x[i]);
}

extern "C" __global__ void fetch2d(cudaTextureObject_t t, const float2* c, float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<float4>(t, c[i].x, c[i].y);
}

// One channel, as most image code reads it.
extern "C" __global__ void fetch2d_float(cudaTextureObject_t t, const float2* c, float* out,
                                         int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<float>(t, c[i].x, c[i].y);
}

extern "C" __global__ void fetch2d_int(cudaTextureObject_t t, const float2* c, int4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<int4>(t, c[i].x, c[i].y);
}

extern "C" __global__ void fetch3d(cudaTextureObject_t t, const float4* c, float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex3D<float4>(t, c[i].x, c[i].y, c[i].z);
}

extern "C" __global__ void fetch_layered(cudaTextureObject_t t, const float4* c, float4* out,
                                        int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2DLayered<float4>(t, c[i].x, c[i].y, (int)c[i].w);
}

extern "C" __global__ void fetch_cube(cudaTextureObject_t t, const float4* c, float4* out,
                                     int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = texCubemap<float4>(t, c[i].x, c[i].y, c[i].z);
}

extern "C" __global__ void fetch_lod(cudaTextureObject_t t, const float4* c, float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2DLod<float4>(t, c[i].x, c[i].y, c[i].z);
}

extern "C" __global__ void fetch_grad(cudaTextureObject_t t, const float4* c, float4* out,
                                      int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = tex2DGrad<float4>(t, c[i].x, c[i].y, make_float2(c[i].z, 0), make_float2(0, c[i].w));
  }
}

extern "C" __global__ void gather(cudaTextureObject_t t, const float2* c, float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2Dgather<float4>(t, c[i].x, c[i].y, 1);
}

extern "C" __global__ void fetch_linear(cudaTextureObject_t t, const int* idx, float4* out,
                                        int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float4>(t, idx[i]);
}

// out = 2 * in + 1, element by element, through surfaces.
extern "C" __global__ void surface_scale(cudaSurfaceObject_t in, cudaSurfaceObject_t out, int w,
                                         int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) {
    float v;
    surf2Dread(&v, in, x * 4, y);
    surf2Dwrite(2.0f * v + 1.0f, out, x * 4, y);
  }
}

// Writes and reads at (x, y) under each boundary mode; out gets what the reads saw.
extern "C" __global__ void surface_bounds(cudaSurfaceObject_t s, int x, int y, float* out) {
  surf2Dwrite(7.0f, s, x * 4, y, cudaBoundaryModeZero);
  float v = -1;
  surf2Dread(&v, s, x * 4, y, cudaBoundaryModeZero);
  out[0] = v;
  surf2Dwrite(9.0f, s, x * 4, y, cudaBoundaryModeClamp);
  surf2Dread(&v, s, x * 4, y, cudaBoundaryModeClamp);
  out[1] = v;
}

extern "C" __global__ void surface_trap(cudaSurfaceObject_t s, int x, int y) {
  surf2Dwrite(1.0f, s, x * 4, y);
}

// A layered surface and a 3D one: byte-addressed x, uchar4 elements.
extern "C" __global__ void surface_layers(cudaSurfaceObject_t s, int w, int h, int layers) {
  int x = threadIdx.x, y = blockIdx.x, l = blockIdx.y;
  if (x < w && y < h && l < layers) {
    surf2DLayeredwrite(make_uchar4(x, y, l, 255), s, x * 4, y, l);
  }
}

extern "C" __global__ void surface_3d(cudaSurfaceObject_t s, int w, int h, int d) {
  int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
  if (x < w && y < h && z < d) {
    uchar4 v;
    surf3Dread(&v, s, x * 4, y, z);
    surf3Dwrite(make_uchar4(v.x + 1, v.y + 2, v.z + 3, v.w + 4), s, x * 4, y, z);
  }
}
