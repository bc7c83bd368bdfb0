// Asynchronous copies and half-precision math (sm_80+): the pipeline primitives
// (__pipeline_memcpy_async / commit / wait_prior), cuda::memcpy_async with cuda::barrier,
// cooperative_groups::memcpy_async with cg::wait, a double-buffered cp.async tiled SGEMM, and
// __half2 arithmetic with h2exp / tanh. Compiled for compute_80 and compute_90 only.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>

#include <cuda/barrier>

namespace cg = cooperative_groups;

// A __shared__ cuda::barrier has a constructor nvcc does not run; init() sets it up, as the
// libcu++ documentation prescribes.
#pragma nv_diag_suppress static_var_with_dynamic_init

// out[i] = 2 * in[i] + block index, staged through shared memory in chunks of blockDim.x
// floats with the pipeline primitives, two stages in flight.
extern "C" __global__ void pipeline_scale(const float* in, float* out, int chunks) {
  extern __shared__ float stage[];  // 2 * blockDim.x
  const int t = threadIdx.x, nb = blockDim.x;
  const float* base = in + static_cast<size_t>(blockIdx.x) * chunks * nb;
  float* obase = out + static_cast<size_t>(blockIdx.x) * chunks * nb;
  __pipeline_memcpy_async(&stage[t], &base[t], sizeof(float));
  __pipeline_commit();
  for (int c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) {
      __pipeline_memcpy_async(&stage[((c + 1) & 1) * nb + t], &base[(c + 1) * nb + t],
                              sizeof(float));
    }
    __pipeline_commit();
    __pipeline_wait_prior(1);
    obase[c * nb + t] = 2.0f * stage[(c & 1) * nb + t] + blockIdx.x;
  }
}

// Each block copies n ints to shared memory with cuda::memcpy_async tracked by a block-scope
// cuda::barrier, waits, then writes the reversed tile plus the thread count that arrived.
extern "C" __global__ void barrier_reverse(const int* in, int* out, int n) {
  extern __shared__ int tile[];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  const int* src = in + static_cast<size_t>(blockIdx.x) * n;
  cuda::memcpy_async(block, tile, src, sizeof(int) * n, bar);
  bar.arrive_and_wait();
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    out[static_cast<size_t>(blockIdx.x) * n + i] = tile[n - 1 - i] + static_cast<int>(block.size());
}

// A 16-byte aligned cuda::memcpy_async: on sm_90 a bulk copy (cp.async.bulk with
// mbarrier::complete_tx, its expect_tx issued after the copy), on sm_80 cp.async. Each block
// sums its n4 float4s into out[blockIdx.x].
extern "C" __global__ void bulk_sum(const float4* in, float* out, int n4) {
  extern __shared__ float4 tile4[];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  const float4* src = in + static_cast<size_t>(blockIdx.x) * n4;
  cuda::memcpy_async(block, tile4, src, cuda::aligned_size_t<16>(sizeof(float4) * n4), bar);
  bar.arrive_and_wait();
  float acc = 0;
  for (int i = threadIdx.x; i < n4; i += blockDim.x)
    acc += tile4[i].x + tile4[i].y + tile4[i].z + tile4[i].w;
  atomicAdd(&out[blockIdx.x], acc);
}

// cooperative_groups::memcpy_async of two arrays into shared memory, cg::wait, then
// out[i] = a[i] * b[i] within each block's slice.
extern "C" __global__ void cg_multiply(const float* a, const float* b, float* out, int n) {
  extern __shared__ float sm[];
  float* sa = sm;
  float* sb = sm + n;
  auto block = cg::this_thread_block();
  const size_t off = static_cast<size_t>(blockIdx.x) * n;
  cg::memcpy_async(block, sa, a + off, sizeof(float) * n);
  cg::memcpy_async(block, sb, b + off, sizeof(float) * n);
  cg::wait(block);
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[off + i] = sa[i] * sb[i];
}

// Warp 1 produces (writes shared memory, arrives), warp 0 consumes with arrive_and_wait: warp 0
// runs first and waits on an mbarrier phase only warp 1 can complete. Runs `rounds` phases;
// out[r * 32 + lane] = the value warp 0 read in round r.
extern "C" __global__ void mbarrier_handoff(int* out, int rounds) {
  __shared__ cuda::barrier<cuda::thread_scope_block> full;
  __shared__ int box[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (threadIdx.x == 0) init(&full, 64);
  __syncthreads();
  for (int r = 0; r < rounds; ++r) {
    if (warp == 1) {
      box[lane] = r * 100 + lane;
      (void)full.arrive();
    } else {
      full.arrive_and_wait();
      out[r * 32 + lane] = box[lane];
    }
    __syncthreads();  // the consumer read box before the producer's next round
  }
}

// C = A * B for n x n row-major matrices (n a multiple of 16), 16x16 tiles double-buffered
// in shared memory with cp.async: the next tiles load while the current ones multiply.
extern "C" __global__ void sgemm_cp_async(const float* A, const float* B, float* C, int n) {
  constexpr int T = 16;
  __shared__ float As[2][T][T];
  __shared__ float Bs[2][T][T];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  const int tiles = n / T;
  auto load = [&](int k, int buf) {
    __pipeline_memcpy_async(&As[buf][ty][tx], &A[row * n + k * T + tx], sizeof(float));
    __pipeline_memcpy_async(&Bs[buf][ty][tx], &B[(k * T + ty) * n + col], sizeof(float));
    __pipeline_commit();
  };
  float acc = 0.0f;
  load(0, 0);
  for (int k = 0; k < tiles; ++k) {
    const int cur = k & 1;
    if (k + 1 < tiles) {
      load(k + 1, cur ^ 1);
      __pipeline_wait_prior(1);
    } else {
      __pipeline_wait_prior(0);
    }
    __syncthreads();
    for (int j = 0; j < T; ++j) acc += As[cur][ty][j] * Bs[cur][j][tx];
    __syncthreads();
  }
  C[row * n + col] = acc;
}

// out[i] = fma(x, y, x + y) * x on half2 pairs, then h2exp and tanh of the pair.
extern "C" __global__ void half2_math(const __half2* x, const __half2* y, __half2* arith,
                                      __half2* ex, __half2* th, float* thf, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 a = x[i], b = y[i];
  arith[i] = __hmul2(__hfma2(a, b, __hadd2(a, b)), a);
  ex[i] = h2exp(a);
  th[i] = h2tanh(a);
  thf[i] = tanhf(__low2float(a));
}
