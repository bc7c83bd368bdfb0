// Virtual memory management on the cuda adapter: the host driver's own reservations, physical
// allocations and mappings (docs/memory.md). The session has checked every range against the
// guest's reservations and mappings before these run, so the driver sees only requests that
// name this context's own memory; its answers still come back as errors.
#include <sys/stat.h>

#include "adapters/cuda/completion_queue.h"
#include "adapters/cuda/cuda_adapter.h"
#include "adapters/cuda/cuda_context.h"

namespace pvgpu::adapters::cuda {
namespace {

CUmemAllocationProp PinnedOn(CUdevice device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

constexpr auto kPosixFd = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

// A physical allocation of the driver; released when the session lets it go (the driver keeps
// the memory while a mapping still uses it, as the session does).
class CudaPhysical final : public PhysicalMemory {
 public:
  CudaPhysical(CudaContext* context, CUmemGenericAllocationHandle handle, uint64_t size)
      : context_(context), handle_(handle), size_(size) {
    context_->AddUsed(static_cast<int64_t>(size_));
  }
  ~CudaPhysical() override {
    context_->driver().api().cuMemRelease(handle_);
    context_->AddUsed(-static_cast<int64_t>(size_));
  }
  CudaPhysical(const CudaPhysical&) = delete;
  CudaPhysical& operator=(const CudaPhysical&) = delete;
  uint64_t size() const override { return size_; }
  StatusOr<int> ExportFd() const override {
    const DriverApi& api = context_->driver().api();
    if (api.cuMemExportToShareableHandle == nullptr) {
      return Error(Code::kNotSupported, "the host driver cannot export memory");
    }
    int fd = -1;
    PVGPU_TRY(context_->driver().Check(api.cuMemExportToShareableHandle(&fd, handle_, kPosixFd, 0),
                                       "cuMemExportToShareableHandle"));
    return fd;
  }
  CUmemGenericAllocationHandle handle() const { return handle_; }

 private:
  CudaContext* const context_;
  const CUmemGenericAllocationHandle handle_;
  const uint64_t size_;
};

Status Missing() {
  return Error(Code::kNotSupported, "the host driver has no virtual memory management");
}

}  // namespace

uint64_t CudaContext::granularity() const {
  const DriverApi& api = driver().api();
  if (api.cuMemGetAllocationGranularity == nullptr) return 0;
  CUmemAllocationProp prop = PinnedOn(adapter_->device());
  size_t granularity = 0;
  if (api.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
      CUDA_SUCCESS) {
    return 0;
  }
  return granularity;
}

StatusOr<std::unique_ptr<PhysicalMemory>> CudaContext::CreatePhysical(uint64_t size) {
  const DriverApi& api = driver().api();
  if (api.cuMemCreate == nullptr || api.cuMemRelease == nullptr) return Missing();
  ScopedContext current(api, context_);
  CUmemAllocationProp prop = PinnedOn(adapter_->device());
  CUmemGenericAllocationHandle handle = 0;
  // Exportable, where the driver allows it, so that the guest may ask later.
  if (api.cuMemExportToShareableHandle != nullptr) {
    prop.requestedHandleTypes = kPosixFd;
    if (api.cuMemCreate(&handle, size, &prop, 0) == CUDA_SUCCESS) {
      return std::unique_ptr<PhysicalMemory>(std::make_unique<CudaPhysical>(this, handle, size));
    }
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  }
  PVGPU_TRY(driver().Check(api.cuMemCreate(&handle, size, &prop, 0), "cuMemCreate"));
  return std::unique_ptr<PhysicalMemory>(std::make_unique<CudaPhysical>(this, handle, size));
}

// The driver checks the descriptor; the size comes from the descriptor itself, which pvgpu's
// own driver's (a memfd) tells and NVIDIA's does not: memory the session cannot size is refused.
StatusOr<std::unique_ptr<PhysicalMemory>> CudaContext::ImportPhysical(int fd) {
  const DriverApi& api = driver().api();
  if (api.cuMemImportFromShareableHandle == nullptr || api.cuMemRelease == nullptr) {
    return Error(Code::kNotSupported, "the host driver cannot import memory");
  }
  ScopedContext current(api, context_);
  CUmemGenericAllocationHandle handle = 0;
  PVGPU_TRY(
      driver().Check(api.cuMemImportFromShareableHandle(
                         &handle, reinterpret_cast<void*>(static_cast<intptr_t>(fd)), kPosixFd),
                     "cuMemImportFromShareableHandle"));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    api.cuMemRelease(handle);
    return Error(Code::kNotSupported,
                 "the size of memory imported from this driver's descriptor is unknown");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  return std::unique_ptr<PhysicalMemory>(std::make_unique<CudaPhysical>(this, handle, size));
}

StatusOr<uint64_t> CudaContext::ReserveAddress(uint64_t size, uint64_t alignment) {
  const DriverApi& api = driver().api();
  if (api.cuMemAddressReserve == nullptr || api.cuMemAddressFree == nullptr) return Missing();
  ScopedContext current(api, context_);
  CUdeviceptr base = 0;
  PVGPU_TRY(
      driver().Check(api.cuMemAddressReserve(&base, size, alignment, 0, 0), "cuMemAddressReserve"));
  return static_cast<uint64_t>(base);
}

Status CudaContext::FreeAddress(uint64_t base, uint64_t size) {
  const DriverApi& api = driver().api();
  if (api.cuMemAddressFree == nullptr) return Missing();
  ScopedContext current(api, context_);
  return driver().Check(api.cuMemAddressFree(base, size), "cuMemAddressFree");
}

Status CudaContext::MapPhysical(uint64_t address, uint64_t size, PhysicalMemory& memory,
                                uint64_t offset) {
  const DriverApi& api = driver().api();
  if (api.cuMemMap == nullptr || api.cuMemUnmap == nullptr) return Missing();
  ScopedContext current(api, context_);
  return driver().Check(
      api.cuMemMap(address, size, offset, static_cast<CudaPhysical&>(memory).handle(), 0),
      "cuMemMap");
}

Status CudaContext::UnmapPhysical(uint64_t address, uint64_t size) {
  const DriverApi& api = driver().api();
  if (api.cuMemUnmap == nullptr) return Missing();
  // Work queued on the context's stream may still use the range: it finishes first (its error
  // stays for the guest's next synchronizing call).
  WaitIdle();
  ScopedContext current(api, context_);
  return driver().Check(api.cuMemUnmap(address, size), "cuMemUnmap");
}

Status CudaContext::SetAccess(uint64_t address, uint64_t size, bool accessible) {
  const DriverApi& api = driver().api();
  if (api.cuMemSetAccess == nullptr) return Missing();
  ScopedContext current(api, context_);
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = adapter_->device();
  access.flags = accessible ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return driver().Check(api.cuMemSetAccess(address, size, &access, 1), "cuMemSetAccess");
}

}  // namespace pvgpu::adapters::cuda
