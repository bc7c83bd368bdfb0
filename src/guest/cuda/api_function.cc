// Driver API: what a function answers about itself (attributes, name, parameters, module) and
// the preferences set on it. Every call here also takes a CUkernel for its function in the
// current context (the `function_or_kernel` kind).
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest::api {

namespace {

// The default opt-in limit of dynamic shared memory: what remains of 48 KiB.
constexpr int kDefaultSharedBytes = 48 * 1024;

}  // namespace

Code FuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunc_st* hfunc) {
  const auto& k = *hfunc->kernel;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *pi = static_cast<int>(k.max_threads_per_block);
      break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *pi = static_cast<int>(k.shared_bytes);
      break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
      *pi = 0;
      break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *pi = static_cast<int>(k.local_bytes);
      break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *pi = static_cast<int>(k.num_regs);
      break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:  // what the host loaded; else the device's own
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: {
      const uint32_t known =
          attrib == CU_FUNC_ATTRIBUTE_PTX_VERSION ? k.ptx_version : k.binary_version;
      const Device* device = DriverState::Get().device(hfunc->module->ctx->device);
      *pi = known != 0 || device == nullptr
                ? static_cast<int>(known)
                : device->info.attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] * 10 +
                      device->info.attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
      break;
    }
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
      *pi = 0;
      break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: {
      const int set = MaxDynamicSharedSet(*hfunc);
      *pi = set != 0 ? set : kDefaultSharedBytes - static_cast<int>(k.shared_bytes);
      break;
    }
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      *pi = -1;
      break;
    // Thread block clusters (compute capability 9.0 and up; pvgpu's devices report less): no
    // kernel requires one, so every answer is its default. cudaFuncGetAttributes asks for all
    // of them.
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
      *pi = 0;
      break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      *pi = CU_CLUSTER_SCHEDULING_POLICY_DEFAULT;
      break;
    default:
      return Code::kInvalidValue;
  }
  return Code::kOk;
}

Code FuncSetAttribute(CUfunc_st* hfunc, CUfunction_attribute attrib, int value) {
  const int* a = DriverState::Get().device(hfunc->module->ctx->device)->info.attributes;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || static_cast<int64_t>(value) + hfunc->kernel->shared_bytes >
                           a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN]) {
        return Code::kInvalidValue;
      }
      hfunc->max_dynamic_shared = value;
      return Code::kOk;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      // A hint about the L1/shared split; the cpu adapter has no such split.
      return value >= -1 && value <= 100 ? Code::kOk : Code::kInvalidValue;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
      if (value < 0) return Code::kInvalidValue;
      if (value == 0) return Code::kOk;  // no cluster required: what every function has
      PVGPU_WARN("cuFuncSetAttribute: a required cluster size (attribute "
                 << static_cast<int>(attrib) << ") is not supported: pvgpu's devices have no "
                 << "thread block clusters");
      return Code::kNotSupported;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
      // A permission, not a requirement: nothing to refuse.
      return value == 0 || value == 1 ? Code::kOk : Code::kInvalidValue;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      return value >= CU_CLUSTER_SCHEDULING_POLICY_DEFAULT &&
                     value <= CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING
                 ? Code::kOk
                 : Code::kInvalidValue;
    default:
      return Code::kInvalidValue;  // the read-only attributes, and values that are none
  }
}

Code FuncSetCacheConfig(CUfunc_st* hfunc, CUfunc_cache config) {
  return config >= CU_FUNC_CACHE_PREFER_NONE && config <= CU_FUNC_CACHE_PREFER_EQUAL
             ? Code::kOk
             : Code::kInvalidValue;
}

// Deprecated since CUDA 12.x: a bank-width preference, which the cpu adapter has no use for.
Code FuncSetSharedMemConfig(CUfunc_st* hfunc, CUsharedconfig config) {
  return config >= CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE &&
                 config <= CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE
             ? Code::kOk
             : Code::kInvalidValue;
}

Code FuncGetModule(CUmodule* hmod, CUfunc_st* hfunc) {
  *hmod = hfunc->module;
  return Code::kOk;
}

// The name lives in the module's description, as long as the module is loaded.
Code FuncGetName(const char** name, CUfunc_st* hfunc) {
  *name = hfunc->kernel->name.c_str();
  return Code::kOk;
}

Code FuncGetParamInfo(CUfunc_st* func, size_t paramIndex, size_t* paramOffset, size_t* paramSize) {
  const auto& k = *func->kernel;
  if (paramIndex >= k.param_sizes.size()) return Code::kInvalidValue;
  *paramOffset = k.param_offsets[paramIndex];
  if (paramSize != nullptr) *paramSize = k.param_sizes[paramIndex];
  return Code::kOk;
}

// Modules are loaded eagerly (cuModuleGetLoadingMode): every function is loaded.
Code FuncIsLoaded(CUfunctionLoadingState* state, CUfunc_st* function) {
  *state = CU_FUNCTION_LOADING_STATE_LOADED;
  return Code::kOk;
}

Code FuncLoad(CUfunc_st* function) { return Code::kOk; }

}  // namespace pvgpu::guest::api
