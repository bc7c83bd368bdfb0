// Hand-written PTX for asynchronous copies (cp.async, cp.async.bulk) and mbarrier objects, and
// the loader's .target limit.
#include "ptx/program.h"
#include "ptx/snippet_util.h"

namespace pvgpu::ptx {
namespace {

using testing::Runner;
using testing::RunSnippet;
using testing::SnippetKernel;

std::vector<uint32_t> Iota(size_t n, uint32_t from) {
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from + static_cast<uint32_t>(i);
  return v;
}

TEST(CpAsyncTest, CopiesLandAtTheWaitForTheirGroup) {
  // Each thread copies 4 bytes (group 0) and 16 bytes (group 1); wait_group 1 completes group 0
  // only, wait_group 0 the rest. Reads before a wait see shared memory as it was (zero).
  auto r = RunSnippet(R"(
  .shared .align 16 .b8 a[128];
  .shared .align 16 .b8 b[512];
  mov.u32 %r1, a;
  mov.u32 %r2, b;
  shl.b32 %r3, %r0, 2;
  shl.b32 %r4, %r0, 4;
  add.u32 %r5, %r1, %r3;
  add.u32 %r6, %r2, %r4;
  cvt.u64.u32 %rd2, %r3;
  add.s64 %rd3, %rd1, %rd2;
  cvt.u64.u32 %rd4, %r4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd5, %rd5, 128;
  cp.async.ca.shared.global [%r5], [%rd3], 4;
  ld.shared.u32 %r7, [%r5];
  cp.async.commit_group;
  cp.async.cg.shared.global [%r6], [%rd5], 16;
  cp.async.commit_group;
  ld.shared.u32 %r8, [%r5];
  cp.async.wait_group 1;
  ld.shared.u32 %r9, [%r5];
  ld.shared.u32 %r10, [%r6+12];
  cp.async.wait_group 0;
  ld.shared.u32 %r11, [%r6+12];
  mul.wide.u32 %rd6, %r0, 20;
  add.s64 %rd7, %rd0, %rd6;
  st.global.u32 [%rd7], %r7;
  st.global.u32 [%rd7+4], %r8;
  st.global.u32 [%rd7+8], %r9;
  st.global.u32 [%rd7+12], %r10;
  st.global.u32 [%rd7+16], %r11;
  )",
                      Iota(32 + 128, 1000), 5 * 32, 32);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (uint32_t t = 0; t < 32; ++t) {
    EXPECT_EQ(r.out[5 * t], 0u) << t;
    EXPECT_EQ(r.out[5 * t + 1], 0u) << "committed is not complete " << t;
    EXPECT_EQ(r.out[5 * t + 2], 1000 + t) << t;
    EXPECT_EQ(r.out[5 * t + 3], 0u) << "the newest group is still pending " << t;
    EXPECT_EQ(r.out[5 * t + 4], 1000 + 32 + 4 * t + 3) << t;
  }
}

TEST(CpAsyncTest, SrcSizeZeroFillsIgnoreSrcAndHints) {
  // Shared memory is first filled with 0xFFFFFFFF so that zero fill shows.
  auto r = RunSnippet(R"(
  .shared .align 16 .b8 s[96];
  .reg .pred %q<2>;
  mov.u32 %r1, s;
  mov.u32 %r2, -1;
  mov.u32 %r3, 0;
$FILL:
  add.u32 %r4, %r1, %r3;
  st.shared.u32 [%r4], %r2;
  add.u32 %r3, %r3, 4;
  setp.lt.u32 %q0, %r3, 96;
  @%q0 bra $FILL;
  mov.u32 %r5, 6;
  setp.eq.u32 %q0, %r0, 0;
  setp.ne.u32 %q1, %r0, 0;
  mov.u64 %rd2, 0;
  cp.async.ca.shared.global [s], [%rd1], 16, 5;
  cp.async.cg.shared.global.L2::128B [s+16], [%rd1], 16, %r5;
  cp.async.cg.shared.global [s+32], [%rd1], 16, %q0;
  cp.async.ca.shared.global.L2::cache_hint [s+48], [%rd1+16], 8, %q1, %rd2;
  cp.async.ca.shared.global.L2::cache_hint.L2::256B [s+56], [%rd1+8], 8, 8, %rd2;
  cp.async.ca.shared.global [s+64], [%rd1+4], 4, 0;
  cp.async.wait_all;
  mov.u32 %r3, 0;
$COPY:
  add.u32 %r4, %r1, %r3;
  ld.shared.u32 %r6, [%r4];
  cvt.u64.u32 %rd3, %r3;
  add.s64 %rd4, %rd0, %rd3;
  st.global.u32 [%rd4], %r6;
  add.u32 %r3, %r3, 4;
  setp.lt.u32 %q0, %r3, 96;
  @%q0 bra $COPY;
  )",
                      {0x44332211, 0x88776655, 0xCCBBAA99, 0x00FFEEDD, 0x01020304, 0x05060708},
                      24, 1);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const std::vector<uint32_t> want = {
      0x44332211, 0x00000055, 0, 0,                   // 5 of 16 bytes, then zeros
      0x44332211, 0x00006655, 0, 0,                   // src-size from a register (6)
      0, 0, 0, 0,                                     // ignore-src set: all zeros
      0x01020304, 0x05060708,                         // ignore-src clear: copied
      0xCCBBAA99, 0x00FFEEDD,                         // 8 of 8 bytes, cache hint given
      0, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF,          // src-size 0: 4 zero bytes
      0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};
  EXPECT_EQ(r.out, want);
}

