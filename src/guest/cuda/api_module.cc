// Driver API: modules, functions, globals and kernel launches.
//
// The host describes a loaded module completely in its reply (kernels with their parameter
// layouts, globals with their addresses), so getting functions and globals, and packing
// kernelParams, need no further round trip; launches are posted without waiting.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string_view>

#include "guest/cuda/state.h"
#include "protocol/link_image.h"

using pvgpu::Code;
using pvgpu::guest::Client;
using pvgpu::guest::DriverState;
using pvgpu::guest::ToCu;
namespace protocol = pvgpu::protocol;

namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr uint32_t kFatbinWrapperMagic = 0x466243B1u;

struct FatbinWrapper {
  uint32_t magic;
  uint32_t version;
  const void* data;
  const void* filename_or_fatbins;
};

struct FatbinHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t header_size;
  uint64_t fat_size;
};

// Works out what `image` is and how long it is. A PTX image is NUL-terminated text; a fatbin
// carries its size in its header; an ELF cubin in its section table.
CUresult ClassifyImage(const void* image, protocol::ImageKind* kind, std::string_view* bytes) {
  if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint32_t magic = 0;
  std::memcpy(&magic, image, sizeof(magic));
  if (magic == kFatbinWrapperMagic) {
    const auto* wrapper = static_cast<const FatbinWrapper*>(image);
    return ClassifyImage(wrapper->data, kind, bytes);
  }
  if (magic == kFatbinMagic) {
    FatbinHeader header;
    std::memcpy(&header, image, sizeof(header));
    *kind = protocol::ImageKind::kFatbin;
    *bytes = {static_cast<const char*>(image), header.header_size + header.fat_size};
    return CUDA_SUCCESS;
  }
  const auto* text = static_cast<const char*>(image);
  if (std::memcmp(text, "\x7f" "ELF", 4) == 0) {
    uint64_t shoff = 0;
    uint16_t shentsize = 0, shnum = 0;
    std::memcpy(&shoff, text + 0x28, 8);
    std::memcpy(&shentsize, text + 0x3a, 2);
    std::memcpy(&shnum, text + 0x3c, 2);
    *kind = protocol::ImageKind::kCubin;
    *bytes = {text, shoff + uint64_t{shentsize} * shnum};
    return CUDA_SUCCESS;
  }
  // strncmp stops at a PTX text's terminating NUL, however short the text.
  if (std::strncmp(text, protocol::kLinkImageMagic, sizeof(protocol::kLinkImageMagic)) == 0) {
    *kind = protocol::ImageKind::kLinked;
    *bytes = {text, protocol::LinkImageSize(image)};
    return CUDA_SUCCESS;
  }
  *kind = protocol::ImageKind::kPtx;
  *bytes = {text, std::strlen(text) + 1};
  return CUDA_SUCCESS;
}

struct JitLogs {
  char* error_buffer = nullptr;
  size_t error_size = 0;
  char* info_buffer = nullptr;
  size_t info_size = 0;
  void** error_size_slot = nullptr;  // the *_SIZE_BYTES option value, updated on return
  void** info_size_slot = nullptr;
};

CUresult LoadModule(CUmodule* module, const void* image, JitLogs* logs) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  if (module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  protocol::ImageKind kind;
  std::string_view bytes;
  if (CUresult r = ClassifyImage(image, &kind, &bytes); r != CUDA_SUCCESS) return r;
  Client& client = *ctx->client;
  if (bytes.size() > client.max_payload()) {
    PVGPU_WARN("module image of " << bytes.size() << " bytes exceeds the channel's limit of "
                                  << client.max_payload());
    return CUDA_ERROR_INVALID_IMAGE;
  }
  protocol::ModuleLoadRequest request;
  request.ctx = ctx->handle;
  request.module = client.NewHandle();
  request.image_kind = static_cast<uint32_t>(kind);
  request.log_limit = 1u << 20;
  std::vector<uint8_t> payload;
  const Code code = client.Call(
      request, {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, nullptr, &payload);
  auto* mod = new CUmod_st();
  if (code == Code::kDeviceUnavailable || !mod->description.Decode(payload)) {
    delete mod;
    return code == Code::kOk ? CUDA_ERROR_UNKNOWN : ToCu(code);
  }
  if (logs != nullptr) {
    pvgpu::guest::WriteJitLog(mod->description.error_log, logs->error_buffer, logs->error_size,
                              logs->error_size_slot);
    pvgpu::guest::WriteJitLog(mod->description.info_log, logs->info_buffer, logs->info_size,
                              logs->info_size_slot);
  }
  if (code != Code::kOk) {
    if (code == Code::kNoBinaryForGpu) {
      // Machine code for one NVIDIA GPU on a device that runs PTX: say why, and what to do.
      static std::once_flag once;
      std::call_once(once, [&] {
        PVGPU_WARN("module load failed: " << mod->description.error_log
                   << " -- the device needs PTX; note that numba-cuda and cuda.core link with "
                      "nvJitLink whenever they can load it, and nvJitLink emits machine code: "
                      "see pvgpu's docs/python-clients.md");
      });
    } else if (!mod->description.error_log.empty()) {
      PVGPU_INFO("module load failed: " << mod->description.error_log);
    }
    delete mod;
    return ToCu(code);
  }
  mod->handle = request.module;
  mod->ctx = ctx;
  mod->functions.resize(mod->description.kernels.size());
  for (size_t i = 0; i < mod->functions.size(); ++i) {
    mod->functions[i].module = mod;
    mod->functions[i].index = static_cast<uint32_t>(i);
    mod->functions[i].kernel = &mod->description.kernels[i];
  }
  auto& state = DriverState::Get();
  {
    std::lock_guard<std::mutex> lock(state.mutex());
    state.modules.insert(mod);
    for (const auto& g : mod->description.globals) {
      state.allocations[g.dptr] = {std::max<uint64_t>(g.size, 1), ctx};
    }
  }
  *module = mod;
  return CUDA_SUCCESS;
}

bool LiveModule(CUmod_st* module) {
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  return module != nullptr && state.modules.count(module) != 0;
}

}  // namespace

