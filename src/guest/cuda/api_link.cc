// Driver API: the JIT linker (cuLinkCreate, cuLinkAddData, cuLinkAddFile, cuLinkComplete,
// cuLinkDestroy).
//
// The device's linker lives on the host, next to the device: the PTX engine links PTX for the
// cpu adapter, the host driver links for the cuda adapter. cuLinkComplete therefore bundles the
// inputs into a link image (protocol/link_image.h) that cuModuleLoadData, cuLibraryLoadData and
// friends accept, and has the host link it once right away, so that link errors (undefined or
// duplicate symbols, bad PTX) surface from cuLinkComplete with the linker's log, as they do
// with NVIDIA's driver.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "guest/cuda/state.h"
#include "protocol/link_image.h"

using pvgpu::guest::DriverState;
namespace protocol = pvgpu::protocol;

struct CUlinkState_st {
  CUctx_st* ctx = nullptr;
  struct Input {
    CUjitInputType type;
    std::string name;
    std::string data;
  };
  std::vector<Input> inputs;
  std::vector<uint8_t> image;  // cuLinkComplete's output, owned until cuLinkDestroy
  // Log buffers and the option slots the driver writes back into (sizes used, wall time).
  char* error_buffer = nullptr;
  size_t error_size = 0;
  char* info_buffer = nullptr;
  size_t info_size = 0;
  void** error_size_slot = nullptr;
  void** info_size_slot = nullptr;
  void** wall_time_slot = nullptr;
};

