#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "ptx/ptx.h"
#include "ptx/test_util.h"

namespace pvgpu::ptx {
namespace {

using testing::LoadInto;
using testing::Params;
using testing::SharedExecutor;
using testing::TestMemory;

constexpr const char* kSaxpy = R"(
.version 9.0
.target sm_75
.address_size 64
.visible .entry saxpy(
	.param .u32 saxpy_param_0,
	.param .f32 saxpy_param_1,
	.param .u64 saxpy_param_2,
	.param .u64 saxpy_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<5>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<8>;
	ld.param.u32 	%r2, [saxpy_param_0];
	ld.param.f32 	%f1, [saxpy_param_1];
	ld.param.u64 	%rd1, [saxpy_param_2];
	ld.param.u64 	%rd2, [saxpy_param_3];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;
	cvta.to.global.u64 	%rd3, %rd2;
	cvta.to.global.u64 	%rd4, %rd1;
	mul.wide.s32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	ld.global.f32 	%f2, [%rd6];
	add.s64 	%rd7, %rd3, %rd5;
	ld.global.f32 	%f3, [%rd7];
	fma.rn.f32 	%f4, %f2, %f1, %f3;
	st.global.f32 	[%rd7], %f4;
$L__BB0_2:
	ret;
}
)";

// `spin` waits until its word is non-zero, `release` sets it; both through atomics, since they
// run on different threads.
constexpr const char* kSpinRelease = R"(
.version 9.0
.target sm_75
.address_size 64
.visible .entry spin(.param .u64 spin_param_0)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [spin_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
$L__BB0_1:
	atom.global.add.u32 	%r1, [%rd2], 0;
	setp.eq.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_1;
	ret;
}
.visible .entry release(.param .u64 release_param_0)
{
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [release_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	atom.global.exch.b32 	%r1, [%rd2], 1;
	ret;
}
)";

TEST(ExecutorTest, Saxpy) {
  TestMemory mem;
  auto l = LoadInto(kSaxpy, mem);
  ASSERT_TRUE(l.program) << l.error_log;
  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = i * 0.5f;
    y[i] = 1000.0f - i;
  }
  uint64_t dx = mem.Upload(x), dy = mem.Upload(y);
  const KernelInfo* k = l.program->FindKernel("saxpy");
  ASSERT_NE(k, nullptr);
  Params p(*k);
  p.Set(0, n).Set(1, 2.0f).Set(2, dx).Set(3, dy);
  LaunchEnv env;
  env.memory = &mem;
  env.global_addresses = l.global_addrs;
  Status s = SharedExecutor().Launch(*l.program, *k, {{4, 1, 1}, {256, 1, 1}, 0}, p.span(), env);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto out = mem.Download<float>(dy, n);
  for (int i = 0; i < n; ++i) ASSERT_FLOAT_EQ(out[i], 2.0f * x[i] + y[i]) << i;
}

