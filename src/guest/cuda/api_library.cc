// Driver API: context-independent loading (CUlibrary, CUkernel). A library keeps its image and
// is loaded as a module into each context that uses it, on first use there; a CUkernel names a
// kernel of the library and resolves to that context's CUfunction. A CUkernel may be passed to
// cuLaunchKernel in place of a CUfunction.
#include <map>
#include <string>

#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/module_load.h"
#include "guest/cuda/resolve.h"
#include "guest/cuda/state.h"

struct CUkern_st;

struct CUlib_st {
  std::string image;  // a private copy: the caller may free its buffer
  pvgpu::Mutex mutex;
  // Loaded per context, on first use. Held while a module loads there, so that two threads
  // load it once.
  std::map<CUctx_st*, CUmodule> modules GUARDED_BY(mutex);
  std::map<std::string, CUkern_st*> kernels GUARDED_BY(mutex);  // owned by the kernel store
};

struct CUkern_st {
  pvgpu::guest::Ref<CUlib_st> library;
  std::string name;
};

namespace pvgpu::guest {

namespace {

// The library's module in the current context, loading it there on first use (or again, after
// cuDevicePrimaryCtxReset emptied the context).
Code ModuleInCurrent(CUlib_st* library, Ref<CUmod_st>* module) {
  CUctx_st* ctx = nullptr;
  if (Code code = CurrentLiveContext(&ctx); code != Code::kOk) return code;
  MutexLock lock(&library->mutex);
  auto it = library->modules.find(ctx);
  if (it != library->modules.end()) {
    *module = objects().modules.Find(it->second);
    if (*module != nullptr) return Code::kOk;
  }
  CUmodule loaded = nullptr;
  if (Code code = LoadModule(ctx, &loaded, library->image.data(), nullptr); code != Code::kOk) {
    return code;
  }
  library->modules[ctx] = loaded;
  *module = objects().modules.Find(loaded);
  return *module != nullptr ? Code::kOk : Code::kInvalidHandle;  // unloaded meanwhile
}

Code Load(CUlibrary* library, std::string image) {
  auto lib = std::make_shared<CUlib_st>();
  lib->image = std::move(image);
  // With a current context the image is loaded now, so that a bad image fails here.
  if (CurrentContext() != nullptr) {
    Ref<CUmod_st> module;
    if (Code code = ModuleInCurrent(lib.get(), &module); code != Code::kOk) return code;
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
  if (kernel == nullptr || KernelFunction(kernel.get(), function) != Code::kOk) {
    return Code::kInvalidHandle;
  }
  return Code::kOk;
}

namespace api {

Code LibraryLoadData(CUlibrary* library, const void* code, CUjit_option*, void**, unsigned int,
                     CUlibraryOption*, void**, unsigned int) {
  std::string_view bytes;
  if (Code result = ImageBytes(code, &bytes); result != Code::kOk) return result;
  return Load(library, std::string(bytes));
}

Code LibraryLoadFromFile(CUlibrary* library, const char* fileName, CUjit_option*, void**,
                         unsigned int, CUlibraryOption*, void**, unsigned int) {
  std::string contents;
  if (Code code = ReadFile(fileName, &contents); code != Code::kOk) return code;
  contents.push_back('\0');
  return Load(library, std::move(contents));
}

Code LibraryUnload(CUlib_st* library) {
  Objects& objects = pvgpu::guest::objects();
  // Of two threads unloading it at once, one takes it from the store.
  const Ref<CUlib_st> taken = objects.libraries.Take(library);
  if (taken == nullptr) return Code::kInvalidHandle;
  std::map<CUctx_st*, CUmodule> modules;
  {
    MutexLock lock(&library->mutex);
    modules.swap(library->modules);
    for (auto& [name, kernel] : library->kernels) objects.kernels.Take(kernel);
    library->kernels.clear();
  }
  for (auto& [ctx, handle] : modules) {
    if (Ref<CUmod_st> module = objects.modules.Find(handle)) (void)ModuleUnload(module.get());
  }
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
// differ by device).
Code KernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkern_st* kernel,
                        const Device& dev) {
  Ref<CUfunc_st> function;
  if (Code code = KernelFunction(kernel, &function); code != Code::kOk) return code;
  return FuncGetAttribute(pi, attrib, function.get());
}

Code KernelSetAttribute(CUfunction_attribute attrib, int val, CUkern_st* kernel,
                        const Device& dev) {
  Ref<CUfunc_st> function;
  if (Code code = KernelFunction(kernel, &function); code != Code::kOk) return code;
  return FuncSetAttribute(function.get(), attrib, val);
}

}  // namespace api
}  // namespace pvgpu::guest
