// Public interface of the PTX engine used by the cpu adapter.
//
// The engine parses PTX text (as nvcc/NVVM emit it, ISA up to 9.0), lowers it to an internal
// form and executes kernels on host threads with warp semantics. It knows nothing about
// sessions, handles or the channel: the adapter gives it an address space to translate device
// addresses and the addresses where the module's globals live.
//
// Integration notes (cpu adapter):
//  - Device addresses handed out by the AddressSpace must lie below 0xF000'0000'0000'0000:
//    the engine keeps generic-address windows above that for shared (0xFD..), local (0xFE..),
//    kernel parameters (0xFC..) and function pointers (0xFB.., see ir.h). Global and .const
//    variables live in device memory at the addresses passed in LaunchEnv::global_addresses.
//  - After placing globals, copy GlobalInfo::init and apply GlobalInfo::relocs (8-byte device
//    addresses of other globals); function-pointer initializers need nothing.
//  - Override AddressSpace::Lookup to return whole allocations: each worker caches the last
//    one, so streaming accesses skip Translate (and its locking) entirely.
//  - Launch blocks the calling thread until the grid finishes; call it from a per-queue thread.
//    Programs are immutable and shareable; one Executor serves every session.
//  - LaunchEnv::print receives each device printf (and assert) line already formatted, one
//    call per thread, serialized per launch; when unset the text goes to stdout.
//  - Cancellation: set *LaunchEnv::cancel; running warps notice within a few thousand
//    instructions and Launch returns kLaunchFailed.
//  - Cooperative launches (LaunchConfig::cooperative): every block of the grid is resident at
//    once, so blocks may wait on each other (cooperative_groups' grid barrier, flags spun on).
//    The adapter decides how large a cooperative grid may be (the co-residency it reports
//    through occupancy) and refuses larger ones before calling Launch; it also places the
//    driver's grid workspace in device memory and passes its address in %envreg1 (high 32
//    bits) and %envreg2 (low 32 bits), see LaunchEnv::envreg.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/dim3.h"
#include "common/status.h"

namespace pvgpu::texture {
struct TextureTable;  // common/texture.h
}

namespace pvgpu::ptx {

using pvgpu::Dim3;

struct ParamInfo {
  uint32_t offset = 0;  // byte offset in the packed parameter buffer
  uint32_t size = 0;
  uint32_t align = 1;
};

struct KernelInfo {
  std::string name;
  std::vector<ParamInfo> params;
  uint32_t param_bytes = 0;               // size of the packed parameter buffer
  uint32_t static_shared_bytes = 0;       // .shared declarations (not the dynamic extern array)
  uint32_t local_bytes = 0;               // per-thread .local declarations
  uint32_t num_regs = 0;                  // registers declared (reported by cuFuncGetAttribute)
  uint32_t max_threads_per_block = 1024;  // from .maxntid / .reqntid when present
  Dim3 reqntid{0, 0, 0};                  // .reqntid when present (x == 0 otherwise)
  uint32_t target_sm = 0;                 // the module's .target (sm_120: 120), 0 when unknown
};

struct GlobalInfo {
  std::string name;
  uint64_t size = 0;
  uint32_t align = 1;
  bool is_const = false;      // .const state space (read-only to kernels)
  std::vector<uint8_t> init;  // initial bytes (empty means zero-filled)
  // Address initializers (`.global .u64 p = {generic(x)}`): the adapter writes the 8-byte
  // device address of globals()[target] plus addend at `offset` after placing the globals.
  struct Reloc {
    uint64_t offset = 0;
    int target = -1;
    int64_t addend = 0;
  };
  std::vector<Reloc> relocs;
};

// A loaded, immutable module. Shareable between threads and launches.
class Program {
 public:
  virtual ~Program() = default;
  virtual const std::vector<KernelInfo>& kernels() const = 0;
  virtual const std::vector<GlobalInfo>& globals() const = 0;
  const KernelInfo* FindKernel(std::string_view name) const;
  int FindGlobal(std::string_view name) const;  // index into globals(), or -1
};

// The newest PTX target (.target sm_NN) a program may name unless the loader is told otherwise:
// a module built for a newer architecture may use what the engine does not know.
inline constexpr int kDefaultMaxTargetSm = 90;

// Parses and lowers PTX. Errors are kInvalidPtx with "line L, column C: reason" in the message
// and in *error_log; an instruction the engine cannot execute is a load-time error naming it,
// and so is a .target above sm_<max_target_sm> (an adapter passes the architecture it reports).
StatusOr<std::shared_ptr<const Program>> LoadProgram(std::string_view ptx_text,
                                                     std::string* error_log = nullptr,
                                                     std::string* info_log = nullptr,
                                                     int max_target_sm = kDefaultMaxTargetSm);

// One PTX module of a link, named for messages (a file name, or "input N").
struct LinkSource {
  std::string name;
  std::string_view text;
  // A static library's member: linked only when it defines something the link still needs,
  // as a linker treats archive members.
  bool only_if_needed = false;
};

// Links several PTX modules into one program, as the CUDA linker links relocatable device code:
// an `.extern` function or variable resolves to the module that defines it, a `.weak` (or
// `.common`) definition yields to a strong one, two strong definitions of one visible name are
// an error naming both modules, and each module's own (non-.visible) symbols stay private to it
// even when another module uses the same name. Errors name the module they come from.
// Members of static libraries (LinkSource::only_if_needed) join the link when they define an
// external the linked modules use and nothing linked defines.
// The same .target limit applies to every linked module.
StatusOr<std::shared_ptr<const Program>> LoadLinkedProgram(std::span<const LinkSource> sources,
                                                           std::string* error_log = nullptr,
                                                           std::string* info_log = nullptr,
                                                           int max_target_sm = kDefaultMaxTargetSm);

// Device memory as the adapter sees it. Implementations must be thread-safe for Translate.
class AddressSpace {
 public:
  virtual ~AddressSpace() = default;
  // Host pointer for [address, address + size) when the whole range lies in one live
  // allocation; nullptr otherwise (the engine reports CUDA_ERROR_ILLEGAL_ADDRESS).
  virtual uint8_t* Translate(uint64_t address, uint64_t size) = 0;

