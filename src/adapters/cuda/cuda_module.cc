// Modules on the real driver: the guest's image goes to cuModuleLoadDataEx unchanged (unless
// its PTX has texture or surface references, which go as objects: ptx/references.h); the
// description the guest needs (kernel names and parameter layouts, global names) comes from
// the driver where it can tell (cuFuncGetParamInfo, CUDA 12.4+), else from the image's PTX.
#include <cstring>
#include <deque>
#include <limits>

#include "adapters/cuda/cuda_context.h"
#include "adapters/link_inputs.h"
#include "common/log.h"
#include "ptx/ptx.h"
#include "ptx/references.h"

namespace pvgpu::adapters::cuda {
namespace {

constexpr size_t kLogBytes = 64 << 10;

class CudaModule final : public Module {
 public:
  CudaModule(CudaContext* context, CUmodule module) : context_(context), module_(module) {}
  ~CudaModule() override {
    ScopedContext current(context_->driver().api(), context_->context());
    // Kernels still queued may use the module's code and globals.
    context_->WaitIdle();
    context_->driver().api().cuModuleUnload(module_);
    context_->AddUsed(-static_cast<int64_t>(global_bytes_));
  }
  const std::vector<KernelInfo>& kernels() const override { return kernels_; }
  const std::vector<GlobalInfo>& globals() const override { return globals_; }

