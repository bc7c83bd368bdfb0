/* A guest of the compute-sharing tests (tests/sharing) and of `pvgpu bench contention`: an
 * ordinary driver-API program linked with -lcuda, driven through its stdin and stdout.
 *
 *   share_worker flood PTX SECONDS BLOCKS ITERS
 *       prints "ready", waits for "go", then launches spin<<<BLOCKS, 64>>>(ITERS) in batches of
 *       8 with a synchronize after each for SECONDS; prints "kernels N" (every launch checked by
 *       the kernels' own counter, copied back) and exits.
 *   share_worker latency PTX COUNT
 *       prints "ready", waits for "go", then times COUNT launch + synchronize pairs of
 *       tick<<<1, 32>>>; prints "latency_us MEDIAN P90 MIN" and exits.
 *   share_worker account PTX KERNELS BYTES
 *       runs KERNELS spin<<<8, 64>>>(20000) launches and copies BYTES to the device and back,
 *       then checks what NVML reports about its own process (running processes with memory,
 *       accounting stats, process utilization) and prints
 *       "nvml memory M util U accounting_util A start S samples N sm SM", then "done", and
 *       waits for a line on stdin before it exits. */
#include <cuda.h>
#include "guest/nvml/nvml_api.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(call)                                      \
  do {                                                   \
    CUresult check_result = (call);                      \
    if (check_result != CUDA_SUCCESS) {                  \
      printf("fail %s %d\n", #call, (int)check_result);  \
      fflush(stdout);                                    \
      exit(2);                                           \
    }                                                    \
  } while (0)

#define CHECK_NVML(call)                                      \
  do {                                                        \
    nvmlReturn_t check_nvml = (call);                         \
    if (check_nvml != NVML_SUCCESS) {                         \
      printf("fail %s nvml %d\n", #call, (int)check_nvml);    \
      fflush(stdout);                                         \
      exit(2);                                                \
    }                                                         \
  } while (0)

static CUmodule g_module;
static CUfunction g_spin, g_tick;
static CUdeviceptr g_counter;

static double NowSeconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
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
  CUcontext ctx;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuCtxCreate(&ctx, NULL, 0, device));
  char* ptx = ReadFile(ptx_path);
  CHECK(cuModuleLoadData(&g_module, ptx));
  free(ptx);
  CHECK(cuModuleGetFunction(&g_spin, g_module, "spin"));
  CHECK(cuModuleGetFunction(&g_tick, g_module, "tick"));
  CHECK(cuMemAlloc(&g_counter, 8));
  CHECK(cuMemsetD32(g_counter, 0, 2));
}

static unsigned int Counter(void) {
  unsigned int value = 0;
  CHECK(cuMemcpyDtoH(&value, g_counter, 4));
  return value;
}

static void AwaitGo(void) {
  char line[64];
  printf("ready\n");
  fflush(stdout);
  if (fgets(line, sizeof(line), stdin) == NULL) exit(3);
}

static int CompareDoubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : (x > y ? 1 : 0);
}

