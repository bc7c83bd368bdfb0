// Shared helpers for the CUDA runtime test programs: what any cudart program would write to
// check its calls. Nothing here knows about pvgpu.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                      \
  do {                                                                                   \
    const cudaError_t check_error_ = (call);                                             \
    if (check_error_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%d): %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorName(check_error_), static_cast<int>(check_error_),       \
                   cudaGetErrorString(check_error_));                                    \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

// A call that must fail with `expected`, as cudart reports it.
#define EXPECT_ERROR(expected, call)                                                               \
  do {                                                                                             \
    const cudaError_t expect_error_ = (call);                                                      \
    if (expect_error_ != (expected)) {                                                             \
      std::fprintf(stderr, "%s:%d: %s returned %s (%d), expected %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorName(expect_error_), static_cast<int>(expect_error_),               \
                   cudaGetErrorName(expected));                                                    \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

#define EXPECT_TRUE(cond)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

// Compares n floats with a CPU reference; prints the first mismatch and exits non-zero.
inline void ExpectNear(const float* got, const float* want, size_t n, float tolerance,
                       const char* what) {
  for (size_t i = 0; i < n; ++i) {
    const float scale = std::fmax(1.f, std::fabs(want[i]));
    if (!(std::fabs(got[i] - want[i]) <= tolerance * scale)) {
      std::fprintf(stderr, "%s: element %zu is %.9g, the CPU reference says %.9g\n", what, i,
                   got[i], want[i]);
      std::exit(1);
    }
  }
}

// The kernel launch's own error (configuration), then the kernel's (execution).
#define CHECK_LAUNCH()              \
  do {                              \
    CHECK(cudaGetLastError());      \
    CHECK(cudaDeviceSynchronize()); \
  } while (0)
