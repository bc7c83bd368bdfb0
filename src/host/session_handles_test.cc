// The session's handles, limits and module images over the in-process channel
// (session_fixture.h): unknown, stale and foreign handles end the session with their reason;
// creations past a limit are errors; link images are decoded by the session.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "host/session_fixture.h"
#include "protocol/link_image.h"

namespace pvgpu::host {
namespace {

using namespace protocol;

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
