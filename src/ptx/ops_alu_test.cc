// Hand-written PTX snippets for the arithmetic, bit, compare and conversion families,
// including forms nvcc rarely emits.
#include <cmath>

#include "ptx/snippet_util.h"

namespace pvgpu::ptx {
namespace {

using testing::F2U;
using testing::RunSnippet;
using testing::U2F;

TEST(BitsTest, PrmtModesLop3BfeBfi) {
  auto r = RunSnippet(R"(
  mov.u32 %r1, 0x44332211;
  mov.u32 %r2, 0x88776655;
  prmt.b32 %r3, %r1, %r2, 0x7531;  st.global.u32 [%rd0], %r3;
  prmt.b32 %r3, %r1, %r2, 0x8888;  st.global.u32 [%rd0+4], %r3;
  prmt.b32.f4e %r3, %r1, %r2, 1;   st.global.u32 [%rd0+8], %r3;
  prmt.b32.b4e %r3, %r1, %r2, 1;   st.global.u32 [%rd0+12], %r3;
  prmt.b32.rc8 %r3, %r1, %r2, 2;   st.global.u32 [%rd0+16], %r3;
  prmt.b32.ecl %r3, %r1, %r2, 1;   st.global.u32 [%rd0+20], %r3;
  prmt.b32.ecr %r3, %r1, %r2, 2;   st.global.u32 [%rd0+24], %r3;
  prmt.b32.rc16 %r3, %r1, %r2, 1;  st.global.u32 [%rd0+28], %r3;
  lop3.b32 %r3, %r1, %r2, 0xF0F0F0F0, 0x96; st.global.u32 [%rd0+32], %r3;
  bfe.u32 %r3, %r2, 4, 12;         st.global.u32 [%rd0+36], %r3;
  bfe.s32 %r3, %r2, 28, 8;         st.global.u32 [%rd0+40], %r3;
  bfi.b32 %r3, 0xF, %r1, 8, 4;     st.global.u32 [%rd0+44], %r3;
  shf.r.clamp.b32 %r3, %r1, %r2, 40; st.global.u32 [%rd0+48], %r3;
  shf.l.wrap.b32 %r3, %r1, %r2, 36;  st.global.u32 [%rd0+52], %r3;
  bfind.u32 %r3, %r1;              st.global.u32 [%rd0+56], %r3;
  bfind.s32 %r3, -1;               st.global.u32 [%rd0+60], %r3;
  cnot.b32 %r3, %r1;               st.global.u32 [%rd0+64], %r3;
  shr.s32 %r3, %r2, 40;            st.global.u32 [%rd0+68], %r3;
  shl.b32 %r3, %r2, 33;            st.global.u32 [%rd0+72], %r3;
  )",
                      {}, 19);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out[0], 0x88664422u);
  EXPECT_EQ(r.out[1], 0u);  // selector 8: sign of byte 0 (0x11) replicated
  EXPECT_EQ(r.out[2], 0x55443322u);
  EXPECT_EQ(r.out[3], 0x77881122u);
  EXPECT_EQ(r.out[4], 0x33333333u);
  EXPECT_EQ(r.out[5], 0x44332222u);
  EXPECT_EQ(r.out[6], 0x33332211u);
  EXPECT_EQ(r.out[7], 0x44334433u);
  EXPECT_EQ(r.out[8], 0x44332211u ^ 0x88776655u ^ 0xF0F0F0F0u);
  EXPECT_EQ(r.out[9], 0x665u);
  EXPECT_EQ(r.out[10], 0xFFFFFFF8u);
  EXPECT_EQ(r.out[11], 0x44332F11u);
  EXPECT_EQ(r.out[12], 0x88776655u);  // clamped to 32: all of b
  EXPECT_EQ(r.out[13], (0x88776655u << 4) | (0x44332211u >> 28));
  EXPECT_EQ(r.out[14], 30u);
  EXPECT_EQ(r.out[15], 0xFFFFFFFFu);
  EXPECT_EQ(r.out[16], 0u);
  EXPECT_EQ(r.out[17], 0xFFFFFFFFu);
  EXPECT_EQ(r.out[18], 0u);
}

