// Tensor-core kernels: a WMMA GEMM through <mma.h>, an inline-asm mma.sync m16n8k16 GEMM fed by
// ldmatrix, an integer mma.sync GEMM and a 2:4-sparse mma.sp GEMM (tests:
// src/ptx/corpus_tensor_test.cc). Compiled for compute_80 and compute_90 only:
// mma.sync.m16n8k16, mma.sp and ldmatrix need sm_80.
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>

using namespace nvcuda;

// C[M x N] (f32, row-major) = A[M x K] (f16, row-major) * B[K x N] (f16, column-major). One
// warp per 16x16 output tile; blockDim.x = 32, grid = (N / 16, M / 16).
extern "C" __global__ void wmma_gemm(const half* a, const half* b, float* c, int m, int n,
                                     int k) {
  int tile_m = blockIdx.y * 16, tile_n = blockIdx.x * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::load_matrix_sync(fa, a + tile_m * k + kk, k);
    wmma::load_matrix_sync(fb, b + tile_n * k + kk, k);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  // Element-wise work on the accumulator fragment (scale by 2) before the store.
  for (int i = 0; i < acc.num_elements; ++i) acc.x[i] *= 2.0f;
  wmma::store_matrix_sync(c + tile_m * n + tile_n, acc, n, wmma::mem_row_major);
}

// Same product with a 32x8 tile shape, f16 accumulators and a column-major C load/store:
// C (col-major, f16) = A (row-major) * B (row-major) + C.
extern "C" __global__ void wmma_gemm_m32n8(const half* a, const half* b, half* c, int m, int n,
                                           int k) {
  int tile_m = blockIdx.y * 32, tile_n = blockIdx.x * 8;
  wmma::fragment<wmma::matrix_a, 32, 8, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 32, 8, 16, half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 32, 8, 16, half> acc;
  wmma::load_matrix_sync(acc, c + tile_n * m + tile_m, m, wmma::mem_col_major);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::load_matrix_sync(fa, a + tile_m * k + kk, k);
    wmma::load_matrix_sync(fb, b + kk * n + tile_n, n);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + tile_n * m + tile_m, acc, m, wmma::mem_col_major);
}

// C[M x N] (f32, row-major) = A[M x K] (f16 row-major) * B[K x N] (f16, row-major) with
// mma.sync.m16n8k16: one warp per 16x8 tile, A and B staged in shared memory and read with
// ldmatrix (.x4 for A, .x2.trans for B). grid = (N / 8, M / 16), blockDim.x = 32.
extern "C" __global__ void mma_gemm(const half* a, const half* b, float* c, int m, int n, int k) {
  __shared__ __align__(16) half sa[16 * 16];
  __shared__ __align__(16) half sb[16 * 8];
  int lane = threadIdx.x, tile_m = blockIdx.y * 16, tile_n = blockIdx.x * 8;
  float d[4] = {0, 0, 0, 0};
  for (int kk = 0; kk < k; kk += 16) {
    for (int i = lane; i < 16 * 16; i += 32) sa[i] = a[(tile_m + i / 16) * k + kk + i % 16];
    for (int i = lane; i < 16 * 8; i += 32) sb[i] = b[(kk + i / 8) * n + tile_n + i % 8];
    __syncwarp();
    uint32_t ra[4], rb[2];
    // ldmatrix .x4: lanes 0-15 give rows 0-15 of columns 0-7, lanes 16-31 rows 0-15 of 8-15.
    uint32_t pa = static_cast<uint32_t>(
        __cvta_generic_to_shared(&sa[(lane % 16) * 16 + (lane / 16) * 8]));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(ra[0]), "=r"(ra[1]), "=r"(ra[2]), "=r"(ra[3])
                 : "r"(pa));
    // B is k-major in shared memory: .trans turns its 8x8 blocks into the column fragment.
    uint32_t pb = static_cast<uint32_t>(__cvta_generic_to_shared(&sb[(lane % 16) * 8]));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                 : "=r"(rb[0]), "=r"(rb[1])
                 : "r"(pb));
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
    __syncwarp();
  }
  int g = lane / 4, t = lane % 4;
  c[(tile_m + g) * n + tile_n + 2 * t] = d[0];
  c[(tile_m + g) * n + tile_n + 2 * t + 1] = d[1];
  c[(tile_m + g + 8) * n + tile_n + 2 * t] = d[2];
  c[(tile_m + g + 8) * n + tile_n + 2 * t + 1] = d[3];
}

