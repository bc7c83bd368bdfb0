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

#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/module_load.h"
#include "guest/cuda/state.h"
#include "protocol/link_image.h"

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
  pvgpu::guest::JitLogs logs;
};

namespace pvgpu::guest {

namespace {

Code AddInput(CUlinkState_st* state, CUjitInputType type, std::string name, std::string data) {
  if (static_cast<unsigned>(type) > static_cast<unsigned>(protocol::LinkInputType::kNvvm)) {
    PVGPU_WARN("cuLinkAddData: unknown input type " << static_cast<int>(type));
    return Code::kInvalidValue;
  }
  if (data.empty()) return Code::kInvalidValue;
  if (type == CU_JIT_INPUT_PTX) {
    // PTX is text up to its NUL, whether or not `size` counted one.
    data.resize(std::strlen(data.c_str()));
    if (data.empty()) return Code::kInvalidValue;
  }
  state->inputs.push_back({type, std::move(name), std::move(data)});
  state->image.clear();  // an earlier cuLinkComplete's image no longer describes the link
  return Code::kOk;
}

// Links `image` once on the host in the link's context, for the errors and logs; the module
// is not kept.
Code LinkOnHost(CUlinkState_st* state, const std::vector<uint8_t>& image, std::string* error_log,
                std::string* info_log) {
  if (!LiveContext(state->ctx)) return Code::kInvalidContext;  // the link's context is gone
  char error[16 << 10] = {}, info[16 << 10] = {};
  JitLogs logs;
  logs.error_buffer = error;
  logs.error_size = sizeof(error);
  logs.info_buffer = info;
  logs.info_size = sizeof(info);
  CUmodule module = nullptr;
  const Code linked = LoadModule(state->ctx, &module, image.data(), &logs);
  if (linked == Code::kOk) {
    if (Ref<CUmod_st> loaded = objects().modules.Find(module))
      (void)api::ModuleUnload(loaded.get());
  }
  *error_log = error;
  *info_log = info;
  return linked;
}

}  // namespace

namespace api {

Code LinkCreate_v2(CUctx_st* ctx, unsigned int numOptions, CUjit_option* options,
                   void** optionValues, CUlinkState* stateOut) {
  auto state = std::make_shared<CUlinkState_st>();
  state->ctx = ctx;
  state->logs = JitLogs::FromOptions(numOptions, options, optionValues, "cuLinkCreate");
  // The optionValues array must stay valid until cuLinkDestroy (as the driver API requires):
  // logs and the sizes used are written into it by cuLinkComplete.
  *stateOut = objects().links.Add(std::move(state));
  return Code::kOk;
}

// Per-input options (optimization levels and the like) do not change what runs.
Code LinkAddData_v2(CUlinkState_st* state, CUjitInputType type, void* data, size_t size,
                    const char* name, unsigned int numOptions, CUjit_option* options,
                    void** optionValues) {
  if (size == 0) return Code::kInvalidValue;
  return AddInput(state, type, name != nullptr ? name : "",
                  std::string(static_cast<const char*>(data), size));
}

Code LinkAddFile_v2(CUlinkState_st* state, CUjitInputType type, const char* path,
                    unsigned int numOptions, CUjit_option* options, void** optionValues) {
  std::string contents;
  if (Code code = ReadFile(path, &contents); code != Code::kOk) return code;
  return AddInput(state, type, path, std::move(contents));
}

Code LinkComplete(CUlinkState_st* state, void** cubinOut, size_t* sizeOut) {
  if (state->inputs.empty()) {
    const JitLogs& logs = state->logs;
    WriteJitLog("no input to link", logs.error_buffer, logs.error_size, logs.error_size_slot);
    return Code::kInvalidValue;
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<protocol::LinkInput> inputs;
  inputs.reserve(state->inputs.size());
  for (const auto& input : state->inputs) {
    inputs.push_back({static_cast<protocol::LinkInputType>(input.type), input.name, input.data});
  }
  std::vector<uint8_t> image = protocol::EncodeLinkImage(inputs);
  std::string error_log, info_log;
  const Code linked = LinkOnHost(state, image, &error_log, &info_log);
  if (linked == Code::kInvalidContext) return linked;
  state->logs.Write(error_log, info_log);
  if (state->logs.wall_time_slot != nullptr) {
    const float ms =
        std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
    *state->logs.wall_time_slot = nullptr;
    std::memcpy(state->logs.wall_time_slot, &ms, sizeof(ms));
  }
  if (linked != Code::kOk) {
    PVGPU_INFO("cuLinkComplete: link failed: " << error_log);
    return linked;
  }
  state->image = std::move(image);
  *cubinOut = state->image.data();
  *sizeOut = state->image.size();
  return Code::kOk;
}

Code LinkDestroy(CUlinkState_st* state) {
  // Of two threads destroying it at once, one takes it from the store.
  return objects().links.Take(state) != nullptr ? Code::kOk : Code::kInvalidHandle;
}

}  // namespace api
}  // namespace pvgpu::guest
