#include "adapters/cpu/device_memory.h"

#include <gtest/gtest.h>

namespace pvgpu::adapters::cpu {
namespace {

TEST(DeviceMemoryTest, TranslatesInsideAllocationsOnly) {
  AddressRange range(1ull << 40, 1ull << 30);
  DeviceMemory memory(&range);
  auto a = memory.Allocate(100);
  ASSERT_TRUE(a.ok());
  EXPECT_NE(memory.Translate(*a, 100), nullptr);
  EXPECT_NE(memory.Translate(*a + 99, 1), nullptr);
  EXPECT_EQ(memory.Translate(*a + 99, 2), nullptr);   // runs past the end
  EXPECT_EQ(memory.Translate(*a + 100, 1), nullptr);  // guard gap
  EXPECT_EQ(memory.Translate(*a - 1, 1), nullptr);
  EXPECT_EQ(memory.Translate(*a, ~0ull), nullptr);  // size overflow
  EXPECT_EQ(memory.used_bytes(), 100u);
  // Fresh allocations are zeroed.
  EXPECT_EQ(*memory.Translate(*a + 50, 1), 0);
}

TEST(DeviceMemoryTest, FreedAddressesFaultAndAreNotReused) {
  AddressRange range(1ull << 40, 1ull << 30);
  DeviceMemory memory(&range);
  auto a = memory.Allocate(4096);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(memory.Free(*a).ok());
  EXPECT_EQ(memory.Translate(*a, 1), nullptr);
  auto b = memory.Allocate(4096);
  ASSERT_TRUE(b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(memory.Free(*a).code(), Code::kInvalidValue);      // double free
  EXPECT_EQ(memory.Free(*b + 8).code(), Code::kInvalidValue);  // not the start
  EXPECT_EQ(memory.Allocate(0).status().code(), Code::kInvalidValue);
}

// Managed memory: host memory at an address the caller chose, outside the adapter's window.
TEST(DeviceMemoryTest, PlacedExternalMemoryTranslatesAtItsAddressOnly) {
  AddressRange range(1ull << 40, 1ull << 30);
  DeviceMemory memory(&range);
  uint8_t pages[8192] = {};
  const uint64_t at = 0x7f0000000000;
  ASSERT_TRUE(memory.AddExternalAt(at, pages, sizeof(pages)).ok());
  EXPECT_EQ(memory.Translate(at + 100, 4), pages + 100);
  EXPECT_EQ(memory.Translate(at + sizeof(pages), 1), nullptr);
  EXPECT_EQ(memory.used_bytes(), 0u) << "the caller's memory, not the adapter's";
  // Overlapping it, or the adapter's own window, is refused.
  EXPECT_EQ(memory.AddExternalAt(at + 4096, pages, 4096).code(), Code::kInvalidValue);
  EXPECT_EQ(memory.AddExternalAt((1ull << 40) + 4096, pages, 4096).code(), Code::kInvalidValue);
  EXPECT_EQ(memory.AddExternalAt(~0ull - 10, pages, 4096).code(), Code::kInvalidValue);
  ASSERT_TRUE(memory.Free(at).ok());
  EXPECT_EQ(memory.Translate(at, 1), nullptr);
  // The window's allocator is untouched by it.
  auto a = memory.Allocate(64);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 1ull << 40);
}

TEST(DeviceMemoryTest, ExhaustedWindowReusesGaps) {
  AddressRange range(1ull << 40, 64 * 1024);
  DeviceMemory memory(&range);
  std::vector<uint64_t> live;
  for (;;) {
    auto a = memory.Allocate(1000);
    if (!a.ok()) {
      EXPECT_EQ(a.status().code(), Code::kOutOfMemory);
      break;
    }
    live.push_back(*a);
  }
  ASSERT_GT(live.size(), 2u);
  ASSERT_TRUE(memory.Free(live[1]).ok());
  auto again = memory.Allocate(1000);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, live[1]);
}

}  // namespace
}  // namespace pvgpu::adapters::cpu