namespace pvgpu::guest {

CUresult ImageBytes(const void* image, std::string_view* bytes) {
  protocol::ImageKind kind;
  return ClassifyImage(image, &kind, bytes);
}

// A CUfunction is valid while its module is loaded.
bool LiveFunction(CUfunc_st* function) {
  if (function == nullptr) return false;
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  for (CUmod_st* module : state.modules) {
    if (!module->functions.empty() && function >= &module->functions.front() &&
        function <= &module->functions.back()) {
      return true;
    }
  }
  return false;
}

}  // namespace pvgpu::guest

using pvgpu::guest::LiveFunction;

extern "C" {

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  PVGPU_API_TRACE("cuModuleLoadData", module << ", " << image);
  return LoadModule(module, image, nullptr);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                                    CUjit_option* options, void** optionValues) {
  PVGPU_API_TRACE("cuModuleLoadDataEx", module << ", " << image << ", " << numOptions);
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  JitLogs logs;
  for (unsigned int i = 0; i < numOptions; ++i) {
    void* value = optionValues[i];
    switch (options[i]) {
      case CU_JIT_ERROR_LOG_BUFFER:
        logs.error_buffer = static_cast<char*>(value);
        break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
        // The value is passed in the pointer itself; the driver writes back the used size.
        logs.error_size = reinterpret_cast<uintptr_t>(value);
        logs.error_size_slot = &optionValues[i];
        break;
      case CU_JIT_INFO_LOG_BUFFER:
        logs.info_buffer = static_cast<char*>(value);
        break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        logs.info_size = reinterpret_cast<uintptr_t>(value);
        logs.info_size_slot = &optionValues[i];
        break;
      default:
        // Optimization level, targets, caching and the like do not change what the cpu
        // adapter runs; they are accepted and ignored.
        PVGPU_DEBUG("cuModuleLoadDataEx: ignoring JIT option " << static_cast<int>(options[i]));
        break;
    }
  }
  return LoadModule(module, image, &logs);
}

