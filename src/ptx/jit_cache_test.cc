// The compiling engine's caches: code shared between live copies of a kernel, object code kept
// on disk across processes (jit_cache.h), and what happens when an entry is damaged, the
// directory is full or several processes write at once. Every test process gets a cache
// directory of its own (PVGPU_JIT_CACHE_DIR, set before the engine's first use).
#include "ptx/jit_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <thread>

#include "ptx/jit.h"
#include "ptx/test_util.h"

namespace pvgpu::ptx {
namespace {

namespace fs = std::filesystem;
using testing::Runner;

// This process's cache directory; a child started by CrossProcess inherits its parent's.
const std::string& CacheDir() {
  static const std::string dir = [] {
    if (const char* d = std::getenv("PVGPU_JIT_CACHE_DIR"); d != nullptr && *d == '/') return std::string(d);
    char t[] = "/tmp/pvgpu-jit-cache-test-XXXXXX";
    if (mkdtemp(t) == nullptr) std::abort();
    setenv("PVGPU_JIT_CACHE_DIR", t, 1);
    return std::string(t);
  }();
  return dir;
}
struct DirOwner {
  bool owned = std::getenv("PVGPU_JIT_CACHE_DIR") == nullptr;
  DirOwner() { (void)CacheDir(); }
  ~DirOwner() {
    std::error_code ec;
    if (owned) fs::remove_all(CacheDir(), ec);
  }
} g_dir_owner;

std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".o") out.insert(e.path().string());
  }
  return out;
}

// A small kernel; `salt` makes its code (and so its key) differ between tests.
std::string Kernel(int salt) {
  return R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 in)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd0, [out];
  ld.param.u64 %rd1, [in];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r1, [%rd3];
  mul.lo.u32 %r2, %r1, )" +
         std::to_string(salt) + R"(;
  add.u32 %r2, %r2, %r0;
  setp.lt.u32 %p1, %r0, 7;
  @%p1 add.u32 %r2, %r2, 1000;
  add.s64 %rd4, %rd0, %rd2;
  st.global.u32 [%rd4], %r2;
  ret;
}
)";
}

// Runs k over 64 threads with `engine` and returns what it wrote.
std::vector<uint32_t> RunKernel(const std::string& ptx, Engine engine, Runner* keep = nullptr) {
  std::unique_ptr<Runner> own;
  Runner* r = keep;
  if (r == nullptr) {
    own = std::make_unique<Runner>(ptx);
    r = own.get();
  }
  EXPECT_TRUE(r->ok());
  r->set_engine(engine);
  std::vector<uint32_t> in(64);
  for (uint32_t i = 0; i < 64; ++i) in[i] = i * 3 + 1;
  uint64_t din = r->mem().Upload(in);
  uint64_t dout = r->mem().Upload(std::vector<uint32_t>(64, 0));
  Status s = r->Launch("k", {1, 1, 1}, {64, 1, 1}, {dout, din});
  EXPECT_TRUE(s.ok()) << s.message();
  return r->mem().Download<uint32_t>(dout, 64);
}

class JitCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!JitAvailable()) GTEST_SKIP() << "this build has no compiling engine";
    ASSERT_EQ(JitDiskCache::Get().dir(), CacheDir());
  }
};

TEST_F(JitCacheTest, LiveCopiesShareCodeAndLaterLoadsComeFromDisk) {
  const std::string ptx = Kernel(17);
  const std::vector<uint32_t> want = RunKernel(ptx, Engine::kInterp);
  JitTotals t0 = GetJitTotals();
  {
    Runner a(ptx);
    EXPECT_EQ(RunKernel(ptx, Engine::kJit, &a), want);
    JitTotals t1 = GetJitTotals();
    EXPECT_EQ(t1.compiled, t0.compiled + 1);
    EXPECT_EQ(Entries(CacheDir()).size(), 1u);
    // The same kernel loaded again while the first copy lives: its code is shared.
    Runner b(ptx);
    EXPECT_EQ(RunKernel(ptx, Engine::kJit, &b), want);
    JitTotals t2 = GetJitTotals();
    EXPECT_EQ(t2.memory_hits, t1.memory_hits + 1);
    EXPECT_EQ(t2.compiled, t1.compiled);
  }
  // Both gone: the code was released, and comes back from disk, not from LLVM.
  JitTotals t3 = GetJitTotals();
  EXPECT_EQ(RunKernel(ptx, Engine::kJit), want);
  JitTotals t4 = GetJitTotals();
  EXPECT_EQ(t4.disk_hits, t3.disk_hits + 1);
  EXPECT_EQ(t4.compiled, t3.compiled);
  EXPECT_EQ(t4.kernels, t3.kernels + 1);
  EXPECT_GT(t4.compile_ms, t3.compile_ms);
}

