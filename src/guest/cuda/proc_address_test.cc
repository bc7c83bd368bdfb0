// Loads the built libcuda.so.1 as an application's loader would and checks its export surface:
// every cuda.h function is there, every function of the declaration list (exports.txt) is
// implemented and reachable through cuGetProcAddress, unimplemented ones answer
// CUDA_ERROR_NOT_SUPPORTED, cuGetProcAddress resolves (name, version, flags) to the same
// symbols as real libcuda, and PVGPU_LOG=trace shows every call under its own name with its
// result.
//
// The expectations are written out here or read from cudaTypedefs.h and exports.txt directly,
// never taken from the generator's output, so that a generator bug cannot agree with itself.
#include <cuda.h>
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "guest/export_test_support.h"

namespace {

namespace exports_test = pvgpu::guest::exports_test;

using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);
using GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

constexpr cuuint64_t kDefault = CU_GET_PROC_ADDRESS_DEFAULT;
constexpr cuuint64_t kLegacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
constexpr cuuint64_t kPerThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

class LibcudaTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    log_path_ = exports_test::TraceIntoTemporaryFile();  // read when the library is loaded
    ASSERT_FALSE(log_path_.empty());
    setenv("PVGPU_HOST", "unix:/nonexistent-pvgpu-dir/pvgpud.sock", 1);  // no host: no cuInit
    handle_ = dlopen(PVGPU_LIBCUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
  }
  static void TearDownTestSuite() { unlink(log_path_.c_str()); }
  static void* Sym(const char* name) { return dlsym(handle_, name); }
  static GetProcAddressV2 GetProc() {
    return reinterpret_cast<GetProcAddressV2>(Sym("cuGetProcAddress_v2"));
  }
  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  static std::vector<std::string> LogLines(const std::string& text) {
    return exports_test::LinesContaining(log_path_, text);
  }
  static inline void* handle_ = nullptr;
  static inline std::string log_path_;
};

TEST_F(LibcudaTest, ExportsEveryDeclaredFunction) {
  std::ifstream list(PVGPU_CUDA_EXPORTS_LIST);
  std::string name;
  int count = 0;
  while (std::getline(list, name)) {
    ++count;
    EXPECT_NE(Sym(name.c_str()), nullptr) << name;
  }
  EXPECT_GT(count, 600);  // cuda.h 13 declares about 630 names with the legacy ones
}

// Every listed function is exported, and is what cuGetProcAddress gives for one of the
// (name, version) pairs of cudaTypedefs.h and cudaProfilerTypedefs.h.
TEST_F(LibcudaTest, EveryListedFunctionIsExportedAndFoundByGetProcAddress) {
  const std::vector<std::string> names = exports_test::DeclaredNames(PVGPU_CUDA_DECLARATION_LIST);
  ASSERT_GT(names.size(), 130u);
  std::set<void*> reachable;
  const std::string text = ReadFile(PVGPU_CUDA_INCLUDE_DIR "/cudaTypedefs.h") +
                           ReadFile(PVGPU_CUDA_INCLUDE_DIR "/cudaProfilerTypedefs.h");
  const std::regex pfn(R"(\(CUDAAPI \*PFN_(cu\w+?)_v(\d+)(_ptds|_ptsz)?\)\()");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pfn); it != std::sregex_iterator();
       ++it) {
    void* fn = nullptr;
    if (GetProc()(std::string((*it)[1]).c_str(), &fn, std::stoi((*it)[2]),
                  (*it)[3].matched ? kPerThread : kLegacy, nullptr) == CUDA_SUCCESS) {
      reachable.insert(fn);
    }
  }
  for (const std::string& name : names) {
    void* fn = Sym(name.c_str());
    ASSERT_NE(fn, nullptr) << name << " is listed but not exported";
    EXPECT_TRUE(reachable.count(fn)) << name << " is not found through cuGetProcAddress";
  }
}

