// Staged module uploads over the in-process channel (session_fixture.h): an image in chunks
// loads and runs; sizes past the session's limits are refused with an error and the session
// goes on; chunks out of order or past the size, and a load of an unfinished upload, end the
// session; a guest that leaves mid-upload leaves nothing staged.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "host/session_fixture.h"

namespace pvgpu::host {
namespace {

using namespace protocol;

constexpr uint64_t kUpload = 0x500;

class SessionUploadTest : public SessionTest {
 protected:
  Code Begin(uint64_t size, uint64_t upload = kUpload, uint64_t* limit = nullptr) {
    ModuleUploadBeginRequest begin;
    begin.upload = upload;
    begin.size = size;
    HostMessage reply;
    const Code code = Call(begin, {}, &reply);
    if (limit != nullptr) *limit = reply.As<ModuleUploadBeginReply>().limit;
    return code;
  }
  void Chunk(uint64_t offset, std::span<const uint8_t> data, uint64_t upload = kUpload) {
    ModuleUploadChunkRequest chunk;
    chunk.upload = upload;
    chunk.offset = offset;
    Send(chunk, data);
  }
  Code Load(ModuleDescription* description, uint64_t upload = kUpload, uint64_t module = kModule) {
    ModuleLoadUploadedRequest load;
    load.ctx = kCtx;
    load.module = module;
    load.upload = upload;
    load.image_kind = static_cast<uint32_t>(ImageKind::kPtx);
    load.log_limit = 4096;
    HostMessage reply;
    const Code code = Call(load, {}, &reply);
    if (code != Code::kDeviceUnavailable) {
      EXPECT_TRUE(description->Decode(reply.Payload(sizeof(ModuleLoadUploadedReply))));
    }
    return code;
  }
  static std::span<const uint8_t> Ptx() { return Bytes(kPtx, sizeof(kPtx)); }
};

TEST_F(SessionUploadTest, AnImageInChunksLoadsAndRuns) {
  Hello();
  Open();
  const auto image = Ptx();
  ASSERT_EQ(Begin(image.size()), Code::kOk);
  EXPECT_EQ(session_->Snapshot().staged_bytes, image.size());
  constexpr size_t kChunk = 100;  // many chunks, the last one short
  for (size_t offset = 0; offset < image.size(); offset += kChunk) {
    Chunk(offset, image.subspan(offset, std::min(kChunk, image.size() - offset)));
  }
  ModuleDescription description;
  ASSERT_EQ(Load(&description), Code::kOk) << description.error_log;
  EXPECT_EQ(session_->Snapshot().staged_bytes, 0u) << "the load consumes the upload";
  ASSERT_EQ(description.kernels.size(), 3u);
  EXPECT_EQ(description.kernels[0].name, "add_one");

  const uint64_t data = Alloc(16);
  const uint32_t values[4] = {1, 2, 3, 4};
  MemcpyHtoDRequest write;
  write.ctx = kCtx;
  write.dst = data;
  Send(write, Bytes(values, sizeof(values)));
  AddOneParams params{data, 4};
  ASSERT_EQ(Launch(0, Bytes(&params, 12), 4), Code::kOk);
  const auto read = Read(data, sizeof(values));
  uint32_t out[4];
  std::memcpy(out, read.data(), sizeof(out));
  EXPECT_EQ(out[0], 2u);
  EXPECT_EQ(out[3], 5u);

  // The upload's handle is gone with it.
  EXPECT_EQ(Load(&description, kUpload, kModule + 1), Code::kDeviceUnavailable);
  ExpectViolation("ModuleLoadUploaded: unknown upload handle 1280");
}

TEST_F(SessionUploadTest, SizesPastTheLimitsAreRefusedAndTheSessionGoesOn) {
  SessionPolicy policy;
  policy.limits.upload_bytes = 4096;
  policy.limits.uploads = 2;
  Restart(policy);
  Hello();
  Open();
  uint64_t limit = 0;
  EXPECT_EQ(Begin(4097, kUpload, &limit), Code::kOutOfMemory);
  EXPECT_EQ(limit, 4096u);
  EXPECT_EQ(Begin(~uint64_t{0}), Code::kOutOfMemory);
  EXPECT_EQ(Begin(0), Code::kInvalidValue);
  // Together, unfinished uploads stay within upload_bytes, and there are at most `uploads`.
  ASSERT_EQ(Begin(3000, kUpload), Code::kOk);
  EXPECT_EQ(Begin(2000, kUpload + 1), Code::kOutOfMemory);
  ASSERT_EQ(Begin(1000, kUpload + 2), Code::kOk);
  EXPECT_EQ(Begin(1, kUpload + 3), Code::kOutOfMemory);
  EXPECT_EQ(session_->Snapshot().staged_bytes, 4000u);
  // A module image over the limit in a single ModuleLoad is refused the same way.
  std::string big(5000, ' ');
  ModuleDescription description;
  EXPECT_EQ(LoadModule(ImageKind::kPtx, Bytes(big.data(), big.size()), &description),
            Code::kOutOfMemory);
  EXPECT_NE(description.error_log.find("exceeds the session's limit of 4096 bytes"),
            std::string::npos)
      << description.error_log;
  EXPECT_EQ(Synchronize(), Code::kOk);
  EXPECT_FALSE(session_->finished());
}

TEST_F(SessionUploadTest, AChunkOutOfOrderEndsTheSession) {
  Hello();
  ASSERT_EQ(Begin(1000), Code::kOk);
  const std::vector<uint8_t> bytes(100, 'x');
  Chunk(0, bytes);
  Chunk(200, bytes);
  ExpectViolation("ModuleUploadChunk: offset 200 after 100 bytes");
}

TEST_F(SessionUploadTest, AChunkPastTheSizeEndsTheSession) {
  Hello();
  ASSERT_EQ(Begin(150), Code::kOk);
  const std::vector<uint8_t> bytes(100, 'x');
  Chunk(0, bytes);
  Chunk(100, bytes);
  ExpectViolation("ModuleUploadChunk: 100 bytes past the upload's size of 150");
}

TEST_F(SessionUploadTest, LoadingAnUnfinishedUploadEndsTheSession) {
  Hello();
  Open();
  ASSERT_EQ(Begin(Ptx().size()), Code::kOk);
  Chunk(0, Ptx().first(64));
  ModuleDescription description;
  EXPECT_EQ(Load(&description), Code::kDeviceUnavailable);
  ExpectViolation("ModuleLoadUploaded: 64 of " + std::to_string(Ptx().size()) + " bytes uploaded");
}

TEST_F(SessionUploadTest, AGuestThatLeavesMidUploadLeavesNothingStaged) {
  Hello();
  Open();
  ASSERT_EQ(Begin(1u << 20), Code::kOk);
  const std::vector<uint8_t> half(512u << 10, 'x');
  Chunk(0, half);
  EXPECT_EQ(Synchronize(), Code::kOk);
  EXPECT_EQ(session_->Snapshot().staged_bytes, 1u << 20);
  guest_->Close();
  ASSERT_TRUE(Ended());
  EXPECT_EQ(session_->Snapshot().staged_bytes, 0u);
}

}  // namespace
}  // namespace pvgpu::host
