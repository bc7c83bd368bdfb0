// Hand-written PTX for asynchronous copies (cp.async, cp.async.bulk) and mbarrier objects, and
// the loader's .target limit.
#include <cmath>

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

TEST(CpAsyncTest, DivergentWaitCompletesOnlyItsLanesCopies) {
  // A whole warp's consecutive copies are recorded per half-warp as one (ops_async.cc); a wait
  // by lanes 0-4 and then one by lanes 5-19 must still complete exactly their lanes' copies,
  // and the rest at the final wait, in issue order (the second copy of each lane overwrites
  // the first).
  auto r = RunSnippet(R"(
  .shared .align 16 .b8 a[128];
  mov.u32 %r1, a;
  shl.b32 %r3, %r0, 2;
  add.u32 %r5, %r1, %r3;
  cvt.u64.u32 %rd2, %r3;
  add.s64 %rd3, %rd1, %rd2;
  cp.async.ca.shared.global [%r5], [%rd3], 4;
  cp.async.commit_group;
  add.s64 %rd4, %rd3, 128;
  cp.async.ca.shared.global [%r5], [%rd4], 4;
  cp.async.commit_group;
  setp.lt.u32 %p1, %r0, 5;
  @%p1 cp.async.wait_group 1;
  ld.shared.u32 %r7, [%r5];
  setp.lt.u32 %p2, %r0, 20;
  @%p2 cp.async.wait_group 0;
  ld.shared.u32 %r8, [%r5];
  cp.async.wait_all;
  ld.shared.u32 %r9, [%r5];
  mul.wide.u32 %rd6, %r0, 12;
  add.s64 %rd7, %rd0, %rd6;
  st.global.u32 [%rd7], %r7;
  st.global.u32 [%rd7+4], %r8;
  st.global.u32 [%rd7+8], %r9;
  )",
                      Iota(64, 1000), 3 * 32, 32);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (uint32_t t = 0; t < 32; ++t) {
    EXPECT_EQ(r.out[3 * t], t < 5 ? 1000 + t : 0u) << "after the first wait, lane " << t;
    EXPECT_EQ(r.out[3 * t + 1], t < 20 ? 1032 + t : 0u) << "after the second wait, lane " << t;
    EXPECT_EQ(r.out[3 * t + 2], 1032 + t) << "at the end, lane " << t;
  }
}

TEST(CpAsyncTest, SrcSizeZeroFillsIgnoreSrcAndHints) {
  // Shared memory is first filled with 0xFFFFFFFF so that zero fill shows.
  auto r =
      RunSnippet(R"(
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
                 {0x44332211, 0x88776655, 0xCCBBAA99, 0x00FFEEDD, 0x01020304, 0x05060708}, 24, 1);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const std::vector<uint32_t> want = {
      0x44332211, 0x00000055, 0,          0,           // 5 of 16 bytes, then zeros
      0x44332211, 0x00006655, 0,          0,           // src-size from a register (6)
      0,          0,          0,          0,           // ignore-src set: all zeros
      0x01020304, 0x05060708,                          // ignore-src clear: copied
      0xCCBBAA99, 0x00FFEEDD,                          // 8 of 8 bytes, cache hint given
      0,          0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF,  // src-size 0: 4 zero bytes
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
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 16;
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
      3,     // a state holds the pending count before its arrival
      0,     // phase 0 incomplete
      2,     // the completing arrival's state: two were pending
      1, 1,  // phase 0 complete, by state and by parity
      0,     // phase 1 (parity 1) incomplete
      3,     // arrive_drop in phase 1 (3 pending); expected 2 from now on
      2,     // phase 2 starts with 2 pending
      0,     // arrivals done, 64 transaction bytes outstanding
      1,     // complete_tx finishes phase 2
      0,     // phase 3: 8 bytes still outstanding
      1};    // and done
  EXPECT_EQ(r.out, want);
}

TEST(MbarrierTest, LanesArriveInOrderAndGenericAddresses) {
  // 32 lanes arrive on a count-32 barrier through a generic address: lane i's state has
  // 32 - i arrivals pending (its own included); the last completes the phase for everyone.
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
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(r.out[t], 132 - t) << t;
}

