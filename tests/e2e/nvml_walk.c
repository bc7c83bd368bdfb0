/* Walks NVML the way container tooling (nvidia-container-cli, the Kubernetes device plugin)
 * does, against pvgpu's libnvidia-ml.so.1 and a host with at least two adapters, while this
 * process holds a CUDA context and memory on device 0 through libcuda. */
#include <stdint.h>

#include "common.h"
#include "guest/nvml/nvml_api.h"

#define NVML_EXPECT(expected, call)                                                          \
  do {                                                                                       \
    nvmlReturn_t nvml_result_ = (call);                                                      \
    if (nvml_result_ != (expected)) {                                                        \
      fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n", __FILE__, __LINE__,  \
              #call, (int)nvml_result_, nvmlErrorString(nvml_result_), (int)(expected),      \
              nvmlErrorString(expected));                                                    \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)
#define NVML_CHECK(call) NVML_EXPECT(NVML_SUCCESS, call)

static const size_t kHeld = 3u << 20;

static void BeforeInit(void) {
  unsigned count = 0;
  nvmlDevice_t device;
  NVML_EXPECT(NVML_ERROR_UNINITIALIZED, nvmlDeviceGetCount_v2(&count));
  NVML_EXPECT(NVML_ERROR_UNINITIALIZED, nvmlDeviceGetHandleByIndex_v2(0, &device));
  NVML_EXPECT(NVML_ERROR_UNINITIALIZED, nvmlShutdown());
  EXPECT_TRUE(strcmp(nvmlErrorString(NVML_ERROR_UNINITIALIZED), "Uninitialized") == 0);
}

static void Versions(void) {
  char text[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  NVML_CHECK(nvmlSystemGetDriverVersion(text, sizeof(text)));
  EXPECT_TRUE(strlen(text) > 0);
  char tiny[2];
  NVML_EXPECT(NVML_ERROR_INSUFFICIENT_SIZE, nvmlSystemGetDriverVersion(tiny, sizeof(tiny)));
  NVML_CHECK(nvmlSystemGetNVMLVersion(text, sizeof(text)));
  int cuda_version = 0, libcuda_version = 0;
  NVML_CHECK(nvmlSystemGetCudaDriverVersion(&cuda_version));
  CHECK(cuDriverGetVersion(&libcuda_version));
  EXPECT_TRUE(cuda_version == libcuda_version);
  NVML_CHECK(nvmlSystemGetCudaDriverVersion_v2(&cuda_version));
  EXPECT_TRUE(cuda_version == libcuda_version);
  printf("NVML %s, CUDA %d\n", text, cuda_version);
}

/* Processes on `device`: this one must be there, with at least the memory it holds. */
static void Processes(nvmlDevice_t device, int expect_self) {
  unsigned count = 0;
  nvmlReturn_t first = nvmlDeviceGetComputeRunningProcesses_v3(device, &count, NULL);
  EXPECT_TRUE(first == NVML_SUCCESS || first == NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_TRUE(expect_self ? count >= 1 : 1);
  nvmlProcessInfo_t infos[16];
  count = 16;
  NVML_CHECK(nvmlDeviceGetComputeRunningProcesses_v3(device, &count, infos));
  int found = 0;
  for (unsigned i = 0; i < count; ++i) {
    if (infos[i].pid == (unsigned)getpid()) {
      found = 1;
      EXPECT_TRUE(infos[i].usedGpuMemory >= kHeld);
      EXPECT_TRUE(infos[i].gpuInstanceId == 0xFFFFFFFFu);
    }
  }
  EXPECT_TRUE(found == expect_self);
  /* The original entry point fills the 16-byte v1 records. */
  nvmlProcessInfo_v1_t v1[16];
  unsigned v1_count = 16;
  NVML_CHECK(nvmlDeviceGetComputeRunningProcesses(device, &v1_count, v1));
  EXPECT_TRUE(v1_count == count);
  if (expect_self) {
    unsigned none = 0;
    NVML_EXPECT(NVML_ERROR_INSUFFICIENT_SIZE,
                nvmlDeviceGetComputeRunningProcesses_v3(device, &none, NULL));
    EXPECT_TRUE(none == count);
  }
  NVML_EXPECT(NVML_ERROR_INVALID_ARGUMENT,
              nvmlDeviceGetComputeRunningProcesses_v3(device, NULL, infos));
}

static void Device(unsigned index) {
  nvmlDevice_t device, again;
  NVML_CHECK(nvmlDeviceGetHandleByIndex_v2(index, &device));
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  NVML_CHECK(nvmlDeviceGetName(device, name, sizeof(name)));
  NVML_CHECK(nvmlDeviceGetUUID(device, uuid, sizeof(uuid)));
  EXPECT_TRUE(strncmp(uuid, "GPU-", 4) == 0);
  NVML_EXPECT(NVML_ERROR_INSUFFICIENT_SIZE, nvmlDeviceGetUUID(device, uuid, 4));
  NVML_CHECK(nvmlDeviceGetHandleByUUID(uuid, &again));
  EXPECT_TRUE(again == device);

  nvmlPciInfo_t pci;
  NVML_CHECK(nvmlDeviceGetPciInfo_v3(device, &pci));
  char expected_bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
  snprintf(expected_bus_id, sizeof(expected_bus_id), NVML_DEVICE_PCI_BUS_ID_FMT, pci.domain,
           pci.bus, pci.device);
  EXPECT_TRUE(strcmp(pci.busId, expected_bus_id) == 0);
  NVML_CHECK(nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &again));
  EXPECT_TRUE(again == device);
  NVML_CHECK(nvmlDeviceGetHandleByPciBusId_v2(pci.busIdLegacy, &again));
  EXPECT_TRUE(again == device);

  /* The PCI bus id libcuda reports names the same device. */
  char cuda_bus_id[32];
  CUdevice cu_device;
  CHECK(cuDeviceGet(&cu_device, (int)index));
  CHECK(cuDeviceGetPCIBusId(cuda_bus_id, sizeof(cuda_bus_id), cu_device));
  NVML_CHECK(nvmlDeviceGetHandleByPciBusId_v2(cuda_bus_id, &again));
  EXPECT_TRUE(again == device);

  nvmlMemory_t memory;
  NVML_CHECK(nvmlDeviceGetMemoryInfo(device, &memory));
  EXPECT_TRUE(memory.total > 0);
  EXPECT_TRUE(memory.used <= memory.total);
  EXPECT_TRUE(memory.free == memory.total - memory.used);
  if (index == 0) EXPECT_TRUE(memory.used >= kHeld);
  nvmlMemory_v2_t memory2;
  memory2.version = nvmlMemory_v2;
  NVML_CHECK(nvmlDeviceGetMemoryInfo_v2(device, &memory2));
  EXPECT_TRUE(memory2.total == memory.total);
  memory2.version = 1;
  NVML_EXPECT(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, nvmlDeviceGetMemoryInfo_v2(device, &memory2));

  nvmlUtilization_t utilization;
  NVML_CHECK(nvmlDeviceGetUtilizationRates(device, &utilization));
  EXPECT_TRUE(utilization.gpu <= 100 && utilization.memory <= 100);

  int major = 0, minor = 0, cu_major = 0, cu_minor = 0;
  NVML_CHECK(nvmlDeviceGetCudaComputeCapability(device, &major, &minor));
  CHECK(cuDeviceGetAttribute(&cu_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu_device));
  CHECK(cuDeviceGetAttribute(&cu_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu_device));
  EXPECT_TRUE(major == cu_major && minor == cu_minor);

  nvmlBrandType_t brand;
  NVML_CHECK(nvmlDeviceGetBrand(device, &brand));
  unsigned current, pending, value;
  NVML_EXPECT(NVML_ERROR_NOT_SUPPORTED, nvmlDeviceGetMigMode(device, &current, &pending));
  NVML_EXPECT(NVML_ERROR_NOT_SUPPORTED,
              nvmlDeviceGetTemperature(device, NVML_TEMPERATURE_GPU, &value));
  NVML_EXPECT(NVML_ERROR_NOT_SUPPORTED, nvmlDeviceGetPowerUsage(device, &value));

  Processes(device, index == 0);
  printf("device %u: %s %s %s, %llu/%llu bytes, cc %d.%d, gpu %u%%\n", index, name, uuid,
         pci.busId, memory.used, memory.total, major, minor, utilization.gpu);
}

int main(void) {
  (void)ReadPtx; /* common.h helper; this program loads no kernels */
  CHECK(cuInit(0));
  CUdevice cu_device;
  CUcontext context;
  CUdeviceptr held;
  CHECK(cuDeviceGet(&cu_device, 0));
  CHECK(cuCtxCreate(&context, NULL, 0, cu_device));
  CHECK(cuMemAlloc(&held, kHeld));

  BeforeInit();
  NVML_CHECK(nvmlInit_v2());
  Versions();

  unsigned count = 0;
  int cuda_count = 0;
  NVML_CHECK(nvmlDeviceGetCount_v2(&count));
  CHECK(cuDeviceGetCount(&cuda_count));
  EXPECT_TRUE(count >= 2);
  EXPECT_TRUE(count == (unsigned)cuda_count);
  for (unsigned i = 0; i < count; ++i) Device(i);

  nvmlDevice_t device;
  NVML_EXPECT(NVML_ERROR_INVALID_ARGUMENT, nvmlDeviceGetHandleByIndex_v2(count, &device));
  NVML_EXPECT(NVML_ERROR_INVALID_ARGUMENT, nvmlDeviceGetHandleByIndex_v2(0, NULL));
  NVML_EXPECT(NVML_ERROR_NOT_FOUND, nvmlDeviceGetHandleByUUID("GPU-no-such-device", &device));
  NVML_EXPECT(NVML_ERROR_INVALID_ARGUMENT, nvmlDeviceGetName(NULL, NULL, 0));
  /* An NVML function pvgpu does not implement (declared here: it is not in nvml_api.h). */
  extern nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t, unsigned int*);
  unsigned speed;
  NVML_CHECK(nvmlDeviceGetHandleByIndex_v2(0, &device));
  NVML_EXPECT(NVML_ERROR_NOT_SUPPORTED, nvmlDeviceGetFanSpeed(device, &speed));

  /* nvmlInit counts: the library stays up until the last matching nvmlShutdown. */
  NVML_CHECK(nvmlInit_v2());
  NVML_CHECK(nvmlShutdown());
  NVML_CHECK(nvmlDeviceGetCount_v2(&count));
  NVML_CHECK(nvmlShutdown());
  NVML_EXPECT(NVML_ERROR_UNINITIALIZED, nvmlDeviceGetCount_v2(&count));
  NVML_EXPECT(NVML_ERROR_UNINITIALIZED, nvmlShutdown());
  /* Handles survive a re-init. */
  NVML_CHECK(nvmlInitWithFlags(0));
  nvmlDevice_t after;
  NVML_CHECK(nvmlDeviceGetHandleByIndex_v2(0, &after));
  EXPECT_TRUE(after == device);
  NVML_CHECK(nvmlShutdown());

  CHECK(cuMemFree(held));
  CHECK(cuCtxDestroy(context));
  printf("nvml_walk: OK\n");
  return 0;
}