// PVGPU_LOG=trace: each call under its own ABI name (versioned, legacy and per-thread names
// included), with its arguments and its result's name.
TEST_F(LibcudaTest, TracesEveryCallWithItsResult) {
  using CtxGetCurrent = CUresult (*)(CUcontext*);
  using LinkCreate = CUresult (*)(unsigned int, CUjit_option*, void**, CUlinkState*);
  using StreamQuery = CUresult (*)(CUstream);
  using ErrorName = CUresult (*)(CUresult, const char**);
  CUcontext ctx = nullptr;
  EXPECT_EQ(reinterpret_cast<CtxGetCurrent>(Sym("cuCtxGetCurrent"))(&ctx),
            CUDA_ERROR_NOT_INITIALIZED);
  CUlinkState link = nullptr;
  EXPECT_EQ(reinterpret_cast<LinkCreate>(Sym("cuLinkCreate_v2"))(0, nullptr, nullptr, &link),
            CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(reinterpret_cast<LinkCreate>(Sym("cuLinkCreate"))(0, nullptr, nullptr, &link),
            CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(reinterpret_cast<StreamQuery>(Sym("cuStreamQuery_ptsz"))(nullptr),
            CUDA_ERROR_NOT_INITIALIZED);
  const char* name = nullptr;
  EXPECT_EQ(reinterpret_cast<ErrorName>(Sym("cuGetErrorName"))(CUDA_ERROR_INVALID_HANDLE, &name),
            CUDA_SUCCESS);
  EXPECT_EQ(
      reinterpret_cast<ErrorName>(Sym("cuGetErrorString"))(static_cast<CUresult>(123456), &name),
      CUDA_ERROR_INVALID_VALUE);
  void* fn = nullptr;
  EXPECT_EQ(GetProc()("cuMemAlloc", &fn, 12000, kDefault, nullptr), CUDA_SUCCESS);

  std::ostringstream ctx_arg, link_arg;
  ctx_arg << static_cast<void*>(&ctx);
  link_arg << static_cast<void*>(&link);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"cuCtxGetCurrent(", "cuCtxGetCurrent(" + ctx_arg.str() + ") -> CUDA_ERROR_NOT_INITIALIZED"},
      {"cuLinkCreate_v2(",
       "cuLinkCreate_v2(0, 0, 0, " + link_arg.str() + ") -> CUDA_ERROR_NOT_INITIALIZED"},
      {"cuLinkCreate(",
       "cuLinkCreate(0, 0, 0, " + link_arg.str() + ") -> CUDA_ERROR_NOT_INITIALIZED"},
      {"cuStreamQuery_ptsz(", "cuStreamQuery_ptsz(0x2) -> CUDA_ERROR_NOT_INITIALIZED"},
      {"cuGetErrorName(", "-> CUDA_SUCCESS"},
      {"cuGetErrorString(", "cuGetErrorString(123456, "},
      {"cuGetErrorString(", "-> CUDA_ERROR_INVALID_VALUE"},
      {"cuGetProcAddress_v2(\"cuMemAlloc\"", ", 12000, 0x0, 0) -> CUDA_SUCCESS"},
  };
  exports_test::ExpectTraced(log_path_, expected);
}

// An unimplemented function warns once; every call is traced.
TEST_F(LibcudaTest, StubsWarnOnce) {
  using OneArg = CUresult (*)(void*);
  auto stub = reinterpret_cast<OneArg>(Sym("cuGraphicsUnregisterResource"));
  ASSERT_NE(stub, nullptr);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(stub(nullptr), CUDA_ERROR_NOT_SUPPORTED);
  const std::vector<std::string> warnings = LogLines("cuGraphicsUnregisterResource is not supported");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(" W] "), std::string::npos) << warnings[0];
  EXPECT_EQ(LogLines("cuGraphicsUnregisterResource() -> CUDA_ERROR_NOT_SUPPORTED").size(), 3u);
}

// Guests in containers may have no OpenSSL: loading the library must not pull it in (TLS loads
// it on first use). This test program links no OpenSSL itself.
TEST_F(LibcudaTest, LoadsWithoutOpenSsl) {
  EXPECT_EQ(dlopen("libssl.so.3", RTLD_NOW | RTLD_NOLOAD), nullptr);
  EXPECT_EQ(dlopen("libcrypto.so.3", RTLD_NOW | RTLD_NOLOAD), nullptr);
}

