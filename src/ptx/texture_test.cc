// The engine's texture and surface instructions on their own, with hand-written PTX: queries,
// reductions, formatted stores, fetches far outside a texture (which must stay inside it: the
// test memory leaves unmapped gaps between allocations, so a stray read would fault), forged
// handles and the independent mode refused. The e2e programs (tests/e2e/textures_drv.c,
// surfaces_drv.c) cover sampling against the programming guide's formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/texture.h"
#include "ptx/test_util.h"
#include "ptx/texture_sample.h"

namespace pvgpu::ptx {
namespace {

using testing::SharedExecutor;
using testing::TestMemory;

constexpr char kHeader[] = ".version 7.5\n.target sm_75\n.address_size 64\n";

struct Fixture {
  TestMemory mem;
  texture::TextureTable table;
  std::shared_ptr<const Program> program;
  std::string log;

  Status Load(const std::string& body) {
    auto p = LoadProgram(kHeader + body, &log);
    if (!p.ok()) return p.status();
    program = *p;
    return Status::Ok();
  }

  // A 2D array of `w` x `h` elements of `format` x `channels` in its own allocation.
  uint64_t AddTexture(uint64_t handle, uint32_t format, uint32_t channels, uint64_t w, uint64_t h,
                      const void* data, bool surface, uint32_t address = texture::kClamp) {
    texture::ArrayShape shape;
    shape.format = format;
    shape.channels = channels;
    shape.width = w;
    shape.height = h;
    shape.flags = surface ? texture::kArraySurfaceLdst : 0;
    auto layout = texture::LayoutArray(shape);
    EXPECT_TRUE(layout.ok());
    const uint64_t base = mem.Alloc(layout->levels[0].bytes);
    std::memcpy(mem.Host(base), data, layout->levels[0].bytes);
    auto spec = std::make_shared<texture::TextureSpec>();
    spec->surface = surface;
    spec->geometry = texture::Geometry::k2D;
    spec->format = format;
    spec->channels = channels;
    spec->element_bytes = layout->element_bytes;
    spec->base = base;
    spec->levels = layout->levels;
    spec->address = {address, address, address};
    EXPECT_TRUE(texture::ValidateTexture(*spec).ok());
    table.objects[handle] = spec;
    return base;
  }

