// The narrow interface every adapter implements (the kernel-mode driver role of GPU-PV).
//
// The session layer (host/) validates every request once — handles, ownership, address ranges,
// quotas, the wire formats of module images — before it reaches an adapter, so adapters
// implement only execution. Calls on one
// Context come from one session thread, in submission order. A synchronous adapter (cpu)
// completes the work before returning; an asynchronous one (cuda) may return once the work is
// submitted, in order, to the device, and reports completion through NotifyWhenDone and errors
// of submitted work through Synchronize (see below). The channel's pipelining happens above
// this interface.
//
// Implementors: a new adapter needs a folder here (like cpu/), an AdapterInfo that fills the
// device attributes it can answer, and a factory entry in adapters/registry.cc.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/wait_value.h"
#include "common/dim3.h"
#include "common/function_ref.h"
#include "common/share_flow.h"
#include "common/status.h"
#include "common/texture.h"
#include "protocol/link_image.h"
#include "protocol/module_description.h"

namespace pvgpu::adapters {

// Number of CUdevice_attribute slots carried on the wire (cuda.h's CU_DEVICE_ATTRIBUTE_MAX is
// below this).
inline constexpr size_t kAttributeSlots = 160;

struct AdapterInfo {
  std::string kind;  // "cpu", "cuda"
  std::string name;  // what cuDeviceGetName reports
  std::array<uint8_t, 16> uuid{};
  uint64_t luid = 0;          // stable id, like DXCore's adapter LUID
  uint64_t total_memory = 0;  // bytes the adapter offers
  bool is_software = false;
  // How the adapter runs kernels: the cpu adapter's PTX engine (interp, jit or auto, see
  // ptx::Engine), "driver" for a GPU run by its host driver.
  std::string engine;
  bool is_integrated = false;
  uint32_t pci_domain = 0, pci_bus = 0, pci_device = 0;
  std::array<int32_t, kAttributeSlots> attributes{};  // indexed by CUdevice_attribute
};

using pvgpu::Dim3;

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  uint32_t shared_bytes = 0;
  // cuLaunchCooperativeKernel (CU_LAUNCH_ATTRIBUTE_COOPERATIVE): every block resident at once.
  // A grid larger than the adapter can hold resident fails with kCooperativeLaunchTooLarge
  // before anything runs.
  bool cooperative = false;
};

// A module describes itself as the guest will see it (ModuleLoad's reply), so the session
// passes the description on as it is.
using KernelInfo = protocol::KernelDescription;
using GlobalInfo = protocol::GlobalDescription;

class Module {
 public:
  virtual ~Module() = default;
  virtual const std::vector<KernelInfo>& kernels() const = 0;
  virtual const std::vector<GlobalInfo>& globals() const = 0;
};

using protocol::ImageKind;

// A module image as the session hands it to an adapter: decoded from the wire and validated.
// What remains in device formats (PTX text, fatbinaries, cubins, a link's inputs) is the
// adapter's to read: its PTX engine or its driver checks them.
struct ModuleImage {
  ImageKind kind = ImageKind::kPtx;
  // kPtx: the text, up to its first NUL; kFatbin, kCubin: the image's bytes.
  std::span<const uint8_t> bytes;
  // kLinked: the link's inputs, every record's type and extent checked
  // (protocol::DecodeLinkImage); views into the message, valid during LoadModule.
  std::span<const protocol::LinkInput> inputs;

  // An image of one kind from its bytes; kLinked's inputs are set by the caller.
  static ModuleImage Of(ImageKind kind, std::span<const uint8_t> bytes) {
    ModuleImage image;
    image.kind = kind;
    image.bytes = bytes;
    if (kind == ImageKind::kPtx) {
      for (size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] == 0) {
          image.bytes = bytes.first(i);
          break;
        }
      }
    }
    return image;
  }
};

// Physical memory of virtual memory management (cuMemCreate, docs/memory.md): pages with no
// address of their own until Context::MapPhysical places them in a reservation. Its bytes count
// as the context's used memory from creation until the object and every mapping of it are gone.
class PhysicalMemory {
 public:
  virtual ~PhysicalMemory() = default;
  virtual uint64_t size() const = 0;
  // A POSIX file descriptor for the memory (cuMemExportToShareableHandle), owned by the
  // caller, which Context::ImportPhysical of this adapter takes back from any process.
  virtual StatusOr<int> ExportFd() const {
    return Error(Code::kNotSupported, "this adapter cannot export physical memory");
  }
};

// One guest context on this adapter: its own address space and modules.
class Context {
 public:
  virtual ~Context() = default;

