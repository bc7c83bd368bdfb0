// The kernel watcher over a real in-process channel, with kernels that really run on the cpu
// adapter: one that never ends (only a cancel stops it) and launches that end at once.
#include "host/kernel_watcher.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "adapters/registry.h"
#include "protocol/wire.h"

namespace pvgpu::host {
namespace {

// A kernel that spins until it is cancelled.
constexpr char kSpinPtx[] = R"(
.version 7.0
.target sm_52
.address_size 64
.visible .entry spin()
{
$loop:
  bra.uni $loop;
}
)";

template <typename Request>
std::vector<uint8_t> Message(const Request& request, uint64_t seq) {
  protocol::MessageHeader header;
  header.op = static_cast<uint32_t>(Request::kOp);
  header.seq = seq;
  std::vector<uint8_t> bytes(sizeof(header) + sizeof(request));
  std::memcpy(bytes.data(), &header, sizeof(header));
  std::memcpy(bytes.data() + sizeof(header), &request, sizeof(request));
  return bytes;
}

uint32_t OpOf(const std::vector<uint8_t>& message) {
  protocol::MessageHeader header;
  EXPECT_GE(message.size(), sizeof(header));
  std::memcpy(&header, message.data(), sizeof(header));
  return header.op;
}

class KernelWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    adapters::RegistryOptions options;
    options.cpu_threads = 1;  // enough for these kernels, and a fair share of a busy machine
    auto created = adapters::CreateAdapters("cpu:memory=64M", options);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    adapters_ = std::move(created).value();
    auto context = adapters_[0]->CreateContext();
    ASSERT_TRUE(context.ok());
    context_ = std::move(context).value();
    std::string errors, infos;
    auto module = context_->LoadModule(
        adapters::ImageKind::kPtx, {reinterpret_cast<const uint8_t*>(kSpinPtx), sizeof(kSpinPtx)},
        &errors, &infos);
    ASSERT_TRUE(module.ok()) << module.status().ToString() << " " << errors;
    module_ = std::move(module).value();
    auto [guest, host] = transport::CreateInProcessPair();
    guest_ = std::move(guest);
    host_ = std::move(host);
    watcher_ = std::make_unique<KernelWatcher>(1, host_.get());
  }
  void TearDown() override {
    watcher_.reset();
    module_.reset();
    context_.reset();
  }

  // Runs the spinning kernel under the watcher, as context handle `ctx`.
  Status Spin(uint64_t ctx) {
    adapters::LaunchConfig config;
    return watcher_->Run(*context_, ctx, [&] {
      return context_->Launch(*module_, 0, config, {}, [](std::string_view) {});
    });
  }

  std::vector<std::unique_ptr<adapters::Adapter>> adapters_;
  std::unique_ptr<adapters::Context> context_;
  std::unique_ptr<adapters::Module> module_;
  std::unique_ptr<transport::Endpoint> guest_, host_;
  std::unique_ptr<KernelWatcher> watcher_;
};

TEST_F(KernelWatcherTest, GoodbyeCancelsTheKernelAndIsKeptForTheSession) {
  ASSERT_TRUE(guest_->Send(Message(protocol::MemGetInfoRequest{}, 1)).ok());
  ASSERT_TRUE(guest_->Send(Message(protocol::GoodbyeRequest{}, 2)).ok());
  EXPECT_EQ(Spin(7).code(), Code::kLaunchFailed);
  std::vector<uint8_t> message;
  ASSERT_TRUE(watcher_->TakeReadAhead(&message));
  EXPECT_EQ(OpOf(message), static_cast<uint32_t>(protocol::Op::kMemGetInfo));
  ASSERT_TRUE(watcher_->TakeReadAhead(&message));
  EXPECT_EQ(OpOf(message), static_cast<uint32_t>(protocol::Op::kGoodbye));
  EXPECT_FALSE(watcher_->TakeReadAhead(&message));
  EXPECT_TRUE(watcher_->channel_end().ok());
}

TEST_F(KernelWatcherTest, OnlyTheDestroyOfTheKernelsOwnContextCancelsIt) {
  protocol::CtxDestroyRequest other;
  other.ctx = 8;
  ASSERT_TRUE(guest_->Send(Message(other, 1)).ok());
  protocol::CtxDestroyRequest own;
  own.ctx = 7;
  ASSERT_TRUE(guest_->Send(Message(own, 2)).ok());
  protocol::MemGetInfoRequest after;
  ASSERT_TRUE(guest_->Send(Message(after, 3)).ok());
  EXPECT_EQ(Spin(7).code(), Code::kLaunchFailed);
  std::vector<uint8_t> message;
  ASSERT_TRUE(watcher_->TakeReadAhead(&message));  // context 8's destroy did not end it
  ASSERT_TRUE(watcher_->TakeReadAhead(&message));  // context 7's did
  EXPECT_EQ(OpOf(message), static_cast<uint32_t>(protocol::Op::kCtxDestroy));
  // Nothing past the message that ended the kernel was read: it is still in the channel.
  EXPECT_FALSE(watcher_->TakeReadAhead(&message));
  ASSERT_TRUE(host_->Receive(&message, 0).ok());
  EXPECT_EQ(OpOf(message), static_cast<uint32_t>(protocol::Op::kMemGetInfo));
}

TEST_F(KernelWatcherTest, AGuestThatHangsUpCancelsTheKernel) {
  guest_->Close();
  EXPECT_EQ(Spin(7).code(), Code::kLaunchFailed);
  EXPECT_FALSE(watcher_->channel_end().ok());
  std::vector<uint8_t> message;
  EXPECT_FALSE(watcher_->TakeReadAhead(&message));
}

// Whether a launch is read ahead of depends on how long it runs, which a test cannot fix; what
// holds either way is that every message reaches the session once, in order.
TEST_F(KernelWatcherTest, MessagesAroundShortLaunchesArriveOnceInOrder) {
  protocol::CtxDestroyRequest destroy;
  destroy.ctx = 8;  // another context: never a reason to cancel
  for (uint64_t seq = 1; seq <= 3; ++seq) ASSERT_TRUE(guest_->Send(Message(destroy, seq)).ok());
  int ran = 0;
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(watcher_
                    ->Run(*context_, 7,
                          [&] {
                            ++ran;
                            return Status::Ok();
                          })
                    .ok());
  }
  EXPECT_EQ(ran, 100);
  std::vector<uint64_t> seqs;
  std::vector<uint8_t> message;
  while (watcher_->TakeReadAhead(&message) || host_->Receive(&message, 0).ok()) {
    protocol::MessageHeader header;
    ASSERT_GE(message.size(), sizeof(header));
    std::memcpy(&header, message.data(), sizeof(header));
    seqs.push_back(header.seq);
  }
  EXPECT_EQ(seqs, (std::vector<uint64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace pvgpu::host
