#include "adapters/cuda/cuda_adapter.h"

#include <cstring>

#include "adapters/cuda/cuda_context.h"
#include "common/log.h"

namespace pvgpu::adapters::cuda {

StatusOr<AdapterInfo> QueryAdapterInfo(const Driver& driver, CUdevice device) {
  const DriverApi& api = driver.api();
  AdapterInfo info;
  info.kind = "cuda";
  info.engine = "driver";
  info.is_software = false;
  char name[256] = {};
  PVGPU_TRY(driver.Check(api.cuDeviceGetName(name, sizeof(name) - 1, device), "cuDeviceGetName"));
  info.name = name;
  size_t total = 0;
  PVGPU_TRY(driver.Check(api.cuDeviceTotalMem(&total, device), "cuDeviceTotalMem"));
  info.total_memory = total;
  CUuuid uuid{};
  CUresult got = CUDA_ERROR_NOT_SUPPORTED;
  if (api.cuDeviceGetUuid != nullptr) got = api.cuDeviceGetUuid(&uuid, device);
  if (got != CUDA_SUCCESS && api.cuDeviceGetUuid1 != nullptr) {
    got = api.cuDeviceGetUuid1(&uuid, device);
  }
  if (got == CUDA_SUCCESS) std::memcpy(info.uuid.data(), uuid.bytes, info.uuid.size());
  // Every attribute the driver answers; the ones it does not know stay 0, as the wire expects.
  for (size_t attribute = 1; attribute < kAttributeSlots; ++attribute) {
    int value = 0;
    if (api.cuDeviceGetAttribute(&value, static_cast<CUdevice_attribute>(attribute), device) ==
        CUDA_SUCCESS) {
      info.attributes[attribute] = value;
    }
  }
  // Guests' managed memory is host memory registered with the GPU, whose device pointer must be
  // its host pointer (CudaContext::MapHostMemoryAt): a GPU without that offers none.
  if (info.attributes[CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM] == 0) {
    info.attributes[CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY] = 0;
    info.attributes[CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS] = 0;
  }
  info.pci_domain = static_cast<uint32_t>(info.attributes[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID]);
  info.pci_bus = static_cast<uint32_t>(info.attributes[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID]);
  info.pci_device = static_cast<uint32_t>(info.attributes[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID]);
  info.is_integrated = info.attributes[CU_DEVICE_ATTRIBUTE_INTEGRATED] != 0;
  // A stable id like DXCore's LUID: the UUID's leading bytes, which identify the board.
  std::memcpy(&info.luid, info.uuid.data(), sizeof(info.luid));
  return info;
}

CudaAdapter::CudaAdapter(std::shared_ptr<Driver> driver, std::shared_ptr<Nvml> nvml,
                         CUdevice device, AdapterInfo info)
    : driver_(std::move(driver)), nvml_(std::move(nvml)), device_(device), info_(std::move(info)) {
  if (nvml_) nvml_device_ = nvml_->FindDevice(info_.uuid);
}

uint32_t CudaAdapter::SampleUtilization() {
  if (nvml_device_ != nullptr) {
    if (auto percent = nvml_->Utilization(nvml_device_)) return *percent;
  }
  return busy_.SamplePercent();
}

StatusOr<std::unique_ptr<Context>> CudaAdapter::CreateContext() {
  return CudaContext::Create(this);
}

StatusOr<std::vector<std::unique_ptr<Adapter>>> CreateCudaAdapters(const CudaOptions& options) {
  DriverOptions driver_options;
  driver_options.path = options.driver_path;
  driver_options.listen_addresses = options.listen_addresses;
  PVGPU_ASSIGN_OR_RETURN(std::shared_ptr<Driver> driver, Driver::Load(driver_options));
  int count = 0;
  PVGPU_TRY(driver->Check(driver->api().cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (count <= 0) return Error(Code::kNoDevice, driver->path() + " reports no CUDA device");

  // NVML is optional: without it utilization is estimated from the adapter's own work.
  std::shared_ptr<Nvml> nvml;
  if (!driver->is_pvgpu() || !options.nvml_path.empty()) {
    auto loaded = Nvml::Load(options.nvml_path);
    if (loaded.ok()) {
      nvml = std::move(loaded).value();
    } else {
      PVGPU_INFO("cuda adapter: no NVML (" << loaded.status().message()
                                           << "); utilization is estimated");
    }
  }
  std::vector<std::unique_ptr<Adapter>> adapters;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice device = 0;
    PVGPU_TRY(driver->Check(driver->api().cuDeviceGet(&device, ordinal), "cuDeviceGet"));
    PVGPU_ASSIGN_OR_RETURN(AdapterInfo info, QueryAdapterInfo(*driver, device));
    adapters.push_back(std::make_unique<CudaAdapter>(driver, nvml, device, std::move(info)));
  }
  return adapters;
}

}  // namespace pvgpu::adapters::cuda