// Warp 0 (scheduled first) spins in try_wait on a phase that only warp 1's arrivals complete.
constexpr const char* kHandoff = R"(
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
  mov.u32 %r4, %ctaid.x;
  add.u32 %r1, %r1, %r4;
  mov.u32 %r5, %tid.x;
  mad.lo.u32 %r5, %r4, 32, %r5;
  mul.wide.u32 %rd2, %r5, 4;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %r1;
  bra $DONE;
$PRODUCER:
  setp.eq.u32 %p4, %r0, 40;
  @%p4 st.shared.u32 [val], 1234;
  mbarrier.arrive.release.cta.shared::cta.b64 _, [bar];
$DONE:
  )";

TEST(MbarrierTest, WarpWaitingInTryWaitLetsTheArrivingWarpRun) {
  auto r = RunSnippet(kHandoff, {}, 32, 64);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(r.out[t], 1234u) << t;
}

TEST(MbarrierTest, WaitsInCooperativeLaunches) {
  // Time-sliced blocks: a waiting warp yields within its block's slice as well.
  Runner runner(SnippetKernel(kHandoff));
  ASSERT_TRUE(runner.ok()) << runner.load_status().ToString();
  uint64_t out = runner.mem().Upload(std::vector<uint32_t>(4 * 32, 0));
  uint64_t in = runner.mem().Upload(std::vector<uint32_t>{0});
  Status s =
      runner.LaunchCooperative(testing::SharedExecutor(), "k", {4, 1, 1}, {64, 1, 1}, {out, in});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto got = runner.mem().Download<uint32_t>(out, 4 * 32);
  for (uint32_t t = 0; t < 4 * 32; ++t) EXPECT_EQ(got[t], 1234 + t / 32) << t;
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
  EXPECT_NE(r.status.message().find("mbarrier deadlock"), std::string::npos) << r.status.message();
}

TEST(MbarrierTest, EveryParticipantDropping) {
  // Both participants leave with arrive_drop: the phase completes and the object stays valid.
  auto r = RunSnippet(R"(
  .shared .align 8 .b64 bar;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared.b64 [bar], 2;
  bar.sync 0;
  mbarrier.arrive_drop.shared.b64 %rd2, [bar];
  mbarrier.test_wait.parity.shared.b64 %p2, [bar], 0;
  selp.u32 %r1, 1, 0, %p2;
  mul.wide.u32 %rd3, %r0, 4;
  add.s64 %rd4, %rd0, %rd3;
  st.global.u32 [%rd4], %r1;
  )",
                      {}, 2, 2);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out, (std::vector<uint32_t>{1, 1}));
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

TEST(BulkCopyTest, CopiesLeftPendingLandWhenTheThreadExits) {
  auto r = RunSnippet(R"(
  .shared .align 16 .b8 s[32];
  add.u32 %r1, %r0, 77;
  shl.b32 %r2, %r0, 4;
  mov.u32 %r3, s;
  add.u32 %r4, %r3, %r2;
  st.shared.u32 [%r4], %r1;
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd3, %rd0, %rd2;
  cp.async.bulk.global.shared::cta.bulk_group [%rd3], [%r4], 16;
  cp.async.bulk.commit_group;
  )",
                      {}, 8, 2);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out[0], 77u);
  EXPECT_EQ(r.out[4], 78u);
  EXPECT_EQ(r.out[1], 0u);
}

TEST(TargetTest, LoaderRejectsTargetsAboveTheMaximum) {
  auto module = [](const std::string& target) {
    return ".version 8.0\n.target " + target + "\n.address_size 64\n.visible .entry k() { ret; }\n";
  };
  EXPECT_TRUE(LoadProgram(module("sm_90a")).ok());
  EXPECT_TRUE(LoadProgram(module("sm_52")).ok());
  std::string log;
  auto newer = LoadProgram(module("sm_100a"), &log);
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), Code::kInvalidPtx);
  EXPECT_NE(newer.status().message().find(".target sm_100a is newer than sm_90"), std::string::npos)
      << newer.status().message();
  EXPECT_NE(log.find("sm_100a"), std::string::npos);
  EXPECT_TRUE(LoadProgram(module("sm_75"), nullptr, nullptr, 75).ok());
  auto sm80 = LoadProgram(module("sm_80"), nullptr, nullptr, 75);
  ASSERT_FALSE(sm80.ok());
  EXPECT_NE(sm80.status().message().find("sm_80"), std::string::npos);

  // A link runs what its newest module needs.
  const std::string a = module("sm_75");
  const std::string b =
      ".version 8.0\n.target sm_86\n.address_size 64\n"
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

