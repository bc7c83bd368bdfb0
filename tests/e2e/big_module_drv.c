/* Module images larger than one channel message (4 MiB by default): the PTX generated here
 * carries a __device__ table of about 12 MB of initializers, as libraries' images do (CuPy's
 * CUB kernels are 9 MB, cuRAND's 29 MB). It is loaded as a module and as a library; every
 * byte of the table must arrive (read back whole, and gathered by a kernel), checked against
 * the formula that wrote it. Nothing in it knows about pvgpu. */
#include "common.h"

#include <stdint.h>

enum { kEntries = 1200000, kGathered = 4096 };

static uint32_t Entry(uint32_t i) { return (i * 2654435761u) >> 4; }

static const char kKernel[] =
    ".visible .entry gather(.param .u64 out, .param .u64 idx, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<8>;\n"
    "  .reg .b64 %rd<12>;\n"
    "  ld.param.u64 %rd1, [out];\n"
    "  ld.param.u64 %rd2, [idx];\n"
    "  ld.param.u32 %r1, [n];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %p1, %r5, %r1;\n"
    "  @%p1 bra DONE;\n"
    "  mul.wide.u32 %rd3, %r5, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  ld.global.u32 %r6, [%rd4];\n"
    "  mul.wide.u32 %rd5, %r6, 4;\n"
    "  mov.u64 %rd6, table;\n"
    "  add.s64 %rd7, %rd6, %rd5;\n"
    "  ld.global.u32 %r7, [%rd7];\n"
    "  add.s64 %rd8, %rd1, %rd3;\n"
    "  st.global.u32 [%rd8], %r7;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

/* PTX text: the header, the table with its initializers, the kernel. */
static char* MakePtx(size_t* length) {
  const size_t capacity = (size_t)kEntries * 12 + sizeof(kKernel) + 256;
  char* ptx = malloc(capacity);
  EXPECT_TRUE(ptx != NULL);
  size_t n = (size_t)snprintf(ptx, capacity,
                              ".version 7.0\n.target sm_75\n.address_size 64\n"
                              ".visible .global .align 4 .u32 table[%d] = {",
                              kEntries);
  for (uint32_t i = 0; i < kEntries; ++i) {
    n += (size_t)snprintf(ptx + n, capacity - n, i == 0 ? "%u" : ",%u", Entry(i));
  }
  n += (size_t)snprintf(ptx + n, capacity - n, "};\n%s", kKernel);
  *length = n;
  return ptx;
}

static void CheckTable(CUdeviceptr table, size_t bytes) {
  EXPECT_TRUE(bytes == (size_t)kEntries * 4);
  uint32_t* host = malloc(bytes);
  CHECK(cuMemcpyDtoH(host, table, bytes));
  for (uint32_t i = 0; i < kEntries; ++i) {
    if (host[i] != Entry(i)) {
      fprintf(stderr, "table[%u] = %u, expected %u\n", i, host[i], Entry(i));
      exit(1);
    }
  }
  free(host);
}

static void CheckGather(CUfunction gather) {
  uint32_t idx[kGathered], out[kGathered];
  for (uint32_t i = 0; i < kGathered; ++i) idx[i] = (i * 7919u + 13u) % kEntries;
  idx[kGathered - 1] = kEntries - 1; /* the last entry: the image's last chunk */
  CUdeviceptr d_idx, d_out;
  CHECK(cuMemAlloc(&d_idx, sizeof(idx)));
  CHECK(cuMemAlloc(&d_out, sizeof(out)));
  CHECK(cuMemcpyHtoD(d_idx, idx, sizeof(idx)));
  unsigned int n = kGathered;
  void* params[] = {&d_out, &d_idx, &n};
  CHECK(cuLaunchKernel(gather, kGathered / 128, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
  CHECK(cuMemcpyDtoH(out, d_out, sizeof(out)));
  for (uint32_t i = 0; i < kGathered; ++i) {
    if (out[i] != Entry(idx[i])) {
      fprintf(stderr, "gather[%u] = %u, expected table[%u] = %u\n", i, out[i], idx[i],
              Entry(idx[i]));
      exit(1);
    }
  }
  CHECK(cuMemFree(d_idx));
  CHECK(cuMemFree(d_out));
}

int main(void) {
  (void)ReadPtx; /* common.h's; this program makes its own */
  size_t length = 0;
  char* ptx = MakePtx(&length);
  printf("PTX image of %zu bytes\n", length + 1);
  EXPECT_TRUE(length > (8u << 20));

  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK(cuCtxCreate(&context, NULL, 0, device));

  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx));
  CUdeviceptr table;
  size_t bytes = 0;
  CHECK(cuModuleGetGlobal(&table, &bytes, module, "table"));
  CheckTable(table, bytes);
  CUfunction gather;
  CHECK(cuModuleGetFunction(&gather, module, "gather"));
  CheckGather(gather);
  CHECK(cuModuleUnload(module));

  /* The same image as a library (cuLibraryLoadData, the CUDA runtime's route). */
  CUlibrary library;
  CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, NULL, NULL, 0));
  CUkernel kernel;
  CHECK(cuLibraryGetKernel(&kernel, library, "gather"));
  CheckGather((CUfunction)kernel);
  CHECK(cuLibraryGetGlobal(&table, &bytes, library, "table"));
  CheckTable(table, bytes);
  CHECK(cuLibraryUnload(library));

  CHECK(cuCtxDestroy(context));
  free(ptx);
  printf("big_module_drv: OK\n");
  return 0;
}
