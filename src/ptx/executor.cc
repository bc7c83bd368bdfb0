// Executor: a worker pool shared by all launches. Blocks are handed out one at a time to the
// launches waiting for workers, by weighted fair queueing of their flows (common/share_flow.h,
// one per guest session and adapter): each flow's virtual time is the worker time its blocks
// took divided by its weight, and a free worker takes the next block of the launch whose flow
// is furthest behind, high-priority flows before all others. A flow is charged an estimate of
// a block's time when a worker takes the block, corrected when the block ends, so that workers
// freed at once do not all pick the same flow. A flow that comes back after being idle starts
// no further behind the others than kIdleCreditNs of weighted time: idle time earns no share,
// while the short gap (under kAnticipateNs) between two of a busy guest's launches costs it
// nothing, its virtual time kept as it was. A running block
// is never interrupted: a flow waits at most for the blocks already on the workers.
//
// A session runs one launch at a time (the cpu adapter is synchronous), so between two of its
// launches its flow has no work for a moment: the session thread must wake, answer and take
// the next message. Handing the workers to the others in that gap would let a flow with more
// launches per second, not more weight, take the adapter. So a worker anticipates: when the
// flow that goes first is one whose launch ended moments ago and whose gaps between launches
// are short (below kAnticipateNs on average), the worker waits for its next launch, for at
// most three times its usual gap, before it serves the others. A flow that thinks between
// launches longer than that is not waited for: its idle time goes to the others.
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
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <thread>

#include "common/cpus.h"
#include "ptx/block_run.h"
#include "ptx/cooperative_budget.h"
#include "ptx/handlers.h"
#include "ptx/jit.h"
#include "ptx/launch_flow.h"
#include "ptx/program.h"
#include "ptx/warp.h"

namespace pvgpu::ptx {
namespace {

constexpr uint64_t kMaxLocalPerBlock = uint64_t{64} << 20;
// The registers of a block's warps: a real GPU refuses a block whose threads need more
// registers than a multiprocessor has (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES); here the bound is
// the memory one block may take.
constexpr uint64_t kMaxRegistersPerBlock = uint64_t{256} << 20;
// A block runs on its caller's thread only when its registers, local and shared memory fit in
// this: the caller keeps its buffers for the thread's life (a session's), and a guest must not
// make every session thread hold what only the shared workers hold otherwise.
constexpr uint64_t kMaxInlineScratch = uint64_t{1} << 20;
// How far behind the busy flows a returning flow may start, in virtual time (worker
// nanoseconds divided by weight).
constexpr double kIdleCreditNs = 50e6;
// The longest average gap between a flow's launches that a worker waits for (see above).
constexpr int64_t kAnticipateNs = 10000000;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Whether flow `a`'s work goes before `b`'s.
bool Before(const ShareFlow& a, const ShareFlow& b) {
  if (a.high_priority != b.high_priority) return a.high_priority;
  return a.vtime < b.vtime;
}

double Weight(const ShareFlow& flow) { return flow.weight == 0 ? 1.0 : double(flow.weight); }

// One block of a cooperative launch, resident for the whole launch.
struct CoopBlock {
  uint64_t linear = 0;
  bool started = false;
  Block block;
  Scratch scratch;
};

struct Job {
  LaunchCtx* ctx = nullptr;
  ShareFlow* flow = nullptr;
  int64_t started_ns = 0;  // when a worker first took one of its blocks
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

// A flow whose launch just ended, remembered for anticipation. `flow` only identifies it (it is
// never read through: its session may be gone); the rest is a copy.
struct RecentFlow {
  const ShareFlow* flow;
  bool high_priority;
  double vtime;
  int64_t until_ns;  // wait for it until then
};

struct Executor::Impl {
  std::mutex mu;
  std::vector<RecentFlow> recent;  // flows that may launch again in a moment
  std::vector<Job*> draining;      // jobs whose every block is taken, some still running
  std::condition_variable work_cv, done_cv;
  std::deque<Job*> jobs;
  size_t rr = 0;
  bool stop = false;
  size_t inline_running = 0;  // one-block launches running on their callers' threads
  size_t idle = 0;            // workers waiting while every queued job's work is taken
  int64_t wait_until = 0;     // set by TakeJob when it anticipates a flow (steady clock ns)
  std::vector<std::thread> workers;

