#include "adapters/cpu/cpu_adapter.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>

#include "adapters/link_inputs.h"
#include "fatbin/fatbin.h"
#include "ptx/launch_flow.h"

namespace pvgpu::adapters::cpu {
namespace {

// Each cpu adapter gets its own 1 TiB window of device addresses, so a pointer names its
// adapter. The PTX engine's generic windows for shared and local memory lie far above.
constexpr uint64_t kWindowBytes = 1ull << 40;
uint64_t WindowBase(uint32_t index) { return (uint64_t{index} + 1) << 40; }

class CpuModule final : public Module {
 public:
  CpuModule(std::shared_ptr<const ptx::Program> program, std::vector<GlobalInfo> globals,
            std::vector<uint64_t> addresses)
      : program_(std::move(program)),
        globals_(std::move(globals)),
        addresses_(std::move(addresses)) {
    for (const auto& k : program_->kernels()) kernels_.push_back(DescribePtxKernel(k));
  }
  const std::vector<KernelInfo>& kernels() const override { return kernels_; }
  const std::vector<GlobalInfo>& globals() const override { return globals_; }
  const ptx::Program& program() const { return *program_; }
  std::span<const uint64_t> addresses() const { return addresses_; }

 private:
  std::shared_ptr<const ptx::Program> program_;
  std::vector<KernelInfo> kernels_;
  std::vector<GlobalInfo> globals_;
  std::vector<uint64_t> addresses_;
};

// The PTX of an image: the text itself, a fatbin's PTX, or the PTX of a link's inputs, linked
// by the engine. The cpu adapter has no GPU architecture: PTX of every target the CUDA 13
// toolkit emits runs (the newest preferred), because packages ship PTX for the newest GPUs only
// (CuPy's wheels carry sm_120 PTX and machine code for the rest) and the baseline instruction
// set of those targets is what the engine implements; an instruction it lacks is refused at
// load, by name. A target newer than the toolkit's is refused, naming it. A cubin (or a fatbin
// of SASS only) is machine code for one NVIDIA GPU.
StatusOr<std::shared_ptr<const ptx::Program>> LoadPtxProgram(const ModuleImage& image,
                                                             std::string* error_log,
                                                             std::string* info_log) {
  constexpr int kNewestTarget = 121;  // sm_121, the newest target of nvcc 13
  switch (image.kind) {
    case ImageKind::kLinked: {
      PVGPU_ASSIGN_OR_RETURN(PtxLinkSources ptx, PtxOfLinkInputs(image.inputs, kNewestTarget));
      return ptx::LoadLinkedProgram(ptx.sources, error_log, info_log, kNewestTarget);
    }
    case ImageKind::kFatbin: {
      PVGPU_ASSIGN_OR_RETURN(std::string text, fatbin::ExtractPtx(image.bytes, kNewestTarget));
      return ptx::LoadProgram(text, error_log, info_log, kNewestTarget);
    }
    case ImageKind::kPtx:
      return ptx::LoadProgram(
          {reinterpret_cast<const char*>(image.bytes.data()), image.bytes.size()}, error_log,
          info_log, kNewestTarget);
    case ImageKind::kCubin:
      break;
  }
  return Error(Code::kNoBinaryForGpu,
               "the cpu adapter runs PTX only; a cubin holds machine code for one NVIDIA GPU "
               "(build with PTX, e.g. nvcc -gencode arch=compute_75,code=compute_75)");
}

// A descriptor of the same file, closed on exec.
StatusOr<int> Duplicate(int fd) {
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return Error(Code::kOutOfMemory, std::string("dup: ") + strerror(errno));
  return copy;
}

// Physical memory of virtual memory management: a memfd of its size, whose pages MapPhysical
// places in reservations (DeviceMemory::Map). A mapping keeps the pages alive after the fd is
// closed, as CUDA keeps released physical memory while it is mapped; the session keeps this
// object (and the bytes counted) until both are gone.
class CpuPhysical final : public PhysicalMemory {
 public:
  CpuPhysical(int fd, uint64_t size, DeviceMemory* memory, CpuAdapter* adapter)
      : fd_(fd), size_(size), memory_(memory), adapter_(adapter) {
    memory_->AddPhysical(static_cast<int64_t>(size_));
    adapter_->AddUsed(static_cast<int64_t>(size_));
  }
  ~CpuPhysical() override {
    close(fd_);
    memory_->AddPhysical(-static_cast<int64_t>(size_));
    adapter_->AddUsed(-static_cast<int64_t>(size_));
  }
  CpuPhysical(const CpuPhysical&) = delete;
  CpuPhysical& operator=(const CpuPhysical&) = delete;
  uint64_t size() const override { return size_; }
  StatusOr<int> ExportFd() const override { return Duplicate(fd_); }
  int fd() const { return fd_; }

