// The cuda adapter itself, in this process, over pvgpu's own libcuda.so.1 connected to a real
// pvgpud (cpu adapter) started for the test: asynchronous submission, completion callbacks in
// order, faults surfacing at Synchronize, module description from PTX, globals, the shadows of
// array-backed texture and surface objects.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "adapters/cuda/cuda_adapter.h"

namespace pvgpu::adapters::cuda {
namespace {

constexpr char kPtx[] = R"(
.version 7.5
.target sm_75
.address_size 64
.visible .global .align 4 .u32 counter = 7;
.visible .entry add_one(.param .u64 data, .param .u32 n) {
  .reg .pred %p<2>;
  .reg .b32 %r<5>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [data];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r3, [%rd4];
  add.s32 %r4, %r3, 1;
  st.global.u32 [%rd4], %r4;
DONE:
  ret;
}
.visible .entry fault() {
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  mov.u64 %rd1, 8;
  mov.u32 %r1, 1;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

// A host-2 pvgpud for the whole suite; pvgpu's libcuda finds it through PVGPU_HOST.
class ChainEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    char dir_template[] = "/tmp/pvgpu-cuda-test.XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    socket_ = "unix:" + dir_ + "/host2.sock";
    int ready[2];
    ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      dup2(ready[1], 3);  // dup2 clears close-on-exec on the copy
      const std::string log = dir_ + "/host2.log";
      execl(PVGPU_PVGPUD, "pvgpud", "--listen", socket_.c_str(), "--adapters", "cpu", "--threads",
            "2", "--ready-fd", "3", "--log-file", log.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(ready[1]);
    char line[8] = {};
    const ssize_t n = read(ready[0], line, sizeof(line) - 1);
    close(ready[0]);
    ASSERT_GT(n, 0) << "host 2 did not start (see " << dir_ << "/host2.log)";
    ASSERT_EQ(std::string(line, n), "ready\n");
    setenv("PVGPU_HOST", socket_.c_str(), 1);
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
  }

 private:
  std::string dir_, socket_;
  pid_t pid_ = -1;
};

class CudaAdapterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    CudaOptions options;
    options.driver_path = PVGPU_GUEST_LIBCUDA;
    auto adapters = CreateCudaAdapters(options);
    ASSERT_TRUE(adapters.ok()) << adapters.status().ToString();
    adapters_ = new std::vector<std::unique_ptr<Adapter>>(std::move(adapters).value());
  }
  // Leaked on purpose: the driver library stays loaded for the process's life.
  static std::vector<std::unique_ptr<Adapter>>* adapters_;
  Adapter& adapter() { return *(*adapters_)[0]; }
};
std::vector<std::unique_ptr<Adapter>>* CudaAdapterTest::adapters_ = nullptr;

TEST_F(CudaAdapterTest, InfoComesFromTheDriver) {
  const AdapterInfo& info = adapter().info();
  EXPECT_EQ(info.kind, "cuda");
  EXPECT_FALSE(info.is_software);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.total_memory, 0u);
  EXPECT_GT(info.attributes[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK], 0);
  EXPECT_GT(info.attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR], 0);
}