namespace pvgpu::ptx {
namespace {

using testing::Runner;
using testing::RunSnippet;
using testing::SnippetKernel;

float Half(uint32_t h) {
  int exp = (h >> 10) & 0x1F, frac = h & 0x3FF;
  float v = exp == 0 ? std::ldexp(static_cast<float>(frac), -24)
                     : std::ldexp(1.0f + frac / 1024.0f, exp - 15);
  return (h & 0x8000) ? -v : v;
}
float Bf16(uint32_t h) {
  uint32_t bits = (h & 0xFFFF) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST(HalfFormsTest, Ex2AndTanhApproximations) {
  // Inputs: f16x2 {lo 1.5, hi -2}, bf16x2 {lo 1.5, hi -2}.
  auto r = RunSnippet(R"(
  ld.global.u32 %r1, [%rd1];
  ex2.approx.f16x2 %r2, %r1;
  st.global.u32 [%rd0], %r2;
  mov.b32 {%h1, %h2}, %r1;
  ex2.approx.f16 %h3, %h1;
  cvt.u32.u16 %r3, %h3;
  st.global.u32 [%rd0+4], %r3;
  tanh.approx.f16x2 %r4, %r1;
  st.global.u32 [%rd0+8], %r4;
  tanh.approx.f16 %h4, %h2;
  cvt.u32.u16 %r3, %h4;
  st.global.u32 [%rd0+12], %r3;
  ld.global.u32 %r5, [%rd1+4];
  ex2.approx.ftz.bf16x2 %r6, %r5;
  st.global.u32 [%rd0+16], %r6;
  tanh.approx.bf16x2 %r7, %r5;
  st.global.u32 [%rd0+20], %r7;
  mov.b32 {%h5, %h6}, %r5;
  ex2.approx.ftz.bf16 %h7, %h5;
  cvt.u32.u16 %r3, %h7;
  st.global.u32 [%rd0+24], %r3;
  tanh.approx.bf16 %h7, %h6;
  cvt.u32.u16 %r3, %h7;
  st.global.u32 [%rd0+28], %r3;
  ex2.approx.ftz.bf16 %h7, 0x0001;
  cvt.u32.u16 %r3, %h7;
  st.global.u32 [%rd0+32], %r3;
  )",
                      {0xC0003E00, 0xC0003FC0}, 9, 1);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const double e15 = std::exp2(1.5), t15 = std::tanh(1.5), t2 = std::tanh(-2.0);
  EXPECT_NEAR(Half(r.out[0] & 0xFFFF), e15, 1e-3 * e15);
  EXPECT_EQ(Half(r.out[0] >> 16), 0.25f);
  EXPECT_NEAR(Half(r.out[1]), e15, 1e-3 * e15);
  EXPECT_EQ(r.out[1] >> 16, 0u);
  EXPECT_NEAR(Half(r.out[2] & 0xFFFF), t15, 1e-3);
  EXPECT_NEAR(Half(r.out[2] >> 16), t2, 1e-3);
  EXPECT_NEAR(Half(r.out[3]), t2, 1e-3);
  EXPECT_NEAR(Bf16(r.out[4]), e15, 8e-3 * e15);
  EXPECT_EQ(Bf16(r.out[4] >> 16), 0.25f);
  EXPECT_NEAR(Bf16(r.out[5]), t15, 8e-3);
  EXPECT_NEAR(Bf16(r.out[5] >> 16), t2, 8e-3);
  EXPECT_NEAR(Bf16(r.out[6]), e15, 8e-3 * e15);
  EXPECT_NEAR(Bf16(r.out[7]), t2, 8e-3);
  EXPECT_EQ(r.out[8], 0x3F80u) << ".ftz: a subnormal input is 0, 2^0 = 1";
}

TEST(HalfFormsTest, ConversionsWithReluSatfiniteRzAndPack) {
  auto r = RunSnippet(R"(
  cvt.rn.relu.f16x2.f32 %r1, 0fBF800000, 0f40000000;
  st.global.u32 [%rd0], %r1;
  cvt.rn.relu.bf16x2.f32 %r1, 0f7FC00000, 0fC0000000;
  st.global.u32 [%rd0+4], %r1;
  cvt.rn.satfinite.f16x2.f32 %r1, 0f477FF000, 0fC8000000;
  st.global.u32 [%rd0+8], %r1;
  cvt.rz.f16x2.f32 %r1, 0f3F7FFFFF, 0f477FF000;
  st.global.u32 [%rd0+12], %r1;
  cvt.rn.relu.f16.f32 %h1, 0fC0400000;
  cvt.u32.u16 %r1, %h1;
  st.global.u32 [%rd0+16], %r1;
  cvt.rn.satfinite.bf16.f32 %h1, 0f7F800000;
  cvt.u32.u16 %r1, %h1;
  st.global.u32 [%rd0+20], %r1;
  cvt.pack.sat.u16.s32 %r1, 70000, -5;
  st.global.u32 [%rd0+24], %r1;
  cvt.pack.sat.s16.s32 %r1, -40000, 123;
  st.global.u32 [%rd0+28], %r1;
  cvt.pack.sat.u8.s32.b32 %r2, 300, 7, 0x1234;
  st.global.u32 [%rd0+32], %r2;
  cvt.pack.sat.s8.s32.b32 %r1, -200, 100, %r2;
  st.global.u32 [%rd0+36], %r1;
  cvt.pack.sat.s4.s32.b32 %r1, 9, -9, 0xAB;
  st.global.u32 [%rd0+40], %r1;
  cvt.rn.relu.satfinite.f16x2.f32 %r1, 0fFF800000, 0f7F800000;
  st.global.u32 [%rd0+44], %r1;
  )",
                      {}, 12, 1);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const std::vector<uint32_t> want = {
      0x00004000,  // relu(-1) = 0 (high half), 2.0
      0x7FFF0000,  // NaN becomes the canonical NaN; relu(-2) = 0
      0x7BFFFBFF,  // 65520 and -131072 saturate to +-65504
      0x3BFF7BFF,  // toward zero: 0.99999994 -> 0.99951, 65520 -> 65504
      0x0000,      // relu(-3)
      0x7F7F,      // +inf saturates to the largest finite bf16
      0xFFFF0000,  // u16: 70000 -> 65535 above, -5 -> 0 below
      0x8000007B,  // s16: -40000 -> -32768, 123
      0x1234FF07,  // u8: c's low half above, 300 -> 255, 7
      0xFF078064,  // s8: -200 -> -128, 100, the previous result shifted in
      0x0000AB78,  // s4: 9 -> 7, -9 -> -8
      0x00007BFF,  // relu and satfinite: -inf -> 0, +inf -> 65504
  };
  EXPECT_EQ(r.out, want);
}

TEST(AtomicFormsTest, HalfAndVectorAtomics) {
  // Words: 0 f16 {lo 1.0, hi 2.0}; 1 bf16x2 {1.0, 2.0}; 2-3 f32 for atom.v2 (lane 0 only);
  // 4-7 f32 1..4; 8-11 eight f16 1.0; 12-13 f16x2 pairs for atom.max (vectors are aligned to
  // their size).
  std::vector<uint32_t> in = {0x40003C00, 0x40003F80, 0x41200000, 0x41A00000, 0x3F800000,
                              0x40000000, 0x40400000, 0x40800000, 0x3C003C00, 0x3C003C00,
                              0x3C003C00, 0x3C003C00, 0x3C004000, 0xC0004400};
  auto r = RunSnippet(R"(
  .reg .b16 %q<3>;
  mov.b16 %q0, 0x3800;
  atom.global.add.noftz.f16 %q1, [%rd1], %q0;
  cvt.u32.u16 %r1, %q1;
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3+16], %r1;
  red.global.add.noftz.bf16x2 [%rd1+4], 0x3F803F80;
  mov.f32 %f1, 0f3F800000;
  mov.f32 %f2, 0f40000000;
  mov.f32 %f3, 0f40400000;
  mov.f32 %f4, 0f40800000;
  red.global.add.v4.f32 [%rd1+16], {%f1, %f2, %f3, %f4};
  red.global.add.noftz.v8.f16 [%rd1+32], {%q0, %q0, %q0, %q0, %q0, %q0, %q0, %q0};
  setp.eq.u32 %p1, %r0, 0;
  @%p1 atom.global.add.v2.f32 {%f5, %f6}, [%rd1+8], {%f1, %f2};
  @%p1 st.global.f32 [%rd0], %f5;
  @%p1 st.global.f32 [%rd0+4], %f6;
  mov.b32 %r2, 0x3E003E00;
  @%p1 atom.global.max.noftz.v2.f16x2 {%r3, %r4}, [%rd1+48], {%r2, %r2};
  @%p1 st.global.u32 [%rd0+8], %r3;
  @%p1 st.global.u32 [%rd0+12], %r4;
  bar.sync 0;
  setp.lt.u32 %p2, %r0, 14;
  add.s64 %rd4, %rd1, %rd2;
  @%p2 ld.global.u32 %r5, [%rd4];
  @%p2 st.global.u32 [%rd3+144], %r5;
  )",
                      in, 4 + 32 + 14, 32);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  // Old values of the f16 adds: 1.0 + 0.5 k for k = 0..31, each once.
  std::vector<bool> seen(32, false);
  for (int t = 0; t < 32; ++t) {
    float old = Half(r.out[4 + t]);
    int k = static_cast<int>((old - 1.0f) * 2);
    ASSERT_TRUE(k >= 0 && k < 32 && !seen[k] && old == 1.0f + 0.5f * k) << old;
    seen[k] = true;
  }
  EXPECT_EQ(r.out[0], 0x41200000u);  // atom.v2 returns the old 10.0 and 20.0
  EXPECT_EQ(r.out[1], 0x41A00000u);
  EXPECT_EQ(r.out[2], 0x3C004000u);
  EXPECT_EQ(r.out[3], 0xC0004400u);
  const std::vector<uint32_t> memory(r.out.begin() + 36, r.out.end());
  const std::vector<uint32_t> want = {
      0x40004C40,                                      // 1 + 32 * 0.5 = 17; high half kept
      0x42084204,                                      // bf16 33, 34
      0x41300000, 0x41B00000,                          // 11, 22
      0x42040000, 0x42840000, 0x42C60000, 0x43040000,  // 33, 66, 99, 132
      0x4C404C40, 0x4C404C40, 0x4C404C40, 0x4C404C40,  // eight times 17
      0x3E004000, 0x3E004400};                         // max with 1.5 per half
  EXPECT_EQ(memory, want);

  auto misaligned = RunSnippet(R"(
  mov.f32 %f1, 0f3F800000;
  red.global.add.v4.f32 [%rd1+8], {%f1, %f1, %f1, %f1};
  )",
                               {0, 0, 0, 0, 0, 0, 0, 0}, 1, 1);
  EXPECT_EQ(misaligned.status.code(), Code::kMisalignedAddress) << misaligned.status.ToString();
}

