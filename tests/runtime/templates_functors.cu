// C++ on the device: one kernel template instantiated for several element types and functors,
// and a templated shared-memory reduction whose block size is a template parameter. Each
// instantiation is its own mangled kernel in the module.
#include <cstdint>
#include <vector>

#include "runtime_check.h"

template <typename T>
struct Square {
  __host__ __device__ T operator()(T x) const { return x * x; }
};

template <typename T>
struct Affine {
  T scale, offset;
  __host__ __device__ T operator()(T x) const { return scale * x + offset; }
};

template <typename T, typename F>
__global__ void Transform(const T* in, T* out, int n, F f) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = f(in[i]);
  }
}

template <typename T, int kBlock>
__global__ void BlockSums(const T* in, T* sums, int n) {
  __shared__ T partial[kBlock];
  const int i = blockIdx.x * kBlock + threadIdx.x;
  partial[threadIdx.x] = i < n ? in[i] : T(0);
  __syncthreads();
  for (int stride = kBlock / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = partial[0];
}

template <typename T, typename F>
void CheckTransform(const char* what, F f, int n) {
  std::vector<T> in(n), out(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<T>(i % 97) - static_cast<T>(40);
  T *din, *dout;
  CHECK(cudaMalloc(&din, n * sizeof(T)));
  CHECK(cudaMalloc(&dout, n * sizeof(T)));
  CHECK(cudaMemcpy(din, in.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  Transform<<<8, 128>>>(din, dout, n, f);  // grid-stride: fewer threads than elements
  CHECK_LAUNCH();
  CHECK(cudaMemcpy(out.data(), dout, n * sizeof(T), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    if (out[i] != f(in[i])) {
      std::fprintf(stderr, "%s: element %d is %g, want %g\n", what, i, double(out[i]),
                   double(f(in[i])));
      std::exit(1);
    }
  }
  CHECK(cudaFree(din));
  CHECK(cudaFree(dout));
}

template <typename T, int kBlock>
void CheckBlockSums(int n) {
  std::vector<T> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<T>(i % 7);
  const int blocks = (n + kBlock - 1) / kBlock;
  T *din, *dsums;
  CHECK(cudaMalloc(&din, n * sizeof(T)));
  CHECK(cudaMalloc(&dsums, blocks * sizeof(T)));
  CHECK(cudaMemcpy(din, in.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  BlockSums<T, kBlock><<<blocks, kBlock>>>(din, dsums, n);
  CHECK_LAUNCH();
  std::vector<T> sums(blocks);
  CHECK(cudaMemcpy(sums.data(), dsums, blocks * sizeof(T), cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b) {
    T want = 0;
    for (int i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i) want += in[i];
    if (sums[b] != want) {
      std::fprintf(stderr, "block sum %d (block of %d): %g, want %g\n", b, kBlock, double(sums[b]),
                   double(want));
      std::exit(1);
    }
  }
  CHECK(cudaFree(din));
  CHECK(cudaFree(dsums));
}

int main() {
  CheckTransform<float>("square<float>", Square<float>{}, 5000);
  CheckTransform<double>("square<double>", Square<double>{}, 5000);
  CheckTransform<int>("affine<int>", Affine<int>{3, -7}, 5000);
  CheckTransform<int64_t>("affine<int64>", Affine<int64_t>{1ll << 33, 5}, 5000);
  CheckTransform<float>("affine<float>", Affine<float>{0.5f, 2.f}, 5000);
  CheckBlockSums<int, 64>(1000);
  CheckBlockSums<float, 128>(1000);
  CheckBlockSums<double, 256>(3000);
  std::printf("templates and functors: 5 transforms, 3 reductions: ok\n");
  return 0;
}