  CudaContext* context_;
  CUmodule module_;
  std::vector<KernelInfo> kernels_;
  std::vector<CUfunction> functions_;
  std::vector<GlobalInfo> globals_;
  uint64_t global_bytes_ = 0;
};

void FillAttributes(const DriverApi& api, CUfunction function, KernelInfo* info) {
  auto get = [&](CUfunction_attribute attribute) -> uint32_t {
    int value = 0;
    return api.cuFuncGetAttribute(&value, attribute, function) == CUDA_SUCCESS && value > 0
               ? static_cast<uint32_t>(value)
               : 0;
  };
  info->num_regs = get(CU_FUNC_ATTRIBUTE_NUM_REGS);
  info->shared_bytes = get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  info->local_bytes = get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  info->max_threads_per_block = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info->ptx_version = get(CU_FUNC_ATTRIBUTE_PTX_VERSION);
  info->binary_version = get(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
}

// The driver's own description; kNotSupported when it lacks the CUDA 12.4 calls.
Status DescribeWithDriver(const Driver& driver, CudaModule* module) {
  const DriverApi& api = driver.api();
  if (api.cuModuleGetFunctionCount == nullptr || api.cuModuleEnumerateFunctions == nullptr ||
      api.cuFuncGetName == nullptr || api.cuFuncGetParamInfo == nullptr) {
    return Error(Code::kNotSupported, "driver older than CUDA 12.4");
  }
  unsigned int count = 0;
  PVGPU_TRY(driver.Check(api.cuModuleGetFunctionCount(&count, module->module_),
                         "cuModuleGetFunctionCount"));
  std::vector<CUfunction> functions(count);
  if (count > 0) {
    PVGPU_TRY(driver.Check(api.cuModuleEnumerateFunctions(functions.data(), count, module->module_),
                           "cuModuleEnumerateFunctions"));
  }
  std::vector<KernelInfo> kernels;
  for (CUfunction function : functions) {
    KernelInfo info;
    const char* name = nullptr;
    PVGPU_TRY(driver.Check(api.cuFuncGetName(&name, function), "cuFuncGetName"));
    info.name = name != nullptr ? name : "";
    for (size_t index = 0;; ++index) {
      size_t offset = 0, size = 0;
      const CUresult r = api.cuFuncGetParamInfo(function, index, &offset, &size);
      if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
      PVGPU_TRY(driver.Check(r, "cuFuncGetParamInfo"));
      info.param_offsets.push_back(static_cast<uint32_t>(offset));
      info.param_sizes.push_back(static_cast<uint32_t>(size));
      info.param_bytes = std::max<uint32_t>(info.param_bytes, offset + size);
    }
    FillAttributes(api, function, &info);
    kernels.push_back(std::move(info));
  }
  module->kernels_ = std::move(kernels);
  module->functions_ = std::move(functions);
  return Status::Ok();
}

// The layout from the PTX text, through pvgpu's own PTX front end.
Status DescribeWithPtx(const Driver& driver, const ptx::Program& program, CudaModule* module) {
  const DriverApi& api = driver.api();
  for (const auto& k : program.kernels()) {
    CUfunction function = nullptr;
    PVGPU_TRY(driver.Check(api.cuModuleGetFunction(&function, module->module_, k.name.c_str()),
                           "cuModuleGetFunction"));
    KernelInfo info = DescribePtxKernel(k);
    FillAttributes(api, function, &info);  // the driver's resources, not the PTX's
    module->kernels_.push_back(std::move(info));
    module->functions_.push_back(function);
  }
  return Status::Ok();
}

// The JIT options that collect the driver's error and info logs, and the logs themselves.
struct JitLogs {
  std::vector<char> errors = std::vector<char>(kLogBytes, '\0');
  std::vector<char> infos = std::vector<char>(kLogBytes, '\0');
  CUjit_option options[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                             CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* values[4] = {errors.data(), reinterpret_cast<void*>(uintptr_t{kLogBytes - 1}), infos.data(),
                     reinterpret_cast<void*>(uintptr_t{kLogBytes - 1})};
  static constexpr unsigned int kCount = 4;

  JitLogs() = default;
  JitLogs(const JitLogs&) = delete;  // `values` points into this object's own buffers
  JitLogs& operator=(const JitLogs&) = delete;

  void CopyTo(std::string* error_log, std::string* info_log) const {
    if (error_log != nullptr) error_log->assign(errors.data(), strnlen(errors.data(), kLogBytes));
    if (info_log != nullptr) info_log->assign(infos.data(), strnlen(infos.data(), kLogBytes));
  }
};

// Links `inputs` with the host driver's cuLink* calls; returns the cubin.
StatusOr<std::vector<uint8_t>> LinkWithDriver(const Driver& driver,
                                              std::span<const protocol::LinkInput> inputs,
                                              std::string* error_log, std::string* info_log) {
  const DriverApi& api = driver.api();
  if (api.cuLinkCreate == nullptr || api.cuLinkAddData == nullptr ||
      api.cuLinkComplete == nullptr || api.cuLinkDestroy == nullptr) {
    return Error(Code::kNotSupported, "the host's CUDA driver has no linker (cuLinkCreate)");
  }
  JitLogs logs;
  CUlinkState state = nullptr;
  PVGPU_TRY(driver.Check(api.cuLinkCreate(JitLogs::kCount, logs.options, logs.values, &state),
                         "cuLinkCreate"));
  Status status = Status::Ok();
  for (const auto& input : inputs) {
    // The driver takes non-const pointers and NUL-terminated names; it copies the data.
    std::string data(input.data), name(input.name);
    status =
        driver.Check(api.cuLinkAddData(state, static_cast<CUjitInputType>(input.type), data.data(),
                                       data.size(), name.c_str(), 0, nullptr, nullptr),
                     "cuLinkAddData");
    if (!status.ok()) break;
  }
  std::vector<uint8_t> cubin;
  if (status.ok()) {
    void* out = nullptr;
    size_t size = 0;
    status = driver.Check(api.cuLinkComplete(state, &out, &size), "cuLinkComplete");
    if (status.ok()) cubin.assign(static_cast<uint8_t*>(out), static_cast<uint8_t*>(out) + size);
  }
  logs.CopyTo(error_log, info_log);
  api.cuLinkDestroy(state);  // owns the cubin, copied above
  if (!status.ok()) return status;
  return cubin;
}

}  // namespace

CUfunction ModuleFunction(const Module& module, uint32_t index) {
  return static_cast<const CudaModule&>(module).functions_.at(index);
}

StatusOr<std::unique_ptr<Module>> LoadCudaModule(CudaContext& context, int compute_capability,
                                                 const ModuleImage& image, std::string* error_log,
                                                 std::string* info_log) {
  const Driver& driver = context.driver();
  const DriverApi& api = driver.api();
  const ImageKind kind = image.kind;
  // The driver reads PTX up to a NUL and binary images from their headers; an 8-byte aligned
  // private copy, zero-terminated, serves both, whatever the guest's payload alignment was.
  std::vector<uint64_t> copy(image.bytes.size() / 8 + 1, 0);
  std::memcpy(copy.data(), image.bytes.data(), image.bytes.size());
  if (kind == ImageKind::kLinked) {
    // Linked by the host driver's own linker, for this GPU; the result loads as a cubin.
    PVGPU_ASSIGN_OR_RETURN(std::vector<uint8_t> cubin,
                           LinkWithDriver(driver, image.inputs, error_log, info_log));
    copy.assign(cubin.size() / 8 + 1, 0);
    std::memcpy(copy.data(), cubin.data(), cubin.size());
  }

  // PTX of the image, when it has any: the PTX itself, a fatbin's PTX for this GPU, or the PTX
  // of every input of a link image (when each has some); else the driver's description alone.
  const std::string_view bytes(reinterpret_cast<const char*>(image.bytes.data()),
                               image.bytes.size());
  std::vector<protocol::LinkInput> inputs(image.inputs.begin(), image.inputs.end());
  if (kind == ImageKind::kPtx) inputs.push_back({protocol::LinkInputType::kPtx, "", bytes});
  if (kind == ImageKind::kFatbin) inputs.push_back({protocol::LinkInputType::kFatbin, "", bytes});
  PtxLinkSources sources;
  if (!inputs.empty()) {
    if (auto got = PtxOfLinkInputs(inputs, compute_capability); got.ok()) {
      sources = std::move(got).value();
    }
  }
  // Texture and surface references are objects in pvgpu, and conditional graph nodes' handles
  // addresses (ptx/references.h): the driver gets the rewritten PTX, not the image, whose
  // machine code would read the driver's own, unbound, references and call the driver's own
  // cudaGraphSetConditional.
  // The sources then view the rewritten texts, which the description below reads too.
  std::deque<std::string> rewritten;  // only the texts a rewrite changed
  bool references = false;
  for (ptx::LinkSource& source : sources.sources) {
    for (auto* rewrite : {&ptx::RewriteReferences, &ptx::DefineGraphSetConditional}) {
      auto changed = rewrite(source.text);
      if (changed.ok() && changed->has_value()) {
        rewritten.push_back(std::move(**changed));
        source.text = rewritten.back();
        references = true;
      }
    }
  }
  if (references) {
    if (sources.sources.size() == 1) {
      const std::string_view text = sources.sources[0].text;
      copy.assign(text.size() / 8 + 1, 0);
      std::memcpy(copy.data(), text.data(), text.size());
    } else {
      std::vector<protocol::LinkInput> ptx_inputs;
      for (const ptx::LinkSource& source : sources.sources) {
        ptx_inputs.push_back({protocol::LinkInputType::kPtx, source.name, source.text});
      }
      PVGPU_ASSIGN_OR_RETURN(std::vector<uint8_t> cubin,
                             LinkWithDriver(driver, ptx_inputs, error_log, info_log));
      copy.assign(cubin.size() / 8 + 1, 0);
      std::memcpy(copy.data(), cubin.data(), cubin.size());
    }
  }

  JitLogs logs;
  CUmodule handle = nullptr;
  const CUresult loaded =
      api.cuModuleLoadDataEx(&handle, copy.data(), JitLogs::kCount, logs.options, logs.values);
  logs.CopyTo(error_log, info_log);
  PVGPU_TRY(driver.Check(loaded, "cuModuleLoadDataEx"));
  auto module = std::make_unique<CudaModule>(&context, handle);

  std::shared_ptr<const ptx::Program> program;
  if (!sources.sources.empty()) {
    auto parsed = ptx::LoadLinkedProgram(sources.sources);
    if (parsed.ok()) {
      program = std::move(parsed).value();
    } else {
      PVGPU_DEBUG("cuda adapter: pvgpu's PTX front end cannot read this module's PTX ("
                  << parsed.status().message() << "); using the driver's description only");
    }
  }

  Status described = DescribeWithDriver(driver, module.get());
  if (described.code() == Code::kNotSupported) {
    module->kernels_.clear();
    module->functions_.clear();
    if (program) {
      described = DescribeWithPtx(driver, *program, module.get());
    } else {
      described = Error(Code::kNotSupported,
                        "cannot describe this module's kernels: the driver lacks "
                        "cuFuncGetParamInfo (CUDA 12.4) and the image carries no PTX pvgpu can "
                        "read; build with PTX or update the host's driver");
    }
  }
  if (!described.ok()) {
    if (error_log != nullptr && error_log->empty()) *error_log = described.message();
    return described;  // the module's destructor unloads it
  }

  // Globals by name: only PTX names them (the driver cannot enumerate a module's globals).
  if (program) {
    for (const auto& g : program->globals()) {
      CUdeviceptr dptr = 0;
      size_t size = 0;
      if (api.cuModuleGetGlobal(&dptr, &size, handle, g.name.c_str()) != CUDA_SUCCESS) continue;
      module->globals_.push_back({g.name, static_cast<uint64_t>(dptr), size});
      module->global_bytes_ += size;
    }
  } else if (kind != ImageKind::kPtx) {
    PVGPU_DEBUG("cuda adapter: module without PTX: its globals are not offered to the guest");
  }
  context.AddUsed(static_cast<int64_t>(module->global_bytes_));
  return std::unique_ptr<Module>(std::move(module));
}

}  // namespace pvgpu::adapters::cuda