TEST(ControlFormsTest, BrxIdxJumpsThroughItsTargetList) {
  // Lane t takes target t % 4; lanes with t >= 24 are excluded by the guard and fall through.
  auto r = RunSnippet(R"(
  and.b32 %r1, %r0, 3;
  mov.u32 %r2, 99;
  setp.lt.u32 %p1, %r0, 24;
  ts: .branchtargets L0, L1, L2, L3;
  @%p1 brx.idx %r1, ts;
  bra END;
L0:
  mov.u32 %r2, 10;
  bra END;
L1:
  mov.u32 %r2, 11;
  bra END;
L3:
  mov.u32 %r2, 13;
  bra END;
L2:
  mov.u32 %r2, 12;
END:
  activemask.b32 %r3;
  mul.wide.u32 %rd2, %r0, 8;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %r2;
  st.global.u32 [%rd3+4], %r3;
  )",
                      {}, 64, 32);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (uint32_t t = 0; t < 32; ++t) {
    EXPECT_EQ(r.out[2 * t], t < 24 ? 10 + t % 4 : 99u) << t;
    EXPECT_EQ(r.out[2 * t + 1], 0xFFFFFFFFu) << "lanes reconverge after the branch";
  }

  auto out_of_range = RunSnippet(R"(
  ts: .branchtargets L0, L1;
  brx.idx.uni %r0, ts;
L0:
L1:
  )",
                                 {}, 1, 4);
  EXPECT_EQ(out_of_range.status.code(), Code::kIllegalInstruction);
  EXPECT_NE(out_of_range.status.message().find("brx.idx index 2 is out of range of its 2 targets"),
            std::string::npos)
      << out_of_range.status.message();

  testing::Runner no_list(testing::SnippetKernel("brx.idx %r0, nowhere;\n"));
  EXPECT_FALSE(no_list.ok());
}

