// Executor: a worker pool shared by all launches. Blocks are handed out one at a time,
// round-robin between active launches, so concurrent guests share the cores fairly.
//
// A one-block grid that finds no launch waiting for the workers runs on the caller's thread
// instead: handing it to a worker costs two thread wake-ups (the worker's and, when it is done,
// the caller's), several times what an empty kernel costs, and on a machine with few cores
// the woken thread often has to wait for one. With no queued launch there is nobody to be fair
// to; launches that arrive meanwhile go to the (idle) workers as usual. At most one such
// launch per worker runs this way, so the cores are never oversubscribed more than twice.
#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <thread>

#include "common/cpus.h"
#include "ptx/program.h"
#include "ptx/warp.h"

namespace pvgpu::ptx {

void RunWarp(Warp& w);

namespace {

constexpr uint64_t kMaxLocalPerBlock = uint64_t{64} << 20;
// A block runs on its caller's thread only when its registers, local and shared memory fit in
// this: the caller keeps its buffers for the thread's life (a session's), and a guest must not
// make every session thread hold what only the shared workers hold otherwise.
constexpr uint64_t kMaxInlineScratch = uint64_t{1} << 20;

struct Job {
  LaunchCtx* ctx = nullptr;
  uint64_t total = 0;
  uint64_t next = 0;
  uint32_t inflight = 0;
  bool finished = false;
};

// Per-worker buffers reused across blocks so that block start-up does not allocate.
struct Scratch {
  std::vector<Warp> warps;
  std::vector<uint8_t> regs, local, shared;
  TranslateCache cache;
  unsigned index = 0;
  uint64_t launch_id = 0;  // launch whose register templates are in `regs`
};

std::atomic<uint64_t> g_launch_ids{1};

uint8_t* Aligned64(std::vector<uint8_t>& v, size_t bytes) {
  if (v.size() < bytes + 64) v.resize(bytes + 64);
  uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
  return reinterpret_cast<uint8_t*>((p + 63) & ~uintptr_t{63});
}

void RunBlock(LaunchCtx& L, uint64_t linear, Scratch& s) {
  const KernelImage& img = *L.image;
  const Dim3& g = L.config.grid;
  const Dim3& bd = L.config.block;
  Block block;
  block.ctaid =
      Dim3{static_cast<uint32_t>(linear % g.x), static_cast<uint32_t>((linear / g.x) % g.y),
           static_cast<uint32_t>(linear / (uint64_t{g.x} * g.y))};
  const uint32_t nthreads = static_cast<uint32_t>(bd.Count());
  const uint32_t nwarps = L.num_warps;
  block.shared_size = L.shared_bytes;
  block.shared = Aligned64(s.shared, L.shared_bytes);
  std::memset(block.shared, 0, L.shared_bytes);
  block.live_threads = nthreads;
  const size_t reg_stride = (img.reg_bytes + 63) & ~size_t{63};
  uint8_t* regs = Aligned64(s.regs, reg_stride * nwarps);
  uint8_t* local = Aligned64(s.local, size_t{img.local_bytes} * nwarps * 32);
  s.warps.resize(nwarps);
  block.warps = &s.warps;
  // Register files are initialized once per worker and launch: constants and special
  // registers are never written by kernels, and other registers start undefined in PTX, so
  // later blocks of the same launch only refresh the block-dependent slots.
  const bool fresh = s.launch_id != L.id;
  s.launch_id = L.id;
  for (uint32_t wi = 0; wi < nwarps; ++wi) {
    Warp& w = s.warps[wi];
    w.regs = regs + reg_stride * wi;
    if (fresh) std::memcpy(w.regs, L.reg_template.data(), img.reg_bytes);
    w.local = local + size_t{img.local_bytes} * 32 * wi;
    w.local_stride = img.local_bytes;
    w.code = img.code.data();
    w.pc = 0;
    w.blocked = 0;
    std::memset(w.bar_wait, 0, sizeof(w.bar_wait));
    w.warp_id = wi;
    w.block = &block;
    w.launch = &L;
    w.cache = &s.cache;
    w.worker = s.index;
    uint32_t lanes = std::min<uint32_t>(32, nthreads - wi * 32);
    w.live = lanes == 32 ? kFullMask : ((1u << lanes) - 1);
    w.active = w.live;
    w.next_wait = UINT32_MAX;
    w.state = WarpState::kRunning;
    w.uniform_wait = false;
    w.has_called = false;
    for (int i = 0; i < 32; ++i) {
      w.lane_pc[i] = 0;
      w.stack[i].clear();
    }
    const SpecialSlots& sp = img.sp;
    auto put = [&](uint32_t off, int lane, uint32_t v) {
      StoreReg<uint32_t>(w.regs, off, lane, v);
    };
    for (int i = 0; i < 32; ++i) {
      put(sp.ctaid[0], i, block.ctaid.x);
      put(sp.ctaid[1], i, block.ctaid.y);
      put(sp.ctaid[2], i, block.ctaid.z);
      StoreReg<uint64_t>(w.regs, sp.fp, i, 0);
    }
    for (int i = 0; i < 32 && fresh; ++i) {
      uint32_t t = wi * 32 + i;
      put(sp.tid[0], i, t % bd.x);
      put(sp.tid[1], i, (t / bd.x) % bd.y);
      put(sp.tid[2], i, t / (bd.x * bd.y));
      put(sp.ntid[0], i, bd.x);
      put(sp.ntid[1], i, bd.y);
      put(sp.ntid[2], i, bd.z);
      put(sp.nctaid[0], i, g.x);
      put(sp.nctaid[1], i, g.y);
      put(sp.nctaid[2], i, g.z);
      put(sp.laneid, i, i);
      put(sp.warpid, i, wi);
      put(sp.nwarpid, i, nwarps);
      put(sp.smid, i, s.index);
      put(sp.nsmid, i, 1024);
      put(sp.lanemask_eq, i, 1u << i);
      put(sp.lanemask_lt, i, (1u << i) - 1);
      put(sp.lanemask_le, i, i == 31 ? kFullMask : (2u << i) - 1);
      put(sp.lanemask_gt, i, i == 31 ? 0 : ~((2u << i) - 1));
      put(sp.lanemask_ge, i, ~((1u << i) - 1));
      put(sp.dynamic_smem, i, L.config.dynamic_shared_bytes);
      put(sp.total_smem, i, L.shared_bytes);
      StoreReg<uint64_t>(w.regs, sp.gridid, i, 1);
    }
  }
  // Round-robin over warps; each runs until it exits or waits at a barrier.
  while (!L.failed.load(std::memory_order_relaxed)) {
    bool progress = false, all_done = true;
    for (Warp& w : s.warps) {
      if (w.state == WarpState::kRunning) {
        if (w.active == 0) w.Reschedule();
        if (w.state == WarpState::kRunning) {
          RunWarp(w);
          progress = true;
        }
      }
      if (w.state != WarpState::kDone) all_done = false;
      if (L.failed.load(std::memory_order_relaxed)) return;
    }
    if (all_done) return;
    if (!progress) {
      L.Fail(Status(Code::kLaunchFailed, "barrier deadlock in kernel " + img.name +
                                             ": every live warp waits at a barrier"));
      return;
    }
  }
}

}  // namespace

struct Executor::Impl {
  std::mutex mu;
  std::condition_variable work_cv, done_cv;
  std::deque<Job*> jobs;
  size_t rr = 0;
  bool stop = false;
  size_t inline_running = 0;  // one-block launches running on their callers' threads
  std::vector<std::thread> workers;

