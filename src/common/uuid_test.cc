#include "common/uuid.h"

#include <gtest/gtest.h>

namespace pvgpu {
namespace {

TEST(Uuid, ParsedTextFormatsBackTheSame) {
  constexpr auto bytes = ParseUuid("6bd5fb6c-5bf4-e74a-8987-d93912fd9df9");
  EXPECT_EQ(bytes[0], 0x6b);
  EXPECT_EQ(bytes[4], 0x5b);
  EXPECT_EQ(bytes[15], 0xf9);
  EXPECT_EQ(FormatUuid(bytes.data(), ""), "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9");
  EXPECT_EQ(FormatUuid(bytes.data()), "GPU-6bd5fb6c-5bf4-e74a-8987-d93912fd9df9");
}

TEST(Uuid, DashesAreOptional) {
  constexpr auto with = ParseUuid("00112233-4455-6677-8899-aabbccddeeff");
  constexpr auto without = ParseUuid("00112233445566778899aabbccddeeff");
  EXPECT_EQ(with, without);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(with[i], i * 0x11) << i;
}

}  // namespace
}  // namespace pvgpu
