// The compiling engine against the interpreter: the same kernels, run by both, must leave the
// same bytes in memory and fail the same way. Random well-formed kernels (a small generator of
// arithmetic, comparisons, divergent branches, loops, shared and global memory) cover what
// hand-written tests would not think of.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "ptx/jit.h"
#include "ptx/random_kernel.h"
#include "ptx/snippet_util.h"
#include "ptx/test_util.h"

namespace pvgpu::ptx {
namespace {

using testing::RandomKernel;
using testing::Runner;

class JitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!JitAvailable()) GTEST_SKIP() << "this build has no compiling engine";
  }
};

struct Outcome {
  Status status;
  std::vector<uint32_t> out;
};

// testing::RunKernel, the load expected to succeed.
Outcome RunWith(Engine engine, const std::string& ptx, const std::vector<uint32_t>& in,
                size_t out_words, Dim3 grid, Dim3 block) {
  testing::KernelRun run = testing::RunKernel(engine, ptx, in, out_words, grid, block);
  EXPECT_TRUE(run.load.ok()) << run.load.message();
  return Outcome{run.launch, std::move(run.out)};
}

JitStats StatsOf(const std::string& ptx) {
  JitStats stats;
  auto program = LoadProgram(ptx);
  EXPECT_TRUE(program.ok());
  if (!program.ok()) return stats;
  Status s = CompileKernelForTest(**program, "k", &stats);
  EXPECT_TRUE(s.ok()) << s.message();
  return stats;
}

// A loop over global loads with float and integer arithmetic, a divergent branch and stores:
// everything but the parameter loads' prologue and ret compiles natively.
const char* kLoopBody = R"(
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mad.lo.s32 %r3, %r1, %r2, %r0;
  mul.wide.u32 %rd2, %r3, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.f32 %f1, [%rd3];
  mov.f32 %f2, 0f00000000;
  mov.u32 %r5, 0;
$LOOP:
  fma.rn.f32 %f2, %f1, %f1, %f2;
  mul.f32 %f3, %f2, 0f3F000000;
  sub.f32 %f2, %f2, %f3;
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p1, %r5, 37;
  @%p1 bra $LOOP;
  and.b32 %r6, %r0, 3;
  setp.eq.u32 %p2, %r6, 0;
  @%p2 bra $SKIP;
  rsqrt.approx.f32 %f2, %f2;
$SKIP:
  add.s64 %rd4, %rd0, %rd2;
  st.global.f32 [%rd4], %f2;
)";

TEST_F(JitTest, CompilesLoopsArithmeticAndMemoryNatively) {
  const std::string ptx = testing::SnippetKernel(kLoopBody);
  JitStats stats = StatsOf(ptx);
  EXPECT_GT(stats.instructions, 20u);
  // Only the two rets (the snippet's and the one lowering closes every function with) call
  // their handler.
  EXPECT_EQ(stats.native + 2, stats.instructions)
      << stats.native << " of " << stats.instructions << "; calls: " << stats.calls;
  std::vector<uint32_t> in(256);
  for (size_t i = 0; i < in.size(); ++i) {
    float f = 0.25f + 0.01f * static_cast<float>(i);
    std::memcpy(&in[i], &f, 4);
  }
  Outcome a = RunWith(Engine::kInterp, ptx, in, 256, {4, 1, 1}, {64, 1, 1});
  Outcome b = RunWith(Engine::kJit, ptx, in, 256, {4, 1, 1}, {64, 1, 1});
  ASSERT_TRUE(a.status.ok()) << a.status.message();
  ASSERT_TRUE(b.status.ok()) << b.status.message();
  EXPECT_EQ(a.out, b.out);
  // And against an independent reference.
  for (size_t i = 0; i < in.size(); ++i) {
    float x;
    std::memcpy(&x, &in[i], 4);
    float acc = 0;
    for (int k = 0; k < 37; ++k) {
      acc = std::fma(x, x, acc);
      acc = acc - acc * 0.5f;
    }
    if ((i % 64) % 4 != 0) acc = 1.0f / std::sqrt(acc);
    float got;
    std::memcpy(&got, &b.out[i], 4);
    EXPECT_EQ(got, acc) << "element " << i;
  }
}

