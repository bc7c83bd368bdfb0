#include "ptx/parser.h"

#include <gtest/gtest.h>

#include "ptx/lexer.h"
#include "ptx/ptx.h"
#include "ptx/test_util.h"

namespace pvgpu::ptx {
namespace {

constexpr const char* kHeader = ".version 9.0\n.target sm_90\n.address_size 64\n";

TEST(LexerTest, TokensCarryLineAndColumn) {
  auto toks =
      Tokenize("add.s32 %r1, %r2, -5; // comment\n/* block\n comment */ @!%p1 bra $L__BB0_2;");
  ASSERT_TRUE(toks.ok());
  const auto& t = *toks;
  EXPECT_EQ(t[0].text, "add");
  EXPECT_EQ(t[1].text, ".s32");
  EXPECT_EQ(t[2].text, "%r1");
  EXPECT_EQ(t[2].col, 9);
  EXPECT_TRUE(t[6].Is('-'));
  EXPECT_EQ(t[7].text, "5");
  size_t at = 0;
  while (!t[at].Is('@')) ++at;
  EXPECT_EQ(t[at].line, 3);
  EXPECT_EQ(t[at + 3].text, "bra");
  EXPECT_EQ(t[at + 4].text, "$L__BB0_2");
}

TEST(LexerTest, UnterminatedCommentIsAnError) {
  auto toks = Tokenize("add /* never closed");
  ASSERT_FALSE(toks.ok());
  EXPECT_EQ(toks.status().code(), Code::kInvalidPtx);
  EXPECT_NE(toks.status().message().find("line 1, column 5"), std::string::npos);
}

TEST(ParserTest, NumberLiterals) {
  ast::Operand::Kind k;
  uint64_t bits;
  bool dec;
  ASSERT_TRUE(ParseNumberLiteral("0f3F800000", &k, &bits, &dec));
  EXPECT_EQ(k, ast::Operand::Kind::kF32);
  EXPECT_EQ(bits, 0x3F800000u);
  ASSERT_TRUE(ParseNumberLiteral("0d3FF0000000000000", &k, &bits, &dec));
  EXPECT_EQ(k, ast::Operand::Kind::kF64);
  EXPECT_EQ(bits, 0x3FF0000000000000ull);
  ASSERT_TRUE(ParseNumberLiteral("0xFFFFFFFF", &k, &bits, &dec));
  EXPECT_EQ(bits, 0xFFFFFFFFu);
  ASSERT_TRUE(ParseNumberLiteral("18446744073709551615", &k, &bits, &dec));
  EXPECT_EQ(bits, UINT64_MAX);
  EXPECT_FALSE(ParseNumberLiteral("18446744073709551616", &k, &bits, &dec));
  ASSERT_TRUE(ParseNumberLiteral("1.5", &k, &bits, &dec));
  EXPECT_TRUE(dec);
  EXPECT_FALSE(ParseNumberLiteral("0f3F80", &k, &bits, &dec));
}

TEST(ParserTest, ModuleStructure) {
  std::string text = std::string(kHeader) + R"(
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);
.global .align 4 .b8 g[8] = {1, 2, 3, 4};
.const .align 4 .f32 c[2] = {0f3F800000, 0fBF800000};
.global .align 8 .u64 ptrs[2] = {generic(g), g+4};
.extern .shared .align 16 .b8 dyn[];
.visible .entry k(.param .u32 n, .param .align 8 .b8 blob[24]) .maxntid 128, 1, 1 .minnctapersm 2
{
  .reg .b32 %r<4>;
  .reg .f16 low, high;
$L__BB0_1:
  @!%r1 bra $L__BB0_1;
  st.global.v2.u32 [%rd1+-8], {%r1, %r2};
  ret;
}
)";
  auto m = ParseModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->version, "9.0");
  EXPECT_EQ(m->target, "sm_90");
  ASSERT_EQ(m->globals.size(), 4u);
  EXPECT_EQ(m->globals[0].init.size(), 4u);
  EXPECT_TRUE(m->globals[2].init[0].generic);
  EXPECT_EQ(m->globals[2].init[1].addend, 4);
  EXPECT_EQ(m->globals[3].dims[0], 0u);
  ASSERT_EQ(m->functions.size(), 2u);
  const auto& k = m->functions[1];
  EXPECT_TRUE(k.is_entry);
  EXPECT_EQ(k.maxntid[0], 128u);
  ASSERT_EQ(k.params.size(), 2u);
  EXPECT_EQ(k.params[1].align, 8u);
  // {, reg, two decls from "low, high", label, bra, st, ret, }
  ASSERT_EQ(k.body.size(), 9u);
  EXPECT_EQ(k.body[3].decl.name, "high");
  const auto& bra = k.body[5].inst;
  EXPECT_EQ(bra.guard, "%r1");
  EXPECT_TRUE(bra.guard_neg);
  const auto& st = k.body[6].inst;
  EXPECT_EQ(st.opcode, "st");
  EXPECT_EQ(st.ops[0].offset, -8);
  EXPECT_EQ(st.ops[1].elems.size(), 2u);
}

