// Driver API: context-independent loading (CUlibrary, CUkernel). A library keeps its image and
// is loaded as a module into each context that uses it, on first use there; a CUkernel names a
// kernel of the library and resolves to that context's CUfunction. A CUkernel may be passed to
// every call that takes a CUfunction (resolve.h).
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/module_load.h"
#include "guest/cuda/resolve.h"
#include "guest/cuda/state.h"

struct CUkern_st;

struct CUlib_st {
  std::string image;  // a private copy: the caller may free its buffer
  // Where the image came from, to name it when a load fails (the copy's address says nothing).
  const void* origin = nullptr;
  std::string file;
  pvgpu::Mutex mutex;
  // Loaded per context, on first use. Held while a module loads there, so that two threads
  // load it once. Weak: a module the context dropped (cuDevicePrimaryCtxReset destroys
  // everything in it, and the context record stays) is loaded again, and a new module at the
  // address of a dropped one is never taken for it.
  std::map<CUctx_st*, std::weak_ptr<CUmod_st>> modules GUARDED_BY(mutex);
  std::map<std::string, CUkern_st*> kernels GUARDED_BY(mutex);  // owned by the kernel store
  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES set by cuKernelSetAttribute, per (kernel
  // name, device): it holds in every context on the device, those loaded later included.
  std::map<std::pair<std::string, CUdevice>, int> max_dynamic_shared GUARDED_BY(mutex);
};

struct CUkern_st {
  pvgpu::guest::Ref<CUlib_st> library;
  std::string name;
};

namespace pvgpu::guest {

namespace {

// Gives `module`'s function `name` the CUkernel's opt-in of dynamic shared memory.
void ApplyKernelSetting(CUmod_st* module, const std::string& name, int max_dynamic_shared) {
  for (CUfunc_st& function : module->functions) {
    if (function.kernel->name == name) function.kernel_max_dynamic_shared = max_dynamic_shared;
  }
}

// The library's module in `ctx` if it is still loaded there.
Ref<CUmod_st> LoadedIn(CUlib_st* library, CUctx_st* ctx) REQUIRES(library->mutex) {
  auto it = library->modules.find(ctx);
  if (it == library->modules.end()) return nullptr;
  Ref<CUmod_st> module = it->second.lock();
  // Alive, but perhaps dropped with its context's contents: only the store says it is loaded.
  if (module != nullptr && objects().modules.Find(module.get()) != module) return nullptr;
  return module;
}

// The library's module in the current context, loading it there on first use (or again, after
// cuDevicePrimaryCtxReset emptied the context). `logs`: where the first load's JIT logs go.
Code ModuleInCurrent(CUlib_st* library, Ref<CUmod_st>* module, JitLogs* logs = nullptr) {
  CUctx_st* ctx = nullptr;
  if (Code code = CurrentLiveContext(&ctx); code != Code::kOk) return code;
  MutexLock lock(&library->mutex);
  if ((*module = LoadedIn(library, ctx)) != nullptr) return Code::kOk;
  CUmodule loaded = nullptr;
  const ImageOrigin origin{library->origin, library->file};
  if (Code code = LoadModule(ctx, &loaded, library->image.data(), logs, origin);
      code != Code::kOk) {
    return code;
  }
  *module = objects().modules.Find(loaded);
  if (*module == nullptr) return Code::kInvalidHandle;  // unloaded meanwhile
  library->modules[ctx] = *module;
  for (const auto& [key, bytes] : library->max_dynamic_shared) {
    if (key.second == ctx->device) ApplyKernelSetting(module->get(), key.first, bytes);
  }
  return Code::kOk;
}

Code Load(CUlibrary* library, std::string image, const void* origin, std::string file,
          JitLogs* logs) {
  auto lib = std::make_shared<CUlib_st>();
  lib->image = std::move(image);
  lib->origin = origin;
  lib->file = std::move(file);
  // With a current context the image is loaded now, so that a bad image fails here.
  if (CurrentContext() != nullptr) {
    Ref<CUmod_st> module;
    if (Code code = ModuleInCurrent(lib.get(), &module, logs); code != Code::kOk) return code;
  }
  *library = objects().libraries.Add(std::move(lib));
  return Code::kOk;
}

// The function a kernel stands for in the current context.
Code KernelFunction(CUkern_st* kernel, Ref<CUfunc_st>* function) {
  Ref<CUmod_st> module;
  if (Code code = ModuleInCurrent(kernel->library.get(), &module); code != Code::kOk) return code;
  CUfunction handle = nullptr;
  if (Code code = api::ModuleGetFunction(&handle, module.get(), kernel->name.c_str());
      code != Code::kOk) {
    return code;
  }
  return ResolveFunction(handle, function);
}

}  // namespace

Code ResolveFunctionOrKernel(CUfunction handle, Ref<CUfunc_st>* function) {
  if (ResolveFunction(handle, function) == Code::kOk) return Code::kOk;
  Ref<CUkern_st> kernel = objects().kernels.Find(handle);
  if (kernel == nullptr) return Code::kInvalidHandle;
  // A library is loaded into a context at its first use there, as NVIDIA's driver loads
  // lazily: a launch of one of its kernels reports that load's failure, say
  // CUDA_ERROR_NO_BINARY_FOR_GPU for an image with machine code only (PyTorch's wheels).
  // Without a usable current context a CUkernel stands for no function: an invalid handle.
  const Code code = KernelFunction(kernel.get(), function);
  if (code == Code::kInvalidContext || code == Code::kContextIsDestroyed) {
    return Code::kInvalidHandle;
  }
  return code;
}

namespace api {

// The JIT options say where the logs of the load into the current context go; the library
// options (CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE, binary-is-preserved) concern how
// the driver keeps host-side tables and the image, which pvgpu always copies.
Code LibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jitOptions,
                     void** jitOptionsValues, unsigned int numJitOptions, CUlibraryOption*, void**,
                     unsigned int) {
  if (numJitOptions > 0 && (jitOptions == nullptr || jitOptionsValues == nullptr)) {
    return Code::kInvalidValue;
  }
  std::string_view bytes;
  if (Code result = ImageBytes(code, &bytes); result != Code::kOk) return result;
  JitLogs logs =
      JitLogs::FromOptions(numJitOptions, jitOptions, jitOptionsValues, "cuLibraryLoadData");
  return Load(library, std::string(bytes), code, {}, &logs);
}

Code LibraryLoadFromFile(CUlibrary* library, const char* fileName, CUjit_option* jitOptions,
                         void** jitOptionsValues, unsigned int numJitOptions, CUlibraryOption*,
                         void**, unsigned int) {
  if (numJitOptions > 0 && (jitOptions == nullptr || jitOptionsValues == nullptr)) {
    return Code::kInvalidValue;
  }
  std::string contents;
  if (Code code = ReadFile(fileName, &contents); code != Code::kOk) return code;
  contents.push_back('\0');
  JitLogs logs =
      JitLogs::FromOptions(numJitOptions, jitOptions, jitOptionsValues, "cuLibraryLoadFromFile");
  return Load(library, std::move(contents), nullptr, fileName, &logs);
}

Code LibraryUnload(CUlib_st* library) {
  Objects& objects = pvgpu::guest::objects();
  // Of two threads unloading it at once, one takes it from the store.
  const Ref<CUlib_st> taken = objects.libraries.Take(library);
  if (taken == nullptr) return Code::kInvalidHandle;
  std::vector<Ref<CUmod_st>> modules;
  {
    MutexLock lock(&library->mutex);
    for (const auto& [ctx, weak] : library->modules) {
      if (Ref<CUmod_st> module = LoadedIn(library, ctx)) modules.push_back(std::move(module));
    }
    library->modules.clear();
    for (auto& [name, kernel] : library->kernels) objects.kernels.Take(kernel);
    library->kernels.clear();
  }
  for (const Ref<CUmod_st>& module : modules) (void)ModuleUnload(module.get());
  return Code::kOk;
}

Code LibraryGetModule(CUmodule* pMod, CUlib_st* library) {
  Ref<CUmod_st> module;
  if (Code code = ModuleInCurrent(library, &module); code != Code::kOk) return code;
  *pMod = module.get();
  return Code::kOk;
}

Code LibraryGetKernel(CUkernel* pKernel, CUlib_st* library, const char* name) {
  if (CurrentContext() != nullptr) {
    // Check the name against the loaded module, as the driver does.
    Ref<CUmod_st> module;
    CUfunction function = nullptr;
    if (Code code = ModuleInCurrent(library, &module); code != Code::kOk) return code;
    if (Code code = ModuleGetFunction(&function, module.get(), name); code != Code::kOk) {
      return code;
    }
  }
  Ref<CUlib_st> owner = objects().libraries.Find(library);
  if (owner == nullptr) return Code::kInvalidHandle;  // unloaded meanwhile
  MutexLock lock(&library->mutex);
  CUkern_st*& kernel = library->kernels[name];
  if (kernel == nullptr) {
    auto record = std::make_shared<CUkern_st>();
    record->library = std::move(owner);
    record->name = name;
    kernel = objects().kernels.Add(std::move(record));
  }
  *pKernel = kernel;
  return Code::kOk;
}

Code LibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlib_st* library, const char* name) {
  Ref<CUmod_st> module;
  if (Code code = ModuleInCurrent(library, &module); code != Code::kOk) return code;
  return ModuleGetGlobal_v2(dptr, bytes, module.get(), name);
}

Code LibraryGetKernelCount(unsigned int* count, CUlib_st* lib) {
  Ref<CUmod_st> module;
  if (Code code = ModuleInCurrent(lib, &module); code != Code::kOk) return code;
  *count = static_cast<unsigned int>(module->functions.size());
  return Code::kOk;
}

Code LibraryEnumerateKernels(CUkernel* kernels, unsigned int numKernels, CUlib_st* lib) {
  Ref<CUmod_st> module;
  if (Code code = ModuleInCurrent(lib, &module); code != Code::kOk) return code;
  const size_t n = std::min<size_t>(numKernels, module->functions.size());
  for (size_t i = 0; i < n; ++i) {
    const char* name = module->functions[i].kernel->name.c_str();
    if (Code code = LibraryGetKernel(&kernels[i], lib, name); code != Code::kOk) return code;
  }
  return Code::kOk;
}

Code KernelGetFunction(CUfunction* pFunc, CUkern_st* kernel) {
  Ref<CUfunc_st> function;
  if (Code code = KernelFunction(kernel, &function); code != Code::kOk) return code;
  *pFunc = function.get();
  return Code::kOk;
}

Code KernelGetLibrary(CUlibrary* pLib, CUkern_st* kernel) {
  *pLib = kernel->library.get();
  return Code::kOk;
}

Code KernelGetName(const char** name, CUkern_st* hfunc) {
  *name = hfunc->name.c_str();
  return Code::kOk;
}

// The attributes of the kernel's function in the current context (pvgpu's functions do not
// differ by device), except the opt-in that cuKernelSetAttribute set for `dev`, which CUDA
// always reports here.
Code KernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkern_st* kernel,
                        const Device& dev) {
  Ref<CUfunc_st> function;
  if (Code code = KernelFunction(kernel, &function); code != Code::kOk) return code;
  if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    CUlib_st* library = kernel->library.get();
    MutexLock lock(&library->mutex);
    auto it = library->max_dynamic_shared.find({kernel->name, dev.ordinal});
    if (it != library->max_dynamic_shared.end()) {
      *pi = it->second;
      return Code::kOk;
    }
  }
  return FuncGetAttribute(pi, attrib, function.get());
}

