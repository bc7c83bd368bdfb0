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

// What nvcc -rdc=true -ptx -arch=compute_80 makes of
//   __global__ void child(int* out, int base) { out[base + threadIdx.x] = base + threadIdx.x; }
//   __global__ void parent(int* out) { if (threadIdx.x == 0) child<<<1, 32>>>(out, blockIdx.x * 32); }
// (its output as it is): device-side launches through cudadevrt's CDP2 entry points.
constexpr const char* kDeviceSideLaunch = R"(
.version 9.0
.target sm_80
.address_size 64

	// .globl	_Z5childPii
.extern .func  (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2
(
	.param .b64 __cudaCDP2GetParameterBufferV2_param_0,
	.param .align 4 .b8 __cudaCDP2GetParameterBufferV2_param_1[12],
	.param .align 4 .b8 __cudaCDP2GetParameterBufferV2_param_2[12],
	.param .b32 __cudaCDP2GetParameterBufferV2_param_3
)
;
.extern .func  (.param .b32 func_retval0) __cudaCDP2LaunchDeviceV2
(
	.param .b64 __cudaCDP2LaunchDeviceV2_param_0,
	.param .b64 __cudaCDP2LaunchDeviceV2_param_1
)
;

.visible .entry _Z5childPii(
	.param .u64 _Z5childPii_param_0,
	.param .u32 _Z5childPii_param_1
)
{
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<5>;


	ld.param.u64 	%rd1, [_Z5childPii_param_0];
	ld.param.u32 	%r1, [_Z5childPii_param_1];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r2, %tid.x;
	add.s32 	%r3, %r2, %r1;
	mul.wide.u32 	%rd3, %r3, 4;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.u32 	[%rd4], %r3;
	ret;

}
	// .globl	_Z6parentPi
.visible .entry _Z6parentPi(
	.param .u64 _Z6parentPi_param_0
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<4>;


	ld.param.u64 	%rd2, [_Z6parentPi_param_0];
	mov.u32 	%r1, %tid.x;
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB1_3;

	mov.u64 	%rd3, _Z5childPii;
	{ // callseq 0, 0
	.reg .b32 temp_param_reg;
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
	call.uni (retval0), 
	__cudaCDP2GetParameterBufferV2, 
	(
	param0, 
	param1, 
	param2, 
	param3
	);
	ld.param.b64 	%rd1, [retval0+0];
	} // callseq 0
	setp.eq.s64 	%p2, %rd1, 0;
	@%p2 bra 	$L__BB1_3;

	mov.u32 	%r2, %ctaid.x;
	shl.b32 	%r3, %r2, 5;
	st.u64 	[%rd1], %rd2;
	st.u32 	[%rd1+8], %r3;
	{ // callseq 1, 0
	.reg .b32 temp_param_reg;
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd1;
	.param .b64 param1;
	st.param.b64 	[param1+0], 0;
	.param .b32 retval0;
	call.uni (retval0), 
	__cudaCDP2LaunchDeviceV2, 
	(
	param0, 
	param1
	);
	ld.param.b32 	%r4, [retval0+0];
	} // callseq 1

$L__BB1_3:
	ret;

}

)";

TEST(ExecutorTest, DeviceSideLaunchesRunAfterTheirParent) {
  TestMemory mem;
  auto l = LoadInto(kDeviceSideLaunch, mem);
  ASSERT_TRUE(l.program) << l.error_log;
  std::vector<int32_t> zeros(4 * 32, -1);
  const uint64_t out = mem.Upload(zeros);
  const KernelInfo* parent = l.program->FindKernel("_Z6parentPi");
  ASSERT_NE(parent, nullptr);
  Params p(*parent);
  p.Set(0, out);
  LaunchEnv env;
  env.memory = &mem;
  env.global_addresses = l.global_addrs;
  Status s = SharedExecutor().Launch(*l.program, *parent, {{4, 1, 1}, {64, 1, 1}, 0}, p.span(), env);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto got = mem.Download<int32_t>(out, 4 * 32);
  for (int i = 0; i < 4 * 32; ++i) EXPECT_EQ(got[i], i) << i;
}

TEST(ExecutorTest, DeviceSideLaunchFaultIsTheParentsError) {
  TestMemory mem;
  auto l = LoadInto(kDeviceSideLaunch, mem);
  ASSERT_TRUE(l.program) << l.error_log;
  std::vector<int32_t> small(32, 0);  // room for the first block's child only
  const uint64_t out = mem.Upload(small);
  const KernelInfo* parent = l.program->FindKernel("_Z6parentPi");
  Params p(*parent);
  p.Set(0, out);
  LaunchEnv env;
  env.memory = &mem;
  env.global_addresses = l.global_addrs;
  Status s = SharedExecutor().Launch(*l.program, *parent, {{2, 1, 1}, {32, 1, 1}, 0}, p.span(), env);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kIllegalAddress) << s.ToString();
  EXPECT_NE(s.message().find("launched from device code"), std::string::npos) << s.ToString();
}

TEST(ExecutorTest, OtherDeviceRuntimeCallsAreRefusedByName) {
  std::string ptx = kDeviceSideLaunch;
  const std::string from = "__cudaCDP2LaunchDeviceV2";
  for (size_t at = ptx.find(from); at != std::string::npos; at = ptx.find(from, at)) {
    ptx.replace(at, from.size(), "__cudaCDP2EventRecord");
  }
  TestMemory mem;
  Status status;
  auto l = LoadInto(ptx.c_str(), mem, &status);
  ASSERT_FALSE(status.ok()) << "a module calling an unknown device runtime function loaded";
  EXPECT_NE(status.message().find("__cudaCDP2EventRecord"), std::string::npos)
      << status.ToString();
}

}  // namespace
}  // namespace pvgpu::ptx
