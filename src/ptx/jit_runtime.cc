// The compiling engine's side that needs no LLVM: engine choice, when kernels compile (now or
// in the background), and the helpers compiled code calls back into (jit_codegen.h).
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "ptx/jit.h"
#include "ptx/jit_codegen.h"
#include "ptx/memory.h"
#include "ptx/program.h"
#include "ptx/warp.h"

namespace pvgpu::ptx {

const char* EngineName(Engine e) {
  switch (e) {
    case Engine::kInterp:
      return "interp";
    case Engine::kJit:
      return "jit";
    case Engine::kAuto:
      return "auto";
  }
  return "?";
}

StatusOr<Engine> ParseEngine(std::string_view name) {
  if (name == "interp") return Engine::kInterp;
  if (name == "jit" || name == "auto") {
    if (!JitAvailable()) {
      if (name == "auto") return Engine::kInterp;
      return Status(Code::kNotSupported,
                    "engine 'jit': this build has no compiling engine (LLVM was not found when "
                    "it was configured)");
    }
    return name == "jit" ? Engine::kJit : Engine::kAuto;
  }
  return Status(Code::kInvalidValue,
                "unknown engine '" + std::string(name) + "' (expected interp, jit or auto)");
}

const char* JitOriginName(JitOrigin o) {
  switch (o) {
    case JitOrigin::kCompiled:
      return "compiled";
    case JitOrigin::kMemory:
      return "shared with a live copy";
    case JitOrigin::kDisk:
      return "loaded from the disk cache";
  }
  return "?";
}

Engine DefaultEngine() {
  static const Engine engine = [] {
    const char* env = std::getenv("PVGPU_ENGINE");
    if (env != nullptr && *env != '\0') {
      StatusOr<Engine> e = ParseEngine(env);
      if (e.ok()) return *e;
      PVGPU_WARN("PVGPU_ENGINE: " << e.status().message() << "; using the default");
    }
    return JitAvailable() ? Engine::kAuto : Engine::kInterp;
  }();
  return engine;
}

// --- Helpers called from compiled code -------------------------------------------------------

namespace jit_rt {

// One step of the interpreter loop (warp_loop.h), for pcs the compiled code does not enter.
void Step(Warp* w) {
  const Inst& in = w->code[w->pc];
  uint32_t m = w->active;
  if (in.guard != kNoReg) {
    uint32_t p = *RegPtr<uint32_t>(w->regs, in.guard);
    m &= in.guard_neg ? ~p : p;
  }
  if (m != 0 && in.fn(in, *w, m)) {
    if (w->state != WarpState::kRunning) return;
    if (w->active == 0 || w->pc >= w->next_wait) w->Reschedule();
    return;
  }
  ++w->pc;
  if (w->pc >= w->next_wait) w->Reschedule();
}

void Resched(Warp* w) { w->Reschedule(); }

// After a handler returned true and the warp still runs (the interpreter loop's rule).
void AfterHandler(Warp* w) {
  if (w->active == 0 || w->pc >= w->next_wait) w->Reschedule();
}

// The interpreter loop's periodic check: 1 when the launch stopped (the warp is done).
int CheckStop(Warp* w) {
  if (!w->launch->Stopped()) return 0;
  if (!w->launch->failed.load()) {
    w->launch->Fail(
        Status(Code::kLaunchFailed, "launch cancelled in kernel " + w->launch->image->name));
  }
  w->state = WarpState::kDone;
  return 1;
}

// Host address of global [lo, end) when it lies in one allocation (refreshing the warp's
// translation cache), else nullptr: the caller takes the handler's per-lane path.
uint8_t* GlobalRange(Warp* w, uint64_t lo, uint64_t end) {
  if (end <= lo) return nullptr;
  return GlobalPtr(*w, lo, static_cast<uint32_t>(end - lo));
}

}  // namespace jit_rt

const JitHelpers& TheJitHelpers() {
  static const JitHelpers h{&jit_rt::Step, &jit_rt::Resched, &jit_rt::AfterHandler,
                            &jit_rt::CheckStop, &jit_rt::GlobalRange};
  return h;
}

void RunCompiledWarp(JitEntry entry, Warp& w) {
  Block& b = *w.block;
  const auto& params = w.launch->params;
  JitArgs args{&w,
               w.regs,
               w.code,
               &w.pc,
               &w.active,
               &w.next_wait,
               &w.state,
               b.shared,
               b.shared_size,
               params.data(),
               params.size(),
               w.cache};
  entry(&args);
}

// --- When kernels compile ---------------------------------------------------------------------

namespace {

// Signals kJit launches waiting for a compilation another thread does.
std::mutex g_sync_mu;
std::condition_variable g_sync_cv;

std::mutex g_totals_mu;
JitTotals g_totals;

void Finish(JitSlot& slot, StatusOr<CompiledCode> code, const std::string& name) {
  {
    std::lock_guard<std::mutex> l(g_totals_mu);
    --g_totals.pending;
  }
  if (!code.ok()) {
    PVGPU_WARN("ptx jit: kernel " << name << " stays interpreted: " << code.status().message());
    {
      std::lock_guard<std::mutex> l(g_totals_mu);
      ++g_totals.failed;
    }
    slot.state.store(3, std::memory_order_release);
  } else {
    const JitStats& st = code->stats;
    {
      std::lock_guard<std::mutex> l(g_totals_mu);
      ++g_totals.kernels;
      g_totals.compile_ms += st.compile_ms;
      switch (st.origin) {
        case JitOrigin::kCompiled:
          ++g_totals.compiled;
          break;
        case JitOrigin::kMemory:
          ++g_totals.memory_hits;
          break;
        case JitOrigin::kDisk:
          ++g_totals.disk_hits;
          break;
      }
    }
    slot.stats = st;
    slot.code = code->keep_alive;
    slot.entry.store(code->entry, std::memory_order_release);
    slot.state.store(2, std::memory_order_release);
    PVGPU_DEBUG("ptx jit: kernel " << name << ": " << st.native << " of " << st.instructions
                                   << " instructions native, " << st.segments << " segments, "
                                   << JitOriginName(st.origin) << " in " << st.compile_ms
                                   << " ms");
  }
  std::lock_guard<std::mutex> l(g_sync_mu);
  g_sync_cv.notify_all();
}

// Every native form (native.h) once, for Background's warm-up.
constexpr const char* kWarmUpPtx = R"(
.version 9.0
.target sm_80
.address_size 64
.visible .entry warm_up(.param .u64 out, .param .u64 in)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<8>;
  .shared .align 16 .b32 sm[128];
  ld.param.u64 %rd0, [out];
  ld.param.u64 %rd1, [in];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd3];
  ld.global.u32 %r5, [%rd1];
  add.u32 %r6, %r1, %r2;
  sub.s32 %r6, %r6, %r3;
  mad.lo.s32 %r6, %r6, %r4, %r5;
  min.s32 %r7, %r6, %r1;
  max.u32 %r7, %r7, %r2;
  and.b32 %r8, %r7, 255;
  or.b32 %r8, %r8, %r3;
  xor.b32 %r8, %r8, %r4;
  not.b32 %r9, %r8;
  neg.s32 %r9, %r9;
  abs.s32 %r9, %r9;
  shl.b32 %r10, %r9, 3;
  shr.s32 %r10, %r10, %r1;
  shr.u32 %r10, %r10, 2;
  mov.b32 %f0, %r1;
  add.f32 %f1, %f0, %f0;
  sub.f32 %f1, %f1, %f0;
  mul.f32 %f2, %f1, %f0;
  fma.rn.f32 %f3, %f2, %f1, %f0;
  div.rn.f32 %f3, %f3, %f2;
  sqrt.rn.f32 %f4, %f3;
  rsqrt.approx.f32 %f4, %f4;
  rcp.rn.f32 %f4, %f4;
  abs.f32 %f5, %f4;
  neg.f32 %f5, %f5;
  setp.lt.f32 %p1, %f5, %f0;
  setp.ne.s32 %p2, %r10, 0;
  and.pred %p3, %p1, %p2;
  selp.b32 %r11, %r10, %r9, %p3;
  mul.wide.s32 %rd4, %r11, 4;
  and.b32 %r12, %r0, 31;
  shl.b32 %r12, %r12, 2;
  mov.u32 %r13, sm;
  add.u32 %r13, %r13, %r12;
  st.shared.u32 [%r13], %r11;
  bar.sync 0;
  ld.shared.u32 %r14, [%r13];
  @%p3 bra $DONE;
  add.u32 %r14, %r14, 1;
$DONE:
  add.s64 %rd5, %rd0, %rd2;
  st.global.v4.u32 [%rd5], {%r14, %r11, %r10, %r9};
  st.global.f32 [%rd5], %f5;
  ret;
}
)";

