// Arrays, texture and surface objects under hostile guests (docs/textures.md): descriptors with
// extents, levels, pitches and ranges near UINT64_MAX are CUDA errors and the session goes on;
// handles that name no array or texture of the context end the session. Same fixture and
// bystander as protocol_abuse_test.cc.
#include "tests/hostile/abuse_fixture.h"

namespace pvgpu::hostile {
namespace {

using namespace protocol;

ArrayCreateRequest Array(uint64_t handle, uint64_t w, uint64_t h, uint64_t d, uint32_t levels) {
  ArrayCreateRequest create;
  create.ctx = kCtx;
  create.array = handle;
  create.width = w;
  create.height = h;
  create.depth = d;
  create.format = 0x20;  // float
  create.channels = 4;
  create.levels = levels;
  return create;
}

TEST_F(ProtocolAbuseTest, ArrayDescriptorsNearUint64Max) {
  RawGuest g(daemon_->socket_path());
  Open(g);
  ArrayCreateReply reply;
  const int32_t invalid = static_cast<int32_t>(Code::kInvalidValue);
  EXPECT_EQ(g.Call(Array(1, kMax, kMax, kMax, 1), {}, &reply), invalid);
  EXPECT_EQ(g.Call(Array(2, 1u << 16, 1u << 16, 1u << 14, 1), {}, &reply), invalid);
  EXPECT_EQ(g.Call(Array(3, 64, 64, 0, 64), {}, &reply), invalid);
  EXPECT_EQ(g.Call(Array(4, 64, 64, 0, 0), {}, &reply), invalid);
  ArrayCreateRequest cube = Array(5, 8, 8, kMax - 5, 1);
  cube.flags = 0x04 | 0x01;
  EXPECT_EQ(g.Call(cube, {}, &reply), invalid);
  ArrayCreateRequest odd = Array(6, 8, 8, 0, 1);
  odd.channels = 3;
  EXPECT_EQ(g.Call(odd, {}, &reply), invalid);
  // A good one, and textures over it and over memory whose descriptors do not fit.
  ASSERT_EQ(g.Call(Array(7, 16, 16, 0, 5), {}, &reply), 0);
  const uint64_t base = Alloc(g, 4096);
  TexObjectCreateRequest tex;
  tex.ctx = kCtx;
  tex.texture = 20;
  tex.array = 7;
  tex.resource_type = 0;
  tex.array_level = 5;  // one past the last
  EXPECT_EQ(g.Call(tex), invalid);
  tex.array_level = 0xFFFFFFFFu;
  EXPECT_EQ(g.Call(tex), invalid);
  tex.array_level = 0;
  tex.surface = 1;  // the array was not made for surfaces
  EXPECT_EQ(g.Call(tex), invalid);
  tex.surface = 7;
  EXPECT_EQ(g.Call(tex), invalid);
  tex.surface = 0;
  tex.address[0] = 9;
  EXPECT_EQ(g.Call(tex), invalid);
  tex.address[0] = 0;
  tex.resource_type = 3;  // pitch-2D over memory, naming an array too
  EXPECT_EQ(g.Call(tex), invalid);
  tex.array = 0;
  tex.dptr = base;
  tex.format = 0x20;
  tex.channels = 1;
  tex.width = kMax;
  tex.height = kMax;
  tex.pitch = kMax;
  EXPECT_EQ(g.Call(tex), invalid);
  tex.width = 16;
  tex.height = 17;  // 17 rows of 256 bytes pass the 4 KiB allocation
  tex.pitch = 256;
  EXPECT_EQ(g.Call(tex), invalid);
  tex.height = 16;
  tex.dptr = base + 1;  // misaligned for floats
  EXPECT_EQ(g.Call(tex), invalid);
  tex.dptr = kMax - 3;
  EXPECT_EQ(g.Call(tex), invalid);
  tex.dptr = base;
  EXPECT_EQ(g.Call(tex), 0);
  tex.resource_type = 2;  // linear
  tex.texture = 21;
  tex.width = (uint64_t{1} << 32) + 1;
  EXPECT_EQ(g.Call(tex), invalid);
  tex.width = 1024;  // exactly the allocation
  EXPECT_EQ(g.Call(tex), 0);
  TexObjectDestroyRequest destroy;
  destroy.ctx = kCtx;
  destroy.texture = 21;
  g.Send(destroy);
  ArrayDestroyRequest gone;
  gone.ctx = kCtx;
  gone.array = 7;
  g.Send(gone);
  EXPECT_EQ(g.Call(HostStatusRequest{}), 0);
}

TEST_F(ProtocolAbuseTest, TextureOfAnUnknownArray) {
  ExpectFatal("TexObjectCreate: unknown array handle 99", [](RawGuest& g) {
    Open(g);
    TexObjectCreateRequest tex;
    tex.ctx = kCtx;
    tex.texture = 1;
    tex.array = 99;
    g.Send(tex);
  });
}

TEST_F(ProtocolAbuseTest, ArrayDestroyedTwice) {
  ExpectFatal("ArrayDestroy: unknown array handle 3", [](RawGuest& g) {
    Open(g);
    ArrayCreateReply reply;
    ASSERT_EQ(g.Call(Array(3, 4, 4, 0, 1), {}, &reply), 0);
    ArrayDestroyRequest destroy;
    destroy.ctx = kCtx;
    destroy.array = 3;
    g.Send(destroy);
    g.Send(destroy);
  });
}

TEST_F(ProtocolAbuseTest, AnotherContextsArray) {
  ExpectFatal("TexObjectCreate: unknown array handle 3", [](RawGuest& g) {
    Open(g);
    CtxCreateRequest other;
    other.ctx = kCtx + 1;
    ASSERT_EQ(g.Call(other), 0);
    ArrayCreateReply reply;
    ASSERT_EQ(g.Call(Array(3, 4, 4, 0, 1), {}, &reply), 0);
    TexObjectCreateRequest tex;
    tex.ctx = kCtx + 1;
    tex.texture = 4;
    tex.array = 3;
    g.Send(tex);
  });
}

TEST_F(ProtocolAbuseTest, TextureReusesAHandle) {
  ExpectFatal("TexObjectCreate: new texture handle 4 is in use", [](RawGuest& g) {
    Open(g);
    ArrayCreateReply reply;
    ASSERT_EQ(g.Call(Array(3, 4, 4, 0, 1), {}, &reply), 0);
    TexObjectCreateRequest tex;
    tex.ctx = kCtx;
    tex.texture = 4;
    tex.array = 3;
    ASSERT_EQ(g.Call(tex), 0);
    g.Send(tex);
  });
}

}  // namespace
}  // namespace pvgpu::hostile
