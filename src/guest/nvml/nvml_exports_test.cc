// Loads the built libnvidia-ml.so.1 with dlopen, as NVML clients (nvidia-smi-like tools, the
// Kubernetes device plugin, pynvml) do, and checks its exports, the calls that need no host,
// and the trace PVGPU_LOG=trace writes of every call.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "guest/export_test_support.h"

namespace {

namespace exports_test = pvgpu::guest::exports_test;

// Values of nvmlReturn_t (NVIDIA's NVML API reference), spelled out here because this test
// must see the library only through dlsym.
constexpr int kSuccess = 0;
constexpr int kUninitialized = 1;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr int kInsufficientSize = 7;
constexpr int kDriverNotLoaded = 9;
constexpr int kLibraryNotFound = 12;

std::vector<std::string> ListedNames() {
  std::vector<std::string> names;
  std::ifstream in(PVGPU_NVML_FUNCTIONS);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') names.push_back(line);
  }
  return names;
}

class NvmlExportsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // No host: nothing listens here, so every host-backed call must fail cleanly.
    setenv("PVGPU_HOST", "unix:/nonexistent-pvgpu-dir/pvgpud.sock", 1);
    log_path_ = exports_test::TraceIntoTemporaryFile();  // read when the library is loaded
    ASSERT_FALSE(log_path_.empty());
    handle_ = dlopen(PVGPU_LIBNVML_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
  }
  static void TearDownTestSuite() { unlink(log_path_.c_str()); }

  static std::vector<std::string> LogLines(const std::string& text) {
    return exports_test::LinesContaining(log_path_, text);
  }

  template <typename Fn>
  static Fn Get(const char* name) {
    void* symbol = dlsym(handle_, name);
    EXPECT_NE(symbol, nullptr) << name;
    return reinterpret_cast<Fn>(symbol);
  }

  static void* handle_;
  static std::string log_path_;
};

void* NvmlExportsTest::handle_ = nullptr;
std::string NvmlExportsTest::log_path_;

TEST_F(NvmlExportsTest, EveryListedFunctionIsExported) {
  const std::vector<std::string> names = ListedNames();
  ASSERT_GT(names.size(), 300u);
  std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size()) << "duplicate names in nvml_functions.txt";
  for (const std::string& name : names) {
    EXPECT_NE(dlsym(handle_, name.c_str()), nullptr) << name << " is not exported";
  }
}

TEST_F(NvmlExportsTest, EveryDeclaredFunctionIsExportedAndNamed) {
  const std::vector<std::string> names = exports_test::DeclaredNames(PVGPU_NVML_DECLARATION_LIST);
  ASSERT_GT(names.size(), 25u);
  const std::vector<std::string> all = ListedNames();
  const std::set<std::string> known(all.begin(), all.end());
  for (const std::string& name : names) {
    EXPECT_NE(dlsym(handle_, name.c_str()), nullptr) << name << " is not exported";
    EXPECT_TRUE(known.count(name)) << name << " is not in nvml_functions.txt";
  }
}

// PVGPU_LOG=trace: each call under its own name (aliases included), with its result's name.
TEST_F(NvmlExportsTest, TracesEveryCallWithItsResult) {
  unsigned count = 0;
  EXPECT_EQ(Get<int (*)(unsigned*)>("nvmlDeviceGetCount")(&count), kUninitialized);
  EXPECT_EQ(Get<int (*)(unsigned*)>("nvmlDeviceGetCount_v2")(nullptr), kUninitialized);
  char text[80];
  EXPECT_EQ(Get<int (*)(char*, unsigned)>("nvmlSystemGetNVMLVersion")(text, sizeof(text)),
            kSuccess);
  EXPECT_STREQ(Get<const char* (*)(int)>("nvmlErrorString")(kNotSupported), "Not Supported");
  std::ostringstream count_arg;
  count_arg << static_cast<void*>(&count);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"nvmlDeviceGetCount(",
       "nvmlDeviceGetCount(" + count_arg.str() + ") -> NVML_ERROR_UNINITIALIZED"},
      {"nvmlDeviceGetCount_v2(", "nvmlDeviceGetCount_v2(0) -> NVML_ERROR_UNINITIALIZED"},
      {"nvmlSystemGetNVMLVersion(", ", 80) -> NVML_SUCCESS"},
      {"nvmlErrorString(", "nvmlErrorString(3) -> \"Not Supported\""},
  };
  exports_test::ExpectTraced(log_path_, expected);
}