// Background compilations, one at a time on one thread (the workers run kernels meanwhile).
class Background {
 public:
  static Background& Get() {
    static Background b;
    return b;
  }
  // Compiles a small kernel using every native form once before the object exists: LLVM
  // creates some of its static state lazily, and state created after this object would be
  // destroyed before it at exit, while a compilation the destructor waits for still uses it.
  Background() {
    auto program = LoadProgram(kWarmUpPtx);
    if (!program.ok()) return;
    const KernelInfo* k = (*program)->FindKernel("warm_up");
    const KernelImage* img = k ? static_cast<const ProgramImpl&>(**program).ImageFor(*k) : nullptr;
    // Not from a cache: the point is to run LLVM's optimizer and code generator.
    if (img != nullptr) (void)CompileImage(*img, /*use_cache=*/false);
  }
  void Add(std::shared_ptr<JitSlot> slot, std::shared_ptr<KernelImage> img) {
    {
      std::lock_guard<std::mutex> t(g_totals_mu);
      ++g_totals.pending;
    }
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back({std::move(slot), std::move(img)});
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
    cv_.notify_one();
  }
  ~Background() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
      cv_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Job {
    std::shared_ptr<JitSlot> slot;
    std::shared_ptr<KernelImage> img;
  };
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      Job job = std::move(queue_.front());
      queue_.pop_front();
      l.unlock();
      // An image nobody else holds was unloaded: its code would never run in this process,
      // but with a disk cache the next run of the program (a benchmark run twice, a test
      // suite's next test) loads it instead of interpreting while it compiles again. A
      // kernel is queued at its first launch only, so this is bounded by the kernels
      // programs launched, each compiled once.
      if (job.slot.use_count() > 1 || JitDiskCacheEnabled()) {
        Finish(*job.slot, CompileImage(*job.img), job.img->name);
      } else {
        {
          std::lock_guard<std::mutex> t(g_totals_mu);
          --g_totals.pending;
        }
        job.slot->state.store(3, std::memory_order_release);
      }
      l.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

// How long a kJit launch waits for its kernel's code.
constexpr std::chrono::seconds kJitWaitLimit{60};

JitEntry CompiledEntry(const KernelImage& img, Engine engine) {
  if (engine == Engine::kInterp || !img.jit || !JitAvailable()) return nullptr;
  JitSlot& slot = *img.jit;
  int state = slot.state.load(std::memory_order_acquire);
  if (state == 2) return slot.entry.load(std::memory_order_acquire);
  if (state == 3) return nullptr;
  if (engine == Engine::kAuto) {
    if (state == 0 && slot.state.compare_exchange_strong(state, 1)) {
      Background::Get().Add(img.jit, std::make_shared<KernelImage>(img));
    }
    return nullptr;
  }
  // kJit: compile on the background thread (one LLVM user at a time) and wait for it, but
  // not forever: a compilation that takes longer leaves this launch to the interpreter.
  if (state == 0 && slot.state.compare_exchange_strong(state, 1)) {
    Background::Get().Add(img.jit, std::make_shared<KernelImage>(img));
  }
  std::unique_lock<std::mutex> l(g_sync_mu);
  if (!g_sync_cv.wait_for(l, kJitWaitLimit,
                          [&] { return slot.state.load(std::memory_order_acquire) >= 2; })) {
    PVGPU_WARN("ptx jit: kernel " << img.name << " still compiling after "
                                  << kJitWaitLimit.count() << " s; interpreting this launch");
  }
  return slot.state.load(std::memory_order_acquire) == 2
             ? slot.entry.load(std::memory_order_acquire)
             : nullptr;
}

JitTotals GetJitTotals() {
  std::lock_guard<std::mutex> l(g_totals_mu);
  return g_totals;
}

Status CompileKernelForTest(const Program& program, std::string_view name, JitStats* stats) {
  const KernelInfo* k = program.FindKernel(name);
  if (k == nullptr) return Status(Code::kNotFound, "no kernel " + std::string(name));
  const KernelImage* img = static_cast<const ProgramImpl&>(program).ImageFor(*k);
  if (img == nullptr) return Status(Code::kNotFound, "no image for kernel " + std::string(name));
  StatusOr<CompiledCode> code = CompileImage(*img);
  if (!code.ok()) return code.status();
  if (stats) *stats = code->stats;
  return Status::Ok();
}

}  // namespace pvgpu::ptx
