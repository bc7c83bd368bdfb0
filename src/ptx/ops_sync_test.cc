// Hand-written PTX for warp, barrier, atomic, call and printf behaviour, plus launch-level
// validation and concurrency.
#include <thread>

#include "ptx/snippet_util.h"

namespace pvgpu::ptx {
namespace {

using testing::F2U;
using testing::Runner;
using testing::RunSnippet;
using testing::SnippetKernel;
using testing::U2F;

TEST(WarpOpsTest, ShflSegmentsPredicateVoteUniMatchAll) {
  // Width-8 segments (c = 0x181f): idx 3 reads lane 3 of each segment; down 5 stays inside.
  auto r = RunSnippet(R"(
  shl.b32 %r1, %r0, 4;
  shfl.sync.idx.b32 %r2|%p1, %r1, 3, 0x181f, -1;
  shfl.sync.down.b32 %r3|%p2, %r1, 5, 0x181f, -1;
  selp.u32 %r4, 1, 0, %p2;
  and.b32 %r5, %r0, 1;
  setp.eq.u32 %p3, %r5, 0;
  vote.sync.uni.pred %p4, %p3, -1;
  setp.lt.u32 %p5, %r0, 40;
  vote.sync.uni.pred %p6, %p5, -1;
  selp.u32 %r6, 2, 0, %p4;
  selp.u32 %r7, 4, 0, %p6;
  or.b32 %r6, %r6, %r7;
  shr.u32 %r8, %r0, 5;
  match.all.sync.b32 %r9|%p7, %r8, -1;
  selp.u32 %r10, 8, 0, %p7;
  or.b32 %r6, %r6, %r10;
  or.b32 %r6, %r6, %r4;
  mul.wide.u32 %rd2, %r0, 12;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %r2;
  st.global.u32 [%rd3+4], %r3;
  st.global.u32 [%rd3+8], %r6;
  )",
                      {}, 3 * 64, 64);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (uint32_t t = 0; t < 64; ++t) {
    uint32_t lane = t % 32;
    EXPECT_EQ(r.out[3 * t], ((t & ~7u) + 3) * 16) << t;
    bool in_seg = (lane % 8) + 5 < 8;
    EXPECT_EQ(r.out[3 * t + 1], in_seg ? (t + 5) * 16 : t * 16) << t;
    uint32_t flags = r.out[3 * t + 2];
    EXPECT_EQ(flags & 1, in_seg ? 1u : 0u) << t;
    EXPECT_EQ(flags & 2, 0u);                     // even/odd lanes differ
    EXPECT_EQ(flags & 4, t < 32 ? 4u : 0u) << t;  // warp 1 straddles 40
    EXPECT_EQ(flags & 8, 8u);
  }
}

// sm_80/sm_90 forms nvcc emits around ordinary code: elect.sync (cooperative groups'
// invoke_one), createpolicy with a cache-hinted load and applypriority (cuda::annotated_ptr,
// access properties), griddepcontrol (cudaGridDependencySynchronize and
// cudaTriggerProgrammaticLaunchCompletion). Only elect changes values; the rest must load and
// leave the computation alone.
TEST(WarpOpsTest, ElectPoliciesAndGridDependencies) {
  auto r = RunSnippet(R"(
  griddepcontrol.wait;
  elect.sync %r1|%p1, 0xF0F0F0F0;
  selp.u32 %r2, 1, 0, %p1;
  elect.sync _|%p2, 0xFFFFFFFF;
  selp.u32 %r3, 1, 0, %p2;
  createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;
  createpolicy.fractional.L2::evict_first.L2::evict_unchanged.b64 %rd6, 0.5;
  ld.global.L2::cache_hint.u32 %r4, [%rd1], %rd5;
  applypriority.global.L2::evict_normal [%rd1], 128;
  griddepcontrol.launch_dependents;
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %r1;
  st.global.u32 [%rd3+4], %r2;
  st.global.u32 [%rd3+8], %r3;
  st.global.u32 [%rd3+12], %r4;
  )",
                      {0x1234u}, 4 * 32, 32);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString() << r.printed;
  for (uint32_t lane = 0; lane < 32; ++lane) {
    EXPECT_EQ(r.out[4 * lane], 4u) << lane;  // the lowest lane of 0xF0F0F0F0
    EXPECT_EQ(r.out[4 * lane + 1], lane == 4 ? 1u : 0u) << lane;
    EXPECT_EQ(r.out[4 * lane + 2], lane == 0 ? 1u : 0u) << lane;
    EXPECT_EQ(r.out[4 * lane + 3], 0x1234u) << lane;
  }
}