  void Worker(unsigned index) {
    Scratch scratch;
    scratch.index = index;
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      work_cv.wait(lock, [&] { return stop || !jobs.empty(); });
      if (stop) return;
      Job* job = jobs[rr++ % jobs.size()];
      if (job->next >= job->total || job->ctx->failed.load()) {
        jobs.erase(std::find(jobs.begin(), jobs.end(), job));
        if (job->inflight == 0) {
          job->finished = true;
          done_cv.notify_all();
        }
        continue;
      }
      uint64_t b = job->next++;
      ++job->inflight;
      lock.unlock();
      // Allocations may change between launches; one lookup per block is cheap.
      scratch.cache = TranslateCache{};
      RunBlock(*job->ctx, b, scratch);
      lock.lock();
      --job->inflight;
      if (job->inflight == 0 && (job->next >= job->total || job->ctx->failed.load()) &&
          std::find(jobs.begin(), jobs.end(), job) == jobs.end()) {
        job->finished = true;
        done_cv.notify_all();
      }
    }
  }
};

Executor::Executor(unsigned threads) : impl_(std::make_unique<Impl>()) {
  if (threads == 0) threads = UsableCpus();
  for (unsigned i = 0; i < threads; ++i)
    impl_->workers.emplace_back([this, i] { impl_->Worker(i); });
}

Executor::~Executor() {
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    impl_->stop = true;
  }
  impl_->work_cv.notify_all();
  for (auto& t : impl_->workers) t.join();
}

unsigned Executor::threads() const { return static_cast<unsigned>(impl_->workers.size()); }

