// Graphs from a hostile guest (host/session_graph.cc, docs/graphs.md): a GraphExecCreate payload
// is a list of messages the host validates as those messages, once, at creation; anything the
// protocol forbids there ends the session. Ranges are checked when the graph runs: a node that
// names memory the session does not own (another session's) is a CUDA error, and the session
// goes on. Same fixture, same bystander as protocol_abuse_test.cc.
#include <cstring>

#include "tests/hostile/abuse_fixture.h"

namespace pvgpu::hostile {
namespace {

using namespace protocol;

// A GraphExecCreate payload being put together: entries of op, size and bytes, padded to 8.
class Entries {
 public:
  template <typename Request>
  Entries& Add(const Request& request, std::span<const uint8_t> payload = {}) {
    const uint32_t header[2] = {static_cast<uint32_t>(Request::kOp),
                                static_cast<uint32_t>(sizeof(request) + payload.size())};
    Append(header, sizeof(header));
    Append(&request, sizeof(request));
    Append(payload.data(), payload.size());
    bytes_.resize((bytes_.size() + 7) & ~size_t{7});
    ++count_;
    return *this;
  }
  Entries& Raw(const void* data, size_t size) {
    Append(data, size);
    return *this;
  }
  std::span<const uint8_t> bytes() const { return bytes_; }
  uint32_t count() const { return count_; }