TEST_F(NvmlExportsTest, ExportsNothingButNvml) {
  FILE* nm = popen("nm -D --defined-only " PVGPU_LIBNVML_PATH " 2>/dev/null", "r");
  ASSERT_NE(nm, nullptr);
  char line[512];
  int symbols = 0;
  while (std::fgets(line, sizeof(line), nm) != nullptr) {
    std::string text(line);
    const std::string name =
        text.substr(text.rfind(' ') + 1, text.find_last_not_of("\n") - text.rfind(' '));
    if (text.find(" A ") != std::string::npos) continue;  // version nodes
    ++symbols;
    EXPECT_EQ(name.rfind("nvml", 0), 0u) << "unexpected export " << name;
  }
  pclose(nm);
  if (symbols == 0) GTEST_SKIP() << "nm is not available";
}

TEST_F(NvmlExportsTest, CallsBeforeInitAreUninitialized) {
  unsigned count = 7;
  EXPECT_EQ(Get<int (*)(unsigned*)>("nvmlDeviceGetCount_v2")(&count), kUninitialized);
  EXPECT_EQ(count, 7u);
  void* device = nullptr;
  EXPECT_EQ(Get<int (*)(unsigned, void**)>("nvmlDeviceGetHandleByIndex_v2")(0, &device),
            kUninitialized);
  char text[96];
  EXPECT_EQ(Get<int (*)(char*, unsigned)>("nvmlSystemGetDriverVersion")(text, sizeof(text)),
            kUninitialized);
  EXPECT_EQ(Get<int (*)()>("nvmlShutdown")(), kUninitialized);
}

TEST_F(NvmlExportsTest, InitWithoutHostIsDriverNotLoaded) {
  EXPECT_EQ(Get<int (*)()>("nvmlInit_v2")(), kDriverNotLoaded);
  EXPECT_EQ(Get<int (*)(unsigned)>("nvmlInitWithFlags")(1), kDriverNotLoaded);
  // A failed init leaves nothing to shut down.
  EXPECT_EQ(Get<int (*)()>("nvmlShutdown")(), kUninitialized);
  int version = 0;
  EXPECT_EQ(Get<int (*)(int*)>("nvmlSystemGetCudaDriverVersion")(&version), kLibraryNotFound);
  EXPECT_EQ(Get<int (*)(int*)>("nvmlSystemGetCudaDriverVersion")(nullptr), kInvalidArgument);
}

TEST_F(NvmlExportsTest, NvmlVersionNeedsNoHost) {
  auto get_version = Get<int (*)(char*, unsigned)>("nvmlSystemGetNVMLVersion");
  char text[80] = {};
  ASSERT_EQ(get_version(text, sizeof(text)), kSuccess);
  EXPECT_EQ(std::string(text).rfind("13.", 0), 0u) << text;
  char small[3];
  EXPECT_EQ(get_version(small, sizeof(small)), kInsufficientSize);
  EXPECT_EQ(get_version(nullptr, 80), kInvalidArgument);
}

TEST_F(NvmlExportsTest, ErrorStrings) {
  auto error_string = Get<const char* (*)(int)>("nvmlErrorString");
  EXPECT_STREQ(error_string(kSuccess), "Success");
  EXPECT_STREQ(error_string(kUninitialized), "Uninitialized");
  EXPECT_STREQ(error_string(kNotSupported), "Not Supported");
  EXPECT_STREQ(error_string(kDriverNotLoaded), "Driver Not Loaded");
  EXPECT_STREQ(error_string(12345), "Unknown Error");
}

TEST_F(NvmlExportsTest, UnimplementedCallsAreNotSupported) {
  for (const char* name : {"nvmlDeviceGetFanSpeed", "nvmlUnitGetCount", "nvmlEventSetCreate",
                           "nvmlDeviceGetClockInfo"}) {
    EXPECT_EQ(Get<int (*)()>(name)(), kNotSupported) << name;
    EXPECT_EQ(Get<int (*)()>(name)(), kNotSupported) << name << " (second call)";
    // Warned about once, traced every time.
    EXPECT_EQ(LogLines(std::string(name) + " is not supported").size(), 1u) << name;
    EXPECT_EQ(LogLines(std::string(name) + "(...) -> NVML_ERROR_NOT_SUPPORTED").size(), 2u) << name;
  }
}

}  // namespace