TEST(MemoryFormsTest, B128LoadsStoresAndMoves) {
  auto r = RunSnippet(R"(
  .reg .b128 %q<2>;
  ld.global.b128 %q0, [%rd1];
  mov.b128 {%rd2, %rd3}, %q0;
  mov.b128 %q1, {%rd3, %rd2};
  st.global.b128 [%rd0], %q1;
  mov.b128 %q1, %q0;
  st.global.b128 [%rd0+16], %q1;
  mov.b128 {%rd4, _}, %q1;
  st.global.b64 [%rd0+32], %rd4;
  )",
                      {1, 2, 3, 4}, 10, 1);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out, (std::vector<uint32_t>{3, 4, 1, 2, 1, 2, 3, 4, 1, 2}));

  auto misaligned = RunSnippet(R"(
  .reg .b128 %q0;
  ld.global.b128 %q0, [%rd1+8];
  )",
                               {1, 2, 3, 4, 5, 6}, 1, 1);
  EXPECT_EQ(misaligned.status.code(), Code::kMisalignedAddress) << misaligned.status.ToString();

  Runner mismatch(SnippetKernel(R"(
  .reg .b128 %q0;
  mov.b64 %rd2, %q0;
  )"));
  EXPECT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.load_status().message().find(".b128 register mismatch"), std::string::npos)
      << mismatch.load_status().message();
}

