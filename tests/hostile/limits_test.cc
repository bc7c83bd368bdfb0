// Per-session object limits (pvgpud --limits) against a real pvgpud: a creation past a limit is
// CUDA_ERROR_OUT_OF_MEMORY and the session goes on within its limits; streams and events,
// created by messages the guest does not wait for, report the refusal at the next
// synchronization and answer later uses of the refused handle with it; a guest that keeps
// creating past as many refusals as its limit is ended.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include "tests/hostile/harness.h"

namespace pvgpu::hostile {
namespace {

using namespace protocol;

constexpr uint64_t kCtx = 0x1000;
constexpr int32_t kOutOfMemory = static_cast<int32_t>(Code::kOutOfMemory);

class LimitsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new Daemon({"--limits",
                          "contexts=2,modules=1,streams=3,events=2,regions=1,allocations=4,"
                          "uploads=2,upload_bytes=1048576,graph_execs=2,graph_nodes=6"});
  }
  static void TearDownTestSuite() { delete daemon_; }

  static void Open(RawGuest& g, uint64_t ctx = kCtx) {
    ASSERT_EQ(g.Hello(), 0);
    CtxCreateRequest create;
    create.ctx = ctx;
    ASSERT_EQ(g.Call(create), 0);
  }
  static int32_t Synchronize(RawGuest& g) {
    CtxSynchronizeRequest sync;
    sync.ctx = kCtx;
    return g.Call(sync);
  }
  static int32_t Alloc(RawGuest& g) {
    MemAllocRequest alloc;
    alloc.ctx = kCtx;
    alloc.size = 256;
    return g.Call(alloc);
  }

  static inline Daemon* daemon_ = nullptr;
};

TEST_F(LimitsTest, ContextsPastTheLimitAreRefusedAndTheSessionGoesOn) {
  RawGuest g(daemon_->socket_path());
  Open(g);
  CtxCreateRequest create;
  create.ctx = kCtx + 1;
  EXPECT_EQ(g.Call(create), 0);
  create.ctx = kCtx + 2;
  EXPECT_EQ(g.Call(create), kOutOfMemory);
  CtxDestroyRequest destroy;
  destroy.ctx = kCtx + 1;
  EXPECT_EQ(g.Call(destroy), 0);
  create.ctx = kCtx + 3;
  EXPECT_EQ(g.Call(create), 0) << "a destroyed context gives its room back";
}