  virtual StatusOr<uint64_t> Allocate(uint64_t size) = 0;
  virtual Status Free(uint64_t dptr) = 0;
  // `data` is valid only during the call (it may lie in the channel's ring, which the guest
  // reuses once the call returns): an adapter copies or stages it before returning.
  virtual Status Write(uint64_t dst, std::span<const uint8_t> data) = 0;
  virtual Status Read(uint64_t src, std::span<uint8_t> data) = 0;
  virtual Status Copy(uint64_t dst, uint64_t src, uint64_t size) = 0;
  // Fills `height` rows of `width` elements of `element_size` (1, 2 or 4) bytes, rows `pitch`
  // bytes apart.
  virtual Status Memset(uint64_t dst, uint64_t pitch, uint32_t value, uint32_t element_size,
                        uint64_t width, uint64_t height) = 0;

  // Makes host memory (a pinned region shared with the guest) addressable by kernels of this
  // context; the memory stays owned by the caller and must outlive the mapping.
  virtual StatusOr<uint64_t> MapHostMemory(uint8_t* data, uint64_t size) = 0;
  virtual Status UnmapHostMemory(uint64_t dptr) = 0;
  // The same at device address `address` (managed memory: one pointer valid in the guest and in
  // kernels). `data` is the daemon's mapping of the memory, at `address` too (the session maps
  // it there, so that adapters whose device pointers are host pointers, as under CUDA's
  // unified addressing, can use it). UnmapHostMemory(address) undoes it.
  virtual StatusOr<uint64_t> MapHostMemoryAt(uint8_t* data, uint64_t size, uint64_t address) {
    (void)data;
    (void)size;
    (void)address;
    return Error(Code::kNotSupported, "this adapter has no managed memory");
  }

  // Loads a module; its globals are allocated in this context. Logs are filled on success and
  // failure (kInvalidPtx, kNoBinaryForGpu, ...).
  virtual StatusOr<std::unique_ptr<Module>> LoadModule(const ModuleImage& image,
                                                       std::string* error_log,
                                                       std::string* info_log) = 0;
  // The same for one image of a single kind (tools, tests). A link image arrives decoded, as
  // ModuleImage::inputs, so it is refused here.
  StatusOr<std::unique_ptr<Module>> LoadModule(ImageKind kind, std::span<const uint8_t> image,
                                               std::string* error_log, std::string* info_log) {
    if (kind == ImageKind::kLinked) {
      return Error(Code::kInvalidImage, "a link image must be decoded (ModuleImage::inputs)");
    }
    return LoadModule(ModuleImage::Of(kind, image), error_log, info_log);
  }
  // Runs kernel `kernel` of `module` to completion. `print` receives device printf output.
  virtual Status Launch(Module& module, uint32_t kernel, const LaunchConfig& config,
                        std::span<const uint8_t> params,
                        const std::function<void(std::string_view)>& print) = 0;

  // Stream memory operations (cuStreamWaitValue32/64): returns once the `width`-byte (4 or 8)
  // value at `address` (a range the session checked, aligned to `width`) satisfies `satisfied`,
  // so that the context's later work follows it; returns kLaunchFailed when Cancel() is called
  // first. It blocks the calling (session) thread, which runs it under its kernel watcher as it
  // runs a kernel, on every adapter (docs/memory.md).
  virtual Status WaitValue(uint64_t address, uint32_t width,
                           FunctionRef<bool(uint64_t)> satisfied) {
    (void)address;
    (void)width;
    (void)satisfied;
    return Error(Code::kNotSupported, "this adapter has no stream memory operations");
  }

  // The session's share of this adapter's compute (common/share_flow.h), which outlives the
  // context: an adapter that schedules kernels itself (cpu) draws the context's launches on it
  // and counts what they use there. The default ignores it (the host's gate schedules
  // asynchronous adapters' launches: host/share_gate.h).
  virtual void SetShareFlow(ShareFlow* flow) { (void)flow; }

  // Stops running kernels as soon as possible (their launch fails with kLaunchFailed). Called
  // from another thread when the guest disappears or destroys the context.
  virtual void Cancel() = 0;

  // Texture and surface objects (docs/textures.md). The session has checked `spec` against the
  // context's memory (ValidateTexture, its ranges inside allocations or arrays). Returns the
  // value kernels name the object by (the cpu adapter: `handle`, which it resolves safely, a
  // forged value faulting; the cuda adapter: the host driver's object, which the GPU checks).
  virtual StatusOr<uint64_t> CreateTexture(uint64_t handle, const texture::TextureSpec& spec) {
    (void)handle;
    (void)spec;
    return Error(Code::kNotSupported, "this adapter has no texture objects");
  }
  virtual void DestroyTexture(uint64_t handle) { (void)handle; }