 private:
  const int fd_;
  const uint64_t size_;
  DeviceMemory* const memory_;
  CpuAdapter* const adapter_;
};

// CUDA's granularity on NVIDIA GPUs, minimum and recommended alike.
constexpr uint64_t kVmmGranularity = 2u << 20;

class CpuContext final : public Context {
 public:
  CpuContext(CpuAdapter* adapter, ptx::Executor* executor, AddressRange* range)
      : adapter_(adapter), executor_(executor), memory_(range) {}
  ~CpuContext() override { adapter_->AddUsed(-static_cast<int64_t>(memory_.used_bytes())); }

  StatusOr<uint64_t> Allocate(uint64_t size) override {
    auto address = memory_.Allocate(size);
    if (address.ok()) adapter_->AddUsed(static_cast<int64_t>(size));
    return address;
  }

  Status Free(uint64_t dptr) override {
    const uint64_t before = memory_.used_bytes();
    PVGPU_TRY(memory_.Free(dptr));
    adapter_->AddUsed(-static_cast<int64_t>(before - memory_.used_bytes()));
    return Status::Ok();
  }

  Status Write(uint64_t dst, std::span<const uint8_t> data) override {
    if (data.empty()) return Status::Ok();
    uint8_t* p = memory_.Translate(dst, data.size());
    if (p == nullptr) return Error(Code::kInvalidValue, "destination range is not device memory");
    std::memcpy(p, data.data(), data.size());
    return Status::Ok();
  }

  Status Read(uint64_t src, std::span<uint8_t> data) override {
    if (data.empty()) return Status::Ok();
    const uint8_t* p = memory_.Translate(src, data.size());
    if (p == nullptr) return Error(Code::kInvalidValue, "source range is not device memory");
    std::memcpy(data.data(), p, data.size());
    return Status::Ok();
  }

  Status Copy(uint64_t dst, uint64_t src, uint64_t size) override {
    if (size == 0) return Status::Ok();
    uint8_t* d = memory_.Translate(dst, size);
    const uint8_t* s = memory_.Translate(src, size);
    if (d == nullptr || s == nullptr) {
      return Error(Code::kInvalidValue, "copy range is not device memory");
    }
    std::memmove(d, s, size);
    return Status::Ok();
  }

  Status Memset(uint64_t dst, uint64_t pitch, uint32_t value, uint32_t element_size, uint64_t width,
                uint64_t height) override {
    const uint64_t row_bytes = width * element_size;
    for (uint64_t row = 0; row < height; ++row) {
      uint8_t* p = memory_.Translate(dst + row * pitch, row_bytes);
      if (p == nullptr && row_bytes != 0) {
        return Error(Code::kInvalidValue, "memset range is not device memory");
      }
      switch (element_size) {
        case 1:
          std::memset(p, static_cast<int>(value & 0xff), row_bytes);
          break;
        case 2:
          for (uint64_t i = 0; i < width; ++i) {
            const uint16_t v = static_cast<uint16_t>(value);
            std::memcpy(p + 2 * i, &v, 2);
          }
          break;
        case 4:
          for (uint64_t i = 0; i < width; ++i) std::memcpy(p + 4 * i, &value, 4);
          break;
        default:
          return Error(Code::kInvalidValue, "memset element size must be 1, 2 or 4");
      }
    }
    return Status::Ok();
  }

  StatusOr<std::unique_ptr<Module>> LoadModule(const ModuleImage& image, std::string* error_log,
                                               std::string* info_log) override {
    auto loaded = LoadPtxProgram(image, error_log, info_log);
    if (!loaded.ok()) {
      if (error_log != nullptr && error_log->empty()) *error_log = loaded.status().message();
      return loaded.status();
    }
    std::shared_ptr<const ptx::Program> program = std::move(loaded).value();
    std::vector<GlobalInfo> globals;
    std::vector<uint64_t> addresses;
    for (const auto& g : program->globals()) {
      auto address = Allocate(g.size == 0 ? 1 : g.size);
      if (!address.ok()) {
        for (uint64_t a : addresses) (void)Free(a);
        return address.status().WithContext("allocating module global '" + g.name + "'");
      }
      if (!g.init.empty()) {
        PVGPU_TRY(
            Write(*address, std::span(g.init).first(std::min<size_t>(g.init.size(), g.size))));
      }
      globals.push_back({g.name, *address, g.size});
      addresses.push_back(*address);
    }
    // Initializers that hold addresses of globals (`__device__ int* p = &x;`) are patched
    // now that every global has its device address.
    const auto& program_globals = program->globals();
    for (size_t i = 0; i < program_globals.size(); ++i) {
      for (const auto& reloc : program_globals[i].relocs) {
        if (reloc.target < 0 || static_cast<size_t>(reloc.target) >= addresses.size() ||
            reloc.offset > program_globals[i].size || program_globals[i].size - reloc.offset < 8) {
          continue;  // the engine validated these at load; never write outside the global
        }
        const uint64_t value = addresses[reloc.target] + static_cast<uint64_t>(reloc.addend);
        PVGPU_TRY(Write(addresses[i] + reloc.offset,
                        {reinterpret_cast<const uint8_t*>(&value), sizeof(value)}));
      }
    }
    return std::unique_ptr<Module>(
        new CpuModule(std::move(program), std::move(globals), std::move(addresses)));
  }