TEST_F(JitTest, FaultsNameTheInstructionLikeTheInterpreter) {
  // Lane 5 reads far past its buffer: the vector path's range check fails and the handler
  // reports the fault.
  const std::string ptx = testing::SnippetKernel(R"(
  setp.eq.u32 %p1, %r0, 5;
  mul.wide.u32 %rd2, %r0, 4;
  @%p1 add.s64 %rd2, %rd2, 1048576;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r1, [%rd3];
  add.s64 %rd4, %rd0, %rd2;
  st.global.u32 [%rd4], %r1;
)");
  Outcome a = RunWith(Engine::kInterp, ptx, std::vector<uint32_t>(32, 7), 32, {1, 1, 1},
                      {32, 1, 1});
  Outcome b = RunWith(Engine::kJit, ptx, std::vector<uint32_t>(32, 7), 32, {1, 1, 1},
                      {32, 1, 1});
  EXPECT_EQ(a.status.code(), Code::kIllegalAddress);
  EXPECT_EQ(b.status.code(), Code::kIllegalAddress);
  EXPECT_EQ(a.status.message(), b.status.message());
  EXPECT_NE(b.status.message().find("ld.global"), std::string::npos) << b.status.message();
  EXPECT_EQ(a.out, b.out);
}

TEST_F(JitTest, MisalignedVectorAccessFaultsInBoth) {
  const std::string ptx = testing::SnippetKernel(R"(
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd3, %rd1, %rd2;
  add.s64 %rd3, %rd3, 4;
  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd3];
  add.s64 %rd4, %rd0, %rd2;
  st.global.v4.u32 [%rd4], {%r1, %r2, %r3, %r4};
)");
  Outcome a = RunWith(Engine::kInterp, ptx, std::vector<uint32_t>(200, 1), 128, {1, 1, 1},
                      {32, 1, 1});
  Outcome b = RunWith(Engine::kJit, ptx, std::vector<uint32_t>(200, 1), 128, {1, 1, 1},
                      {32, 1, 1});
  EXPECT_EQ(a.status.code(), Code::kMisalignedAddress);
  EXPECT_EQ(b.status.code(), Code::kMisalignedAddress);
  EXPECT_EQ(a.status.message(), b.status.message());
}