TEST(CpAsyncTest, BadAddressesFaultNamingTheCopy) {
  auto oob = RunSnippet(R"(
  .shared .align 16 .b8 s[64];
  add.s64 %rd2, %rd1, 4096;
  cp.async.ca.shared.global [s], [%rd2], 4;
  cp.async.wait_all;
  )",
                        {1, 2, 3, 4}, 1, 1);
  EXPECT_EQ(oob.status.code(), Code::kIllegalAddress) << oob.status.ToString();
  EXPECT_NE(oob.status.message().find("cp.async: out-of-bounds 4-byte global source"),
            std::string::npos)
      << oob.status.message();
  EXPECT_NE(oob.status.message().find("(cp.async.ca.shared.global)"), std::string::npos);

  auto misaligned = RunSnippet(R"(
  .shared .align 16 .b8 s[64];
  cp.async.cg.shared.global [s+8], [%rd1], 16;
  )",
                               {1, 2, 3, 4}, 1, 1);
  EXPECT_EQ(misaligned.status.code(), Code::kMisalignedAddress) << misaligned.status.ToString();
  EXPECT_NE(misaligned.status.message().find("shared destination"), std::string::npos);

  auto shared_oob = RunSnippet(R"(
  .shared .align 16 .b8 s[64];
  cp.async.ca.shared.global [s+64], [%rd1], 8;
  )",
                               {1, 2, 3, 4}, 1, 1);
  EXPECT_EQ(shared_oob.status.code(), Code::kIllegalAddress) << shared_oob.status.ToString();

  auto too_big = RunSnippet(R"(
  .shared .align 16 .b8 s[64];
  mov.u32 %r1, 9;
  cp.async.ca.shared.global [s], [%rd1], 8, %r1;
  )",
                            {1, 2, 3, 4}, 1, 1);
  EXPECT_EQ(too_big.status.code(), Code::kIllegalInstruction) << too_big.status.ToString();
  EXPECT_NE(too_big.status.message().find("src-size 9 exceeds cp-size 8"), std::string::npos);

  Runner bad_size(SnippetKernel(R"(
  .shared .align 16 .b8 s[64];
  cp.async.cg.shared.global [s], [%rd1], 8;
  )"));
  EXPECT_FALSE(bad_size.ok());
  EXPECT_NE(bad_size.load_status().message().find("cp.async.cg copies 16 bytes"),
            std::string::npos);
}

