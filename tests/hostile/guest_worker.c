/* Guest programs for the hostile, crash and quota tests: an ordinary driver-API program linked
 * with -lcuda (pvgpu's libcuda.so.1), driven by the test through its stdin and stdout.
 *
 *   guest_worker serve PTX          the bystander: holds a buffer with known contents, then for
 *                                   each "work" line on stdin runs one checked round (alloc,
 *                                   copy, launch, copy back, free) and re-reads the buffer;
 *                                   prints "ok N" or "fail WHAT CODE"
 *   guest_worker churn PTX          big copies and launches in a tight loop, forever; prints
 *                                   "running" once, and on the first error
 *                                   "error CODE MILLISECONDS" (how long the failing call took)
 *   guest_worker quota PTX BIG QUOTA [hold]
 *                                   every allocating call against a session quota of QUOTA
 *                                   bytes; prints "check NAME RESULT" lines, then "done"; with
 *                                   "hold", waits for a line on stdin once the quota is filled
 *   guest_worker kernel PTX KIND    launches a misbehaving kernel (fault, trap, assert, hang);
 *                                   prints "result CODE" ("launched" first for hang, then waits
 *                                   for "destroy" on stdin and prints "destroyed CODE")
 *   guest_worker wait PTX           a stream wait nothing will satisfy (cuStreamWaitValue32):
 *                                   prints "waiting", then on "destroy" destroys the context
 *                                   and prints "destroyed CODE MILLISECONDS"; or is killed
 *   guest_worker pool PTX QUOTA     stream-ordered pools against a session quota of QUOTA
 *                                   bytes: prints "filled BYTES" (what cuMemAllocAsync got),
 *                                   "check NAME RESULT" lines, then "done" */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static CUcontext g_ctx;
static CUmodule g_module;
static CUfunction g_axpi;