// The opt-in of dynamic shared memory is kept for (kernel, `dev`) and given to the kernel's
// function in every context on `dev`, now and when one loads the library later (a context
// reset by cudaDeviceReset keeps it, as with CUDA). The other attributes are hints or
// requirements checked as cuFuncSetAttribute checks them.
Code KernelSetAttribute(CUfunction_attribute attrib, int val, CUkern_st* kernel,
                        const Device& dev) {
  Ref<CUfunc_st> function;
  if (Code code = KernelFunction(kernel, &function); code != Code::kOk) return code;
  if (attrib != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    return FuncSetAttribute(function.get(), attrib, val);
  }
  const int optin = dev.info.attributes[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN];
  if (val < 0 || int64_t{val} + function->kernel->shared_bytes > optin) return Code::kInvalidValue;
  CUlib_st* library = kernel->library.get();
  MutexLock lock(&library->mutex);
  library->max_dynamic_shared[{kernel->name, dev.ordinal}] = val;
  for (const auto& [ctx, weak] : library->modules) {
    if (ctx->device != dev.ordinal) continue;
    if (Ref<CUmod_st> module = LoadedIn(library, ctx)) {
      ApplyKernelSetting(module.get(), kernel->name, val);
    }
  }
  return Code::kOk;
}

// A preference, which the cpu adapter has no L1/shared split to apply.
Code KernelSetCacheConfig(CUkern_st* kernel, CUfunc_cache config, const Device& dev) {
  return config >= CU_FUNC_CACHE_PREFER_NONE && config <= CU_FUNC_CACHE_PREFER_EQUAL
             ? Code::kOk
             : Code::kInvalidValue;
}

Code KernelGetParamInfo(CUkern_st* kernel, size_t paramIndex, size_t* paramOffset,
                        size_t* paramSize) {
  Ref<CUfunc_st> function;
  if (Code code = KernelFunction(kernel, &function); code != Code::kOk) return code;
  return FuncGetParamInfo(function.get(), paramIndex, paramOffset, paramSize);
}

}  // namespace api
}  // namespace pvgpu::guest
