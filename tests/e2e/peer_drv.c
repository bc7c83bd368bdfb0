/* Between devices: peer access (never possible: no adapter maps another's memory), copies
 * between contexts with cuMemcpyPeer and cuMemcpyPeerAsync, and every device found again by
 * the PCI bus id cuDeviceGetPCIBusId gives it. Run with two devices. */
#include "common.h"

static void TestPeerAccess(CUcontext a, CUcontext b) {
  int can = -1;
  for (CUdevice dev = 0; dev < 2; ++dev) {
    for (CUdevice peer = 0; peer < 2; ++peer) {
      can = -1;
      CHECK(cuDeviceCanAccessPeer(&can, dev, peer));
      EXPECT_TRUE(can == 0);
    }
  }
  EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE, cuDeviceCanAccessPeer(&can, 0, 2));
  EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE, cuDeviceCanAccessPeer(&can, -1, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuDeviceCanAccessPeer(NULL, 0, 1));

  CHECK(cuCtxSetCurrent(a));
  EXPECT_RESULT(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, cuCtxEnablePeerAccess(b, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuCtxEnablePeerAccess(b, 1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxEnablePeerAccess(a, 0)); /* itself */
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxEnablePeerAccess((CUcontext)&can, 0));
  EXPECT_RESULT(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, cuCtxDisablePeerAccess(b));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDisablePeerAccess(NULL));
  CHECK(cuCtxSetCurrent(NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxEnablePeerAccess(b, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDisablePeerAccess(b));
}

/* cuMemcpyPeer copies between the memory of two contexts (here on two devices), within one
 * context too; each range must be memory of the context named with it. */
static void TestMemcpyPeer(CUcontext a, CUcontext b) {
  enum { kWords = 300000 }; /* more than one chunk of the channel */
  static unsigned int host[kWords], back[kWords];
  for (unsigned int i = 0; i < kWords; ++i) host[i] = i * 2654435761u;
  CUdeviceptr in_a, out_a, in_b;
  CHECK(cuCtxSetCurrent(a));
  CHECK(cuMemAlloc(&in_a, sizeof(host)));
  CHECK(cuMemAlloc(&out_a, sizeof(host)));
  CHECK(cuMemcpyHtoD(in_a, host, sizeof(host)));
  CHECK(cuCtxSetCurrent(b));
  CHECK(cuMemAlloc(&in_b, sizeof(host)));
  CHECK(cuMemsetD32(in_b, 0, kWords));

  CHECK(cuMemcpyPeer(in_b, b, in_a, a, sizeof(host))); /* from a's device to b's */
  CHECK(cuMemcpyDtoH(back, in_b, sizeof(back)));
  EXPECT_TRUE(memcmp(back, host, sizeof(host)) == 0);

  /* Asynchronous, on a stream of the source's context, back the other way at an offset. */
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuCtxSetCurrent(a));
  CHECK(cuMemsetD32(out_a, 0, kWords));
  CHECK(cuMemcpyPeerAsync(out_a + 64, a, in_b, b, sizeof(host) - 64, stream));
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH(back, out_a, sizeof(back)));
  for (int i = 0; i < 16; ++i) EXPECT_TRUE(back[i] == 0);
  EXPECT_TRUE(memcmp(back + 16, host, sizeof(host) - 64) == 0);

  /* Within one context. */
  CHECK(cuMemsetD32(out_a, 0, kWords));
  CHECK(cuMemcpyPeer(out_a, a, in_a, a, sizeof(host)));
  CHECK(cuMemcpyDtoH(back, out_a, sizeof(back)));
  EXPECT_TRUE(memcmp(back, host, sizeof(host)) == 0);

  /* Nothing to copy; wrong contexts; memory nobody allocated; dead contexts. */
  CHECK(cuMemcpyPeer(in_b, b, in_a, a, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyPeer(in_b, a, in_a, a, 64));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyPeer(in_b, b, in_a, b, 64));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyPeer(in_b, b, in_a, a, sizeof(host) + 4));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyPeer(4096, b, in_a, a, 64));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuMemcpyPeer(in_b, (CUcontext)&stream, in_a, a, 64));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE,
                cuMemcpyPeerAsync(in_b, b, in_a, a, 64, (CUstream)&stream));

  CHECK(cuMemFree(in_a));
  CHECK(cuMemFree(out_a));
  CHECK(cuCtxSetCurrent(b));
  CHECK(cuStreamDestroy(stream));
  CHECK(cuMemFree(in_b));
}

static void TestPciBusIds(int count) {
  for (CUdevice device = 0; device < count; ++device) {
    char id[32];
    CHECK(cuDeviceGetPCIBusId(id, sizeof(id), device));
    CUdevice found = -1;
    CHECK(cuDeviceGetByPCIBusId(&found, id));
    EXPECT_TRUE(found == device);
    /* The same device in the other forms CUDA accepts: short fields, any case, without the
     * domain, without the function. */
    int domain = 0, bus = 0, slot = 0;
    CHECK(cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, device));
    CHECK(cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, device));
    CHECK(cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, device));
    const char* forms[] = {"%x:%x:%x.0", "%04X:%02X:%02X.0", "%x:%x:%x"};
    for (int f = 0; f < 3; ++f) {
      snprintf(id, sizeof(id), forms[f], domain, bus, slot);
      found = -1;
      CHECK(cuDeviceGetByPCIBusId(&found, id));
      EXPECT_TRUE(found == device);
    }
    if (domain == 0) {
      snprintf(id, sizeof(id), "%02x:%02x.0", bus, slot);
      found = -1;
      CHECK(cuDeviceGetByPCIBusId(&found, id));
      EXPECT_TRUE(found == device);
    }
    snprintf(id, sizeof(id), "%x:%x:%x.1", domain, bus, slot); /* a function no GPU has */
    EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetByPCIBusId(&found, id));
  }
  CUdevice found;
  EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetByPCIBusId(&found, "0000:fe:1f.0"));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetByPCIBusId(&found, "c0:00"));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetByPCIBusId(&found, "not a bus id"));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetByPCIBusId(&found, ""));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetByPCIBusId(&found, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetByPCIBusId(NULL, "0000:00:00.0"));
}

int main(void) {
  EXPECT_RESULT(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetByPCIBusId(&(CUdevice){0}, "0:0:0.0"));
  CHECK(cuInit(0));
  int count = 0;
  CHECK(cuDeviceGetCount(&count));
  EXPECT_TRUE(count >= 2);
  TestPciBusIds(count);
  CUcontext a, b;
  CHECK(cuCtxCreate(&a, NULL, 0, 0));
  CHECK(cuCtxCreate(&b, NULL, 0, 1));
  CHECK(cuCtxPopCurrent(NULL));
  CHECK(cuCtxPopCurrent(NULL));
  TestPeerAccess(a, b);
  TestMemcpyPeer(a, b);
  CHECK(cuCtxDestroy(a));
  CHECK(cuCtxDestroy(b));
  printf("peer access, cuMemcpyPeer, PCI bus ids of %d devices: ok\n", count);
  return 0;
}