// The compiler checks an address register once and reuses what it learned for later accesses
// through the same register at other offsets (jit.cc, AddressOf); these accesses must still
// see the register's current value after a native write, a handler's write (atom), a load
// into the address register itself, and after a guarded first use. The last loads have the
// shapes of a 16x16 block's tile reads: one address per half-warp, and lanes 16-31 repeating
// lanes 0-15, in scalar and vector forms.
const char* kSharedBuffer = ".shared .align 16 .b8 buf[512];\n";
const char* kAddressReuse = R"(
  mov.u32 %r4, buf;
  shl.b32 %r2, %r0, 2;
  add.u32 %r1, %r4, %r2;
  mad.lo.u32 %r3, %r0, 3, 1;
  st.shared.u32 [%r1], %r3;
  mad.lo.u32 %r3, %r0, 5, 2;
  st.shared.u32 [%r1+128], %r3;
  add.u32 %r3, %r0, 3;
  and.b32 %r3, %r3, 31;
  shl.b32 %r3, %r3, 2;
  add.u32 %r3, %r3, %r4;
  st.shared.u32 [%r1+256], %r3;
  add.u32 %r3, %r0, 7;
  and.b32 %r3, %r3, 31;
  shl.b32 %r3, %r3, 2;
  add.u32 %r3, %r3, %r4;
  st.shared.u32 [%r1+384], %r3;
  bar.sync 0;
  ld.shared.u32 %r5, [%r1];
  ld.shared.u32 %r6, [%r1+128];
  add.u32 %r1, %r1, 4;
  ld.shared.u32 %r7, [%r1+128];
  and.b32 %r8, %r0, 7;
  shl.b32 %r8, %r8, 2;
  add.u32 %r8, %r8, %r4;
  setp.lt.u32 %p1, %r0, 16;
  mov.u32 %r9, 0;
  @%p1 ld.shared.u32 %r9, [%r8+4];
  ld.shared.u32 %r10, [%r8+8];
  ld.shared.u32 %r8, [%r8+256];
  ld.shared.u32 %r11, [%r8];
  mov.u32 %r12, %r1;
  ld.shared.u32 %r13, [%r12+-4];
  atom.shared.exch.b32 %r12, [%r12+380], %r12;
  ld.shared.u32 %r14, [%r12];
  and.b32 %r15, %r0, 15;
  shl.b32 %r15, %r15, 2;
  add.u32 %r15, %r15, %r4;
  ld.shared.u32 %r16, [%r15+8];
  shr.u32 %r17, %r0, 4;
  xor.b32 %r17, %r17, 1;
  mul.lo.u32 %r17, %r17, 24;
  add.u32 %r17, %r17, %r4;
  ld.shared.v2.u32 {%r18, %r19}, [%r17+8];
  and.b32 %r22, %r0, 15;
  shl.b32 %r22, %r22, 3;
  add.u32 %r22, %r22, %r4;
  ld.shared.v2.u32 {%r20, %r21}, [%r22];
  mul.wide.u32 %rd2, %r0, 64;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %r5;
  st.global.u32 [%rd3+4], %r6;
  st.global.u32 [%rd3+8], %r7;
  st.global.u32 [%rd3+12], %r9;
  st.global.u32 [%rd3+16], %r10;
  st.global.u32 [%rd3+20], %r11;
  st.global.u32 [%rd3+24], %r13;
  st.global.u32 [%rd3+28], %r14;
  st.global.u32 [%rd3+32], %r16;
  st.global.u32 [%rd3+36], %r18;
  st.global.u32 [%rd3+40], %r19;
  st.global.u32 [%rd3+44], %r20;
  st.global.u32 [%rd3+48], %r21;
)";

TEST_F(JitTest, AddressChecksFollowTheirRegister) {
  const std::string ptx = testing::SnippetKernel(kAddressReuse, kSharedBuffer);
  JitStats stats = StatsOf(ptx);  // compiles (else the jit run below would interpret)
  EXPECT_EQ(stats.calls.find("ld.shared"), std::string::npos) << stats.calls;
  Outcome a = RunWith(Engine::kInterp, ptx, {0}, 512, {1, 1, 1}, {32, 1, 1});
  Outcome b = RunWith(Engine::kJit, ptx, {0}, 512, {1, 1, 1}, {32, 1, 1});
  ASSERT_TRUE(a.status.ok()) << a.status.message();
  ASSERT_TRUE(b.status.ok()) << b.status.message();
  EXPECT_EQ(a.out, b.out);
  // Computed here: A[t] = 3t + 1 at words 0-31, B[t] = 5t + 2 at 32-63, then two tables of
  // addresses into A.
  auto word = [](uint32_t i) { return i < 32 ? 3 * i + 1 : 5 * (i - 32) + 2; };
  for (uint32_t t = 0; t < 32; ++t) {
    const uint32_t* got = &b.out[t * 16];
    EXPECT_EQ(got[0], word(t)) << t;
    EXPECT_EQ(got[1], word(32 + t)) << t;
    if (t < 31) EXPECT_EQ(got[2], word(33 + t)) << t;  // lane 31 reads the address table
    EXPECT_EQ(got[3], t < 16 ? word((t & 7) + 1) : 0u) << t;
    EXPECT_EQ(got[4], word((t & 7) + 2)) << t;
    EXPECT_EQ(got[5], word((t & 7) + 3)) << t;
    EXPECT_EQ(got[6], word(t)) << t;
    EXPECT_EQ(got[7], word((t + 7) & 31)) << t;
    EXPECT_EQ(got[8], word((t & 15) + 2)) << t;
    EXPECT_EQ(got[9], word(((t >> 4) ^ 1) * 6 + 2)) << t;  // lanes 16-31 below lanes 0-15
    EXPECT_EQ(got[10], word(((t >> 4) ^ 1) * 6 + 3)) << t;
    EXPECT_EQ(got[11], word(2 * (t & 15))) << t;
    EXPECT_EQ(got[12], word(2 * (t & 15) + 1)) << t;
  }
}

