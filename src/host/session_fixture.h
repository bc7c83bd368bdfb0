// The fixture of the session tests (session_test.cc, session_handles_test.cc): a real Session
// over the in-process channel, serving real cpu adapters, so that every message goes through
// the session's loop, the generated dispatch and the handlers as a guest's would, and kernels
// really run. (The cpu adapter exists everywhere, so no test adapter is needed;
// session_async_test.cc covers an asynchronous adapter.)
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "adapters/registry.h"
#include "host/session.h"
#include "protocol/wire.h"
#include "transport/channel.h"

namespace pvgpu::host {

// add_one: data[tid] += 1 for tid < n (one block). hello: a device printf. spin: never ends.
inline constexpr char kPtx[] = R"(
.version 7.0
.target sm_75
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf (.param .b64 p0, .param .b64 p1);
.global .align 1 .b8 $str[7] = {104, 101, 108, 108, 111, 10, 0};

.visible .entry add_one(.param .u64 data, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [data];
  ld.param.u32 %r2, [n];
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p1, %r1, %r2;
  @%p1 bra DONE;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r3, [%rd3];
  add.s32 %r3, %r3, 1;
  st.global.u32 [%rd3], %r3;
DONE:
  ret;
}

.visible .entry hello()
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  mov.u64 %rd1, $str;
  cvta.global.u64 %rd2, %rd1;
  {
  .param .b64 param0;
  st.param.b64 [param0+0], %rd2;
  .param .b64 param1;
  st.param.b64 [param1+0], 0;
  .param .b32 retval0;
  call.uni (retval0), vprintf, (param0, param1);
  ld.param.b32 %r1, [retval0+0];
  }
  ret;
}

.visible .entry spin()
{
LOOP:
  bra.uni LOOP;
}
)";

inline constexpr uint64_t kCtx = 0x100;
inline constexpr uint64_t kModule = 0x200;
inline constexpr auto kDeadline = std::chrono::seconds(60);  // a hang, not a timing

inline std::span<const uint8_t> Bytes(const void* data, size_t size) {
  return {static_cast<const uint8_t*>(data), size};
}