// C[M x N] (s32, row-major) = A[M x K] (s8, row-major) * B[K x N] (u8, column-major) + bias,
// saturated, with mma.sync.m16n8k32.row.col.satfinite.s32.s8.u8.s32 reading fragments
// straight from global memory. grid = (N / 8, M / 16), blockDim.x = 32.
extern "C" __global__ void imma_gemm(const int8_t* a, const uint8_t* b, int* c, int bias, int m,
                                     int n, int k) {
  int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  int tile_m = blockIdx.y * 16, tile_n = blockIdx.x * 8;
  int d[4] = {bias, bias, bias, bias};
  for (int kk = 0; kk < k; kk += 32) {
    uint32_t ra[4], rb[2];
    for (int r = 0; r < 4; ++r) {
      int row = tile_m + g + (r % 2) * 8, col = kk + t * 4 + (r / 2) * 16;
      ra[r] = *reinterpret_cast<const uint32_t*>(&a[row * k + col]);
    }
    for (int r = 0; r < 2; ++r) {
      int col = tile_n + g, row = kk + t * 4 + r * 16;
      rb[r] = *reinterpret_cast<const uint32_t*>(&b[col * k + row]);
    }
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
  }
  c[(tile_m + g) * n + tile_n + 2 * t] = d[0];
  c[(tile_m + g) * n + tile_n + 2 * t + 1] = d[1];
  c[(tile_m + g + 8) * n + tile_n + 2 * t] = d[2];
  c[(tile_m + g + 8) * n + tile_n + 2 * t + 1] = d[3];
}

// C[M x N] (f32, row-major) = tf32(A[M x K]) * tf32(B[K x N]), both f32 row-major in memory,
// rounded to tf32 element by element in the fragments (__float_to_tf32: cvt.rna.tf32.f32).
// One warp per 16x16 tile, k in steps of 8; grid = (N / 16, M / 16).
extern "C" __global__ void wmma_tf32_gemm(const float* a, const float* b, float* c, int m,
                                          int n, int k) {
  int tile_m = blockIdx.y * 16, tile_n = blockIdx.x * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int kk = 0; kk < k; kk += 8) {
    wmma::load_matrix_sync(fa, a + tile_m * k + kk, k);
    wmma::load_matrix_sync(fb, b + kk * n + tile_n, n);
    for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + tile_m * n + tile_n, acc, n, wmma::mem_row_major);
}

// C[M x N] (f32, row-major) = A[M x K] (f16, 2:4 sparse) * B[K x N] (f16, column-major:
// b[j * k + kk]) with mma.sp m16n8k32. A comes compressed: `a` holds the two kept elements of
// every chunk of four (M x K/2, row-major) and `meta` their positions, one 16-bit word per 16
// columns of a row (M x K/16, row-major): chunk q of the word in bits 4q..4q+3, the position of
// the first kept element in the low two bits. One warp per 16x8 tile; grid = (N / 8, M / 16).
// Even k steps run mma.sp with selector 0, odd ones mma.sp::ordered_metadata with selector 1;
// the lane pair the selector does not name holds wrong positions, which must be ignored.
extern "C" __global__ void spmma_gemm(const half* a, const uint16_t* meta, const half* b, float* c,
                                      int m, int n, int k) {
  int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  int tile_m = blockIdx.y * 16, tile_n = blockIdx.x * 8;
  const uint32_t* kept = reinterpret_cast<const uint32_t*>(a);  // pairs of kept elements
  int kept_cols = k / 2, meta_cols = k / 16;
  float d[4] = {0, 0, 0, 0};
  for (int kk = 0, step = 0; kk < k; kk += 32, ++step) {
    // A: the kept 16 x 16 block, in the layout of a dense m16n8k16 A fragment.
    uint32_t ra[4], rb[4];
    for (int r = 0; r < 4; ++r) {
      int row = tile_m + g + (r % 2) * 8, col = kk / 2 + t * 2 + (r / 2) * 8;
      ra[r] = kept[(row * kept_cols + col) / 2];
    }
    for (int r = 0; r < 4; ++r) {
      int col = tile_n + g, row = kk + r * 8 + t * 2;
      rb[r] = *reinterpret_cast<const uint32_t*>(&b[col * k + row]);
    }
    // Metadata: lane 2 * selector + p of each group holds columns kk + 16p .. kk + 16p + 15 of
    // rows g (bits 0-15) and g + 8 (bits 16-31).
    int p = lane % 2, sel = step % 2;
    uint32_t e = meta[(tile_m + g) * meta_cols + kk / 16 + p] |
                 (uint32_t{meta[(tile_m + g + 8) * meta_cols + kk / 16 + p]} << 16);
    if ((lane % 4) / 2 != sel) e ^= 0x55555555u;
    if (sel == 0) {
      asm volatile(
          "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
          "{%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x0;"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
          : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(rb[2]),
            "r"(rb[3]), "r"(e));
    } else {
      asm volatile(
          "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 "
          "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x1;"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
          : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(rb[2]),
            "r"(rb[3]), "r"(e));
    }
  }
  c[(tile_m + g) * n + tile_n + 2 * t] = d[0];
  c[(tile_m + g) * n + tile_n + 2 * t + 1] = d[1];
  c[(tile_m + g + 8) * n + tile_n + 2 * t] = d[2];
  c[(tile_m + g + 8) * n + tile_n + 2 * t + 1] = d[3];
}
