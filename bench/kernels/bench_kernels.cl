// The bench kernels of bench_kernels.cu, written again in OpenCL C for PoCL (OpenCL on the CPU,
// LLVM-based), the best-known way to run SIMT kernels on CPUs and the yardstick of the cpu
// adapter's compiling engine. Same names, same arguments, same algorithms, same launch shapes.

#define NBODY_TILE 256

__kernel void bench_nbody_step(__global const float4* pos, __global float4* vel,
                               __global float4* pos_out, int n, float dt, float softening2) {
  __local float4 tile[NBODY_TILE];
  const int lid = get_local_id(0);
  const int bdim = get_local_size(0);
  const int i = get_group_id(0) * bdim + lid;
  const float4 self = i < n ? pos[i] : (float4)(0.f, 0.f, 0.f, 0.f);
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int base = 0; base < n; base += bdim) {
    const int j = base + lid;
    tile[lid] = j < n ? pos[j] : (float4)(0.f, 0.f, 0.f, 0.f);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int count = min(bdim, n - base);
    for (int k = 0; k < count; ++k) {
      const float4 other = tile[k];
      const float dx = other.x - self.x;
      const float dy = other.y - self.y;
      const float dz = other.z - self.z;
      const float dist2 = dx * dx + dy * dy + dz * dz + softening2;
      const float inv = rsqrt(dist2);
      const float s = other.w * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (i < n) {
    float4 v = vel[i];
    v.x += ax * dt;
    v.y += ay * dt;
    v.z += az * dt;
    vel[i] = v;
    pos_out[i] = (float4)(self.x + v.x * dt, self.y + v.y * dt, self.z + v.z * dt, self.w);
  }
}

#define SGEMM_TILE 16

// C = A * B^T, row-major n x n, 16x16 tiles through local memory.
__kernel void bench_sgemm_nt(__global const float* a, __global const float* b, __global float* c,
                             int n) {
  __local float a_tile[SGEMM_TILE][SGEMM_TILE];
  __local float b_tile[SGEMM_TILE][SGEMM_TILE + 1];
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int row = get_group_id(1) * SGEMM_TILE + ty;
  const int col = get_group_id(0) * SGEMM_TILE + tx;
  const int b_row = get_group_id(0) * SGEMM_TILE + ty;
  float sum = 0.f;
  for (int k0 = 0; k0 < n; k0 += SGEMM_TILE) {
    const int k = k0 + tx;
    a_tile[ty][tx] = (row < n && k < n) ? a[row * n + k] : 0.f;
    b_tile[ty][tx] = (b_row < n && k < n) ? b[b_row * n + k] : 0.f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < SGEMM_TILE; ++kk) sum += a_tile[ty][kk] * b_tile[tx][kk];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < n && col < n) c[row * n + col] = sum;
}

#define SUM_BLOCK 256

__kernel void bench_sum(__global const float* x, int n, __global float* partial) {
  __local float scratch[SUM_BLOCK];
  const int lid = get_local_id(0);
  float sum = 0.f;
  for (int i = get_global_id(0); i < n; i += get_global_size(0)) sum += x[i];
  scratch[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int stride = get_local_size(0) / 2; stride > 0; stride /= 2) {
    if (lid < stride) scratch[lid] += scratch[lid + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[get_group_id(0)] = scratch[0];
}