TEST(ArithTest, CarryChainAndSaturation) {
  auto r = RunSnippet(R"(
  mov.u32 %r1, 0xFFFFFFFF;
  add.cc.u32 %r2, %r1, 1;
  addc.cc.u32 %r3, 0, 0;
  addc.u32 %r4, 5, 0;
  st.global.u32 [%rd0], %r2;
  st.global.u32 [%rd0+4], %r3;
  st.global.u32 [%rd0+8], %r4;
  sub.cc.u32 %r2, 0, 1;
  subc.u32 %r3, 10, 0;
  st.global.u32 [%rd0+12], %r2;
  st.global.u32 [%rd0+16], %r3;
  add.sat.s32 %r2, 0x7FFFFFF0, 0x100;
  st.global.u32 [%rd0+20], %r2;
  sub.sat.s32 %r2, -2147483640, 100;
  st.global.u32 [%rd0+24], %r2;
  mul24.lo.u32 %r2, 0x1000001, 3;
  st.global.u32 [%rd0+28], %r2;
  mul.hi.s32 %r2, -2, 0x40000000;
  st.global.u32 [%rd0+32], %r2;
  div.s32 %r2, -2147483648, -1;
  st.global.u32 [%rd0+36], %r2;
  rem.u32 %r2, 7, 0;
  st.global.u32 [%rd0+40], %r2;
  )",
                      {}, 11);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out[0], 0u);
  EXPECT_EQ(r.out[1], 1u);
  EXPECT_EQ(r.out[2], 5u);
  EXPECT_EQ(r.out[3], 0xFFFFFFFFu);
  EXPECT_EQ(r.out[4], 9u);
  EXPECT_EQ(r.out[5], 0x7FFFFFFFu);
  EXPECT_EQ(r.out[6], 0x80000000u);
  EXPECT_EQ(r.out[7], 3u);
  EXPECT_EQ(r.out[8], 0xFFFFFFFFu);
  EXPECT_EQ(r.out[9], 0x80000000u);
  EXPECT_EQ(r.out[10], 7u);
}

TEST(CompareTest, UnorderedAndCombiningForms) {
  auto r = RunSnippet(R"(
  mov.f32 %f1, 0f7FC00000;
  mov.f32 %f2, 0f3F800000;
  setp.lt.f32 %p1, %f1, %f2;
  setp.ltu.f32 %p2, %f1, %f2;
  setp.nan.f32 %p3, %f1, %f2;
  setp.num.f32 %p4, %f2, %f2;
  selp.u32 %r1, 1, 0, %p1;
  selp.u32 %r2, 2, 0, %p2;
  selp.u32 %r3, 4, 0, %p3;
  selp.u32 %r4, 8, 0, %p4;
  add.u32 %r1, %r1, %r2;
  add.u32 %r1, %r1, %r3;
  add.u32 %r1, %r1, %r4;
  st.global.u32 [%rd0], %r1;
  setp.gt.and.s32 %p5|%p6, 5, 3, %p3;
  setp.lo.or.u32 %p7, -1, 1, !%p4;
  selp.u32 %r5, 1, 0, %p5;
  selp.u32 %r6, 2, 0, %p6;
  selp.u32 %r7, 4, 0, %p7;
  or.b32 %r5, %r5, %r6;
  or.b32 %r5, %r5, %r7;
  st.global.u32 [%rd0+4], %r5;
  set.gt.u32.s32 %r8, 2, 1;
  st.global.u32 [%rd0+8], %r8;
  set.lt.f32.f32 %r8, %f2, 0f40000000;
  st.global.u32 [%rd0+12], %r8;
  slct.u32.s32 %r9, 10, 20, -1;
  st.global.u32 [%rd0+16], %r9;
  )",
                      {}, 5);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out[0], 2u + 4u + 8u);
  EXPECT_EQ(r.out[1], 1u);  // p = (5>3)&p3 = 1, q = !(5>3)&p3 = 0, p7 = lo(-1,1)|!p4 = 0
  EXPECT_EQ(r.out[2], 0xFFFFFFFFu);
  EXPECT_EQ(r.out[3], 0x3F800000u);
  EXPECT_EQ(r.out[4], 20u);
}

