#include "protocol/wire.h"

#include <gtest/gtest.h>

#include <sstream>

namespace pvgpu::protocol {
namespace {

struct RecordingHandler {
  std::string seen;
  int Handle(const MemAllocRequest& request, std::span<const uint8_t> payload) {
    seen = "MemAlloc size=" + std::to_string(request.size);
    return static_cast<int>(payload.size());
  }
  int Handle(const MemcpyHtoDRequest& request, std::span<const uint8_t> payload) {
    seen = "HtoD dst=" + std::to_string(request.dst);
    return static_cast<int>(payload.size());
  }
  template <typename Other>
  int Handle(const Other&, std::span<const uint8_t>) {
    seen = "other";
    return -1;
  }
};

std::vector<uint8_t> Bytes(const auto& request, size_t extra = 0) {
  std::vector<uint8_t> bytes(sizeof(request) + extra, 0xab);
  std::memcpy(bytes.data(), &request, sizeof(request));
  return bytes;
}

TEST(DispatchTest, DecodesFixedRequest) {
  MemAllocRequest request;
  request.ctx = 7;
  request.size = 4096;
  RecordingHandler handler;
  int result = 0;
  auto body = Bytes(request);
  EXPECT_EQ(Dispatch(handler, static_cast<uint32_t>(Op::kMemAlloc), body, &result),
            DecodeError::kNone);
  EXPECT_EQ(handler.seen, "MemAlloc size=4096");
  EXPECT_EQ(result, 0);
}

TEST(DispatchTest, PassesPayloadAfterFixedPart) {
  MemcpyHtoDRequest request;
  request.dst = 0x1000;
  RecordingHandler handler;
  int result = 0;
  auto body = Bytes(request, 100);
  EXPECT_EQ(Dispatch(handler, static_cast<uint32_t>(Op::kMemcpyHtoD), body, &result),
            DecodeError::kNone);
  EXPECT_EQ(handler.seen, "HtoD dst=4096");
  EXPECT_EQ(result, 100);
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
  EXPECT_TRUE(handler.seen.empty());
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
