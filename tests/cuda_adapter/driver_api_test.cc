// Loading the host's CUDA driver: where it is looked for, the loop guard, and what the registry
// does when there is no driver. No GPU and no daemon needed.
#include "adapters/cuda/driver_api.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "adapters/registry.h"

namespace pvgpu::adapters::cuda {
namespace {

// Keeps PVGPU_HOST as it was around a test.
class EnvGuard {
 public:
  EnvGuard() {
    if (const char* v = getenv("PVGPU_HOST")) saved_ = v, had_ = true;
  }
  ~EnvGuard() {
    if (had_)
      setenv("PVGPU_HOST", saved_.c_str(), 1);
    else
      unsetenv("PVGPU_HOST");
  }

 private:
  std::string saved_;
  bool had_ = false;
};

TEST(DriverApi, MissingExplicitDriverIsNotFound) {
  DriverOptions options;
  options.path = "/nonexistent/libcuda.so.1";
  auto driver = Driver::Load(options);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), Code::kNotFound);
  EXPECT_NE(driver.status().message().find("/nonexistent/libcuda.so.1"), std::string::npos);
}

TEST(DriverApi, RecognizesPvgpuGuestDriver) {
  EXPECT_TRUE(IsPvgpuLibrary(PVGPU_GUEST_LIBCUDA));
  EXPECT_FALSE(IsPvgpuLibrary("/bin/sh"));
  EXPECT_FALSE(IsPvgpuLibrary("/nonexistent"));
}

TEST(DriverApi, StandardPathsNeverIncludeTheLibraryPath) {
  // The search must not depend on LD_LIBRARY_PATH, which `pvgpu run` points at lib/pvgpu.
  for (const auto& path : StandardLibraryPaths("libcuda.so.1")) {
    EXPECT_EQ(path.rfind('/', 0), 0u) << path;
    EXPECT_EQ(path.find("pvgpu"), std::string::npos) << path;
  }
}

TEST(DriverApi, PvgpuDriverWithoutHostIsRefused) {
  EnvGuard guard;
  unsetenv("PVGPU_HOST");
  DriverOptions options;
  options.path = PVGPU_GUEST_LIBCUDA;
  auto driver = Driver::Load(options);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), Code::kNotPermitted);
  EXPECT_NE(driver.status().message().find("PVGPU_HOST is unset"), std::string::npos)
      << driver.status().message();
}

TEST(DriverApi, PvgpuDriverAimedAtOwnSocketIsRefused) {
  EnvGuard guard;
  setenv("PVGPU_HOST", "unix:/tmp/elsewhere.sock,unix:/tmp/./pvgpu-self.sock", 1);
  DriverOptions options;
  options.path = PVGPU_GUEST_LIBCUDA;
  options.listen_addresses = {"unix:/tmp/pvgpu-self.sock"};
  auto driver = Driver::Load(options);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), Code::kNotPermitted);
  EXPECT_NE(driver.status().message().find("this daemon's own listener"), std::string::npos)
      << driver.status().message();
}

TEST(Registry, CudaAloneWithoutDriverFailsClearly) {
  RegistryOptions options;
  options.cuda_driver = "/nonexistent/libcuda.so.1";
  auto adapters = CreateAdapters("cuda", options);
  ASSERT_FALSE(adapters.ok());
  EXPECT_EQ(adapters.status().code(), Code::kNoDevice);
  EXPECT_NE(adapters.status().message().find("cuda kind found no GPU"), std::string::npos)
      << adapters.status().message();
}

TEST(Registry, CpuAndCudaWithoutDriverServesCpuOnly) {
  RegistryOptions options;
  options.cuda_driver = "/nonexistent/libcuda.so.1";
  options.cpu_threads = 1;
  options.cpu_memory_bytes = 64 << 20;
  auto adapters = CreateAdapters("cpu,cuda", options);
  ASSERT_TRUE(adapters.ok()) << adapters.status().ToString();
  ASSERT_EQ(adapters->size(), 1u);
  EXPECT_EQ((*adapters)[0]->info().kind, "cpu");
}

TEST(Registry, CudaRejectsMemoryOption) {
  auto adapters = CreateAdapters("cuda:memory=1G", RegistryOptions{});
  ASSERT_FALSE(adapters.ok());
  EXPECT_EQ(adapters.status().code(), Code::kInvalidValue);
}

}  // namespace
}  // namespace pvgpu::adapters::cuda