TEST(ConvertTest, SaturationHalfAndBf16) {
  auto r = RunSnippet(R"(
  cvt.sat.u8.s32 %r1, -5;          st.global.u32 [%rd0], %r1;
  cvt.sat.s8.s32 %r1, 300;         st.global.u32 [%rd0+4], %r1;
  cvt.u16.u32 %r1, 0x12345;        st.global.u32 [%rd0+8], %r1;
  cvt.s64.s32 %rd2, -7;            mov.b64 {%r20, %r21}, %rd2;
  st.global.u32 [%rd0+12], %r20;   st.global.u32 [%rd0+16], %r21;
  cvt.rzi.s32.f32 %r1, 0fC0700000; st.global.u32 [%rd0+20], %r1;
  cvt.rn.f16.f32 %h1, 0f3FC00000;  cvt.u32.u16 %r1, %h1; st.global.u32 [%rd0+24], %r1;
  cvt.f32.f16 %f1, %h1;            st.global.f32 [%rd0+28], %f1;
  cvt.rn.bf16.f32 %h2, 0f3F8CCCCD; cvt.u32.u16 %r1, %h2; st.global.u32 [%rd0+32], %r1;
  cvt.rn.f16x2.f32 %r2, 0f40000000, 0f3F800000; st.global.u32 [%rd0+36], %r2;
  cvt.sat.f32.f32 %f2, 0f40000000; st.global.f32 [%rd0+40], %f2;
  cvt.rni.s32.f32 %r1, 0f40200000; st.global.u32 [%rd0+44], %r1;
  cvt.rzi.u32.f32 %r1, 0fC0000000; st.global.u32 [%rd0+48], %r1;
  ld.global.s8 %r3, [%rd1];        st.global.u32 [%rd0+52], %r3;
  ld.global.s16 %rd3, [%rd1];      st.global.u64 [%rd0+56], %rd3;
  )",
                      {0x000080F0u}, 16);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out[0], 0u);
  EXPECT_EQ(r.out[1], 127u);
  EXPECT_EQ(r.out[2], 0x2345u);
  EXPECT_EQ(r.out[3], 0xFFFFFFF9u);
  EXPECT_EQ(r.out[4], 0xFFFFFFFFu);
  EXPECT_EQ(r.out[5], static_cast<uint32_t>(-3));
  EXPECT_EQ(r.out[6], 0x3E00u);
  EXPECT_EQ(U2F(r.out[7]), 1.5f);
  EXPECT_EQ(r.out[8], 0x3F8Du);
  EXPECT_EQ(r.out[9], 0x40003C00u);
  EXPECT_EQ(U2F(r.out[10]), 1.0f);
  EXPECT_EQ(r.out[11], 2u);  // 2.5 rounds to even
  EXPECT_EQ(r.out[12], 0u);  // negative to unsigned saturates
  EXPECT_EQ(r.out[13], 0xFFFFFFF0u);
  EXPECT_EQ(r.out[14], 0xFFFF80F0u);
  EXPECT_EQ(r.out[15], 0xFFFFFFFFu);
}

