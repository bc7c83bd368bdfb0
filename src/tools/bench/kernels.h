// The PTX of bench/kernels/bench_kernels.cu, embedded at build time so that `pvgpu bench` needs
// no files beside the binary. Empty when the build had no nvcc.
#pragma once

namespace pvgpu::tools::bench {

extern const char kBenchKernelsPtx[];

// Kernel names as the .cu file declares them (extern "C", so unmangled).
inline constexpr char kEmptyKernel[] = "bench_empty";
inline constexpr char kNbodyKernel[] = "bench_nbody_step";
inline constexpr char kSgemmKernel[] = "bench_sgemm_nt";
inline constexpr char kWmmaTf32Kernel[] = "bench_wmma_tf32_nt";  // 16x16 tiles, one warp each
inline constexpr char kSgemmAsyncKernel[] = "bench_sgemm_nt_async";
inline constexpr char kSumKernel[] = "bench_sum";            // shared-memory tree
inline constexpr char kSumShflKernel[] = "bench_sum_shfl";    // warp shuffles

// Launch shapes the kernels are written for (NBODY_TILE, SGEMM_TILE, SUM_BLOCK in the .cu).
inline constexpr unsigned kNbodyBlock = 256;
inline constexpr unsigned kSgemmTile = 16;
inline constexpr unsigned kSumBlock = 256;

}  // namespace pvgpu::tools::bench
