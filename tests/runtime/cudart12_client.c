/* A client of NVIDIA's shared CUDA 12 runtime (libcudart.so.12 from PyPI's
 * nvidia-cuda-runtime-cu12), written the way nvcc-generated code drives it: the toolkit here is
 * CUDA 13, so the program registers its fat binary itself, exactly as nvcc's host stub does
 * (__cudaRegisterFatBinary with a __fatBinC_Wrapper_t, __cudaRegisterFunction,
 * __cudaRegisterFatBinaryEnd), then allocates, copies, launches with cudaLaunchKernel and checks
 * the result on the CPU.
 *
 *   cudart12_client LIBCUDART_SO FATBIN */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The runtime's ABI, declared here: this program does not include CUDA 12 headers. */
typedef int cudaError_t;
typedef struct {
  unsigned int x, y, z;
} dim3;
typedef struct {
  int magic;        /* 0x466243B1 */
  int version;      /* 1 */
  const void* data; /* the fat binary (magic 0xBA55ED50) */
  void* filename_or_fatbins;
} FatbinWrapper;

typedef void** (*RegisterFatBinaryFn)(void*);
typedef void (*RegisterFatBinaryEndFn)(void**);
typedef void (*UnregisterFatBinaryFn)(void**);
typedef void (*RegisterFunctionFn)(void**, const char*, char*, const char*, int, void*, void*,
                                   void*, void*, int*);
typedef cudaError_t (*MallocFn)(void**, size_t);
typedef cudaError_t (*FreeFn)(void*);
typedef cudaError_t (*MemcpyFn)(void*, const void*, size_t, int);
typedef cudaError_t (*LaunchKernelFn)(const void*, dim3, dim3, void**, size_t, void*);
typedef cudaError_t (*SynchronizeFn)(void);
typedef cudaError_t (*VersionFn)(int*);
typedef const char* (*ErrorNameFn)(cudaError_t);

enum { kHostToDevice = 1, kDeviceToHost = 2 };

static void* g_cudart;
static ErrorNameFn g_error_name;

static void* Symbol(const char* name) {
  void* symbol = dlsym(g_cudart, name);
  if (symbol == NULL) {
    fprintf(stderr, "libcudart has no %s\n", name);
    exit(1);
  }
  return symbol;
}

#define CHECK(call)                                                             \
  do {                                                                          \
    cudaError_t check_error_ = (call);                                          \
    if (check_error_ != 0) {                                                    \
      fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call, \
              g_error_name(check_error_), check_error_);                        \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

/* The host-side handle of the kernel: any unique address, as nvcc's stub function is. */
static void SaxpyStub(void) {}

/* The fat binary must stay where the runtime can read it for the life of the process, 8-byte
 * aligned like nvcc's .nv_fatbin section. */
static uint64_t* ReadFatbin(const char* path) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) {
    perror(path);
    exit(1);
  }
  fseek(file, 0, SEEK_END);
  const long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  uint64_t* data = calloc((size_t)size / 8 + 1, 8);
  if (data == NULL || fread(data, 1, (size_t)size, file) != (size_t)size) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  fclose(file);
  return data;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIBCUDART_SO FATBIN\n", argv[0]);
    return 2;
  }
  g_cudart = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (g_cudart == NULL) {
    fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  g_error_name = (ErrorNameFn)Symbol("cudaGetErrorName");
  static FatbinWrapper wrapper = {0x466243B1, 1, NULL, NULL};
  wrapper.data = ReadFatbin(argv[2]);
  void** handle = ((RegisterFatBinaryFn)Symbol("__cudaRegisterFatBinary"))(&wrapper);
  ((RegisterFunctionFn)Symbol("__cudaRegisterFunction"))(
      handle, (const char*)SaxpyStub, (char*)"saxpy", "saxpy", -1, NULL, NULL, NULL, NULL, NULL);
  ((RegisterFatBinaryEndFn)Symbol("__cudaRegisterFatBinaryEnd"))(handle);

  int runtime = 0, driver = 0;
  CHECK(((VersionFn)Symbol("cudaRuntimeGetVersion"))(&runtime));
  CHECK(((VersionFn)Symbol("cudaDriverGetVersion"))(&driver));
  printf("CUDA runtime %d on driver %d\n", runtime, driver);

  MallocFn cuda_malloc = (MallocFn)Symbol("cudaMalloc");
  MemcpyFn cuda_memcpy = (MemcpyFn)Symbol("cudaMemcpy");
  FreeFn cuda_free = (FreeFn)Symbol("cudaFree");
  const int n = 1 << 16;
  float* x = malloc(n * sizeof(float));
  float* y = malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) {
    x[i] = (float)i * 0.5f;
    y[i] = (float)(n - i);
  }
  void *dx, *dy;
  CHECK(cuda_malloc(&dx, n * sizeof(float)));
  CHECK(cuda_malloc(&dy, n * sizeof(float)));
  CHECK(cuda_memcpy(dx, x, n * sizeof(float), kHostToDevice));
  CHECK(cuda_memcpy(dy, y, n * sizeof(float), kHostToDevice));
  float a = 2.5f;
  int count = n;
  void* args[] = {&count, &a, &dx, &dy};
  const dim3 grid = {(unsigned)(n + 255) / 256, 1, 1}, block = {256, 1, 1};
  CHECK(((LaunchKernelFn)Symbol("cudaLaunchKernel"))((const void*)SaxpyStub, grid, block, args, 0,
                                                     NULL));
  CHECK(((SynchronizeFn)Symbol("cudaDeviceSynchronize"))());
  float* out = malloc(n * sizeof(float));
  CHECK(cuda_memcpy(out, dy, n * sizeof(float), kDeviceToHost));
  for (int i = 0; i < n; ++i) {
    const float want = a * x[i] + y[i];
    if (fabsf(out[i] - want) > 1e-6f * fmaxf(1.f, fabsf(want))) {
      fprintf(stderr, "y[%d] = %g, want %g\n", i, out[i], want);
      return 1;
    }
  }
  CHECK(cuda_free(dx));
  CHECK(cuda_free(dy));
  ((UnregisterFatBinaryFn)Symbol("__cudaUnregisterFatBinary"))(handle);
  printf("saxpy of %d elements through CUDA runtime %d: ok\n", n, runtime);
  return 0;
}
