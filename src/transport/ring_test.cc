// The shared byte ring on its own, over ordinary memory.
#include "transport/ring.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

namespace pvgpu::transport::internal {
namespace {

constexpr size_t kCapacity = 4096;

struct RingFixture : ::testing::Test {
  SharedWord tail{0};
  SharedWord head{0};
  alignas(64) uint8_t data[kCapacity] = {};
  RingWriter writer{&tail, &head, data, kCapacity};
  RingReader reader{&tail, &head, data, kCapacity, kCapacity / 2};

  void Put(const std::vector<uint8_t>& message) {
    std::span<const uint8_t> parts[] = {message};
    writer.Write(parts, message.size());
  }
};

std::vector<uint8_t> Pattern(size_t size, uint32_t seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(seed * 131 + i * 7);
  return bytes;
}

TEST_F(RingFixture, RoundTripsRandomSizesAcrossTheWrap) {
  std::mt19937 rng(1);
  std::vector<uint8_t> got;
  for (uint32_t i = 0; i < 5000; ++i) {
    const size_t size = (i % 97 == 0) ? kCapacity / 2 : rng() % 700;
    std::vector<uint8_t> message = Pattern(size, i);
    ASSERT_GE(*writer.FreeBytes(), FrameBytes(size));
    Put(message);
    ASSERT_TRUE(reader.HasData());
    StatusOr<bool> read = reader.TryRead(&got);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    ASSERT_TRUE(*read);
    ASSERT_EQ(got, message) << "message " << i;
  }
  EXPECT_FALSE(reader.HasData());
  EXPECT_GT(tail.value, 100 * kCapacity);  // wrapped many times
}

// Bulk bytes written in place by a fill callback arrive as if they had been a part, in one
// piece or, across the ring's end, in two whose offsets tile the range.
TEST_F(RingFixture, FilledMessagesRoundTripAcrossTheWrap) {
  std::mt19937 rng(2);
  std::vector<uint8_t> got;
  int wrapped = 0;
  for (uint32_t i = 0; i < 3000; ++i) {
    const std::vector<uint8_t> head = Pattern(i % 40, i);
    const std::vector<uint8_t> bulk = Pattern(rng() % 1500, i + 7);
    std::span<const uint8_t> parts[] = {head};
    ASSERT_GE(*writer.FreeBytes(), FrameBytes(head.size() + bulk.size()));
    size_t next = 0;
    int pieces = 0;
    Status written = writer.WriteFilled(
        parts, head.size(), bulk.size(), [&](std::span<uint8_t> piece, size_t offset) {
          EXPECT_EQ(offset, next);
          std::memcpy(piece.data(), bulk.data() + offset, piece.size());
          next += piece.size();
          ++pieces;
          return Status::Ok();
        });
    ASSERT_TRUE(written.ok()) << written.ToString();
    EXPECT_EQ(next, bulk.size());
    EXPECT_LE(pieces, 2);
    wrapped += pieces == 2;
    ASSERT_TRUE(*reader.TryRead(&got));
    std::vector<uint8_t> expected = head;
    expected.insert(expected.end(), bulk.begin(), bulk.end());
    ASSERT_EQ(got, expected) << "message " << i;
  }
  EXPECT_GT(tail.value, 100 * kCapacity);
  EXPECT_GT(wrapped, 10);  // the two-piece case happened
}

// A visited message is the same bytes TryRead would copy, shown in place: one piece, or two
// across the ring's end; its space is freed after the visit.
TEST_F(RingFixture, VisitShowsMessagesInPlaceAcrossTheWrap) {
  std::mt19937 rng(4);
  int wrapped = 0;
  for (uint32_t i = 0; i < 3000; ++i) {
    const std::vector<uint8_t> message = Pattern(rng() % 1500, i);
    ASSERT_GE(*writer.FreeBytes(), FrameBytes(message.size()));
    Put(message);
    std::vector<uint8_t> seen;
    StatusOr<bool> visited =
        reader.TryVisit([&](std::span<const uint8_t> first, std::span<const uint8_t> second) {
          EXPECT_GE(first.data(), data);
          EXPECT_LE(first.data() + first.size(), data + kCapacity);
          if (!second.empty()) {
            ++wrapped;
            EXPECT_EQ(second.data(), data);
            EXPECT_EQ(first.data() + first.size(), data + kCapacity);
          }
          seen.assign(first.begin(), first.end());
          seen.insert(seen.end(), second.begin(), second.end());
        });
    ASSERT_TRUE(visited.ok()) << visited.status().ToString();
    ASSERT_TRUE(*visited);
    ASSERT_EQ(seen, message) << "message " << i;
    EXPECT_EQ(*writer.FreeBytes(), kCapacity);
  }
  EXPECT_GT(wrapped, 10);
  StatusOr<bool> empty = reader.TryVisit([](auto, auto) { ADD_FAILURE() << "visited nothing"; });
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(*empty);
}

// A fill that fails publishes nothing: the reader sees the next message as if the failed one
// had never been started, and no space is lost.
TEST_F(RingFixture, FailedFillPublishesNothing) {
  const std::vector<uint8_t> head = Pattern(8, 1);
  std::span<const uint8_t> parts[] = {head};
  Status written = writer.WriteFilled(parts, head.size(), 100, [](std::span<uint8_t>, size_t) {
    return Error(Code::kIllegalAddress, "device read failed");
  });
  EXPECT_EQ(written.code(), Code::kIllegalAddress);
  EXPECT_FALSE(reader.HasData());
  EXPECT_EQ(*writer.FreeBytes(), kCapacity);
  const std::vector<uint8_t> next = Pattern(20, 2);
  Put(next);
  std::vector<uint8_t> got;
  ASSERT_TRUE(*reader.TryRead(&got));
  EXPECT_EQ(got, next);
}

TEST_F(RingFixture, MultiPartMessagesAreConcatenated) {
  std::vector<uint8_t> a = Pattern(5, 1), b, c = Pattern(11, 2);
  std::span<const uint8_t> parts[] = {a, b, c};
  writer.Write(parts, 16);
  std::vector<uint8_t> got;
  ASSERT_TRUE(*reader.TryRead(&got));
  std::vector<uint8_t> expected = a;
  expected.insert(expected.end(), c.begin(), c.end());
  EXPECT_EQ(got, expected);
}

TEST_F(RingFixture, FreeSpaceShrinksUntilTheReaderCatchesUp) {
  EXPECT_EQ(*writer.FreeBytes(), kCapacity);
  Put(Pattern(100, 0));  // frame 104
  EXPECT_EQ(*writer.FreeBytes(), kCapacity - FrameBytes(100));
  while (*writer.FreeBytes() >= FrameBytes(100)) Put(Pattern(100, 0));
  std::vector<uint8_t> got;
  ASSERT_TRUE(*reader.TryRead(&got));
  EXPECT_GE(*writer.FreeBytes(), FrameBytes(100));
}

// The producer trusts the space it last saw and rereads the consumer's head only when that runs
// out, so a consumer racing ahead does not pull the head's cache line over for every message.
TEST_F(RingFixture, KnownFreeSpaceIsALowerBoundRefreshedByFreeBytes) {
  EXPECT_EQ(writer.KnownFreeBytes(), kCapacity);
  Put(Pattern(100, 0));
  EXPECT_EQ(writer.KnownFreeBytes(), kCapacity - FrameBytes(100));
  std::vector<uint8_t> got;
  ASSERT_TRUE(*reader.TryRead(&got));
  EXPECT_EQ(writer.KnownFreeBytes(), kCapacity - FrameBytes(100));  // not reread yet
  EXPECT_EQ(*writer.FreeBytes(), kCapacity);
  EXPECT_EQ(writer.KnownFreeBytes(), kCapacity);
}

TEST_F(RingFixture, HeadMovingBackIsCorrupt) {
  Put(Pattern(100, 0));
  Put(Pattern(100, 1));
  std::vector<uint8_t> got;
  ASSERT_TRUE(*reader.TryRead(&got));
  ASSERT_TRUE(*reader.TryRead(&got));
  ASSERT_EQ(*writer.FreeBytes(), kCapacity);
  head.value -= FrameBytes(100);  // within the ring, but behind what was already freed
  StatusOr<size_t> free = writer.FreeBytes();
  ASSERT_FALSE(free.ok());
  EXPECT_EQ(free.status().code(), Code::kInvalidValue);
  EXPECT_NE(free.status().message().find("corrupt ring"), std::string::npos);
}

// Frames already published stay readable one by one without rereading the tail; the ones
// published later are found once those are used up.
TEST_F(RingFixture, ReaderTakesEveryFramePublishedInOneBatchAndThenTheNext) {
  for (uint32_t i = 0; i < 3; ++i) Put(Pattern(40 + i, i));
  std::vector<uint8_t> got;
  ASSERT_TRUE(*reader.TryRead(&got));
  EXPECT_EQ(got, Pattern(40, 0));
  Put(Pattern(99, 9));
  for (uint32_t i = 1; i < 3; ++i) {
    ASSERT_TRUE(*reader.TryRead(&got));
    EXPECT_EQ(got, Pattern(40 + i, i));
  }
  ASSERT_TRUE(*reader.TryRead(&got));
  EXPECT_EQ(got, Pattern(99, 9));
  EXPECT_FALSE(*reader.TryRead(&got));
}

TEST_F(RingFixture, EmptyRingReadsNothing) {
  std::vector<uint8_t> got;
  StatusOr<bool> read = reader.TryRead(&got);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(*read);
}

void ExpectCorrupt(RingReader& reader, const char* what) {
  std::vector<uint8_t> got;
  StatusOr<bool> read = reader.TryRead(&got);
  ASSERT_FALSE(read.ok()) << what;
  EXPECT_EQ(read.status().code(), Code::kInvalidValue);
  EXPECT_NE(read.status().message().find("corrupt ring"), std::string::npos)
      << read.status().message();
}

TEST_F(RingFixture, RejectsTailTooFarAhead) {
  tail.value = kCapacity + 8;
  ExpectCorrupt(reader, "tail past capacity");
}

TEST_F(RingFixture, RejectsTailBehindHead) {
  tail.value = ~uint64_t{0} - 7;  // "negative" distance
  ExpectCorrupt(reader, "tail behind head");
}

TEST_F(RingFixture, RejectsPartialFrames) {
  tail.value = 12;
  ExpectCorrupt(reader, "not a multiple of 8");
}

TEST_F(RingFixture, RejectsHugeLength) {
  Put(Pattern(8, 0));
  uint32_t huge = 0xFFFFFFF0u;
  std::memcpy(data, &huge, sizeof(huge));
  ExpectCorrupt(reader, "huge length");
}

TEST_F(RingFixture, RejectsLengthBeyondPublishedBytes) {
  Put(Pattern(8, 0));  // frame of 16 bytes published
  uint32_t longer = 100;
  std::memcpy(data, &longer, sizeof(longer));
  ExpectCorrupt(reader, "length past tail");
}

TEST_F(RingFixture, WriterRejectsImpossibleHead) {
  head.value = 64;  // ahead of our tail of 0
  StatusOr<size_t> free = writer.FreeBytes();
  ASSERT_FALSE(free.ok());
  EXPECT_EQ(free.status().code(), Code::kInvalidValue);
}

TEST_F(RingFixture, ReaderIgnoresRewrittenHeadWord) {
  Put(Pattern(10, 3));
  head.value = 12345;  // the peer scribbles on our index: we keep our own
  std::vector<uint8_t> got;
  ASSERT_TRUE(*reader.TryRead(&got));
  EXPECT_EQ(got, Pattern(10, 3));
}

}  // namespace
}  // namespace pvgpu::transport::internal