// Cluster forms in a cluster of one block: the registers, getctarank and mapa to rank 0 work;
// mapa to another rank faults, naming it.
TEST(WarpOpsTest, ClusterOfOneBlockForms) {
  auto r = RunSnippet(R"(
  mov.u32 %r1, %cluster_ctarank;   st.global.u32 [%rd0], %r1;
  mov.u32 %r1, %cluster_nctarank;  st.global.u32 [%rd0+4], %r1;
  mov.u32 %r1, %clusterid.x;       st.global.u32 [%rd0+8], %r1;
  mov.u32 %r1, %cluster_nctaid.x;  st.global.u32 [%rd0+12], %r1;
  selp.u32 %r1, 1, 0, %is_explicit_cluster; st.global.u32 [%rd0+16], %r1;
  getctarank.shared::cluster.u32 %r1, 16; st.global.u32 [%rd0+20], %r1;
  mapa.shared::cluster.u32 %r2, 16, 0;   st.global.u32 [%rd0+24], %r2;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  )",
                      {}, 7, 32);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out, (std::vector<uint32_t>{0, 1, 0, 1, 0, 0, 16}));
  auto bad = RunSnippet("  mapa.u64 %rd2, %rd0, 1;\n  st.global.u64 [%rd0], %rd2;\n", {}, 2, 32);
  EXPECT_EQ(bad.status.code(), Code::kIllegalAddress) << bad.status.ToString();
  EXPECT_NE(bad.status.message().find("rank 1"), std::string::npos) << bad.status.ToString();
}

// The shared memory reserved for system software (%reserved_smem_offset_*): 1 KiB after the
// block's static and dynamic shared memory, for kernels that name it, zeroed and usable (as
// cooperative groups uses it, with atomics); one byte past it faults.
TEST(WarpOpsTest, ReservedSharedMemoryFollowsTheKernels) {
  const std::string prelude = ".shared .align 4 .b8 user[100];\n";
  const std::string body = R"(
  mov.u32 %r1, %reserved_smem_offset_begin; st.global.u32 [%rd0], %r1;
  mov.u32 %r1, %reserved_smem_offset_end;   st.global.u32 [%rd0+4], %r1;
  mov.u32 %r1, %reserved_smem_offset_cap;   st.global.u32 [%rd0+8], %r1;
  mov.u32 %r1, %reserved_smem_offset_0;     st.global.u32 [%rd0+12], %r1;
  mov.u32 %r2, %reserved_smem_offset_1;     st.global.u32 [%rd0+16], %r2;
  mov.u32 %r1, %total_smem_size;            st.global.u32 [%rd0+20], %r1;
  cvt.u64.u32 %rd2, %r2;
  cvta.shared.u64 %rd3, %rd2;
  red.or.release.cta.b32 [%rd3+4], 5;
  ld.shared.u32 %r3, [%r2+4];                st.global.u32 [%rd0+24], %r3;
  mov.u32 %r4, %reserved_smem_offset_end;
  ld.shared.u32 %r5, [%r4+-4];               st.global.u32 [%rd0+28], %r5;
  mov.u32 %r6, user;                         st.global.u32 [%rd0+32], %r6;
  )";
  auto r = RunSnippet(body, {}, 9, 1, prelude, /*dynamic_shared=*/28);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  // 100 static bytes (112 with the layout's 16-byte alignment) and 28 dynamic ones: 144.
  EXPECT_EQ(r.out, (std::vector<uint32_t>{144, 1168, 1024, 144, 656, 144, 5, 0, 0}));
  auto past = RunSnippet(
      "  mov.u32 %r1, %reserved_smem_offset_end;\n  ld.shared.u32 %r2, [%r1];\n"
      "  st.global.u32 [%rd0], %r2;\n",
      {}, 1, 1, prelude, 28);
  EXPECT_EQ(past.status.code(), Code::kIllegalAddress) << past.status.ToString();
  // A kernel that does not name the registers keeps its shared memory as it was (28 dynamic
  // bytes, `user` unused): one byte past it faults.
  auto plain = RunSnippet(
      "  mov.u32 %r1, %total_smem_size;\n  st.global.u32 [%rd0], %r1;\n"
      "  ld.shared.u32 %r2, [32];\n",
      {}, 1, 1, prelude, 28);
  EXPECT_EQ(plain.status.code(), Code::kIllegalAddress) << plain.status.ToString();
  EXPECT_EQ(plain.out[0], 32u);
}