  // Called with mu held once a job has no work left to hand out and none running.
  // The flow's count of jobs drops here, where the work ends, not when the launching thread
  // wakes: anticipation (Ended) must start at once.
  void Finish(Job* job) {
    if (job->finished) return;
    auto it = std::find(jobs.begin(), jobs.end(), job);
    if (it != jobs.end()) jobs.erase(it);
    draining.erase(std::remove(draining.begin(), draining.end(), job), draining.end());
    job->finished = true;
    --job->flow->active;
    Ended(*job->flow);
    done_cv.notify_all();
  }

  // The next job with work to hand out: the one whose flow goes first (Before), in turn among
  // equals; drops exhausted jobs on the way.
  Job* TakeJob() {
    for (size_t i = 0; i < jobs.size();) {
      Job* job = jobs[i];
      if (!job->Exhausted()) {
        ++i;
        continue;
      }
      if (job->inflight == 0) {
        Finish(job);
      } else {
        jobs.erase(jobs.begin() + static_cast<std::ptrdiff_t>(i));
        draining.push_back(job);  // its last blocks are running
      }
    }
    Job* best = nullptr;
    const size_t n = jobs.size();
    for (size_t k = 0; k < n; ++k) {
      Job* job = jobs[(rr + k) % n];
      if (!job->HasWork()) continue;
      if (best == nullptr || Before(*job->flow, *best->flow)) best = job;
    }
    ++rr;
    if (best != nullptr && Anticipating(*best->flow)) return nullptr;
    if (best != nullptr && best->started_ns == 0) best->started_ns = NowNs();
    return best;
  }