// The cu* names in an ELF shared object's dynamic symbol table, read from the file (the
// toolkit's link stub cannot be dlopen()ed beside ours: both are libcuda.so.1).
std::set<std::string> DefinedCuSymbols(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::set<std::string> names;
  if (file.size() < sizeof(Elf64_Ehdr)) return names;
  Elf64_Ehdr eh;
  std::memcpy(&eh, file.data(), sizeof(eh));
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shoff + uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > file.size()) {
    return names;
  }
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  std::memcpy(sections.data(), file.data() + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
  for (const auto& sh : sections) {
    if (sh.sh_type != SHT_DYNSYM || sh.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, file.data() + sh.sh_offset + off, sizeof(sym));
      if (sym.st_shndx == SHN_UNDEF || sym.st_name >= strtab.sh_size) continue;
      const std::string name(file.data() + strtab.sh_offset + sym.st_name);
      if (name.rfind("cu", 0) == 0) names.insert(name);
    }
  }
  return names;
}

// The toolkit's libcuda.so link stub carries the real driver's export list.
TEST_F(LibcudaTest, ExportsWhatTheToolkitStubExports) {
  const auto real = DefinedCuSymbols(PVGPU_CUDA_STUB_LIBRARY);
  if (real.empty()) GTEST_SKIP() << "no readable " << PVGPU_CUDA_STUB_LIBRARY;
  for (const auto& name : real) EXPECT_NE(Sym(name.c_str()), nullptr) << name;
}

TEST_F(LibcudaTest, ExportsVersionedLegacyAndPerThreadNames) {
  for (const char* name :
       {"cuMemAlloc", "cuMemAlloc_v2", "cuCtxCreate", "cuCtxCreate_v2", "cuCtxCreate_v3",
        "cuCtxCreate_v4", "cuMemcpyHtoD_v2_ptds", "cuLaunchKernel_ptsz", "cuStreamSynchronize_ptsz",
        "cuMemsetD8_v2_ptds", "cuGraphCreate", "cuGetProcAddress", "cuGetProcAddress_v2",
        "cuModuleLoadFatBinary", "cuStreamGetCaptureInfo_v3_ptsz"}) {
    EXPECT_NE(Sym(name), nullptr) << name;
  }
  // The version script keeps everything else, including pvgpu's own symbols, private.
  EXPECT_EQ(Sym("_ZN5pvgpu5guest12NotSupportedEPKcPSt6atomicIbE"), nullptr);
}

TEST_F(LibcudaTest, UnimplementedFunctionsReturnNotSupported) {
  using TwoArgs = CUresult (*)(void*, unsigned int);
  for (const char* name : {"cuIpcGetMemHandle", "cuMemAlloc", "cuModuleGetGlobal",
                           "cuGraphicsUnmapResources", "cuSignalExternalSemaphoresAsync_ptsz"}) {
    auto fn = reinterpret_cast<TwoArgs>(Sym(name));
    ASSERT_NE(fn, nullptr) << name;
    void* out[4] = {};
    EXPECT_EQ(fn(out, 0), CUDA_ERROR_NOT_SUPPORTED) << name;
    EXPECT_EQ(fn(out, 0), CUDA_ERROR_NOT_SUPPORTED) << name << " (second call)";
  }
}

TEST_F(LibcudaTest, ForwardersReachTheImplementation) {
  // Before cuInit the implementations answer NOT_INITIALIZED; a stub would say NOT_SUPPORTED.
  using OneArg = CUresult (*)(void*);
  for (const char* name : {"cuStreamSynchronize_ptsz", "cuStreamQuery_ptsz", "cuCtxDestroy",
                           "cuStreamDestroy", "cuEventDestroy", "cuProfilerStart"}) {
    auto fn = reinterpret_cast<OneArg>(Sym(name));
    ASSERT_NE(fn, nullptr) << name;
    EXPECT_NE(fn(nullptr), CUDA_ERROR_NOT_SUPPORTED) << name;
  }
  using CtxCreateV2 = CUresult (*)(CUcontext*, unsigned int, CUdevice);
  CUcontext ctx = nullptr;
  EXPECT_EQ(reinterpret_cast<CtxCreateV2>(Sym("cuCtxCreate_v2"))(&ctx, 0, 0),
            CUDA_ERROR_NOT_INITIALIZED);
}

