// Driver API: modules, their functions and globals (what a function answers about itself is in
// api_function.cc).
//
// The host describes a loaded module completely in its reply (kernels with their parameter
// layouts, globals with their addresses), so getting functions and globals, and packing
// kernelParams, need no further round trip.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

#include "guest/cuda/arrays.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/module_load.h"
#include "guest/cuda/module_upload.h"
#include "guest/cuda/state.h"
#include "protocol/link_image.h"

namespace pvgpu::guest {

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
Code ClassifyImage(const void* image, protocol::ImageKind* kind, std::string_view* bytes) {
  if (image == nullptr) return Code::kInvalidValue;
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
    return Code::kOk;
  }
  const auto* text = static_cast<const char*>(image);
  if (std::memcmp(text,
                  "\x7f"
                  "ELF",
                  4) == 0) {
    uint64_t shoff = 0;
    uint16_t shentsize = 0, shnum = 0;
    std::memcpy(&shoff, text + 0x28, 8);
    std::memcpy(&shentsize, text + 0x3a, 2);
    std::memcpy(&shnum, text + 0x3c, 2);
    *kind = protocol::ImageKind::kCubin;
    *bytes = {text, shoff + uint64_t{shentsize} * shnum};
    return Code::kOk;
  }
  // strncmp stops at a PTX text's terminating NUL, however short the text.
  if (std::strncmp(text, protocol::kLinkImageMagic, sizeof(protocol::kLinkImageMagic)) == 0) {
    *kind = protocol::ImageKind::kLinked;
    *bytes = {text, protocol::LinkImageSize(image)};
    return Code::kOk;
  }
  *kind = protocol::ImageKind::kPtx;
  *bytes = {text, std::strlen(text) + 1};
  return Code::kOk;
}

}  // namespace

Code LoadModule(CUctx_st* ctx, CUmodule* module, const void* image, JitLogs* logs,
                ImageOrigin origin) {
  protocol::ImageKind kind;
  std::string_view bytes;
  if (Code code = ClassifyImage(image, &kind, &bytes); code != Code::kOk) return code;
  if (origin.address == nullptr && origin.file.empty()) origin.address = image;
  Client& client = *ctx->client;
  protocol::ModuleLoadRequest request;
  request.ctx = ctx->handle;
  request.module = client.NewHandle();
  request.image_kind = static_cast<uint32_t>(kind);
  request.log_limit = 1u << 20;
  std::vector<uint8_t> payload;
  const Code code = SendModuleImage(
      client, request, {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, &payload);
  auto mod = std::make_shared<CUmod_st>();
  if (code == Code::kDeviceUnavailable || !mod->description.Decode(payload)) {
    return code == Code::kOk ? Code::kUnknown : code;
  }
  if (code == Code::kNoBinaryForGpu) {
    // Machine code for one NVIDIA GPU on a device that runs PTX: say which image, and why.
    // The JIT log names the image's library or file too, when known (a pvgpud whose cuda
    // adapter runs on pvgpu's libcuda loads a copy from its heap, which names nothing).
    bool named = false;
    const std::string image_text =
        DescribeImage(ImageKindName(kind), origin, &named) + ": " + mod->description.error_log;
    if (named) mod->description.error_log = image_text;
    WarnNoBinaryForGpu(image_text, kind);
  } else if (code != Code::kOk && !mod->description.error_log.empty()) {
    PVGPU_INFO("module load failed: " << mod->description.error_log);
  }
  if (logs != nullptr) logs->Write(mod->description.error_log, mod->description.info_log);
  if (code != Code::kOk) return code;
  mod->handle = request.module;
  mod->ctx = ctx;
  mod->functions = std::vector<CUfunc_st>(mod->description.kernels.size());
  Objects& objects = pvgpu::guest::objects();
  for (size_t i = 0; i < mod->functions.size(); ++i) {
    CUfunc_st& function = mod->functions[i];
    function.module = mod.get();
    function.index = static_cast<uint32_t>(i);
    function.kernel = &mod->description.kernels[i];
    // The function's Ref shares ownership of its module: a launch in flight keeps it.
    objects.functions.Add(Ref<CUfunc_st>(mod, &function));
  }
  for (const auto& g : mod->description.globals) {
    objects.device_memory.Assign(g.dptr, std::max<uint64_t>(g.size, 1), ctx);
  }
  *module = objects.modules.Add(std::move(mod));
  return Code::kOk;
}

JitLogs JitLogs::FromOptions(unsigned int count, CUjit_option* options, void** values,
                             const char* call) {
  JitLogs logs;
  for (unsigned int i = 0; i < count; ++i) {
    switch (options[i]) {
      case CU_JIT_ERROR_LOG_BUFFER:
        logs.error_buffer = static_cast<char*>(values[i]);
        break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
        // The value is passed in the pointer itself; the driver writes back the used size.
        logs.error_size = reinterpret_cast<uintptr_t>(values[i]);
        logs.error_size_slot = &values[i];
        break;
      case CU_JIT_INFO_LOG_BUFFER:
        logs.info_buffer = static_cast<char*>(values[i]);
        break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        logs.info_size = reinterpret_cast<uintptr_t>(values[i]);
        logs.info_size_slot = &values[i];
        break;
      case CU_JIT_WALL_TIME:
        logs.wall_time_slot = &values[i];
        break;
      default:
        PVGPU_DEBUG(call << ": ignoring JIT option " << static_cast<int>(options[i]));
        break;
    }
  }
  return logs;
}

void JitLogs::Write(const std::string& error_log, const std::string& info_log) const {
  WriteJitLog(error_log, error_buffer, error_size, error_size_slot);
  WriteJitLog(info_log, info_buffer, info_size, info_size_slot);
}

Code ImageBytes(const void* image, std::string_view* bytes) {
  protocol::ImageKind kind;
  return ClassifyImage(image, &kind, bytes);
}

Code ReadFile(const char* path, std::string* contents) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Code::kFileNotFound;
  contents->assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  return file.bad() ? Code::kFileNotFound : Code::kOk;
}

