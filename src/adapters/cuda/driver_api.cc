#include "adapters/cuda/driver_api.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "common/log.h"

namespace pvgpu::adapters::cuda {
namespace {

// "cuMemAlloc_v2" -> "cuMemAlloc": cuGetProcAddress takes the base name plus an ABI version.
std::string BaseName(const char* symbol) {
  std::string name(symbol);
  const size_t v = name.rfind("_v");
  if (v != std::string::npos && v + 2 < name.size() &&
      name.find_first_not_of("0123456789", v + 2) == std::string::npos) {
    name.resize(v);
  }
  return name;
}

// "unix:/run/x.sock" and "/run/./x.sock" name the same socket.
std::string CanonicalAddress(std::string address) {
  if (address.rfind("unix:", 0) == 0) address = address.substr(5);
  std::error_code error;
  const auto canonical = std::filesystem::weakly_canonical(address, error);
  return error ? address : canonical.string();
}

// The loop guard for a pvgpu guest driver: it connects to PVGPU_HOST (or the default socket),
// so it must be told explicitly to reach a different daemon than this one.
Status CheckPvgpuTarget(const DriverOptions& options) {
  const char* host = std::getenv("PVGPU_HOST");
  if (host == nullptr || *host == '\0') {
    return Error(Code::kNotPermitted,
                 "the driver " + options.path +
                     " is pvgpu's own guest driver and PVGPU_HOST is unset: it would connect to "
                     "the default socket, possibly this daemon's; set PVGPU_HOST to another "
                     "pvgpud's address");
  }
  std::stringstream hosts(host);
  std::string target;
  while (std::getline(hosts, target, ',')) {
    for (const auto& own : options.listen_addresses) {
      if (CanonicalAddress(target) == CanonicalAddress(own)) {
        return Error(Code::kNotPermitted, "the driver " + options.path +
                                              " is pvgpu's own guest driver and PVGPU_HOST (" +
                                              target + ") is this daemon's own listener");
      }
    }
  }
  return Status::Ok();
}

StatusOr<std::string> FindLibrary(const DriverOptions& options) {
  if (!options.path.empty()) {
    if (access(options.path.c_str(), R_OK) != 0) {
      return Error(Code::kNotFound, "--cuda-driver " + options.path + ": " + strerror(errno));
    }
    return options.path;
  }
  std::string tried;
  for (const auto& candidate : StandardLibraryPaths("libcuda.so.1")) {
    if (access(candidate.c_str(), R_OK) != 0) continue;
    if (IsPvgpuLibrary(candidate)) {
      // Found by search, so nobody asked for chaining: skipping it keeps a daemon started with
      // pvgpu's lib/pvgpu on its library path from serving its own guest driver back.
      PVGPU_WARN("cuda adapter: skipping " << candidate
                                           << ": it is pvgpu's guest driver (pass it with "
                                              "--cuda-driver to chain to another pvgpud)");
      continue;
    }
    return candidate;
  }
  return Error(Code::kNotFound,
               "no NVIDIA driver (libcuda.so.1) in the standard locations; pass --cuda-driver");
}

}  // namespace

std::vector<std::string> StandardLibraryPaths(const std::string& file_name) {
  // Searched by explicit path rather than dlopen's search so that LD_LIBRARY_PATH (which
  // `pvgpu run` points at pvgpu's own lib/pvgpu) cannot substitute pvgpu's guest driver.
  std::vector<std::string> paths;
  for (const char* dir :
       {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
        "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/wsl/lib"}) {
    paths.push_back(std::string(dir) + "/" + file_name);
  }
  return paths;
}

bool IsPvgpuLibrary(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool found = false;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    void* data = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data != MAP_FAILED) {
      static constexpr char kMarker[] = "PVGPU_HOST";
      found = memmem(data, st.st_size, kMarker, sizeof(kMarker) - 1) != nullptr;
      munmap(data, st.st_size);
    }
  }
  close(fd);
  return found;
}

StatusOr<std::shared_ptr<Driver>> Driver::Load(const DriverOptions& options) {
  PVGPU_ASSIGN_OR_RETURN(std::string path, FindLibrary(options));
  std::shared_ptr<Driver> driver(new Driver());
  driver->path_ = path;
  driver->is_pvgpu_ = IsPvgpuLibrary(path);
  if (driver->is_pvgpu_) {
    DriverOptions checked = options;
    checked.path = path;
    PVGPU_TRY(CheckPvgpuTarget(checked));
  }
  // RTLD_LOCAL: the driver's symbols must not satisfy lookups of anything else in pvgpud.
  driver->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (driver->handle_ == nullptr) {
    return Error(Code::kNotFound, std::string("cannot load ") + path + ": " + dlerror());
  }
  auto get_proc =
      reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(driver->handle_, "cuGetProcAddress_v2"));
  auto resolve = [&](const char* symbol, int version) -> void* {
    void* pfn = nullptr;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get_proc != nullptr &&
        get_proc(BaseName(symbol).c_str(), &pfn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                 &found) == CUDA_SUCCESS &&
        found == CU_GET_PROC_ADDRESS_SUCCESS && pfn != nullptr) {
      return pfn;
    }
    return dlsym(driver->handle_, symbol);
  };
  std::string missing;
#define PVGPU_CUDA_RESOLVE(name, type, version, symbol) \
  driver->api_.name = reinterpret_cast<type>(resolve(symbol, version));
#define PVGPU_CUDA_RESOLVE_REQUIRED(name, type, version, symbol) \
  PVGPU_CUDA_RESOLVE(name, type, version, symbol)                \
  if (driver->api_.name == nullptr) missing += std::string(" ") + symbol;
  PVGPU_CUDA_REQUIRED_ENTRIES(PVGPU_CUDA_RESOLVE_REQUIRED)
  PVGPU_CUDA_OPTIONAL_ENTRIES(PVGPU_CUDA_RESOLVE)
#undef PVGPU_CUDA_RESOLVE_REQUIRED
#undef PVGPU_CUDA_RESOLVE
  if (!missing.empty()) {
    return Error(Code::kNotSupported, path + " lacks driver entry points:" + missing);
  }
  if (driver->api_.cuCtxCreate == nullptr && driver->api_.cuCtxCreate4 == nullptr) {
    return Error(Code::kNotSupported, path + " has neither cuCtxCreate_v2 nor cuCtxCreate_v4");
  }
  PVGPU_TRY(driver->Check(driver->api_.cuInit(0), "cuInit"));
  PVGPU_TRY(
      driver->Check(driver->api_.cuDriverGetVersion(&driver->version_), "cuDriverGetVersion"));
  PVGPU_INFO("cuda adapter: driver " << path << " (CUDA " << driver->version_ / 1000 << "."
                                     << driver->version_ % 1000 / 10
                                     << (driver->is_pvgpu_ ? ", pvgpu's guest driver" : "") << ")");
  return driver;
}

Driver::~Driver() {
  // The library stays loaded: vendor drivers keep threads and atexit handlers that must not
  // outlive their code, so dlclose is never safe to call on them.
}

Status Driver::Check(CUresult result, const char* what) const {
  if (result == CUDA_SUCCESS) return Status::Ok();
  const char* text = nullptr;
  if (api_.cuGetErrorString == nullptr || api_.cuGetErrorString(result, &text) != CUDA_SUCCESS ||
      text == nullptr) {
    text = "unknown error";
  }
  return Error(static_cast<Code>(result),
               std::string(what) + " failed: " + text + " (" + std::to_string(result) + ")");
}

}  // namespace pvgpu::adapters::cuda
