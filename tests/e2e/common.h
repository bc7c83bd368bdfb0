/* Shared helpers for the end-to-end driver-API programs: plain C, as an application would be. */
#ifndef PVGPU_TESTS_E2E_COMMON_H_
#define PVGPU_TESTS_E2E_COMMON_H_

#include <cuda.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read_file.h"

#define CHECK(call)                                                                          \
  do {                                                                                       \
    CUresult check_result_ = (call);                                                         \
    if (check_result_ != CUDA_SUCCESS) {                                                     \
      const char* check_name_ = "?";                                                         \
      cuGetErrorName(check_result_, &check_name_);                                           \
      fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call, check_name_, \
              (int)check_result_);                                                           \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

#define EXPECT_RESULT(expected, call)                                                          \
  do {                                                                                         \
    CUresult expect_result_ = (call);                                                          \
    if (expect_result_ != (expected)) {                                                        \
      const char* got_ = "?";                                                                  \
      const char* want_ = "?";                                                                 \
      cuGetErrorName(expect_result_, &got_);                                                   \
      cuGetErrorName((expected), &want_);                                                      \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, #call, got_, \
              want_);                                                                          \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

#define EXPECT_TRUE(cond)                                                 \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

/* Single-precision results within 1e-5, relative and absolute (texture filtering). */
__attribute__((unused)) static int Near(float got, float want) {
  return fabsf(got - want) <= 1e-5f + 1e-5f * fabsf(want);
}

#define EXPECT_NEAR(got, want)                                                                \
  do {                                                                                        \
    float g_ = (got), w_ = (want);                                                            \
    if (!Near(g_, w_)) {                                                                      \
      fprintf(stderr, "%s:%d: %s = %.7g, expected %.7g\n", __FILE__, __LINE__, #got, g_, w_); \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

/* NAME in the directory that holds the running executable; the path stays valid until the
 * next call. */
__attribute__((unused)) static char* SiblingPath(const char* name) {
  static char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) exit(1);
  path[n] = '\0';
  char* slash = strrchr(path, '/');
  snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path), "%s", name);
  return path;
}

/* Reads NAME.ptx from the directory that holds the running executable. */
__attribute__((unused)) static char* ReadPtx(const char* name) {
  char file[NAME_MAX + 1];
  snprintf(file, sizeof(file), "%s.ptx", name);
  return ReadTextFile(SiblingPath(file));
}

#endif /* PVGPU_TESTS_E2E_COMMON_H_ */