  // Virtual memory management (docs/memory.md). The session keeps the reservations, mappings
  // and access of its contexts and checks every request against them before it calls these:
  // ranges are multiples of `granularity` bytes, lie inside a reservation of this context, and
  // a mapping covers unmapped addresses of one reservation with a part of one PhysicalMemory.
  // A mapped range becomes addressable by kernels and copies only once SetAccess made it so; a
  // run of adjacent accessible mappings of one reservation behaves as one buffer. The defaults
  // describe an adapter without it.
  virtual uint64_t granularity() const { return 0; }
  virtual StatusOr<std::unique_ptr<PhysicalMemory>> CreatePhysical(uint64_t size) {
    (void)size;
    return Error(Code::kNotSupported, "this adapter has no virtual memory management");
  }
  // Physical memory from a descriptor of PhysicalMemory::ExportFd, a guest's to check
  // (cuMemImportFromShareableHandle): kInvalidValue for one that is not such memory; `fd` stays
  // the caller's. The memory counts as this context's as long as it holds it.
  virtual StatusOr<std::unique_ptr<PhysicalMemory>> ImportPhysical(int fd) {
    (void)fd;
    return Error(Code::kNotSupported, "this adapter cannot import physical memory");
  }
  // A range of `size` device addresses aligned to `alignment` (a power of two, at least the
  // granularity), backed by nothing.
  virtual StatusOr<uint64_t> ReserveAddress(uint64_t size, uint64_t alignment) {
    (void)size;
    (void)alignment;
    return Error(Code::kNotSupported, "this adapter has no virtual memory management");
  }
  // Gives a reservation back; the session has unmapped all of it first.
  virtual Status FreeAddress(uint64_t base, uint64_t size) {
    (void)base;
    (void)size;
    return Error(Code::kNotSupported, "this adapter has no virtual memory management");
  }
  // Backs [address, address + size) of a reservation with [offset, offset + size) of
  // `memory`, which must stay alive until the range is unmapped.
  virtual Status MapPhysical(uint64_t address, uint64_t size, PhysicalMemory& memory,
                             uint64_t offset) {
    (void)address;
    (void)size;
    (void)memory;
    (void)offset;
    return Error(Code::kNotSupported, "this adapter has no virtual memory management");
  }
  // Undoes whole mappings covering exactly [address, address + size); their access goes too.
  // Work submitted earlier that uses the range has completed when it returns.
  virtual Status UnmapPhysical(uint64_t address, uint64_t size) {
    (void)address;
    (void)size;
    return Error(Code::kNotSupported, "this adapter has no virtual memory management");
  }
  // Makes one whole mapping [address, address + size) addressable (read-write) by this
  // context's kernels and copies, or not.
  virtual Status SetAccess(uint64_t address, uint64_t size, bool accessible) {
    (void)address;
    (void)size;
    (void)accessible;
    return Error(Code::kNotSupported, "this adapter has no virtual memory management");
  }

  // Bytes of device memory this context holds (allocations and module globals).
  virtual uint64_t used_bytes() const = 0;

  // Asynchronous execution. The defaults describe a synchronous adapter, whose work is done
  // when each call returns.
  //
  // True when Write, Copy, Memset and Launch may return before their work is done. Read still
  // waits for the data it returns (and so for all earlier work).
  virtual bool asynchronous() const { return false; }
  // Calls `done` once all work submitted so far on this context has completed (possibly at
  // once, on the calling thread; otherwise on an adapter thread, in submission order). Every
  // callback runs before the context's destructor returns.
  virtual void NotifyWhenDone(std::function<void()> done) { done(); }
  // Waits until all submitted work has completed; returns the first error that work raised
  // since the previous Synchronize (a fault is sticky, as on hardware), and runs every pending
  // NotifyWhenDone callback before returning.
  virtual Status Synchronize() { return Status::Ok(); }
};

class Adapter {
 public:
  virtual ~Adapter() = default;
  virtual const AdapterInfo& info() const = 0;
  virtual StatusOr<std::unique_ptr<Context>> CreateContext() = 0;
  // Bytes in use across all contexts.
  virtual uint64_t used_bytes() const = 0;
  // Percent of the time since the previous call during which a kernel ran (NVML's sense).
  virtual uint32_t SampleUtilization() = 0;
  // Time during which a kernel ran, since the adapter was made; 0 when the adapter does not
  // count it (the host's gate counts asynchronous adapters': host/share_gate.h).
  virtual uint64_t busy_ns() { return 0; }
};

}  // namespace pvgpu::adapters
