// Kernels of `pvgpu bench`, compiled to PTX at build time and embedded into the pvgpu binary.
// The same PTX runs through the guest library (over the channel) and on an adapter called
// in-process, so any difference between the two is the cost of the channel alone.

#include <cuda_pipeline.h>
#include <mma.h>

// Measures launch overhead only: one warp that does nothing.
extern "C" __global__ void bench_empty() {}

// The tile each block stages through shared memory in bench_nbody_step; blockDim.x must not
// exceed it.
#define NBODY_TILE 256

// One step of all-pairs gravity with softening (the CUDA samples' `nbody` algorithm): every
// body accumulates the pull of every other body, then velocity and position advance by dt.
// Positions are float4 (x, y, z, mass). Reads `pos`, writes `pos_out`, so a step never sees
// half-updated positions.
extern "C" __global__ void bench_nbody_step(const float4* pos, float4* vel, float4* pos_out,
                                            int n, float dt, float softening2) {
  __shared__ float4 tile[NBODY_TILE];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float4 self = i < n ? pos[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int base = 0; base < n; base += blockDim.x) {
    const int j = base + threadIdx.x;
    // Padding bodies have zero mass and so pull with zero force.
    tile[threadIdx.x] = j < n ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
    const int count = min((int)blockDim.x, n - base);
    for (int k = 0; k < count; ++k) {
      const float4 other = tile[k];
      // 20 flops per interaction, as the samples count them.
      const float dx = other.x - self.x;
      const float dy = other.y - self.y;
      const float dz = other.z - self.z;
      const float dist2 = dx * dx + dy * dy + dz * dz + softening2;
      const float inv = rsqrtf(dist2);
      const float s = other.w * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    __syncthreads();
  }
  if (i < n) {
    float4 v = vel[i];
    v.x += ax * dt;
    v.y += ay * dt;
    v.z += az * dt;
    vel[i] = v;
    pos_out[i] = make_float4(self.x + v.x * dt, self.y + v.y * dt, self.z + v.z * dt, self.w);
  }
}

#define SGEMM_TILE 16

// C = A * B^T for row-major n x n matrices (B = A gives the article's A * A^T). Classic shared
// memory tiling: each 16x16 block stages one tile of A and one of B per step along k.
extern "C" __global__ void bench_sgemm_nt(const float* a, const float* b, float* c, int n) {
  __shared__ float a_tile[SGEMM_TILE][SGEMM_TILE];
  // One column of padding keeps the transposed reads of b_tile off a single bank.
  __shared__ float b_tile[SGEMM_TILE][SGEMM_TILE + 1];
  const int row = blockIdx.y * SGEMM_TILE + threadIdx.y;
  const int col = blockIdx.x * SGEMM_TILE + threadIdx.x;
  const int b_row = blockIdx.x * SGEMM_TILE + threadIdx.y;
  float sum = 0.f;
  for (int k0 = 0; k0 < n; k0 += SGEMM_TILE) {
    const int k = k0 + threadIdx.x;
    a_tile[threadIdx.y][threadIdx.x] = (row < n && k < n) ? a[row * n + k] : 0.f;
    b_tile[threadIdx.y][threadIdx.x] = (b_row < n && k < n) ? b[b_row * n + k] : 0.f;
    __syncthreads();
    for (int kk = 0; kk < SGEMM_TILE; ++kk) {
      sum += a_tile[threadIdx.y][kk] * b_tile[threadIdx.x][kk];
    }
    __syncthreads();
  }
  if (row < n && col < n) c[row * n + col] = sum;
}

// The same product on tensor cores: C = A * B^T with WMMA, tf32 inputs (each element rounded by
// __float_to_tf32) and f32 accumulation; one warp per 16x16 tile of C, n a multiple of 16,
// grid (n / 16, n / 16), block 32 threads.
extern "C" __global__ void bench_wmma_tf32_nt(const float* a, const float* b, float* c, int n) {
  using namespace nvcuda;
  const int tile_m = blockIdx.y * 16, tile_n = blockIdx.x * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::fill_fragment(acc, 0.f);
  for (int k = 0; k < n; k += 8) {
    wmma::load_matrix_sync(fa, a + tile_m * n + k, n);
    wmma::load_matrix_sync(fb, b + tile_n * n + k, n);  // B^T's column j is b's row j
    for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + tile_m * n + tile_n, acc, n, wmma::mem_row_major);
}

// bench_sgemm_nt with its tiles staged by asynchronous copies, double buffered: the copies of
// the next tile (cp.async, one per thread and matrix) are in flight while the current one is
// multiplied. n a multiple of SGEMM_TILE.
extern "C" __global__ void bench_sgemm_nt_async(const float* a, const float* b, float* c, int n) {
  __shared__ float a_tile[2][SGEMM_TILE][SGEMM_TILE];
  __shared__ float b_tile[2][SGEMM_TILE][SGEMM_TILE + 1];
  const int row = blockIdx.y * SGEMM_TILE + threadIdx.y;
  const int col = blockIdx.x * SGEMM_TILE + threadIdx.x;
  const int b_row = blockIdx.x * SGEMM_TILE + threadIdx.y;
  const int tiles = n / SGEMM_TILE;
  float sum = 0.f;
  __pipeline_memcpy_async(&a_tile[0][threadIdx.y][threadIdx.x], &a[row * n + threadIdx.x], 4);
  __pipeline_memcpy_async(&b_tile[0][threadIdx.y][threadIdx.x], &b[b_row * n + threadIdx.x], 4);
  __pipeline_commit();
  for (int t = 0; t < tiles; ++t) {
    const int cur = t & 1;
    if (t + 1 < tiles) {
      const int k = (t + 1) * SGEMM_TILE + threadIdx.x;
      __pipeline_memcpy_async(&a_tile[cur ^ 1][threadIdx.y][threadIdx.x], &a[row * n + k], 4);
      __pipeline_memcpy_async(&b_tile[cur ^ 1][threadIdx.y][threadIdx.x], &b[b_row * n + k], 4);
    }
    __pipeline_commit();
    __pipeline_wait_prior(1);  // the current tile's copies are done
    __syncthreads();
    for (int kk = 0; kk < SGEMM_TILE; ++kk) {
      sum += a_tile[cur][threadIdx.y][kk] * b_tile[cur][threadIdx.x][kk];
    }
    __syncthreads();
  }
  c[row * n + col] = sum;
}

#define SUM_BLOCK 256

// Partial sums of x[0..n): block b writes the sum of its grid-stride share to partial[b]; the
// host adds the few partials (as reduce_sum's last stage would).
extern "C" __global__ void bench_sum(const float* x, int n, float* partial) {
  __shared__ float scratch[SUM_BLOCK];
  float sum = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    sum += x[i];
  }
  scratch[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) scratch[threadIdx.x] += scratch[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = scratch[0];
}

// The same partial sums as bench_sum with warp shuffles: each warp adds its 32 values in
// registers, one shared word per warp, then the first warp adds those; one barrier in all
// (bench_sum has nine).
extern "C" __global__ void bench_sum_shfl(const float* x, int n, float* partial) {
  __shared__ float warp_sums[SUM_BLOCK / 32];
  float sum = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    sum += x[i];
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < blockDim.x / 32 ? warp_sums[lane] : 0.f;
    for (int offset = 16; offset > 0; offset /= 2) {
      sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (lane == 0) partial[blockIdx.x] = sum;
  }
}

// `pvgpu bench contention`: busy work for every thread (`iters` rounds of a linear
// congruential step), so that a grid of many blocks keeps every worker of the cpu adapter busy.
extern "C" __global__ void bench_spin(unsigned int iters, unsigned int* out) {
  unsigned int v = threadIdx.x + blockIdx.x * blockDim.x;
  for (unsigned int i = 0; i < iters; ++i) v = v * 1664525u + 1013904223u;
  if (v == 0x9e3779b9u) out[0] = v;  // practically never: keeps the loop from being dropped
}