TEST(CpAsyncTest, MbarrierArriveTracksTheThreadsCopies) {
  // .noinc: the copies' arrival is one of the two expected (the other is thread 1's). Without
  // .noinc the count is raised first, so the phase still needs both threads' own arrivals.
  auto r = RunSnippet(R"(
  .shared .align 16 .b8 s[16];
  .shared .align 8 .b64 b1;
  .shared .align 8 .b64 b2;
  .reg .pred %q<4>;
  setp.eq.u32 %q0, %r0, 0;
  @%q0 mbarrier.init.shared.b64 [b1], 2;
  @%q0 mbarrier.init.shared.b64 [b2], 2;
  bar.sync 0;
  @%q0 cp.async.ca.shared.global [s], [%rd1], 16;
  @%q0 cp.async.mbarrier.arrive.noinc.shared.b64 [b1];
  mbarrier.test_wait.parity.shared.b64 %q1, [b1], 0;
  @!%q0 mbarrier.arrive.shared.b64 %rd2, [b1];
  mbarrier.test_wait.parity.shared.b64 %q2, [b1], 0;
  ld.shared.u32 %r1, [s+12];
  @%q0 cp.async.mbarrier.arrive.shared.b64 [b2];
  @!%q0 mbarrier.arrive.shared.b64 %rd2, [b2];
  mbarrier.test_wait.parity.shared.b64 %q3, [b2], 0;
  selp.u32 %r2, 1, 0, %q1;
  selp.u32 %r3, 2, 0, %q2;
  selp.u32 %r4, 4, 0, %q3;
  or.b32 %r2, %r2, %r3;
  or.b32 %r2, %r2, %r4;
  mul.wide.u32 %rd3, %r0, 8;
  add.s64 %rd4, %rd0, %rd3;
  st.global.u32 [%rd4], %r1;
  st.global.u32 [%rd4+4], %r2;
  )",
                      {5, 6, 7, 8}, 4, 2);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out[0], 8u);
  EXPECT_EQ(r.out[2], 8u);
  // Lanes 0 and 1 run the test_waits together: b1 incomplete before thread 1's arrival,
  // complete after; b2 still waits for thread 0's own arrival.
  EXPECT_EQ(r.out[1], 2u);
  EXPECT_EQ(r.out[3], 2u);
}

TEST(MbarrierTest, PhasesCountsAndTransactions) {
  auto r = RunSnippet(R"(
  .shared .align 8 .b64 bar;
  mbarrier.init.shared::cta.b64 [bar], 3;
  mbarrier.arrive.shared::cta.b64 %rd2, [bar];
  mbarrier.pending_count.b64 %r1, %rd2;
  st.global.u32 [%rd0], %r1;
  mbarrier.test_wait.shared::cta.b64 %p1, [bar], %rd2;
  selp.u32 %r2, 1, 0, %p1;
  st.global.u32 [%rd0+4], %r2;
  mbarrier.arrive.shared::cta.b64 %rd3, [bar], 2;
  mbarrier.pending_count.b64 %r1, %rd3;
  st.global.u32 [%rd0+8], %r1;
  mbarrier.test_wait.shared::cta.b64 %p1, [bar], %rd2;
  selp.u32 %r2, 1, 0, %p1;
  st.global.u32 [%rd0+12], %r2;
  mbarrier.test_wait.parity.shared::cta.b64 %p1, [bar], 0;
  selp.u32 %r2, 1, 0, %p1;
  st.global.u32 [%rd0+16], %r2;
  mbarrier.test_wait.parity.shared::cta.b64 %p1, [bar], 1;
  selp.u32 %r2, 1, 0, %p1;
  st.global.u32 [%rd0+20], %r2;
  mbarrier.arrive_drop.shared::cta.b64 %rd4, [bar];
  mbarrier.pending_count.b64 %r1, %rd4;
  st.global.u32 [%rd0+24], %r1;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd4, [bar], 2;
  mbarrier.arrive.noComplete.shared::cta.b64 %rd5, [bar], 1;
  mbarrier.pending_count.b64 %r1, %rd5;
  st.global.u32 [%rd0+28], %r1;
  mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], 64;
  mbarrier.arrive.shared::cta.b64 %rd6, [bar];
  mbarrier.test_wait.parity.shared::cta.b64 %p1, [bar], 0;
  selp.u32 %r2, 1, 0, %p1;
  st.global.u32 [%rd0+32], %r2;
  mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [bar], 64;
  mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 %p1, [bar], 0;
  selp.u32 %r2, 1, 0, %p1;
  st.global.u32 [%rd0+36], %r2;
  mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %rd7, [bar], 32;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 16, 1;
  mbarrier.complete_tx.shared::cta.b64 [bar], 40;
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 1;
  selp.u32 %r2, 1, 0, %p1;
  st.global.u32 [%rd0+40], %r2;
  mbarrier.complete_tx.shared::cta.b64 [bar], 8;
  mbarrier.try_wait.shared::cta.b64 %p1, [bar], %rd7, 100;
  selp.u32 %r2, 1, 0, %p1;
  st.global.u32 [%rd0+44], %r2;
  mbarrier.inval.shared::cta.b64 [bar];
  )",
                      {}, 12, 1);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const std::vector<uint32_t> want = {
      2,     // pending after one of three arrivals
      0,     // phase 0 incomplete
      0,     // the completing arrival's state: nothing pending
      1, 1,  // phase 0 complete, by state and by parity
      0,     // phase 1 (parity 1) incomplete
      2,     // arrive_drop: 3 - 1 pending, expected 2 from now on
      1,     // phase 2 starts with 2 pending; .noComplete arrival leaves 1
      0,     // arrivals done, 64 transaction bytes outstanding
      1,     // complete_tx finishes phase 2
      0,     // phase 3: 8 bytes still outstanding
      1};    // and done
  EXPECT_EQ(r.out, want);
}