  Status Launch(Module& module, uint32_t kernel, const LaunchConfig& config,
                std::span<const uint8_t> params,
                const std::function<void(std::string_view)>& print) override {
    auto& cpu_module = static_cast<CpuModule&>(module);
    const auto& kernels = cpu_module.program().kernels();
    if (kernel >= kernels.size()) return Error(Code::kInvalidHandle, "no such kernel");
    ptx::LaunchConfig launch;
    launch.grid = config.grid;
    launch.block = config.block;
    launch.dynamic_shared_bytes = config.shared_bytes;
    launch.cooperative = config.cooperative;
    ptx::LaunchEnv env;
    env.memory = &memory_;
    env.global_addresses = cpu_module.addresses();
    env.cancel = &cancel_;
    env.print = print;
    env.textures = &textures_;
    env.engine = adapter_->engine();
    uint64_t workspace = 0;
    if (config.cooperative) {
      PVGPU_ASSIGN_OR_RETURN(workspace, PrepareCooperative(kernels[kernel], launch, &env));
    }
    adapter_->busy().KernelStarted();
    Status status;
    {
      ptx::ScopedLaunchFlow flow(flow_);  // the session's share of the workers
      status = executor_->Launch(cpu_module.program(), kernels[kernel], launch, params, env);
    }
    adapter_->busy().KernelFinished();
    // The workspace lives exactly as long as the launch, however it ended (fault, cancel).
    if (workspace != 0) (void)Free(workspace);
    return status;
  }

  // The engine reads a texture's elements through this context's address table, each access
  // clamped into the resource first (ptx/texture_sample.h).
  StatusOr<uint64_t> CreateTexture(uint64_t handle, const texture::TextureSpec& spec) override {
    textures_.objects[handle] = std::make_shared<const texture::TextureSpec>(spec);
    return handle;
  }
  void DestroyTexture(uint64_t handle) override { textures_.objects.erase(handle); }

  StatusOr<uint64_t> MapHostMemory(uint8_t* data, uint64_t size) override {
    return memory_.AddExternal(data, size);
  }
  Status UnmapHostMemory(uint64_t dptr) override { return memory_.Free(dptr); }
  // Kernels reach memory through the context's address table, so the device address can be
  // any free one: the guest's own pointer maps to the daemon's view of the same pages.
  StatusOr<uint64_t> MapHostMemoryAt(uint8_t* data, uint64_t size, uint64_t address) override {
    PVGPU_TRY(memory_.AddExternalAt(address, data, size));
    return address;
  }

  // The daemon's own view of the memory, read with acquire loads: the writer may be a kernel
  // of another context, the guest's host code (pinned or managed memory) or another session.
  Status WaitValue(uint64_t address, uint32_t width,
                   FunctionRef<bool(uint64_t)> satisfied) override {
    uint8_t* data = memory_.Translate(address, width);
    if (data == nullptr) return Error(Code::kIllegalAddress, "stream wait outside device memory");
    auto read = [&]() -> StatusOr<uint64_t> {
      if (width == 4) {
        return uint64_t{std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(data))
                            .load(std::memory_order_acquire)};
      }
      return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(data))
          .load(std::memory_order_acquire);
    };
    return PollValue(read, satisfied, cancel_);
  }