struct Expectation {
  const char* base;
  int version;
  cuuint64_t flags;
  const char* symbol;
};

// From cudaTypedefs.h's PFN_<name>_v<version> typedefs and cuda.h's name-mapping macros.
constexpr Expectation kExpectations[] = {
    {"cuInit", 2000, kDefault, "cuInit"},
    {"cuInit", 13000, kPerThread, "cuInit"},
    {"cuMemAlloc", 2000, kDefault, "cuMemAlloc"},
    {"cuMemAlloc", 3010, kDefault, "cuMemAlloc"},
    {"cuMemAlloc", 3020, kDefault, "cuMemAlloc_v2"},
    {"cuMemAlloc", 13000, kLegacy, "cuMemAlloc_v2"},
    {"cuCtxCreate", 2000, kDefault, "cuCtxCreate"},
    {"cuCtxCreate", 3020, kDefault, "cuCtxCreate_v2"},
    {"cuCtxCreate", 11040, kDefault, "cuCtxCreate_v3"},
    {"cuCtxCreate", 12000, kDefault, "cuCtxCreate_v3"},
    {"cuCtxCreate", 12050, kDefault, "cuCtxCreate_v4"},
    {"cuCtxDestroy", 2000, kDefault, "cuCtxDestroy"},
    {"cuCtxDestroy", 4000, kDefault, "cuCtxDestroy_v2"},
    {"cuStreamDestroy", 2000, kDefault, "cuStreamDestroy"},
    {"cuStreamDestroy", 4000, kDefault, "cuStreamDestroy_v2"},
    {"cuEventElapsedTime", 2000, kDefault, "cuEventElapsedTime"},
    {"cuEventElapsedTime", 12080, kDefault, "cuEventElapsedTime_v2"},
    {"cuDeviceTotalMem", 3020, kDefault, "cuDeviceTotalMem_v2"},
    {"cuDevicePrimaryCtxRelease", 7000, kDefault, "cuDevicePrimaryCtxRelease"},
    {"cuDevicePrimaryCtxRelease", 11000, kDefault, "cuDevicePrimaryCtxRelease_v2"},
    {"cuGetProcAddress", 11030, kDefault, "cuGetProcAddress"},
    {"cuGetProcAddress", 12000, kDefault, "cuGetProcAddress_v2"},
    {"cuCtxGetDevice", 12000, kDefault, "cuCtxGetDevice"},
    {"cuCtxGetDevice", 13000, kDefault, "cuCtxGetDevice_v2"},
    {"cuGraphInstantiate", 11000, kDefault, "cuGraphInstantiate_v2"},
    {"cuMemcpyHtoD", 2000, kPerThread, "cuMemcpyHtoD"},
    {"cuMemcpyHtoD", 6050, kPerThread, "cuMemcpyHtoD_v2"},
    {"cuMemcpyHtoD", 7000, kPerThread, "cuMemcpyHtoD_v2_ptds"},
    {"cuMemcpyHtoD", 12000, kLegacy, "cuMemcpyHtoD_v2"},
    {"cuMemcpyHtoD", 12000, kDefault, "cuMemcpyHtoD_v2"},
    {"cuMemsetD8", 12000, kPerThread, "cuMemsetD8_v2_ptds"},
    {"cuLaunchKernel", 4000, kPerThread, "cuLaunchKernel"},
    {"cuLaunchKernel", 12000, kPerThread, "cuLaunchKernel_ptsz"},
    {"cuLaunchKernel", 12000, kDefault, "cuLaunchKernel"},
    {"cuStreamSynchronize", 13000, kPerThread, "cuStreamSynchronize_ptsz"},
    {"cuStreamGetCaptureInfo", 10010, kPerThread, "cuStreamGetCaptureInfo_ptsz"},
    {"cuStreamGetCaptureInfo", 11030, kPerThread, "cuStreamGetCaptureInfo_v2_ptsz"},
    {"cuStreamGetCaptureInfo", 12030, kDefault, "cuStreamGetCaptureInfo_v3"},
    {"cuModuleLoadFatBinary", 2000, kDefault, "cuModuleLoadFatBinary"},
};