// f32 to tf32 (10 mantissa bits): ties at the 13th bit go away from zero (.rna) or to even
// (.rn); .rz truncates; .satfinite stops at the largest finite tf32; NaN becomes canonical.
TEST(ConvertTest, Tf32Rounding) {
  auto r = RunSnippet(R"(
  ld.global.f32 %f1, [%rd1];      ld.global.f32 %f2, [%rd1+4];
  ld.global.f32 %f3, [%rd1+8];    ld.global.f32 %f4, [%rd1+12];
  ld.global.f32 %f5, [%rd1+16];
  cvt.rna.tf32.f32 %r1, %f1;      st.global.u32 [%rd0], %r1;
  cvt.rn.tf32.f32 %r1, %f1;       st.global.u32 [%rd0+4], %r1;
  cvt.rz.tf32.f32 %r1, %f1;       st.global.u32 [%rd0+8], %r1;
  cvt.rn.tf32.f32 %r1, %f2;       st.global.u32 [%rd0+12], %r1;
  cvt.rna.tf32.f32 %r1, %f3;      st.global.u32 [%rd0+16], %r1;
  cvt.rna.satfinite.tf32.f32 %r1, %f3; st.global.u32 [%rd0+20], %r1;
  cvt.rna.tf32.f32 %r1, %f4;      st.global.u32 [%rd0+24], %r1;
  cvt.rna.tf32.f32 %r1, %f5;      st.global.u32 [%rd0+28], %r1;
  )",
                      {0x3F801000u, 0x3F803000u, 0x7F7FFFFFu, 0x7FC00001u, 0xBF801000u}, 8);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out[0], 0x3F802000u);  // 1 + 2^-11, a tie: away from zero
  EXPECT_EQ(r.out[1], 0x3F800000u);  // to even
  EXPECT_EQ(r.out[2], 0x3F800000u);
  EXPECT_EQ(r.out[3], 0x3F804000u);  // 1 + 3 * 2^-11: the even neighbour is above
  EXPECT_EQ(r.out[4], 0x7F800000u);  // FLT_MAX rounds up to infinity
  EXPECT_EQ(r.out[5], 0x7F7FE000u);  // ... unless .satfinite
  EXPECT_EQ(r.out[6], 0x7FFFFFFFu);
  EXPECT_EQ(r.out[7], 0xBF802000u);
}

