// Kernels for the cooperative-launch end-to-end test: grid-wide barriers (cooperative_groups'
// this_grid().sync()) that only work if every block of the grid is resident at once.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// `rounds` steps of a 1-D integer stencil over the whole grid, ping-ponging between a and b,
// one grid barrier per step: each step reads neighbours written by other blocks in the step
// before. Before the first step every block counts itself in `arrived`; after the first
// barrier each block records what it saw, which is the grid size only if no block passed the
// barrier before every block had arrived.
extern "C" __global__ void stencil_rounds(unsigned* a, unsigned* b, int n, int rounds,
                                          unsigned* arrived, unsigned* seen) {
  cg::grid_group grid = cg::this_grid();
  const unsigned long long block =
      blockIdx.x + static_cast<unsigned long long>(gridDim.x) * blockIdx.y;
  if (threadIdx.x == 0) atomicAdd(arrived, 1u);
  grid.sync();
  if (threadIdx.x == 0) seen[block] = atomicAdd(arrived, 0u);
  for (int r = 0; r < rounds; ++r) {
    const unsigned* in = (r % 2 == 0) ? a : b;
    unsigned* out = (r % 2 == 0) ? b : a;
    for (unsigned long long i = grid.thread_rank(); i < static_cast<unsigned long long>(n);
         i += grid.size()) {
      const unsigned left = in[(i + n - 1) % n];
      const unsigned right = in[(i + 1) % n];
      out[i] = left * 3u + in[i] * 5u + right * 7u + static_cast<unsigned>(r);
    }
    grid.sync();
  }
}
