/* One guest of the load test: ITERATIONS rounds of mixed allocations, copies, memsets and
 * kernel launches with every result checked, driven by SEED. It keeps a few allocations alive
 * across rounds (so frees interleave with allocations of other sizes) and prints
 * "done MILLISECONDS OPERATIONS" at the end, or "fail WHAT CODE" and exits 2.
 *
 *   load_guest PTX ITERATIONS SEED */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kLive = 8, kMaxWords = 1 << 14 };

static unsigned long long g_operations;

#define CHECK(call)                                             \
  do {                                                          \
    CUresult check_result = (call);                             \
    ++g_operations;                                             \
    if (check_result != CUDA_SUCCESS) {                         \
      printf("fail %s %d\n", #call, (int)check_result);         \
      exit(2);                                                  \
    }                                                           \
  } while (0)

static unsigned int Next(unsigned long long* state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned int)(*state >> 33);
}

static double NowMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: load_guest PTX ITERATIONS SEED\n");
    return 64;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int iterations = atoi(argv[2]);
  unsigned long long state = strtoull(argv[3], NULL, 0) | 1;
  FILE* f = fopen(argv[1], "rb");
  if (f == NULL) return 2;
  static char ptx[1 << 16];
  size_t n = fread(ptx, 1, sizeof(ptx) - 1, f);
  ptx[n] = 0;
  fclose(f);

  const double start = NowMs();
  CUdevice device;
  CUcontext ctx;
  CUmodule module;
  CUfunction axpi;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuCtxCreate(&ctx, NULL, 0, device));
  CHECK(cuModuleLoadData(&module, ptx));
  CHECK(cuModuleGetFunction(&axpi, module, "axpi"));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  unsigned int* x = malloc(kMaxWords * 4u);
  unsigned int* y = malloc(kMaxWords * 4u);
  CUdeviceptr live[kLive] = {0};
  unsigned int live_words[kLive] = {0};
  unsigned int live_value[kLive] = {0};
  for (int it = 0; it < iterations; ++it) {
    const unsigned int words = 1 + Next(&state) % kMaxWords;
    const unsigned int a = Next(&state);
    CUdeviceptr dx, dy;
    CHECK(cuMemAlloc(&dx, words * 4u));
    CHECK(cuMemAlloc(&dy, words * 4u));
    for (unsigned int i = 0; i < words; ++i) x[i] = Next(&state);
    if (it % 2 == 0) {
      CHECK(cuMemcpyHtoD(dx, x, words * 4u));
    } else {
      CHECK(cuMemcpyHtoDAsync(dx, x, words * 4u, stream));
    }
    void* params[] = {&dx, &dy, (void*)&a, (void*)&words};
    CHECK(cuLaunchKernel(axpi, (words + 127) / 128, 1, 1, 128, 1, 1, 0, it % 2 ? stream : NULL,
                         params, NULL));
    CHECK(cuMemcpyDtoH(y, dy, words * 4u));
    for (unsigned int i = 0; i < words; ++i) {
      if (y[i] != a * x[i] + i) {
        printf("fail result-mismatch-at-%u 0\n", i);
        return 2;
      }
    }
    /* Replace one long-lived allocation: a memset of a known value, checked when replaced. */
    const unsigned int slot = Next(&state) % kLive;
    if (live[slot] != 0) {
      CHECK(cuMemcpyDtoH(y, live[slot], live_words[slot] * 4u));
      for (unsigned int i = 0; i < live_words[slot]; ++i) {
        if (y[i] != live_value[slot]) {
          printf("fail live-data-changed 0\n");
          return 2;
        }
      }
      CHECK(cuMemFree(live[slot]));
    }
    live_words[slot] = 1 + Next(&state) % 4096;
    live_value[slot] = Next(&state);
    CHECK(cuMemAlloc(&live[slot], live_words[slot] * 4u));
    CHECK(cuMemsetD32(live[slot], live_value[slot], live_words[slot]));
    CHECK(cuMemcpyDtoD(dx, dy, words * 4u));
    CHECK(cuMemFree(dx));
    CHECK(cuMemFree(dy));
  }
  CHECK(cuCtxSynchronize());
  for (int i = 0; i < kLive; ++i) {
    if (live[i] != 0) CHECK(cuMemFree(live[i]));
  }
  CHECK(cuCtxDestroy(ctx));
  free(x);
  free(y);
  printf("done %.0f %llu\n", NowMs() - start, g_operations);
  return 0;
}
