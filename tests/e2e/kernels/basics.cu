// Kernels for the driver-API end-to-end tests.

__device__ int counter_table[4] = {10, 20, 30, 40};

// Writes each thread's global index, using 3D grids and blocks.
extern "C" __global__ void write_index(unsigned int* out) {
  unsigned int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned int threads = blockDim.x * blockDim.y * blockDim.z;
  unsigned int thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  out[block * threads + thread] = block * threads + thread;
}

// Adds the module global table to the input.
extern "C" __global__ void add_table(int* data) {
  int i = threadIdx.x;
  if (i < 4) data[i] += counter_table[i];
}

// Reads far past the end of its buffer: an illegal address.
extern "C" __global__ void out_of_bounds(int* data) { data[threadIdx.x + (1 << 26)] = 1; }

// Mixed parameter sizes and alignments, for the kernelParams and `extra` forms.
extern "C" __global__ void mixed_params(char c, double d, short s, long long* out, int i) {
  out[0] = c;
  out[1] = static_cast<long long>(d * 2.0);
  out[2] = s;
  out[3] = i;
}

// Reverses each block's part of `data` through dynamic shared memory (blockDim.x ints).
extern "C" __global__ void reverse_block(int* data) {
  extern __shared__ int tile[];
  const unsigned int t = threadIdx.x;
  const unsigned int base = blockIdx.x * blockDim.x;
  tile[t] = data[base + t];
  __syncthreads();
  data[base + t] = tile[blockDim.x - 1 - t];
}
