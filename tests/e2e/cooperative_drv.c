/* Cooperative launches through the driver API: cuLaunchCooperativeKernel and cuLaunchKernelEx
 * with CU_LAUNCH_ATTRIBUTE_COOPERATIVE run a kernel with grid-wide barriers on the largest grid
 * the occupancy calculator says is resident (more blocks than the device has multiprocessors),
 * checked against a CPU reference; one block more is refused with
 * CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE at the call, and the context stays usable. */
#include "common.h"

enum { kThreads = 128, kRounds = 9 };

static void Reference(unsigned* a, unsigned* b, int n, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    const unsigned* in = (r % 2 == 0) ? a : b;
    unsigned* out = (r % 2 == 0) ? b : a;
    for (int i = 0; i < n; ++i) {
      out[i] = in[(i + n - 1) % n] * 3u + in[i] * 5u + in[(i + 1) % n] * 7u + (unsigned)r;
    }
  }
}

/* Runs stencil_rounds on `blocks` x kThreads threads (gx x gy blocks) through `launch` (0:
 * cuLaunchCooperativeKernel, 1: cuLaunchKernelEx) and checks it against the reference. */
static void RunAndCheck(CUfunction f, unsigned gx, unsigned gy, int launch) {
  const unsigned blocks = gx * gy;
  int n = (int)(blocks * kThreads * 2 + 5); /* each thread takes two or three elements */
  int rounds = kRounds;
  unsigned* host_a = (unsigned*)malloc(n * sizeof(unsigned));
  unsigned* host_b = (unsigned*)calloc(n, sizeof(unsigned));
  unsigned* got = (unsigned*)malloc(n * sizeof(unsigned));
  unsigned* seen = (unsigned*)malloc(blocks * sizeof(unsigned));
  for (int i = 0; i < n; ++i) host_a[i] = (unsigned)i * 2654435761u;
  CUdeviceptr a, b, arrived, dseen;
  CHECK(cuMemAlloc(&a, n * sizeof(unsigned)));
  CHECK(cuMemAlloc(&b, n * sizeof(unsigned)));
  CHECK(cuMemAlloc(&arrived, sizeof(unsigned)));
  CHECK(cuMemAlloc(&dseen, blocks * sizeof(unsigned)));
  CHECK(cuMemcpyHtoD(a, host_a, n * sizeof(unsigned)));
  CHECK(cuMemsetD32(b, 0, n));
  CHECK(cuMemsetD32(arrived, 0, 1));
  void* args[] = {&a, &b, &n, &rounds, &arrived, &dseen};
  if (launch == 0) {
    CHECK(cuLaunchCooperativeKernel(f, gx, gy, 1, kThreads, 1, 1, 0, NULL, args));
  } else {
    CUlaunchAttribute attribute;
    memset(&attribute, 0, sizeof(attribute));
    attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attribute.value.cooperative = 1;
    CUlaunchConfig config;
    memset(&config, 0, sizeof(config));
    config.gridDimX = gx;
    config.gridDimY = gy;
    config.gridDimZ = 1;
    config.blockDimX = kThreads;
    config.blockDimY = 1;
    config.blockDimZ = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    CHECK(cuLaunchKernelEx(&config, f, args, NULL));
  }
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(seen, dseen, blocks * sizeof(unsigned)));
  for (unsigned i = 0; i < blocks; ++i) {
    if (seen[i] != blocks) {
      fprintf(stderr, "block %u passed the first barrier having seen %u of %u blocks\n", i, seen[i],
              blocks);
      exit(1);
    }
  }
  CHECK(cuMemcpyDtoH(got, (kRounds % 2 == 1) ? b : a, n * sizeof(unsigned)));
  Reference(host_a, host_b, n, rounds);
  const unsigned* want = (kRounds % 2 == 1) ? host_b : host_a;
  for (int i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      fprintf(stderr, "element %d after %d rounds: %u, expected %u\n", i, rounds, got[i], want[i]);
      exit(1);
    }
  }
  printf("%s: %u x %u blocks of %d threads, %d grid barriers: correct\n",
         launch == 0 ? "cuLaunchCooperativeKernel" : "cuLaunchKernelEx (cooperative)", gx, gy,
         kThreads, rounds + 1);
  CHECK(cuMemFree(a));
  CHECK(cuMemFree(b));
  CHECK(cuMemFree(arrived));
  CHECK(cuMemFree(dseen));
  free(host_a);
  free(host_b);
  free(got);
  free(seen);
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  int cooperative = 0, sms = 0;
  CHECK(cuDeviceGetAttribute(&cooperative, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, device));
  CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
  EXPECT_TRUE(cooperative == 1);
  CUcontext context;
  CHECK(cuCtxCreate(&context, NULL, 0, device));
  char* ptx = ReadPtx("cooperative");
  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx));
  CUfunction f;
  CHECK(cuModuleGetFunction(&f, module, "stencil_rounds"));

  int per_sm = 0;
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, kThreads, 0));
  EXPECT_TRUE(per_sm >= 1);
  const unsigned resident = (unsigned)(per_sm * sms);
  /* Every resident block at once: more blocks than multiprocessors (workers) whenever per_sm
   * is above 1, so blocks must take turns on the workers while waiting at the barriers. */
  RunAndCheck(f, resident, 1, 0);
  RunAndCheck(f, 1, resident, 1);
  if (resident % 2 == 0) RunAndCheck(f, resident / 2, 2, 0);

  /* One block more than can be resident: refused at the call, nothing runs, nothing sticks. */
  CUdeviceptr dummy;
  CHECK(cuMemAlloc(&dummy, 64));
  int n = 1, rounds = 0;
  void* args[] = {&dummy, &dummy, &n, &rounds, &dummy, &dummy};
  EXPECT_RESULT(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
                cuLaunchCooperativeKernel(f, resident + 1, 1, 1, kThreads, 1, 1, 0, NULL, args));
  CUlaunchAttribute attribute;
  memset(&attribute, 0, sizeof(attribute));
  attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attribute.value.cooperative = 1;
  CUlaunchConfig config;
  memset(&config, 0, sizeof(config));
  config.gridDimX = resident;
  config.gridDimY = 2;
  config.gridDimZ = 1;
  config.blockDimX = kThreads;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  EXPECT_RESULT(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, cuLaunchKernelEx(&config, f, args, NULL));
  /* Bigger blocks leave fewer resident: the limit follows the occupancy calculator. */
  int per_sm_big = 0;
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_big, f, 1024, 0));
  EXPECT_RESULT(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
                cuLaunchCooperativeKernel(f, (unsigned)(per_sm_big * sms) + 1, 1, 1, 1024, 1, 1, 0,
                                          NULL, args));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemFree(dummy));

  /* A CUkernel in place of the CUfunction, as the CUDA runtime passes it. */
  CUlibrary library;
  CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, NULL, NULL, 0));
  CUkernel kernel;
  CHECK(cuLibraryGetKernel(&kernel, library, "stencil_rounds"));
  RunAndCheck((CUfunction)kernel, resident, 1, 0);
  CHECK(cuLibraryUnload(library));

  CHECK(cuModuleUnload(module));
  CHECK(cuCtxDestroy(context));
  free(ptx);
  printf("cooperative launches: ok\n");
  return 0;
}
