#include "protocol/link_image.h"

#include <gtest/gtest.h>

#include <cstring>

namespace pvgpu::protocol {
namespace {

TEST(LinkImage, RoundTripsInputsInOrder) {
  const std::string ptx = ".version 9.0\n.target sm_75\n";
  const std::string fatbin(37, '\x7f');
  const LinkInput inputs[] = {{LinkInputType::kPtx, "kernels.ptx", ptx},
                              {LinkInputType::kFatbin, "", fatbin}};
  std::vector<uint8_t> image = EncodeLinkImage(inputs);
  ASSERT_TRUE(IsLinkImage(image.data()));
  EXPECT_EQ(LinkImageSize(image.data()), image.size());
  EXPECT_EQ(image.size() % 8, 0u);
  auto decoded = DecodeLinkImage(image);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded->size(), 2u);
  EXPECT_EQ((*decoded)[0].type, LinkInputType::kPtx);
  EXPECT_EQ((*decoded)[0].name, "kernels.ptx");
  EXPECT_EQ((*decoded)[0].data, ptx);
  EXPECT_EQ((*decoded)[1].type, LinkInputType::kFatbin);
  EXPECT_EQ((*decoded)[1].name, "");
  EXPECT_EQ((*decoded)[1].data, fatbin);
}

TEST(LinkImage, RejectsEveryTruncation) {
  const LinkInput inputs[] = {{LinkInputType::kPtx, "a", "abc"}, {LinkInputType::kPtx, "b", "de"}};
  std::vector<uint8_t> image = EncodeLinkImage(inputs);
  for (size_t n = 0; n < image.size(); ++n) {
    auto decoded = DecodeLinkImage({image.data(), n});
    EXPECT_FALSE(decoded.ok()) << "accepted a prefix of " << n << " bytes";
  }
}

TEST(LinkImage, RejectsHostileHeaders) {
  const LinkInput inputs[] = {{LinkInputType::kPtx, "a", "abc"}};
  const std::vector<uint8_t> good = EncodeLinkImage(inputs);
  auto with = [&](size_t offset, auto value) {
    std::vector<uint8_t> bad = good;
    std::memcpy(bad.data() + offset, &value, sizeof(value));
    return DecodeLinkImage(bad);
  };
  EXPECT_FALSE(with(8, uint32_t{2}).ok());                   // version
  EXPECT_FALSE(with(12, uint32_t{0}).ok());                  // no inputs
  EXPECT_FALSE(with(12, uint32_t{2}).ok());                  // more records than bytes
  EXPECT_FALSE(with(12, uint32_t{kMaxLinkInputs + 1}).ok());  // count limit
  EXPECT_FALSE(with(16, uint64_t{1} << 62).ok());            // total past the image
  EXPECT_FALSE(with(24, uint32_t{9}).ok());                  // input type
  EXPECT_FALSE(with(28, uint32_t{0xffffffffu}).ok());        // name size
  EXPECT_FALSE(with(32, uint64_t{0xfffffffffffffff0u}).ok());  // data size (wraps if added)
  std::vector<uint8_t> trailing = good;
  trailing.resize(trailing.size() + 8, 0);
  uint64_t total = trailing.size();
  std::memcpy(trailing.data() + 16, &total, sizeof(total));
  EXPECT_FALSE(DecodeLinkImage(trailing).ok());
}

}  // namespace
}  // namespace pvgpu::protocol
