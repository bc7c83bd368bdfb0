/* The error of a module load that cannot work on the cpu adapter (a fat binary of machine code
 * only) names where the image came from: the shared library whose data holds it (found with
 * dladdr, as for cuBLAS's images), through cuModuleLoadDataEx and through cuLibraryLoadData's
 * copy; the file of cuModuleLoad; or only its address. The JIT error log gets the text, and
 * libcuda's log one line per image. The private tables of NVRTC and cuFFT that pvgpu refuses
 * are logged for what they are.
 *
 * The program runs itself again with PVGPU_LOG_FILE set to a file of its own, which it reads
 * at the end. */
#include <errno.h>

#include "common.h"

const void* SmOnlyFatbin(void); /* libpvgpu_e2e_sm_only.so */

static const char kLibrary[] = "libpvgpu_e2e_sm_only.so";

static int Count(const char* text, const char* what) {
  int n = 0;
  for (const char* p = strstr(text, what); p != NULL; p = strstr(p + 1, what)) ++n;
  return n;
}

#define EXPECT_CONTAINS(text, what)                                                       \
  do {                                                                                    \
    if (strstr((text), (what)) == NULL) {                                                 \
      fprintf(stderr, "%s:%d: \"%s\" not in:\n%s\n", __FILE__, __LINE__, (what), (text)); \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

/* The warning expected for the heap copy (its address), checked in the log at the end. */
static char heap_copy_line[128];

static void TestLoads(void) {
  char error_log[4096];
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[2];
  CUmodule module;

  /* From the library's data. */
  error_log[0] = '\0';
  values[0] = error_log;
  values[1] = (void*)(uintptr_t)sizeof(error_log);
  EXPECT_RESULT(CUDA_ERROR_NO_BINARY_FOR_GPU,
                cuModuleLoadDataEx(&module, SmOnlyFatbin(), 2, options, values));
  EXPECT_CONTAINS(error_log, "the fat binary at 0x");
  EXPECT_CONTAINS(error_log, kLibrary);
  EXPECT_CONTAINS(error_log, "no PTX");

  /* cuLibraryLoadData copies the image; the error still names where it came from, in the log
   * its JIT options ask for. */
  error_log[0] = '\0';
  values[0] = error_log;
  values[1] = (void*)(uintptr_t)sizeof(error_log);
  CUlibrary library;
  EXPECT_RESULT(CUDA_ERROR_NO_BINARY_FOR_GPU,
                cuLibraryLoadData(&library, SmOnlyFatbin(), options, values, 2, NULL, NULL, 0));
  EXPECT_CONTAINS(error_log, kLibrary);
  EXPECT_TRUE((uintptr_t)values[1] == strlen(error_log) + 1); /* the size used, written back */

  /* A copy on the heap: no library to name, only the address, which the warning gives (the JIT
   * log, which the application reads, is the device's alone: the address tells it nothing). */
  size_t size = 0;
  char* copy = ReadFileBytes(SiblingPath("saxpy_sm_only.fatbin"), &size);
  error_log[0] = '\0';
  values[0] = error_log;
  values[1] = (void*)(uintptr_t)sizeof(error_log);
  EXPECT_RESULT(CUDA_ERROR_NO_BINARY_FOR_GPU,
                cuModuleLoadDataEx(&module, copy, 2, options, values));
  snprintf(heap_copy_line, sizeof(heap_copy_line), "the fat binary at %p: fatbin holds no PTX",
           (void*)copy);
  EXPECT_CONTAINS(error_log, "fatbin holds no PTX, only machine code for sm_80");
  EXPECT_TRUE(strstr(error_log, "the fat binary") == NULL);
  free(copy);

  /* A file: its path. */
  EXPECT_RESULT(CUDA_ERROR_NO_BINARY_FOR_GPU,
                cuModuleLoad(&module, SiblingPath("saxpy_sm_only.fatbin")));
}

/* A library loaded while no context is current goes into each context at its first use there,
 * as NVIDIA's driver loads lazily, so a kernel taken from it and launched (PyTorch's runtime
 * launches CUkernels directly) reports that load's failure, not an invalid handle. */
static void LoadLibraryBeforeContext(CUlibrary* library, CUkernel* kernel) {
  CHECK(cuLibraryLoadData(library, SmOnlyFatbin(), NULL, NULL, 0, NULL, NULL, 0));
  CHECK(cuLibraryGetKernel(kernel, *library, "saxpy"));
}

static void TestLaunchOfLazyLibrary(CUkernel kernel) {
  CUdeviceptr x;
  CHECK(cuMemAlloc(&x, 256));
  int n = 64;
  float a = 2.0f;
  void* params[] = {&n, &a, &x, &x};
  EXPECT_RESULT(CUDA_ERROR_NO_BINARY_FOR_GPU,
                cuLaunchKernel((CUfunction)kernel, 1, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
  CUfunction function;
  EXPECT_RESULT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuKernelGetFunction(&function, kernel));
  /* Not sticky: the context carries on. */
  CHECK(cuMemsetD8(x, 0, 256));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemFree(x));
}

static void TestRefusedTables(void) {
  const void* table = &table;
  const CUuuid nvrtc = {{(char)0xda, (char)0x91, 0x51, (char)0xd3, 0x3a, (char)0xe6, (char)0xcc,
                         0x41, (char)0xa5, (char)0xc0, 0x4f, 0x26, (char)0xd5, 0x33, (char)0xe3,
                         0x28}};
  const CUuuid cufft = {{0x21, 0x31, (char)0x8c, 0x60, (char)0x97, 0x14, 0x32, 0x48, (char)0x8c,
                         (char)0xa6, 0x41, (char)0xff, 0x73, 0x24, (char)0xc8, (char)0xf2}};
  const CUuuid unknown = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(&table, &nvrtc));
  EXPECT_TRUE(table == NULL);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(&table, &cufft));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(&table, &cufft)); /* logged once */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(&table, &unknown));
}

