#include "adapters/registry.h"

#include <gtest/gtest.h>

#include "ptx/ptx.h"

namespace pvgpu::adapters {
namespace {

TEST(RegistryTest, ParsesByteSizes) {
  uint64_t bytes = 0;
  ASSERT_TRUE(ParseByteSize("4G", &bytes));
  EXPECT_EQ(bytes, 4ull << 30);
  ASSERT_TRUE(ParseByteSize("512MiB", &bytes));
  EXPECT_EQ(bytes, 512ull << 20);
  ASSERT_TRUE(ParseByteSize("123", &bytes));
  EXPECT_EQ(bytes, 123u);
  EXPECT_FALSE(ParseByteSize("", &bytes));
  EXPECT_FALSE(ParseByteSize("G", &bytes));
  EXPECT_FALSE(ParseByteSize("12X", &bytes));
  EXPECT_FALSE(ParseByteSize("99999999999T", &bytes));
}

TEST(RegistryTest, BuildsCpuAdaptersWithDistinctIdentities) {
  RegistryOptions options;
  options.cpu_threads = 1;
  auto adapters = CreateAdapters("cpu,cpu:memory=1G", options);
  ASSERT_TRUE(adapters.ok()) << adapters.status().ToString();
  ASSERT_EQ(adapters->size(), 2u);
  const auto& a = (*adapters)[0]->info();
  const auto& b = (*adapters)[1]->info();
  EXPECT_EQ(a.kind, "cpu");
  EXPECT_NE(a.uuid, b.uuid);
  EXPECT_EQ(b.total_memory, 1ull << 30);
  EXPECT_TRUE(a.is_software);
}

TEST(RegistryTest, EachCpuAdapterMayHaveItsOwnEngine) {
  RegistryOptions options;
  options.cpu_threads = 1;
  auto adapters = CreateAdapters("cpu:engine=interp,cpu:memory=1G:engine=auto,cpu", options);
  ASSERT_TRUE(adapters.ok()) << adapters.status().ToString();
  ASSERT_EQ(adapters->size(), 3u);
  EXPECT_EQ((*adapters)[0]->info().engine, "interp");
  // auto is interp in a build without the compiling engine.
  EXPECT_EQ((*adapters)[1]->info().engine, ptx::JitAvailable() ? "auto" : "interp");
  EXPECT_EQ((*adapters)[1]->info().total_memory, 1ull << 30);
  // No engine= option: the process default.
  EXPECT_EQ((*adapters)[2]->info().engine, ptx::EngineName(ptx::DefaultEngine()));
  if (ptx::JitAvailable()) {
    auto jit = CreateAdapters("cpu:engine=jit", options);
    ASSERT_TRUE(jit.ok()) << jit.status().ToString();
    EXPECT_EQ((*jit)[0]->info().engine, "jit");
  } else {
    EXPECT_EQ(CreateAdapters("cpu:engine=jit", options).status().code(), Code::kInvalidValue);
  }
}

TEST(RegistryTest, RejectsUnknownKindsAndOptions) {
  EXPECT_EQ(CreateAdapters("gpu", {}).status().code(), Code::kInvalidValue);
  EXPECT_EQ(CreateAdapters("cpu:mem=1", {}).status().code(), Code::kInvalidValue);
  EXPECT_EQ(CreateAdapters("cpu:engine=fast", {}).status().code(), Code::kInvalidValue);
  EXPECT_EQ(CreateAdapters("cpu:memory=1G:bogus=1", {}).status().code(), Code::kInvalidValue);
  EXPECT_EQ(CreateAdapters("cuda:engine=jit", {}).status().code(), Code::kInvalidValue);
  EXPECT_EQ(CreateAdapters("", {}).status().code(), Code::kInvalidValue);
}

}  // namespace
}  // namespace pvgpu::adapters
