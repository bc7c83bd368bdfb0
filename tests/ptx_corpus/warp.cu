// Warp-synchronous operations, including after divergent control flow.

// Each warp: lanes with odd id take a longer path, then the warp reduces with shuffles.
extern "C" __global__ void shfl_after_divergence(const int* in, int* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[t];
  if (threadIdx.x & 1) {
    for (int k = 0; k < (threadIdx.x & 7); ++k) v = v * 3 + k;
  } else {
    v = v - 7;
  }
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  int up = __shfl_up_sync(0xffffffffu, in[t], 3);
  int x = __shfl_xor_sync(0xffffffffu, in[t], 5);
  int idx = __shfl_sync(0xffffffffu, in[t], (threadIdx.x * 7) & 31);
  int seg = __shfl_sync(0xffffffffu, in[t], 2, 8);  // width 8 segments
  out[5 * t] = v;
  out[5 * t + 1] = up;
  out[5 * t + 2] = x;
  out[5 * t + 3] = idx;
  out[5 * t + 4] = seg;
}

extern "C" __global__ void votes(const int* in, unsigned* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[t];
  unsigned ballot = __ballot_sync(0xffffffffu, v > 0);
  int all = __all_sync(0xffffffffu, v > -1000);
  int any = __any_sync(0xffffffffu, v == 42);
  unsigned active = 0;
  if (v & 1) active = __activemask();
  unsigned match = __match_any_sync(0xffffffffu, v & 3);
  out[5 * t] = ballot;
  out[5 * t + 1] = all;
  out[5 * t + 2] = any;
  out[5 * t + 3] = active;
  out[5 * t + 4] = match;
}

extern "C" __global__ void redux_ops(const int* in, int* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[t];
#if __CUDA_ARCH__ >= 800
  out[3 * t] = __reduce_add_sync(0xffffffffu, v);
  out[3 * t + 1] = __reduce_max_sync(0xffffffffu, v);
  out[3 * t + 2] = (int)__reduce_or_sync(0xffffffffu, (unsigned)v);
#else
  int s = v, mx = v;
  unsigned o = v;
  for (int off = 16; off > 0; off >>= 1) {
    s += __shfl_xor_sync(0xffffffffu, s, off);
    mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    o |= __shfl_xor_sync(0xffffffffu, o, off);
  }
  out[3 * t] = s;
  out[3 * t + 1] = mx;
  out[3 * t + 2] = (int)o;
#endif
}