#define CHECK(call)                                                  \
  do {                                                               \
    CUresult check_result = (call);                                  \
    if (check_result != CUDA_SUCCESS) {                              \
      printf("fail %s %d\n", #call, (int)check_result);              \
      fflush(stdout);                                                \
      exit(2);                                                       \
    }                                                                \
  } while (0)

static double NowMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static char* ReadFile(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    printf("fail open %s\n", path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* text = malloc((size_t)size + 1);
  if (fread(text, 1, (size_t)size, f) != (size_t)size) exit(2);
  text[size] = 0;
  fclose(f);
  return text;
}

static void Setup(const char* ptx_path) {
  CUdevice device;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuCtxCreate(&g_ctx, NULL, 0, device));
  char* ptx = ReadFile(ptx_path);
  CHECK(cuModuleLoadData(&g_module, ptx));
  free(ptx);
  CHECK(cuModuleGetFunction(&g_axpi, g_module, "axpi"));
}

/* One checked round of y = a * x + i over n words; returns 0 or the first failing CUresult. */
static CUresult Round(unsigned int n, unsigned int a, unsigned int* x, unsigned int* y) {
  CUdeviceptr dx, dy;
  CUresult r;
  if ((r = cuMemAlloc(&dx, n * 4u)) != CUDA_SUCCESS) return r;
  if ((r = cuMemAlloc(&dy, n * 4u)) != CUDA_SUCCESS) return r;
  for (unsigned int i = 0; i < n; ++i) x[i] = i * 2654435761u + a;
  if ((r = cuMemcpyHtoD(dx, x, n * 4u)) != CUDA_SUCCESS) return r;
  void* params[] = {&dx, &dy, &a, &n};
  if ((r = cuLaunchKernel(g_axpi, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL)) !=
      CUDA_SUCCESS) {
    return r;
  }
  if ((r = cuMemcpyDtoD(dx, dy, n * 4u)) != CUDA_SUCCESS) return r;
  if ((r = cuMemcpyDtoH(y, dx, n * 4u)) != CUDA_SUCCESS) return r;
  for (unsigned int i = 0; i < n; ++i) {
    if (y[i] != a * x[i] + i) return CUDA_ERROR_UNKNOWN; /* wrong data: never expected */
  }
  if ((r = cuMemFree(dx)) != CUDA_SUCCESS) return r;
  return cuMemFree(dy);
}

static int Serve(void) {
  enum { kKeep = 1 << 18, kWork = 1 << 16 };
  unsigned int* keep = malloc(kKeep * 4u);
  unsigned int* back = malloc(kKeep * 4u);
  unsigned int* x = malloc(kWork * 4u);
  unsigned int* y = malloc(kWork * 4u);
  for (unsigned int i = 0; i < kKeep; ++i) keep[i] = i ^ 0x5a5a5a5au;
  CUdeviceptr kept;
  CHECK(cuMemAlloc(&kept, kKeep * 4u));
  CHECK(cuMemcpyHtoD(kept, keep, kKeep * 4u));
  printf("ready\n");
  fflush(stdout);
  char line[64];
  unsigned int rounds = 0;
  while (fgets(line, sizeof(line), stdin) != NULL) {
    CUresult r = Round(kWork, rounds + 3, x, y);
    if (r != CUDA_SUCCESS) {
      printf("fail round %d\n", (int)r);
    } else if ((r = cuMemcpyDtoH(back, kept, kKeep * 4u)) != CUDA_SUCCESS) {
      printf("fail readback %d\n", (int)r);
    } else if (memcmp(back, keep, kKeep * 4u) != 0) {
      printf("fail kept-data-changed 0\n");
    } else {
      printf("ok %u\n", ++rounds);
    }
    fflush(stdout);
  }
  free(keep);
  free(back);
  free(x);
  free(y);
  return 0;
}

/* 16 MiB per buffer; the ThreadSanitizer build passes a smaller size (tests/hostile/
 * CMakeLists.txt): the same calls and kill points, at a size TSan's slowdown can afford. */
#ifndef PVGPU_HOSTILE_CHURN_WORDS
#define PVGPU_HOSTILE_CHURN_WORDS (4u << 20)
#endif

static int Churn(void) {
  enum { kWords = PVGPU_HOSTILE_CHURN_WORDS };
  unsigned int* x = malloc(kWords * 4u);
  unsigned int* y = malloc(kWords * 4u);
  /* Held for the guest's whole life, so that it holds device memory at every moment of the
   * loop, also between one round's frees and the next round's allocations. */
  CUdeviceptr anchor;
  CHECK(cuMemAlloc(&anchor, 1 << 16));
  for (unsigned int round = 0;; ++round) {
    const double start = NowMs();
    CUresult r = Round(kWords, round, x, y);
    if (r != CUDA_SUCCESS) {
      printf("error %d %.0f\n", (int)r, NowMs() - start);
      fflush(stdout);
      free(x);
      free(y);
      return 3;
    }
    if (round == 0) {
      printf("running\n");
      fflush(stdout);
    }
  }
}

static void Report(const char* name, CUresult result) {
  printf("check %s %d\n", name, (int)result);
  fflush(stdout);
}

static int Quota(const char* big_ptx_path, unsigned long long quota, int hold) {
  size_t free_bytes = 0, total_bytes = 0;
  CHECK(cuMemGetInfo(&free_bytes, &total_bytes));
  printf("meminfo %zu %zu\n", free_bytes, total_bytes);
  CUdeviceptr p;
  Report("alloc_over_quota", cuMemAlloc(&p, (size_t)quota + 1));
  /* Fill the quota in 1 MiB steps: the step that would pass it must fail, never succeed. */
  CUdeviceptr blocks[4096];
  size_t held = 0, count = 0;
  CUresult r = CUDA_SUCCESS;
  while (count < 4096 && (r = cuMemAlloc(&blocks[count], 1 << 20)) == CUDA_SUCCESS) {
    held += 1 << 20;
    ++count;
  }
  printf("filled %zu %d\n", held, (int)r);
  fflush(stdout);
  if (hold) {
    /* Holds the whole quota until told to go on (or killed). */
    char line[64];
    if (fgets(line, sizeof(line), stdin) == NULL) return 0;
  }
  Report("alloc_when_full", r);
  size_t pitch = 0;
  Report("alloc_pitch_when_full", cuMemAllocPitch(&p, &pitch, 1 << 20, 4, 4));
  void* host = NULL;
  Report("alloc_host_when_full", cuMemAllocHost(&host, 1 << 20));
  Report("host_alloc_when_full", cuMemHostAlloc(&host, 1 << 20, CU_MEMHOSTALLOC_DEVICEMAP));
  while (count > 0) CHECK(cuMemFree(blocks[--count]));
  Report("alloc_host_over_quota", cuMemAllocHost(&host, (size_t)quota + 4096));
  Report("alloc_pitch_over_quota", cuMemAllocPitch(&p, &pitch, (size_t)quota, 2, 4));
  char* big = ReadFile(big_ptx_path);
  CUmodule module;
  Report("module_globals_over_quota", cuModuleLoadData(&module, big));
  free(big);
  /* The session still works within its quota afterwards. */
  Report("alloc_within_quota", cuMemAlloc(&p, 1 << 20));
  Report("alloc_host_within_quota", cuMemAllocHost(&host, 1 << 20));
  printf("done\n");
  return 0;
}

static int Kernel(const char* kind) {
  CUdeviceptr data;
  CHECK(cuMemAlloc(&data, 1 << 20));
  CHECK(cuMemsetD32(data, 0, 1 << 18));
  const char* name = strcmp(kind, "fault") == 0    ? "out_of_bounds"
                     : strcmp(kind, "trap") == 0   ? "trap_kernel"
                     : strcmp(kind, "assert") == 0 ? "assert_kernel"
                                                   : "spin_forever";
  CUfunction f;
  CHECK(cuModuleGetFunction(&f, g_module, name));
  void* params[] = {&data};
  CUresult r = cuLaunchKernel(f, 4, 1, 1, 64, 1, 1, 0, NULL, params, NULL);
  if (strcmp(kind, "hang") == 0) {
    printf("launched %d\n", (int)r);
    fflush(stdout);
    char line[64];
    if (fgets(line, sizeof(line), stdin) == NULL) return 0;
    const double start = NowMs();
    r = cuCtxDestroy(g_ctx);
    printf("destroyed %d %.0f\n", (int)r, NowMs() - start);
    fflush(stdout);
    return 0;
  }
  if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
  printf("result %d\n", (int)r);
  /* Sticky: the context stays unusable, as on hardware. */
  printf("after %d\n", (int)cuMemAlloc(&data, 64));
  fflush(stdout);
  return 0;
}

static int Wait(void) {
  CUdeviceptr flag;
  CHECK(cuMemAlloc(&flag, 64));
  CHECK(cuMemsetD32(flag, 0, 16));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamWaitValue32(stream, flag, 1, CU_STREAM_WAIT_VALUE_EQ));
  CHECK(cuStreamWriteValue32(stream, flag + 4, 1, 0));
  printf("waiting\n");
  fflush(stdout);
  char line[64];
  if (fgets(line, sizeof(line), stdin) == NULL) return 0;
  const double start = NowMs();
  CUresult r = cuCtxDestroy(g_ctx);
  printf("destroyed %d %.0f\n", (int)r, NowMs() - start);
  fflush(stdout);
  return 0;
}