// cudaGraphSetConditional (conditional graph nodes): a store of the value at the handle, which
// is the address of the node's value; anything else faults.
TEST(WarpOpsTest, GraphSetConditionalStoresAtTheHandle) {
  const std::string prelude =
      ".extern .func cudaGraphSetConditional(.param .b64 h, .param .b32 v);\n";
  const std::string body = R"(
  {
  .param .b64 h;
  .param .b32 v;
  st.param.b64 [h], %rd0;
  st.param.b32 [v], 7;
  call.uni cudaGraphSetConditional, (h, v);
  }
  )";
  auto r = RunSnippet(body, {}, 1, 1, prelude);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out[0], 7u);
  const std::string stray = R"(
  {
  .param .b64 h;
  .param .b32 v;
  add.u64 %rd2, %rd0, 4096;
  st.param.b64 [h], %rd2;
  st.param.b32 [v], 1;
  call.uni cudaGraphSetConditional, (h, v);
  }
  )";
  auto bad = RunSnippet(stray, {}, 1, 1, prelude);
  EXPECT_EQ(bad.status.code(), Code::kIllegalAddress) << bad.status.ToString();
}

TEST(BarrierTest, NamedBarrierProducerConsumer) {
  // Warp 1 produces into shared memory and arrives; warp 0 waits on barrier 1 (64 threads).
  auto r = RunSnippet(R"(
  .shared .align 4 .b8 buf[128];
  setp.lt.u32 %p1, %r0, 32;
  @%p1 bra $CONSUME;
  sub.u32 %r1, %r0, 32;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, buf;
  add.u32 %r4, %r3, %r2;
  mul.lo.u32 %r5, %r1, 3;
  st.shared.u32 [%r4], %r5;
  bar.arrive 1, 64;
  bra $DONE;
$CONSUME:
  bar.sync 1, 64;
  shl.b32 %r2, %r0, 2;
  mov.u32 %r3, buf;
  add.u32 %r4, %r3, %r2;
  ld.shared.u32 %r5, [%r4];
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %r5;
$DONE:
  )",
                      {}, 32, 64);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(r.out[t], 3 * t);
}

TEST(BarrierTest, MismatchedBarriersDeadlockIsReported) {
  auto r = RunSnippet(R"(
  setp.lt.u32 %p1, %r0, 32;
  @%p1 bar.sync 0;
  @!%p1 bar.sync 1;
  )",
                      {}, 1, 64);
  EXPECT_EQ(r.status.code(), Code::kLaunchFailed) << r.status.ToString();
  EXPECT_NE(r.status.message().find("deadlock"), std::string::npos);
}

