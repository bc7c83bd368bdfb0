// Cooperative kernels: grid-wide barriers (cooperative_groups' this_grid().sync(), which reads
// the driver's workspace address from %envreg1/%envreg2) and blocks that wait on each other, so
// every block of the grid must be resident at once. Launched cooperatively unless noted.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// data[i] = i; after a barrier data[i] += data[(i + 1) % n] (the neighbour may belong to another
// block); the first thread sums everything after a third barrier.
extern "C" __global__ void coop_neighbours(int* data, int n, long long* sum) {
  cg::grid_group grid = cg::this_grid();
  const int i = static_cast<int>(grid.thread_rank());
  if (i < n) data[i] = i;
  grid.sync();
  const int neighbour = i < n ? data[(i + 1) % n] : 0;
  grid.sync();
  if (i < n) data[i] += neighbour;
  grid.sync();
  if (i == 0) {
    long long total = 0;
    for (int j = 0; j < n; ++j) total += data[j];
    *sum = total;
  }
}

// A grid-wide reduction in phases: each block reduces a grid-stride slice into partial[block],
// then the partials are folded pairwise, one barrier per level, until partial[0] holds the sum.
extern "C" __global__ void coop_reduce(const int* in, int n, long long* partial, long long* out) {
  cg::grid_group grid = cg::this_grid();
  extern __shared__ long long s[];
  long long acc = 0;
  for (unsigned long long i = grid.thread_rank(); i < static_cast<unsigned long long>(n);
       i += grid.size())
    acc += in[i];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  const unsigned b = static_cast<unsigned>(grid.block_rank());
  const unsigned nb = static_cast<unsigned>(grid.num_blocks());
  if (threadIdx.x == 0) partial[b] = s[0];
  for (unsigned stride = 1; stride < nb; stride *= 2) {
    grid.sync();
    if (threadIdx.x == 0 && b % (2 * stride) == 0 && b + stride < nb)
      partial[b] += partial[b + stride];
  }
  grid.sync();
  if (grid.thread_rank() == 0) *out = partial[0];
}

// A 1-D integer stencil iterated `iters` times over a grid-stride loop, ping-ponging between two
// buffers with a barrier per iteration; the result ends in a when iters is even.
extern "C" __global__ void coop_stencil(unsigned* a, unsigned* b, int n, int iters) {
  cg::grid_group grid = cg::this_grid();
  for (int it = 0; it < iters; ++it) {
    const unsigned* src = (it & 1) ? b : a;
    unsigned* dst = (it & 1) ? a : b;
    for (unsigned long long i = grid.thread_rank(); i < static_cast<unsigned long long>(n);
         i += grid.size()) {
      const unsigned l = src[(i + n - 1) % n], c = src[i], r = src[(i + 1) % n];
      dst[i] = (l * 3u + c * 5u + (r ^ 0x9e37u)) % 1000003u;
    }
    grid.sync();
  }
}

// One iteration of coop_stencil as an ordinary kernel: the same work with a launch per step
// instead of a grid barrier (the benchmark's baseline).
extern "C" __global__ void stencil_step(const unsigned* src, unsigned* dst, int n) {
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x;
       i < static_cast<unsigned long long>(n); i += gridDim.x * blockDim.x) {
    const unsigned l = src[(i + n - 1) % n], c = src[i], r = src[(i + 1) % n];
    dst[i] = (l * 3u + c * 5u + (r ^ 0x9e37u)) % 1000003u;
  }
}

