// The CUDART_INTERFACE, TOOLS_RUNTIME_CALLBACK_HOOKS and CONTEXT_CHECKS slots (runtime_slots.h).
#include "guest/cuda/runtime_slots.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "guest/cuda/state.h"

namespace pvgpu::guest {
namespace {

constexpr uint32_t kFatbinWrapperMagic = 0x466243B1u;  // __fatBinC_Wrapper_t
constexpr uint32_t kFatbinMagic = 0xBA55ED50u;         // fatbin header

bool HasMagic(const void* image, uint32_t magic) {
  if (image == nullptr) return false;
  uint32_t found = 0;
  std::memcpy(&found, image, sizeof(found));
  return found == magic;
}

// The meaning of the extra arguments of slots 6 and 8 is unknown; only the values the runtime
// is reported to pass (all zero) are accepted, anything else is refused and logged.
bool ExtraArgumentsUnused(const char* slot, void* a, void* b, unsigned int c) {
  if (a == nullptr && b == nullptr && c == 0) return true;
  PVGPU_WARN("CUDART_INTERFACE " << slot << ": unknown arguments (" << a << ", " << b << ", " << c
                                 << ") are not supported by pvgpu");
  return false;
}

// One buffer per hook slot, zero for the life of the process: the runtime reads an entry per
// runtime-API callback id to know whether a tool wants it. It needs at least 523 entries (13.0)
// and 14; the width of an entry is not known, so each gets 8 bytes.
constexpr size_t kRuntimeCallbackEntries = 1024;
constexpr size_t kSecondCallbackEntries = 64;
uint64_t g_runtime_callback_flags[kRuntimeCallbackEntries];
uint64_t g_second_callback_flags[kSecondCallbackEntries];

}  // namespace

CUresult CudartModuleFromWrapper(CUmodule* module, const void* wrapper) {
  PVGPU_SLOT_TRACE("CUDART_INTERFACE[1]", module << ", " << wrapper);
  if (module == nullptr || !HasMagic(wrapper, kFatbinWrapperMagic)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // cuModuleLoadData recognizes the wrapper and loads the fatbin it points to.
  return cuModuleLoadData(module, wrapper);
}

CUresult CudartPrimaryContext(CUcontext* ctx, CUdevice device) {
  PVGPU_SLOT_TRACE("CUDART_INTERFACE[2]", ctx << ", " << device);
  auto& state = DriverState::Get();
  if (Code code = state.CheckInit(); code != Code::kOk) return ToCu(code);
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (state.device(device) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = PrimaryContextRecord(device);
  return CUDA_SUCCESS;
}

CUresult CudartModuleFromWrapperEx(CUmodule* module, const void* wrapper, void* a, void* b,
                                   unsigned int c) {
  if (!ExtraArgumentsUnused("[6]", a, b, c)) return CUDA_ERROR_NOT_SUPPORTED;
  return CudartModuleFromWrapper(module, wrapper);
}

void CudartIgnoreSize(size_t size) { PVGPU_SLOT_TRACE("CUDART_INTERFACE[7]", size); }

CUresult CudartModuleFromFatbin(const void* header, CUmodule* module, void* a, void* b,
                                unsigned int c) {
  PVGPU_SLOT_TRACE("CUDART_INTERFACE[8]", header << ", " << module);
  if (!ExtraArgumentsUnused("[8]", a, b, c)) return CUDA_ERROR_NOT_SUPPORTED;
  if (module == nullptr || !HasMagic(header, kFatbinMagic)) return CUDA_ERROR_INVALID_VALUE;
  return cuModuleLoadData(module, header);
}

CUresult CudartLoadCompilers() {
  PVGPU_SLOT_TRACE("CUDART_INTERFACE[12]", "");
  return CUDA_SUCCESS;  // PTX is compiled by the host; nothing to load in the guest
}

void ToolsRuntimeCallbackFlags(void** buffer, size_t* count) {
  PVGPU_SLOT_TRACE("TOOLS_RUNTIME_CALLBACK_HOOKS[2]", buffer << ", " << count);
  if (buffer != nullptr) *buffer = g_runtime_callback_flags;
  if (count != nullptr) *count = kRuntimeCallbackEntries;
}

void ToolsSecondCallbackFlags(void** buffer, size_t* count) {
  PVGPU_SLOT_TRACE("TOOLS_RUNTIME_CALLBACK_HOOKS[6]", buffer << ", " << count);
  if (buffer != nullptr) *buffer = g_second_callback_flags;
  if (count != nullptr) *count = kSecondCallbackEntries;
}

CUresult ContextCheck(CUcontext ctx, uint32_t* result, void** unused) {
  PVGPU_SLOT_TRACE("CONTEXT_CHECKS[2]", ctx << ", " << result << ", " << unused);
  if (result != nullptr) *result = 0;  // nothing about the context needs the runtime's attention
  return CUDA_SUCCESS;
}

uint32_t ContextCheckMode() {
  PVGPU_SLOT_TRACE("CONTEXT_CHECKS[3]", "");
  return 0;
}

}  // namespace pvgpu::guest