TEST(MemoryFormsTest, V8LoadsAndStoresOf32BitElements) {
  auto r = RunSnippet(R"(
  ld.global.v8.b32 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd1];
  add.u32 %r1, %r1, 100;
  add.u32 %r8, %r8, 100;
  st.global.v8.u32 [%rd0], {%r8, %r7, %r6, %r5, %r4, %r3, %r2, %r1};
  ld.global.v8.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, [%rd1];
  st.global.f32 [%rd0+32], %f8;
  )",
                      {1, 2, 3, 4, 5, 6, 7, 8}, 9, 1);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out, (std::vector<uint32_t>{108, 7, 6, 5, 4, 3, 2, 101, 8}));

  // Aligned to 16 but not 32: the whole access faults before either half runs.
  auto misaligned = RunSnippet(R"(
  st.global.v8.b32 [%rd0+16], {%r0, %r0, %r0, %r0, %r0, %r0, %r0, %r0};
  )",
                               {}, 16, 1);
  EXPECT_EQ(misaligned.status.code(), Code::kMisalignedAddress) << misaligned.status.ToString();
  EXPECT_EQ(misaligned.out[4], 0xDEADBEEFu);

  Runner shared(SnippetKernel(R"(
  .shared .align 32 .b8 s[32];
  ld.shared.v8.b32 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [s];
  )"));
  EXPECT_FALSE(shared.ok());
}