TEST(ExecutorTest, SaxpyOutOfBoundsFaults) {
  TestMemory mem;
  auto l = LoadInto(kSaxpy, mem);
  ASSERT_TRUE(l.program) << l.error_log;
  uint64_t dx = mem.Alloc(16 * 4), dy = mem.Alloc(16 * 4);
  const KernelInfo* k = l.program->FindKernel("saxpy");
  Params p(*k);
  p.Set(0, 100000).Set(1, 2.0f).Set(2, dx).Set(3, dy);
  LaunchEnv env;
  env.memory = &mem;
  Status s = SharedExecutor().Launch(*l.program, *k, {{1, 1, 1}, {64, 1, 1}, 0}, p.span(), env);
  EXPECT_EQ(s.code(), Code::kIllegalAddress) << s.ToString();
  EXPECT_NE(s.message().find("saxpy"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("ld.global.f32"), std::string::npos) << s.message();
}

// A one-block grid runs on its caller's thread when the workers are idle. One that never ends
// by itself (here: until another launch releases it) must not keep other launches, one-block
// or larger, from running; were it to, this test would hang.
TEST(ExecutorTest, WaitingOneBlockKernelDoesNotBlockOtherLaunches) {
  TestMemory mem;
  auto l = LoadInto(kSpinRelease, mem);
  ASSERT_TRUE(l.program) << l.error_log;
  const KernelInfo* spin = l.program->FindKernel("spin");
  const KernelInfo* release = l.program->FindKernel("release");
  ASSERT_NE(spin, nullptr);
  ASSERT_NE(release, nullptr);
  const uint64_t flag = mem.Upload(std::vector<uint32_t>{0});
  const uint64_t other = mem.Upload(std::vector<uint32_t>{0});
  LaunchEnv env;
  env.memory = &mem;
  Status waited;
  std::thread waiter([&] {
    Params p(*spin);
    p.Set(0, flag);
    waited = SharedExecutor().Launch(*l.program, *spin, {{1, 1, 1}, {32, 1, 1}, 0}, p.span(), env);
  });
  // Not a condition to wait for: only a chance for the waiter to be running meanwhile.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Params p(*release);
  p.Set(0, other);
  for (int i = 0; i < 20; ++i) {
    const Dim3 grid{i % 2 == 0 ? 1u : 4u, 1, 1};
    Status s = SharedExecutor().Launch(*l.program, *release, {grid, {32, 1, 1}, 0}, p.span(), env);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  p.Set(0, flag);
  Status s =
      SharedExecutor().Launch(*l.program, *release, {{1, 1, 1}, {1, 1, 1}, 0}, p.span(), env);
  EXPECT_TRUE(s.ok()) << s.ToString();
  waiter.join();
  EXPECT_TRUE(waited.ok()) << waited.ToString();
  EXPECT_EQ(mem.Download<uint32_t>(other, 1)[0], 1u);
}

// What nvcc -rdc=true emits for `child<<<1, 32>>>(p)` inside a kernel (reduced): cudadevrt's
// entry points, which exist only on a GPU. The module is refused at load, naming the feature.
constexpr const char* kDeviceSideLaunch = R"(
.version 9.0
.target sm_75
.address_size 64
.extern .func  (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2
(
	.param .b64 __cudaCDP2GetParameterBufferV2_param_0,
	.param .align 4 .b8 __cudaCDP2GetParameterBufferV2_param_1[12],
	.param .align 4 .b8 __cudaCDP2GetParameterBufferV2_param_2[12],
	.param .b32 __cudaCDP2GetParameterBufferV2_param_3
)
;
.visible .entry child(.param .u64 child_param_0)
{
	ret;
}
.visible .entry parent(.param .u64 parent_param_0)
{
	.reg .b64 	%rd<4>;
	mov.u64 	%rd3, child;
	{
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd3;
	.param .align 4 .b8 param1[12];
	st.param.b32 	[param1+0], 1;
	st.param.b32 	[param1+4], 1;
	st.param.b32 	[param1+8], 1;
	.param .align 4 .b8 param2[12];
	st.param.b32 	[param2+0], 32;
	st.param.b32 	[param2+4], 1;
	st.param.b32 	[param2+8], 1;
	.param .b32 param3;
	st.param.b32 	[param3+0], 0;
	.param .b64 retval0;
	call.uni (retval0), __cudaCDP2GetParameterBufferV2, (param0, param1, param2, param3);
	ld.param.b64 	%rd2, [retval0+0];
	}
	ret;
}
)";

TEST(ExecutorTest, DeviceSideLaunchIsRefusedByName) {
  TestMemory mem;
  Status status;
  auto l = LoadInto(kDeviceSideLaunch, mem, &status);
  ASSERT_FALSE(status.ok()) << "a module with a device-side launch loaded";
  EXPECT_NE(status.message().find("dynamic parallelism"), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find("__cudaCDP2GetParameterBufferV2"), std::string::npos)
      << status.ToString();
}

}  // namespace
}  // namespace pvgpu::ptx