namespace api {

// The CUDA runtime asks before its first module load, and an error fails cudaGetDeviceCount
// and every call after it. pvgpu sends a module to the host whole when it is loaded, which is
// what CUDA calls eager loading (CUDA_MODULE_LOADING has no effect on it).
Code ModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  *mode = CU_MODULE_EAGER_LOADING;
  return Code::kOk;
}

Code ModuleLoadData(CUctx_st* ctx, CUmodule* module, const void* image) {
  return LoadModule(ctx, module, image, nullptr);
}

Code ModuleLoadDataEx(CUctx_st* ctx, CUmodule* module, const void* image, unsigned int numOptions,
                      CUjit_option* options, void** optionValues) {
  JitLogs logs = JitLogs::FromOptions(numOptions, options, optionValues, "cuModuleLoadDataEx");
  return LoadModule(ctx, module, image, &logs);
}

Code ModuleLoad(CUmodule* module, const char* fname) {
  std::string contents;
  if (Code code = ReadFile(fname, &contents); code != Code::kOk) return code;
  contents.push_back('\0');
  CUctx_st* ctx = nullptr;
  if (Code code = CurrentLiveContext(&ctx); code != Code::kOk) return code;
  return LoadModule(ctx, module, contents.data(), nullptr, ImageOrigin{nullptr, fname});
}

Code ModuleUnload(CUmod_st* hmod) {
  if (!LiveContext(hmod->ctx)) return Code::kContextIsDestroyed;
  // Of two threads unloading it at once, one takes it from the store.
  Ref<CUmod_st> module = objects().modules.Take(hmod);
  if (module == nullptr) return Code::kInvalidHandle;
  DropReferencesOf(module.get());
  Objects& objects = pvgpu::guest::objects();
  for (CUfunc_st& function : module->functions) objects.functions.Take(&function);
  for (const auto& g : module->description.globals) objects.device_memory.TakeBase(g.dptr);
  protocol::ModuleUnloadRequest request;
  request.ctx = module->ctx->handle;
  request.module = module->handle;
  return module->ctx->client->Call(request);
}

Code ModuleGetFunction(CUfunction* hfunc, CUmod_st* hmod, const char* name) {
  for (auto& function : hmod->functions) {
    if (function.kernel->name == name) {
      *hfunc = &function;
      return Code::kOk;
    }
  }
  return Code::kNotFound;
}

Code ModuleGetFunctionCount(unsigned int* count, CUmod_st* mod) {
  *count = static_cast<unsigned int>(mod->functions.size());
  return Code::kOk;
}

// The first `numFunctions` functions, in the module's order (that of its description).
Code ModuleEnumerateFunctions(CUfunction* functions, unsigned int numFunctions, CUmod_st* mod) {
  const size_t n = std::min<size_t>(numFunctions, mod->functions.size());
  for (size_t i = 0; i < n; ++i) functions[i] = &mod->functions[i];
  return Code::kOk;
}

Code ModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmod_st* hmod, const char* name) {
  for (const auto& g : hmod->description.globals) {
    if (g.name == name) {
      if (dptr != nullptr) *dptr = g.dptr;
      if (bytes != nullptr) *bytes = g.size;
      return Code::kOk;
    }
  }
  return Code::kNotFound;
}

}  // namespace api
}  // namespace pvgpu::guest
