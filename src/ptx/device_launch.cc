// Dynamic parallelism: the device runtime calls that nvcc -rdc=true emits for a <<<>>> launch
// in device code (CUDA 12's CDP2 interface, which cudadevrt implements on the GPU), provided by
// the engine itself.
//
//   __cudaCDP2GetParameterBufferV2(func, gridDim, blockDim, sharedMem) -> buffer or null
//   __cudaCDP2LaunchDeviceV2(buffer, stream) -> cudaError_t
//   __cudaCDP2StreamCreateWithFlags(&stream, flags), __cudaCDP2StreamDestroy(stream),
//   __cudaCDP2GetLastError(), __cudaCDP2PeekAtLastError()
//
// A parameter buffer is a piece of the launching grid's arena (LaunchCtx::device_buffers),
// addressed through kLaunchBufferWindow, so the thread fills it with ordinary checked stores.
// A launch is recorded, and the recorded grids run once the launching grid has completed, in
// launch order, through the same executor and the same checks as a host launch; each runs its
// own children the same way. A launch that would nest deeper than CUDA's 24 levels returns
// cudaErrorLaunchMaxDepthExceeded to the thread and launches nothing. That is what CDP2 guarantees and
// no more: a child grid may start before its parent ends on a GPU, but the parent cannot wait
// for it (CDP2 has no device-side synchronization), and launches into one stream run in
// order. Device-side streams are accepted and only order launches; tail launches and
// fire-and-forget launches (the special stream handles) run the same way, after the parent.
#include <cstring>

#include "ptx/exec_util.h"
#include "ptx/handlers.h"
#include "ptx/memory.h"
#include "ptx/program.h"

