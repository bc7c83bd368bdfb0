// libnvidia-ml.so.1 against real pvgpud processes: the devices of several hosts in PVGPU_HOST
// order, CUDA_VISIBLE_DEVICES ignored (as real NVML ignores it), unreachable hosts skipped.
// Each test runs in its own process (gtest_discover_tests), so each sees a fresh library.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "guest/nvml/nvml_api.h"

namespace {

namespace fs = std::filesystem;

constexpr unsigned long long kGiB = 1ull << 30;

// A pvgpud on a private socket, up once it has written "ready" to --ready-fd.
class Daemon {
 public:
  Daemon(const std::string& dir, const std::string& name, const std::string& adapters,
         const std::string& memory)
      : address_("unix:" + dir + "/" + name + ".sock") {
    int ready[2];
    if (pipe(ready) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      const std::string fd = std::to_string(ready[1]);
      const std::string log = dir + "/" + name + ".log";
      execl(PVGPUD_BINARY, PVGPUD_BINARY, "--listen", address_.c_str(), "--adapters",
            adapters.c_str(), "--memory", memory.c_str(), "--ready-fd", fd.c_str(), "--log-file",
            log.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(ready[1]);
    char text[6] = {};
    size_t got = 0;
    while (got < sizeof(text)) {
      const ssize_t n = read(ready[0], text + got, sizeof(text) - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    close(ready[0]);
    ready_ = std::string(text, got) == "ready\n";
  }
  ~Daemon() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ready() const { return ready_; }
  const std::string& address() const { return address_; }

 private:
  std::string address_;
  pid_t pid_ = -1;
  bool ready_ = false;
};

class NvmlHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/pvgpu-nvml-hosts-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    first_ = std::make_unique<Daemon>(dir_, "first", "cpu", "1G");
    second_ = std::make_unique<Daemon>(dir_, "second", "cpu,cpu", "2G");
    ASSERT_TRUE(first_->ready() && second_->ready()) << "pvgpud did not start; see " << dir_;
  }
  void TearDown() override {
    if (library_ != nullptr) dlclose(library_);
    first_.reset();
    second_.reset();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  // Loads the library after the environment is set, as a program started with it would.
  template <typename Fn>
  Fn Get(const char* name) {
    if (library_ == nullptr) library_ = dlopen(PVGPU_LIBNVML_PATH, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(library_, nullptr) << dlerror();
    return reinterpret_cast<Fn>(dlsym(library_, name));
  }

  std::vector<unsigned long long> DeviceMemoryTotals() {
    std::vector<unsigned long long> totals;
    unsigned count = 0;
    EXPECT_EQ(Get<decltype(&nvmlDeviceGetCount_v2)>("nvmlDeviceGetCount_v2")(&count), NVML_SUCCESS);
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t device;
      nvmlMemory_t memory;
      EXPECT_EQ(Get<decltype(&nvmlDeviceGetHandleByIndex_v2)>("nvmlDeviceGetHandleByIndex_v2")(
                    i, &device),
                NVML_SUCCESS);
      EXPECT_EQ(Get<decltype(&nvmlDeviceGetMemoryInfo)>("nvmlDeviceGetMemoryInfo")(device, &memory),
                NVML_SUCCESS);
      totals.push_back(memory.total);
    }
    return totals;
  }

  std::string dir_;
  std::unique_ptr<Daemon> first_, second_;
  void* library_ = nullptr;
};

TEST_F(NvmlHostsTest, DevicesOfAllHostsInOrderIgnoringCudaVisibleDevices) {
  setenv("PVGPU_HOST", (first_->address() + " , " + second_->address()).c_str(), 1);
  setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  ASSERT_EQ(Get<decltype(&nvmlInit_v2)>("nvmlInit_v2")(), NVML_SUCCESS);
  EXPECT_EQ(DeviceMemoryTotals(), (std::vector<unsigned long long>{kGiB, 2 * kGiB, 2 * kGiB}));
  EXPECT_EQ(Get<decltype(&nvmlShutdown)>("nvmlShutdown")(), NVML_SUCCESS);
}

TEST_F(NvmlHostsTest, UnreachableHostsAreSkipped) {
  setenv("PVGPU_HOST", ("unix:" + dir_ + "/nobody.sock," + second_->address()).c_str(), 1);
  ASSERT_EQ(Get<decltype(&nvmlInit_v2)>("nvmlInit_v2")(), NVML_SUCCESS);
  EXPECT_EQ(DeviceMemoryTotals(), (std::vector<unsigned long long>{2 * kGiB, 2 * kGiB}));
  EXPECT_EQ(Get<decltype(&nvmlShutdown)>("nvmlShutdown")(), NVML_SUCCESS);
}

}  // namespace