  // Whether a flow that goes before `candidate` ended a launch moments ago and is expected
  // back (drops the flows whose wait is over). Sets wait_until to the latest such deadline.
  bool Anticipating(const ShareFlow& candidate) {
    const int64_t now = NowNs();
    bool waiting = false;
    for (size_t i = 0; i < recent.size();) {
      const RecentFlow& r = recent[i];
      if (r.until_ns <= now) {
        recent.erase(recent.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      const bool goes_first =
          r.high_priority != candidate.high_priority ? r.high_priority : r.vtime < candidate.vtime;
      if (r.flow != &candidate && goes_first) {
        waiting = true;
        wait_until = std::max(wait_until, r.until_ns);
      }
      ++i;
    }
    // A flow whose launch is running its last blocks will, if its gaps are short, launch
    // again right after: the same wait, from the end of its blocks.
    for (const Job* job : draining) {
      const ShareFlow& f = *job->flow;
      if (&f == &candidate || f.gap_ns <= 0 || f.gap_ns > double(kAnticipateNs)) continue;
      if (!Before(f, candidate)) continue;
      waiting = true;
      const int64_t wait = std::min<int64_t>(kAnticipateNs, int64_t(f.block_ns + 3 * f.gap_ns));
      wait_until = std::max(wait_until, now + wait + 50000);
    }
    return waiting;
  }

  // A launch of `flow` ended (mu held): remembered when its launches come back quickly.
  void Ended(ShareFlow& flow) {
    const int64_t now = NowNs();
    flow.last_end_ns = now;
    if (flow.active != 0) return;
    if (flow.gap_ns > 0 && flow.gap_ns <= double(kAnticipateNs)) {
      const int64_t wait = std::min<int64_t>(kAnticipateNs, int64_t(3 * flow.gap_ns) + 50000);
      recent.push_back({&flow, flow.high_priority, flow.vtime, now + wait});
    }
  }

  // A worker took a block of `flow`'s: charged what a block has cost it so far.
  static double ChargeEstimate(ShareFlow& flow) {
    const double estimate = flow.block_ns;
    flow.vtime += estimate / Weight(flow);
    return estimate;
  }
  // The block ended after `ns`: the estimate corrected, and the flow's figures updated.
  static void ChargeActual(ShareFlow& flow, double estimate, int64_t ns) {
    flow.vtime += (double(ns) - estimate) / Weight(flow);
    flow.block_ns = flow.block_ns == 0 ? double(ns) : 0.875 * flow.block_ns + 0.125 * double(ns);
    flow.worker_ns.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
  }

  // A launch of `flow` arrives: a flow that was idle (longer than kAnticipateNs) starts at
  // most kIdleCreditNs behind the busy ones.
  void Activate(ShareFlow& flow) {
    if (flow.active++ != 0) return;
    for (size_t i = 0; i < recent.size(); ++i) {
      if (recent[i].flow == &flow) {
        recent.erase(recent.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
    const int64_t idle_ns = flow.last_end_ns == 0 ? -1 : NowNs() - flow.last_end_ns;
    if (idle_ns >= 0) {
      const double gap = std::min(double(idle_ns), 4.0 * kAnticipateNs);
      flow.gap_ns = flow.gap_ns == 0 ? gap : 0.75 * flow.gap_ns + 0.25 * gap;
    }
    // Back from the short gap between two launches: its place is kept. Back from idle (or
    // new): no further behind the busy flows than the credit.
    if (idle_ns >= 0 && idle_ns <= kAnticipateNs) return;
    bool any = false;
    double least = 0;
    for (Job* job : jobs) {
      if (job->flow == &flow) continue;
      if (!any || job->flow->vtime < least) least = job->flow->vtime;
      any = true;
    }
    if (any) flow.vtime = std::max(flow.vtime, least - kIdleCreditNs);
  }

  void Worker(unsigned index) {
    Scratch scratch;
    scratch.index = index;
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      work_cv.wait(lock, [&] { return stop || !jobs.empty(); });
      if (stop) return;
      wait_until = 0;
      Job* job = TakeJob();
      if (job == nullptr) {
        // Only cooperative blocks that other workers are running, or a flow that goes first
        // is expected back in a moment: wait for one of them.
        if (!jobs.empty()) {
          ++idle;
          if (wait_until != 0) {
            work_cv.wait_until(
                lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(wait_until)));
          } else {
            work_cv.wait(lock);
          }
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
      const double estimate = ChargeEstimate(*job->flow);
      lock.unlock();
      // Allocations may change between launches; one lookup per block is cheap.
      scratch.cache = TranslateCache{};
      const int64_t start = NowNs();
      RunBlock(*job->ctx, b, scratch);
      const int64_t ns = NowNs() - start;
      lock.lock();
      ChargeActual(*job->flow, estimate, ns);
      --job->inflight;
      if (job->inflight == 0 && job->Exhausted()) Finish(job);
    }
  }

  // Runs one slice of a cooperative launch's next ready block, then queues it again.
  void RunSlice(Job* job, std::unique_lock<std::mutex>& lock) {
    CoopBlock* b = job->ready.front();
    job->ready.pop_front();
    ++job->inflight;
    const double estimate = ChargeEstimate(*job->flow);
    lock.unlock();
    const int64_t start = NowNs();
    LaunchCtx& L = *job->ctx;
    if (!b->started) {
      b->started = true;
      b->scratch.index = static_cast<unsigned>(b->linear % workers.size());
      StartBlock(L, b->linear, b->block, b->scratch);
    }
    const SliceEnd end = RunBlockSlice(L, b->scratch);
    if (end == SliceEnd::kFinished) b->scratch = Scratch{};  // its memory goes back at once
    const int64_t ns = NowNs() - start;
    lock.lock();
    ChargeActual(*job->flow, estimate, ns);
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
  if (uint64_t{img->reg_bytes} * ((b.Count() + 31) / 32) > kMaxRegistersPerBlock)
    return Error(Code::kLaunchOutOfResources,
                 "the registers of a block of " + std::to_string(b.Count()) +
                     " threads of kernel " + kernel.name + " exceed the limit");
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
  const Engine engine = env.engine.value_or(DefaultEngine());
  L.jit = CompiledEntry(*img, engine);
  if (L.jit == nullptr && engine == Engine::kAuto && img->jit) L.jit_pending = img->jit.get();
  L.device_depth = DeviceLaunchDepth();
  L.shared_bytes = static_cast<uint32_t>((shared + 15) & ~uint64_t{15});
  L.user_shared_bytes = L.shared_bytes;
  if (!img->reserved_shared.empty()) L.shared_bytes += ReservedShared::kBytes;
  L.num_warps = static_cast<uint32_t>((b.Count() + 31) / 32);
  L.reg_template = img->reg_template;
  L.reg_template.resize(std::max<size_t>(L.reg_template.size(), img->reg_bytes));
  for (const auto& [index, reg] : img->envregs) {
    uint32_t* p = reinterpret_cast<uint32_t*>(L.reg_template.data() + reg);
    for (int i = 0; i < 32; ++i) p[i] = env.envreg[index];
  }
  for (const auto& [which, reg] : img->reserved_shared) {
    uint32_t* p = reinterpret_cast<uint32_t*>(L.reg_template.data() + reg);
    for (int i = 0; i < 32; ++i) p[i] = ReservedShared::Value(which, L.user_shared_bytes);
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
  ShareFlow own_flow;  // a launch without a flow is a flow of its own
  ShareFlow* named = ScopedLaunchFlow::Current();
  ShareFlow& flow = named != nullptr ? *named : own_flow;
  Job job;
  job.ctx = &L;
  job.flow = &flow;
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
  const int64_t submitted = NowNs();
  int64_t started = submitted;
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    impl_->Activate(flow);
    // A high-priority one-block launch runs at once on its caller's thread even while others'
    // launches wait for the workers: it goes ahead of them without waiting for a block to end.
    if (job.total == 1 && !job.cooperative && scratch <= kMaxInlineScratch &&
        (impl_->jobs.empty() || flow.high_priority) &&
        impl_->inline_running < impl_->workers.size()) {
      ++impl_->inline_running;
      lock.unlock();
      // Caller threads (session loops, tests) keep their own buffers; index past the workers.
      thread_local Scratch scratch;
      scratch.index = static_cast<unsigned>(impl_->workers.size());
      scratch.cache = TranslateCache{};
      RunBlock(L, 0, scratch);
      const int64_t ns = NowNs() - started;
      lock.lock();
      Impl::ChargeActual(flow, 0, ns);
      --impl_->inline_running;
      --flow.active;
      impl_->Ended(flow);
    } else {
      impl_->jobs.push_back(&job);
      // Wake only as many workers as there are blocks to take.
      if (job.total < impl_->workers.size()) {
        for (uint64_t i = 0; i < job.total; ++i) impl_->work_cv.notify_one();
      } else {
        impl_->work_cv.notify_all();
      }
      impl_->done_cv.wait(lock, [&] { return job.finished; });
      if (job.started_ns != 0) started = job.started_ns;
    }
  }
  const int64_t ended = NowNs();
  flow.kernels.fetch_add(1, std::memory_order_relaxed);
  flow.queued_ns.fetch_add(static_cast<uint64_t>(started - submitted), std::memory_order_relaxed);
  flow.busy_ns.fetch_add(static_cast<uint64_t>(ended - started), std::memory_order_relaxed);
  if (!L.error.ok()) return L.error;
  if (env.cancel && env.cancel->load()) return Error(Code::kLaunchFailed, "launch cancelled");
  if (img->uses_device_launch) {  // the grids its threads launched (device_launch.cc)
    return RunDeviceLaunches(
        L, [&](int child, const LaunchConfig& cfg, std::span<const uint8_t> child_params) {
          return Launch(program, prog->kernels_[child], cfg, child_params, env);
        });
  }
  return Status::Ok();
}

}  // namespace pvgpu::ptx