TEST(BarrierTest, ExitedThreadsDoNotBlockBarrier) {
  auto r = RunSnippet(R"(
  .shared .align 4 .b8 s[4];
  setp.ge.u32 %p1, %r0, 40;
  @%p1 exit;
  atom.shared.add.u32 %r1, [s], 1;
  bar.sync 0;
  ld.shared.u32 %r2, [s];
  setp.eq.u32 %p2, %r0, 0;
  @%p2 st.global.u32 [%rd0], %r2;
  )",
                      {}, 1, 96);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out[0], 40u);
}

TEST(AtomicTest, SharedAndGenericForms) {
  auto r = RunSnippet(R"(
  .shared .align 8 .b8 s[16];
  setp.eq.u32 %p1, %r0, 0;
  @%p1 st.shared.u32 [s], 100;
  @%p1 st.shared.u64 [s+8], 0;
  bar.sync 0;
  atom.shared.cas.b32 %r1, [s], 100, 200;
  atom.shared.add.u64 %rd2, [s+8], 3;
  cvta.to.global.u64 %rd3, %rd0;
  atom.global.inc.u32 %r2, [%rd3], 5;
  atom.dec.u32 %r3, [%rd0+4], 1000;
  red.global.add.f32 [%rd0+8], 0f3F000000;
  atom.global.max.s32 %r4, [%rd0+12], %r0;
  atom.global.exch.b32 %r5, [%rd0+16], 9;
  bar.sync 0;
  @!%p1 bra $END;
  ld.shared.u32 %r6, [s];
  ld.shared.u64 %rd4, [s+8];
  cvt.u32.u64 %r7, %rd4;
  st.global.u32 [%rd0+20], %r6;
  st.global.u32 [%rd0+24], %r7;
$END:
  )",
                      {}, 7, 64);
  // out starts as 0xDEADBEEF in every word.
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.out[0], 3u);  // 0xDEADBEEF >= 5 -> 0, then 63 increments wrapping after 5
  EXPECT_EQ(r.out[5], 200u);
  EXPECT_EQ(r.out[6], 192u);
  EXPECT_EQ(r.out[1], 1000u - 63u);  // first dec: value > 1000 -> 1000, then 63 decrements
  EXPECT_EQ(U2F(r.out[2]), U2F(0xDEADBEEF) + 32.0f);
  EXPECT_EQ(r.out[3], 63u);  // 0xDEADBEEF is negative as s32
  EXPECT_EQ(r.out[4], 9u);
}

TEST(ControlTest, FuncCallsWithParamsAndDivergentReturn) {
  const std::string prelude = R"(
.func (.param .b32 ret) twice_plus(.param .b32 a, .param .b32 b)
{
  .reg .b32 %q<4>;
  .reg .pred %z;
  ld.param.u32 %q1, [a];
  ld.param.u32 %q2, [b];
  setp.gt.u32 %z, %q1, 10;
  @%z bra $BIG;
  shl.b32 %q3, %q1, 1;
  add.u32 %q3, %q3, %q2;
  st.param.b32 [ret], %q3;
  ret;
$BIG:
  st.param.b32 [ret], 1000;
  ret;
}
)";
  auto r = RunSnippet(R"(
  {
  .param .b32 p0;
  .param .b32 p1;
  .param .b32 rv;
  st.param.b32 [p0], %r0;
  st.param.b32 [p1], 7;
  call.uni (rv), twice_plus, (p0, p1);
  ld.param.b32 %r1, [rv];
  }
  activemask.b32 %r2;
  mul.wide.u32 %rd2, %r0, 8;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %r1;
  st.global.u32 [%rd3+4], %r2;
  )",
                      {}, 64, 32, prelude);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (uint32_t t = 0; t < 32; ++t) {
    EXPECT_EQ(r.out[2 * t], t > 10 ? 1000u : 2 * t + 7) << t;
    EXPECT_EQ(r.out[2 * t + 1], 0xFFFFFFFFu) << "lanes reconverge after the call";
  }
}