  // Runs kernel "k"(u64 object, u64 out) with one block of `threads`.
  Status Run(uint64_t object, uint64_t out, uint32_t threads = 1) {
    const KernelInfo* k = program->FindKernel("k");
    if (k == nullptr) return Error(Code::kNotFound, "no kernel k");
    std::vector<uint8_t> params(k->param_bytes);
    std::memcpy(params.data() + k->params[0].offset, &object, 8);
    std::memcpy(params.data() + k->params[1].offset, &out, 8);
    LaunchEnv env;
    env.memory = &mem;
    env.textures = &table;
    return SharedExecutor().Launch(*program, *k, LaunchConfig{{1, 1, 1}, {threads, 1, 1}, 0},
                                   params, env);
  }
};

constexpr char kEntry[] =
    ".visible .entry k(.param .u64 obj, .param .u64 out) {\n"
    "  .reg .b32 %r<16>; .reg .f32 %f<16>; .reg .b64 %rd<8>; .reg .pred %p<4>;\n"
    "  ld.param.u64 %rd1, [obj]; ld.param.u64 %rd2, [out];\n";

TEST(TextureTest, QueriesAnswerTheResource) {
  Fixture f;
  std::vector<float> data(6 * 3, 0);
  f.AddTexture(7, texture::kFloat, 1, 6, 3, data.data(), false);
  f.AddTexture(8, texture::kFloat, 1, 6, 3, data.data(), true);
  ASSERT_TRUE(f.Load(std::string(kEntry) + R"(
  txq.width.b32 %r1, [%rd1];             st.global.u32 [%rd2], %r1;
  txq.height.b32 %r1, [%rd1];            st.global.u32 [%rd2+4], %r1;
  txq.num_mipmap_levels.b32 %r1, [%rd1]; st.global.u32 [%rd2+8], %r1;
  txq.normalized_coords.b32 %r1, [%rd1]; st.global.u32 [%rd2+12], %r1;
  add.u64 %rd3, %rd1, 1;
  suq.width.b32 %r1, [%rd3];             st.global.u32 [%rd2+16], %r1;
  suq.height.b32 %r1, [%rd3];            st.global.u32 [%rd2+20], %r1;
  ret;
}
)").ok()) << f.log;
  const uint64_t out = f.mem.Alloc(24);
  ASSERT_TRUE(f.Run(7, out).ok());
  auto v = f.mem.Download<uint32_t>(out, 6);
  EXPECT_EQ(v[0], 6u);
  EXPECT_EQ(v[1], 3u);
  EXPECT_EQ(v[2], 1u);
  EXPECT_EQ(v[3], 0u);
  EXPECT_EQ(v[4], 6u);
  EXPECT_EQ(v[5], 3u);
}

TEST(TextureTest, FetchesFarOutsideStayInside) {
  Fixture f;
  std::vector<float> data(4 * 2);
  for (int i = 0; i < 8; ++i) data[i] = static_cast<float>(i + 1);
  for (uint32_t mode : {texture::kClamp, texture::kBorder, texture::kWrap, texture::kMirror}) {
    f.table.objects.clear();
    f.AddTexture(3, texture::kFloat, 1, 4, 2, data.data(), false, mode);
    // Huge, negative and NaN coordinates, float and integer.
    ASSERT_TRUE(f.Load(std::string(kEntry) + R"(
  mov.f32 %f1, 0f7E967699;  mov.f32 %f2, 0fFE967699;
  tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [%rd1, {%f1, %f2}]; st.global.f32 [%rd2], %f3;
  mov.f32 %f1, 0f7FC00000;
  tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [%rd1, {%f1, %f1}]; st.global.f32 [%rd2+4], %f3;
  mov.u32 %r1, 2147483647;  mov.u32 %r2, -2147483648;
  tex.2d.v4.f32.s32 {%f3, %f4, %f5, %f6}, [%rd1, {%r1, %r2}]; st.global.f32 [%rd2+8], %f3;
  ret;
}
)").ok()) << f.log;
    const uint64_t out = f.mem.Alloc(12);
    ASSERT_TRUE(f.Run(3, out).ok()) << "mode " << mode;
    auto v = f.mem.Download<float>(out, 3);
    if (mode == texture::kBorder) {
      EXPECT_EQ(v[0], 0.0f);  // the border colour (0)
      EXPECT_EQ(v[2], 0.0f);
    } else {
      // Unnormalized coordinates: wrap and mirror clamp; (+huge, -huge) is (3, 0).
      EXPECT_EQ(v[0], data[3]);
      EXPECT_EQ(v[2], data[3]);
    }
    EXPECT_EQ(v[1], data[0]);  // NaN reads element 0
  }
}

TEST(TextureTest, SurfaceReductionsAndFormattedStores) {
  Fixture f;
  std::vector<uint32_t> counters(4 * 2, 0);
  f.AddTexture(5, texture::kU32, 1, 4, 2, counters.data(), true);
  // Every lane adds 1 at (1, 1), and the max of its lane id at (2, 0).
  ASSERT_TRUE(f.Load(std::string(kEntry) + R"(
  mov.u32 %r1, 4; mov.u32 %r2, 1; mov.u32 %r3, 1;
  sured.b.add.2d.u32.trap [%rd1, {%r1, %r2}], %r3;
  mov.u32 %r1, 8; mov.u32 %r2, 0; mov.u32 %r4, %tid.x;
  sured.b.max.2d.u32.trap [%rd1, {%r1, %r2}], %r4;
  ret;
}
)").ok()) << f.log;
  ASSERT_TRUE(f.Run(5, 0, 64).ok());
  const uint64_t base = f.table.objects[5]->base;
  auto v = f.mem.Download<uint32_t>(base, 8);
  EXPECT_EQ(v[5], 64u);
  EXPECT_EQ(v[2], 63u);

  // sust.p converts floats into unsigned normalized bytes, rounding and saturating.
  std::vector<uint8_t> pixels(4 * 4 * 1, 0);
  f.AddTexture(6, texture::kUnorm8x4, 4, 4, 1, pixels.data(), true);
  ASSERT_TRUE(f.Load(std::string(kEntry) + R"(
  mov.f32 %f1, 0f3F000000; mov.f32 %f2, 0f3FC00000; mov.f32 %f3, 0fBF800000; mov.f32 %f4, 0f3E800000;
  mov.b32 %r1, %f1; mov.b32 %r2, %f2; mov.b32 %r3, %f3; mov.b32 %r4, %f4;
  mov.u32 %r5, 2; mov.u32 %r6, 0;
  sust.p.2d.v4.b32.trap [%rd1, {%r5, %r6}], {%r1, %r2, %r3, %r4};
  ret;
}
)").ok()) << f.log;
  ASSERT_TRUE(f.Run(6, 0).ok());
  auto px = f.mem.Download<uint8_t>(f.table.objects[6]->base, 16);
  EXPECT_EQ(px[8], 128);
  EXPECT_EQ(px[9], 255);
  EXPECT_EQ(px[10], 0);
  EXPECT_EQ(px[11], 64);
  EXPECT_EQ(px[0], 0);  // other elements untouched
  EXPECT_EQ(px[12], 0);
}

TEST(TextureTest, ForgedHandlesAndMisalignedAccessesFault) {
  Fixture f;
  std::vector<float> data(4, 1.0f);
  f.AddTexture(9, texture::kFloat, 1, 2, 2, data.data(), true);
  ASSERT_TRUE(f.Load(std::string(kEntry) + R"(
  mov.u32 %r1, 2; mov.u32 %r2, 0;
  suld.b.2d.b32.trap {%r3}, [%rd1, {%r1, %r2}];
  st.global.u32 [%rd2], %r3;
  ret;
}
)").ok()) << f.log;
  const uint64_t out = f.mem.Alloc(4);
  Status forged = f.Run(0x1234, out);
  EXPECT_EQ(forged.code(), Code::kIllegalAddress);
  EXPECT_NE(forged.message().find("names no surface object"), std::string::npos)
      << forged.message();
  Status misaligned = f.Run(9, out);
  EXPECT_EQ(misaligned.code(), Code::kMisalignedAddress) << misaligned.message();
  // A texture is no surface.
  f.AddTexture(10, texture::kFloat, 1, 2, 2, data.data(), false);
  EXPECT_EQ(f.Run(10, out).code(), Code::kIllegalAddress);
}

// A separate sampler (the independent mode's .samplerref) is refused at load, by name.
TEST(TextureTest, IndependentModeIsALoadError) {
  Fixture f;
  Status s = f.Load(R"(
.global .texref t;
.global .samplerref smp;
.visible .entry k(.param .u64 obj, .param .u64 out) {
  .reg .f32 %f<8>;
  mov.f32 %f1, 0f00000000;
  tex.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [t, smp, {%f1, %f1}];
  ret;
}
)");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(f.log.find(".samplerref"), std::string::npos) << f.log;
}

// A texture reference reads the object whose handle its variable holds (references.h): the
// guest library writes it there; 0, unbound, faults like any handle naming no object.
TEST(TextureTest, ReferenceReadsTheObjectItsVariableNames) {
  Fixture f;
  ASSERT_TRUE(f.Load(R"(
.global .texref t;
.visible .entry k(.param .u64 obj, .param .u64 out) {
  .reg .f32 %f<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd2, [out];
  mov.f32 %f1, 0f3FC00000;
  mov.f32 %f7, 0f3F000000;
  tex.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [t, {%f1, %f7}];
  st.global.f32 [%rd2], %f2;
  ret;
}
)").ok()) << f.log;
  ASSERT_EQ(f.program->globals().size(), 1u);
  EXPECT_EQ(f.program->globals()[0].name, "__pvgpu_texref_t");
  EXPECT_EQ(f.program->globals()[0].size, 8u);
  const float texels[4] = {1, 2, 3, 4};
  f.AddTexture(42, texture::kFloat, 1, 4, 1, texels, false);
  const uint64_t variable = f.mem.Alloc(8);
  const uint64_t out = f.mem.Alloc(4);
  const KernelInfo* k = f.program->FindKernel("k");
  ASSERT_NE(k, nullptr);
  std::vector<uint8_t> params(k->param_bytes);
  std::memcpy(params.data() + k->params[1].offset, &out, 8);
  const uint64_t addresses[] = {variable};
  LaunchEnv env;
  env.memory = &f.mem;
  env.textures = &f.table;
  env.global_addresses = addresses;
  auto run = [&] {
    return SharedExecutor().Launch(*f.program, *k, LaunchConfig{{1, 1, 1}, {1, 1, 1}, 0}, params,
                                   env);
  };
  const uint64_t unbound = 0;
  std::memcpy(f.mem.Host(variable), &unbound, 8);
  EXPECT_EQ(run().code(), Code::kIllegalAddress);
  const uint64_t bound = 42;
  std::memcpy(f.mem.Host(variable), &bound, 8);
  ASSERT_TRUE(run().ok());
  float got = 0;
  std::memcpy(&got, f.mem.Host(out), 4);
  EXPECT_EQ(got, 2.0f);  // texel 1 of the row, point-sampled at x = 1.5
}

#ifdef PVGPU_PTX_CORPUS_DIR
// nvcc's own code for surf2Dwrite and tex2D<float> (tests/ptx_corpus/textures.cu), for the
// oldest and newest targets: written through a surface, read back through a texture over the
// same memory, with linear filtering between neighbours.
TEST(TextureTest, NvccSurfaceWriteThenTextureRead) {
  for (const char* arch : {"75", "90"}) {
    Fixture f;
    const std::string path = std::string(PVGPU_PTX_CORPUS_DIR) + "/textures_sm" + arch + ".ptx";
    std::ifstream in(path);
    std::string ptx((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(ptx.empty()) << path;
    auto p = LoadProgram(ptx, &f.log);
    ASSERT_TRUE(p.ok()) << f.log;
    f.program = *p;
    constexpr int kW = 8, kH = 4;
    std::vector<float> zeros(kW * kH, 0);
    const uint64_t base = f.AddTexture(1, texture::kFloat, 1, kW, kH, zeros.data(), true);
    auto spec = std::make_shared<texture::TextureSpec>(*f.table.objects[1]);
    spec->surface = false;
    spec->filter = texture::kLinear;
    f.table.objects[2] = spec;
    auto launch = [&](const char* name, std::vector<uint64_t> wide, int w, int h) {
      const KernelInfo* k = f.program->FindKernel(name);
      EXPECT_NE(k, nullptr);
      std::vector<uint8_t> params(k->param_bytes);
      size_t i = 0;
      for (; i < wide.size(); ++i) std::memcpy(params.data() + k->params[i].offset, &wide[i], 8);
      std::memcpy(params.data() + k->params[i].offset, &w, 4);
      std::memcpy(params.data() + k->params[i + 1].offset, &h, 4);
      LaunchEnv env;
      env.memory = &f.mem;
      env.textures = &f.table;
      return SharedExecutor().Launch(*f.program, *k, LaunchConfig{{kH, 1, 1}, {kW, 1, 1}, 0},
                                     params, env);
    };
    ASSERT_TRUE(launch("write_image", {1}, kW, kH).ok());
    auto written = f.mem.Download<float>(base, kW * kH);
    for (int y = 0; y < kH; ++y) {
      for (int x = 0; x < kW; ++x) EXPECT_EQ(written[y * kW + x], 10.0f * x + y);
    }
    const uint64_t out = f.mem.Alloc(kW * kH * 4);
    ASSERT_TRUE(launch("sample_image", {2, out}, kW, kH).ok());
    auto got = f.mem.Download<float>(out, kW * kH);
    for (int y = 0; y < kH; ++y) {
      for (int x = 0; x < kW; ++x) {
        // At the centre: the texel; half a texel on: the mean with the next (clamped) one.
        const float next = 10.0f * (x + 1 < kW ? x + 1 : x) + y;
        EXPECT_EQ(got[y * kW + x], (10.0f * x + y) + 0.5f * (10.0f * x + y) + 0.5f * next)
            << "sm" << arch << " at " << x << ", " << y;
      }
    }
  }
}
#endif

TEST(TextureTest, WeightsAreNineBitFixedPoint) {
  EXPECT_EQ(tex::QuantizeWeight(0.1f), 26.0f / 256.0f);
  EXPECT_EQ(tex::QuantizeWeight(0.999f), 1.0f);
  EXPECT_EQ(tex::QuantizeWeight(0.25f), 0.25f);
  EXPECT_EQ(tex::QuantizeWeight(0.0019f), 0.0f);
}

}  // namespace
}  // namespace pvgpu::ptx
