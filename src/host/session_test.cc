// The session's loop and handlers over the in-process channel (session_fixture.h): handshake,
// copies, errors reported at synchronization, kernels (cooperative ones too), faults, the kernel
// watcher, Goodbye.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "host/session_fixture.h"

namespace pvgpu::host {
namespace {

using namespace protocol;

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

TEST_F(SessionTest, CooperativeLaunchesReachTheAdapter) {
  Hello();
  Open();
  ModuleDescription description;
  ASSERT_EQ(LoadModule(ImageKind::kPtx, Bytes(kPtx, sizeof(kPtx)), &description), Code::kOk);
  const uint64_t data = Alloc(4 * 32);
  AddOneParams params{data, 20};
  LaunchKernelRequest launch;
  launch.ctx = kCtx;
  launch.module = kModule;
  launch.kernel = 0;
  launch.grid[0] = launch.grid[1] = launch.grid[2] = 1;
  launch.block[0] = 32;
  launch.block[1] = launch.block[2] = 1;
  launch.cooperative = 1;
  ASSERT_EQ(Call(launch, Bytes(&params, 12)), Code::kOk);
  const std::vector<uint8_t> back = Read(data, 4);
  uint32_t first;
  std::memcpy(&first, back.data(), 4);
  EXPECT_EQ(first, 1u);
  // A grid no adapter keeps resident is refused before anything runs (as an ordinary launch
  // it would run for ages), and the context stays usable.
  launch.grid[0] = 1u << 30;
  EXPECT_EQ(Call(launch, Bytes(&params, 12)), Code::kCooperativeLaunchTooLarge);
  EXPECT_NE(Alloc(64), 0u);
  launch.grid[0] = 1;
  launch.cooperative = 2;
  Send(launch, Bytes(&params, 12));
  ExpectViolation("LaunchKernel: cooperative is 2");
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

}  // namespace
}  // namespace pvgpu::host
