// A session over an asynchronous adapter: messages on an asynchronous context are done only
// when the adapter says so, contexts complete out of order, and the published fence never
// passes a message still in flight nor moves backwards. A real Session over an in-process
// channel; the adapter is a test-only one because the real asynchronous adapter (cuda) needs
// a GPU, and because its completions must be fired by hand so that their order is chosen by
// the test, not timed.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "adapters/adapter.h"
#include "host/session.h"
#include "protocol/wire.h"
#include "transport/channel.h"

namespace pvgpu::host {
namespace {

using Callbacks = std::vector<std::function<void()>>;

class FakeAsyncContext final : public adapters::Context {
 public:
  explicit FakeAsyncContext(Callbacks* pending) : pending_(pending) {}
  StatusOr<uint64_t> Allocate(uint64_t) override { return Error(Code::kOutOfMemory, "fake"); }
  Status Free(uint64_t) override { return Status::Ok(); }
  Status Write(uint64_t, std::span<const uint8_t>) override { return Status::Ok(); }
  Status Read(uint64_t, std::span<uint8_t>) override { return Status::Ok(); }
  Status Copy(uint64_t, uint64_t, uint64_t) override { return Status::Ok(); }
  Status Memset(uint64_t, uint64_t, uint32_t, uint32_t, uint64_t, uint64_t) override {
    return Status::Ok();
  }
  StatusOr<uint64_t> MapHostMemory(uint8_t*, uint64_t) override {
    return Error(Code::kNotSupported, "");
  }
  Status UnmapHostMemory(uint64_t) override { return Status::Ok(); }
  StatusOr<std::unique_ptr<adapters::Module>> LoadModule(const adapters::ModuleImage&, std::string*,
                                                         std::string*) override {
    return Error(Code::kNotSupported, "fake");
  }
  Status Launch(adapters::Module&, uint32_t, const adapters::LaunchConfig&,
                std::span<const uint8_t>, const std::function<void(std::string_view)>&) override {
    return Status::Ok();
  }
  void Cancel() override {}
  uint64_t used_bytes() const override { return 0; }
  bool asynchronous() const override { return true; }
  void NotifyWhenDone(std::function<void()> done) override { pending_->push_back(done); }

 private:
  Callbacks* pending_;
};

class FakeAsyncAdapter final : public adapters::Adapter {
 public:
  FakeAsyncAdapter() {
    info_.kind = "fake";
    info_.name = "fake asynchronous adapter";
    info_.total_memory = 1 << 30;
  }
  const adapters::AdapterInfo& info() const override { return info_; }
  StatusOr<std::unique_ptr<adapters::Context>> CreateContext() override {
    pending_.emplace_back();
    return std::unique_ptr<adapters::Context>(new FakeAsyncContext(&pending_.back()));
  }
  uint64_t used_bytes() const override { return 0; }
  uint32_t SampleUtilization() override { return 0; }
  // Completion callbacks of context `index` (in creation order), oldest first.
  Callbacks& pending(size_t index) { return pending_[index]; }

 private:
  adapters::AdapterInfo info_;
  std::deque<Callbacks> pending_;  // stable addresses
};

class SessionAsyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto [guest, host] = transport::CreateInProcessPair();
    guest_ = std::move(guest);
    SessionPolicy policy;
    policy.adapters = {&adapter_};
    session_ = std::make_unique<Session>(1, std::move(host), std::move(policy));
    thread_ = std::thread([this] { session_->Run(); });
  }
  void TearDown() override {
    session_->Stop();
    thread_.join();
  }

  template <typename Request>
  void Send(const Request& request) {
    protocol::MessageHeader header;
    header.op = static_cast<uint32_t>(Request::kOp);
    header.seq = ++seq_;
    std::vector<uint8_t> bytes(sizeof(header) + sizeof(request));
    std::memcpy(bytes.data(), &header, sizeof(header));
    std::memcpy(bytes.data() + sizeof(header), &request, sizeof(request));
    ASSERT_TRUE(guest_->Send(bytes).ok());
  }
  // Sends a request that is answered and waits for the answer (so everything before it has
  // been executed by the session).
  template <typename Request>
  void Call(const Request& request) {
    Send(request);
    std::vector<uint8_t> reply;
    ASSERT_TRUE(guest_->Receive(&reply, -1).ok());
    protocol::MessageHeader header;
    ASSERT_GE(reply.size(), sizeof(header));
    std::memcpy(&header, reply.data(), sizeof(header));
    ASSERT_EQ(header.seq, seq_);
  }
  static void Fire(Callbacks& callbacks) {
    Callbacks taken;
    taken.swap(callbacks);
    for (auto& callback : taken) callback();
  }

  FakeAsyncAdapter adapter_;
  std::unique_ptr<transport::Endpoint> guest_;
  std::unique_ptr<Session> session_;
  std::thread thread_;
  uint64_t seq_ = 0;
};

TEST_F(SessionAsyncTest, FenceWaitsForTheOldestUnfinishedMessage) {
  protocol::HelloRequest hello;
  hello.protocol_version = protocol::kProtocolVersion;
  Call(hello);  // seq 1
  protocol::CtxCreateRequest create;
  create.ctx = 100;
  Call(create);  // seq 2: context A
  create.ctx = 200;
  Call(create);  // seq 3: context B
  EXPECT_EQ(guest_->ReadFence(), 3u);

  protocol::EventCreateRequest event;
  event.ctx = 100, event.event = 1;
  Send(event);  // seq 4 on A
  event.ctx = 200, event.event = 2;
  Send(event);  // seq 5 on B
  protocol::EventRecordRequest record;
  record.ctx = 100, record.event = 1;
  Send(record);  // seq 6 on A
  record.ctx = 200, record.event = 2;
  Send(record);  // seq 7 on B
  protocol::DeviceGetInfoRequest info;
  Call(info);  // seq 8: names no context, done at once, yet 4..7 are not
  EXPECT_EQ(guest_->ReadFence(), 3u);

  Fire(adapter_.pending(1));  // B finishes first: 5 and 7 done, 4 still holds the fence
  EXPECT_EQ(guest_->ReadFence(), 3u);
  ASSERT_FALSE(adapter_.pending(0).empty());
  auto first = adapter_.pending(0).front();
  adapter_.pending(0).erase(adapter_.pending(0).begin());
  first();  // 4 done: 5 was already, 6 is not
  EXPECT_EQ(guest_->ReadFence(), 5u);
  Fire(adapter_.pending(0));  // 6 done: everything through 8
  EXPECT_EQ(guest_->ReadFence(), 8u);
}

TEST_F(SessionAsyncTest, ReplyOfAnAsynchronousContextDoesNotPublishItsOwnSeq) {
  protocol::HelloRequest hello;
  hello.protocol_version = protocol::kProtocolVersion;
  Call(hello);
  protocol::CtxCreateRequest create;
  create.ctx = 100;
  Call(create);  // seq 2
  protocol::EventCreateRequest event;
  event.ctx = 100, event.event = 1;
  Send(event);  // seq 3: in flight
  protocol::MemGetInfoRequest memory;
  memory.ctx = 100;
  Call(memory);  // seq 4: answered, but settled through the context like everything on it
  EXPECT_EQ(guest_->ReadFence(), 2u);
  Fire(adapter_.pending(0));
  EXPECT_EQ(guest_->ReadFence(), 4u);
}

}  // namespace
}  // namespace pvgpu::host
