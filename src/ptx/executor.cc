// Executor: a worker pool shared by all launches. Blocks are handed out one at a time,
// round-robin between active launches, so concurrent guests share the cores fairly.
//
// A one-block grid that finds no launch waiting for the workers runs on the caller's thread
// instead: handing it to a worker costs two thread wake-ups (the worker's and, when it is done,
// the caller's), several times what an empty kernel costs, and on a machine with few cores
// the woken thread often has to wait for one. With no queued launch there is nobody to be fair
// to; launches that arrive meanwhile go to the (idle) workers as usual. At most one such
// launch per worker runs this way, so the cores are never oversubscribed more than twice.
//
// Cooperative launches need every block resident at once, however few workers there are: their
// blocks wait for each other (grid barriers, flags). Each block gets its own buffers for the
// launch, and the unit a worker takes is a slice of one block rather than a whole block: every
// warp of the block runs until it waits at a barrier, exits, uses up its time slice (RunWarp's
// 4096-instruction budget) or yields in a spin loop (ExecBraSpin: a backward branch over a
// volatile/acquire load, an atomic or nanosleep yields every kSpinsPerYield iterations). The
// block then goes to the back of its launch's ready queue. Blocks thus share the workers like
// threads share cores, interleaved with other launches' blocks as fairly as before, and a
// block spinning on another costs a few dozen instructions per turn, not a time slice. When a
// whole round of a launch's blocks only waited, the worker yields its host thread: the block
// they wait for is in a slice on a worker the host has descheduled. What cooperative launches
// hold resident is bounded for the whole process, not only per launch (cooperative_budget.h).
#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <thread>

#include "common/cpus.h"
#include "ptx/block_run.h"
#include "ptx/cooperative_budget.h"
#include "ptx/program.h"
#include "ptx/warp.h"

namespace pvgpu::ptx {
namespace {

constexpr uint64_t kMaxLocalPerBlock = uint64_t{64} << 20;
// A block runs on its caller's thread only when its registers, local and shared memory fit in
// this: the caller keeps its buffers for the thread's life (a session's), and a guest must not
// make every session thread hold what only the shared workers hold otherwise.
constexpr uint64_t kMaxInlineScratch = uint64_t{1} << 20;

// One block of a cooperative launch, resident for the whole launch.
struct CoopBlock {
  uint64_t linear = 0;
  bool started = false;
  Block block;
  Scratch scratch;
};

struct Job {
  LaunchCtx* ctx = nullptr;
  uint64_t total = 0;
  uint64_t next = 0;
  uint32_t inflight = 0;
  bool finished = false;
  // Cooperative launches: the blocks no worker is running now, and those not yet finished.
  bool cooperative = false;
  std::deque<CoopBlock*> ready;
  uint64_t unfinished = 0;
  uint64_t waiting_streak = 0;  // slices in a row that ended waiting for another block

  bool Exhausted() const {
    return (cooperative ? unfinished == 0 : next >= total) || ctx->failed.load();
  }
  bool HasWork() const { return !Exhausted() && (!cooperative || !ready.empty()); }
};

std::atomic<uint64_t> g_launch_ids{1};

}  // namespace

struct Executor::Impl {
  std::mutex mu;
  std::condition_variable work_cv, done_cv;
  std::deque<Job*> jobs;
  size_t rr = 0;
  bool stop = false;
  size_t inline_running = 0;  // one-block launches running on their callers' threads
  size_t idle = 0;            // workers waiting while every queued job's work is taken
  std::vector<std::thread> workers;

  // Called with mu held once a job has no work left to hand out and none running.
  void Finish(Job* job) {
    auto it = std::find(jobs.begin(), jobs.end(), job);
    if (it != jobs.end()) jobs.erase(it);
    job->finished = true;
    done_cv.notify_all();
  }

  // The next job with work to hand out, round-robin; drops exhausted jobs on the way.
  Job* TakeJob() {
    for (size_t tries = jobs.size(); tries > 0 && !jobs.empty(); --tries) {
      Job* job = jobs[rr++ % jobs.size()];
      if (job->Exhausted()) {
        if (job->inflight == 0) {
          Finish(job);
        } else {
          jobs.erase(std::find(jobs.begin(), jobs.end(), job));
        }
        continue;
      }
      if (job->HasWork()) return job;
    }
    return nullptr;
  }

