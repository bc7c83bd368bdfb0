// A real Session over the in-process channel, serving a real cpu adapter: every message goes
// through the session's loop, its dispatch and its handlers as a guest's would, and the
// adapter really runs the kernels. (The cpu adapter exists everywhere, so no test adapter is
// needed; tests/cuda_adapter covers the asynchronous adapter's side of the session.)
#include "host/session.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "adapters/registry.h"
#include "protocol/link_image.h"
#include "protocol/wire.h"
#include "transport/channel.h"

namespace pvgpu::host {
namespace {

using namespace protocol;

// add_one: data[tid] += 1 for tid < n (one block). hello: a device printf. spin: never ends.
constexpr char kPtx[] = R"(
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

constexpr uint64_t kCtx = 0x100;
constexpr uint64_t kModule = 0x200;
constexpr auto kDeadline = std::chrono::seconds(60);  // a hang, not a timing

std::span<const uint8_t> Bytes(const void* data, size_t size) {
  return {static_cast<const uint8_t*>(data), size};
}

// A message that came back from the host: a reply or a Print.
struct HostMessage {
  MessageHeader header;
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
    MessageHeader header;
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
    if (!guest_->Receive(&bytes, -1).ok() || bytes.size() < sizeof(MessageHeader)) return false;
    std::memcpy(&message->header, bytes.data(), sizeof(MessageHeader));
    message->body.assign(bytes.begin() + sizeof(MessageHeader), bytes.end());
    return true;
  }
  // Sends `request`, waits for its reply (Prints before it are kept in printed_) and returns
  // its result; kDeviceUnavailable when the session ended instead.
  template <typename Request>
  Code Call(const Request& request, std::span<const uint8_t> payload = {},
            HostMessage* reply = nullptr) {
    const uint32_t flags = Request::kAsync ? uint32_t{kFlagWantReply} : 0u;
    Send(request, payload, flags);
    HostMessage message;
    while (Next(&message)) {
      if (message.header.flags & kFlagReply) {
        EXPECT_EQ(message.header.seq, seq_);
        if (reply != nullptr) *reply = message;
        return static_cast<Code>(message.As<typename Request::Reply>().result);
      }
      printed_ += std::string(message.body.begin() + sizeof(PrintRequest), message.body.end());
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
    HelloRequest hello;
    hello.protocol_version = kProtocolVersion;
    std::strncpy(hello.guest_name, "session_test", sizeof(hello.guest_name) - 1);
    ASSERT_EQ(Call(hello), Code::kOk);
  }
  void Open(uint64_t ctx = kCtx, uint32_t device = 0) {
    CtxCreateRequest create;
    create.ctx = ctx;
    create.device = device;
    ASSERT_EQ(Call(create), Code::kOk);
  }
  uint64_t Alloc(uint64_t size, uint64_t ctx = kCtx) {
    MemAllocRequest alloc;
    alloc.ctx = ctx;
    alloc.size = size;
    HostMessage reply;
    EXPECT_EQ(Call(alloc, {}, &reply), Code::kOk);
    return reply.As<MemAllocReply>().dptr;
  }
  Code LoadModule(ImageKind kind, std::span<const uint8_t> image, ModuleDescription* out,
                  uint64_t module = kModule) {
    ModuleLoadRequest load;
    load.ctx = kCtx;
    load.module = module;
    load.image_kind = static_cast<uint32_t>(kind);
    load.log_limit = 4096;
    HostMessage reply;
    const Code code = Call(load, image, &reply);
    EXPECT_TRUE(out->Decode(reply.Payload(sizeof(ModuleLoadReply))));
    return code;
  }
  Code Launch(uint32_t kernel, std::span<const uint8_t> params, uint32_t threads = 1) {
    LaunchKernelRequest launch;
    launch.ctx = kCtx;
    launch.module = kModule;
    launch.kernel = kernel;
    launch.grid[0] = launch.grid[1] = launch.grid[2] = 1;
    launch.block[0] = threads;
    launch.block[1] = launch.block[2] = 1;
    return Call(launch, params);
  }
  std::vector<uint8_t> Read(uint64_t src, uint64_t size) {
    MemcpyDtoHRequest copy;
    copy.ctx = kCtx;
    copy.src = src;
    copy.size = size;
    HostMessage reply;
    EXPECT_EQ(Call(copy, {}, &reply), Code::kOk);
    auto payload = reply.Payload(sizeof(MemcpyDtoHReply));
    return {payload.begin(), payload.end()};
  }
  Code Synchronize() {
    CtxSynchronizeRequest sync;
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

TEST_F(SessionTest, HelloTellsTheGuestWhatItSees) {
  HelloRequest hello;
  hello.protocol_version = kProtocolVersion;
  HostMessage reply;
  ASSERT_EQ(Call(hello, {}, &reply), Code::kOk);
  const auto fixed = reply.As<HelloReply>();
  EXPECT_EQ(fixed.protocol_version, kProtocolVersion);
  EXPECT_EQ(fixed.session_id, 1u);
  EXPECT_EQ(fixed.adapter_count, 2u);
  DeviceGetInfoRequest info;
  info.device = 1;
  ASSERT_EQ(Call(info, {}, &reply), Code::kOk);
  EXPECT_EQ(reply.As<DeviceGetInfoReply>().total_memory, 64u << 20);
}

TEST_F(SessionTest, AGuestThatDoesNotSpeakTheProtocolIsRefused) {
  HelloRequest hello;
  hello.protocol_version = kProtocolVersion + 1;
  EXPECT_EQ(Call(hello), Code::kNotSupported);
  EXPECT_TRUE(Ended());
}

TEST_F(SessionTest, CopiesRoundTripThroughDeviceMemory) {
  Hello();
  Open();
  const uint64_t a = Alloc(64), b = Alloc(64);
  MemcpyHtoDRequest htod;
  htod.ctx = kCtx;
  htod.dst = a;
  const std::string text = "0123456789abcdef";
  ASSERT_EQ(Call(htod, Bytes(text.data(), text.size())), Code::kOk);
  MemcpyDtoDRequest dtod;
  dtod.ctx = kCtx;
  dtod.dst = b + 8;
  dtod.src = a;
  dtod.size = text.size();
  Send(dtod);  // asynchronous: nothing comes back
  MemsetRequest memset;
  memset.ctx = kCtx;
  memset.dst = b;
  memset.value = 'z';
  memset.element_size = 1;
  memset.width = 8;
  memset.height = 1;
  Send(memset);
  const std::vector<uint8_t> back = Read(b, 24);
  EXPECT_EQ(std::string(back.begin(), back.end()), "zzzzzzzz" + text);
  EXPECT_EQ(guest_->ReadFence(), seq_) << "every message is done once its reply is out";
}

TEST_F(SessionTest, ARangeOutsideAllocationsIsAnErrorReportedAtTheNextSynchronize) {
  Hello();
  Open();
  const uint64_t a = Alloc(64);
  MemcpyDtoDRequest copy;
  copy.ctx = kCtx;
  copy.dst = a + 32;
  copy.src = a;
  copy.size = 64;  // runs past the end of the allocation
  Send(copy);
  EXPECT_EQ(Synchronize(), Code::kInvalidValue);
  EXPECT_EQ(Synchronize(), Code::kOk) << "an asynchronous error is reported once";
  MemFreeRequest free_inside;
  free_inside.ctx = kCtx;
  free_inside.dptr = a + 1;
  EXPECT_EQ(Call(free_inside), Code::kInvalidValue);
  free_inside.dptr = a;
  EXPECT_EQ(Call(free_inside), Code::kOk);
  EXPECT_EQ(Call(free_inside), Code::kInvalidValue) << "freed twice";
}

TEST_F(SessionTest, KernelsRunAndPrint) {
  Hello();
  Open();
  ModuleDescription description;
  ASSERT_EQ(LoadModule(ImageKind::kPtx, Bytes(kPtx, sizeof(kPtx)), &description), Code::kOk)
      << description.error_log;
  ASSERT_EQ(description.kernels.size(), 3u);
  EXPECT_EQ(description.kernels[0].name, "add_one");
  EXPECT_EQ(description.kernels[0].param_sizes, (std::vector<uint32_t>{8, 4}));
  const uint64_t data = Alloc(4 * 32);
  AddOneParams params{data, 20};
  ASSERT_EQ(Launch(0, Bytes(&params, 12), 32), Code::kOk);
  ASSERT_EQ(Launch(0, Bytes(&params, 12), 32), Code::kOk);
  const std::vector<uint8_t> back = Read(data, 4 * 32);
  for (uint32_t i = 0; i < 32; ++i) {
    uint32_t value;
    std::memcpy(&value, back.data() + 4 * i, 4);
    EXPECT_EQ(value, i < 20 ? 2u : 0u) << "element " << i;
  }
  ASSERT_EQ(Launch(1, {}), Code::kOk);
  EXPECT_EQ(printed_, "hello\n");
}

TEST_F(SessionTest, AKernelFaultPoisonsOnlyItsContext) {
  Hello();
  Open();
  Open(kCtx + 1, 1);
  ModuleDescription description;
  ASSERT_EQ(LoadModule(ImageKind::kPtx, Bytes(kPtx, sizeof(kPtx)), &description), Code::kOk);
  AddOneParams params{0, 1};  // a null pointer
  EXPECT_EQ(Launch(0, Bytes(&params, 12)), Code::kIllegalAddress);
  EXPECT_EQ(Synchronize(), Code::kIllegalAddress);
  MemAllocRequest alloc;
  alloc.ctx = kCtx;
  alloc.size = 64;
  EXPECT_EQ(Call(alloc), Code::kIllegalAddress) << "a poisoned context refuses new work";
  EXPECT_NE(Alloc(64, kCtx + 1), 0u) << "the other context works on";
}

TEST_F(SessionTest, DestroyingAContextCancelsItsRunningKernel) {
  Hello();
  Open();
  ModuleDescription description;
  ASSERT_EQ(LoadModule(ImageKind::kPtx, Bytes(kPtx, sizeof(kPtx)), &description), Code::kOk);
  LaunchKernelRequest launch;
  launch.ctx = kCtx;
  launch.module = kModule;
  launch.kernel = 2;  // spin
  launch.grid[0] = launch.grid[1] = launch.grid[2] = 1;
  launch.block[0] = launch.block[1] = launch.block[2] = 1;
  Send(launch);  // runs until cancelled
  CtxDestroyRequest destroy;
  destroy.ctx = kCtx;
  EXPECT_EQ(Call(destroy), Code::kOk);
  EXPECT_EQ(Call(DeviceGetInfoRequest{}), Code::kOk) << "the session serves on";
}

TEST_F(SessionTest, GoodbyeEndsTheSession) {
  Hello();
  Open();
  Send(GoodbyeRequest{});
  ExpectViolation("");  // none
}

TEST_F(SessionTest, AnUnknownHandleEndsTheSession) {
  Hello();
  MemAllocRequest alloc;
  alloc.ctx = 0xBEEF;
  alloc.size = 64;
  EXPECT_EQ(Call(alloc), Code::kDeviceUnavailable);
  ExpectViolation("MemAlloc: unknown context handle 48879");
}

TEST_F(SessionTest, AHandleUsedAfterItsObjectIsDestroyedEndsTheSession) {
  Hello();
  Open();
  CtxDestroyRequest destroy;
  destroy.ctx = kCtx;
  EXPECT_EQ(Call(destroy), Code::kOk);
  CtxSynchronizeRequest sync;
  sync.ctx = kCtx;
  EXPECT_EQ(Call(sync), Code::kDeviceUnavailable);
  ExpectViolation("CtxSynchronize: unknown context handle 256");
}

TEST_F(SessionTest, AStreamOfAnotherContextIsForeignThere) {
  Hello();
  Open();
  Open(kCtx + 1);
  StreamCreateRequest create;
  create.ctx = kCtx;
  create.stream = 0x300;
  Send(create);
  StreamSynchronizeRequest sync;
  sync.ctx = kCtx;
  sync.stream = 0x300;
  EXPECT_EQ(Call(sync), Code::kOk);
  sync.ctx = kCtx + 1;
  EXPECT_EQ(Call(sync), Code::kDeviceUnavailable);
  ExpectViolation("StreamSynchronize: unknown stream handle 768");
}

// The session decodes a link image and hands the adapter its validated inputs.
TEST_F(SessionTest, LinkImagesAreDecodedByTheSession) {
  Hello();
  Open();
  const LinkInput input{LinkInputType::kPtx, "kernels.ptx", std::string_view(kPtx)};
  const std::vector<uint8_t> image = EncodeLinkImage(std::span(&input, 1));
  ModuleDescription description;
  ASSERT_EQ(LoadModule(ImageKind::kLinked, image, &description), Code::kOk)
      << description.error_log;
  EXPECT_EQ(description.kernels.size(), 3u);

  std::vector<uint8_t> truncated = image;
  truncated.resize(truncated.size() - 8);  // its last record now runs past its end
  const uint64_t total = truncated.size();
  std::memcpy(truncated.data() + 16, &total, sizeof(total));
  EXPECT_EQ(LoadModule(ImageKind::kLinked, truncated, &description, kModule + 1),
            Code::kInvalidImage);
  EXPECT_NE(description.error_log.find("link image: record 0"), std::string::npos)
      << description.error_log;
  EXPECT_EQ(Synchronize(), Code::kOk) << "a module load failure is no protocol violation";
}

// Streams are created by messages the guest does not wait for: a refusal surfaces at the next
// synchronization, and a later use of the refused handle is its error again, not a violation.
TEST_F(SessionTest, AStreamPastTheLimitIsAnErrorNotAViolation) {
  SessionPolicy policy;
  policy.limits.streams = 1;
  Restart(policy);
  Hello();
  Open();
  StreamCreateRequest create;
  create.ctx = kCtx;
  create.stream = 0x300;
  Send(create);
  create.stream = 0x301;
  Send(create);  // refused
  EXPECT_EQ(Synchronize(), Code::kOutOfMemory);
  const uint64_t a = Alloc(64);
  MemcpyDtoDRequest copy;
  copy.ctx = kCtx;
  copy.stream = 0x301;
  copy.dst = copy.src = a;
  copy.size = 64;
  Send(copy);
  EXPECT_EQ(Synchronize(), Code::kOutOfMemory);
  copy.stream = 0x300;
  Send(copy);
  EXPECT_EQ(Synchronize(), Code::kOk);
  EXPECT_FALSE(session_->finished());
}

TEST_F(SessionTest, AContextPastTheLimitIsOutOfMemory) {
  SessionPolicy policy;
  policy.limits.contexts = 1;
  Restart(policy);
  Hello();
  Open();
  CtxCreateRequest create;
  create.ctx = kCtx + 1;
  EXPECT_EQ(Call(create), Code::kOutOfMemory);
  EXPECT_NE(Alloc(64), 0u) << "the first context works on";
}

}  // namespace
}  // namespace pvgpu::host