 private:
  void Append(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
  }
  std::vector<uint8_t> bytes_;
  uint32_t count_ = 0;
};

GraphExecCreateRequest Create(uint64_t exec, uint32_t count) {
  GraphExecCreateRequest create;
  create.ctx = kCtx;
  create.exec = exec;
  create.count = count;
  return create;
}

MemcpyDtoDRequest Copy(uint64_t dst, uint64_t src, uint64_t size) {
  MemcpyDtoDRequest copy;
  copy.ctx = kCtx;
  copy.dst = dst;
  copy.src = src;
  copy.size = size;
  return copy;
}

TEST_F(ProtocolAbuseTest, GraphEntryOfAnotherContext) {
  ExpectFatal("GraphExecCreate: MemcpyDtoD entry: names another context", [](RawGuest& g) {
    Open(g);
    MemcpyDtoDRequest copy = Copy(0, 0, 0);
    copy.ctx = kCtx + 77;
    Entries e;
    e.Add(copy);
    g.Send(Create(5, e.count()), e.bytes());
  });
}

TEST_F(ProtocolAbuseTest, GraphEntryNamingAStream) {
  ExpectFatal("GraphExecCreate: Memset entry: names a stream", [](RawGuest& g) {
    Open(g);
    MemsetRequest memset;
    memset.ctx = kCtx;
    memset.stream = 3;
    Entries e;
    e.Add(memset);
    g.Send(Create(5, e.count()), e.bytes());
  });
}

TEST_F(ProtocolAbuseTest, GraphEntryWithUnknownModule) {
  ExpectFatal("GraphExecCreate: LaunchKernel entry: unknown module handle 99", [](RawGuest& g) {
    Open(g);
    LaunchKernelRequest launch;
    launch.ctx = kCtx;
    launch.module = 99;
    Entries e;
    e.Add(launch);
    g.Send(Create(5, e.count()), e.bytes());
  });
}

TEST_F(ProtocolAbuseTest, GraphEntryWithBadKernelParameters) {
  ExpectFatal("GraphExecCreate: LaunchKernel entry: parameter buffer of 3 bytes", [](RawGuest& g) {
    Open(g);
    LoadModule(g, 6);
    LaunchKernelRequest launch;
    launch.ctx = kCtx;
    launch.module = 6;
    Entries e;
    e.Add(launch, Bytes("abc", 3));
    g.Send(Create(5, e.count()), e.bytes());
  });
}

TEST_F(ProtocolAbuseTest, GraphEntryOfTheWrongSize) {
  ExpectFatal("GraphExecCreate: EventRecord entry: bad size", [](RawGuest& g) {
    Open(g);
    EventRecordRequest record;
    record.ctx = kCtx;
    Entries e;
    e.Add(record, Bytes("x", 1));  // EventRecord has no payload
    g.Send(Create(5, e.count()), e.bytes());
  });
}

// A graph message inside a graph, or any message that is not device work.
TEST_F(ProtocolAbuseTest, GraphInsideAGraph) {
  ExpectFatal("GraphExecCreate: op 129 cannot be a graph node", [](RawGuest& g) {
    Open(g);
    GraphExecLaunchRequest launch;
    launch.ctx = kCtx;
    launch.exec = 5;
    Entries e;
    e.Add(launch);
    g.Send(Create(6, e.count()), e.bytes());
  });
}

TEST_F(ProtocolAbuseTest, GraphWithAnAllocation) {
  ExpectFatal("GraphExecCreate: op 48 cannot be a graph node", [](RawGuest& g) {
    Open(g);
    MemAllocRequest alloc;
    alloc.ctx = kCtx;
    Entries e;
    e.Add(alloc);
    g.Send(Create(6, e.count()), e.bytes());
  });
}

TEST_F(ProtocolAbuseTest, GraphEntryPastThePayload) {
  ExpectFatal("GraphExecCreate: an entry of 1000 bytes past the payload's end", [](RawGuest& g) {
    Open(g);
    const uint32_t header[2] = {static_cast<uint32_t>(Op::kMemcpyDtoD), 1000};
    Entries e;
    e.Raw(header, sizeof(header)).Raw("tail", 4);
    g.Send(Create(5, 1), e.bytes());
  });
}

TEST_F(ProtocolAbuseTest, GraphEntryHeaderCut) {
  ExpectFatal("GraphExecCreate: an entry header past the payload's end", [](RawGuest& g) {
    Open(g);
    Entries e;
    e.Add(Copy(0, 0, 0)).Raw("abc", 3);
    g.Send(Create(5, 2), e.bytes());
  });
}

TEST_F(ProtocolAbuseTest, GraphCountsDisagree) {
  ExpectFatal("GraphExecCreate: 2 entries for a count of 3", [](RawGuest& g) {
    Open(g);
    Entries e;
    e.Add(Copy(0, 0, 0)).Add(Copy(0, 0, 0));
    g.Send(Create(5, 3), e.bytes());
  });
}

TEST_F(ProtocolAbuseTest, GraphMoreEntriesThanCounted) {
  ExpectFatal("GraphExecCreate: more entries than its count of 1", [](RawGuest& g) {
    Open(g);
    Entries e;
    e.Add(Copy(0, 0, 0)).Add(Copy(0, 0, 0));
    g.Send(Create(5, 1), e.bytes());
  });
}

TEST_F(ProtocolAbuseTest, GraphLaunchedAfterDestroy) {
  ExpectFatal("GraphExecLaunch: unknown graph exec handle 5", [](RawGuest& g) {
    Open(g);
    Entries e;
    e.Add(Copy(0, 0, 0));
    ASSERT_EQ(g.Call(Create(5, e.count()), e.bytes()), 0);
    GraphExecDestroyRequest destroy;
    destroy.ctx = kCtx;
    destroy.exec = 5;
    g.Send(destroy);
    GraphExecLaunchRequest launch;
    launch.ctx = kCtx;
    launch.exec = 5;
    g.Send(launch);
  });
}

TEST_F(ProtocolAbuseTest, GraphOfAnotherContext) {
  ExpectFatal("GraphExecLaunch: unknown graph exec handle 5", [](RawGuest& g) {
    Open(g);
    CtxCreateRequest other;
    other.ctx = kCtx + 1;
    ASSERT_EQ(g.Call(other), 0);
    Entries e;
    e.Add(Copy(0, 0, 0));
    ASSERT_EQ(g.Call(Create(5, e.count()), e.bytes()), 0);
    GraphExecLaunchRequest launch;
    launch.ctx = kCtx + 1;
    launch.exec = 5;
    g.Send(launch);
  });
}

// A graph whose nodes name memory this session does not own (addresses of another session's
// allocation, stray values): accepted at creation, refused when it runs, as a CUDA error of the
// context; the session goes on and its own memory is untouched.
TEST_F(ProtocolAbuseTest, GraphNamingAnotherSessionsMemory) {
  RawGuest other(daemon_->socket_path());
  Open(other);
  const uint64_t theirs = Alloc(other, 4096);
  RawGuest g(daemon_->socket_path());
  Open(g);
  const uint64_t mine = Alloc(g, 4096);
  ASSERT_NE(mine, theirs);  // one device address space per adapter
  MemsetRequest fill;
  fill.ctx = kCtx;
  fill.dst = mine;
  fill.value = 0x5A;
  fill.element_size = 1;
  fill.width = 4096;
  fill.height = 1;
  fill.pitch = 4096;
  ASSERT_EQ(g.Call(fill, {}, nullptr, nullptr, kFlagWantReply), 0);
  Entries e;
  e.Add(Copy(theirs, mine, 4096)).Add(Copy(mine, theirs, 4096)).Add(Copy(kMax - 8, mine, 64));
  ++attacks_;
  ASSERT_EQ(g.Call(Create(5, e.count()), e.bytes()), 0);
  GraphExecLaunchRequest launch;
  launch.ctx = kCtx;
  launch.exec = 5;
  EXPECT_EQ(g.Call(launch, {}, nullptr, nullptr, kFlagWantReply),
            static_cast<int32_t>(Code::kInvalidValue));
  CtxSynchronizeRequest sync;
  sync.ctx = kCtx;
  EXPECT_EQ(g.Call(sync), static_cast<int32_t>(Code::kInvalidValue));  // the recorded error
  EXPECT_EQ(g.Call(sync), 0);
  MemcpyDtoHRequest read;
  read.ctx = kCtx;
  read.src = mine;
  read.size = 16;
  std::vector<uint8_t> data;
  EXPECT_EQ(g.Call(read, {}, nullptr, &data), 0);
  ASSERT_EQ(data.size(), 16u);
  for (uint8_t byte : data) EXPECT_EQ(byte, 0x5A);
  EXPECT_EQ(other.Call(sync), 0);  // the other session never noticed
}

// Batch memory operation entries (a write's copy, a wait): checked as their messages are; a
// write into another session's memory or a wait on it is a CUDA error at launch, and the other
// session's memory stays as it was.
TEST_F(ProtocolAbuseTest, GraphMemoryOperationsOnAnotherSessionsMemory) {
  RawGuest other(daemon_->socket_path());
  Open(other);
  const uint64_t theirs = Alloc(other, 4096);
  RawGuest g(daemon_->socket_path());
  Open(g);
  const uint64_t mine = Alloc(g, 4096);
  MemcpyHtoDRequest write;
  write.ctx = kCtx;
  write.dst = theirs;
  const uint32_t value = 0xBAD;
  StreamWaitValueRequest wait;
  wait.ctx = kCtx;
  wait.address = theirs;
  wait.width = 4;
  Entries e;
  e.Add(write, {reinterpret_cast<const uint8_t*>(&value), 4}).Add(wait);
  write.dst = mine;
  e.Add(write, {reinterpret_cast<const uint8_t*>(&value), 4});
  ++attacks_;
  ASSERT_EQ(g.Call(Create(7, e.count()), e.bytes()), 0);
  GraphExecLaunchRequest launch;
  launch.ctx = kCtx;
  launch.exec = 7;
  EXPECT_EQ(g.Call(launch, {}, nullptr, nullptr, kFlagWantReply),
            static_cast<int32_t>(Code::kInvalidValue));
  CtxSynchronizeRequest sync;
  sync.ctx = kCtx;
  (void)g.Call(sync);  // the recorded error, if the adapter records one
  MemcpyDtoHRequest read;
  read.ctx = kCtx;
  read.src = theirs;
  read.size = 4;
  std::vector<uint8_t> data;
  EXPECT_EQ(other.Call(read, {}, nullptr, &data), 0);
  ASSERT_EQ(data.size(), 4u);
  EXPECT_EQ(data[0], 0u);  // never written
  read.src = mine;
  EXPECT_EQ(g.Call(read, {}, nullptr, &data), 0);
  ASSERT_EQ(data.size(), 4u);
  EXPECT_EQ(data[0], 0xADu);  // the session's own write ran
  EXPECT_EQ(other.Call(sync), 0);
}

TEST_F(ProtocolAbuseTest, GraphWaitEntryNamingAStream) {
  ExpectFatal("GraphExecCreate: StreamWaitValue entry: names a stream", [](RawGuest& g) {
    Open(g);
    StreamWaitValueRequest wait;
    wait.ctx = kCtx;
    wait.stream = 3;
    wait.width = 4;
    Entries e;
    e.Add(wait);
    g.Send(Create(5, e.count()), e.bytes());
  });
}

}  // namespace
}  // namespace pvgpu::hostile
