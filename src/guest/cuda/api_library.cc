// Driver API: context-independent loading (CUlibrary, CUkernel). A library keeps its image and
// is loaded as a module into each context that uses it, on first use there; a CUkernel names a
// kernel of the library and resolves to that context's CUfunction. A CUkernel may be passed to
// cuLaunchKernel in place of a CUfunction.
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <unordered_set>

#include "guest/cuda/state.h"

using pvgpu::guest::DriverState;

struct CUkern_st;

struct CUlib_st {
  std::string image;                     // a private copy: the caller may free its buffer
  std::map<CUctx_st*, CUmodule> modules;  // loaded per context, on first use
  std::map<std::string, CUkern_st*> kernels;
};

struct CUkern_st {
  CUlib_st* library = nullptr;
  std::string name;
};

namespace {

std::mutex g_mutex;  // guards the registries below and libraries' tables
std::unordered_set<CUlib_st*> g_libraries;
std::unordered_set<CUkern_st*> g_kernels;

// The library's module in the current context, loading it there on first use.
CUresult ModuleInCurrent(CUlib_st* library, CUmodule* module) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = library->modules.find(ctx);
  if (it != library->modules.end() && pvgpu::guest::LiveContext(ctx)) {
    *module = it->second;
    return CUDA_SUCCESS;
  }
  CUmodule loaded = nullptr;
  if (CUresult r = cuModuleLoadData(&loaded, library->image.data()); r != CUDA_SUCCESS) return r;
  library->modules[ctx] = loaded;
  *module = loaded;
  return CUDA_SUCCESS;
}

bool LiveLibrary(CUlib_st* library) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return library != nullptr && g_libraries.count(library) != 0;
}

CUresult Load(CUlibrary* library, std::string image) {
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (library == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* lib = new CUlib_st();
  lib->image = std::move(image);
  // With a current context the image is loaded now, so that a bad image fails here.
  if (pvgpu::guest::CurrentContext() != nullptr) {
    CUmodule module = nullptr;
    if (CUresult r = ModuleInCurrent(lib, &module); r != CUDA_SUCCESS) {
      delete lib;
      return r;
    }
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_libraries.insert(lib);
  *library = lib;
  return CUDA_SUCCESS;
}

}  // namespace

namespace pvgpu::guest {

// Resolves a CUkernel passed where a CUfunction is expected (cuLaunchKernel).
bool ResolveKernel(CUfunction maybe_kernel, CUfunction* function) {
  auto* kernel = reinterpret_cast<CUkern_st*>(maybe_kernel);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_kernels.count(kernel) == 0) return false;
  }
  return cuKernelGetFunction(function, kernel) == CUDA_SUCCESS;
}

}  // namespace pvgpu::guest

