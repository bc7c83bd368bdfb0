// Run-time state of a launch, a block and a warp, shared by the interpreter loop and the
// instruction handlers.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "ptx/ir.h"
#include "ptx/ptx.h"

namespace pvgpu::ptx {

class ProgramImpl;
struct JitArgs;  // jit.h
using JitEntry = void (*)(const JitArgs* args);

struct LaunchCtx {
  uint64_t id = 0;  // unique per launch
  const ProgramImpl* program = nullptr;
  const KernelImage* image = nullptr;
  const KernelInfo* kernel = nullptr;
  LaunchConfig config;
  std::vector<uint8_t> params;
  LaunchEnv env;
  std::vector<uint8_t> reg_template;  // image template with launch constants applied
  uint32_t shared_bytes = 0;          // static (aligned) + dynamic (+ ReservedShared::kBytes)
  uint32_t user_shared_bytes = 0;     // static (aligned) + dynamic: %total_smem_size
  uint32_t num_warps = 0;             // per block
  std::atomic<bool> failed{false};
  std::mutex mu;
  Status error;  // first fault wins
  std::mutex print_mu;

  // Dynamic parallelism (device_launch.cc): the parameter buffers this grid's threads fill for
  // the grids they launch (an arena of fixed size, so that pointers into it stay valid), and
  // those launches, run in launch order once this grid has completed.
  struct DeviceLaunch {
    int kernel;  // index in the program's kernels
    LaunchConfig config;
    uint32_t offset;  // of its parameter buffer in device_buffers
    uint32_t size;
    bool launched;
  };
  std::mutex device_mu;
  std::vector<uint8_t> device_buffers;
  std::atomic<uint32_t> device_used{0};  // bytes of device_buffers handed out
  std::vector<DeviceLaunch> device_launches;
  int device_depth = 0;  // how deep this grid is nested in device-side launches (0: the host's)
  JitEntry jit = nullptr;  // the kernel's compiled code (jit.h); nullptr: interpret
  // The auto engine, while the kernel compiles in the background: warps look here each time
  // they are run, so a long launch switches to compiled code as soon as it exists.
  const JitSlot* jit_pending = nullptr;

  void Fail(Status s) {
    std::lock_guard<std::mutex> l(mu);
    if (error.ok()) error = std::move(s);
    failed.store(true, std::memory_order_relaxed);
  }
  bool Stopped() const {
    return failed.load(std::memory_order_relaxed) ||
           (env.cancel && env.cancel->load(std::memory_order_relaxed));
  }
};

// Last allocation a worker translated, so that streaming accesses skip AddressSpace.
struct TranslateCache {
  uint64_t lo = 1, hi = 0;  // empty
  uint8_t* host = nullptr;  // host address of lo
};

// The 16 named barriers programs use (bar, barrier), and one more the engine keeps for
// barrier.cluster, whose cluster is the block.
inline constexpr int kNumNamedBarriers = 16;
inline constexpr int kClusterBarrier = kNumNamedBarriers;
inline constexpr int kNumBarriers = kNumNamedBarriers + 1;

struct Block;

struct Frame {
  uint32_t ret_pc;
  uint32_t callsite;
};

// kYielded: runnable, but gave up the worker (a spin loop in a cooperative launch, see
// ExecBraSpin, or an mbarrier wait that found its phase incomplete, see ops_async.cc); the
// block's scheduler makes it kRunning again.
enum class WarpState : uint8_t { kRunning, kBlocked, kDone, kYielded };

// Iterations of a spin loop a warp runs before it yields in a cooperative launch.
inline constexpr uint32_t kSpinsPerYield = 16;

// A copy issued by cp.async or cp.async.bulk and not yet performed (ops_async.cc): it lands when
// the issuing thread waits for its group (cp.async.wait_group / wait_all,
// cp.async.bulk.wait_group), hands it to an mbarrier (cp.async.mbarrier.arrive) or exits.
struct AsyncCopy {
  uint64_t src = 0, dst = 0;  // cp.async: global source, shared destination; bulk: the reverse
  uint32_t size = 0;          // bytes written at dst
  uint32_t src_size = 0;      // bytes read from src (cp.async zero-fills the rest)
  uint32_t group = 0;         // the lane's commit count at issue: committed once below it
  uint8_t lane = 0;
  bool bulk = false;  // cp.async.bulk.global.shared::cta (bulk async-groups)
  // Lanes lane .. lane + lanes - 1 each copy `size` bytes, lane k's at src and dst plus
  // k * size: a whole warp's contiguous cp.async recorded once (ExecCpAsync).
  uint8_t lanes = 1;
};

struct Warp {
  uint8_t* regs = nullptr;
  uint8_t* local = nullptr;  // lane i's local memory at local + i * local_stride
  uint32_t local_stride = 0;
  const Inst* code = nullptr;
  uint32_t pc = 0;
  uint32_t active = 0;     // lanes executing at pc
  uint32_t next_wait = 0;  // lowest pc among other runnable lanes (UINT32_MAX: none)
  uint32_t live = 0;       // lanes not exited
  uint32_t blocked = 0;    // lanes waiting at a barrier
  uint32_t bar_wait[kNumBarriers] = {};
  uint32_t lane_pc[32] = {};
  WarpState state = WarpState::kRunning;
  // Every runnable lane waits at one barrier with the same resume pc (in `pc`): release can
  // restore the group without scanning lane_pc.
  bool uniform_wait = false;
  bool has_called = false;  // some lane has entered a .func since the block started
  uint32_t spins = 0;       // spin-loop iterations since the warp last yielded
  uint32_t warp_id = 0;
  Block* block = nullptr;
  LaunchCtx* launch = nullptr;
  TranslateCache* cache = nullptr;
  std::vector<Frame> stack[32];
  unsigned worker = 0;
  // cp.async state (ops_async.cc): pending copies in issue order, and each lane's count of
  // committed cp.async groups and bulk async-groups.
  std::vector<AsyncCopy> async_copies;
  uint32_t async_groups[32] = {};
  uint32_t bulk_groups[32] = {};

  // Records a fault for the launch (with kernel, line, instruction, block, thread) and stops
  // the warp.
  void Fault(Code code, const Inst& in, int lane, const std::string& what);
  // Writes pc into lane_pc for the active lanes and picks the next group (lowest pc).
  void Reschedule();
  uint32_t PcOf(const Inst& in) const { return static_cast<uint32_t>(&in - code); }
};

struct Barrier {
  uint32_t arrived = 0;
  uint32_t expected = 0;  // 0: every live thread of the block
  // bar.red accumulators, and their values captured when the barrier last completed.
  uint32_t red_popc = 0;
  bool red_and = true, red_or = false;
  uint32_t res_popc = 0;
  bool res_and = true, res_or = false;
};

struct Block {
  Dim3 ctaid;
  uint8_t* shared = nullptr;
  uint32_t shared_size = 0;
  uint32_t live_threads = 0;
  Barrier bars[kNumBarriers];
  std::vector<Warp>* warps = nullptr;
  // Changes of any mbarrier object's state (ops_async.cc): a round in which every warp waited
  // on an mbarrier and this did not move made no progress.
  uint64_t mbarrier_events = 0;

  // Releases barrier `id` if its count is reached.
  void MaybeRelease(int id);
};

// Translates a global-space address range for lane accesses; nullptr when out of bounds.
uint8_t* TranslateGlobal(Warp& w, uint64_t addr, uint32_t size);

}  // namespace pvgpu::ptx