namespace {

std::mutex g_links_mutex;
std::unordered_set<CUlinkState_st*>& Links() {
  static auto* links = new std::unordered_set<CUlinkState_st*>();
  return *links;
}

bool LiveLink(CUlinkState_st* state) {
  std::lock_guard<std::mutex> lock(g_links_mutex);
  return state != nullptr && Links().count(state) != 0;
}

CUresult AddInput(CUlinkState_st* state, CUjitInputType type, std::string name,
                  std::string data) {
  if (static_cast<unsigned>(type) > static_cast<unsigned>(protocol::LinkInputType::kNvvm)) {
    PVGPU_WARN("cuLinkAddData: unknown input type " << static_cast<int>(type));
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (data.empty()) return CUDA_ERROR_INVALID_VALUE;
  if (type == CU_JIT_INPUT_PTX) {
    // PTX is text up to its NUL, whether or not `size` counted one.
    data.resize(std::strlen(data.c_str()));
    if (data.empty()) return CUDA_ERROR_INVALID_VALUE;
  }
  state->inputs.push_back({type, std::move(name), std::move(data)});
  state->image.clear();  // an earlier cuLinkComplete's image no longer describes the link
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuLinkCreate_v2(unsigned int numOptions, CUjit_option* options,
                                 void** optionValues, CUlinkState* stateOut) {
  PVGPU_API_TRACE("cuLinkCreate", numOptions << ", " << stateOut);
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  if (stateOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto state = std::make_unique<CUlinkState_st>();
  state->ctx = ctx;
  for (unsigned int i = 0; i < numOptions; ++i) {
    switch (options[i]) {
      case CU_JIT_ERROR_LOG_BUFFER:
        state->error_buffer = static_cast<char*>(optionValues[i]);
        break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
        state->error_size = reinterpret_cast<uintptr_t>(optionValues[i]);
        state->error_size_slot = &optionValues[i];
        break;
      case CU_JIT_INFO_LOG_BUFFER:
        state->info_buffer = static_cast<char*>(optionValues[i]);
        break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        state->info_size = reinterpret_cast<uintptr_t>(optionValues[i]);
        state->info_size_slot = &optionValues[i];
        break;
      case CU_JIT_WALL_TIME:
        state->wall_time_slot = &optionValues[i];
        break;
      default:
        // Targets, optimization levels, register limits, caching: they shape machine code,
        // which the device's own linker decides.
        PVGPU_DEBUG("cuLinkCreate: ignoring JIT option " << static_cast<int>(options[i]));
        break;
    }
  }
  // The optionValues array must stay valid until cuLinkDestroy (as the driver API requires):
  // logs and the sizes used are written into it by cuLinkComplete.
  std::lock_guard<std::mutex> lock(g_links_mutex);
  *stateOut = state.get();
  Links().insert(state.release());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void* data, size_t size,
                                  const char* name, unsigned int numOptions, CUjit_option* options,
                                  void** optionValues) {
  PVGPU_API_TRACE("cuLinkAddData", state << ", " << static_cast<int>(type) << ", " << data
                                         << ", " << size << ", " << (name ? name : "(null)"));
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (!LiveLink(state)) return CUDA_ERROR_INVALID_HANDLE;
  if (data == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Per-input options (optimization levels and the like) do not change what runs.
  return AddInput(state, type, name != nullptr ? name : "",
                  std::string(static_cast<const char*>(data), size));
}

CUresult CUDAAPI cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char* path,
                                  unsigned int numOptions, CUjit_option* options,
                                  void** optionValues) {
  PVGPU_API_TRACE("cuLinkAddFile", state << ", " << static_cast<int>(type) << ", "
                                         << (path ? path : "(null)"));
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (!LiveLink(state)) return CUDA_ERROR_INVALID_HANDLE;
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return CUDA_ERROR_FILE_NOT_FOUND;
  std::string contents((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return CUDA_ERROR_FILE_NOT_FOUND;
  return AddInput(state, type, path, std::move(contents));
}

CUresult CUDAAPI cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut) {
  PVGPU_API_TRACE("cuLinkComplete", state << ", " << cubinOut << ", " << sizeOut);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (!LiveLink(state)) return CUDA_ERROR_INVALID_HANDLE;
  if (cubinOut == nullptr || sizeOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (state->inputs.empty()) {
    pvgpu::guest::WriteJitLog("no input to link", state->error_buffer, state->error_size, state->error_size_slot);
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<protocol::LinkInput> inputs;
  inputs.reserve(state->inputs.size());
  for (const auto& input : state->inputs) {
    inputs.push_back({static_cast<protocol::LinkInputType>(input.type), input.name, input.data});
  }
  std::vector<uint8_t> image = protocol::EncodeLinkImage(inputs);

  // Link once on the host now, for the errors and logs; the module is not kept.
  char error_log[16 << 10] = {}, info_log[16 << 10] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log, reinterpret_cast<void*>(uintptr_t{sizeof(error_log)}), info_log,
                    reinterpret_cast<void*>(uintptr_t{sizeof(info_log)})};
  CUcontext previous = nullptr;
  cuCtxGetCurrent(&previous);
  const bool switch_context = previous != state->ctx;
  if (switch_context && cuCtxPushCurrent_v2(state->ctx) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_CONTEXT;  // the context the link was created in is gone
  }
  CUmodule module = nullptr;
  const CUresult linked = cuModuleLoadDataEx(&module, image.data(), 4, options, values);
  if (linked == CUDA_SUCCESS) cuModuleUnload(module);
  if (switch_context) cuCtxPopCurrent_v2(&previous);

  pvgpu::guest::WriteJitLog(error_log, state->error_buffer, state->error_size, state->error_size_slot);
  pvgpu::guest::WriteJitLog(info_log, state->info_buffer, state->info_size, state->info_size_slot);
  if (state->wall_time_slot != nullptr) {
    const float ms = std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() -
                                                              start)
                         .count();
    *state->wall_time_slot = nullptr;
    std::memcpy(state->wall_time_slot, &ms, sizeof(ms));
  }
  if (linked != CUDA_SUCCESS) {
    PVGPU_INFO("cuLinkComplete: link failed: " << error_log);
    return linked;
  }
  state->image = std::move(image);
  *cubinOut = state->image.data();
  *sizeOut = state->image.size();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLinkDestroy(CUlinkState state) {
  PVGPU_API_TRACE("cuLinkDestroy", state);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  {
    std::lock_guard<std::mutex> lock(g_links_mutex);
    if (state == nullptr || Links().erase(state) == 0) return CUDA_ERROR_INVALID_HANDLE;
  }
  delete state;
  return CUDA_SUCCESS;
}

}  // extern "C"

// The CUDA 5.5 names of the same calls (cuda.h maps the plain names to the _v2 ABI, which
// changed nothing in the signatures but is kept apart for binaries built against 5.5).
#undef cuLinkCreate
#undef cuLinkAddData
#undef cuLinkAddFile

extern "C" {

CUresult CUDAAPI cuLinkCreate(unsigned int numOptions, CUjit_option* options, void** optionValues,
                              CUlinkState* stateOut) {
  return cuLinkCreate_v2(numOptions, options, optionValues, stateOut);
}

CUresult CUDAAPI cuLinkAddData(CUlinkState state, CUjitInputType type, void* data, size_t size,
                               const char* name, unsigned int numOptions, CUjit_option* options,
                               void** optionValues) {
  return cuLinkAddData_v2(state, type, data, size, name, numOptions, options, optionValues);
}

CUresult CUDAAPI cuLinkAddFile(CUlinkState state, CUjitInputType type, const char* path,
                               unsigned int numOptions, CUjit_option* options,
                               void** optionValues) {
  return cuLinkAddFile_v2(state, type, path, numOptions, options, optionValues);
}

}  // extern "C"