static int Pool(unsigned long long quota) {
  CUstream stream;
  CHECK(cuStreamCreate(&stream, 0));
  CUmemoryPool pool;
  CHECK(cuDeviceGetDefaultMemPool(&pool, 0));
  cuuint64_t keep = ~0ull;  /* the pool keeps what it took: reuse must not count again */
  CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
  enum { kBlock = 1 << 20, kMax = 4096 };
  static CUdeviceptr blocks[kMax];
  int n = 0;
  CUresult r = CUDA_SUCCESS;
  while (n < kMax && (r = cuMemAllocAsync(&blocks[n], kBlock, stream)) == CUDA_SUCCESS) ++n;
  printf("filled %llu\n", (unsigned long long)n * kBlock);
  printf("check pool_alloc_when_full %d\n", (int)r);
  CUdeviceptr big = 0;
  printf("check pool_alloc_over_quota %d\n", (int)cuMemAllocAsync(&big, quota + 1, stream));
  /* Touch every block: the memory is really there. */
  for (int i = 0; i < n; ++i) CHECK(cuMemsetD32Async(blocks[i], (unsigned)i, kBlock / 4, stream));
  unsigned int probe = 0;
  if (n > 0) CHECK(cuMemcpyDtoH(&probe, blocks[n - 1] + kBlock - 4, 4));
  printf("check pool_contents %d\n", n > 0 && probe == (unsigned)(n - 1) ? 0 : 1);
  for (int i = 0; i < n; ++i) CHECK(cuMemFreeAsync(blocks[i], stream));
  CHECK(cuStreamSynchronize(stream));
  /* As much again, from the pool's own memory. */
  int again = 0;
  while (again < n && cuMemAllocAsync(&blocks[again], kBlock, stream) == CUDA_SUCCESS) ++again;
  printf("check pool_reuse %d\n", again == n ? 0 : 1);
  for (int i = 0; i < again; ++i) CHECK(cuMemFreeAsync(blocks[i], stream));
  CHECK(cuStreamSynchronize(stream));
  /* Released, the memory is the session's again for ordinary allocations. */
  CHECK(cuMemPoolTrimTo(pool, 0));
  CUdeviceptr plain = 0;
  r = cuMemAlloc(&plain, (size_t)n * kBlock / 2);
  printf("check alloc_after_trim %d\n", (int)r);
  if (r == CUDA_SUCCESS) CHECK(cuMemFree(plain));
  printf("done\n");
  fflush(stdout);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: guest_worker serve|churn|quota|kernel PTX [ARGS]\n");
    return 64;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  Setup(argv[2]);
  if (strcmp(argv[1], "serve") == 0) return Serve();
  if (strcmp(argv[1], "churn") == 0) return Churn();
  if (strcmp(argv[1], "quota") == 0 && (argc == 5 || (argc == 6 && strcmp(argv[5], "hold") == 0))) {
    return Quota(argv[3], strtoull(argv[4], 0, 0), argc == 6);
  }
  if (strcmp(argv[1], "kernel") == 0 && argc == 4) return Kernel(argv[3]);
  if (strcmp(argv[1], "wait") == 0) return Wait();
  if (strcmp(argv[1], "pool") == 0 && argc == 4) return Pool(strtoull(argv[3], 0, 0));
  fprintf(stderr, "guest_worker: bad arguments\n");
  return 64;
}