extern "C" {

CUresult CUDAAPI cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option*, void**,
                                   unsigned int, CUlibraryOption*, void**, unsigned int) {
  PVGPU_API_TRACE("cuLibraryLoadData", library << ", " << code);
  if (code == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::string_view bytes;
  if (CUresult r = pvgpu::guest::ImageBytes(code, &bytes); r != CUDA_SUCCESS) return r;
  return Load(library, std::string(bytes));
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary* library, const char* fileName, CUjit_option*,
                                       void**, unsigned int, CUlibraryOption*, void**,
                                       unsigned int) {
  PVGPU_API_TRACE("cuLibraryLoadFromFile", library << ", " << (fileName ? fileName : "(null)"));
  if (fileName == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream file(fileName, std::ios::binary);
  if (!file) return CUDA_ERROR_FILE_NOT_FOUND;
  std::string contents((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  contents.push_back('\0');
  return Load(library, std::move(contents));
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary library) {
  PVGPU_API_TRACE("cuLibraryUnload", library);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  std::map<CUctx_st*, CUmodule> modules;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (library == nullptr || g_libraries.erase(library) == 0) return CUDA_ERROR_INVALID_HANDLE;
    modules.swap(library->modules);
    for (auto& [name, kernel] : library->kernels) {
      g_kernels.erase(kernel);
      delete kernel;
    }
  }
  for (auto& [ctx, module] : modules) {
    if (pvgpu::guest::LiveContext(ctx)) (void)cuModuleUnload(module);
  }
  delete library;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
  PVGPU_API_TRACE("cuLibraryGetModule", pMod << ", " << library);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (pMod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!LiveLibrary(library)) return CUDA_ERROR_INVALID_HANDLE;
  return ModuleInCurrent(library, pMod);
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  PVGPU_API_TRACE("cuLibraryGetKernel", pKernel << ", " << library << ", " << (name ? name : "(null)"));
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (pKernel == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!LiveLibrary(library)) return CUDA_ERROR_INVALID_HANDLE;
  if (pvgpu::guest::CurrentContext() != nullptr) {
    // Check the name against the loaded module, as the driver does.
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    if (CUresult r = ModuleInCurrent(library, &module); r != CUDA_SUCCESS) return r;
    if (CUresult r = cuModuleGetFunction(&function, module, name); r != CUDA_SUCCESS) return r;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  CUkern_st*& kernel = library->kernels[name];
  if (kernel == nullptr) {
    kernel = new CUkern_st{library, name};
    g_kernels.insert(kernel);
  }
  *pKernel = kernel;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library,
                                    const char* name) {
  PVGPU_API_TRACE("cuLibraryGetGlobal", library << ", " << (name ? name : "(null)"));
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (!LiveLibrary(library)) return CUDA_ERROR_INVALID_HANDLE;
  CUmodule module = nullptr;
  if (CUresult r = ModuleInCurrent(library, &module); r != CUDA_SUCCESS) return r;
  return cuModuleGetGlobal(dptr, bytes, module, name);
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  PVGPU_API_TRACE("cuKernelGetFunction", pFunc << ", " << kernel);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (pFunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUlib_st* library = nullptr;
  std::string name;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (kernel == nullptr || g_kernels.count(kernel) == 0) return CUDA_ERROR_INVALID_HANDLE;
    library = kernel->library;
    name = kernel->name;
  }
  CUmodule module = nullptr;
  if (CUresult r = ModuleInCurrent(library, &module); r != CUDA_SUCCESS) return r;
  return cuModuleGetFunction(pFunc, module, name.c_str());
}

CUresult CUDAAPI cuKernelGetLibrary(CUlibrary* pLib, CUkernel kernel) {
  PVGPU_API_TRACE("cuKernelGetLibrary", pLib << ", " << kernel);
  if (pLib == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (kernel == nullptr || g_kernels.count(kernel) == 0) return CUDA_ERROR_INVALID_HANDLE;
  *pLib = kernel->library;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetName(const char** name, CUkernel kernel) {
  PVGPU_API_TRACE("cuKernelGetName", name << ", " << kernel);
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (kernel == nullptr || g_kernels.count(kernel) == 0) return CUDA_ERROR_INVALID_HANDLE;
  *name = kernel->name.c_str();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel,
                                      CUdevice dev) {
  PVGPU_API_TRACE("cuKernelGetAttribute", pi << ", " << static_cast<int>(attrib) << ", " << kernel);
  CUfunction function = nullptr;
  if (CUresult r = cuKernelGetFunction(&function, kernel); r != CUDA_SUCCESS) return r;
  return cuFuncGetAttribute(pi, attrib, function);
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                      CUdevice dev) {
  PVGPU_API_TRACE("cuKernelSetAttribute", static_cast<int>(attrib) << ", " << val << ", " << kernel);
  CUfunction function = nullptr;
  if (CUresult r = cuKernelGetFunction(&function, kernel); r != CUDA_SUCCESS) return r;
  return cuFuncSetAttribute(function, attrib, val);
}

CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int* count, CUlibrary library) {
  PVGPU_API_TRACE("cuLibraryGetKernelCount", count << ", " << library);
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!LiveLibrary(library)) return CUDA_ERROR_INVALID_HANDLE;
  CUmodule module = nullptr;
  if (CUresult r = ModuleInCurrent(library, &module); r != CUDA_SUCCESS) return r;
  *count = static_cast<unsigned int>(module->functions.size());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int numKernels,
                                           CUlibrary library) {
  PVGPU_API_TRACE("cuLibraryEnumerateKernels", kernels << ", " << numKernels << ", " << library);
  if (kernels == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!LiveLibrary(library)) return CUDA_ERROR_INVALID_HANDLE;
  CUmodule module = nullptr;
  if (CUresult r = ModuleInCurrent(library, &module); r != CUDA_SUCCESS) return r;
  const unsigned int n =
      std::min<unsigned int>(numKernels, static_cast<unsigned int>(module->functions.size()));
  for (unsigned int i = 0; i < n; ++i) {
    if (CUresult r = cuLibraryGetKernel(&kernels[i], library,
                                        module->functions[i].kernel->name.c_str());
        r != CUDA_SUCCESS) {
      return r;
    }
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