// .v8 of 16- and 8-bit elements (128- and 64-bit accesses): every state space, 16-bit registers
// or wider ones (zero- or sign-extended), and the whole access checked before either half runs.
TEST(MemoryFormsTest, V8LoadsAndStoresOf16And8BitElements) {
  // in: halves 1..8 (words 0-3), then bytes 0x81..0x88 (words 4-5).
  const std::vector<uint32_t> in = {0x00020001, 0x00040003, 0x00060005,
                                    0xFFF80007, 0x84838281, 0x88878685};
  auto r = RunSnippet(R"(
  .local .align 16 .b8 l[16];
  ld.global.v8.b16 {%h0, %h1, %h2, %h3, %h4, %h5, %h6, %h7}, [%rd1];
  st.global.v8.b16 [%rd0], {%h7, %h6, %h5, %h4, %h3, %h2, %h1, %h0};
  // Through shared and local memory and a generic address, into 32-bit registers.
  st.shared.v8.b16 [s], {%h0, %h1, %h2, %h3, %h4, %h5, %h6, %h7};
  ld.shared.v8.s16 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [s];
  st.global.v4.b32 [%rd0+16], {%r1, %r4, %r7, %r8};
  st.local.v8.u16 [l], {%h0, %h0, %h1, %h1, %h2, %h2, %h7, %h7};
  ld.local.v8.u16 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [l];
  st.global.v2.b32 [%rd0+32], {%r3, %r8};
  add.s64 %rd2, %rd1, 16;
  ld.v8.u8 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd2];
  st.global.v4.b32 [%rd0+48], {%r1, %r2, %r7, %r8};
  ld.global.nc.v8.s8 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd2];
  st.global.v8.b8 [%rd0+64], {%r8, %r7, %r6, %r5, %r4, %r3, %r2, %r1};
  st.global.b32 [%rd0+72], %r1;
  ld.const.v8.b16 {%h0, %h1, %h2, %h3, %h4, %h5, %h6, %h7}, [c];
  st.global.v2.b16 [%rd0+76], {%h0, %h7};
  // The eight bytes of the out pointer, from the parameter space.
  ld.param.v8.u8 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [out];
  shl.b32 %r2, %r2, 8;
  shl.b32 %r3, %r3, 16;
  shl.b32 %r4, %r4, 24;
  or.b32 %r1, %r1, %r2;
  or.b32 %r1, %r1, %r3;
  or.b32 %r1, %r1, %r4;
  mov.b64 {%r9, %r10}, %rd0;
  xor.b32 %r1, %r1, %r9;
  st.global.b32 [%rd0+80], %r1;
  )",
                      in, 21, 1,
                      ".shared .align 16 .b8 s[16];\n"
                      ".const .align 16 .b16 c[8] = {10, 11, 12, 13, 14, 15, 16, 17};");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  auto words = [&](size_t first, size_t n) {
    return std::vector<uint32_t>(r.out.begin() + first, r.out.begin() + first + n);
  };
  using W = std::vector<uint32_t>;
  EXPECT_EQ(words(0, 4), (W{0x0007FFF8, 0x00050006, 0x00030004, 0x00010002}));  // reversed
  EXPECT_EQ(words(4, 4), (W{1, 4, 7, 0xFFFFFFF8}));                // .s16, sign-extended
  EXPECT_EQ(words(8, 4), (W{2, 0xFFF8, 0xDEADBEEF, 0xDEADBEEF}));  // .u16, zero-extended
  EXPECT_EQ(words(12, 4), (W{0x81, 0x82, 0x87, 0x88}));            // .u8
  EXPECT_EQ(words(16, 2), (W{0x85868788, 0x81828384}));            // bytes reversed
  EXPECT_EQ(r.out[18], 0xFFFFFF81u);                               // .s8
  EXPECT_EQ(r.out[19], 0x0011000Au);                               // .const
  EXPECT_EQ(r.out[20], 0u);  // the parameter's bytes are the out pointer's low word

  // Aligned to 8 but not 16: the whole access faults before either half runs.
  auto misaligned = RunSnippet(R"(
  st.global.v8.b16 [%rd0+8], {%h0, %h0, %h0, %h0, %h0, %h0, %h0, %h0};
  )",
                               {}, 6, 1);
  EXPECT_EQ(misaligned.status.code(), Code::kMisalignedAddress) << misaligned.status.ToString();
  EXPECT_EQ(misaligned.out[2], 0xDEADBEEFu);
  // One byte short of the buffer: an out-of-bounds fault, nothing stored.
  auto outside = RunSnippet(R"(
  ld.global.v8.b8 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd1+8];
  st.global.b32 [%rd0], %r1;
  )",
                            {1, 2, 3}, 1, 1);
  EXPECT_EQ(outside.status.code(), Code::kIllegalAddress) << outside.status.ToString();

  // ldu has no .v8, and .v8 stops at 32-bit elements.
  for (const char* bad : {
           "ldu.global.v8.b16 {%h0, %h1, %h2, %h3, %h4, %h5, %h6, %h7}, [%rd1];",
           "ld.global.v8.b64 {%rd2, %rd3, %rd4, %rd5, %rd6, %rd7, %rd8, %rd9}, [%rd1];",
           "ld.global.v8.b16 {%h0, %h1, %h2, %h3}, [%rd1];",
       }) {
    Runner runner(SnippetKernel(bad));
    EXPECT_FALSE(runner.ok()) << bad;
  }
}