TEST(ParserTest, SyntaxErrorsNameLineAndColumn) {
  std::string text = std::string(kHeader) + ".visible .entry k()\n{\n  add.s32 %r1 %r2;\n}\n";
  std::string log;
  auto p = LoadProgram(text, &log);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kInvalidPtx);
  EXPECT_NE(p.status().message().find("line 6, column 15"), std::string::npos)
      << p.status().message();
  EXPECT_NE(log.find("line 6"), std::string::npos);
}

TEST(ParserTest, UnsupportedInstructionFailsAtLoad) {
  std::string text = std::string(kHeader) +
                     ".visible .entry k()\n{\n  .reg .b32 %r<3>;\n  tex.2d.v4.f32.f32 {%r1, %r1, "
                     "%r1, %r1}, [t, {%r2, %r2}];\n}\n";
  std::string log;
  auto p = LoadProgram(text, &log);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kInvalidPtx);
  EXPECT_NE(p.status().message().find("tex.2d.v4.f32.f32"), std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("line 7"), std::string::npos) << p.status().message();
}

TEST(ParserTest, UnsupportedInstructionInUncalledFunctionFailsAtLoad) {
  std::string text =
      std::string(kHeader) +
      ".func helper()\n{\n  .reg .b32 %r<3>;\n  fns.b32 %r1, %r2, %r1, 1;\n  ret;\n}\n"
      ".visible .entry k()\n{\n  ret;\n}\n";
  auto p = LoadProgram(text);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("line 7"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("fns.b32"), std::string::npos) << p.status().message();
}

TEST(ParserTest, UnknownRegisterAndLabelAreErrors) {
  auto p = LoadProgram(std::string(kHeader) +
                       ".visible .entry k()\n{\n  .reg .b32 %r<3>;\n  mov.u32 %r3, 1;\n}\n");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("%r3"), std::string::npos);
  p = LoadProgram(std::string(kHeader) + ".visible .entry k()\n{\n  bra $L__nowhere;\n}\n");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("$L__nowhere"), std::string::npos);
}

