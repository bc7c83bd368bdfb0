/* Loads kernels from fat binaries the three ways the driver API offers (cuModuleLoad of a
 * file, cuModuleLoadData of the bytes or of the wrapper struct nvcc embeds in executables,
 * cuModuleLoadFatBinary), runs them, and checks that a fatbin of SASS only is refused the way
 * a GPU without a matching binary refuses it. The kernels are also launched through
 * cuGetProcAddress's per-thread-stream entry points. */
#include <cudaProfiler.h>
#include <math.h>

#include "common.h"

#define N 4096

typedef CUresult (*LaunchFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);

/* Runs saxpy from `module` and checks every element. */
static void RunSaxpy(CUmodule module, LaunchFn launch, const char* how) {
  static float x[N], y[N], out[N];
  CUfunction saxpy;
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  for (int i = 0; i < N; ++i) {
    x[i] = (float)i;
    y[i] = 1.0f - (float)i;
  }
  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc(&dx, sizeof(x)));
  CHECK(cuMemAlloc(&dy, sizeof(y)));
  CHECK(cuMemcpyHtoD(dx, x, sizeof(x)));
  CHECK(cuMemcpyHtoD(dy, y, sizeof(y)));
  int n = N;
  float a = 3.0f;
  void* args[] = {&n, &a, &dx, &dy};
  CHECK(launch(saxpy, N / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(out, dy, sizeof(out)));
  for (int i = 0; i < N; ++i) {
    if (fabsf(out[i] - (a * x[i] + y[i])) > 1e-3f) {
      fprintf(stderr, "%s: y[%d] = %f, expected %f\n", how, i, out[i], a * x[i] + y[i]);
      exit(1);
    }
  }
  CHECK(cuMemFree(dx));
  CHECK(cuMemFree(dy));
  printf("%s: %d elements correct\n", how, N);
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK(cuCtxCreate(&context, NULL, 0, device));

  /* The per-thread default stream flavour of cuLaunchKernel, as cudart would fetch it. */
  void* pfn = NULL;
  CUdriverProcAddressQueryResult status;
  CHECK(cuGetProcAddress("cuLaunchKernel", &pfn, 12000,
                         CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status));
  EXPECT_TRUE(status == CU_GET_PROC_ADDRESS_SUCCESS && pfn != NULL);
  LaunchFn launch_ptsz = (LaunchFn)pfn;

  /* Profiler brackets are accepted (nothing records them), as without an attached profiler. */
  CHECK(cuProfilerStart());
  CUmodule module;
  CHECK(cuModuleLoad(&module, SiblingPath("saxpy_compressed.fatbin")));
  RunSaxpy(module, cuLaunchKernel, "cuModuleLoad");
  CHECK(cuModuleUnload(module));

  void* image = ReadFileBytes(SiblingPath("saxpy_compressed.fatbin"), NULL);
  CHECK(cuModuleLoadData(&module, image));
  RunSaxpy(module, launch_ptsz, "cuModuleLoadData");
  CHECK(cuModuleUnload(module));

  CHECK(cuModuleLoadFatBinary(&module, image));
  RunSaxpy(module, cuLaunchKernel, "cuModuleLoadFatBinary");
  CHECK(cuModuleUnload(module));

  /* The wrapper struct (__fatBinC_Wrapper_t) that executables register with the runtime. */
  struct {
    int magic;
    int version;
    const void* data;
    void* filename_or_fatbins;
  } wrapper = {0x466243b1, 1, image, NULL};
  CHECK(cuModuleLoadData(&module, &wrapper));
  RunSaxpy(module, cuLaunchKernel, "cuModuleLoadData(wrapper)");
  CHECK(cuModuleUnload(module));
  free(image);

  EXPECT_RESULT(CUDA_ERROR_NO_BINARY_FOR_GPU,
                cuModuleLoad(&module, SiblingPath("saxpy_sm_only.fatbin")));
  image = ReadFileBytes(SiblingPath("saxpy_sm_only.fatbin"), NULL);
  EXPECT_RESULT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuModuleLoadData(&module, image));
  free(image);

  CHECK(cuProfilerStop());
  CHECK(cuCtxDestroy(context));
  printf("fatbin: all loads correct\n");
  return 0;
}
