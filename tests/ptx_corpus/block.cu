// Block-level kernels: barriers, shared memory, atomics, sgemm and nbody.

extern "C" __global__ void block_reduce(const float* in, float* out, int n) {
  extern __shared__ float s[];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) atomicAdd(out, s[0]);
}

extern "C" __global__ void sync_counts(const int* in, int* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int p = in[t] > 0;
  int c = __syncthreads_count(p);
  int a = __syncthreads_and(p);
  int o = __syncthreads_or(in[t] == 5);
  if (threadIdx.x == 0) {
    out[3 * blockIdx.x] = c;
    out[3 * blockIdx.x + 1] = a;
    out[3 * blockIdx.x + 2] = o;
  }
}

extern "C" __global__ void histogram(const unsigned char* data, int n, unsigned* bins) {
  __shared__ unsigned local[64];
  for (int k = threadIdx.x; k < 64; k += blockDim.x) local[k] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[data[i] & 63], 1u);
  __syncthreads();
  for (int k = threadIdx.x; k < 64; k += blockDim.x) atomicAdd(&bins[k], local[k]);
}

extern "C" __global__ void atomics_mix(int* counters, unsigned long long* wide, float* f, double* d) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  atomicMax(&counters[0], t);
  atomicMin(&counters[1], -t);
  atomicInc((unsigned*)&counters[2], 9u);
  atomicOr(&counters[3], 1 << (t & 31));
  atomicXor(&counters[4], t);
  atomicAnd(&counters[5], ~(1 << (t & 15)));
  int old;
  do {
    old = counters[6];
  } while (atomicCAS(&counters[6], old, old + 2) != old);
  atomicExch(&counters[7], 77);
  atomicAdd(&wide[0], (unsigned long long)t);
  atomicAdd(f, 0.5f);
  atomicAdd(d, 0.25);
  atomicSub(&counters[8], 3);
  atomicDec((unsigned*)&counters[9], 5u);
}

#define TILE 16
extern "C" __global__ void sgemm(int n, const float* A, const float* B, float* C) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += TILE) {
    As[threadIdx.y][threadIdx.x] = A[row * n + k0 + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(k0 + threadIdx.y) * n + col];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  C[row * n + col] = acc;
}

extern "C" __global__ void nbody(int n, const float4* pos, float3* acc_out) {
  extern __shared__ float4 sh[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 p = pos[i];
  float ax = 0, ay = 0, az = 0;
  for (int tile = 0; tile < n; tile += blockDim.x) {
    sh[threadIdx.x] = pos[tile + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < blockDim.x; ++j) {
      float4 q = sh[j];
      float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
      float r2 = dx * dx + dy * dy + dz * dz + 0.01f;
      float inv = rsqrtf(r2);
      float s = q.w * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    __syncthreads();
  }
  acc_out[i] = make_float3(ax, ay, az);
}

// Two-dimensional block with partial last warp.
extern "C" __global__ void thread_ids(unsigned* out) {
  unsigned t = ((blockIdx.y * gridDim.x + blockIdx.x) * blockDim.z + threadIdx.z) * blockDim.y * blockDim.x +
               threadIdx.y * blockDim.x + threadIdx.x;
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  out[2 * t] = threadIdx.x | (threadIdx.y << 8) | (threadIdx.z << 16) | (blockIdx.x << 24);
  out[2 * t + 1] = lane | (blockDim.x << 8) | (gridDim.y << 16);
}
