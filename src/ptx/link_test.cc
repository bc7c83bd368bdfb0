// LoadLinkedProgram: PTX modules linked as relocatable device code.
#include <gtest/gtest.h>

#include "ptx/ptx.h"
#include "ptx/test_util.h"

namespace pvgpu::ptx {
namespace {

using testing::Params;
using testing::PlaceInto;
using testing::SharedExecutor;
using testing::TestMemory;

constexpr const char* kHeader = ".version 9.0\n.target sm_75\n.address_size 64\n";

// Calls `scale` (defined elsewhere) and a private `bias` of its own, and reads an external
// variable `factor` (also defined elsewhere).
const std::string kMain = std::string(kHeader) + R"(
.extern .func (.param .b32 ret) scale(.param .b32 x);
.extern .global .align 4 .u32 factor;
.func (.param .b32 ret) bias(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  add.s32 %r2, %r1, 1000;
  st.param.b32 [ret], %r2;
  ret;
}
.visible .entry run(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  {
  .param .b32 a;
  .param .b32 r;
  st.param.b32 [a], %r1;
  call.uni (r), scale, (a);
  ld.param.b32 %r2, [r];
  }
  {
  .param .b32 a;
  .param .b32 r;
  st.param.b32 [a], %r2;
  call.uni (r), bias, (a);
  ld.param.b32 %r3, [r];
  }
  ld.global.u32 %r4, [factor];
  add.s32 %r5, %r3, %r4;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r5;
  ret;
}
)";

// Defines `scale` and `factor`, a private `bias` of its own that must not be confused with the
// first module's, and a weak `scale_weak` that the strong one in kStrong replaces.
const std::string kLibrary = std::string(kHeader) + R"(
.visible .global .align 4 .u32 factor = 7;
.func (.param .b32 ret) bias(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  mul.lo.s32 %r2, %r1, 3;
  st.param.b32 [ret], %r2;
  ret;
}
.visible .func (.param .b32 ret) scale(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  {
  .param .b32 a;
  .param .b32 r;
  st.param.b32 [a], %r1;
  call.uni (r), bias, (a);
  ld.param.b32 %r2, [r];
  }
  st.param.b32 [ret], %r2;
  ret;
}
)";

struct Linked {
  testing::Loaded loaded;
  Status status;
};

Linked Link(TestMemory& mem, std::vector<std::pair<std::string, std::string>> modules) {
  std::vector<LinkSource> sources;
  for (const auto& [name, text] : modules) sources.push_back({name, text});
  std::string log;
  auto program = LoadLinkedProgram(sources, &log);
  Linked l;
  l.loaded = PlaceInto(std::move(program), std::move(log), mem, &l.status);
  return l;
}

std::vector<uint32_t> RunKernel(TestMemory& mem, const testing::Loaded& l, uint32_t threads) {
  const KernelInfo* k = l.program->FindKernel("run");
  EXPECT_NE(k, nullptr);
  if (k == nullptr) return {};
  const uint64_t out = mem.Alloc(threads * 4);
  Params p(*k);
  p.Set(0, out);
  LaunchEnv env;
  env.memory = &mem;
  env.global_addresses = l.global_addrs;
  Status s = SharedExecutor().Launch(*l.program, *k, {{1, 1, 1}, {threads, 1, 1}, 0}, p.span(), env);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return mem.Download<uint32_t>(out, threads);
}

TEST(LinkTest, ResolvesExternsAndKeepsPrivateNamesApart) {
  for (bool library_first : {false, true}) {
    TestMemory mem;
    auto l = library_first ? Link(mem, {{"lib.ptx", kLibrary}, {"main.ptx", kMain}})
                           : Link(mem, {{"main.ptx", kMain}, {"lib.ptx", kLibrary}});
    ASSERT_TRUE(l.status.ok()) << l.status.ToString() << "\n" << l.loaded.error_log;
    auto out = RunKernel(mem, l.loaded, 64);
    // scale(x) = 3x via lib's bias; then main's bias adds 1000; then + factor (7).
    for (uint32_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 3 * i + 1000 + 7) << i;
  }
}