  // The whole live allocation containing [address, address + size), so that the engine can
  // cache it per worker and skip Translate for later accesses to the same allocation.
  // Override it when allocations are known; the default only covers the requested range.
  struct Range {
    uint64_t base = 0;
    uint64_t size = 0;
    uint8_t* host = nullptr;  // host address of `base`
  };
  virtual bool Lookup(uint64_t address, uint64_t size, Range* out) {
    uint8_t* p = Translate(address, size);
    if (p == nullptr) return false;
    *out = Range{address, size, p};
    return true;
  }
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  uint32_t dynamic_shared_bytes = 0;
  // Every block resident at once: the engine time-slices the blocks over its workers instead
  // of running each to completion (see executor.cc).
  bool cooperative = false;
};

// The PTX special registers %envreg0..%envreg31: read-only, defined by the driver per launch.
inline constexpr int kNumEnvRegs = 32;
// cooperative_groups reads the grid workspace's address from these (high, low 32 bits).
inline constexpr int kGridWorkspaceEnvRegHi = 1;
inline constexpr int kGridWorkspaceEnvRegLo = 2;

// How the cpu adapter runs kernels (jit.h): the interpreter, or native code compiled from the
// same lowered form.
enum class Engine : uint8_t {
  kInterp,  // the interpreter only
  kJit,     // compile every kernel at its first launch, and wait for it
  kAuto,    // compile in the background; launches interpret until the code is ready
};

const char* EngineName(Engine e);
StatusOr<Engine> ParseEngine(std::string_view name);
// Whether this build has the compiling engine (LLVM was found).
bool JitAvailable();
// The process-wide default: PVGPU_ENGINE when set (interp, jit or auto), else auto where the
// compiling engine is built and interp elsewhere.
Engine DefaultEngine();

struct LaunchEnv {
  AddressSpace* memory = nullptr;
  // Device addresses of the program's globals, indexed like Program::globals().
  std::span<const uint64_t> global_addresses;
  // Polled by the engine; when it becomes true the launch stops with kLaunchFailed.
  const std::atomic<bool>* cancel = nullptr;
  // Receives device printf output (vprintf), already formatted.
  std::function<void(std::string_view)> print;
  // Values of %envreg0..31 for this launch (0 unless the adapter sets them).
  std::array<uint32_t, kNumEnvRegs> envreg{};
  // The context's texture and surface objects, which tex/suld/sust/... name by handle (null:
  // none; a handle it lacks faults).
  const texture::TextureTable* textures = nullptr;
  // The engine this launch runs on; unset: DefaultEngine().
  std::optional<Engine> engine;
};

// Runs kernels. One per adapter; its worker threads are shared by every launch so that several
// guests' kernels share the cores fairly.
class Executor {
 public:
  // threads == 0 means one per CPU the process may use (UsableCpus).
  explicit Executor(unsigned threads = 0);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  unsigned threads() const;

  // Executes the kernel to completion. `params` is the packed parameter buffer laid out as
  // KernelInfo::params describes. Faults come back as sticky codes: kIllegalAddress,
  // kMisalignedAddress, kLaunchFailed (trap or cancel), kAssert, kIllegalInstruction; a bad
  // configuration (block too large, too much shared memory) as kInvalidValue or
  // kLaunchOutOfResources before anything runs; so is a cooperative grid whose blocks' state
  // (registers, local and shared memory, all resident at once) exceeds
  // kMaxCooperativeResidentBytes.
  Status Launch(const Program& program, const KernelInfo& kernel, const LaunchConfig& config,
                std::span<const uint8_t> params, const LaunchEnv& env);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Limits the engine enforces (and the adapter reports as device attributes).
inline constexpr uint32_t kMaxThreadsPerBlock = 1024;
inline constexpr uint32_t kMaxSharedBytesPerBlock = 48 * 1024;
inline constexpr uint32_t kMaxSharedBytesPerBlockOptin = 96 * 1024;
inline constexpr uint32_t kWarpSize = 32;
// Host memory a cooperative launch may hold for its resident blocks' registers, local and
// shared memory.
inline constexpr uint64_t kMaxCooperativeResidentBytes = uint64_t{512} << 20;

}  // namespace pvgpu::ptx
