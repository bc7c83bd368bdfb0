// The integrity check's message and answer, against values computed independently (by a Python
// transcription of the layout in docs/cudart.md and of RFC 1319), so that a layout mistake here
// cannot hide behind the same mistake in a test helper.
#include "guest/cuda/integrity_message.h"

#include <gtest/gtest.h>

#include <string>

namespace pvgpu::guest {
namespace {

std::string Hex(const uint8_t* bytes, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  return out;
}

IntegrityInputs Inputs() {
  IntegrityInputs in;
  in.driver_version = 13000;
  in.version = 13002;
  in.pid = 0x1234;
  in.thread = 0xdeadbeef;
  in.cudart_table = 0x00007f0011223344;
  in.integrity_table = 0x00007f0055667788;
  in.check_function = 0x00007f00aabbccdd;
  in.unix_seconds = 1700000000;
  return in;
}

TEST(IntegrityMessageTest, HeaderIsPackedLittleEndian) {
  const std::vector<uint8_t> message = IntegrityMessage(Inputs());
  ASSERT_EQ(message.size(), 48u);
  EXPECT_EQ(Hex(message.data(), message.size()),
            "c8320000"
            "ca320000"
            "34120000"
            "efbeadde"  // versions, pid, thread
            "44332211007f0000"
            "88776655007f0000"  // the two tables
            "ddccbbaa007f0000"
            "00f1536500000000");  // slot 1, seconds
}

TEST(IntegrityMessageTest, DevicesFollowInOrder) {
  IntegrityInputs in = Inputs();
  IntegrityDevice a, b;
  for (int i = 0; i < 16; ++i) {
    a.uuid[i] = static_cast<uint8_t>(i);
    b.uuid[i] = static_cast<uint8_t>(0xf0 + i);
  }
  a.pci_bus = 0xc0;
  b.pci_domain = 1;
  b.pci_bus = 0xc1;
  b.pci_device = 2;
  in.devices = {a, b};
  const std::vector<uint8_t> message = IntegrityMessage(in);
  ASSERT_EQ(message.size(), 48u + 2 * 28u);
  EXPECT_EQ(Hex(message.data() + 48, 56),
            "000102030405060708090a0b0c0d0e0f"
            "00000000"
            "c0000000"
            "00000000"
            "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
            "01000000"
            "c1000000"
            "02000000");
  const Md2Digest answer = IntegrityAnswer(in);
  EXPECT_EQ(Hex(answer.data(), answer.size()), "ea0e3abeae0fa257763e70c47e815507");
}

TEST(IntegrityMessageTest, AnswerDependsOnEveryField) {
  const Md2Digest base = IntegrityAnswer(Inputs());
  EXPECT_EQ(Hex(base.data(), base.size()), "ac4bf5a0fa979d7e5774d0edd5d3b535");
  // The runtime's own negative controls: any one of these changed must change the answer.
  auto changed = [&](auto mutate) {
    IntegrityInputs in = Inputs();
    mutate(in);
    return IntegrityAnswer(in) != base;
  };
  EXPECT_TRUE(changed([](IntegrityInputs& in) { in.pid += 1; }));
  EXPECT_TRUE(changed([](IntegrityInputs& in) { in.thread += 1; }));
  EXPECT_TRUE(changed([](IntegrityInputs& in) { std::swap(in.cudart_table, in.integrity_table); }));
  EXPECT_TRUE(changed([](IntegrityInputs& in) { in.unix_seconds += 1; }));
  EXPECT_TRUE(changed([](IntegrityInputs& in) { in.driver_version = 12090; }));
  EXPECT_TRUE(changed([](IntegrityInputs& in) { in.devices.push_back({}); }));
}

}  // namespace
}  // namespace pvgpu::guest
