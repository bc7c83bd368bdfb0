// A module whose __device__ array (64 MiB) counts against the session's memory quota when
// the module is loaded.
__device__ unsigned char big_table[64u << 20];

extern "C" __global__ void touch(unsigned int* out) { out[0] = big_table[threadIdx.x]; }
