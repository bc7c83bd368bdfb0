// The remote channel's frame decoder: frames split anywhere, bodies read in place, and every
// way a peer can break the framing.
#include "transport/stream_frames.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace pvgpu::transport::internal {
namespace {

constexpr size_t kMax = 1u << 20;

std::vector<uint8_t> Bytes(size_t size, uint8_t seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(seed + i * 7);
  return bytes;
}

// A stream of every kind of frame, and what decoding it must give.
struct Stream {
  ByteBuffer bytes;
  std::vector<std::vector<uint8_t>> messages;
};

Stream MixedStream() {
  Stream s;
  for (size_t size : {size_t{0}, size_t{1}, size_t{300}, size_t{70000}, kMax}) {
    s.messages.push_back(Bytes(size, static_cast<uint8_t>(size)));
    const std::span<const uint8_t> part(s.messages.back());
    s.bytes.AppendFrame(kMessage, {&part, 1});
    s.bytes.AppendFrame(kHeartbeat, {});
  }
  s.bytes.AppendValueFrame(kFence, 41);
  s.bytes.AppendValueFrame(kFence, 40);  // the largest wins, not the last
  s.bytes.AppendValueFrame(kFenceWanted, 7);
  s.bytes.AppendFrame(kGoodbye, {});
  return s;
}

void ExpectDecoded(const Stream& s, const FrameDecoder::Output& out) {
  ASSERT_EQ(out.messages.size(), s.messages.size());
  for (size_t i = 0; i < s.messages.size(); ++i) EXPECT_EQ(out.messages[i], s.messages[i]) << i;
  EXPECT_EQ(out.fence, 41u);
  EXPECT_EQ(out.fences_wanted, std::vector<uint64_t>{7});
  EXPECT_TRUE(out.goodbye);
}

TEST(FrameDecoder, WholeStreamAtOnce) {
  const Stream s = MixedStream();
  FrameDecoder decoder(kMax);
  FrameDecoder::Output out;
  ASSERT_TRUE(decoder.Feed({s.bytes.data(), s.bytes.size()}, &out).ok());
  ExpectDecoded(s, out);
  EXPECT_TRUE(decoder.at_boundary());
}

TEST(FrameDecoder, PiecesOfEverySizeAndDirectReads) {
  const Stream s = MixedStream();
  std::mt19937 random(5);
  for (int trial = 0; trial < 20; ++trial) {
    FrameDecoder decoder(kMax);
    FrameDecoder::Output out;
    size_t at = 0;
    while (at < s.bytes.size()) {
      const size_t left = s.bytes.size() - at;
      // Where a body can be read in place, do so now and then (as the endpoint does).
      std::span<uint8_t> direct = decoder.DirectTarget(1024);
      if (!direct.empty() && random() % 2 == 0) {
        const size_t n = std::min<size_t>(direct.size(), 1 + random() % 100000);
        std::memcpy(direct.data(), s.bytes.data() + at, n);
        ASSERT_TRUE(decoder.Filled(n, &out).ok());
        at += n;
        continue;
      }
      const size_t n = std::min<size_t>(left, trial == 0 ? 1 : 1 + random() % 9000);
      ASSERT_TRUE(decoder.Feed({s.bytes.data() + at, n}, &out).ok());
      at += n;
    }
    ExpectDecoded(s, out);
  }
}

TEST(FrameDecoder, BodiesComeFromTheAllocator) {
  size_t asked = 0;
  FrameDecoder decoder(kMax, [&](size_t size) {
    asked += size;
    return std::vector<uint8_t>(size, 0xee);  // stale contents must be overwritten
  });
  const Stream s = MixedStream();
  FrameDecoder::Output out;
  ASSERT_TRUE(decoder.Feed({s.bytes.data(), s.bytes.size()}, &out).ok());
  ExpectDecoded(s, out);
  EXPECT_GE(asked, kMax);
}

Status FeedHeader(uint32_t length, uint32_t type, FrameDecoder* decoder) {
  const FrameHeader header{length, type};
  FrameDecoder::Output out;
  return decoder->Feed({reinterpret_cast<const uint8_t*>(&header), sizeof(header)}, &out);
}

TEST(FrameDecoder, BrokenFramingIsRefusedAndStaysRefused) {
  const struct {
    uint32_t length;
    uint32_t type;
  } bad[] = {
      {kMax + 1, kMessage},     // over the limit
      {0xffffffffu, kMessage},  // a 4 GiB claim
      {4, kFence},              // fence of the wrong size
      {0, kFenceWanted},
      {1, kHeartbeat},  // empty frames with a body
      {8, kGoodbye},
      {0, 0},  // unknown types
      {0, 6},
      {8, 0xffffffffu},
  };
  for (const auto& frame : bad) {
    FrameDecoder decoder(kMax);
    const Status status = FeedHeader(frame.length, frame.type, &decoder);
    EXPECT_EQ(status.code(), Code::kInvalidValue) << frame.type << "/" << frame.length;
    EXPECT_NE(status.message().find("corrupt"), std::string::npos) << status.message();
    EXPECT_TRUE(decoder.failed());
    // Nothing more is accepted, not even a valid frame.
    EXPECT_FALSE(FeedHeader(0, kHeartbeat, &decoder).ok());
    EXPECT_TRUE(decoder.DirectTarget(0).empty());
  }
}

TEST(FrameDecoder, DirectReadsCannotOverrunTheFrame) {
  FrameDecoder decoder(kMax);
  ASSERT_TRUE(FeedHeader(100000, kMessage, &decoder).ok());
  const std::span<uint8_t> direct = decoder.DirectTarget(1);
  ASSERT_EQ(direct.size(), 100000u);
  FrameDecoder::Output out;
  EXPECT_FALSE(decoder.Filled(100001, &out).ok());
  EXPECT_TRUE(decoder.failed());
  FrameDecoder idle(kMax);
  EXPECT_TRUE(idle.DirectTarget(0).empty());  // between frames there is no body
  EXPECT_FALSE(idle.Filled(1, &out).ok());
}

TEST(FrameDecoder, SmallRemaindersAreNotOfferedForDirectReads) {
  FrameDecoder decoder(kMax);
  ASSERT_TRUE(FeedHeader(70000, kMessage, &decoder).ok());
  const std::vector<uint8_t> some(69000, 1);
  FrameDecoder::Output out;
  ASSERT_TRUE(decoder.Feed(some, &out).ok());
  EXPECT_TRUE(decoder.DirectTarget(64u << 10).empty());
  EXPECT_EQ(decoder.DirectTarget(1000).size(), 1000u);
}

}  // namespace
}  // namespace pvgpu::transport::internal