  void Worker(unsigned index) {
    Scratch scratch;
    scratch.index = index;
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      work_cv.wait(lock, [&] { return stop || !jobs.empty(); });
      if (stop) return;
      Job* job = TakeJob();
      if (job == nullptr) {
        // Only cooperative blocks that other workers are running: wait for one to come back.
        if (!jobs.empty()) {
          ++idle;
          work_cv.wait(lock);
          --idle;
        }
        continue;
      }
      if (job->cooperative) {
        RunSlice(job, lock);
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
      if (job->inflight == 0 && job->Exhausted()) Finish(job);
    }
  }

  // Runs one slice of a cooperative launch's next ready block, then queues it again.
  void RunSlice(Job* job, std::unique_lock<std::mutex>& lock) {
    CoopBlock* b = job->ready.front();
    job->ready.pop_front();
    ++job->inflight;
    lock.unlock();
    LaunchCtx& L = *job->ctx;
    if (!b->started) {
      b->started = true;
      b->scratch.index = static_cast<unsigned>(b->linear % workers.size());
      StartBlock(L, b->linear, b->block, b->scratch);
    }
    const SliceEnd end = RunBlockSlice(L, b->scratch);
    if (end == SliceEnd::kFinished) b->scratch = Scratch{};  // its memory goes back at once
    lock.lock();
    --job->inflight;
    if (end == SliceEnd::kFinished) {
      --job->unfinished;
    } else {
      job->ready.push_back(b);
      if (idle > 0) work_cv.notify_one();
    }
    // A whole round of the launch's blocks that only waited means the block they wait for is
    // on a worker the host is not running (more threads than cores): let the host run it
    // rather than spin through this worker's time slice.
    job->waiting_streak = end == SliceEnd::kWaiting ? job->waiting_streak + 1 : 0;
    const bool all_waiting = job->unfinished > 0 && job->waiting_streak >= job->unfinished;
    if (all_waiting) job->waiting_streak = 0;
    if (job->inflight == 0 && job->Exhausted()) Finish(job);  // job may be gone after this
    if (all_waiting) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
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
  for (const auto& [index, reg] : img->envregs) {
    uint32_t* p = reinterpret_cast<uint32_t*>(L.reg_template.data() + reg);
    for (int i = 0; i < 32; ++i) p[i] = env.envreg[index];
  }
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
  const uint64_t scratch = BlockScratchBytes(L);
  uint64_t resident = 0;  // taken from the process's budget, given back on return
  struct Release {        // after the blocks' buffers are gone (declared before them)
    const uint64_t& bytes;
    ~Release() {
      if (bytes != 0) ReleaseCooperativeResident(bytes);
    }
  } release{resident};
  std::vector<CoopBlock> coop_blocks;
  if (config.cooperative) {
    const uint64_t per_block = scratch + sizeof(CoopBlock) + uint64_t{sizeof(Warp)} * L.num_warps;
    if (job.total > kMaxCooperativeResidentBytes / per_block)
      return Error(Code::kLaunchOutOfResources,
                   "a cooperative grid of " + std::to_string(job.total) + " blocks needs " +
                       std::to_string(per_block) + " bytes per resident block, over the " +
                       std::to_string(kMaxCooperativeResidentBytes >> 20) + " MiB limit");
    PVGPU_TRY(ReserveCooperativeResident(job.total * per_block, env.cancel));
    resident = job.total * per_block;
    coop_blocks.resize(job.total);
    for (uint64_t i = 0; i < job.total; ++i) {
      coop_blocks[i].linear = i;
      job.ready.push_back(&coop_blocks[i]);
    }
    job.cooperative = true;
    job.unfinished = job.total;
  }
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    if (job.total == 1 && !job.cooperative && scratch <= kMaxInlineScratch && impl_->jobs.empty() &&
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