TEST(LinkTest, UnresolvedExternalFailsAtLoad) {
  TestMemory mem;
  auto l = Link(mem, {{"main.ptx", kMain}, {"other.ptx", std::string(kHeader) +
                                                            ".visible .global .u32 factor;\n"}});
  EXPECT_FALSE(l.status.ok());
  EXPECT_NE(l.loaded.error_log.find("undefined reference to function 'scale'"), std::string::npos)
      << l.loaded.error_log;
  EXPECT_NE(l.loaded.error_log.find("main.ptx"), std::string::npos) << l.loaded.error_log;
}

TEST(LinkTest, DuplicateStrongDefinitionNamesBothInputs) {
  TestMemory mem;
  auto l = Link(mem, {{"lib.ptx", kLibrary}, {"main.ptx", kMain}, {"again.ptx", kLibrary}});
  ASSERT_FALSE(l.status.ok());
  EXPECT_EQ(l.status.code(), Code::kInvalidPtx);
  EXPECT_NE(l.loaded.error_log.find("again.ptx"), std::string::npos) << l.loaded.error_log;
  EXPECT_NE(l.loaded.error_log.find("lib.ptx"), std::string::npos) << l.loaded.error_log;
}

TEST(LinkTest, StrongDefinitionReplacesWeakOne) {
  std::string weak = kLibrary;
  weak.replace(weak.find(".visible .func (.param .b32 ret) scale"), 8, ".weak   ");
  // A strong `scale` that returns x + 1 instead of 3x.
  const std::string strong = std::string(kHeader) + R"(
.visible .func (.param .b32 ret) scale(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  add.s32 %r2, %r1, 1;
  st.param.b32 [ret], %r2;
  ret;
}
)";
  for (bool weak_first : {false, true}) {
    TestMemory mem;
    auto l = weak_first ? Link(mem, {{"weak.ptx", weak}, {"main.ptx", kMain}, {"s.ptx", strong}})
                        : Link(mem, {{"s.ptx", strong}, {"main.ptx", kMain}, {"weak.ptx", weak}});
    ASSERT_TRUE(l.status.ok()) << l.status.ToString() << "\n" << l.loaded.error_log;
    auto out = RunKernel(mem, l.loaded, 32);
    for (uint32_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], i + 1 + 1000 + 7) << i;
  }
}

TEST(LinkTest, ParseErrorsNameTheirInput) {
  TestMemory mem;
  auto l = Link(mem, {{"main.ptx", kMain}, {"broken.ptx", std::string(kHeader) + ".visible .func {"}});
  ASSERT_FALSE(l.status.ok());
  EXPECT_NE(l.loaded.error_log.find("broken.ptx"), std::string::npos) << l.loaded.error_log;
  EXPECT_NE(l.loaded.error_log.find("line 4"), std::string::npos) << l.loaded.error_log;
}

TEST(LinkTest, LibraryMembersJoinOnlyWhenNeeded) {
  // A member that defines what main needs joins; one that defines nothing needed (and would
  // clash with main's `run` kernel) stays out; so does a duplicate of a member already in.
  const std::string unrelated = std::string(kHeader) + ".visible .entry run()\n{\n  ret;\n}\n";
  std::vector<LinkSource> sources = {{"main.ptx", kMain},
                                     {"lib.a(unrelated.o)", unrelated, true},
                                     {"lib.a(lib.o)", kLibrary, true},
                                     {"lib.a(again.o)", kLibrary, true}};
  TestMemory mem;
  std::string log, info;
  auto program = LoadLinkedProgram(sources, &log, &info);
  Status status;
  auto l = PlaceInto(std::move(program), log, mem, &status);
  ASSERT_TRUE(status.ok()) << status.ToString() << "\n" << log;
  EXPECT_NE(info.find("linked 2 of 4 modules"), std::string::npos) << info;
  auto out = RunKernel(mem, l, 8);
  for (uint32_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 3 * i + 1000 + 7) << i;
}

TEST(LinkTest, OneInputIsAPlainLoad) {
  TestMemory mem;
  auto l = Link(mem, {{"lib.ptx", kLibrary}});
  ASSERT_TRUE(l.status.ok()) << l.loaded.error_log;
  EXPECT_EQ(l.loaded.program->globals().size(), 1u);
}

}  // namespace
}  // namespace pvgpu::ptx
