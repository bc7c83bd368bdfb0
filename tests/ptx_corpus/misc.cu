// printf, assert, faults, calls, recursion, local memory, globals and constants.
#include <cassert>
#include <cstdio>

__device__ int g_table[8] = {3, 1, 4, 1, 5, 9, 2, 6};
__constant__ float c_scale[2] = {0.5f, 4.0f};
__device__ int g_counter;
__device__ int* g_ptr = &g_table[2];

extern "C" __global__ void printer(int x, float f, const char* s) {
  if (threadIdx.x < 2)
    printf("t%d x=%d f=%.3f e=%e s=%s u=%u hex=%x c=%c ll=%lld p=%%\n", threadIdx.x, x, f, (double)f, s,
           (unsigned)x, x, 'A' + threadIdx.x, (long long)x * 1000000000LL);
}

extern "C" __global__ void asserter(int limit) {
  assert(threadIdx.x < limit);
}

extern "C" __global__ void trapper(int when) {
  if (threadIdx.x == when) __trap();
}

extern "C" __global__ void spin(volatile int* flag) {
  while (*flag == 0) {
  }
}

extern "C" __global__ void oob_store(int* p, long long offset) { p[offset + threadIdx.x] = 1; }

extern "C" __global__ void misaligned_load(const char* p, int* out) {
  *out = *(const int*)(p + 1);
}

struct Pair {
  int a;
  float b;
  double c;
};

__device__ __noinline__ Pair make_pair(int x, float y) {
  Pair p;
  p.a = x * 2;
  p.b = y + 1.0f;
  p.c = x * 0.5;
  return p;
}

__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

// Not tail recursive (xor then add), so nvcc keeps the recursion.
__device__ __noinline__ int deep(int n) {
  if (n == 0) return 0;
  int r = deep(n - 1);
  return (r ^ n) + 1;
}

extern "C" __global__ void calls(const int* in, int* out) {
  int t = threadIdx.x;
  Pair p = make_pair(in[t], (float)t);
  out[4 * t] = p.a;
  out[4 * t + 1] = __float_as_int(p.b);
  out[4 * t + 2] = (int)(p.c * 4.0);
  out[4 * t + 3] = fib(in[t] & 15);
}

extern "C" __global__ void deep_recursion(int n, int* out) { out[threadIdx.x] = deep(n); }

extern "C" __global__ void local_array(const int* idx, int* out) {
  int buf[32];
  int t = threadIdx.x;
  for (int k = 0; k < 32; ++k) buf[k] = k * k + t;
  out[t] = buf[idx[t] & 31] + buf[(idx[t] + 7) & 31];
}

extern "C" __global__ void globals(float* out) {
  int t = threadIdx.x;
  atomicAdd(&g_counter, 1);
  out[t] = g_table[t & 7] * c_scale[t & 1] + g_ptr[t & 1];
}

// Virtual calls (indirect call through a vtable with a .callprototype) and __dp4a.
struct Shape {
  __device__ virtual int area(int s) const { return s * s; }
};
struct Tri : Shape {
  __device__ int area(int s) const override { return s * s / 2; }
};

extern "C" __global__ void virtual_calls(const int* in, int* out) {
  int t = threadIdx.x;
  Shape sq;
  Tri tr;
  const Shape* s = (in[t] & 1) ? static_cast<const Shape*>(&tr) : &sq;
  out[2 * t] = s->area(in[t]);
  out[2 * t + 1] = __dp4a(in[t], 0x01FF02FE, 7);
}

// Thread block clusters through cooperative groups (sm_90): launched without a cluster
// attribute, every block is a cluster of one, so the cluster is the block: sync() is a block
// barrier, the rank is 0 and the rank-0 shared memory is the block's own.
#if __CUDA_ARCH__ >= 900
#include <cooperative_groups.h>
extern "C" __global__ void cluster_of_one(const int* in, int* out) {
  namespace cg = cooperative_groups;
  __shared__ int part[64];
  cg::cluster_group cluster = cg::this_cluster();
  part[threadIdx.x] = in[blockIdx.x * 64 + threadIdx.x];
  cluster.sync();
  const int* mine = cluster.map_shared_rank(part, 0);
  int sum = 0;
  for (int i = 0; i < 64; ++i) sum += mine[(i + threadIdx.x) % 64];
  cluster.sync();
  out[blockIdx.x * 64 + threadIdx.x] = sum;
  if (threadIdx.x == 0) {
    out[gridDim.x * 64 + blockIdx.x * 3] = static_cast<int>(cluster.block_rank());
    out[gridDim.x * 64 + blockIdx.x * 3 + 1] = static_cast<int>(cluster.num_blocks());
    out[gridDim.x * 64 + blockIdx.x * 3 + 2] = static_cast<int>(cluster.block_index().x);
  }
}
#endif