Status Executor::Launch(const Program& program, const KernelInfo& kernel,
                        const LaunchConfig& config, std::span<const uint8_t> params,
                        const LaunchEnv& env) {
  const auto* prog = dynamic_cast<const ProgramImpl*>(&program);
  if (!prog) return Error(Code::kInvalidValue, "program was not loaded by LoadProgram");
  const KernelImage* img = prog->ImageFor(kernel);
  if (!img) return Error(Code::kInvalidValue, "kernel does not belong to this program");
  const Dim3& b = config.block;
  const Dim3& g = config.grid;
  if (b.x == 0 || b.y == 0 || b.z == 0 || g.x == 0 || g.y == 0 || g.z == 0)
    return Error(Code::kInvalidValue, "empty grid or block");
  if (b.z > 64 || b.Count() > kMaxThreadsPerBlock || b.Count() > kernel.max_threads_per_block)
    return Error(Code::kInvalidValue,
                 "block of " + std::to_string(b.Count()) + " threads exceeds the kernel's limit");
  if (kernel.reqntid.x &&
      (b.x != kernel.reqntid.x || b.y != kernel.reqntid.y || b.z != kernel.reqntid.z))
    return Error(Code::kInvalidValue, "block shape does not match .reqntid");
  if (g.x > 0x7FFFFFFFu || g.y > 65535 || g.z > 65535)
    return Error(Code::kInvalidValue, "grid too large");
  uint64_t shared = uint64_t{img->static_shared} + config.dynamic_shared_bytes;
  if (shared > kMaxSharedBytesPerBlockOptin)
    return Error(Code::kInvalidValue, "shared memory per block exceeds the limit");
  if (uint64_t{img->local_bytes} * b.Count() > kMaxLocalPerBlock)
    return Error(Code::kLaunchOutOfResources, "local memory per block exceeds the limit");
  if (params.size() < kernel.param_bytes)
    return Error(Code::kInvalidValue, "parameter buffer too small");
  LaunchCtx L;
  L.id = g_launch_ids.fetch_add(1);
  L.program = prog;
  L.image = img;
  L.kernel = &kernel;
  L.config = config;
  L.params.assign(params.begin(), params.end());
  L.env = env;
  L.shared_bytes = static_cast<uint32_t>((shared + 15) & ~uint64_t{15});
  L.num_warps = static_cast<uint32_t>((b.Count() + 31) / 32);
  L.reg_template = img->reg_template;
  L.reg_template.resize(std::max<size_t>(L.reg_template.size(), img->reg_bytes));
  for (const LaunchConst& lc : img->launch_consts) {
    uint64_t v;
    if (lc.global == -2) {
      v = img->static_shared + static_cast<uint64_t>(lc.addend);
    } else {
      if (lc.global < 0 || static_cast<size_t>(lc.global) >= env.global_addresses.size())
        return Error(Code::kInvalidValue,
                     "missing device address for global " + std::to_string(lc.global));
      v = env.global_addresses[lc.global] + static_cast<uint64_t>(lc.addend);
    }
    uint8_t* p = L.reg_template.data() + lc.reg;
    for (int i = 0; i < 32; ++i) {
      if (lc.wide)
        std::memcpy(p + 8 * i, &v, 8);
      else {
        uint32_t v32 = static_cast<uint32_t>(v);
        std::memcpy(p + 4 * i, &v32, 4);
      }
    }
  }
  Job job;
  job.ctx = &L;
  job.total = g.Count();
  const uint64_t scratch = ((uint64_t{img->reg_bytes} + 63) & ~uint64_t{63}) * L.num_warps +
                           uint64_t{img->local_bytes} * 32 * L.num_warps + L.shared_bytes;
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    if (job.total == 1 && scratch <= kMaxInlineScratch && impl_->jobs.empty() &&
        impl_->inline_running < impl_->workers.size()) {
      ++impl_->inline_running;
      lock.unlock();
      // Caller threads (session loops, tests) keep their own buffers; index past the workers.
      thread_local Scratch scratch;
      scratch.index = static_cast<unsigned>(impl_->workers.size());
      scratch.cache = TranslateCache{};
      RunBlock(L, 0, scratch);
      lock.lock();
      --impl_->inline_running;
    } else {
      impl_->jobs.push_back(&job);
      // Wake only as many workers as there are blocks to take.
      if (job.total < impl_->workers.size()) {
        for (uint64_t i = 0; i < job.total; ++i) impl_->work_cv.notify_one();
      } else {
        impl_->work_cv.notify_all();
      }
      impl_->done_cv.wait(lock, [&] { return job.finished; });
    }
  }
  if (!L.error.ok()) return L.error;
  if (env.cancel && env.cancel->load()) return Error(Code::kLaunchFailed, "launch cancelled");
  return Status::Ok();
}

}  // namespace pvgpu::ptx
