// cudaGetDeviceProperties and cudaDeviceGetAttribute: the runtime reads every property from
// driver attributes, so the two views must agree with each other and describe a usable device.
#include <cstring>

#include "runtime_check.h"

int Attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

int main() {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  EXPECT_TRUE(count >= 1);
  int runtime = 0, driver = 0;
  CHECK(cudaRuntimeGetVersion(&runtime));
  CHECK(cudaDriverGetVersion(&driver));
  EXPECT_TRUE(driver / 1000 >= runtime / 1000);
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp prop;
    std::memset(&prop, 0, sizeof(prop));
    CHECK(cudaGetDeviceProperties(&prop, device));
    std::printf("device %d: %s, compute %d.%d, %d multiprocessors, %zu MiB, warp %d\n", device,
                prop.name, prop.major, prop.minor, prop.multiProcessorCount,
                prop.totalGlobalMem >> 20, prop.warpSize);
    EXPECT_TRUE(std::strlen(prop.name) > 0);
    EXPECT_TRUE(prop.major >= 3);
    EXPECT_TRUE(prop.totalGlobalMem > 0);
    EXPECT_TRUE(prop.warpSize == 32);
    EXPECT_TRUE(prop.maxThreadsPerBlock >= 64);
    EXPECT_TRUE(prop.multiProcessorCount >= 1);
    EXPECT_TRUE(prop.major == Attribute(cudaDevAttrComputeCapabilityMajor, device));
    EXPECT_TRUE(prop.minor == Attribute(cudaDevAttrComputeCapabilityMinor, device));
    EXPECT_TRUE(prop.maxThreadsPerBlock == Attribute(cudaDevAttrMaxThreadsPerBlock, device));
    EXPECT_TRUE(prop.maxThreadsDim[0] == Attribute(cudaDevAttrMaxBlockDimX, device));
    EXPECT_TRUE(prop.maxGridSize[0] == Attribute(cudaDevAttrMaxGridDimX, device));
    EXPECT_TRUE(prop.sharedMemPerBlock ==
                size_t(Attribute(cudaDevAttrMaxSharedMemoryPerBlock, device)));
    EXPECT_TRUE(prop.multiProcessorCount == Attribute(cudaDevAttrMultiProcessorCount, device));
    EXPECT_TRUE(prop.pciBusID == Attribute(cudaDevAttrPciBusId, device));
    EXPECT_TRUE(prop.managedMemory == Attribute(cudaDevAttrManagedMemory, device));
    EXPECT_TRUE(prop.cooperativeLaunch == Attribute(cudaDevAttrCooperativeLaunch, device));
    EXPECT_TRUE(prop.unifiedAddressing == 1);
    size_t free_bytes = 0, total_bytes = 0;
    CHECK(cudaSetDevice(device));
    CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    EXPECT_TRUE(total_bytes > 0 && free_bytes <= total_bytes);
    char bus_id[32];
    CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device));
    int again = -1;
    CHECK(cudaDeviceGetByPCIBusId(&again, bus_id));
    EXPECT_TRUE(again == device);
  }
  EXPECT_ERROR(cudaErrorInvalidDevice, cudaSetDevice(count));
  std::printf("device properties of %d device(s): ok (runtime %d, driver %d)\n", count, runtime,
              driver);
  return 0;
}
