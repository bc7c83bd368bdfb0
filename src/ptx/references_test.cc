#include "ptx/references.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "ptx/ptx.h"

namespace pvgpu::ptx {
namespace {

std::string Rewrite(const std::string& text) {
  auto out = RewriteReferences(text);
  EXPECT_TRUE(out.ok()) << out.status().message();
  if (!out.ok() || !out->has_value()) return text;
  return **out;
}

size_t Lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

TEST(ReferencesTest, TextWithoutReferencesIsLeftAlone) {
  auto out = RewriteReferences(
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".global .u64 x;\n.visible .entry k() { ret; }\n");
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->has_value());
  // The words alone are not references.
  out = RewriteReferences(".version 8.0\n.target sm_80, texmode_unified\n.address_size 64\n");
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->has_value());
}

TEST(ReferencesTest, DeclarationsBecomeHandleVariables) {
  const std::string out = Rewrite(
      ".version 6.0\n.target sm_50\n.address_size 64\n"
      ".global .texref a, b;\n"
      ".visible .global .surfref s;\n"
      ".tex .u32 old;\n"
      ".extern .global .texref e;\n");
  EXPECT_NE(out.find(".global .align 8 .u64 __pvgpu_texref_a; .global .align 8 .u64 "
                     "__pvgpu_texref_b;\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(".visible .global .align 8 .u64 __pvgpu_surfref_s;"), std::string::npos)
      << out;
  EXPECT_NE(out.find(".global .align 8 .u64 __pvgpu_texref_old;"), std::string::npos) << out;
  EXPECT_NE(out.find(".extern .global .align 8 .u64 __pvgpu_texref_e;"), std::string::npos) << out;
}

TEST(ReferencesTest, UsesLoadTheHandleOnTheSameLine) {
  const std::string in =
      ".version 6.0\n.target sm_50\n.address_size 64\n"
      ".global .texref t;\n"
      ".global .surfref s;\n"
      ".visible .entry k(.param .u64 p)\n{\n"
      "  .reg .pred %p<2>; .reg .f32 %f<8>; .reg .b32 %r<4>; .reg .b64 %rd<2>;\n"
      "L1: @!%p1 tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [t, {%f5, %f6}];\n"
      "  txq.width.b32 %r1, [t];\n"
      "  sust.b.2d.b32.trap [s, {%r1, %r2}], {%r3};\n"
      "  suld.b.2d.b32.trap {%r3}, [s, {%r1, %r2}];\n"
      "  ld.global.f32 %f1, [%rd1];\n"
      "  ret;\n}\n";
  const std::string out = Rewrite(in);
  EXPECT_EQ(Lines(out), Lines(in));  // line numbers in messages stay the module's
  EXPECT_NE(out.find("L1: { .reg .b64 %__pvgpu_ref; ld.global.u64 %__pvgpu_ref, "
                     "[__pvgpu_texref_t]; @!%p1 tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, "
                     "[%__pvgpu_ref, {%f5, %f6}]; }"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("[__pvgpu_texref_t]; txq.width.b32 %r1, [%__pvgpu_ref]; }"), std::string::npos)
      << out;
  EXPECT_NE(out.find("[__pvgpu_surfref_s]; sust.b.2d.b32.trap [%__pvgpu_ref, {%r1, %r2}], "
                     "{%r3}; }"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("[__pvgpu_surfref_s]; suld.b.2d.b32.trap {%r3}, [%__pvgpu_ref, "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  ld.global.f32 %f1, [%rd1];\n"), std::string::npos) << out;
  // And the engine takes the result.
  std::string log;
  auto program = LoadProgram(in, &log);
  ASSERT_TRUE(program.ok()) << log;
  EXPECT_EQ((*program)->globals().size(), 2u);
}

// What stays for the engine to refuse: initializers, arrays of references, kernel parameters,
// separate samplers.
TEST(ReferencesTest, OtherFormsAreLeftForTheEngine) {
  const std::string in =
      ".version 6.0\n.target sm_50\n.address_size 64\n"
      ".global .texref init = { filter_mode = linear };\n"
      ".global .texref many[4];\n"
      ".visible .entry k(.param .texref p) { ret; }\n";
  EXPECT_EQ(Rewrite(in), in);
  std::string log;
  EXPECT_FALSE(LoadProgram(in, &log).ok());
}

TEST(ReferencesTest, DebugSectionsAndLocLinesAreSkipped) {
  const std::string in =
      ".version 6.0\n.target sm_50\n.address_size 64\n"
      ".file 1 \"k.cu\"\n"
      ".global .texref t;\n"
      ".visible .entry k(.param .u64 p)\n{\n"
      "  .reg .f32 %f<8>; .reg .b32 %r<2>;\n"
      "  .loc 1 2 3\n"
      "  tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [t, {%r1}];\n"
      "  ret;\n}\n"
      ".section .debug_abbrev { .b8 17 .b8 1 }\n";
  const std::string out = Rewrite(in);
  EXPECT_NE(out.find("[%__pvgpu_ref, {%r1}]; }"), std::string::npos) << out;
  EXPECT_NE(out.find(".section .debug_abbrev { .b8 17 .b8 1 }"), std::string::npos) << out;
}

// For a host driver's JIT, the device runtime's cudaGraphSetConditional becomes a store at the
// handle (which pvgpu's conditional nodes make an address), defined in the module itself.
TEST(ReferencesTest, GraphSetConditionalIsDefinedAsAStore) {
  const std::string in =
      ".version 9.0\n.target sm_75\n.address_size 64\n"
      ".extern .func cudaGraphSetConditional\n(\n\t.param .b64 p0,\n\t.param .b32 p1\n)\n;\n"
      ".visible .entry k(.param .u64 h)\n{\n"
      "  .reg .b64 %rd<2>;\n  ld.param.u64 %rd1, [h];\n"
      "  { .param .b64 a; st.param.b64 [a], %rd1; .param .b32 b; st.param.b32 [b], 7;\n"
      "  call.uni cudaGraphSetConditional, (a, b); }\n  ret;\n}\n";
  auto out = DefineGraphSetConditional(in);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_TRUE(out->has_value());
  const std::string& text = **out;
  EXPECT_EQ(Lines(text), Lines(in));
  EXPECT_EQ(text.find(".extern"), std::string::npos) << text;
  EXPECT_NE(text.find(".func cudaGraphSetConditional(.param .b64 handle, .param .b32 value) {"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("st.u32 [%__pvgpu_h], %__pvgpu_v; ret; }"), std::string::npos) << text;
  std::string log;
  EXPECT_TRUE(LoadProgram(text, &log).ok()) << log;
  // Nothing to do without the declaration.
  auto none = DefineGraphSetConditional(".version 9.0\n.target sm_75\n.address_size 64\n");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

}  // namespace
}  // namespace pvgpu::ptx