// What a thread learns about its grid: 8 values per thread at out[8 * rank].
extern "C" __global__ void coop_ranks(unsigned long long* out) {
  cg::grid_group grid = cg::this_grid();
  const unsigned long long r = grid.thread_rank();
  const dim3 bi = grid.block_index(), ti = grid.thread_index(), db = grid.dim_blocks();
  unsigned long long* o = out + 8 * r;
  o[0] = r;
  o[1] = grid.size();
  o[2] = grid.num_threads();
  o[3] = grid.block_rank();
  o[4] = grid.num_blocks();
  o[5] = grid.is_valid();
  o[6] = (static_cast<unsigned long long>(bi.x) << 40) | (static_cast<unsigned long long>(bi.y) << 20) | bi.z;
  o[7] = (static_cast<unsigned long long>(ti.x) << 40) | (static_cast<unsigned long long>(db.y) << 20) | db.z;
  grid.sync();  // a 2-D grid and 3-D blocks still find every block
}

// The grid workspace as the kernel sees it: its address (%envreg1:%envreg2) and, after one
// grid barrier, its two words (cooperative_groups' wsSize and barrier).
extern "C" __global__ void coop_workspace(unsigned long long* out) {
  unsigned hi, lo;
  asm("mov.u32 %0, %%envreg1;" : "=r"(hi));
  asm("mov.u32 %0, %%envreg2;" : "=r"(lo));
  cg::this_grid().sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const unsigned* ws = reinterpret_cast<const unsigned*>((static_cast<unsigned long long>(hi) << 32) | lo);
    out[0] = reinterpret_cast<unsigned long long>(ws);
    out[1] = ws[0];
    out[2] = ws[1];
  }
}

// Launched both ways: 1 in a cooperative launch, 0 in an ordinary one (no workspace).
extern "C" __global__ void coop_valid(int* out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = cg::this_grid().is_valid() ? 1 : 0;
}

// The split barrier: arrive, do independent work, then wait before reading others' results.
extern "C" __global__ void coop_split(int* data, int* other, int n) {
  cg::grid_group grid = cg::this_grid();
  const int i = static_cast<int>(grid.thread_rank());
  if (i < n) data[i] = 2 * i + 1;
  auto token = grid.barrier_arrive();
  if (i < n) other[i] = i * i;  // not read by anyone before the wait
  grid.barrier_wait(std::move(token));
  if (i < n) other[i] += data[n - 1 - i];
}

// Blocks in a chain without cooperative groups: block b waits (volatile spin) for block b + 1,
// so the first block cannot finish until the last has run.
extern "C" __global__ void coop_chain(volatile int* flags, int* order) {
  const unsigned b = blockIdx.x;
  if (threadIdx.x == 0) {
    if (b + 1 < gridDim.x) {
      while (flags[b + 1] == 0) {
      }
    }
    __threadfence();
    order[b] = atomicAdd(&order[gridDim.x], 1);
    flags[b] = 1;
  }
}

// A lock shared by the blocks (one thread each): atomicCAS spins until it is free, and the
// counter it guards is updated with plain loads and stores, so a missed exclusion loses counts.
extern "C" __global__ void coop_lock(int* lock, int* counter, int iters) {
  if (threadIdx.x != 0) return;
  for (int k = 0; k < iters; ++k) {
    while (atomicCAS(lock, 0, 1) != 0) {
    }
    __threadfence();
    const int v = *reinterpret_cast<volatile int*>(counter);
    *reinterpret_cast<volatile int*>(counter) = v + 1;
    __threadfence();
    atomicExch(lock, 0);
  }
}

// Faults in one block after a barrier while the others wait at the next one.
extern "C" __global__ void coop_fault(int* data, long long bad, unsigned bad_block) {
  cg::grid_group grid = cg::this_grid();
  data[grid.thread_rank()] = 1;
  grid.sync();
  if (blockIdx.x == bad_block && threadIdx.x == 0) data[bad] = 2;
  grid.sync();
  data[grid.thread_rank()] = 3;
}

// Never ends: every block waits at grid barriers for a flag nobody sets, counting the rounds.
extern "C" __global__ void coop_forever(volatile int* flag, unsigned* rounds) {
  cg::grid_group grid = cg::this_grid();
  while (*flag == 0) {
    grid.sync();
    if (grid.thread_rank() == 0) atomicAdd(rounds, 1u);
  }
}