TEST(AtomicFormsTest, Atom128CasAndExch) {
  auto r = RunSnippet(R"(
  .reg .b128 %q<5>;
  ld.global.b128 %q0, [%rd1];
  mov.b64 %rd2, 10;
  mov.b64 %rd3, 20;
  mov.b128 %q1, {%rd2, %rd3};
  atom.global.cas.b128 %q2, [%rd1], %q0, %q1;
  st.global.b128 [%rd0], %q2;
  atom.global.cas.b128 %q3, [%rd1], %q0, %q0;
  st.global.b128 [%rd0+16], %q3;
  mov.b64 %rd4, 30;
  mov.b128 %q4, {%rd4, %rd4};
  atom.exch.b128 %q3, [%rd1], %q4;
  st.global.b128 [%rd0+32], %q3;
  ld.global.b128 %q3, [%rd1];
  st.global.b128 [%rd0+48], %q3;
  )",
                      {1, 2, 3, 4}, 16, 1);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out, (std::vector<uint32_t>{1, 2, 3, 4,       // the cas matched: old value
                                          10, 0, 20, 0,     // no match: the current value
                                          10, 0, 20, 0,     // exch returns it
                                          30, 0, 30, 0}));  // and leaves its operand

  // 32 lanes increment a 128-bit counter's high half with cas loops.
  auto counter = RunSnippet(R"(
  .reg .b128 %q<3>;
  ld.global.b128 %q0, [%rd1];
$RETRY:
  mov.b128 {%rd2, %rd3}, %q0;
  add.s64 %rd3, %rd3, 1;
  mov.b128 %q1, {%rd2, %rd3};
  atom.global.cas.b128 %q2, [%rd1], %q0, %q1;
  mov.b128 {%rd4, %rd5}, %q2;
  mov.b128 %q0, %q2;
  add.s64 %rd5, %rd5, 1;
  setp.ne.u64 %p2, %rd5, %rd3;
  @%p2 bra $RETRY;
  bar.sync 0;
  setp.eq.u32 %p3, %r0, 0;
  @%p3 ld.global.b128 %q0, [%rd1];
  @%p3 st.global.b128 [%rd0], %q0;
  )",
                            {7, 0, 0, 0}, 4, 32);
  ASSERT_TRUE(counter.status.ok()) << counter.status.ToString();
  EXPECT_EQ(counter.out, (std::vector<uint32_t>{7, 0, 32, 0}));

  auto misaligned = RunSnippet(R"(
  .reg .b128 %q<2>;
  atom.global.exch.b128 %q0, [%rd1+8], %q1;
  )",
                               {0, 0, 0, 0, 0, 0}, 1, 1);
  EXPECT_EQ(misaligned.status.code(), Code::kMisalignedAddress);
}

}  // namespace
}  // namespace pvgpu::ptx