// sm_90 packed 16-bit minimum and maximum, and .relu on them and on s32.
TEST(ArithTest, PackedHalfwordMinMaxAndRelu) {
  auto r = RunSnippet(R"(
  ld.global.u32 %r1, [%rd1];     ld.global.u32 %r2, [%rd1+4];
  min.s16x2 %r3, %r1, %r2;       st.global.u32 [%rd0], %r3;
  max.s16x2 %r3, %r1, %r2;       st.global.u32 [%rd0+4], %r3;
  min.u16x2 %r3, %r1, %r2;       st.global.u32 [%rd0+8], %r3;
  max.u16x2 %r3, %r1, %r2;       st.global.u32 [%rd0+12], %r3;
  min.relu.s16x2 %r3, %r1, %r2;  st.global.u32 [%rd0+16], %r3;
  min.relu.s32 %r3, -5, 7;       st.global.u32 [%rd0+20], %r3;
  max.relu.s32 %r3, -5, -9;      st.global.u32 [%rd0+24], %r3;
  max.relu.s32 %r3, 3, -9;       st.global.u32 [%rd0+28], %r3;
  )",
                      {0x8000'0005u, 0x0001'FFF0u}, 8);  // halves (-32768, 5) and (1, -16)
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out[0], 0x8000'FFF0u);  // signed: min(-32768, 1), min(5, -16)
  EXPECT_EQ(r.out[1], 0x0001'0005u);
  EXPECT_EQ(r.out[2], 0x0001'0005u);  // unsigned: 0x8000 > 1, 5 < 0xFFF0
  EXPECT_EQ(r.out[3], 0x8000'FFF0u);
  EXPECT_EQ(r.out[4], 0x0000'0000u);  // both signed minima are negative
  EXPECT_EQ(r.out[5], 0u);
  EXPECT_EQ(r.out[6], 0u);
  EXPECT_EQ(r.out[7], 3u);
}

// set with 16-bit destinations (CUB's half-precision paths): 1.0 in the destination's own
// format, or all ones for integers; .nan also holds for unordered operands.
TEST(CompareTest, SetWithHalfDestinations) {
  auto r = RunSnippet(R"(
  mov.b16 %h1, 0x3C00;            mov.b16 %h2, 0x7E00;
  set.nan.f16.f16 %h3, %h1, %h2;  cvt.u32.u16 %r1, %h3; st.global.u32 [%rd0], %r1;
  set.lt.f16.f16 %h3, %h1, %h2;   cvt.u32.u16 %r1, %h3; st.global.u32 [%rd0+4], %r1;
  set.eq.bf16.f16 %h3, %h1, %h1;  cvt.u32.u16 %r1, %h3; st.global.u32 [%rd0+8], %r1;
  set.gt.u16.f32 %h3, 2.0, 1.0;   cvt.u32.u16 %r1, %h3; st.global.u32 [%rd0+12], %r1;
  )",
                      {}, 4);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out[0], 0x3C00u);  // 1.0 vs NaN: unordered
  EXPECT_EQ(r.out[1], 0u);       // an ordered comparison with NaN is false
  EXPECT_EQ(r.out[2], 0x3F80u);  // bf16 1.0
  EXPECT_EQ(r.out[3], 0xFFFFu);
}

TEST(MathTest, DirectedRoundingTestpCopysign) {
  auto r = RunSnippet(R"(
  mov.f32 %f1, 0f3F800000;
  div.rz.f32 %f2, %f1, 0f40400000;   st.global.f32 [%rd0], %f2;
  div.rp.f32 %f2, %f1, 0f40400000;   st.global.f32 [%rd0+4], %f2;
  sqrt.rm.f32 %f3, 0f40000000;       st.global.f32 [%rd0+8], %f3;
  sqrt.rp.f32 %f3, 0f40000000;       st.global.f32 [%rd0+12], %f3;
  testp.subnormal.f32 %p1, 0f00000001;
  testp.infinite.f32 %p2, 0f7F800000;
  testp.finite.f32 %p3, 0f7FC00000;
  selp.u32 %r1, 1, 0, %p1;
  selp.u32 %r2, 2, 0, %p2;
  selp.u32 %r3, 4, 0, %p3;
  or.b32 %r1, %r1, %r2;
  or.b32 %r1, %r1, %r3;
  st.global.u32 [%rd0+16], %r1;
  copysign.f32 %f4, 0fBF800000, 0f40000000; st.global.f32 [%rd0+20], %f4;
  ex2.approx.ftz.f32 %f5, 0f40400000; st.global.f32 [%rd0+24], %f5;
  add.rm.f64 %fd1, 0d3FF0000000000000, 0d3C90000000000000;
  mov.b64 {%r20, %r21}, %fd1; st.global.u32 [%rd0+28], %r20; st.global.u32 [%rd0+32], %r21;
  )",
                      {}, 9);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  float third = 1.0f / 3.0f;
  EXPECT_EQ(r.out[0], F2U(third) - 1);  // RN rounds 1/3 up; RZ is one ulp below
  EXPECT_EQ(r.out[1], F2U(third));
  EXPECT_EQ(r.out[3], r.out[2] + 1);
  EXPECT_EQ(r.out[4], 3u);
  EXPECT_EQ(U2F(r.out[5]), -2.0f);
  EXPECT_EQ(U2F(r.out[6]), 8.0f);
  double d;
  uint64_t bits = r.out[7] | (uint64_t{r.out[8]} << 32);
  std::memcpy(&d, &bits, 8);
  EXPECT_EQ(d, 1.0);
}