// A 16-wide block's two rows: lanes 0-15 and 16-31 each at consecutive addresses, the second
// run `gap` bytes after the first. The compiler stores and loads them as two vector accesses
// when the runs do not overlap; when they do, a store must still leave the highest lane's value
// where lanes conflict, as the interpreter's lane order does.
TEST_F(JitTest, TwoRowAccessesKeepLaneOrder) {
  struct Form {
    int vec;
    uint32_t gap;
    bool flip;  // lanes 16-31 below lanes 0-15
  };
  for (Form f : {Form{1, 68, false}, Form{1, 32, false}, Form{1, 64, false}, Form{2, 136, false},
                 Form{2, 72, false}, Form{1, 68, true}, Form{1, 32, true}, Form{2, 136, true}}) {
    const uint32_t lane_bytes = 4 * f.vec;
    const std::string st = f.vec == 1 ? "st.shared.u32 [%r1], %r5;"
                                      : "st.shared.v2.u32 [%r1], {%r5, %r10};";
    const std::string ld = f.vec == 1 ? "ld.shared.u32 %r6, [%r1];\n  mov.u32 %r11, 0;"
                                      : "ld.shared.v2.u32 {%r6, %r11}, [%r1];";
    const std::string ptx = testing::SnippetKernel(R"(
  mov.u32 %r4, buf;
  and.b32 %r2, %r0, 15;
  mul.lo.u32 %r2, %r2, )" + std::to_string(lane_bytes) + R"(;
  shr.u32 %r3, %r0, 4;
  xor.b32 %r3, %r3, )" + std::to_string(f.flip ? 1 : 0) + R"(;
  mul.lo.u32 %r3, %r3, )" + std::to_string(f.gap) + R"(;
  add.u32 %r1, %r2, %r3;
  add.u32 %r1, %r1, %r4;
  add.u32 %r5, %r0, 100;
  add.u32 %r10, %r0, 200;
  )" + st + R"(
  bar.sync 0;
  )" + ld + R"(
  shl.b32 %r7, %r0, 2;
  add.u32 %r7, %r7, %r4;
  ld.shared.u32 %r8, [%r7];
  ld.shared.u32 %r9, [%r7+128];
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %r6;
  st.global.u32 [%rd3+4], %r11;
  st.global.u32 [%rd3+8], %r8;
  st.global.u32 [%rd3+12], %r9;
)", kSharedBuffer);
    // Compiled, with the accesses native (a kernel the compiler rejects would run interpreted).
    JitStats stats = StatsOf(ptx);
    EXPECT_EQ(stats.calls.find("shared"), std::string::npos) << stats.calls;
    Outcome a = RunWith(Engine::kInterp, ptx, {0}, 128, {1, 1, 1}, {32, 1, 1});
    Outcome b = RunWith(Engine::kJit, ptx, {0}, 128, {1, 1, 1}, {32, 1, 1});
    ASSERT_TRUE(a.status.ok()) << a.status.message();
    ASSERT_TRUE(b.status.ok()) << b.status.message();
    EXPECT_EQ(a.out, b.out) << "vec " << f.vec << " gap " << f.gap << " flip " << f.flip;
    // The stores in lane order, computed here.
    std::vector<uint32_t> mem(128, 0);
    auto addr = [&](uint32_t t) {
      return (t & 15) * lane_bytes + ((t >> 4) ^ (f.flip ? 1 : 0)) * f.gap;
    };
    for (uint32_t t = 0; t < 32; ++t) {
      mem[addr(t) / 4] = t + 100;
      if (f.vec == 2) mem[addr(t) / 4 + 1] = t + 200;
    }
    for (uint32_t t = 0; t < 32; ++t) {
      const uint32_t* got = &b.out[t * 4];
      EXPECT_EQ(got[0], mem[addr(t) / 4]) << "vec " << f.vec << " gap " << f.gap << " lane " << t;
      EXPECT_EQ(got[1], f.vec == 2 ? mem[addr(t) / 4 + 1] : 0u) << f.gap << " lane " << t;
      EXPECT_EQ(got[2], mem[t]) << "vec " << f.vec << " gap " << f.gap << " word " << t;
      EXPECT_EQ(got[3], mem[t + 32]) << "vec " << f.vec << " gap " << f.gap << " word " << t;
    }
  }
}