// A message that came back from the host: a reply or a Print.
struct HostMessage {
  protocol::MessageHeader header;
  std::vector<uint8_t> body;
  template <typename Fixed>
  Fixed As() const {
    Fixed fixed{};
    EXPECT_GE(body.size(), sizeof(fixed));
    std::memcpy(&fixed, body.data(), std::min(sizeof(fixed), body.size()));
    return fixed;
  }
  std::span<const uint8_t> Payload(size_t fixed) const {
    return std::span<const uint8_t>(body).subspan(std::min(fixed, body.size()));
  }
};

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    adapters::RegistryOptions options;
    options.cpu_threads = 1;  // enough for these kernels, and a fair share of a busy machine
    auto created = adapters::CreateAdapters("cpu:memory=64M,cpu:memory=64M", options);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    adapters_ = std::move(created).value();
    Start(SessionPolicy{});
  }
  void TearDown() override {
    guest_->Close();
    if (thread_.joinable()) thread_.join();
  }

  // Serves a new session under `policy` (the previous one ends).
  void Restart(SessionPolicy policy) {
    guest_->Close();
    thread_.join();
    seq_ = 0;
    Start(std::move(policy));
  }
  void Start(SessionPolicy policy) {
    auto [guest, host] = transport::CreateInProcessPair();
    guest_ = std::move(guest);
    for (auto& adapter : adapters_) policy.adapters.push_back(adapter.get());
    policy.listener = "test";
    session_ = std::make_unique<Session>(1, std::move(host), std::move(policy));
    thread_ = std::thread([this] { session_->Run(); });
  }

  template <typename Request>
  void Send(const Request& request, std::span<const uint8_t> payload = {}, uint32_t flags = 0) {
    protocol::MessageHeader header;
    header.op = static_cast<uint32_t>(Request::kOp);
    header.flags = flags;
    header.seq = ++seq_;
    std::span<const uint8_t> parts[] = {Bytes(&header, sizeof(header)),
                                        Bytes(&request, sizeof(request)), payload};
    ASSERT_TRUE(guest_->Send(parts).ok());
  }
  // The next message from the host; false when the session ended instead.
  bool Next(HostMessage* message) {
    std::vector<uint8_t> bytes;
    if (!guest_->Receive(&bytes, -1).ok() || bytes.size() < sizeof(protocol::MessageHeader))
      return false;
    std::memcpy(&message->header, bytes.data(), sizeof(protocol::MessageHeader));
    message->body.assign(bytes.begin() + sizeof(protocol::MessageHeader), bytes.end());
    return true;
  }
  // Sends `request`, waits for its reply (Prints before it are kept in printed_) and returns
  // its result; kDeviceUnavailable when the session ended instead.
  template <typename Request>
  Code Call(const Request& request, std::span<const uint8_t> payload = {},
            HostMessage* reply = nullptr) {
    const uint32_t flags = Request::kAsync ? uint32_t{protocol::kFlagWantReply} : 0u;
    Send(request, payload, flags);
    HostMessage message;
    while (Next(&message)) {
      if (message.header.flags & protocol::kFlagReply) {
        EXPECT_EQ(message.header.seq, seq_);
        if (reply != nullptr) *reply = message;
        return static_cast<Code>(message.As<typename Request::Reply>().result);
      }
      printed_ +=
          std::string(message.body.begin() + sizeof(protocol::PrintRequest), message.body.end());
    }
    return Code::kDeviceUnavailable;
  }
  // Expects the session to end by itself for the protocol violation `reason`.
  void ExpectViolation(const std::string& reason) {
    ASSERT_TRUE(Ended());
    EXPECT_EQ(session_->violation(), reason);
  }
  // Waits for the session to end by itself.
  bool Ended() {
    const auto until = std::chrono::steady_clock::now() + kDeadline;
    while (!session_->finished()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    thread_.join();
    return true;
  }

  void Hello() {
    protocol::HelloRequest hello;
    hello.protocol_version = protocol::kProtocolVersion;
    std::strncpy(hello.guest_name, "session_test", sizeof(hello.guest_name) - 1);
    ASSERT_EQ(Call(hello), Code::kOk);
  }
  void Open(uint64_t ctx = kCtx, uint32_t device = 0) {
    protocol::CtxCreateRequest create;
    create.ctx = ctx;
    create.device = device;
    ASSERT_EQ(Call(create), Code::kOk);
  }
  uint64_t Alloc(uint64_t size, uint64_t ctx = kCtx) {
    protocol::MemAllocRequest alloc;
    alloc.ctx = ctx;
    alloc.size = size;
    HostMessage reply;
    EXPECT_EQ(Call(alloc, {}, &reply), Code::kOk);
    return reply.As<protocol::MemAllocReply>().dptr;
  }
  Code LoadModule(protocol::ImageKind kind, std::span<const uint8_t> image,
                  protocol::ModuleDescription* out, uint64_t module = kModule) {
    protocol::ModuleLoadRequest load;
    load.ctx = kCtx;
    load.module = module;
    load.image_kind = static_cast<uint32_t>(kind);
    load.log_limit = 4096;
    HostMessage reply;
    const Code code = Call(load, image, &reply);
    EXPECT_TRUE(out->Decode(reply.Payload(sizeof(protocol::ModuleLoadReply))));
    return code;
  }
  Code Launch(uint32_t kernel, std::span<const uint8_t> params, uint32_t threads = 1) {
    protocol::LaunchKernelRequest launch;
    launch.ctx = kCtx;
    launch.module = kModule;
    launch.kernel = kernel;
    launch.grid[0] = launch.grid[1] = launch.grid[2] = 1;
    launch.block[0] = threads;
    launch.block[1] = launch.block[2] = 1;
    return Call(launch, params);
  }
  std::vector<uint8_t> Read(uint64_t src, uint64_t size) {
    protocol::MemcpyDtoHRequest copy;
    copy.ctx = kCtx;
    copy.src = src;
    copy.size = size;
    HostMessage reply;
    EXPECT_EQ(Call(copy, {}, &reply), Code::kOk);
    auto payload = reply.Payload(sizeof(protocol::MemcpyDtoHReply));
    return {payload.begin(), payload.end()};
  }
  Code Synchronize() {
    protocol::CtxSynchronizeRequest sync;
    sync.ctx = kCtx;
    return Call(sync);
  }

  std::vector<std::unique_ptr<adapters::Adapter>> adapters_;
  std::unique_ptr<transport::Endpoint> guest_;
  std::unique_ptr<Session> session_;
  std::thread thread_;
  uint64_t seq_ = 0;
  std::string printed_;
};

struct AddOneParams {
  uint64_t data;
  uint32_t n;
  uint32_t pad = 0;
};

}  // namespace pvgpu::host