namespace pvgpu::ptx {
namespace {

constexpr int kMaxDepth = 24;             // CUDA's maximum nesting of device launches
constexpr uint32_t kMaxPending = 2048;    // cudaLimitDevRuntimePendingLaunchCount's default
constexpr uint32_t kArenaBytes = 1u << 20;
constexpr uint32_t kBufferAlign = 64;
constexpr int32_t kCudaSuccess = 0;
constexpr int32_t kCudaErrorInvalidValue = 1;
constexpr int32_t kCudaErrorLaunchMaxDepthExceeded = 65;

thread_local int g_depth = 0;

Dim3 ReadDim3(Warp& w, int lane, uint32_t off) {
  uint32_t d[3] = {0, 0, 0};
  if (const uint8_t* p = FrameSlot(w, lane, off, sizeof(d))) std::memcpy(d, p, sizeof(d));
  return Dim3{d[0], d[1], d[2]};
}

// The kernel a function address names, or -1.
int KernelAt(const LaunchCtx& L, uint64_t func) {
  if (func < kFuncWindow || (func - kFuncWindow) % 16 != 0) return -1;
  const uint64_t index = (func - kFuncWindow) / 16;
  auto it = L.program->kernel_of_function_.find(static_cast<int>(index));
  return it == L.program->kernel_of_function_.end() ? -1 : it->second;
}

// __cudaCDP2GetParameterBufferV2(func, gridDim, blockDim, sharedMem)
bool ExecGetParameterBuffer(const Inst& in, Warp& w, uint32_t m) {
  LaunchCtx& L = *w.launch;
  ForLanes(m, [&](int lane) {
    const int kernel = KernelAt(L, ReadFrameArg<uint64_t>(w, lane, in.a[0]));
    uint64_t buffer = 0;
    if (kernel >= 0) {
      LaunchCtx::DeviceLaunch launch{};
      launch.kernel = kernel;
      launch.config.grid = ReadDim3(w, lane, in.a[1]);
      launch.config.block = ReadDim3(w, lane, in.a[2]);
      launch.config.dynamic_shared_bytes = ReadFrameArg<uint32_t>(w, lane, in.a[3]);
      const uint32_t bytes = L.program->kernels_[kernel].param_bytes;
      launch.size = std::max<uint32_t>(bytes, 1);
      std::lock_guard<std::mutex> lock(L.device_mu);
      if (L.device_buffers.empty()) L.device_buffers.resize(kArenaBytes);
      const uint32_t offset =
          (L.device_used.load(std::memory_order_relaxed) + kBufferAlign - 1) & ~(kBufferAlign - 1);
      if (L.device_launches.size() < kMaxPending && offset <= kArenaBytes &&
          launch.size <= kArenaBytes - offset) {
        launch.offset = offset;
        std::memset(L.device_buffers.data() + offset, 0, launch.size);
        L.device_launches.push_back(launch);
        L.device_used.store(offset + launch.size, std::memory_order_release);
        buffer = kLaunchBufferWindow + offset;
      }
    }
    WriteFrameResult<uint64_t>(in, w, lane, buffer);  // null: no room, as CUDA answers
  });
  return false;
}

// __cudaCDP2LaunchDeviceV2(buffer, stream)
bool ExecLaunchDevice(const Inst& in, Warp& w, uint32_t m) {
  LaunchCtx& L = *w.launch;
  ForLanes(m, [&](int lane) {
    const uint64_t buffer = ReadFrameArg<uint64_t>(w, lane, in.a[0]);
    int32_t result = kCudaErrorInvalidValue;
    if (L.device_depth + 1 > kMaxDepth) {
      result = kCudaErrorLaunchMaxDepthExceeded;  // as cudadevrt answers; nothing is launched
    } else if (buffer >= kLaunchBufferWindow && buffer - kLaunchBufferWindow < kArenaBytes) {
      const uint64_t offset = buffer - kLaunchBufferWindow;
      std::lock_guard<std::mutex> lock(L.device_mu);
      for (auto& launch : L.device_launches) {
        if (launch.offset == offset && !launch.launched) {
          launch.launched = true;
          result = kCudaSuccess;
          break;
        }
      }
    }
    WriteFrameResult<int32_t>(in, w, lane, result);
  });
  return false;
}

// __cudaCDP2StreamCreateWithFlags(&stream, flags): a device-side stream only orders launches,
// which run in order anyway; each gets a distinct nonzero handle.
bool ExecStreamCreate(const Inst& in, Warp& w, uint32_t m) {
  static std::atomic<uint64_t> next{1};
  ForLanes(m, [&](int lane) {
    const uint64_t where = ReadFrameArg<uint64_t>(w, lane, in.a[0]);
    const uint64_t handle = next.fetch_add(1, std::memory_order_relaxed) << 4;
    uint8_t* p = Resolve<MemSpace::kGeneric>(w, lane, where, 8, true);
    if (p == nullptr) {
      WriteFrameResult<int32_t>(in, w, lane, kCudaErrorInvalidValue);
      return;
    }
    std::memcpy(p, &handle, 8);
    WriteFrameResult<int32_t>(in, w, lane, kCudaSuccess);
  });
  return false;
}

// __cudaCDP2StreamDestroy(stream), __cudaCDP2GetLastError(), __cudaCDP2PeekAtLastError():
// errors of device launches surface as the launching grid's error (RunDeviceLaunches), so the
// device-side last error stays cudaSuccess.
bool ExecSucceed(const Inst& in, Warp& w, uint32_t m) {
  ForLanes(m, [&](int lane) { WriteFrameResult<int32_t>(in, w, lane, kCudaSuccess); });
  return false;
}

// cudaGraphSetConditional(handle, value): a conditional graph node's handle is the address of
// its 4-byte value in device memory (the guest's api_graph_conditional.cc), so setting it is a
// checked store there; an address that is not device memory of the context faults.
bool ExecSetConditional(const Inst& in, Warp& w, uint32_t m) {
  bool faulted = false;
  ForLanes(m, [&](int lane) {
    if (faulted) return;
    const uint64_t handle = ReadFrameArg<uint64_t>(w, lane, in.a[0]);
    const uint32_t value = ReadFrameArg<uint32_t>(w, lane, in.a[1]);
    uint8_t* p = handle % 4 == 0 ? Resolve<MemSpace::kGlobal>(w, lane, handle, 4, true) : nullptr;
    if (p == nullptr) {
      w.Fault(Code::kIllegalAddress, in, lane,
              "cudaGraphSetConditional: handle " + std::to_string(handle) +
                  " is not a conditional node's value");
      faulted = true;
      return;
    }
    std::memcpy(p, &value, 4);
  });
  return faulted;
}

}  // namespace

int DeviceLaunchDepth() { return g_depth; }

ExecFn DeviceRuntimeBuiltin(std::string_view name) {
  if (name == "__cudaCDP2GetParameterBufferV2" || name == "cudaGetParameterBufferV2") {
    return ExecGetParameterBuffer;
  }
  if (name == "__cudaCDP2LaunchDeviceV2" || name == "cudaLaunchDeviceV2") return ExecLaunchDevice;
  if (name == "__cudaCDP2StreamCreateWithFlags") return ExecStreamCreate;
  if (name == "cudaGraphSetConditional") return ExecSetConditional;
  if (name == "__cudaCDP2StreamDestroy" || name == "__cudaCDP2GetLastError" ||
      name == "__cudaCDP2PeekAtLastError") {
    return ExecSucceed;
  }
  return nullptr;
}

Status RunDeviceLaunches(LaunchCtx& parent,
                         const std::function<Status(int kernel, const LaunchConfig&,
                                                    std::span<const uint8_t>)>& launch) {
  std::vector<LaunchCtx::DeviceLaunch> launches;
  {
    std::lock_guard<std::mutex> lock(parent.device_mu);
    launches = parent.device_launches;
  }
  for (const auto& child : launches) {
    if (!child.launched) continue;  // a buffer taken and never launched
    if (g_depth >= kMaxDepth) {
      return Error(Code::kLaunchFailed, "device-side launches nested deeper than " +
                                            std::to_string(kMaxDepth) + " levels");
    }
    const std::span<const uint8_t> params(parent.device_buffers.data() + child.offset,
                                          child.size);
    ++g_depth;
    Status status = launch(child.kernel, child.config, params);
    --g_depth;
    if (!status.ok()) {
      return Error(status.code(), "in a grid launched from device code (kernel " +
                                      parent.program->kernels_[child.kernel].name +
                                      "): " + status.message());
    }
  }
  return Status::Ok();
}

}  // namespace pvgpu::ptx