TEST_F(JitTest, ReusedAddressChecksStillFault) {
  // The second and third accesses go through a register already checked at offset 0: one
  // misaligned, one past the end of shared memory; both engines report the same fault.
  for (const char* bad : {"ld.shared.u32 %r6, [%r1+2];", "ld.shared.u32 %r6, [%r1+4096];"}) {
    const std::string ptx = testing::SnippetKernel(std::string(R"(
  mov.u32 %r4, buf;
  shl.b32 %r2, %r0, 2;
  add.u32 %r1, %r4, %r2;
  ld.shared.u32 %r5, [%r1];
  )") + bad + R"(
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %r6;
)", kSharedBuffer);
    Outcome a = RunWith(Engine::kInterp, ptx, {0}, 32, {1, 1, 1}, {32, 1, 1});
    Outcome b = RunWith(Engine::kJit, ptx, {0}, 32, {1, 1, 1}, {32, 1, 1});
    EXPECT_FALSE(a.status.ok()) << bad;
    EXPECT_EQ(a.status.code(), b.status.code()) << bad;
    EXPECT_EQ(a.status.message(), b.status.message()) << bad;
    EXPECT_EQ(a.out, b.out) << bad;
  }
}

// PVGPU_JIT_PERF=1 names each compiled kernel's code for perf in /tmp/perf-PID.map.
TEST_F(JitTest, PerfMapNamesCompiledKernels) {
  const std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  std::remove(path.c_str());
  setenv("PVGPU_JIT_PERF", "1", 1);
  std::string ptx = testing::SnippetKernel("  add.u32 %r1, %r0, " + std::to_string(getpid()) + ";\n");
  ptx.replace(ptx.find(".entry k("), 9, ".entry perf_probe(");
  auto program = LoadProgram(ptx);
  ASSERT_TRUE(program.ok()) << program.status().message();
  Status s = CompileKernelForTest(**program, "perf_probe", nullptr);
  unsetenv("PVGPU_JIT_PERF");
  ASSERT_TRUE(s.ok()) << s.message();
  std::ifstream map(path);
  ASSERT_TRUE(map.good()) << path;
  std::string line;
  bool found = false;
  while (std::getline(map, line)) {
    if (line.find(" pvgpu:perf_probe") == std::string::npos) continue;
    std::istringstream fields(line);
    uint64_t start = 0, size = 0;
    fields >> std::hex >> start >> size;
    EXPECT_NE(start, 0u) << line;
    EXPECT_GT(size, 16u) << line;
    found = true;
  }
  EXPECT_TRUE(found) << "no line for the kernel in " << path;
  std::remove(path.c_str());
}

TEST_F(JitTest, NeverEndingCompiledKernelIsCancelled) {
  const std::string ptx = testing::SnippetKernel(R"(
  mov.u32 %r1, 0;
$L:
  add.u32 %r1, %r1, 1;
  bra $L;
)");
  Runner runner(ptx);
  ASSERT_TRUE(runner.ok());
  runner.set_engine(Engine::kJit);
  std::atomic<bool> cancel{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  uint64_t d = runner.mem().Alloc(64);
  Status s = runner.Launch("k", {4, 1, 1}, {64, 1, 1}, {d, d}, 0, &cancel);
  t.join();
  EXPECT_EQ(s.code(), Code::kLaunchFailed) << s.message();
}

// Float min/max and conversions over every pair of special values: signed zeros, NaNs,
// infinities, halves (ties of every integral rounding), values past the integer types' ranges,
// a denormal. Each thread writes 16 words from its pair (a, b).
const char* kSpecialKernel = R"(
.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 in)
{
  .reg .b32 %r<24>;
  .reg .b64 %rd<16>;
  .reg .f32 %f<16>;
  .reg .b16 %rs<4>;
  .reg .f64 %fd<4>;
  ld.param.u64 %rd0, [out];
  ld.param.u64 %rd1, [in];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mad.lo.s32 %r3, %r1, %r2, %r0;
  mul.wide.u32 %rd2, %r3, 8;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.v2.f32 {%f0, %f1}, [%rd3];
  mul.wide.u32 %rd4, %r3, 64;
  add.s64 %rd5, %rd0, %rd4;
  min.f32 %f2, %f0, %f1;
  max.f32 %f3, %f0, %f1;
  min.NaN.f32 %f4, %f0, %f1;
  max.NaN.f32 %f5, %f0, %f1;
  st.global.v4.f32 [%rd5], {%f2, %f3, %f4, %f5};
  cvt.rni.s32.f32 %r4, %f0;
  cvt.rzi.u32.f32 %r5, %f0;
  cvt.rmi.s16.f32 %rs0, %f0;
  cvt.s32.s16 %r6, %rs0;
  cvt.rpi.u16.f32 %rs1, %f1;
  cvt.u32.u16 %r7, %rs1;
  st.global.v4.u32 [%rd5+16], {%r4, %r5, %r6, %r7};
  cvt.rzi.s64.f32 %rd6, %f0;
  cvt.u32.u64 %r8, %rd6;
  shr.u64 %rd6, %rd6, 32;
  cvt.u32.u64 %r9, %rd6;
  mov.b32 %r10, %f0;
  cvt.rn.f32.s32 %f6, %r10;
  mov.b32 %r11, %f1;
  cvt.rn.f32.u32 %f7, %r11;
  mov.b32 %r12, %f6;
  mov.b32 %r13, %f7;
  st.global.v4.u32 [%rd5+32], {%r8, %r9, %r12, %r13};
  cvt.f64.f32 %fd0, %f0;
  mul.f64 %fd1, %fd0, 0d3FD5555555555555;
  cvt.rn.f32.f64 %f8, %fd1;
  cvt.rni.f32.f32 %f9, %f0;
  cvt.rmi.f32.f32 %f10, %f1;
  mul.f64 %fd2, %fd0, 0d4008000000000000;
  cvt.rpi.s32.f64 %r14, %fd2;
  mov.b32 %f11, %r14;
  st.global.v4.f32 [%rd5+48], {%f8, %f9, %f10, %f11};
  ret;
}
)";

