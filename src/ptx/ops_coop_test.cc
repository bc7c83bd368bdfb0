// Hand-written PTX for what cooperative launches rely on: the %envreg special registers and
// spin loops that yield to the warps they wait for.
#include "ptx/handlers.h"
#include "ptx/program.h"
#include "ptx/snippet_util.h"

namespace pvgpu::ptx {
namespace {

using testing::Runner;
using testing::SharedExecutor;
using testing::SnippetKernel;

TEST(EnvRegTest, HoldTheLaunchsValuesInEveryLane) {
  Runner runner(SnippetKernel(R"(
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mad.lo.s32 %r3, %r1, %r2, %r0;
  mul.wide.u32 %rd2, %r3, 24;
  add.s64 %rd3, %rd0, %rd2;
  mov.u32 %r4, %envreg0;
  mov.u32 %r5, %envreg7;
  mov.b32 %r6, %envreg31;
  mov.b64 %rd4, {%envreg2, %envreg1};
  st.global.u32 [%rd3], %r4;
  st.global.u32 [%rd3+4], %r5;
  st.global.u32 [%rd3+8], %r6;
  st.global.u64 [%rd3+16], %rd4;
  )"));
  ASSERT_TRUE(runner.ok()) << runner.load_status().ToString();
  const uint32_t threads = 2 * 96;
  uint64_t out = runner.mem().Alloc(threads * 24);
  std::array<uint32_t, kNumEnvRegs> envreg{};
  envreg[0] = 11;
  envreg[1] = 0xAABBCCDD;
  envreg[2] = 0x11223344;
  envreg[7] = 77;
  envreg[31] = 0xFFFFFFFF;
  LaunchConfig config{{2, 1, 1}, {96, 1, 1}, 0};
  Status s = runner.LaunchWith(SharedExecutor(), "k", config, {out, uint64_t{0}}, envreg);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (uint32_t t = 0; t < threads; ++t) {
    auto w = runner.mem().Download<uint32_t>(out + t * 24, 6);
    EXPECT_EQ(w[0], 11u) << t;
    EXPECT_EQ(w[1], 77u) << t;
    EXPECT_EQ(w[2], 0xFFFFFFFFu) << t;
    EXPECT_EQ(runner.mem().Download<uint64_t>(out + t * 24 + 16, 1)[0], 0xAABBCCDD11223344ull);
  }
  // Values belong to one launch: the next one, with none set, reads zeros.
  s = runner.LaunchWith(SharedExecutor(), "k", config, {out, uint64_t{0}}, {});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(runner.mem().Download<uint32_t>(out, threads * 6),
            std::vector<uint32_t>(threads * 6, 0));
}

TEST(EnvRegTest, ReadOnlyAndNumberedUpTo31) {
  std::string log;
  auto p = LoadProgram(SnippetKernel("  mov.u32 %envreg3, %r1;"), &log);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(log.find("cannot write special register %envreg3"), std::string::npos) << log;
  p = LoadProgram(SnippetKernel("  mov.u32 %r1, %envreg32;"), &log);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(log.find("unknown register %envreg32"), std::string::npos) << log;
}

// Lane 0 of warp 0 spins on a shared-memory flag that warp 1 sets after a loop of its own.
// Without yielding, warp 0 would keep the block's only worker forever.
constexpr char kSpinOnSharedFlag[] = R"(
  .shared .align 4 .b8 flag[4];
  setp.lt.u32 %p1, %r0, 32;
  @!%p1 bra $PRODUCER;
  setp.ne.u32 %p2, %r0, 0;
  @%p2 bra $DONE;
$WAIT:
  ld.volatile.shared.u32 %r1, [flag];
  setp.eq.u32 %p3, %r1, 0;
  @%p3 bra $WAIT;
  st.global.u32 [%rd0], %r1;
  bra $DONE;
$PRODUCER:
  mov.u32 %r2, 0;
$WORK:
  add.u32 %r2, %r2, 3;
  setp.lt.u32 %p4, %r2, 30000;
  @%p4 bra $WORK;
  setp.eq.u32 %p5, %r0, 32;
  @%p5 st.volatile.shared.u32 [flag], %r2;
$DONE:
)";

// Counts the kernel's branches lowered to each handler.
std::pair<int, int> PlainAndSpinningBranches(const std::string& body) {
  auto p = LoadProgram(SnippetKernel(body));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return {-1, -1};
  const auto& impl = dynamic_cast<const ProgramImpl&>(**p);
  int plain = 0, spinning = 0;
  for (const Inst& in : impl.ImageFor(impl.kernels()[0])->code) {
    plain += in.fn == ExecBra;
    spinning += in.fn == ExecBraSpin;
  }
  return {plain, spinning};
}

TEST(SpinLoopTest, BackwardBranchesOverPollsSpin) {
  // The shared-flag kernel: $WAIT closes over a volatile load; $WORK and the forward branches
  // do not.
  EXPECT_EQ(PlainAndSpinningBranches(kSpinOnSharedFlag), std::make_pair(4, 1));
  // An atomic in the loop (a lock), an acquire load, nanosleep: each makes a spin loop.
  for (const char* poll : {"atom.global.cas.b32 %r2, [%rd0], 0, 1;",
                           "ld.acquire.gpu.global.u32 %r2, [%rd0];", "nanosleep.u32 100;"}) {
    EXPECT_EQ(PlainAndSpinningBranches(std::string("$L:\n  ") + poll +
                                       "\n  add.u32 %r1, %r1, 1;\n  setp.lt.u32 %p1, %r1, 9;\n"
                                       "  @%p1 bra $L;"),
              std::make_pair(0, 1))
        << poll;
  }
  // A weak load in a loop is ordinary work.
  EXPECT_EQ(PlainAndSpinningBranches("$L:\n  ld.global.u32 %r2, [%rd0];\n"
                                     "  add.u32 %r1, %r1, 1;\n  setp.lt.u32 %p1, %r1, 9;\n"
                                     "  @%p1 bra $L;"),
            std::make_pair(1, 0));
}

TEST(SpinLoopTest, WarpWaitingOnAnotherWarpYieldsInACooperativeLaunch) {
  Runner runner(SnippetKernel(kSpinOnSharedFlag));
  ASSERT_TRUE(runner.ok()) << runner.load_status().ToString();
  uint64_t out = runner.mem().Upload(std::vector<uint32_t>{0});
  Status s =
      runner.LaunchCooperative(SharedExecutor(), "k", {3, 1, 1}, {64, 1, 1}, {out, uint64_t{0}});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(runner.mem().Download<uint32_t>(out, 1)[0], 30000u);
}

// An acquire load, a release store and acq_rel atomics lower to the access plus host fences and
// keep their results.
TEST(SpinLoopTest, OrderedAccessesKeepTheirValues) {
  Runner runner(SnippetKernel(R"(
  ld.acquire.gpu.global.u32 %r1, [%rd1];
  add.u32 %r2, %r1, 5;
  st.release.gpu.global.u32 [%rd0], %r2;
  atom.acq_rel.gpu.global.add.u32 %r3, [%rd0+4], %r1;
  atom.release.gpu.global.exch.b32 %r4, [%rd0+8], %r2;
  ld.relaxed.gpu.global.u32 %r5, [%rd0+8];
  st.global.u32 [%rd0+12], %r3;
  st.global.u32 [%rd0+16], %r5;
  )"));
  ASSERT_TRUE(runner.ok()) << runner.load_status().ToString();
  uint64_t in = runner.mem().Upload(std::vector<uint32_t>{40});
  uint64_t out = runner.mem().Upload(std::vector<uint32_t>{0, 2, 9, 0, 0});
  ASSERT_TRUE(runner.Launch("k", {1, 1, 1}, {1, 1, 1}, {out, in}).ok());
  EXPECT_EQ(runner.mem().Download<uint32_t>(out, 5), (std::vector<uint32_t>{45, 42, 45, 2, 45}));
}

}  // namespace
}  // namespace pvgpu::ptx
