// The in-process pair must behave like the Unix channel where callers can tell.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "transport/channel.h"

namespace pvgpu::transport {
namespace {

TEST(InProcessTest, MessagesFlowBothWaysInOrder) {
  auto [a, b] = CreateInProcessPair(1024);
  for (uint8_t i = 0; i < 100; ++i) ASSERT_TRUE(a->Send(std::vector<uint8_t>(i, i)).ok());
  std::vector<uint8_t> x = {1}, y = {2, 3};
  std::span<const uint8_t> parts[] = {x, y};
  ASSERT_TRUE(b->Send(parts).ok());
  std::vector<uint8_t> got;
  for (uint8_t i = 0; i < 100; ++i) {
    ASSERT_TRUE(b->Receive(&got, 0).ok());
    ASSERT_EQ(got, std::vector<uint8_t>(i, i));
  }
  ASSERT_TRUE(a->Receive(&got, 0).ok());
  EXPECT_EQ(got, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(a->Describe(), "inprocess");
}

// Channels without a ring of their own fill a staging buffer and send it (Endpoint's default).
TEST(InProcessTest, FilledMessagesAreStagedAndSent) {
  auto [a, b] = CreateInProcessPair(1024);
  const std::vector<uint8_t> head = {9, 8};
  std::span<const uint8_t> parts[] = {head};
  ASSERT_TRUE(a->SendFilled(parts, 5, [](std::span<uint8_t> piece, size_t offset) {
                 for (size_t i = 0; i < piece.size(); ++i) piece[i] = offset + i;
                 return Status::Ok();
               }).ok());
  EXPECT_EQ(a->SendFilled(parts, 5,
                          [](std::span<uint8_t>, size_t) {
                            return Error(Code::kIllegalAddress, "fill failed");
                          })
                .code(),
            Code::kIllegalAddress);
  std::vector<uint8_t> got;
  ASSERT_TRUE(b->Receive(&got, 0).ok());
  EXPECT_EQ(got, (std::vector<uint8_t>{9, 8, 0, 1, 2, 3, 4}));
  EXPECT_EQ(b->Receive(&got, 0).code(), Code::kNotReady);
}

// Channels without a ring show the message received into the caller's scratch buffer.
TEST(InProcessTest, ReceiveViewShowsTheScratchCopy) {
  auto [a, b] = CreateInProcessPair(1024);
  ASSERT_TRUE(a->Send(std::vector<uint8_t>{4, 5, 6}).ok());
  std::vector<uint8_t> scratch;
  MessageView seen;
  ASSERT_TRUE(b->ReceiveView(
                   &scratch, [&](const MessageView& view) { seen = view; }, 0)
                  .ok());
  EXPECT_EQ(scratch, (std::vector<uint8_t>{4, 5, 6}));
  EXPECT_EQ(seen.first.data(), scratch.data());
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_TRUE(seen.second.empty());
  uint8_t tail[2];
  seen.Tail(1).CopyPrefix(tail, 2);
  EXPECT_EQ(tail[0], 5);
  EXPECT_EQ(tail[1], 6);
}

TEST(MessageViewTest, TailAndCopyAcrossTwoPieces) {
  const uint8_t a[] = {1, 2, 3}, b[] = {4, 5};
  const MessageView view{a, b};
  EXPECT_EQ(view.size(), 5u);
  uint8_t out[5] = {};
  view.CopyPrefix(out, 5);
  EXPECT_EQ(std::vector<uint8_t>(out, out + 5), (std::vector<uint8_t>{1, 2, 3, 4, 5}));
  const MessageView from2 = view.Tail(2);
  EXPECT_EQ(from2.size(), 3u);
  from2.CopyPrefix(out, 3);
  EXPECT_EQ(std::vector<uint8_t>(out, out + 3), (std::vector<uint8_t>{3, 4, 5}));
  const MessageView from4 = view.Tail(4);
  EXPECT_EQ(from4.size(), 1u);
  from4.CopyPrefix(out, 1);
  EXPECT_EQ(out[0], 5);
  EXPECT_EQ(view.Tail(5).size(), 0u);
  view.Tail(5).CopyPrefix(out, 0);  // nothing to copy, and no null pointer handed to memcpy
}

TEST(InProcessTest, EnforcesMaxMessageSizeAndTimesOut) {
  auto [a, b] = CreateInProcessPair(16);
  EXPECT_EQ(a->max_message_size(), 16u);
  EXPECT_EQ(a->Send(std::vector<uint8_t>(17)).code(), Code::kInvalidValue);
  EXPECT_TRUE(a->Send(std::vector<uint8_t>(16)).ok());
  std::vector<uint8_t> got;
  EXPECT_TRUE(b->Receive(&got, 0).ok());
  EXPECT_EQ(b->Receive(&got, 20).code(), Code::kNotReady);
}

TEST(InProcessTest, FenceWakesWaiter) {
  auto [guest, host] = CreateInProcessPair();
  EXPECT_EQ(guest->WaitFence(1, 10).code(), Code::kNotReady);
  std::thread publisher([&, &host = host] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    host->PublishFence(3);
  });
  EXPECT_TRUE(guest->WaitFence(3, 5000).ok());
  EXPECT_EQ(guest->ReadFence(), 3u);
  publisher.join();
}

TEST(InProcessTest, CloseDrainsThenFailsThePeer) {
  auto [a, b] = CreateInProcessPair();
  ASSERT_TRUE(a->Send(std::vector<uint8_t>{7}).ok());
  a->Close();
  std::vector<uint8_t> got;
  EXPECT_TRUE(b->Receive(&got, 0).ok()) << "what was sent before Close still arrives";
  EXPECT_EQ(b->Receive(&got, -1).code(), Code::kDeviceUnavailable);
  EXPECT_EQ(b->Send(std::vector<uint8_t>{1}).code(), Code::kDeviceUnavailable);
  EXPECT_EQ(b->WaitFence(1, -1).code(), Code::kDeviceUnavailable);
  EXPECT_EQ(b->ReceiveFd(-1).status().code(), Code::kDeviceUnavailable);
  EXPECT_EQ(a->Send(std::vector<uint8_t>{1}).code(), Code::kDeviceUnavailable);
}

TEST(InProcessTest, DestroyingOneEndWakesABlockedPeer) {
  auto [a, b] = CreateInProcessPair();
  std::thread closer([&, &a = a] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    a.reset();
  });
  std::vector<uint8_t> got;
  EXPECT_EQ(b->Receive(&got, 5000).code(), Code::kDeviceUnavailable);
  closer.join();
}

TEST(InProcessTest, PassesDuplicatedFds) {
  auto [a, b] = CreateInProcessPair();
  int fd = ::memfd_create("inproc", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "hello", 5), 5);
  ASSERT_TRUE(a->SendFd(fd).ok());
  ::close(fd);  // the sender keeps no claim on the receiver's copy
  StatusOr<int> got = b->ReceiveFd(100);
  ASSERT_TRUE(got.ok());
  char buf[6] = {};
  ASSERT_EQ(::pread(*got, buf, 5, 0), 5);
  EXPECT_STREQ(buf, "hello");
  ::close(*got);
  EXPECT_EQ(b->ReceiveFd(10).status().code(), Code::kNotReady);
}

}  // namespace
}  // namespace pvgpu::transport
