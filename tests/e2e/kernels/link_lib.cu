// Relocatable device code for link_main.cu; `helper` is private to this module.
__device__ int offset = 17;

static __device__ __noinline__ int helper(int x) { return x * 3; }

__device__ int scale(int x) { return helper(x) + 1; }