TEST_F(LibcudaTest, GetProcAddressResolvesKnownPairs) {
  for (const auto& e : kExpectations) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    EXPECT_EQ(GetProc()(e.base, &fn, e.version, e.flags, &status), CUDA_SUCCESS)
        << e.base << " " << e.version;
    EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS) << e.base << " " << e.version;
    EXPECT_EQ(fn, Sym(e.symbol)) << e.base << " " << e.version << " flags " << e.flags
                                 << ": expected " << e.symbol;
  }
}

TEST_F(LibcudaTest, GetProcAddressFailures) {
  void* fn = reinterpret_cast<void*>(1);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(GetProc()("cuGetProcAddress", &fn, 11020, kDefault, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(GetProc()("cuNoSuchFunction", &fn, 12000, kDefault, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  // Applications ask for base names; an ABI name is not one.
  EXPECT_EQ(GetProc()("cuMemAlloc_v2", &fn, 12000, kDefault, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(GetProc()(nullptr, &fn, 12000, kDefault, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(GetProc()("cuInit", nullptr, 12000, kDefault, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(GetProc()("cuInit", &fn, 12000, 1u << 7, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(GetProc()("cuInit", &fn, CUDA_VERSION + 1000, kDefault, &status),
            CUDA_ERROR_INVALID_VALUE);
  // The status argument is optional.
  EXPECT_EQ(GetProc()("cuInit", &fn, 12000, kDefault, nullptr), CUDA_SUCCESS);
}

TEST_F(LibcudaTest, GetProcAddressV1) {
  auto v1 = reinterpret_cast<GetProcAddressV1>(Sym("cuGetProcAddress"));
  void* fn = nullptr;
  EXPECT_EQ(v1("cuMemAlloc", &fn, 12000, kDefault), CUDA_SUCCESS);
  EXPECT_EQ(fn, Sym("cuMemAlloc_v2"));
  EXPECT_EQ(v1("cuNoSuchFunction", &fn, 12000, kDefault), CUDA_ERROR_NOT_FOUND);
}

// Every (name, version) pair cudaTypedefs.h names resolves, at exactly that version, to an
// exported symbol of that name's family.
TEST_F(LibcudaTest, GetProcAddressCoversCudaTypedefs) {
  const std::string text = ReadFile(PVGPU_CUDA_INCLUDE_DIR "/cudaTypedefs.h");
  const std::regex pfn(R"(\(CUDAAPI \*PFN_(cu\w+?)_v(\d+)(_ptds|_ptsz)?\)\()");
  int pairs = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pfn); it != std::sregex_iterator();
       ++it) {
    const std::string base = (*it)[1];
    const int version = std::stoi((*it)[2]);
    const bool per_thread = (*it)[3].matched;
    void* fn = nullptr;
    ASSERT_EQ(GetProc()(base.c_str(), &fn, version, per_thread ? kPerThread : kLegacy, nullptr),
              CUDA_SUCCESS)
        << base << " " << version;
    Dl_info info{};
    ASSERT_NE(dladdr(fn, &info), 0) << base;
    ASSERT_NE(info.dli_sname, nullptr) << base;
    const std::string symbol = info.dli_sname;
    EXPECT_EQ(symbol.rfind(base, 0), 0u) << base << " -> " << symbol;
    const bool symbol_per_thread = symbol.ends_with("_ptds") || symbol.ends_with("_ptsz");
    EXPECT_EQ(symbol_per_thread, per_thread) << base << " " << version << " -> " << symbol;
    ++pairs;
  }
  EXPECT_GT(pairs, 600);
}

}  // namespace