TEST_F(JitTest, FloatMinMaxAndConversionsAgreeOnSpecialValues) {
  const std::vector<uint32_t> values = {
      0x00000000, 0x80000000, 0x3F000000, 0xBF000000, 0x3FC00000, 0x40200000,
      0xC0200000, 0x3F800000, 0xBF800000, 0x7FC00000, 0xFFC00001, 0x7F800000,
      0xFF800000, 0x4F32D05E, 0xCF32D05E, 0x4F000000, 0x47886C80, 0xC71C40B3,
      0x00000001, 0x7F7FFFFF, 0x3EFFFFFF};
  const size_t pairs = values.size() * values.size();
  const Dim3 grid{static_cast<uint32_t>((pairs + 63) / 64), 1, 1}, block{64, 1, 1};
  const size_t threads = grid.x * 64;
  std::vector<uint32_t> in(2 * threads);
  for (size_t t = 0; t < threads; ++t) {
    in[2 * t] = values[(t % pairs) / values.size()];
    in[2 * t + 1] = values[(t % pairs) % values.size()];
  }
  JitStats stats = StatsOf(kSpecialKernel);
  EXPECT_EQ(stats.calls.find("min"), std::string::npos) << stats.calls;
  EXPECT_EQ(stats.calls.find("max"), std::string::npos) << stats.calls;
  EXPECT_EQ(stats.calls.find("cvt"), std::string::npos) << stats.calls;
  Outcome a = RunWith(Engine::kInterp, kSpecialKernel, in, threads * 16, grid, block);
  Outcome b = RunWith(Engine::kJit, kSpecialKernel, in, threads * 16, grid, block);
  ASSERT_TRUE(a.status.ok()) << a.status.message();
  ASSERT_TRUE(b.status.ok()) << b.status.message();
  auto nan = [](uint32_t w) { return (w & 0x7F800000u) == 0x7F800000u && (w & 0x7FFFFFu) != 0; };
  for (size_t i = 0; i < a.out.size(); ++i) {
    // Words 12 to 14 are float results of conversions of a NaN operand: payloads are free
    // (see RandomKernelsAgreeBitForBit). min/max select operands or the canonical NaN exactly.
    const size_t w = i % 16;
    if (w >= 12 && w <= 14 && nan(a.out[i]) && nan(b.out[i])) continue;
    ASSERT_EQ(a.out[i], b.out[i]) << "thread " << i / 16 << " word " << w << ": a=0x" << std::hex
                                  << in[2 * (i / 16)] << " b=0x" << in[2 * (i / 16) + 1];
  }
  // A few of the rules, spelled out here rather than taken from either engine.
  auto word = [&](uint32_t a_bits, uint32_t b_bits, size_t w) {
    for (size_t t = 0; t < pairs; ++t)
      if (in[2 * t] == a_bits && in[2 * t + 1] == b_bits) return b.out[16 * t + w];
    ADD_FAILURE() << "no such pair";
    return 0u;
  };
  EXPECT_EQ(word(0x00000000, 0x80000000, 0), 0x80000000u);  // min(+0, -0) = -0
  EXPECT_EQ(word(0x80000000, 0x00000000, 1), 0x00000000u);  // max(-0, +0) = +0
  EXPECT_EQ(word(0x7FC00000, 0x3F800000, 0), 0x3F800000u);  // min(NaN, 1) = 1
  EXPECT_EQ(word(0x3F800000, 0xFFC00001, 1), 0x3F800000u);  // max(1, NaN) = 1
  EXPECT_EQ(word(0x7FC00000, 0x3F800000, 2), 0x7FC00000u);  // min.NaN(NaN, 1) = NaN
  EXPECT_EQ(word(0x40200000, 0x00000000, 4), 2u);           // rni(2.5) = 2
  EXPECT_EQ(word(0xC0200000, 0x00000000, 4), static_cast<uint32_t>(-2));
  EXPECT_EQ(word(0x4F32D05E, 0x00000000, 4), 0x7FFFFFFFu);  // 3e9 saturates
  EXPECT_EQ(word(0x7FC00000, 0x00000000, 4), 0u);           // NaN to 0
  EXPECT_EQ(word(0xBF000000, 0x00000000, 5), 0u);           // rzi u32(-0.5) = 0
  EXPECT_EQ(word(0xC71C40B3, 0x00000000, 6), 0xFFFF8000u);  // rmi s16(-40000.7) = -32768
  EXPECT_EQ(word(0x00000000, 0x47886C80, 7), 0xFFFFu);      // rpi u16(70000) = 65535
  EXPECT_EQ(word(0x3FC00000, 0x00000000, 13), 0x40000000u); // rni(1.5) = 2
  EXPECT_EQ(word(0x00000000, 0xBF000000, 14), 0xBF800000u); // rmi(-0.5) = -1
}