TEST_F(LimitsTest, ModulesAllocationsAndRegionsPastTheLimitAreOutOfMemory) {
  RawGuest g(daemon_->socket_path());
  Open(g);
  std::ifstream in(PVGPU_HOSTILE_PTX);
  std::string ptx((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ModuleLoadRequest load;
  load.ctx = kCtx;
  load.module = 0x2000;
  load.image_kind = static_cast<uint32_t>(ImageKind::kPtx);
  load.log_limit = 4096;
  const std::span<const uint8_t> image(reinterpret_cast<const uint8_t*>(ptx.data()),
                                       ptx.size() + 1);
  std::vector<uint8_t> reply;
  EXPECT_EQ(g.Call(load, image), 0);
  load.module = 0x2001;
  EXPECT_EQ(g.Call(load, image, nullptr, &reply), kOutOfMemory);
  ModuleDescription description;
  ASSERT_TRUE(description.Decode(reply));
  EXPECT_NE(description.error_log.find("limit"), std::string::npos) << description.error_log;

  // Four allocations at most, the module's globals (if any) among them.
  int allocated = 0;
  while (allocated <= 4 && Alloc(g) == 0) ++allocated;
  EXPECT_LE(allocated, 4);
  EXPECT_EQ(Alloc(g), kOutOfMemory);

  auto region = [&](uint64_t handle) {
    const int fd = memfd_create("limits-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    EXPECT_EQ(ftruncate(fd, 4096), 0);
    EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
    EXPECT_TRUE(g.endpoint().SendFd(fd).ok());
    close(fd);
    HostRegionCreateRequest create;
    create.region = handle;
    create.size = 4096;
    return g.Call(create);
  };
  EXPECT_EQ(region(0x3000), 0);
  EXPECT_EQ(region(0x3001), kOutOfMemory);
  EXPECT_EQ(Synchronize(g), 0) << "refusals of answered calls are not reported again";
}

// Module images staged in chunks: a size past upload_bytes is refused before any byte is
// staged; a guest that leaves mid-upload ends its session like any other, and the daemon
// serves the next guest.
TEST_F(LimitsTest, UploadsPastTheLimitAreRefusedAndAnAbandonedOneIsFreed) {
  {
    RawGuest g(daemon_->socket_path());
    Open(g);
    ModuleUploadBeginRequest begin;
    begin.upload = 0x4000;
    begin.size = (1u << 20) + 1;
    ModuleUploadBeginReply reply{};
    EXPECT_EQ(g.Call(begin, {}, &reply), kOutOfMemory);
    EXPECT_EQ(reply.limit, 1u << 20);
    EXPECT_TRUE(daemon_->AwaitLog("exceeds the session's limit of 1048576 bytes"));
    begin.size = 1u << 20;
    ASSERT_EQ(g.Call(begin), 0);
    const std::vector<uint8_t> half(512u << 10, 'x');
    ModuleUploadChunkRequest chunk;
    chunk.upload = begin.upload;
    g.Send(chunk, half);
    EXPECT_EQ(Synchronize(g), 0);
  }  // gone mid-upload
  RawGuest next(daemon_->socket_path());
  Open(next);
  EXPECT_EQ(Synchronize(next), 0);
}

TEST_F(LimitsTest, ARefusedStreamIsReportedAtTheNextSynchronizationAndWhenUsed) {
  RawGuest g(daemon_->socket_path());
  Open(g);
  StreamCreateRequest create;
  create.ctx = kCtx;
  for (uint64_t stream = 1; stream <= 4; ++stream) {
    create.stream = stream;
    g.Send(create);  // asynchronous, as cuStreamCreate sends it; the 4th is refused
  }
  EXPECT_EQ(Synchronize(g), kOutOfMemory);
  EXPECT_EQ(Synchronize(g), 0);
  StreamSynchronizeRequest sync;
  sync.ctx = kCtx;
  sync.stream = 4;
  EXPECT_EQ(g.Call(sync), kOutOfMemory) << "the refused stream's use is its error again";
  sync.stream = 3;
  EXPECT_EQ(g.Call(sync), 0);
  StreamDestroyRequest destroy;
  destroy.ctx = kCtx;
  destroy.stream = 4;  // what the guest never got
  EXPECT_EQ(g.Call(destroy, {}, nullptr, nullptr, kFlagWantReply), 0);
  destroy.stream = 3;
  EXPECT_EQ(g.Call(destroy, {}, nullptr, nullptr, kFlagWantReply), 0);
  create.stream = 5;
  EXPECT_EQ(g.Call(create, {}, nullptr, nullptr, kFlagWantReply), 0) << "room again";
}

TEST_F(LimitsTest, AGuestThatCreatesPastItsRefusalsIsEnded) {
  RawGuest g(daemon_->socket_path());
  Open(g);
  EventCreateRequest create;
  create.ctx = kCtx;
  for (uint64_t event = 1; event <= 5; ++event) {  // 2 created, 2 refused, the 5th ends it
    create.event = event;
    g.Send(create);
  }
  EXPECT_TRUE(g.AwaitClosed());
  EXPECT_TRUE(daemon_->AwaitLog(
      "protocol violation: EventCreate: event 5 past the session's limit of 2 events"))
      << daemon_->Log();
}

// Graphs (host/session_graph.cc): the nodes every graph of the session holds together, and the
// pieces themselves, are bounded; a graph past either is refused with OUT_OF_MEMORY, which the
// guest's cuGraphInstantiate returns (a huge graph), and the session goes on.
TEST_F(LimitsTest, GraphsPastTheirLimitsAreRefused) {
  RawGuest g(daemon_->socket_path());
  Open(g);
  auto create = [&](uint64_t exec, uint32_t nodes) {
    std::vector<uint8_t> entries;
    for (uint32_t i = 0; i < nodes; ++i) {
      MemcpyDtoDRequest copy;
      copy.ctx = kCtx;
      const uint32_t header[2] = {static_cast<uint32_t>(Op::kMemcpyDtoD), sizeof(copy)};
      const auto* h = reinterpret_cast<const uint8_t*>(header);
      const auto* c = reinterpret_cast<const uint8_t*>(&copy);
      entries.insert(entries.end(), h, h + sizeof(header));
      entries.insert(entries.end(), c, c + sizeof(copy));
    }
    GraphExecCreateRequest request;
    request.ctx = kCtx;
    request.exec = exec;
    request.count = nodes;
    return g.Call(request, entries);
  };
  EXPECT_EQ(create(1, 4), 0);
  EXPECT_EQ(create(2, 3), kOutOfMemory);  // 7 nodes
  EXPECT_EQ(create(3, 2), 0);             // 6
  EXPECT_EQ(create(4, 0), kOutOfMemory);  // a third piece
  GraphExecDestroyRequest destroy;
  destroy.ctx = kCtx;
  destroy.exec = 1;
  g.Send(destroy);
  EXPECT_EQ(create(5, 4), 0);  // room again
  EXPECT_EQ(Alloc(g), 0);
  EXPECT_TRUE(daemon_->CountInLog("graph_nodes") > 0);
}

}  // namespace
}  // namespace pvgpu::hostile
