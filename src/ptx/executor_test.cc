#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

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

}  // namespace
}  // namespace pvgpu::ptx