TEST(ProgramTest, MetadataForAdapter) {
  std::string text = std::string(kHeader) + R"(
.global .align 4 .b8 g[8] = {1, 2, 3, 4};
.const .align 4 .f32 c[2] = {0f3F800000, 0fBF800000};
.global .align 8 .u64 p = generic(g);
.visible .entry k(.param .u32 n, .param .u64 ptr, .param .align 16 .b8 blob[20]) .reqntid 64, 2, 1
{
  .shared .align 8 .b8 tile[100];
  .local .align 4 .b8 depot[40];
  .reg .b32 %r<2>;
  ret;
}
)";
  std::string info;
  auto p = LoadProgram(text, nullptr, &info);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const Program& prog = **p;
  ASSERT_EQ(prog.kernels().size(), 1u);
  const KernelInfo& k = prog.kernels()[0];
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[0].offset, 0u);
  EXPECT_EQ(k.params[1].offset, 8u);
  EXPECT_EQ(k.params[2].offset, 16u);
  EXPECT_EQ(k.param_bytes, 36u);
  EXPECT_EQ(k.reqntid.x, 64u);
  EXPECT_EQ(k.max_threads_per_block, 128u);
  EXPECT_GE(k.static_shared_bytes, 100u);
  EXPECT_GE(k.local_bytes, 40u);
  ASSERT_EQ(prog.globals().size(), 3u);
  EXPECT_EQ(prog.globals()[0].init, (std::vector<uint8_t>{1, 2, 3, 4, 0, 0, 0, 0}));
  EXPECT_TRUE(prog.globals()[1].is_const);
  ASSERT_EQ(prog.globals()[2].relocs.size(), 1u);
  EXPECT_EQ(prog.globals()[2].relocs[0].target, 0);
  EXPECT_EQ(prog.FindGlobal("c"), 1);
  EXPECT_NE(info.find("1 kernel"), std::string::npos);
}

// `.ptr [.space] [.align N]` on a kernel parameter describes the memory it points to (PTX ISA,
// kernel function parameter attributes); the parameter keeps its type's size and natural
// alignment. Kernels such as cuRAND's declare `.param .u64 .ptr .align 1 p`.
TEST(ProgramTest, PointerAttributesKeepTheParameterLayout) {
  const std::string text = std::string(kHeader) + R"(
.visible .entry k(.param .u32 n, .param .u64 .ptr .align 1 out, .param .u8 c,
                  .param .u64 .ptr .global .align 16 in, .param .u32 .ptr.const.align 8 m)
{
  .reg .b16 %h<2>;
  .reg .b32 %r<5>;
  .reg .b64 %rd<4>;
  ld.param.u32 %r0, [n];
  ld.param.u64 %rd0, [out];
  ld.param.u8 %h0, [c];
  cvt.u32.u16 %r1, %h0;
  ld.param.u64 %rd1, [in];
  ld.param.u32 %r2, [m];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.u32 %r3, [%rd2];
  add.u32 %r3, %r3, %r0;
  add.u32 %r3, %r3, %r1;
  add.u32 %r3, %r3, %r2;
  cvta.to.global.u64 %rd3, %rd0;
  st.global.u32 [%rd3], %r3;
  ret;
}
)";
  testing::Runner runner(text);
  ASSERT_TRUE(runner.ok()) << runner.load_status().ToString();
  const KernelInfo& k = runner.program().kernels()[0];
  ASSERT_EQ(k.params.size(), 5u);
  const uint32_t offsets[] = {0, 8, 16, 24, 32};
  const uint32_t sizes[] = {4, 8, 1, 8, 4};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(k.params[i].offset, offsets[i]) << "parameter " << i;
    EXPECT_EQ(k.params[i].size, sizes[i]) << "parameter " << i;
  }
  EXPECT_EQ(k.param_bytes, 36u);
  const uint64_t in = runner.mem().Upload(std::vector<uint32_t>{1000});
  const uint64_t out = runner.mem().Upload(std::vector<uint32_t>{0});
  ASSERT_TRUE(
      runner.Launch("k", {1, 1, 1}, {1, 1, 1}, {uint32_t{20}, out, uint8_t{3}, in, uint32_t{400}})
          .ok());
  EXPECT_EQ(runner.mem().Download<uint32_t>(out, 1)[0], 1423u);
}

TEST(ParserTest, PointerAttributesOnlyOnParameters) {
  auto p = LoadProgram(std::string(kHeader) +
                       ".visible .entry k()\n{\n  .local .u64 .ptr .align 4 x;\n  ret;\n}\n");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find(".ptr"), std::string::npos) << p.status().ToString();
}

}  // namespace
}  // namespace pvgpu::ptx