static int Flood(double seconds, unsigned int blocks, unsigned int iters) {
  AwaitGo();
  void* params[] = {&iters, &g_counter};
  unsigned long long launched = 0;
  const double end = NowSeconds() + seconds;
  while (NowSeconds() < end) {
    for (int i = 0; i < 8; ++i) {
      CHECK(cuLaunchKernel(g_spin, blocks, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
      ++launched;
    }
    CHECK(cuCtxSynchronize());
  }
  const unsigned int counted = Counter();
  if (counted != (unsigned int)launched) {
    printf("fail counter %u after %llu launches\n", counted, launched);
    return 2;
  }
  printf("kernels %llu\n", launched);
  return 0;
}

static int Latency(int count) {
  AwaitGo();
  void* params[] = {&g_counter};
  double* samples = malloc(sizeof(double) * (size_t)count);
  for (int i = 0; i < count; ++i) {
    const double start = NowSeconds();
    CHECK(cuLaunchKernel(g_tick, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    CHECK(cuCtxSynchronize());
    samples[i] = (NowSeconds() - start) * 1e6;
  }
  if (Counter() != (unsigned int)count) {
    printf("fail counter %u after %d launches\n", Counter(), count);
    return 2;
  }
  qsort(samples, (size_t)count, sizeof(double), CompareDoubles);
  printf("latency_us %.1f %.1f %.1f\n", samples[count / 2], samples[count * 9 / 10], samples[0]);
  free(samples);
  return 0;
}

static int Account(unsigned int kernels, size_t bytes) {
  unsigned int iters = 20000;
  void* params[] = {&iters, &g_counter};
  for (unsigned int i = 0; i < kernels; ++i) {
    CHECK(cuLaunchKernel(g_spin, 8, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
  }
  CHECK(cuCtxSynchronize());
  CUdeviceptr buffer;
  CHECK(cuMemAlloc(&buffer, bytes));
  unsigned char* host = malloc(bytes);
  memset(host, 0x5a, bytes);
  CHECK(cuMemcpyHtoD(buffer, host, bytes));
  memset(host, 0, bytes);
  CHECK(cuMemcpyDtoH(host, buffer, bytes));
  if (host[bytes - 1] != 0x5a) {
    printf("fail copy\n");
    return 2;
  }
  if (Counter() != kernels) {  /* 4 more bytes back: the test expects BYTES + 4 */
    printf("fail counter\n");
    return 2;
  }

  CHECK_NVML(nvmlInit_v2());
  nvmlDevice_t device;
  CHECK_NVML(nvmlDeviceGetHandleByIndex_v2(0, &device));
  const unsigned int pid = (unsigned int)getpid();
  nvmlProcessInfo_t infos[16];
  unsigned int count = 16;
  CHECK_NVML(nvmlDeviceGetComputeRunningProcesses_v3(device, &count, infos));
  unsigned long long memory = 0;
  for (unsigned int i = 0; i < count; ++i) {
    if (infos[i].pid == pid) memory = infos[i].usedGpuMemory;
  }
  nvmlUtilization_t util;
  CHECK_NVML(nvmlDeviceGetUtilizationRates(device, &util));
  nvmlEnableState_t mode;
  CHECK_NVML(nvmlDeviceGetAccountingMode(device, &mode));
  if (mode != NVML_FEATURE_ENABLED) {
    printf("fail accounting mode %d\n", (int)mode);
    return 2;
  }
  unsigned int pids[16];
  unsigned int npids = 16;
  CHECK_NVML(nvmlDeviceGetAccountingPids(device, &npids, pids));
  int listed = 0;
  for (unsigned int i = 0; i < npids; ++i) listed |= pids[i] == pid;
  if (!listed) {
    printf("fail accounting pids: %u listed, not %u\n", npids, pid);
    return 2;
  }
  nvmlAccountingStats_t stats;
  CHECK_NVML(nvmlDeviceGetAccountingStats(device, pid, &stats));
  if (!stats.isRunning) {
    printf("fail accounting isRunning\n");
    return 2;
  }
  nvmlProcessUtilizationSample_t samples[16];
  unsigned int nsamples = 0;
  /* The first call asks for the count, as nvidia-smi does. */
  nvmlReturn_t sized = nvmlDeviceGetProcessUtilization(device, NULL, &nsamples, 0);
  if (sized != NVML_ERROR_INSUFFICIENT_SIZE || nsamples == 0) {
    printf("fail process utilization size %d %u\n", (int)sized, nsamples);
    return 2;
  }
  nsamples = 16;
  CHECK_NVML(nvmlDeviceGetProcessUtilization(device, samples, &nsamples, 0));
  unsigned int sm = 101;
  for (unsigned int i = 0; i < nsamples; ++i) {
    if (samples[i].pid == pid) sm = samples[i].smUtil;
  }
  printf("nvml memory %llu util %u accounting_util %u start %llu samples %u sm %u\n", memory,
         util.gpu, stats.gpuUtilization, stats.startTime, nsamples, sm);
  printf("done\n");
  fflush(stdout);
  char line[64];
  if (fgets(line, sizeof(line), stdin) == NULL) {
  }
  CHECK_NVML(nvmlShutdown());
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 3) {
    fprintf(stderr, "usage: share_worker flood|latency|account PTX ...\n");
    return 1;
  }
  Setup(argv[2]);
  if (strcmp(argv[1], "flood") == 0 && argc == 6) {
    return Flood(atof(argv[3]), (unsigned)atoi(argv[4]), (unsigned)atoi(argv[5]));
  }
  if (strcmp(argv[1], "latency") == 0 && argc == 4) return Latency(atoi(argv[3]));
  if (strcmp(argv[1], "account") == 0 && argc == 5) {
    return Account((unsigned)atoi(argv[3]), (size_t)atol(argv[4]));
  }
  fprintf(stderr, "share_worker: bad arguments\n");
  return 1;
}