TEST_F(CudaAdapterTest, LaunchesAsynchronouslyAndCompletesInOrder) {
  auto context = adapter().CreateContext();
  ASSERT_TRUE(context.ok()) << context.status().ToString();
  Context& ctx = **context;
  EXPECT_TRUE(ctx.asynchronous());

  std::string errors, infos;
  auto module = ctx.LoadModule(
      ImageKind::kPtx, {reinterpret_cast<const uint8_t*>(kPtx), sizeof(kPtx)}, &errors, &infos);
  ASSERT_TRUE(module.ok()) << module.status().ToString() << " " << errors;
  ASSERT_EQ((*module)->kernels().size(), 2u);
  const KernelInfo& add_one = (*module)->kernels()[0];
  EXPECT_EQ(add_one.name, "add_one");
  ASSERT_EQ(add_one.param_sizes, (std::vector<uint32_t>{8, 4}));
  ASSERT_EQ((*module)->globals().size(), 1u);
  EXPECT_EQ((*module)->globals()[0].name, "counter");
  uint32_t counter = 0;
  ASSERT_TRUE(ctx.Read((*module)->globals()[0].dptr,
                       {reinterpret_cast<uint8_t*>(&counter), sizeof(counter)})
                  .ok());
  EXPECT_EQ(counter, 7u);

  constexpr uint32_t kCount = 64;
  auto dptr = ctx.Allocate(kCount * 4);
  ASSERT_TRUE(dptr.ok());
  std::vector<uint32_t> values(kCount);
  for (uint32_t i = 0; i < kCount; ++i) values[i] = i;
  ASSERT_TRUE(ctx.Write(*dptr, {reinterpret_cast<uint8_t*>(values.data()), kCount * 4}).ok());

  std::vector<uint8_t> params(add_one.param_bytes);
  std::memcpy(params.data() + add_one.param_offsets[0], &*dptr, 8);
  std::memcpy(params.data() + add_one.param_offsets[1], &kCount, 4);
  LaunchConfig config;
  config.block.x = kCount;
  std::vector<int> order;  // written by the adapter's thread, read after Synchronize
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(ctx.Launch(**module, 0, config, params, [](std::string_view) {}).ok());
    ctx.NotifyWhenDone([&order, i] { order.push_back(i); });
  }
  ctx.NotifyWhenDone([&order] { order.push_back(3); });  // no new work: joins the last batch
  ASSERT_TRUE(ctx.Synchronize().ok());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));

  std::vector<uint32_t> back(kCount);
  ASSERT_TRUE(ctx.Read(*dptr, {reinterpret_cast<uint8_t*>(back.data()), kCount * 4}).ok());
  for (uint32_t i = 0; i < kCount; ++i) ASSERT_EQ(back[i], i + 3) << i;

  ASSERT_TRUE(ctx.Memset(*dptr, 16, 0xabcd, 2, 4, 4).ok());  // 2D: 4 rows of 4 halves
  ASSERT_TRUE(ctx.Read(*dptr, {reinterpret_cast<uint8_t*>(back.data()), kCount * 4}).ok());
  EXPECT_EQ(back[0], 0xabcdabcdu);
  EXPECT_EQ(back[2], 3u + 2);  // between rows: untouched
  EXPECT_EQ(back[12], 0xabcdabcdu);

  bool ran = false;
  ctx.NotifyWhenDone([&ran] { ran = true; });  // nothing outstanding: runs at once
  EXPECT_TRUE(ran);
  EXPECT_TRUE(ctx.Free(*dptr).ok());
  EXPECT_FALSE(ctx.Free((*module)->globals()[0].dptr).ok());  // globals belong to the module
}

TEST_F(CudaAdapterTest, FaultSurfacesAtSynchronize) {
  auto context = adapter().CreateContext();
  ASSERT_TRUE(context.ok());
  Context& ctx = **context;
  std::string errors, infos;
  auto module = ctx.LoadModule(
      ImageKind::kPtx, {reinterpret_cast<const uint8_t*>(kPtx), sizeof(kPtx)}, &errors, &infos);
  ASSERT_TRUE(module.ok());
  bool done = false;
  // Submission succeeds: the fault happens later, on the "device".
  ASSERT_TRUE(ctx.Launch(**module, 1, LaunchConfig{}, {}, [](std::string_view) {}).ok());
  ctx.NotifyWhenDone([&done] { done = true; });
  Status synced = ctx.Synchronize();
  EXPECT_TRUE(done);
  EXPECT_EQ(synced.code(), Code::kIllegalAddress) << synced.ToString();
}

// Adds one to each element of a 4 x 2 surface of u32 (x in bytes).
constexpr char kSurfacePtx[] = R"(
.version 7.5
.target sm_75
.address_size 64
.visible .entry surface_add_one(.param .u64 surface) {
  .reg .b32 %r<6>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [surface];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, %tid.y;
  suld.b.2d.b32.trap {%r4}, [%rd1, {%r2, %r3}];
  add.s32 %r5, %r4, 1;
  sust.b.2d.b32.trap [%rd1, {%r2, %r3}], {%r5};
  ret;
}
)";

