#include "common/range_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace pvgpu {
namespace {

TEST(RangeMapTest, FindsTheRangeHoldingAWholeSpan) {
  RangeMap<std::string> map;
  ASSERT_TRUE(map.Insert(0x1000, 0x100, "a"));
  ASSERT_TRUE(map.Insert(0x2000, 0x10, "b"));
  EXPECT_EQ(map.Find(0x1000)->second.value, "a");
  EXPECT_EQ(map.Find(0x10ff)->second.value, "a");
  EXPECT_EQ(map.Find(0x1080, 0x80)->second.value, "a");
  EXPECT_EQ(map.Find(0x2000, 0x10)->second.value, "b");
  EXPECT_EQ(map.Find(0x1080, 0x81), map.end());  // runs past the end
  EXPECT_EQ(map.Find(0x1100), map.end());        // one past
  EXPECT_EQ(map.Find(0xfff), map.end());         // before the first
  EXPECT_EQ(map.Find(0x1800), map.end());        // in the gap
  EXPECT_EQ(map.Find(0x1000, 0)->second.value, "a");  // empty spans count as one byte
}

TEST(RangeMapTest, SizesNearTheTopOfTheAddressSpaceDoNotWrap) {
  RangeMap<int> map;
  ASSERT_TRUE(map.Insert(0x1000, 0x100, 1));
  EXPECT_EQ(map.Find(0x1010, UINT64_MAX), map.end());
  EXPECT_EQ(map.Find(0x1010, UINT64_MAX - 0x1000), map.end());
  EXPECT_FALSE(map.Insert(UINT64_MAX - 4, 16, 2));  // wraps around
  EXPECT_TRUE(map.Insert(UINT64_MAX - 16, 16, 3));
  EXPECT_EQ(map.Find(UINT64_MAX - 1)->second.value, 3);
  EXPECT_EQ(map.Find(UINT64_MAX - 1, 2), map.end());  // would reach 2^64
}

TEST(RangeMapTest, RefusesEmptyAndOverlappingRanges) {
  RangeMap<int> map;
  ASSERT_TRUE(map.Insert(0x1000, 0x100, 1));
  EXPECT_FALSE(map.Insert(0x3000, 0, 2));
  EXPECT_FALSE(map.Insert(0x1000, 1, 2));   // same base
  EXPECT_FALSE(map.Insert(0x10ff, 1, 2));   // inside
  EXPECT_FALSE(map.Insert(0xf00, 0x101, 2));  // reaches into it
  EXPECT_TRUE(map.Insert(0xf00, 0x100, 2));   // ends where it begins
  EXPECT_TRUE(map.Insert(0x1100, 0x100, 3));  // begins where it ends
  EXPECT_EQ(map.size(), 3u);
  EXPECT_EQ(map.Find(0xfff)->second.value, 2);
  EXPECT_EQ(map.Find(0x1100)->second.value, 3);
}

TEST(RangeMapTest, EraseByBaseAndIterator) {
  RangeMap<int> map;
  ASSERT_TRUE(map.Insert(0x1000, 0x100, 1));
  ASSERT_TRUE(map.Insert(0x2000, 0x100, 2));
  EXPECT_EQ(map.erase(0x1001), 0u);  // only exact bases
  EXPECT_EQ(map.erase(0x1000), 1u);
  EXPECT_FALSE(map.Contains(0x1000));
  auto it = map.FindBase(0x2000);
  ASSERT_NE(it, map.end());
  map.erase(it);
  EXPECT_TRUE(map.empty());
}

}  // namespace
}  // namespace pvgpu
