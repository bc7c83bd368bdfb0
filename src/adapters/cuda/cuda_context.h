// One pvgpu context on a cuda adapter: a real CUDA context of its own (the hardware keeps
// sessions apart), one stream on which every copy, memset and launch is queued in submission
// order, and the completion queue that tells the session when work is done.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/cuda/completion_queue.h"
#include "adapters/cuda/cuda_adapter.h"
#include "adapters/cuda/staging_pool.h"

namespace pvgpu::adapters::cuda {

class CudaContext final : public Context {
 public:
  static StatusOr<std::unique_ptr<Context>> Create(CudaAdapter* adapter);
  ~CudaContext() override;

  StatusOr<uint64_t> Allocate(uint64_t size) override;
  Status Free(uint64_t dptr) override;
  Status Write(uint64_t dst, std::span<const uint8_t> data) override;
  Status Read(uint64_t src, std::span<uint8_t> data) override;
  Status Copy(uint64_t dst, uint64_t src, uint64_t size) override;
  Status Memset(uint64_t dst, uint64_t pitch, uint32_t value, uint32_t element_size, uint64_t width,
                uint64_t height) override;
  // Pinned guest memory (the adapter.h hooks of the host-memory work, which lands separately:
  // no `override` here so that this file builds with and without them; an abstract-class error
  // still catches a signature that drifts).
  StatusOr<uint64_t> MapHostMemory(uint8_t* data, uint64_t size) override;
  StatusOr<uint64_t> MapHostMemoryAt(uint8_t* data, uint64_t size, uint64_t address) override;
  Status UnmapHostMemory(uint64_t dptr) override;
  StatusOr<std::unique_ptr<Module>> LoadModule(const ModuleImage& image, std::string* error_log,
                                               std::string* info_log) override;
  Status Launch(Module& module, uint32_t kernel, const LaunchConfig& config,
                std::span<const uint8_t> params,
                const std::function<void(std::string_view)>& print) override;
  // Polls the value with Read (each read follows the work queued before it), not the driver's
  // cuStreamWaitValue32: a wait in the driver's stream could not be cancelled when the guest
  // goes, and the session's next synchronization would hang in the driver (docs/memory.md).
  Status WaitValue(uint64_t address, uint32_t width,
                   FunctionRef<bool(uint64_t)> satisfied) override;

  // Texture and surface objects (cuda_texture.cc, docs/textures.md): over linear and pitched
  // memory directly, over an array through the driver's own array that shadows its block.
  StatusOr<uint64_t> CreateTexture(uint64_t handle, const texture::TextureSpec& spec) override;
  void DestroyTexture(uint64_t handle) override;
  // Virtual memory management through the driver's own cuMem* calls (cuda_vmm.cc).
  uint64_t granularity() const override;
  StatusOr<std::unique_ptr<PhysicalMemory>> CreatePhysical(uint64_t size) override;
  StatusOr<std::unique_ptr<PhysicalMemory>> ImportPhysical(int fd) override;
  StatusOr<uint64_t> ReserveAddress(uint64_t size, uint64_t alignment) override;
  Status FreeAddress(uint64_t base, uint64_t size) override;
  Status MapPhysical(uint64_t address, uint64_t size, PhysicalMemory& memory,
                     uint64_t offset) override;
  Status UnmapPhysical(uint64_t address, uint64_t size) override;
  Status SetAccess(uint64_t address, uint64_t size, bool accessible) override;
  void Cancel() override { cancelled_.store(true); }
  uint64_t used_bytes() const override { return used_.load(); }

  bool asynchronous() const override { return true; }
  void NotifyWhenDone(std::function<void()> done) override;
  Status Synchronize() override;

  // For modules: the driver, the context and memory accounting of their globals.
  const Driver& driver() const { return adapter_->driver(); }
  CUcontext context() const { return context_; }
  void AddUsed(int64_t delta);
  // Waits for the stream without consuming its error (module unload needs an idle stream;
  // the error still belongs to the guest's next synchronizing call).
  void WaitIdle();

 private:
  // The driver's own array (or mipmapped array) for one pvgpu array block, which texture and
  // surface objects over the array read; the block stays what copies see (cuda_texture.cc).
  struct Shadow {
    texture::ArrayLayout layout;
    CUarray array = nullptr;               // a one-level array, or
    CUmipmappedArray mipmapped = nullptr;  // a mipmapped one
    std::vector<CUarray> levels;           // the driver's array of each level
    std::vector<uint32_t> surfaces;        // live surface objects over each level
    uint32_t objects = 0;                  // live texture and surface objects over it
    bool dirty = true;                     // the block may differ from the driver's array
  };
  // A texture or surface object the driver made for a session handle.
  struct DriverObject {
    uint64_t value = 0;  // the CUtexObject or CUsurfObject
    bool surface = false;
    uint64_t shadow = 0;  // the block whose shadow it reads (0: over device memory)
    uint32_t level = 0;   // the shadow's level a one-level object covers
  };

  CudaContext(CudaAdapter* adapter, CUcontext context, CUstream stream);
  Status Submitted(CUresult result, const char* what);
  // Shadows (cuda_texture.cc). The context is current in all of them.
  StatusOr<Shadow*> AcquireShadow(const texture::TextureSpec& spec);
  void ReleaseShadow(uint64_t base);
  void DestroyObject(const DriverObject& object);
  Status CopyShadowLevel(uint64_t base, const Shadow& shadow, size_t level, bool to_shadow);
  // Marks the shadows of blocks that [dst, dst + size) overlaps as needing a refresh.
  void MarkWritten(uint64_t dst, uint64_t size);
  // Before a launch: every dirty shadow from its block. After one: every level a surface may
  // have written back to its block. Both queued on the launch's stream.
  Status RefreshShadows();
  Status WriteBackSurfaces();
  // Destroys the objects and the shadow of a block that is being freed (context teardown).
  void DropShadow(uint64_t base);

  CudaAdapter* const adapter_;
  const CUcontext context_;
  const CUstream stream_;
  std::unique_ptr<CompletionQueue> completions_;
  std::unique_ptr<StagingPool> staging_;       // its buffers come back through completions_
  std::map<uint64_t, uint64_t> allocations_;   // dptr -> size, cuMemAlloc'd by this context
  std::map<uint64_t, void*> host_mappings_;    // dptr -> registered host address
  std::map<uint64_t, DriverObject> textures_;  // session handle -> the driver's object
  std::map<uint64_t, Shadow> shadows_;         // array block base -> its shadow
  uint32_t live_surfaces_ = 0;                 // surface objects over shadows
  std::atomic<uint64_t> used_{0};
  std::atomic<bool> cancelled_{false};
  Status deferred_error_;  // seen by WaitIdle, reported by the next Synchronize
};

// Loads `image` into `context` through the driver and describes its kernels and globals
// (cuda_module.cc).
StatusOr<std::unique_ptr<Module>> LoadCudaModule(CudaContext& context, int compute_capability,
                                                 const ModuleImage& image, std::string* error_log,
                                                 std::string* info_log);
// The driver function of kernel `index` of a module LoadCudaModule made.
CUfunction ModuleFunction(const Module& module, uint32_t index);

}  // namespace pvgpu::adapters::cuda
