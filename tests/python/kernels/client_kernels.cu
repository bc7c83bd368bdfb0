// Kernels the pycuda and CuPy tests load as PTX (nvcc -ptx at build time): pycuda through
// module_from_file / module_from_buffer, CuPy through RawModule(path=...). extern "C" keeps the
// names unmangled, as both clients look them up by name.

// A device global and a constant the tests write from the host (cuModuleGetGlobal) before a
// launch reads them.
__device__ float table[16];
__constant__ float coeffs[4];

extern "C" {

__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// One partial sum per block, through dynamic shared memory (blockDim.x floats, a power of two).
__global__ void block_sum(const float* x, float* partial, int n) {
  extern __shared__ float tile[];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  tile[tid] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) tile[tid] += tile[tid + s];
    __syncthreads();
  }
  if (tid == 0) partial[blockIdx.x] = tile[0];
}

// A 2-D grid over a row-major width x height matrix.
__global__ void scale2d(float* m, int width, int height, float s) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) m[y * width + x] *= s;
}

// out[i] = coeffs[0] + coeffs[1] * x[i] + table[i % 16]: reads both module globals.
__global__ void apply_globals(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = coeffs[0] + coeffs[1] * x[i] + table[i % 16];
}

// For the legacy parameter calls (cuParamSetv / cuParamSeti / cuParamSetf): a pointer at offset
// 0, an int at offset 8, a float at offset 12; 16 bytes in all.
__global__ void fill_affine(float* out, int n, float step) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = step * i;
}

}  // extern "C"
