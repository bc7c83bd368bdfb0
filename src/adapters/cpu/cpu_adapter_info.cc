// Device properties of the cpu adapter. It presents itself as a compute capability 8.0 device,
// the newest target whose PTX the engine runs completely (tensor cores, asynchronous copies,
// mbarriers: docs/tensor-cores.md, docs/ptx-async.md), with one "multiprocessor" per worker
// thread. Modules for older targets and for sm_90 load too (ptx::kDefaultMaxTargetSm).
#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "adapters/cpu/cpu_adapter.h"
#include "ptx/ptx.h"

namespace pvgpu::adapters::cpu {
namespace {

uint64_t PhysicalMemory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) : (8ull << 30);
}

// FNV-1a, twice with different seeds: a stable 128-bit identity from the machine and index.
std::array<uint8_t, 16> StableUuid(uint32_t index) {
  std::string seed;
  std::ifstream machine_id("/etc/machine-id");
  if (!std::getline(machine_id, seed) || seed.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    seed = host;
  }
  seed += "/pvgpu-cpu/" + std::to_string(index);
  std::array<uint8_t, 16> uuid{};
  for (int half = 0; half < 2; ++half) {
    uint64_t hash = 1469598103934665603ull ^ (half ? 0x9e3779b97f4a7c15ull : 0);
    for (char c : seed) {
      hash ^= static_cast<uint8_t>(c);
      hash *= 1099511628211ull;
    }
    std::memcpy(uuid.data() + 8 * half, &hash, 8);
  }
  uuid[6] = (uuid[6] & 0x0f) | 0x80;  // RFC 9562 version 8 (custom)
  uuid[8] = (uuid[8] & 0x3f) | 0x80;  // RFC 9562 variant
  return uuid;
}

}  // namespace

void FillCpuAdapterInfo(const CpuAdapterOptions& options, unsigned threads, AdapterInfo* info) {
  info->kind = "cpu";
  info->name = "pvgpu cpu adapter " + std::to_string(options.index) + " (PTX on " +
               std::to_string(threads) + " host threads)";
  info->uuid = StableUuid(options.index);
  std::memcpy(&info->luid, info->uuid.data(), sizeof(info->luid));
  info->total_memory = options.memory_bytes != 0 ? options.memory_bytes : PhysicalMemory() / 2;
  info->is_software = true;
  info->is_integrated = true;  // it shares the host's memory
  info->pci_domain = 0;
  info->pci_bus = 0xc0 + options.index;  // outside ranges real GPUs commonly use
  info->pci_device = 0;

  auto& a = info->attributes;
  a.fill(0);
  auto set = [&a](CUdevice_attribute attribute, int32_t value) {
    if (static_cast<size_t>(attribute) < a.size()) a[attribute] = value;
  };
  set(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, ptx::kMaxThreadsPerBlock);
  set(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024);
  set(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024);
  set(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64);
  set(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647);
  set(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535);
  set(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535);
  set(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, ptx::kMaxSharedBytesPerBlock);
  set(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, ptx::kMaxSharedBytesPerBlockOptin);
  set(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, ptx::kMaxSharedBytesPerBlockOptin);
  set(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 64 * 1024);
  set(CU_DEVICE_ATTRIBUTE_WARP_SIZE, ptx::kWarpSize);
  set(CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647);
  set(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536);
  set(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536);
  set(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1000000);  // kHz; nominal
  set(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 1000000);
  set(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 64);
  set(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 4 << 20);
  set(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512);
  set(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32);
  set(CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1);
  set(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, static_cast<int32_t>(threads));
  set(CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, 0);
  set(CU_DEVICE_ATTRIBUTE_INTEGRATED, 1);
  set(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1);
  set(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, CU_COMPUTEMODE_DEFAULT);
  set(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1);
  set(CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 0);
  set(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, static_cast<int32_t>(info->pci_bus));
  set(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, static_cast<int32_t>(info->pci_device));
  set(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, static_cast<int32_t>(info->pci_domain));
  set(CU_DEVICE_ATTRIBUTE_TCC_DRIVER, 0);
  set(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 1);
  set(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1);
  set(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048);
  set(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 8);
  set(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0);
  set(CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1);
  set(CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1);
  set(CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1);
  set(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 16);
  // Managed memory is shared pages at one address in guest and kernels (host/session_managed.cc):
  // coherent, so both sides may use it at once. The guest clears both on remote channels.
  set(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1);
  set(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1);
  set(CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD, 0);
  set(CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, 1);
  // Every block of a cooperative grid is resident (CoResidentBlocks); one device per launch.
  set(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1);
  set(CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH, 0);
  set(CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 0);
  set(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 0);
  set(CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, 0);
  // cuMemHostRegister works (the guest shares the pages with the host as a pinned region).
  set(CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1);
  // The device's memory is the daemon's; it is not a NUMA node of its own, and which host node
  // serves it is not something the guest can use, so both ids read "none" (-1).
  set(CU_DEVICE_ATTRIBUTE_NUMA_CONFIG, CU_DEVICE_NUMA_CONFIG_NONE);
  set(CU_DEVICE_ATTRIBUTE_NUMA_ID, -1);
  set(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, -1);
}

uint64_t CoResidentBlocks(const AdapterInfo& info, const ptx::KernelInfo& kernel,
                          uint64_t block_threads, uint64_t dynamic_shared_bytes) {
  auto attribute = [&info](CUdevice_attribute a) {
    return static_cast<uint64_t>(std::max(0, info.attributes[a]));
  };
  const uint64_t warp = std::max<uint64_t>(1, attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  uint64_t max_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  if (kernel.max_threads_per_block != 0) {
    max_block = std::min<uint64_t>(max_block, kernel.max_threads_per_block);
  }
  if (block_threads == 0 || block_threads > max_block) return 0;
  const uint64_t warps = (block_threads + warp - 1) / warp;
  uint64_t per_sm =
      std::min(std::max<uint64_t>(1, attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)),
               attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) / (warps * warp));
  const uint64_t shared = uint64_t{kernel.static_shared_bytes} + dynamic_shared_bytes;
  if (shared > 0) {
    per_sm = std::min(per_sm,
                      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) / shared);
  }
  return per_sm * attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
}

}  // namespace pvgpu::adapters::cpu