// --- Random kernels -------------------------------------------------------------------------

TEST_F(JitTest, RandomKernelsAgreeBitForBit) {
  std::mt19937 rng(20261203);
  const int kKernels = 40;
  const Dim3 grid{2, 1, 1}, block{64, 1, 1};
  const size_t threads = 128;
  for (int n = 0; n < kKernels; ++n) {
    const std::string ptx =
        RandomKernel([&] { return static_cast<uint32_t>(rng()); }, 20 + n * 2);
    std::vector<uint32_t> in(threads * 4);
    for (auto& v : in) v = rng();
    // Some words as small floats, so that float arithmetic sees ordinary values too.
    for (size_t i = 0; i < in.size(); i += 3) {
      float x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 37.0f;
      std::memcpy(&in[i], &x, 4);
    }
    Outcome a = RunWith(Engine::kInterp, ptx, in, threads * 16, grid, block);
    Outcome b = RunWith(Engine::kJit, ptx, in, threads * 16, grid, block);
    ASSERT_TRUE(a.status.ok()) << "kernel " << n << ": " << a.status.message() << "\n" << ptx;
    // The generator's own check: a kernel whose result is not determined (a register read
    // before it is written) fails here, not as an engine difference.
    ASSERT_EQ(RunWith(Engine::kInterp, ptx, in, threads * 16, grid, block).out, a.out)
        << "kernel " << n << " is not deterministic\n" << ptx;
    ASSERT_EQ(a.status.code(), b.status.code()) << "kernel " << n << "\n" << ptx;
    ASSERT_EQ(a.out.size(), b.out.size());
    // Words 8 to 15 of each thread are its float registers. Where both are NaN the payloads
    // may differ: x86 propagates one operand's payload and which one depends on operand order,
    // which LLVM may swap for commutative operations (PTX defines no payload: the hardware
    // returns its canonical NaN, which neither engine imitates).
    auto nan = [](uint32_t w) { return (w & 0x7F800000u) == 0x7F800000u && (w & 0x7FFFFFu) != 0; };
    size_t first_diff = a.out.size();
    for (size_t i = 0; i < a.out.size(); ++i) {
      if (i % 16 >= 8 && nan(a.out[i]) && nan(b.out[i])) continue;
      if (a.out[i] != b.out[i]) {
        first_diff = i;
        break;
      }
    }
    ASSERT_EQ(first_diff, a.out.size())
        << "kernel " << n << ": thread " << first_diff / 16 << " word " << first_diff % 16
        << ": interpreter 0x" << std::hex << a.out[first_diff] << ", compiled 0x"
        << b.out[first_diff] << "\n"
        << ptx;
  }
}

TEST(JitEngineTest, ParsesEngineNames) {
  EXPECT_EQ(*ParseEngine("interp"), Engine::kInterp);
  EXPECT_FALSE(ParseEngine("fast").ok());
  if (JitAvailable()) {
    EXPECT_EQ(*ParseEngine("jit"), Engine::kJit);
    EXPECT_EQ(*ParseEngine("auto"), Engine::kAuto);
  } else {
    EXPECT_EQ(ParseEngine("jit").status().code(), Code::kNotSupported);
    EXPECT_EQ(*ParseEngine("auto"), Engine::kInterp);
  }
  EXPECT_STREQ(EngineName(Engine::kJit), "jit");
}

}  // namespace
}  // namespace pvgpu::ptx