  uint64_t granularity() const override { return kVmmGranularity; }
  // A memfd sealed at its size: a process it is exported to can map it, write it or punch
  // holes in it, never shrink it under the kernels that use it.
  StatusOr<std::unique_ptr<PhysicalMemory>> CreatePhysical(uint64_t size) override {
    const int fd = memfd_create("pvgpu-physical", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return Error(Code::kOutOfMemory, std::string("memfd_create: ") + strerror(errno));
    if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
      const int error = errno;
      close(fd);
      return Error(Code::kOutOfMemory, std::string("sizing physical memory: ") + strerror(error));
    }
    return std::unique_ptr<PhysicalMemory>(
        std::make_unique<CpuPhysical>(fd, size, &memory_, adapter_));
  }
  // Any memfd sealed against shrinking, of a whole number of granules, serves: this process's
  // exports, another pvgpud's on the same machine, or a guest's own.
  StatusOr<std::unique_ptr<PhysicalMemory>> ImportPhysical(int fd) override {
    const int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
      return Error(Code::kInvalidValue, "the descriptor is not a memfd sealed against shrinking");
    }
    struct stat st;  // after the seal: the size cannot go down any more
    if (fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size % kVmmGranularity != 0) {
      return Error(Code::kInvalidValue, "the memory is not a whole number of granules");
    }
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    PVGPU_ASSIGN_OR_RETURN(int copy, Duplicate(fd));
    return std::unique_ptr<PhysicalMemory>(
        std::make_unique<CpuPhysical>(copy, size, &memory_, adapter_));
  }
  StatusOr<uint64_t> ReserveAddress(uint64_t size, uint64_t alignment) override {
    return memory_.Reserve(size, std::max(alignment, kVmmGranularity));
  }
  Status FreeAddress(uint64_t base, uint64_t) override { return memory_.Unreserve(base); }
  Status MapPhysical(uint64_t address, uint64_t size, PhysicalMemory& memory,
                     uint64_t offset) override {
    return memory_.Map(address, size, static_cast<CpuPhysical&>(memory).fd(), offset);
  }
  // Kernels run to completion inside Launch: nothing that uses the range is still running.
  Status UnmapPhysical(uint64_t address, uint64_t size) override {
    return memory_.Unmap(address, size);
  }
  Status SetAccess(uint64_t address, uint64_t size, bool accessible) override {
    return memory_.SetAccess(address, size, accessible);
  }

  void Cancel() override { cancel_.store(true); }
  void SetShareFlow(ShareFlow* flow) override { flow_ = flow; }
  uint64_t used_bytes() const override { return memory_.used_bytes(); }

 private:
  // Refuses a cooperative grid larger than the adapter keeps resident, then places the grid
  // workspace (zeroed) in device memory and its address where cooperative_groups reads it.
  // Returns the workspace's address, to be freed after the launch.
  StatusOr<uint64_t> PrepareCooperative(const ptx::KernelInfo& kernel,
                                        const ptx::LaunchConfig& launch, ptx::LaunchEnv* env) {
    const uint64_t blocks = launch.grid.Count();
    const uint64_t resident = CoResidentBlocks(adapter_->info(), kernel, launch.block.Count(),
                                               launch.dynamic_shared_bytes);
    if (resident == 0) {
      return Error(Code::kInvalidValue, "a block of " + std::to_string(launch.block.Count()) +
                                            " threads and " +
                                            std::to_string(launch.dynamic_shared_bytes) +
                                            " bytes of dynamic shared memory cannot run");
    }
    if (blocks > resident) {
      return Error(Code::kCooperativeLaunchTooLarge,
                   "cooperative grid of " + std::to_string(blocks) + " blocks: at most " +
                       std::to_string(resident) + " of kernel " + kernel.name +
                       " can be resident at once");
    }
    PVGPU_ASSIGN_OR_RETURN(uint64_t workspace, Allocate(kGridWorkspaceBytes));
    std::memset(memory_.Translate(workspace, kGridWorkspaceBytes), 0, kGridWorkspaceBytes);
    env->envreg[ptx::kGridWorkspaceEnvRegHi] = static_cast<uint32_t>(workspace >> 32);
    env->envreg[ptx::kGridWorkspaceEnvRegLo] = static_cast<uint32_t>(workspace);
    return workspace;
  }

  CpuAdapter* adapter_;
  ptx::Executor* executor_;
  DeviceMemory memory_;
  std::atomic<bool> cancel_{false};
  ShareFlow* flow_ = nullptr;       // the session's, set once before any launch
  texture::TextureTable textures_;  // this context's texture and surface objects
};

}  // namespace

CpuAdapter::CpuAdapter(const CpuAdapterOptions& options, std::shared_ptr<ptx::Executor> executor)
    : engine_(options.engine.value_or(ptx::DefaultEngine())),
      executor_(std::move(executor)),
      addresses_(WindowBase(options.index), kWindowBytes) {
  FillCpuAdapterInfo(options, executor_->threads(), &info_);
  info_.engine = ptx::EngineName(engine_);
}

StatusOr<std::unique_ptr<Context>> CpuAdapter::CreateContext() {
  return std::unique_ptr<Context>(new CpuContext(this, executor_.get(), &addresses_));
}

}  // namespace pvgpu::adapters::cpu
