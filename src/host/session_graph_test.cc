// Graphs in the session (session_graph.cc): GraphExecCreate keeps validated entries,
// GraphExecLaunch runs them in order through the messages' own handlers, their errors are the
// context's asynchronous errors, and a malformed or forbidden entry ends the session.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "host/session_fixture.h"

namespace pvgpu::host {
namespace {

using namespace protocol;

template <typename Request>
void AddEntry(std::vector<uint8_t>* out, const Request& request,
              std::span<const uint8_t> payload = {}) {
  const uint32_t header[2] = {static_cast<uint32_t>(Request::kOp),
                              static_cast<uint32_t>(sizeof(request) + payload.size())};
  const auto* h = reinterpret_cast<const uint8_t*>(header);
  const auto* r = reinterpret_cast<const uint8_t*>(&request);
  out->insert(out->end(), h, h + sizeof(header));
  out->insert(out->end(), r, r + sizeof(request));
  out->insert(out->end(), payload.begin(), payload.end());
  out->resize((out->size() + 7) & ~size_t{7});
}

class SessionGraphTest : public SessionTest {
 protected:
  Code Create(uint64_t exec, uint32_t count, std::span<const uint8_t> entries) {
    GraphExecCreateRequest create;
    create.ctx = kCtx;
    create.exec = exec;
    create.count = count;
    return Call(create, entries);
  }
  void Launch(uint64_t exec) {
    GraphExecLaunchRequest launch;
    launch.ctx = kCtx;
    launch.exec = exec;
    Send(launch);
  }
};

TEST_F(SessionGraphTest, EntriesRunInOrderAtEveryLaunch) {
  Hello();
  Open();
  ModuleDescription description;
  ASSERT_EQ(LoadModule(ImageKind::kPtx, Bytes(kPtx, sizeof(kPtx)), &description), Code::kOk);
  const uint64_t data = Alloc(4 * 32), copy = Alloc(4 * 32);
  std::vector<uint8_t> entries;
  MemsetRequest memset;
  memset.ctx = kCtx;
  memset.dst = data;
  memset.value = 5;
  memset.element_size = 4;
  memset.width = 32;
  memset.height = 1;
  memset.pitch = 4 * 32;
  AddEntry(&entries, memset);
  LaunchKernelRequest launch;
  launch.ctx = kCtx;
  launch.module = kModule;
  launch.grid[0] = launch.grid[1] = launch.grid[2] = 1;
  launch.block[0] = 32;
  launch.block[1] = launch.block[2] = 1;
  AddOneParams params{data, 20};
  AddEntry(&entries, launch, Bytes(&params, 12));
  AddEntry(&entries, launch, Bytes(&params, 12));
  MemcpyDtoDRequest dtod;
  dtod.ctx = kCtx;
  dtod.dst = copy;
  dtod.src = data;
  dtod.size = 4 * 32;
  AddEntry(&entries, dtod);
  ASSERT_EQ(Create(7, 4, entries), Code::kOk);
  for (int round = 0; round < 3; ++round) {
    Launch(7);  // asynchronous: one message, four nodes
    const std::vector<uint8_t> back = Read(copy, 4 * 32);
    for (uint32_t i = 0; i < 32; ++i) {
      uint32_t value;
      std::memcpy(&value, back.data() + 4 * i, 4);
      EXPECT_EQ(value, i < 20 ? 7u : 5u) << "round " << round << ", element " << i;
    }
  }
  EXPECT_EQ(Synchronize(), Code::kOk);
}

TEST_F(SessionGraphTest, ErrorsInsideAGraphAreAsynchronousErrors) {
  Hello();
  Open();
  const uint64_t data = Alloc(64);
  std::vector<uint8_t> entries;
  MemcpyDtoDRequest dtod;
  dtod.ctx = kCtx;
  dtod.dst = data + 4096;  // outside every allocation
  dtod.src = data;
  dtod.size = 64;
  AddEntry(&entries, dtod);
  ASSERT_EQ(Create(8, 1, entries), Code::kOk);
  Launch(8);
  EXPECT_EQ(Synchronize(), Code::kInvalidValue);
  EXPECT_EQ(Synchronize(), Code::kOk);  // reported once
  GraphExecDestroyRequest destroy;
  destroy.ctx = kCtx;
  destroy.exec = 8;
  Send(destroy);
  EXPECT_EQ(Synchronize(), Code::kOk);
}

TEST_F(SessionGraphTest, AGraphMessageInsideAGraphEndsTheSession) {
  Hello();
  Open();
  std::vector<uint8_t> entries;
  GraphExecLaunchRequest nested;
  nested.ctx = kCtx;
  nested.exec = 1;
  AddEntry(&entries, nested);
  Create(9, 1, entries);
  ExpectViolation("GraphExecCreate: op 129 cannot be a graph node");
}

}  // namespace
}  // namespace pvgpu::host