static void CheckLog(const char* path) {
  char* log = ReadFileBytes(path, NULL);
  /* One line per image: the two loads from the library are one image. */
  char line[PATH_MAX + 64];
  snprintf(line, sizeof(line), "%s: fatbin holds no PTX", kLibrary);
  if (Count(log, line) != 1) {
    fprintf(stderr, "expected one \"%s\" line in:\n%s\n", line, log);
    exit(1);
  }
  snprintf(line, sizeof(line), "the fat binary in file %s", SiblingPath("saxpy_sm_only.fatbin"));
  EXPECT_CONTAINS(log, line);
  EXPECT_CONTAINS(log, heap_copy_line);
  EXPECT_CONTAINS(log, "21318c60-9714-3248-8ca6-41ff7324c8f2, cuFFT's private table");
  EXPECT_TRUE(Count(log, "cuFFT's private table") == 1);
  EXPECT_CONTAINS(log, "unknown export table 01020304-0506-0708-090a-0b0c0d0e0f10");
  /* NVRTC carries on without its table: nothing at the default (warning) level. */
  EXPECT_TRUE(strstr(log, "da9151d3") == NULL);
  free(log);
}

int main(int argc, char** argv) {
  (void)argc;
  const char* log_path = getenv("PVGPU_E2E_IMAGE_ORIGIN_LOG");
  if (log_path == NULL) {
    char path[] = "/tmp/pvgpu-image-origin-XXXXXX";
    int fd = mkstemp(path);
    EXPECT_TRUE(fd >= 0);
    close(fd);
    setenv("PVGPU_LOG_FILE", path, 1);
    setenv("PVGPU_E2E_IMAGE_ORIGIN_LOG", path, 1);
    unsetenv("PVGPU_LOG"); /* the default level, warnings */
    execv("/proc/self/exe", argv);
    fprintf(stderr, "exec: %s\n", strerror(errno));
    return 1;
  }
  CHECK(cuInit(0));
  CUlibrary library;
  CUkernel kernel;
  LoadLibraryBeforeContext(&library, &kernel);
  CUcontext ctx;
  CHECK(cuCtxCreate(&ctx, NULL, 0, 0));
  TestLoads();
  TestLaunchOfLazyLibrary(kernel);
  TestRefusedTables();
  CHECK(cuCtxDestroy(ctx));
  CHECK(cuLibraryUnload(library));
  CheckLog(log_path);
  unlink(log_path);
  printf("images named in load errors, refused export tables logged: ok\n");
  return 0;
}
