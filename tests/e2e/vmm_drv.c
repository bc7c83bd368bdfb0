/* Virtual memory management: one reserved range backed by three physical allocations (one of
 * them mapped from an offset), made accessible in two calls and used as one contiguous buffer by
 * a single copy and by kernels; the same physical memory seen through two reservations; the
 * queries (access, address range, pointer attributes, retained handles, properties, memory
 * counted); the errors CUDA defines for overlapping, unaligned, partial and out-of-range
 * requests; memory that stays while mapped after its release; and a kernel that touches an
 * unmapped part of a reservation faulting in its context. A saxpy over virtual memory is
 * checked against a CPU reference. */
#include "common.h"

#include <math.h>
#include <stdint.h>

static CUmemAllocationProp Pinned(int device) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

static void SetAccess(CUdeviceptr ptr, size_t size, int device, CUmemAccess_flags flags) {
  CUmemAccessDesc access;
  memset(&access, 0, sizeof(access));
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = flags;
  CHECK(cuMemSetAccess(ptr, size, &access, 1));
}

static size_t FreeMemory(void) {
  size_t free_bytes = 0, total = 0;
  CHECK(cuMemGetInfo(&free_bytes, &total));
  return free_bytes;
}

static void Saxpy(CUfunction saxpy, int n, float a, CUdeviceptr x, CUdeviceptr y) {
  void* args[] = {&n, &a, &x, &y};
  CHECK(cuLaunchKernel(saxpy, (unsigned)((n + 255) / 256), 1, 1, 256, 1, 1, 0, NULL, args, NULL));
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  int vmm = 0;
  CHECK(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                             device));
  EXPECT_TRUE(vmm == 1);

  CUmemAllocationProp prop = Pinned(device);
  size_t g = 0, recommended = 0;
  CHECK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CHECK(cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  EXPECT_TRUE(g > 0 && (g & (g - 1)) == 0 && recommended % g == 0);
  /* POSIX file descriptors are the shareable handles pvgpu has (vmm_share_drv.c). */
  CUmemAllocationProp shareable = prop;
  shareable.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CHECK(cuMemGetAllocationGranularity(&g, &shareable, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  shareable.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED,
                cuMemGetAllocationGranularity(&g, &shareable, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemAllocationProp wrong = prop;
  wrong.type = CU_MEM_ALLOCATION_TYPE_INVALID;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuMemGetAllocationGranularity(&g, &wrong, CU_MEM_ALLOC_GRANULARITY_MINIMUM));

  CUcontext context;
  CHECK(cuCtxCreate(&context, NULL, 0, device));
  char* ptx = ReadPtx("saxpy");
  CUmodule module;
  CHECK(cuModuleLoadData(&module, ptx));
  CUfunction saxpy;
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));

  /* A reservation of four granules, three of them mapped: granule 0 from p0, granule 1 from
   * p1, granule 2 from the second granule of the two-granule `big`. */
  const size_t free_before = FreeMemory();
  CUdeviceptr base = 0;
  CHECK(cuMemAddressReserve(&base, 4 * g, 0, 0, 0));
  EXPECT_TRUE(base != 0 && base % g == 0);
  EXPECT_TRUE(FreeMemory() == free_before); /* addresses are not memory */
  CUmemGenericAllocationHandle p0, p1, big;
  CHECK(cuMemCreate(&p0, g, &prop, 0));
  CHECK(cuMemCreate(&p1, g, &prop, 0));
  CHECK(cuMemCreate(&big, 2 * g, &prop, 0));
  EXPECT_TRUE(free_before - FreeMemory() == 4 * g);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&p0, g / 2, &prop, 0));

  CHECK(cuMemMap(base, g, 0, p0, 0));
  CHECK(cuMemMap(base + g, g, 0, p1, 0));
  CHECK(cuMemMap(base + 2 * g, g, g, big, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemMap(base, g, 0, p1, 0));         /* mapped */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemMap(base + 3 * g, g / 2, 0, p1, 0)); /* size */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemMap(base + 3 * g, g, 2 * g, big, 0)); /* offset */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemMap(base + 4 * g, g, 0, p1, 0)); /* outside */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemMap(base + 3 * g, g, 0, 0x5eed, 0));

  /* Mapped but not yet accessible: no copy reaches it. */
  const size_t n = 3 * g / sizeof(float);
  float* x = (float*)malloc(3 * g);
  float* y = (float*)malloc(3 * g);
  float* out = (float*)malloc(3 * g);
  for (size_t i = 0; i < n; ++i) {
    x[i] = (float)(i % 1000) * 0.5f;
    y[i] = (float)(i % 7);
  }
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(base, x, 16));
  CUmemAccessDesc everything = {{CU_MEM_LOCATION_TYPE_DEVICE, device},
                                CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(base, 4 * g, &everything, 1));
  SetAccess(base, g, device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  SetAccess(base + g, 2 * g, device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  unsigned long long flags = 0;
  CUmemLocation here = {CU_MEM_LOCATION_TYPE_DEVICE, device};
  CHECK(cuMemGetAccess(&flags, &here, base + g + 5));
  EXPECT_TRUE(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);

  /* One copy across the three mappings, and kernels over all of them: y += a * x where y lives
   * in virtual memory and x in an ordinary allocation, then the other way around. */
  CUdeviceptr plain;
  CHECK(cuMemAlloc(&plain, 3 * g));
  CHECK(cuMemcpyHtoD(base, y, 3 * g));
  CHECK(cuMemcpyHtoD(plain, x, 3 * g));
  Saxpy(saxpy, (int)n, 2.0f, plain, base);
  Saxpy(saxpy, (int)n, 0.25f, base, plain);
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(out, base, 3 * g));
  for (size_t i = 0; i < n; ++i) {
    const float want = 2.0f * x[i] + y[i];
    if (out[i] != want) {
      fprintf(stderr, "virtual y[%zu] = %f, expected %f\n", i, out[i], want);
      return 1;
    }
  }
  CHECK(cuMemcpyDtoH(out, plain, 3 * g));
  for (size_t i = 0; i < n; ++i) {
    const float want = 0.25f * (2.0f * x[i] + y[i]) + x[i];
    if (fabsf(out[i] - want) > 1e-5f * fabsf(want)) {
      fprintf(stderr, "plain x[%zu] = %f, expected %f\n", i, out[i], want);
      return 1;
    }
  }
  /* A device-to-device copy that starts in one mapping and ends in the next. */
  CHECK(cuMemcpyDtoD(plain, base + g - 64, 128));
  float edge[32];
  CHECK(cuMemcpyDtoH(edge, plain, 128));
  for (int i = 0; i < 32; ++i) {
    const size_t at = (g - 64) / sizeof(float) + (size_t)i;
    EXPECT_TRUE(edge[i] == 2.0f * x[at] + y[at]);
  }

  /* Queries. */
  CUdeviceptr range_base = 0;
  size_t range_size = 0;
  CHECK(cuMemGetAddressRange(&range_base, &range_size, base + g + 8));
  EXPECT_TRUE(range_base == base + g && range_size == g);
  unsigned int type = 0;
  CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, base + 2 * g));
  EXPECT_TRUE(type == CU_MEMORYTYPE_DEVICE);
  CUmemGenericAllocationHandle retained = 0;
  CHECK(cuMemRetainAllocationHandle(&retained, (void*)(uintptr_t)(base + g + 1)));
  EXPECT_TRUE(retained == p1);
  CHECK(cuMemRelease(retained));
  CUmemAllocationProp got;
  CHECK(cuMemGetAllocationPropertiesFromHandle(&got, big));
  EXPECT_TRUE(got.type == CU_MEM_ALLOCATION_TYPE_PINNED && got.location.id == device);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationPropertiesFromHandle(&got, 0x5eed));

  /* p0 seen through a second reservation: the same memory. */
  CUdeviceptr alias = 0;
  CHECK(cuMemAddressReserve(&alias, g, 0, 0, 0));
  CHECK(cuMemMap(alias, g, 0, p0, 0));
  SetAccess(alias, g, device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  const float marker = 12345.0f;
  CHECK(cuMemcpyHtoD(alias + 4, &marker, sizeof(marker)));
  float seen = 0;
  CHECK(cuMemcpyDtoH(&seen, base + 4, sizeof(seen)));
  EXPECT_TRUE(seen == marker);
  /* A copy may not run from one reservation into the next. */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(out, alias + g - 8, 16));

  /* Released while mapped: the memory stays until its last mapping goes. */
  CHECK(cuMemRelease(p0));
  CHECK(cuMemcpyDtoH(&seen, alias + 4, sizeof(seen)));
  EXPECT_TRUE(seen == marker);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(alias, g)); /* still mapped */
  CHECK(cuMemUnmap(alias, g));
  CHECK(cuMemAddressFree(alias, g));

  /* Unmapping: whole mappings only; an unmapped granule is no longer device memory. */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(base + g, g / 2));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(base + g, 3 * g)); /* granule 3 unmapped */
  CHECK(cuMemUnmap(base + g, g));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(out, base + g, 16));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(out, base, g + 16));
  CHECK(cuMemcpyDtoH(&seen, base + 4, sizeof(seen))); /* granule 0 still is */
  EXPECT_TRUE(seen == marker);
  /* ... and p1 can be mapped again. */
  CHECK(cuMemMap(base + 3 * g, g, 0, p1, 0));
  SetAccess(base + 3 * g, g, device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CHECK(cuMemsetD32(base + 3 * g, 7, g / 4));
  unsigned int word = 0;
  CHECK(cuMemcpyDtoH(&word, base + 4 * g - 4, 4));
  EXPECT_TRUE(word == 7);
  SetAccess(base + 3 * g, g, device, CU_MEM_ACCESS_FLAGS_PROT_NONE);
  CHECK(cuMemGetAccess(&flags, &here, base + 3 * g));
  EXPECT_TRUE(flags == CU_MEM_ACCESS_FLAGS_PROT_NONE);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(&word, base + 3 * g, 4));

  /* Everything given back: the memory is free again. */
  CHECK(cuMemUnmap(base, g));
  CHECK(cuMemUnmap(base + 2 * g, 2 * g));
  CHECK(cuMemAddressFree(base, 4 * g));
  CHECK(cuMemRelease(p1));
  CHECK(cuMemRelease(big));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemRelease(big));
  CHECK(cuMemFree(plain));
  EXPECT_TRUE(FreeMemory() == free_before);

  /* A kernel that reaches into an unmapped part of a reservation faults, in its context. */
  CUdeviceptr holes = 0;
  CUmemGenericAllocationHandle last;
  CHECK(cuMemAddressReserve(&holes, 2 * g, 0, 0, 0));
  CHECK(cuMemCreate(&last, g, &prop, 0));
  CHECK(cuMemMap(holes, g, 0, last, 0));
  SetAccess(holes, g, device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  Saxpy(saxpy, (int)(2 * g / sizeof(float)), 1.0f, holes, holes);
  EXPECT_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
  CHECK(cuCtxDestroy(context)); /* with its mappings, reservations and memory */

  free(x);
  free(y);
  free(out);
  free(ptx);
  printf("vmm: reservations, mappings, access and contiguous use correct\n");
  return 0;
}
