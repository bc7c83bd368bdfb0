#include "common/md2.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pvgpu {
namespace {

std::string Hex(const Md2Digest& digest) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : digest) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::vector<uint8_t> Bytes(std::string_view text) { return {text.begin(), text.end()}; }

// RFC 1319, appendix A.5: the test suite, all seven.
TEST(Md2Test, MatchesTheRfcTestSuite) {
  EXPECT_EQ(Hex(Md2Of("")), "8350e5a3e24c153df2275c9f80692773");
  EXPECT_EQ(Hex(Md2Of("a")), "32ec01ec4a6dac72c0ab96fb34c0b5d1");
  EXPECT_EQ(Hex(Md2Of("abc")), "da853b0d3f88d99b30283a69e6ded6bb");
  EXPECT_EQ(Hex(Md2Of("message digest")), "ab4f496bfb2a530b219ff33031fe06b0");
  EXPECT_EQ(Hex(Md2Of("abcdefghijklmnopqrstuvwxyz")), "4e8ddff3650292ab5a4108c3aa47940b");
  EXPECT_EQ(Hex(Md2Of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")),
            "da33def2a42df13975352846c30338cd");
  EXPECT_EQ(Hex(Md2Of("1234567890123456789012345678901234567890"
                      "1234567890123456789012345678901234567890")),
            "d5976f79d83d3a0dc9806c3c66f3efd8");
}

// However a message is cut into Update calls (across, at and inside block boundaries), the
// digest is that of the whole.
TEST(Md2Test, IncrementalUpdatesEqualOneShot) {
  std::string message;
  for (int i = 0; i < 100; ++i) message += static_cast<char>('A' + i % 53);
  const Md2Digest whole = Md2Of(message);
  for (size_t chunk : {1u, 3u, 15u, 16u, 17u, 33u}) {
    Md2 md2;
    for (size_t at = 0; at < message.size(); at += chunk) {
      md2.Update(std::string_view(message).substr(at, chunk));
    }
    EXPECT_EQ(Hex(md2.Final()), Hex(whole)) << "chunks of " << chunk;
  }
}

// A message that fills whole blocks still gets a full block of padding.
TEST(Md2Test, WholeBlocksAreStillPadded) {
  EXPECT_NE(Hex(Md2Of("0123456789abcdef")), Hex(Md2Of("0123456789abcde")));
  EXPECT_NE(Hex(Md2Of(std::string(16, '\x10'))), Hex(Md2Of("")));
}

// HMAC is defined by its construction; checked here against the construction written out with
// the plain hash, for a key of exactly one block (the runtime's case), a short key (zero-padded)
// and a long key (hashed first).
TEST(HmacMd2Test, IsTheRfc2104ConstructionOverMd2) {
  const std::vector<uint8_t> message = Bytes("what do ya want for nothing?");
  const std::vector<std::vector<uint8_t>> keys = {{0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                                   0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f},
                                                  Bytes("Jefe"),
                                                  std::vector<uint8_t>(80, 0xaa)};
  for (const auto& key : keys) {
    std::vector<uint8_t> k = key;
    if (k.size() > 16) {
      const Md2Digest hashed = Md2Of(k);
      k.assign(hashed.begin(), hashed.end());
    }
    k.resize(16, 0);
    std::vector<uint8_t> inner_input, outer_input;
    for (uint8_t b : k) inner_input.push_back(b ^ 0x36);
    inner_input.insert(inner_input.end(), message.begin(), message.end());
    const Md2Digest inner = Md2Of(inner_input);
    for (uint8_t b : k) outer_input.push_back(b ^ 0x5c);
    outer_input.insert(outer_input.end(), inner.begin(), inner.end());
    EXPECT_EQ(Hex(HmacMd2(key, message)), Hex(Md2Of(outer_input))) << "key of " << key.size();
  }
}

// Fixed answers, computed by an independent transcription of RFC 1319's prose (in Python), so
// that a mistake shared by Md2 and the construction above cannot pass unnoticed.
TEST(HmacMd2Test, MatchesAnIndependentImplementation) {
  const std::vector<uint8_t> runtime_key = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                            0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};
  EXPECT_EQ(Hex(HmacMd2(runtime_key, Bytes("abc"))), "815f118c9ab33645d4222c484070ab79");
  EXPECT_EQ(Hex(HmacMd2(Bytes("Jefe"), Bytes("what do ya want for nothing?"))),
            "292f9d34f9e311846de86c495d7adfa2");
  EXPECT_EQ(Hex(HmacMd2(std::vector<uint8_t>(80, 0xaa),
                        Bytes("Test Using Larger Than Block-Size Key - Hash Key First"))),
            "615b1c392f5aaeeeab7e82572e6395d5");
}

}  // namespace
}  // namespace pvgpu
