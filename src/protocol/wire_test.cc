#include "protocol/wire.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace pvgpu::protocol {
namespace {

// Records what the generated dispatch asked of it. Contexts are the ids 1 to 9, each with
// streams and modules of ids 10 * context + 1 to 10 * context + 9; context 9 is poisoned by a
// fault; ids from 1000 are free for new objects.
struct RecordingHandler {
  using Result = int;
  struct Object {
    uint64_t id;
  };
  std::vector<std::string> log;
  Object objects[100];

  Object* Lookup(uint64_t id, uint64_t first, uint64_t last) {
    if (id < first || id > last) return nullptr;
    objects[id].id = id;
    return &objects[id];
  }
  template <HandleKind K>
  Object* Find(HandleTag<K>, uint64_t id) {  // contexts, and regions of the session
    return Lookup(id, 1, 9);
  }
  template <HandleKind K>
  Object* Find(HandleTag<K>, uint64_t id, Object& ctx) {
    return Lookup(id, 10 * ctx.id + 1, 10 * ctx.id + 9);
  }
  template <HandleKind K, typename... Scope>
  bool Fresh(HandleTag<K>, uint64_t id, Scope&...) {
    return id >= 1000;
  }
  template <typename Request, typename... Scope>
  int Unknown(const Request&, HandleKind kind, uint64_t id, Scope&...) {
    log.push_back(std::string(OpName(Request::kOp)) + " unknown " + HandleKindName(kind) + " " +
                  std::to_string(id));
    return -1;
  }
  template <typename Request>
  int Taken(const Request&, HandleKind kind, uint64_t id) {
    log.push_back(std::string(OpName(Request::kOp)) + " taken " + HandleKindName(kind) + " " +
                  std::to_string(id));
    return -2;
  }
  Code Fault(const Object& ctx) { return ctx.id == 9 ? Code::kIllegalAddress : Code::kOk; }
  template <typename Request>
  int Answer(const Request&, Code code) {
    log.push_back(std::string(OpName(Request::kOp)) + " answered " + CodeName(code));
    return -3;
  }
  int Handle(const MemAllocRequest& request, std::span<const uint8_t>, Object& ctx) {
    log.push_back("MemAlloc ctx " + std::to_string(ctx.id) + " size " +
                  std::to_string(request.size));
    return 0;
  }
  int Handle(const MemcpyHtoDRequest&, std::span<const uint8_t> payload, Object& ctx,
             Object* stream) {
    log.push_back("HtoD ctx " + std::to_string(ctx.id) + " stream " +
                  (stream == nullptr ? "none" : std::to_string(stream->id)) + " payload " +
                  std::to_string(payload.size()));
    return 0;
  }
  int Handle(const LaunchKernelRequest&, std::span<const uint8_t>, Object& ctx, Object*,
             Object& module) {
    log.push_back("Launch ctx " + std::to_string(ctx.id) + " module " + std::to_string(module.id));
    return 0;
  }
  int Handle(const StreamCreateRequest& request, std::span<const uint8_t>, Object& ctx) {
    log.push_back("StreamCreate ctx " + std::to_string(ctx.id) + " new " +
                  std::to_string(request.stream));
    return 0;
  }
  template <typename Other, typename... Objects>
  int Handle(const Other&, std::span<const uint8_t>, Objects&&...) {
    log.push_back("other");
    return 0;
  }
};

std::vector<uint8_t> Bytes(const auto& request, size_t extra = 0) {
  std::vector<uint8_t> bytes(sizeof(request) + extra, 0xab);
  std::memcpy(bytes.data(), &request, sizeof(request));
  return bytes;
}

template <typename Request>
std::vector<std::string> DispatchOnce(const Request& request, size_t payload = 0,
                                      int* result = nullptr) {
  RecordingHandler handler;
  int ignored = 0;
  const auto body = Bytes(request, payload);
  EXPECT_EQ(Dispatch(handler, static_cast<uint32_t>(Request::kOp), body,
                     result != nullptr ? result : &ignored),
            DecodeError::kNone);
  return handler.log;
}

using Log = std::vector<std::string>;

TEST(DispatchTest, ResolvesHandlesAndPassesThePayload) {
  MemAllocRequest alloc;
  alloc.ctx = 3;
  alloc.size = 4096;
  EXPECT_EQ(DispatchOnce(alloc), Log{"MemAlloc ctx 3 size 4096"});
  MemcpyHtoDRequest copy;
  copy.ctx = 2;
  copy.stream = 25;
  EXPECT_EQ(DispatchOnce(copy, 100), Log{"HtoD ctx 2 stream 25 payload 100"});
  copy.stream = 0;  // optional: the default stream
  EXPECT_EQ(DispatchOnce(copy), Log{"HtoD ctx 2 stream none payload 0"});
  StreamCreateRequest create;
  create.ctx = 4;
  create.stream = 1234;
  EXPECT_EQ(DispatchOnce(create), Log{"StreamCreate ctx 4 new 1234"});
}

TEST(DispatchTest, RefusesBeforeTheHandlerAndAnswersFaults) {
  int result = 0;
  MemAllocRequest alloc;
  alloc.ctx = 42;
  EXPECT_EQ(DispatchOnce(alloc, 0, &result), Log{"MemAlloc unknown context 42"});
  EXPECT_EQ(result, -1);
  MemcpyHtoDRequest copy;
  copy.ctx = 2;
  copy.stream = 35;  // a stream of context 3
  EXPECT_EQ(DispatchOnce(copy), Log{"MemcpyHtoD unknown stream 35"});
  LaunchKernelRequest launch;
  launch.ctx = 5;
  launch.stream = 0;
  launch.module = 0;  // not optional
  EXPECT_EQ(DispatchOnce(launch), Log{"LaunchKernel unknown module 0"});
  launch.module = 57;
  EXPECT_EQ(DispatchOnce(launch), Log{"Launch ctx 5 module 57"});
  StreamCreateRequest create;
  create.ctx = 4;
  create.stream = 7;
  EXPECT_EQ(DispatchOnce(create, 0, &result), Log{"StreamCreate taken stream 7"});
  EXPECT_EQ(result, -2);
  // Work on a context a fault poisoned is answered with the fault; bookkeeping goes on.
  alloc.ctx = 9;
  EXPECT_EQ(DispatchOnce(alloc, 0, &result), Log{"MemAlloc answered IllegalAddress"});
  EXPECT_EQ(result, -3);
  create.ctx = 9;
  create.stream = 2000;
  EXPECT_EQ(DispatchOnce(create), Log{"StreamCreate ctx 9 new 2000"});
}

TEST(DispatchTest, RejectsWrongSizesUnknownOpsAndHostMessages) {
  RecordingHandler handler;
  int result = 0;
  MemAllocRequest request;
  auto body = Bytes(request, 1);  // trailing bytes on a message without payload
  EXPECT_EQ(Dispatch(handler, static_cast<uint32_t>(Op::kMemAlloc), body, &result),
            DecodeError::kBadSize);
  body.resize(sizeof(request) - 1);  // truncated
  EXPECT_EQ(Dispatch(handler, static_cast<uint32_t>(Op::kMemAlloc), body, &result),
            DecodeError::kBadSize);
  EXPECT_EQ(Dispatch(handler, 0xdeadu, body, &result), DecodeError::kUnknownOp);
  PrintRequest print;
  auto print_body = Bytes(print);
  EXPECT_EQ(Dispatch(handler, static_cast<uint32_t>(Op::kPrint), print_body, &result),
            DecodeError::kWrongDirection);
  EXPECT_TRUE(handler.log.empty());
}

TEST(TraceTest, FormatsFields) {
  MemAllocRequest request;
  request.ctx = 0x10;
  request.size = 256;
  auto body = Bytes(request);
  std::ostringstream os;
  ASSERT_TRUE(TraceRequest(os, static_cast<uint32_t>(Op::kMemAlloc), body));
  EXPECT_EQ(os.str(), "MemAlloc(ctx=0x10 size=256)");
}

TEST(ModuleDescriptionTest, RoundTrips) {
  ModuleDescription description;
  description.kernels.push_back({"saxpy", {0, 4, 8}, {4, 4, 8}, 16, 0, 0, 10, 1024});
  description.globals.push_back({"table", 0x7000, 64});
  description.error_log = "";
  description.info_log = "ok";
  auto bytes = description.Encode();
  ModuleDescription decoded;
  ASSERT_TRUE(decoded.Decode(bytes));
  ASSERT_EQ(decoded.kernels.size(), 1u);
  EXPECT_EQ(decoded.kernels[0].name, "saxpy");
  EXPECT_EQ(decoded.kernels[0].param_sizes, (std::vector<uint32_t>{4, 4, 8}));
  EXPECT_EQ(decoded.globals[0].dptr, 0x7000u);
  EXPECT_EQ(decoded.info_log, "ok");
  bytes.pop_back();
  EXPECT_FALSE(decoded.Decode(bytes));
}

}  // namespace
}  // namespace pvgpu::protocol
