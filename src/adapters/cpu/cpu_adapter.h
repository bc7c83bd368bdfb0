// The cpu adapter: runs PTX on the host's cores through the PTX engine. Always present, so that
// everything works on a machine with no GPU; the reference the other adapters are compared with.
#pragma once

#include <atomic>
#include <memory>
#include <optional>

#include "adapters/adapter.h"
#include "adapters/busy_tracker.h"
#include "adapters/cpu/device_memory.h"
#include "ptx/ptx.h"

namespace pvgpu::adapters::cpu {

struct CpuAdapterOptions {
  uint32_t index = 0;          // position among the host's cpu adapters (distinct UUIDs)
  uint64_t memory_bytes = 0;   // 0: half of the host's physical memory
  unsigned threads = 0;        // 0: one worker per online CPU
  // The PTX engine for this adapter's kernels; unset: the process default (ptx::DefaultEngine:
  // pvgpud --engine, PVGPU_ENGINE, else auto where the build has the compiling engine).
  std::optional<ptx::Engine> engine;
};

class CpuAdapter final : public Adapter {
 public:
  // `executor` is shared by every cpu adapter of the host so that all guests' kernels share the
  // same cores fairly.
  CpuAdapter(const CpuAdapterOptions& options, std::shared_ptr<ptx::Executor> executor);

  const AdapterInfo& info() const override { return info_; }
  StatusOr<std::unique_ptr<Context>> CreateContext() override;
  uint64_t used_bytes() const override { return used_.load(); }
  uint32_t SampleUtilization() override { return busy_.SamplePercent(); }
  uint64_t busy_ns() override { return busy_.TotalNs(); }
  BusyTracker& busy() { return busy_; }
  ptx::Engine engine() const { return engine_; }

  // Contexts report their memory here so that adapter-wide use is one atomic read.
  void AddUsed(int64_t delta) { used_.fetch_add(delta); }

 private:
  AdapterInfo info_;
  ptx::Engine engine_;
  std::shared_ptr<ptx::Executor> executor_;
  AddressRange addresses_;
  std::atomic<uint64_t> used_{0};
  BusyTracker busy_;
};

// Fills `info` with the attributes of a cpu adapter (exposed for tests and tools).
void FillCpuAdapterInfo(const CpuAdapterOptions& options, unsigned threads, AdapterInfo* info);

// How many blocks of `kernel` the adapter keeps resident at once: resident blocks per
// multiprocessor times the multiprocessor count, from the same attributes (threads, blocks and
// shared memory per multiprocessor) the guest's occupancy calculator reads, so that
// cuOccupancyMaxActiveBlocksPerMultiprocessor x CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT is
// exactly the largest cooperative grid. 0 when such a block cannot run at all.
uint64_t CoResidentBlocks(const AdapterInfo& info, const ptx::KernelInfo& kernel,
                          uint64_t block_threads, uint64_t dynamic_shared_bytes);

// Bytes of the grid workspace a cooperative launch gets in its context's device memory,
// zeroed, for the launch's lifetime (cooperative_groups keeps its grid barrier at offset 4).
inline constexpr uint64_t kGridWorkspaceBytes = 64;

}  // namespace pvgpu::adapters::cpu
