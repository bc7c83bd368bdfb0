#include "guest/pci_bus_id.h"

#include <gtest/gtest.h>

namespace pvgpu::guest {
namespace {

PciBusId Parsed(std::string_view text, bool function_optional) {
  PciBusId id{9, 9, 9, 9};
  EXPECT_TRUE(ParsePciBusId(text, function_optional, &id)) << text;
  return id;
}

TEST(PciBusIdTest, TheFormsCudaPrintsAndAccepts) {
  PciBusId id = Parsed("00000000:C0:00.0", false);
  EXPECT_EQ(id.domain, 0u);
  EXPECT_EQ(id.bus, 0xc0u);
  EXPECT_EQ(id.device, 0u);
  EXPECT_EQ(id.function, 0u);
  id = Parsed("0002:c1:1f.3", false);
  EXPECT_EQ(id.domain, 2u);
  EXPECT_EQ(id.bus, 0xc1u);
  EXPECT_EQ(id.device, 0x1fu);
  EXPECT_EQ(id.function, 3u);
  id = Parsed("c2:04.0", false);
  EXPECT_EQ(id.domain, 0u);
  EXPECT_EQ(id.bus, 0xc2u);
  EXPECT_EQ(id.device, 4u);
  // DOMAIN:BUS:DEVICE, without the function, only where CUDA accepts it.
  id = Parsed("1:c3:2", true);
  EXPECT_EQ(id.domain, 1u);
  EXPECT_EQ(id.bus, 0xc3u);
  EXPECT_EQ(id.device, 2u);
  EXPECT_EQ(id.function, 0u);
  PciBusId unused;
  EXPECT_FALSE(ParsePciBusId("1:c3:2", false, &unused));
}

TEST(PciBusIdTest, MalformedIdsAreRefused) {
  PciBusId id{7, 7, 7, 7};
  for (bool optional : {false, true}) {
    for (std::string_view bad : {"", "c0", "c0:00", ":00.0", "c0:.0", "c0:00.", "zz:00.0",
                                 "1:2:3:4.0", "0:c0:00.0.0", "123456789:00:00.0", "c0:00.0 "}) {
      EXPECT_FALSE(ParsePciBusId(bad, optional, &id)) << bad << " " << optional;
    }
  }
  EXPECT_EQ(id.domain, 7u);  // untouched by a failed parse
}

}  // namespace
}  // namespace pvgpu::guest