TEST(MemoryTest, VectorsPackingGenericWindowsAndParamAddress) {
  auto r = RunSnippet(R"(
  .shared .align 16 .b8 sh[64];
  .local .align 8 .b8 loc[16];
  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];
  st.shared.v4.u32 [sh], {%r4, %r3, %r2, %r1};
  mov.u64 %rd2, sh;
  cvta.shared.u64 %rd3, %rd2;
  ld.v2.u32 {%r5, %r6}, [%rd3+8];
  st.global.v2.u32 [%rd0], {%r5, %r6};
  mov.b64 %rd4, {%r1, %r2};
  st.global.u64 [%rd0+8], %rd4;
  mov.b64 {%r7, %r8}, %rd4;
  mov.b32 {%h1, %h2}, %r8;
  cvt.u32.u16 %r9, %h2;
  st.global.u32 [%rd0+16], %r9;
  mov.u64 %rd5, loc;
  cvta.local.u64 %rd6, %rd5;
  st.u32 [%rd6+4], 77;
  ld.local.u32 %r10, [loc+4];
  st.global.u32 [%rd0+20], %r10;
  isspacep.shared %p1, %rd3;
  isspacep.global %p2, %rd3;
  isspacep.local %p3, %rd6;
  selp.u32 %r11, 1, 0, %p1;
  selp.u32 %r12, 2, 0, %p2;
  selp.u32 %r13, 4, 0, %p3;
  or.b32 %r11, %r11, %r12;
  or.b32 %r11, %r11, %r13;
  st.global.u32 [%rd0+24], %r11;
  mov.u64 %rd7, out;
  cvta.param.u64 %rd8, %rd7;
  ld.u64 %rd9, [%rd8];
  setp.eq.u64 %p4, %rd9, %rd0;
  selp.u32 %r14, 1, 0, %p4;
  st.global.u32 [%rd0+28], %r14;
  cvta.to.shared.u64 %rd10, %rd3;
  cvt.u32.u64 %r15, %rd10;
  ld.shared.u32 %r16, [%r15];
  st.global.u32 [%rd0+32], %r16;
  )",
                      {0x11, 0x22, 0x33, 0xAABBCCDD}, 9);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out[0], 0x22u);
  EXPECT_EQ(r.out[1], 0x11u);
  EXPECT_EQ(r.out[2], 0x11u);
  EXPECT_EQ(r.out[3], 0x22u);
  EXPECT_EQ(r.out[4], 0u);
  EXPECT_EQ(r.out[5], 77u);
  EXPECT_EQ(r.out[6], 1u + 4u);
  EXPECT_EQ(r.out[7], 1u);
  EXPECT_EQ(r.out[8], 0xAABBCCDDu);
}

TEST(MemoryTest, FaultsNameTheAccess) {
  auto r = RunSnippet("  ld.global.u32 %r1, [%rd1+4096];\n", {1}, 1);
  EXPECT_EQ(r.status.code(), Code::kIllegalAddress);
  EXPECT_NE(r.status.message().find("ld.global.u32"), std::string::npos) << r.status.message();
  EXPECT_NE(r.status.message().find("out-of-bounds"), std::string::npos);
  r = RunSnippet("  .shared .b8 s[16];\n  st.shared.u32 [s+16], 1;\n", {}, 1);
  EXPECT_EQ(r.status.code(), Code::kIllegalAddress) << r.status.ToString();
  r = RunSnippet("  ld.global.v2.u32 {%r1, %r2}, [%rd1+4];\n", {1, 2, 3, 4}, 1);
  EXPECT_EQ(r.status.code(), Code::kMisalignedAddress) << r.status.ToString();
  r = RunSnippet("  st.param.u32 [out], 1;\n", {}, 1);
  EXPECT_FALSE(r.status.ok());
  r = RunSnippet("  mov.u64 %rd2, 0xFD00000000000000;\n  ld.u32 %r1, [%rd2+1000000];\n", {}, 1);
  EXPECT_EQ(r.status.code(), Code::kIllegalAddress) << r.status.ToString();
}

}  // namespace
}  // namespace pvgpu::ptx