TEST_F(JitCacheTest, DamagedEntriesAreRemovedAndTheKernelCompiledAgain) {
  const std::string ptx = Kernel(23);
  const std::vector<uint32_t> want = RunKernel(ptx, Engine::kInterp);
  EXPECT_EQ(RunKernel(ptx, Engine::kJit), want);
  auto entries = Entries(CacheDir());
  ASSERT_EQ(entries.size(), 1u);
  const std::string path = *entries.begin();
  const uintmax_t size = fs::file_size(path);
  // Each kind of damage: a flipped byte of code, a cut file, a header of another format.
  const std::vector<std::function<void()>> damage = {
      [&] {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(size - 9));
        f.put('\x5a');
      },
      [&] { fs::resize_file(path, size / 2); },
      [&] {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(8);
        f.put('\x7f');  // format version
      },
      [&] { std::ofstream(path, std::ios::trunc) << "not an object"; },
  };
  for (size_t i = 0; i < damage.size(); ++i) {
    damage[i]();
    JitTotals before = GetJitTotals();
    EXPECT_EQ(RunKernel(ptx, Engine::kJit), want) << "damage " << i;
    JitTotals after = GetJitTotals();
    EXPECT_EQ(after.compiled, before.compiled + 1) << "damage " << i;
    EXPECT_EQ(after.disk_hits, before.disk_hits) << "damage " << i;
    // Written again, whole.
    ASSERT_TRUE(fs::exists(path)) << "damage " << i;
    EXPECT_EQ(fs::file_size(path), size) << "damage " << i;
  }
  JitTotals before = GetJitTotals();
  EXPECT_EQ(RunKernel(ptx, Engine::kJit), want);
  EXPECT_EQ(GetJitTotals().disk_hits, before.disk_hits + 1);
}

