#include "guest/cuda/address_map.h"

#include <gtest/gtest.h>

namespace pvgpu::guest {
namespace {

TEST(AddressMapTest, FindsTheRangeHoldingAllOfAnInterval) {
  AddressMap<int> map;
  ASSERT_TRUE(map.Insert(0x1000, 0x100, 1));
  ASSERT_TRUE(map.Insert(0x2000, 0x10, 2));
  auto found = map.Find(0x1080, 0x80);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->base, 0x1000u);
  EXPECT_EQ(found->size, 0x100u);
  EXPECT_EQ(found->value, 1);
  EXPECT_FALSE(map.Find(0x1080, 0x81).has_value());  // runs past the end
  EXPECT_FALSE(map.Find(0x1100).has_value());        // the byte after it
  EXPECT_FALSE(map.Find(0xfff).has_value());
  EXPECT_EQ(map.Find(0x200f)->value, 2);
  EXPECT_FALSE(map.FindBase(0x1001).has_value());
  EXPECT_EQ(map.FindBase(0x2000)->value, 2);
}

TEST(AddressMapTest, InsertRefusesOverlapsAndAssignReplacesThem) {
  AddressMap<int> map;
  ASSERT_TRUE(map.Insert(0x1000, 0x100, 1));
  ASSERT_TRUE(map.Insert(0x1200, 0x100, 2));
  ASSERT_TRUE(map.Insert(0x1400, 0x100, 3));
  EXPECT_FALSE(map.Insert(0x10ff, 0x10, 9));  // overlaps the first
  EXPECT_FALSE(map.Insert(0x1000, 0x100, 9));
  // The host handed [0x10f0, 0x1210) out again: the two records it overlaps are stale.
  map.Assign(0x10f0, 0x120, 4);
  EXPECT_EQ(map.Find(0x1100)->value, 4);
  EXPECT_FALSE(map.Find(0x1000).has_value());
  EXPECT_FALSE(map.Find(0x1250).has_value());
  EXPECT_EQ(map.Find(0x1400)->value, 3);  // untouched
}

TEST(AddressMapTest, TakeBaseAndEraseIf) {
  AddressMap<int> map;
  ASSERT_TRUE(map.Insert(0x1000, 0x100, 1));
  ASSERT_TRUE(map.Insert(0x2000, 0x100, 2));
  ASSERT_TRUE(map.Insert(0x3000, 0x100, 1));
  EXPECT_FALSE(map.TakeBase(0x1010).has_value());  // not a base
  auto taken = map.TakeBase(0x2000);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->value, 2);
  EXPECT_FALSE(map.Find(0x2000).has_value());
  map.EraseIf([](int owner) { return owner == 1; });
  EXPECT_FALSE(map.Find(0x1000).has_value());
  EXPECT_FALSE(map.Find(0x3000).has_value());
}

}  // namespace
}  // namespace pvgpu::guest