TEST(MbarrierTest, LanesArriveInOrderAndGenericAddresses) {
  // 32 lanes arrive on a count-32 barrier through a generic address: lane i's state has
  // 31 - i arrivals pending; the last completes the phase for everyone.
  auto r = RunSnippet(R"(
  .shared .align 8 .b64 bar;
  mov.u64 %rd2, bar;
  cvta.shared.u64 %rd3, %rd2;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.b64 [%rd3], 32;
  bar.warp.sync -1;
  mbarrier.arrive.b64 %rd4, [%rd3];
  mbarrier.pending_count.b64 %r1, %rd4;
  mbarrier.test_wait.b64 %p2, [%rd3], %rd4;
  selp.u32 %r2, 100, 0, %p2;
  add.u32 %r1, %r1, %r2;
  mul.wide.u32 %rd5, %r0, 4;
  add.s64 %rd6, %rd0, %rd5;
  st.global.u32 [%rd6], %r1;
  )",
                      {}, 32, 32);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(r.out[t], 131 - t) << t;
}

TEST(MbarrierTest, WarpWaitingInTryWaitLetsTheArrivingWarpRun) {
  // Warp 0 (scheduled first) spins in try_wait on a phase that only warp 1's arrivals complete.
  auto r = RunSnippet(R"(
  .shared .align 8 .b64 bar;
  .shared .align 4 .b32 val;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared.b64 [bar], 32;
  bar.sync 0;
  setp.lt.u32 %p2, %r0, 32;
  @!%p2 bra $PRODUCER;
$WAIT:
  mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p3, [bar], 0, 1000000;
  @!%p3 bra $WAIT;
  ld.shared.u32 %r1, [val];
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %r1;
  bra $DONE;
$PRODUCER:
  setp.eq.u32 %p4, %r0, 40;
  @%p4 st.shared.u32 [val], 1234;
  mbarrier.arrive.release.cta.shared::cta.b64 _, [bar];
$DONE:
  )",
                      {}, 32, 64);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(r.out[t], 1234u) << t;
}

TEST(MbarrierTest, WaitNobodyCanCompleteIsADeadlock) {
  auto r = RunSnippet(R"(
  .shared .align 8 .b64 bar;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared.b64 [bar], 65;
  bar.sync 0;
  mbarrier.arrive.shared.b64 %rd2, [bar];
$W:
  mbarrier.try_wait.shared.b64 %p2, [bar], %rd2;
  @!%p2 bra $W;
  )",
                      {}, 1, 64);
  EXPECT_EQ(r.status.code(), Code::kLaunchFailed) << r.status.ToString();
  EXPECT_NE(r.status.message().find("mbarrier deadlock"), std::string::npos)
      << r.status.message();
}

TEST(MbarrierTest, MisuseFaults) {
  auto uninit = RunSnippet(R"(
  .shared .align 8 .b64 bar;
  mbarrier.arrive.shared.b64 %rd2, [bar];
  )",
                           {}, 1, 1);
  EXPECT_EQ(uninit.status.code(), Code::kIllegalInstruction) << uninit.status.ToString();
  EXPECT_NE(uninit.status.message().find("mbarrier.arrive: the mbarrier object is not initialized"),
            std::string::npos)
      << uninit.status.message();

  auto invalidated = RunSnippet(R"(
  .shared .align 8 .b64 bar;
  mbarrier.init.shared.b64 [bar], 1;
  mbarrier.inval.shared.b64 [bar];
  mbarrier.test_wait.parity.shared.b64 %p1, [bar], 0;
  )",
                                {}, 1, 1);
  EXPECT_EQ(invalidated.status.code(), Code::kIllegalInstruction);

  auto over = RunSnippet(R"(
  .shared .align 8 .b64 bar;
  mbarrier.init.shared.b64 [bar], 2;
  mbarrier.arrive.shared.b64 %rd2, [bar], 3;
  )",
                         {}, 1, 1);
  EXPECT_EQ(over.status.code(), Code::kIllegalInstruction);
  EXPECT_NE(over.status.message().find("more arrivals"), std::string::npos);

  auto zero = RunSnippet(R"(
  .shared .align 8 .b64 bar;
  mbarrier.init.shared.b64 [bar], 0;
  )",
                         {}, 1, 1);
  EXPECT_EQ(zero.status.code(), Code::kIllegalInstruction);

  auto global = RunSnippet(R"(
  mbarrier.init.b64 [%rd0], 1;
  )",
                           {}, 2, 1);
  EXPECT_EQ(global.status.code(), Code::kIllegalAddress);
  EXPECT_NE(global.status.message().find("is not in shared memory"), std::string::npos);

  auto misaligned = RunSnippet(R"(
  .shared .align 8 .b8 bar[16];
  mbarrier.init.shared.b64 [bar+4], 1;
  )",
                               {}, 1, 1);
  EXPECT_EQ(misaligned.status.code(), Code::kMisalignedAddress);
}