TEST(ControlTest, PrintfFormats) {
  const std::string prelude = R"(
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
.global .align 1 .b8 fmt[32] = {91, 37, 53, 46, 50, 102, 124, 37, 45, 52, 100, 124, 37, 108, 120, 124, 37, 99, 124, 37, 115, 93, 10, 0};
)";
  // "[%5.2f|%-4d|%lx|%c|%s]\n"
  auto r = RunSnippet(R"(
  .local .align 8 .b8 args[40];
  mov.u64 %rd2, args;
  cvta.local.u64 %rd3, %rd2;
  st.local.f64 [args], 0d400921F9F01B866E;
  st.local.u32 [args+8], -7;
  st.local.u64 [args+16], 0xABCDEF0123;
  st.local.u32 [args+24], 90;
  st.local.u64 [args+32], 0;
  mov.u64 %rd4, fmt;
  cvta.global.u64 %rd5, %rd4;
  {
  .param .b64 a0;
  .param .b64 a1;
  .param .b32 rv;
  st.param.b64 [a0], %rd5;
  st.param.b64 [a1], %rd3;
  call.uni (rv), vprintf, (a0, a1);
  ld.param.b32 %r1, [rv];
  }
  st.global.u32 [%rd0], %r1;
  )",
                      {}, 1, 1, prelude);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.printed, "[ 3.14|-7  |abcdef0123|Z|(null)]\n");
  EXPECT_EQ(r.out[0], r.printed.size());
}

TEST(LaunchTest, ConfigurationErrors) {
  Runner runner(SnippetKernel("", ".global .align 4 .b8 g[4];"));
  ASSERT_TRUE(runner.ok());
  uint64_t p = runner.mem().Alloc(16);
  EXPECT_EQ(runner.Launch("k", {1, 1, 1}, {1025, 1, 1}, {p, p}).code(), Code::kInvalidValue);
  EXPECT_EQ(runner.Launch("k", {1, 1, 1}, {0, 1, 1}, {p, p}).code(), Code::kInvalidValue);
  EXPECT_EQ(runner.Launch("k", {1, 1, 1}, {32, 1, 1}, {p, p}, 200 * 1024).code(),
            Code::kInvalidValue);
  EXPECT_TRUE(runner.Launch("k", {3, 2, 1}, {32, 2, 1}, {p, p}, 1024).ok());
  auto big = LoadProgram(SnippetKernel("  .local .align 4 .b8 huge[100000000];\n"));
  EXPECT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Code::kInvalidPtx);
}

TEST(LaunchTest, ConcurrentLaunchesShareTheExecutor) {
  std::string body = R"(
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mad.lo.s32 %r3, %r1, %r2, %r0;
  mul.wide.u32 %rd2, %r3, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r4, [%rd3];
  mov.u32 %r5, 0;
$LOOP:
  add.u32 %r4, %r4, 3;
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p1, %r5, 200;
  @%p1 bra $LOOP;
  add.s64 %rd4, %rd0, %rd2;
  st.global.u32 [%rd4], %r4;
  )";
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      Runner runner(SnippetKernel(body));
      const int n = 64 * 32;
      std::vector<uint32_t> in(n);
      for (int i = 0; i < n; ++i) in[i] = i * (k + 1);
      uint64_t din = runner.mem().Upload(in), dout = runner.mem().Alloc(n * 4);
      if (!runner.Launch("k", {32, 1, 1}, {64, 1, 1}, {dout, din}).ok()) return;
      auto out = runner.mem().Download<uint32_t>(dout, n);
      for (int i = 0; i < n; ++i)
        if (out[i] != in[i] + 600) return;
      ++good;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 4);
}

}  // namespace
}  // namespace pvgpu::ptx
