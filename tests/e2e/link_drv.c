/* The JIT linker: relocatable device code from two translation units (link_main.cu calls a
 * function and reads a variable that link_lib.cu defines), linked with cuLinkCreate /
 * cuLinkAddData / cuLinkAddFile / cuLinkComplete and loaded as a module and as a library; then
 * the errors a linker owes its caller. */
#include "common.h"

enum { kN = 1000 };

static void CheckResults(CUdeviceptr d_out) {
  int out[kN];
  CHECK(cuMemcpyDtoH(out, d_out, sizeof(out)));
  for (int i = 0; i < kN; ++i) {
    if (out[i] != 3 * i + 1 + 17) {
      fprintf(stderr, "out[%d] = %d, expected %d\n", i, out[i], 3 * i + 1 + 17);
      exit(1);
    }
  }
}

static void Launch(CUfunction f, CUdeviceptr d_out) {
  CHECK(cuMemsetD32(d_out, 0, kN));
  int n = kN;
  void* args[] = {&d_out, &n};
  CHECK(cuLaunchKernel(f, (kN + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
  CHECK(cuCtxSynchronize());
  CheckResults(d_out);
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext ctx;
  CHECK(cuCtxCreate(&ctx, NULL, 0, device));
  char* main_ptx = ReadPtx("link_main");
  CUdeviceptr d_out;
  CHECK(cuMemAlloc(&d_out, kN * sizeof(int)));

  /* PTX by data and a fatbinary by file, with logs and the wall time written back. */
  char error_log[4096] = "untouched", info_log[4096] = "";
  float wall_ms = -1.0f;
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_INFO_LOG_BUFFER,  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_WALL_TIME,        CU_JIT_OPTIMIZATION_LEVEL};
  void* values[] = {error_log, (void*)(uintptr_t)sizeof(error_log),
                    info_log,  (void*)(uintptr_t)sizeof(info_log),
                    NULL,      (void*)(uintptr_t)3};
  CUlinkState link;
  CHECK(cuLinkCreate(6, options, values, &link));
  CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, main_ptx, strlen(main_ptx) + 1, "link_main.ptx", 0,
                      NULL, NULL));
  CHECK(cuLinkAddFile(link, CU_JIT_INPUT_FATBINARY, SiblingPath("link_lib.fatbin"), 0, NULL, NULL));
  void* image = NULL;
  size_t image_size = 0;
  CHECK(cuLinkComplete(link, &image, &image_size));
  EXPECT_TRUE(image != NULL && image_size > strlen(main_ptx));
  EXPECT_TRUE(error_log[0] == '\0');
  EXPECT_TRUE(strlen(info_log) > 0);
  EXPECT_TRUE((uintptr_t)values[3] == strlen(info_log) + 1);
  memcpy(&wall_ms, &values[4], sizeof(wall_ms));
  EXPECT_TRUE(wall_ms >= 0.0f);

  CUmodule module;
  CHECK(cuModuleLoadData(&module, image));
  CUfunction kernel;
  CHECK(cuModuleGetFunction(&kernel, module, "linked_kernel"));
  Launch(kernel, d_out);
  /* The variable defined in the other input is the module's global. */
  CUdeviceptr d_offset;
  size_t offset_size = 0;
  CHECK(cuModuleGetGlobal(&d_offset, &offset_size, module, "offset"));
  EXPECT_TRUE(offset_size == sizeof(int));

  /* The same image as a library, after a copy (as caches on disk keep it). */
  void* copy = malloc(image_size);
  memcpy(copy, image, image_size);
  CHECK(cuLinkDestroy(link));
  CUlibrary library;
  CHECK(cuLibraryLoadData(&library, copy, NULL, NULL, 0, NULL, NULL, 0));
  CUkernel lib_kernel;
  CHECK(cuLibraryGetKernel(&lib_kernel, library, "linked_kernel"));
  Launch((CUfunction)lib_kernel, d_out);
  CHECK(cuLibraryUnload(library));
  CHECK(cuModuleUnload(module));
  free(copy);

  /* The same device code from a host object (nvcc -dc), and from a static library whose other
   * member the link does not need. */
  {
    const CUjitInputType types[] = {CU_JIT_INPUT_OBJECT, CU_JIT_INPUT_LIBRARY};
    const char* files[] = {"link_lib.o", "link_lib.a"};
    for (int i = 0; i < 2; ++i) {
      info_log[0] = '\0';
      CHECK(cuLinkCreate(4, options, values, &link));
      CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, main_ptx, strlen(main_ptx) + 1, "main.ptx", 0,
                          NULL, NULL));
      CHECK(cuLinkAddFile(link, types[i], SiblingPath(files[i]), 0, NULL, NULL));
      CHECK(cuLinkComplete(link, &image, &image_size));
      if (i == 1) EXPECT_TRUE(strstr(info_log, "linked 2 of 3 modules") != NULL);
      CHECK(cuModuleLoadData(&module, image));
      CHECK(cuModuleGetFunction(&kernel, module, "linked_kernel"));
      Launch(kernel, d_out);
      CHECK(cuModuleUnload(module));
      CHECK(cuLinkDestroy(link));
    }
  }

  /* An undefined symbol fails cuLinkComplete, and the error log names it. */
  CUjit_option log_options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* log_values[] = {error_log, (void*)(uintptr_t)sizeof(error_log)};
  CHECK(cuLinkCreate(2, log_options, log_values, &link));
  CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, main_ptx, strlen(main_ptx), "alone.ptx", 0, NULL,
                      NULL));
  CUresult incomplete = cuLinkComplete(link, &image, &image_size);
  EXPECT_TRUE(incomplete != CUDA_SUCCESS);
  EXPECT_TRUE(strstr(error_log, "undefined reference to function '_Z5scalei'") != NULL);
  CHECK(cuLinkDestroy(link));

  /* Two definitions of the same symbol name both inputs. */
  CHECK(cuLinkCreate(2, log_options, log_values, &link));
  CHECK(
      cuLinkAddData(link, CU_JIT_INPUT_PTX, main_ptx, strlen(main_ptx), "main.ptx", 0, NULL, NULL));
  CHECK(cuLinkAddFile(link, CU_JIT_INPUT_FATBINARY, SiblingPath("link_lib.fatbin"), 0, NULL, NULL));
  CHECK(cuLinkAddFile(link, CU_JIT_INPUT_FATBINARY, SiblingPath("link_lib.fatbin"), 0, NULL, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_PTX, cuLinkComplete(link, &image, &image_size));
  EXPECT_TRUE(strstr(error_log, "link_lib.fatbin") != NULL);
  CHECK(cuLinkDestroy(link));

  /* Machine code for one GPU cannot be linked for the cpu adapter. */
  CHECK(cuLinkCreate(2, log_options, log_values, &link));
  CHECK(cuLinkAddFile(link, CU_JIT_INPUT_FATBINARY, SiblingPath("saxpy_sm_only.fatbin"), 0, NULL,
                      NULL));
  EXPECT_RESULT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuLinkComplete(link, &image, &image_size));
  EXPECT_TRUE(strstr(error_log, "saxpy_sm_only.fatbin") != NULL);
  CHECK(cuLinkDestroy(link));

  /* Bad arguments and handles. */
  CHECK(cuLinkCreate(0, NULL, NULL, &link));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLinkComplete(link, &image, &image_size));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuLinkAddData(link, CU_JIT_INPUT_PTX, NULL, 10, "null", 0, NULL, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuLinkAddData(link, (CUjitInputType)42, main_ptx, 10, "type", 0, NULL, NULL));
  EXPECT_RESULT(CUDA_ERROR_FILE_NOT_FOUND,
                cuLinkAddFile(link, CU_JIT_INPUT_PTX, "/nonexistent/x.ptx", 0, NULL, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLinkComplete(link, NULL, &image_size));
  CHECK(cuLinkDestroy(link));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuLinkDestroy(link));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE,
                cuLinkAddData(link, CU_JIT_INPUT_PTX, main_ptx, 10, "stale", 0, NULL, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLinkCreate(0, NULL, NULL, NULL));

  CHECK(cuMemFree(d_out));
  free(main_ptx);
  CHECK(cuCtxDestroy(ctx));
  printf("link_drv: OK\n");
  return 0;
}