CUresult CUDAAPI cuModuleLoad(CUmodule* module, const char* fname) {
  PVGPU_API_TRACE("cuModuleLoad", module << ", " << (fname ? fname : "(null)"));
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (fname == nullptr || module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream file(fname, std::ios::binary);
  if (!file) return CUDA_ERROR_FILE_NOT_FOUND;
  std::string contents((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  contents.push_back('\0');
  return LoadModule(module, contents.data(), nullptr);
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
  PVGPU_API_TRACE("cuModuleUnload", hmod);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  auto& state = DriverState::Get();
  {
    std::lock_guard<std::mutex> lock(state.mutex());
    if (hmod == nullptr || state.modules.count(hmod) == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (state.contexts.count(hmod->ctx) == 0) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    state.modules.erase(hmod);
    for (const auto& g : hmod->description.globals) state.allocations.erase(g.dptr);
  }
  protocol::ModuleUnloadRequest request;
  request.ctx = hmod->ctx->handle;
  request.module = hmod->handle;
  const Code code = hmod->ctx->client->Call(request);
  delete hmod;
  return ToCu(code);
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  PVGPU_API_TRACE("cuModuleGetFunction", hfunc << ", " << hmod << ", " << (name ? name : "(null)"));
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!LiveModule(hmod)) return CUDA_ERROR_INVALID_HANDLE;
  for (auto& function : hmod->functions) {
    if (function.kernel->name == name) {
      *hfunc = &function;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod,
                                   const char* name) {
  PVGPU_API_TRACE("cuModuleGetGlobal_v2", dptr << ", " << bytes << ", " << hmod << ", " << (name ? name : "(null)"));
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!LiveModule(hmod)) return CUDA_ERROR_INVALID_HANDLE;
  for (const auto& g : hmod->description.globals) {
    if (g.name == name) {
      if (dptr != nullptr) *dptr = g.dptr;
      if (bytes != nullptr) *bytes = g.size;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  PVGPU_API_TRACE("cuFuncGetAttribute", pi << ", " << static_cast<int>(attrib) << ", " << hfunc);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!LiveFunction(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  const auto& k = *hfunc->kernel;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = static_cast<int>(k.max_threads_per_block); break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = static_cast<int>(k.shared_bytes); break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = 0; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = static_cast<int>(k.local_bytes); break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = static_cast<int>(k.num_regs); break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = 75; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 75; break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 0; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *pi = hfunc->max_dynamic_shared != 0 ? hfunc->max_dynamic_shared
                                           : static_cast<int>(48 * 1024 - k.shared_bytes);
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = -1; break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                unsigned int gridDimZ, unsigned int blockDimX,
                                unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream,
                                void** kernelParams, void** extra) {
  PVGPU_API_TRACE("cuLaunchKernel", f << ", grid (" << gridDimX << "," << gridDimY << ","
                  << gridDimZ << "), block (" << blockDimX << "," << blockDimY << ","
                  << blockDimZ << "), shared " << sharedMemBytes << ", stream " << hStream);
  CUctx_st* ctx = nullptr;
  uint64_t wire_stream = 0;
  if (CUresult r = pvgpu::guest::ResolveStream(hStream, &ctx, &wire_stream); r != CUDA_SUCCESS) {
    return r;
  }
  if (!LiveFunction(f) && !pvgpu::guest::ResolveKernel(f, &f)) return CUDA_ERROR_INVALID_HANDLE;
  if (f->module->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;  // the function's context must be current
  const auto& k = *f->kernel;
  const auto* device = DriverState::Get().device(ctx->device);
  const int* attrs = device->info.attributes;
  if (gridDimX == 0 || gridDimY == 0 || gridDimZ == 0 || blockDimX == 0 || blockDimY == 0 ||
      blockDimZ == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (gridDimX > static_cast<unsigned>(attrs[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X]) ||
      gridDimY > static_cast<unsigned>(attrs[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y]) ||
      gridDimZ > static_cast<unsigned>(attrs[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z]) ||
      blockDimX > static_cast<unsigned>(attrs[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X]) ||
      blockDimY > static_cast<unsigned>(attrs[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y]) ||
      blockDimZ > static_cast<unsigned>(attrs[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z])) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const uint64_t threads = uint64_t{blockDimX} * blockDimY * blockDimZ;
  const uint32_t max_threads = k.max_threads_per_block != 0 ? k.max_threads_per_block : 1024;
  if (threads > max_threads) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t shared_limit =
      f->max_dynamic_shared != 0
          ? uint64_t(f->max_dynamic_shared) + k.shared_bytes
          : uint64_t(attrs[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK]);
  if (uint64_t{sharedMemBytes} + k.shared_bytes > shared_limit) {
    return CUDA_ERROR_INVALID_VALUE;
  }

  std::vector<uint8_t> params(k.param_bytes, 0);
  if (kernelParams != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (kernelParams != nullptr) {
    for (size_t i = 0; i < k.param_sizes.size(); ++i) {
      if (kernelParams[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(params.data() + k.param_offsets[i], kernelParams[i], k.param_sizes[i]);
    }
  } else if (extra != nullptr) {
    const void* buffer = nullptr;
    size_t size = 0;
    bool have_size = false;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        buffer = extra[i + 1];
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        size = *static_cast<const size_t*>(extra[i + 1]);
        have_size = true;
      } else {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    if (!k.param_sizes.empty() && (buffer == nullptr || !have_size || size < k.param_bytes)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (k.param_bytes > 0) std::memcpy(params.data(), buffer, k.param_bytes);
  } else if (!k.param_sizes.empty()) {
    return CUDA_ERROR_INVALID_VALUE;
  }

  protocol::LaunchKernelRequest request;
  request.ctx = ctx->handle;
  request.stream = wire_stream;
  request.module = f->module->handle;
  request.kernel = f->index;
  request.shared_bytes = sharedMemBytes;
  request.grid[0] = gridDimX;
  request.grid[1] = gridDimY;
  request.grid[2] = gridDimZ;
  request.block[0] = blockDimX;
  request.block[1] = blockDimY;
  request.block[2] = blockDimZ;
  uint64_t seq = 0;
  if (Code code = ctx->client->Post(request, params, &seq); code != Code::kOk) return ToCu(code);
  pvgpu::guest::NoteSubmitted(ctx, hStream, seq);
  return CUDA_SUCCESS;
}

}  // extern "C"