// An array-backed object reads the driver's shadow array: filled from the block before a
// launch after the block changed, copied back after a launch while a surface lives, shared by
// every object over the block and gone with the last.
TEST_F(CudaAdapterTest, ArrayObjectsShadowTheirBlock) {
  auto context = adapter().CreateContext();
  ASSERT_TRUE(context.ok());
  Context& ctx = **context;
  std::string errors, infos;
  auto module = ctx.LoadModule(ImageKind::kPtx,
                               {reinterpret_cast<const uint8_t*>(kSurfacePtx), sizeof(kSurfacePtx)},
                               &errors, &infos);
  ASSERT_TRUE(module.ok()) << module.status().ToString() << " " << errors;

  texture::ArrayShape shape;
  shape.format = texture::kU32;
  shape.channels = 1;
  shape.width = 4;
  shape.height = 2;
  shape.flags = texture::kArraySurfaceLdst;
  auto layout = texture::LayoutArray(shape);
  ASSERT_TRUE(layout.ok());
  auto block = ctx.Allocate(layout->bytes);
  ASSERT_TRUE(block.ok());
  const uint64_t used = ctx.used_bytes();
  std::vector<uint32_t> values(8);
  for (uint32_t i = 0; i < 8; ++i) values[i] = i;
  ASSERT_TRUE(ctx.Write(*block, {reinterpret_cast<uint8_t*>(values.data()), 32}).ok());

  texture::TextureSpec spec;
  spec.surface = true;
  spec.geometry = texture::Geometry::k2D;
  spec.format = shape.format;
  spec.channels = shape.channels;
  spec.element_bytes = layout->element_bytes;
  spec.base = *block;
  spec.levels = layout->levels;
  spec.array = true;
  spec.array_shape = shape;
  auto surface = ctx.CreateTexture(1, spec);
  ASSERT_TRUE(surface.ok()) << surface.status().ToString();
  EXPECT_EQ(ctx.used_bytes(), used + layout->bytes);
  spec.surface = false;
  auto texture = ctx.CreateTexture(2, spec);  // the same shadow
  ASSERT_TRUE(texture.ok()) << texture.status().ToString();
  EXPECT_EQ(ctx.used_bytes(), used + layout->bytes);

  std::vector<uint8_t> params(8);
  std::memcpy(params.data(), &*surface, 8);
  LaunchConfig config;
  config.block.x = 4;
  config.block.y = 2;
  std::vector<uint32_t> back(8);
  ASSERT_TRUE(ctx.Launch(**module, 0, config, params, [](std::string_view) {}).ok());
  ASSERT_TRUE(ctx.Read(*block, {reinterpret_cast<uint8_t*>(back.data()), 32}).ok());
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(back[i], i + 1) << i;  // written back

  for (uint32_t i = 0; i < 8; ++i) values[i] = 100 + i;
  ASSERT_TRUE(ctx.Write(*block, {reinterpret_cast<uint8_t*>(values.data()), 32}).ok());
  ASSERT_TRUE(ctx.Launch(**module, 0, config, params, [](std::string_view) {}).ok());
  ASSERT_TRUE(ctx.Read(*block, {reinterpret_cast<uint8_t*>(back.data()), 32}).ok());
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(back[i], 101 + i) << i;  // refreshed first
  ASSERT_TRUE(ctx.Synchronize().ok());

  ctx.DestroyTexture(1);
  EXPECT_EQ(ctx.used_bytes(), used + layout->bytes);  // the texture still reads it
  ctx.DestroyTexture(2);
  EXPECT_EQ(ctx.used_bytes(), used);
  EXPECT_TRUE(ctx.Free(*block).ok());
}

TEST_F(CudaAdapterTest, BadPtxFillsTheErrorLog) {
  auto context = adapter().CreateContext();
  ASSERT_TRUE(context.ok());
  constexpr char kBad[] = ".version 7.5\n.target sm_75\n.address_size 64\n.entry k() { bogus; }\n";
  std::string errors, infos;
  auto module = (*context)->LoadModule(
      ImageKind::kPtx, {reinterpret_cast<const uint8_t*>(kBad), sizeof(kBad)}, &errors, &infos);
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), Code::kInvalidPtx) << module.status().ToString();
  EXPECT_FALSE(errors.empty());
}

}  // namespace
}  // namespace pvgpu::adapters::cuda

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new pvgpu::adapters::cuda::ChainEnvironment);
  return RUN_ALL_TESTS();
}
