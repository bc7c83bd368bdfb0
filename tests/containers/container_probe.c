/* Runs inside the test containers and reports, one fact per line, what the container's CUDA
 * and NVML see. The test on the host reads the lines; this program judges nothing itself.
 *
 *   container_probe devices [HOST]   cuInit's result, the device count, each device's UUID
 *                                    and total memory; with HOST, PVGPU_HOST is set to it
 *                                    first (a process in the container trying other sockets)
 *   container_probe alloc MIB [hold] allocates MIB-sized blocks on device 0 until one fails,
 *                                    prints how many succeeded and the error; with "hold",
 *                                    keeps them until stdin closes
 *   container_probe nvml             the same facts through libnvidia-ml.so.1 (dlopen'ed, so
 *                                    that this program needs no NVML at link time)
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void PrintUuid(const unsigned char* bytes) {
  printf("GPU-");
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) printf("-");
    printf("%02x", bytes[i]);
  }
}

static int Devices(void) {
  CUresult result = cuInit(0);
  printf("cuInit %d\n", (int)result);
  if (result != CUDA_SUCCESS) return 0;
  int count = 0;
  result = cuDeviceGetCount(&count);
  printf("count %d (result %d)\n", count, (int)result);
  for (int i = 0; i < count; ++i) {
    CUdevice device;
    CUuuid uuid;
    size_t total = 0;
    if (cuDeviceGet(&device, i) != CUDA_SUCCESS || cuDeviceGetUuid(&uuid, device) != 0 ||
        cuDeviceTotalMem(&total, device) != CUDA_SUCCESS) {
      printf("device %d query failed\n", i);
      return 1;
    }
    printf("device %d ", i);
    PrintUuid((const unsigned char*)uuid.bytes);
    printf(" total %zu\n", total);
  }
  return 0;
}

static int Alloc(size_t mib, int hold) {
  CUresult result = cuInit(0);
  CUdevice device;
  CUcontext context;
  if (result != CUDA_SUCCESS || cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS ||
      cuCtxSetCurrent(context) != CUDA_SUCCESS) {
    printf("setup failed %d\n", (int)result);
    return 1;
  }
  size_t free_bytes = 0, total_bytes = 0;
  cuMemGetInfo(&free_bytes, &total_bytes);
  printf("meminfo total %zu\n", total_bytes);
  int allocated = 0;
  CUdeviceptr block;
  for (;;) {
    result = cuMemAlloc(&block, mib << 20);
    if (result != CUDA_SUCCESS) break;
    ++allocated;
    if (allocated > 100000) break; /* no quota at all: stop rather than exhaust the host */
  }
  printf("allocated %d\n", allocated);
  printf("alloc_error %d\n", (int)result);
  fflush(stdout);
  if (hold) {
    char buffer[64];
    while (read(0, buffer, sizeof(buffer)) > 0) {
    }
  }
  cuDevicePrimaryCtxRelease(device);
  return 0;
}

typedef struct {
  unsigned long long total, free, used;
} NvmlMemory;

static int Nvml(void) {
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (library == NULL) {
    printf("nvml missing %s\n", dlerror());
    return 0;
  }
  int (*init)(void) = (int (*)(void))dlsym(library, "nvmlInit_v2");
  int (*count_of)(unsigned*) = (int (*)(unsigned*))dlsym(library, "nvmlDeviceGetCount_v2");
  int (*handle_of)(unsigned, void**) =
      (int (*)(unsigned, void**))dlsym(library, "nvmlDeviceGetHandleByIndex_v2");
  int (*uuid_of)(void*, char*, unsigned) =
      (int (*)(void*, char*, unsigned))dlsym(library, "nvmlDeviceGetUUID");
  int (*memory_of)(void*, NvmlMemory*) =
      (int (*)(void*, NvmlMemory*))dlsym(library, "nvmlDeviceGetMemoryInfo");
  if (!init || !count_of || !handle_of || !uuid_of || !memory_of) {
    printf("nvml incomplete\n");
    return 1;
  }
  int result = init();
  printf("nvmlInit %d\n", result);
  if (result != 0) return 0;
  unsigned count = 0;
  result = count_of(&count);
  printf("nvml count %u (result %d)\n", count, result);
  for (unsigned i = 0; i < count; ++i) {
    void* device = NULL;
    char uuid[96] = {0};
    NvmlMemory memory;
    if (handle_of(i, &device) != 0 || uuid_of(device, uuid, sizeof(uuid)) != 0 ||
        memory_of(device, &memory) != 0) {
      printf("nvml device %u query failed\n", i);
      return 1;
    }
    printf("nvml device %u %s total %llu\n", i, uuid, memory.total);
  }
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 2 && strcmp(argv[1], "devices") == 0) {
    if (argc >= 3) setenv("PVGPU_HOST", argv[2], 1);
    return Devices();
  }
  if (argc >= 3 && strcmp(argv[1], "alloc") == 0) {
    return Alloc((size_t)strtoul(argv[2], NULL, 10), argc >= 4 && strcmp(argv[3], "hold") == 0);
  }
  if (argc >= 2 && strcmp(argv[1], "nvml") == 0) return Nvml();
  fprintf(stderr, "usage: container_probe devices [HOST] | alloc MIB [hold] | nvml\n");
  return 2;
}