// Under auto the first launch is interpreted while the kernel compiles in the background;
// the engine counts the kernel as pending until its code is ready (the host status and the
// benchmarks read this), and the code reaches the disk cache even when the module was
// unloaded meanwhile, so that the program's next run does not interpret again.
TEST_F(JitCacheTest, AutoCompilesInTheBackgroundAndUnloadedKernelsStillReachTheDisk) {
  const std::string ptx = Kernel(41);
  const std::vector<uint32_t> want = RunKernel(ptx, Engine::kInterp);
  const JitTotals before = GetJitTotals();
  EXPECT_EQ(before.pending, 0u);
  EXPECT_EQ(RunKernel(ptx, Engine::kAuto), want);  // its Runner, and so the module, is gone
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (GetJitTotals().pending != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const JitTotals after = GetJitTotals();
  ASSERT_EQ(after.pending, 0u) << "still compiling after 120 s";
  EXPECT_EQ(after.compiled, before.compiled + 1);
  EXPECT_EQ(Entries(CacheDir()).size(), 1u);
  EXPECT_EQ(RunKernel(ptx, Engine::kJit), want);
  EXPECT_EQ(GetJitTotals().disk_hits, after.disk_hits + 1);
}

// A child process (a new address-space layout) compiles; this one loads what it wrote. The
// object code names helpers by symbol, so it works wherever this process has them.
TEST_F(JitCacheTest, CodeCompiledByAnotherProcessRunsHere) {
  const std::string ptx = Kernel(31);
  const std::vector<uint32_t> want = RunKernel(ptx, Engine::kInterp);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("PVGPU_JIT_CACHE_CHILD", "1", 1);
    execl("/proc/self/exe", "jit_cache_test", "--gtest_filter=JitCacheChild.CompilesKernel31",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  ASSERT_EQ(Entries(CacheDir()).size(), 1u);
  JitTotals before = GetJitTotals();
  EXPECT_EQ(RunKernel(ptx, Engine::kJit), want);
  JitTotals after = GetJitTotals();
  EXPECT_EQ(after.disk_hits, before.disk_hits + 1);
  EXPECT_EQ(after.compiled, before.compiled);
}

TEST(JitCacheChild, CompilesKernel31) {
  if (std::getenv("PVGPU_JIT_CACHE_CHILD") == nullptr) GTEST_SKIP() << "run by CodeCompiledByAnotherProcessRunsHere";
  const std::string ptx = Kernel(31);
  EXPECT_EQ(RunKernel(ptx, Engine::kJit), RunKernel(ptx, Engine::kInterp));
  EXPECT_EQ(GetJitTotals().compiled, 1u);
}

class JitDiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/pvgpu-jit-disk-test-XXXXXX";
    ASSERT_NE(mkdtemp(t), nullptr);
    dir_ = t;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string dir_;
};

TEST_F(JitDiskCacheTest, StoresAndLoadsByKey) {
  JitDiskCache cache(dir_ + "/sub/dir", 1 << 20);
  EXPECT_FALSE(cache.Load("k1").has_value());
  cache.Store("k1", "object one");
  cache.Store("k2", std::string(1000, '\0'));
  EXPECT_EQ(cache.Load("k1").value_or("?"), "object one");
  EXPECT_EQ(cache.Load("k2").value_or("?"), std::string(1000, '\0'));
  cache.Store("k1", "replaced");
  EXPECT_EQ(cache.Load("k1").value_or("?"), "replaced");
  // A file renamed to another key's name is not that key's code.
  fs::rename(dir_ + "/sub/dir/k2.o", dir_ + "/sub/dir/k3.o");
  EXPECT_FALSE(cache.Load("k3").has_value());
  EXPECT_FALSE(fs::exists(dir_ + "/sub/dir/k3.o"));
}

TEST_F(JitDiskCacheTest, KeepsTheRecentlyUsedUnderItsBound) {
  const std::string object(1000, 'x');
  JitDiskCache cache(dir_, 3300);  // room for three entries of ~1040 bytes
  auto tick = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
  cache.Store("a", object);
  tick();
  cache.Store("b", object);
  tick();
  cache.Store("c", object);
  tick();
  ASSERT_TRUE(cache.Load("a").has_value());  // a is now the most recently used
  tick();
  cache.Store("d", object);  // over the bound: b, the least recently used, goes
  EXPECT_LE(cache.SizeForTest(), 3300u);
  EXPECT_TRUE(cache.Load("a").has_value());
  EXPECT_FALSE(cache.Load("b").has_value());
  EXPECT_TRUE(cache.Load("c").has_value());
  EXPECT_TRUE(cache.Load("d").has_value());
  // An entry larger than the whole bound is not kept.
  cache.Store("huge", std::string(4000, 'y'));
  EXPECT_FALSE(cache.Load("huge").has_value());
  EXPECT_LE(cache.SizeForTest(), 3300u);
}

TEST_F(JitDiskCacheTest, ConcurrentProcessesSeeWholeEntriesOrNone) {
  auto content = [](int key, int writer) {
    // Same size for every writer, different bytes: a reader must see one writer's whole file.
    return std::string(20000 + key * 100, static_cast<char>('a' + writer));
  };
  std::vector<pid_t> children;
  for (int writer = 0; writer < 4; ++writer) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      JitDiskCache cache(dir_, 64 << 20);
      int bad = 0;
      for (int round = 0; round < 30; ++round) {
        for (int key = 0; key < 8; ++key) {
          const std::string k = "key" + std::to_string(key);
          cache.Store(k, content(key, writer));
          auto got = cache.Load("key" + std::to_string((key + 3) % 8));
          if (got) {
            const int other = (key + 3) % 8;
            bool whole = got->size() == content(other, 0).size() && got->front() >= 'a' &&
                         got->front() <= 'd' &&
                         *got == std::string(got->size(), got->front());
            if (!whole) ++bad;
          }
        }
      }
      _exit(bad == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  JitDiskCache cache(dir_, 64 << 20);
  for (int key = 0; key < 8; ++key) {
    auto got = cache.Load("key" + std::to_string(key));
    ASSERT_TRUE(got.has_value()) << key;
    EXPECT_EQ(got->size(), content(key, 0).size());
  }
  // No temporary files left behind.
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().extension(), ".o") << e.path();
  }
}

TEST_F(JitDiskCacheTest, DisabledOrUnusableDirectoriesCostNothing) {
  JitDiskCache off("", 1 << 20);
  EXPECT_FALSE(off.enabled());
  off.Store("k", "x");
  EXPECT_FALSE(off.Load("k").has_value());
  // A directory that cannot exist (a file is in the way): stores are dropped, loads miss.
  std::ofstream(dir_ + "/file") << "x";
  JitDiskCache blocked(dir_ + "/file/cache", 1 << 20);
  blocked.Store("k", "x");
  EXPECT_FALSE(blocked.Load("k").has_value());
}

}  // namespace
}  // namespace pvgpu::ptx
