#include "adapters/cuda/cuda_context.h"

#include <cstring>
#include <vector>

#include "common/log.h"

namespace pvgpu::adapters::cuda {

StatusOr<std::unique_ptr<Context>> CudaContext::Create(CudaAdapter* adapter) {
  const Driver& driver = adapter->driver();
  const DriverApi& api = driver.api();
  CUcontext context = nullptr;
  // CU_CTX_SCHED_AUTO: the driver spins while few contexts are active and yields when many
  // share the cores, which suits a daemon serving any number of sessions.
  CUresult created = CUDA_ERROR_NOT_SUPPORTED;
  if (api.cuCtxCreate != nullptr) {
    created = api.cuCtxCreate(&context, CU_CTX_SCHED_AUTO, adapter->device());
  }
  if ((created == CUDA_ERROR_NOT_SUPPORTED || api.cuCtxCreate == nullptr) &&
      api.cuCtxCreate4 != nullptr) {
    created = api.cuCtxCreate4(&context, nullptr, CU_CTX_SCHED_AUTO, adapter->device());
  }
  PVGPU_TRY(driver.Check(created, "cuCtxCreate"));
  // cuCtxCreate made the context current on this thread; every later call pushes it itself.
  CUcontext popped = nullptr;
  api.cuCtxPopCurrent(&popped);
  CUstream stream = nullptr;
  {
    ScopedContext current(api, context);
    Status made =
        driver.Check(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    if (!made.ok()) {
      api.cuCtxDestroy(context);
      return made;
    }
  }
  return std::unique_ptr<Context>(new CudaContext(adapter, context, stream));
}

CudaContext::CudaContext(CudaAdapter* adapter, CUcontext context, CUstream stream)
    : adapter_(adapter),
      context_(context),
      stream_(stream),
      completions_(std::make_unique<CompletionQueue>(adapter->driver(), context, stream)),
      staging_(std::make_unique<StagingPool>(adapter->driver(), context)) {}

CudaContext::~CudaContext() {
  const DriverApi& api = driver().api();
  {
    ScopedContext current(api, context_);
    api.cuStreamSynchronize(stream_);
  }
  completions_.reset();  // runs every outstanding callback, returning staging buffers
  staging_.reset();
  {
    ScopedContext current(api, context_);
    for (const auto& [dptr, host] : host_mappings_) api.cuMemHostUnregister(host);
    api.cuStreamDestroy(stream_);
  }
  // Destroying the context frees its allocations and modules on the device.
  api.cuCtxDestroy(context_);
  adapter_->AddUsed(-static_cast<int64_t>(used_.load()));
}

void CudaContext::AddUsed(int64_t delta) {
  used_.fetch_add(static_cast<uint64_t>(delta));
  adapter_->AddUsed(delta);
}

Status CudaContext::Submitted(CUresult result, const char* what) {
  // Even a failed call may have queued nothing; marking costs one event at most.
  completions_->MarkSubmitted();
  return driver().Check(result, what);
}

StatusOr<uint64_t> CudaContext::Allocate(uint64_t size) {
  ScopedContext current(driver().api(), context_);
  CUdeviceptr dptr = 0;
  PVGPU_TRY(driver().Check(driver().api().cuMemAlloc(&dptr, size), "cuMemAlloc"));
  allocations_[dptr] = size;
  AddUsed(static_cast<int64_t>(size));
  return static_cast<uint64_t>(dptr);
}

Status CudaContext::Free(uint64_t dptr) {
  auto it = allocations_.find(dptr);
  // Module globals belong to their module (unloaded with it), never to cuMemFree.
  if (it == allocations_.end()) return Error(Code::kInvalidValue, "not an allocation");
  // An array block goes only after its last texture or surface object, except when the
  // session tears the context down: its shadow goes with it then.
  DropShadow(dptr);
  ScopedContext current(driver().api(), context_);
  PVGPU_TRY(driver().Check(driver().api().cuMemFree(dptr), "cuMemFree"));
  AddUsed(-static_cast<int64_t>(it->second));
  allocations_.erase(it);
  return Status::Ok();
}

Status CudaContext::Write(uint64_t dst, std::span<const uint8_t> data) {
  if (data.empty()) return Status::Ok();
  MarkWritten(dst, data.size());
  const DriverApi& api = driver().api();
  ScopedContext current(api, context_);
  void* staging = data.size() <= StagingPool::kBufferBytes ? staging_->Take() : nullptr;
  if (staging == nullptr) {
    // The driver stages pageable memory before cuMemcpyHtoDAsync returns (after waiting for
    // the stream), so `data` (a session buffer, or the channel's ring, neither of them
    // registered with the driver) may be reused at once, as Write's contract requires.
    return Submitted(api.cuMemcpyHtoDAsync(dst, data.data(), data.size(), stream_),
                     "cuMemcpyHtoDAsync");
  }
  std::memcpy(staging, data.data(), data.size());
  Status copied =
      Submitted(api.cuMemcpyHtoDAsync(dst, staging, data.size(), stream_), "cuMemcpyHtoDAsync");
  StagingPool* pool = staging_.get();
  completions_->Add([pool, staging] { pool->Return(staging); });
  return copied;
}

Status CudaContext::Read(uint64_t src, std::span<uint8_t> data) {
  if (data.empty()) return Status::Ok();
  ScopedContext current(driver().api(), context_);
  PVGPU_TRY(Submitted(driver().api().cuMemcpyDtoHAsync(data.data(), src, data.size(), stream_),
                      "cuMemcpyDtoHAsync"));
  PVGPU_TRY(driver().Check(driver().api().cuStreamSynchronize(stream_), "cuStreamSynchronize"));
  // Everything before the copy is done: run the waiting callbacks now, so the fence covers
  // that work by the time the data goes back (their errors wait for the next Synchronize).
  completions_->MarkIdle();
  if (Status drained = completions_->Drain(); !drained.ok() && deferred_error_.ok()) {
    deferred_error_ = drained;
  }
  return Status::Ok();
}

Status CudaContext::WaitValue(uint64_t address, uint32_t width,
                              FunctionRef<bool(uint64_t)> satisfied) {
  auto read = [&]() -> StatusOr<uint64_t> {
    uint64_t value = 0;
    const std::span<uint8_t> bytes(reinterpret_cast<uint8_t*>(&value), width);
    PVGPU_TRY(Read(address, bytes));
    return value;  // little-endian: a 4-byte read fills the low half
  };
  return PollValue(read, satisfied, cancelled_);
}

Status CudaContext::Copy(uint64_t dst, uint64_t src, uint64_t size) {
  if (size == 0) return Status::Ok();
  MarkWritten(dst, size);
  ScopedContext current(driver().api(), context_);
  return Submitted(driver().api().cuMemcpyDtoDAsync(dst, src, size, stream_), "cuMemcpyDtoDAsync");
}

Status CudaContext::Memset(uint64_t dst, uint64_t pitch, uint32_t value, uint32_t element_size,
                           uint64_t width, uint64_t height) {
  if (width == 0 || height == 0) return Status::Ok();
  MarkWritten(dst, (height - 1) * pitch + width * element_size);
  const DriverApi& api = driver().api();
  ScopedContext current(api, context_);
  auto row = [&](uint64_t address) -> CUresult {
    switch (element_size) {
      case 1:
        return api.cuMemsetD8Async(address, static_cast<uint8_t>(value), width, stream_);
      case 2:
        return api.cuMemsetD16Async(address, static_cast<uint16_t>(value), width, stream_);
      default:
        return api.cuMemsetD32Async(address, value, width, stream_);
    }
  };
  if (height == 1) return Submitted(row(dst), "cuMemsetAsync");
  CUresult result = CUDA_ERROR_NOT_SUPPORTED;
  switch (element_size) {
    case 1:
      if (api.cuMemsetD2D8Async != nullptr) {
        result =
            api.cuMemsetD2D8Async(dst, pitch, static_cast<uint8_t>(value), width, height, stream_);
      }
      break;
    case 2:
      if (api.cuMemsetD2D16Async != nullptr) {
        result = api.cuMemsetD2D16Async(dst, pitch, static_cast<uint16_t>(value), width, height,
                                        stream_);
      }
      break;
    default:
      if (api.cuMemsetD2D32Async != nullptr) {
        result = api.cuMemsetD2D32Async(dst, pitch, value, width, height, stream_);
      }
      break;
  }
  if (result != CUDA_ERROR_NOT_SUPPORTED) return Submitted(result, "cuMemsetD2DAsync");
  // A driver without 2D memsets (pvgpu's own): one row at a time, still in stream order.
  for (uint64_t r = 0; r < height; ++r) {
    PVGPU_TRY(Submitted(row(dst + r * pitch), "cuMemsetAsync"));
  }
  return Status::Ok();
}

StatusOr<uint64_t> CudaContext::MapHostMemory(uint8_t* data, uint64_t size) {
  const DriverApi& api = driver().api();
  if (api.cuMemHostRegister == nullptr || api.cuMemHostGetDevicePointer == nullptr) {
    return Error(Code::kNotSupported, "the driver cannot register host memory");
  }
  ScopedContext current(api, context_);
  // DEVICEMAP: kernels address the guest's pinned region directly, and copies from it are
  // DMA with no staging.
  PVGPU_TRY(driver().Check(api.cuMemHostRegister(data, size, CU_MEMHOSTREGISTER_DEVICEMAP),
                           "cuMemHostRegister"));
  CUdeviceptr dptr = 0;
  Status mapped =
      driver().Check(api.cuMemHostGetDevicePointer(&dptr, data, 0), "cuMemHostGetDevicePointer");
  if (!mapped.ok()) {
    api.cuMemHostUnregister(data);
    return mapped;
  }
  host_mappings_[dptr] = data;
  return static_cast<uint64_t>(dptr);
}

// Managed memory on a GPU, correct before fast: the guest's shared pages, mapped at the same
// address in the daemon, registered as pinned host memory. Under unified addressing (every
// 64-bit GPU since Fermi on Linux) a registered range's device pointer is its host pointer
// (CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM), so kernels use the guest's
// pointer as it is; every access crosses the bus (no migration), which is slow but coherent.
StatusOr<uint64_t> CudaContext::MapHostMemoryAt(uint8_t* data, uint64_t size, uint64_t address) {
  if (reinterpret_cast<uint64_t>(data) != address) {
    return Error(Code::kNotSupported, "managed memory must be mapped at its guest address");
  }
  PVGPU_ASSIGN_OR_RETURN(uint64_t dptr, MapHostMemory(data, size));
  if (dptr != address) {
    (void)UnmapHostMemory(dptr);
    return Error(Code::kNotSupported,
                 "the GPU's device pointer for registered memory is not its host pointer (no "
                 "unified addressing): managed memory is not supported on it");
  }
  return dptr;
}

Status CudaContext::UnmapHostMemory(uint64_t dptr) {
  auto it = host_mappings_.find(dptr);
  if (it == host_mappings_.end()) return Error(Code::kInvalidValue, "not a host mapping");
  ScopedContext current(driver().api(), context_);
  // Work still reading the region must finish before the guest may reuse it.
  WaitIdle();
  Status status =
      driver().Check(driver().api().cuMemHostUnregister(it->second), "cuMemHostUnregister");
  host_mappings_.erase(it);
  return status;
}

StatusOr<std::unique_ptr<Module>> CudaContext::LoadModule(const ModuleImage& image,
                                                          std::string* error_log,
                                                          std::string* info_log) {
  ScopedContext current(driver().api(), context_);
  const auto& attributes = adapter_->info().attributes;
  const int cc = attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] * 10 +
                 attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
  return LoadCudaModule(*this, cc, image, error_log, info_log);
}

Status CudaContext::Launch(Module& module, uint32_t kernel, const LaunchConfig& config,
                           std::span<const uint8_t> params,
                           const std::function<void(std::string_view)>& print) {
  // Device printf goes to the driver's own FIFO and from there to pvgpud's stdout: the real
  // driver offers no hook to capture it (see docs/cuda-adapter.md).
  (void)print;
  if (cancelled_.load()) return Error(Code::kLaunchFailed, "context is being torn down");
  if (kernel >= module.kernels().size()) return Error(Code::kInvalidHandle, "no such kernel");
  const KernelInfo& info = module.kernels()[kernel];
  // kernelParams: one pointer per parameter into the packed buffer the session validated;
  // the driver copies the values before cuLaunchKernel returns.
  std::vector<void*> pointers;
  pointers.reserve(info.param_offsets.size());
  for (size_t i = 0; i < info.param_offsets.size(); ++i) {
    if (uint64_t{info.param_offsets[i]} + info.param_sizes[i] > params.size()) {
      return Error(Code::kInvalidValue, "parameter buffer shorter than the kernel's layout");
    }
    pointers.push_back(const_cast<uint8_t*>(params.data()) + info.param_offsets[i]);
  }
  ScopedContext current(driver().api(), context_);
  // More dynamic shared memory than a block has by default needs the function's opt-in on a
  // GPU; the guest checked the amount against the opt-in its application set.
  constexpr uint32_t kDefaultDynamicShared = 48 * 1024;
  if (config.shared_bytes > kDefaultDynamicShared && driver().api().cuFuncSetAttribute != nullptr) {
    PVGPU_TRY(driver().Check(
        driver().api().cuFuncSetAttribute(ModuleFunction(module, kernel),
                                          CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          static_cast<int>(config.shared_bytes)),
        "cuFuncSetAttribute"));
  }
  // Textures over arrays read the driver's shadow arrays: bring those the block changed under
  // up to date first, in stream order before the kernel (cuda_texture.cc).
  PVGPU_TRY(RefreshShadows());
  const bool track = adapter_->tracks_busy();
  if (track) adapter_->busy().KernelStarted();
  void** kernel_params = pointers.empty() ? nullptr : pointers.data();
  Status launched;
  if (config.cooperative) {
    // The driver itself decides what is co-resident (registers included) and answers
    // CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE here, before anything is queued.
    if (driver().api().cuLaunchCooperativeKernel == nullptr) {
      launched =
          Error(Code::kNotSupported, "the host's CUDA driver has no cuLaunchCooperativeKernel");
    } else {
      launched = Submitted(driver().api().cuLaunchCooperativeKernel(
                               ModuleFunction(module, kernel), config.grid.x, config.grid.y,
                               config.grid.z, config.block.x, config.block.y, config.block.z,
                               config.shared_bytes, stream_, kernel_params),
                           "cuLaunchCooperativeKernel");
    }
  } else {
    launched = Submitted(
        driver().api().cuLaunchKernel(ModuleFunction(module, kernel), config.grid.x, config.grid.y,
                                      config.grid.z, config.block.x, config.block.y, config.block.z,
                                      config.shared_bytes, stream_, kernel_params, nullptr),
        "cuLaunchKernel");
  }
  if (launched.ok()) {
    // What the kernel may have written through surfaces, back into the blocks copies read, in
    // stream order after it. The launch itself succeeded: a failed copy is the guest's error
    // at its next synchronization.
    if (Status back = WriteBackSurfaces(); !back.ok() && deferred_error_.ok()) {
      deferred_error_ = back;
    }
  }
  if (track) {
    CudaAdapter* adapter = adapter_;
    completions_->Add([adapter] { adapter->busy().KernelFinished(); });
  }
  return launched;
}

void CudaContext::NotifyWhenDone(std::function<void()> done) {
  ScopedContext current(driver().api(), context_);
  completions_->Add(std::move(done));
}

Status CudaContext::Synchronize() {
  Status synced;
  {
    ScopedContext current(driver().api(), context_);
    synced = driver().Check(driver().api().cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }
  if (synced.ok()) completions_->MarkIdle();
  Status drained = completions_->Drain();
  Status deferred = deferred_error_;
  deferred_error_ = Status::Ok();
  if (!deferred.ok()) return deferred;
  if (!drained.ok()) return drained;
  return synced;
}

void CudaContext::WaitIdle() {
  ScopedContext current(driver().api(), context_);
  Status synced =
      driver().Check(driver().api().cuStreamSynchronize(stream_), "cuStreamSynchronize");
  if (!synced.ok() && deferred_error_.ok()) deferred_error_ = synced;
}

}  // namespace pvgpu::adapters::cuda