TEST(BulkCopyTest, GlobalToSharedCompletesOnTheMbarrierSharedToGlobalAtTheWait) {
  auto r = RunSnippet(R"(
  .shared .align 16 .b8 dst[64];
  .shared .align 8 .b64 bar;
  mbarrier.init.shared::cta.b64 [bar], 1;
  cp.async.bulk.prefetch.L2.global [%rd1], 64;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 64;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [%rd1], 64, [bar];
$W:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
  @!%p1 bra $W;
  fence.proxy.async.shared::cta;
  cp.async.bulk.global.shared::cta.bulk_group [%rd0], [dst], 64;
  cp.async.bulk.commit_group;
  ld.global.u32 %r1, [%rd0];
  cp.async.bulk.wait_group.read 0;
  ld.global.u32 %r2, [%rd0+4];
  st.global.u32 [%rd0+64], %r1;
  st.global.u32 [%rd0+68], %r2;
  )",
                      Iota(16, 70), 18, 1);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (uint32_t i = 0; i < 16; ++i) EXPECT_EQ(r.out[i], 70 + i) << i;
  EXPECT_EQ(r.out[16], 0xDEADBEEFu) << "the store to global lands at the wait";
  EXPECT_EQ(r.out[17], 71u);

  auto odd = RunSnippet(R"(
  .shared .align 16 .b8 dst[64];
  .shared .align 8 .b64 bar;
  mbarrier.init.shared::cta.b64 [bar], 1;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [%rd1], 24, [bar];
  )",
                        Iota(16, 0), 1, 1);
  EXPECT_EQ(odd.status.code(), Code::kIllegalInstruction) << odd.status.ToString();
  EXPECT_NE(odd.status.message().find("not a multiple of 16"), std::string::npos);
}

TEST(TargetTest, LoaderRejectsTargetsAboveTheMaximum) {
  auto module = [](const std::string& target) {
    return ".version 8.0\n.target " + target +
           "\n.address_size 64\n.visible .entry k() { ret; }\n";
  };
  EXPECT_TRUE(LoadProgram(module("sm_90a")).ok());
  EXPECT_TRUE(LoadProgram(module("sm_52")).ok());
  std::string log;
  auto newer = LoadProgram(module("sm_100a"), &log);
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), Code::kInvalidPtx);
  EXPECT_NE(newer.status().message().find(".target sm_100a is newer than sm_90"),
            std::string::npos)
      << newer.status().message();
  EXPECT_NE(log.find("sm_100a"), std::string::npos);
  EXPECT_TRUE(LoadProgram(module("sm_75"), nullptr, nullptr, 75).ok());
  auto sm80 = LoadProgram(module("sm_80"), nullptr, nullptr, 75);
  ASSERT_FALSE(sm80.ok());
  EXPECT_NE(sm80.status().message().find("sm_80"), std::string::npos);

  // A link runs what its newest module needs.
  const std::string a = module("sm_75");
  const std::string b = ".version 8.0\n.target sm_86\n.address_size 64\n"
                        ".visible .func f() { ret; }\n";
  std::vector<LinkSource> sources = {{"a.ptx", a}, {"b.ptx", b}};
  EXPECT_TRUE(LoadLinkedProgram(sources).ok());
  auto linked = LoadLinkedProgram(sources, nullptr, nullptr, 80);
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.status().message().find("sm_86"), std::string::npos);
  EXPECT_EQ(TargetSm("sm_90a"), 90);
  EXPECT_EQ(TargetSm("sm_100f"), 100);
  EXPECT_EQ(TargetSm("compute_80"), -1);
}

}  // namespace
}  // namespace pvgpu::ptx
