#include "tools/bench/engine_report.h"

#include <chrono>
#include <thread>

#include "tools/bench/report.h"
#include "tools/host_status.h"

namespace pvgpu::tools::bench {
namespace {

// The host's engine and compiling-engine counts from its status document.
bool ReadHost(const std::string& address, std::string* engine, ptx::JitTotals* totals) {
  StatusOr<nlohmann::json> status = FetchHostStatusJson(address);
  if (!status.ok()) return false;
  const nlohmann::json& adapters = status->value("adapters", nlohmann::json::array());
  if (!adapters.empty()) *engine = adapters[0].value("engine", "");
  const nlohmann::json& jit = status->value("jit", nlohmann::json::object());
  if (jit.empty()) return false;  // an older pvgpud
  totals->kernels = jit.value("kernels", uint64_t{0});
  totals->compiled = jit.value("compiled", uint64_t{0});
  totals->memory_hits = jit.value("memory_hits", uint64_t{0});
  totals->disk_hits = jit.value("disk_hits", uint64_t{0});
  totals->failed = jit.value("failed", uint64_t{0});
  totals->compile_ms = jit.value("compile_ms", 0.0);
  totals->pending = jit.value("pending", uint64_t{0});
  return true;
}

ptx::JitTotals Minus(const ptx::JitTotals& a, const ptx::JitTotals& b) {
  ptx::JitTotals d;
  d.kernels = a.kernels - b.kernels;
  d.compiled = a.compiled - b.compiled;
  d.memory_hits = a.memory_hits - b.memory_hits;
  d.disk_hits = a.disk_hits - b.disk_hits;
  d.failed = a.failed - b.failed;
  d.compile_ms = a.compile_ms - b.compile_ms;
  d.pending = a.pending;  // a level, not a count
  return d;
}

}  // namespace

EngineWatch EngineWatch::Host(const std::string& address) {
  EngineWatch w;
  w.address_ = address;
  w.known_ = ReadHost(address, &w.engine_, &w.start_);
  return w;
}

EngineWatch EngineWatch::InProcess(std::string engine) {
  EngineWatch w;
  w.engine_ = std::move(engine);
  w.known_ = true;
  w.start_ = ptx::GetJitTotals();
  return w;
}

EngineUse EngineWatch::Finish() const {
  EngineUse use;
  use.engine = engine_;
  if (!known_) return use;
  ptx::JitTotals now;
  if (address_.empty()) {
    now = ptx::GetJitTotals();
  } else {
    std::string engine;
    if (!ReadHost(address_, &engine, &now)) return use;
  }
  use.known = true;
  use.during = Minus(now, start_);
  use.warmup_runs = warmup_runs_;
  use.warmup_seconds = warmup_seconds_;
  return use;
}

bool EngineWatch::CodePending() const {
  if (!known_) return false;
  if (address_.empty()) return ptx::GetJitTotals().pending != 0;
  std::string engine;
  ptx::JitTotals now;
  return ReadHost(address_, &engine, &now) && now.pending != 0;
}

StatusOr<int> EngineWatch::RepeatWhileCodePending(const std::function<Status()>& run) {
  const Clock::time_point start = Clock::now();
  int runs = 0;
  while (CodePending() && SecondsSince(start) < kCodeWaitLimit) {
    PVGPU_TRY(run());
    ++runs;
  }
  warmup_runs_ += runs;
  warmup_seconds_ += SecondsSince(start);
  return runs;
}

void EngineWatch::WaitWhileCodePending() {
  const Clock::time_point start = Clock::now();
  while (CodePending() && SecondsSince(start) < kCodeWaitLimit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  warmup_seconds_ += SecondsSince(start);
}

std::string DescribeEngineUse(const EngineUse& use) {
  std::string s = use.engine.empty() ? "engine unknown" : use.engine;
  if (!use.known) return s;
  const ptx::JitTotals& t = use.during;
  if (t.kernels == 0 && t.failed == 0) return s + ": no kernel compiled";
  s += ": " + std::to_string(t.kernels) + (t.kernels == 1 ? " kernel" : " kernels") + ", " +
       std::to_string(t.compiled) + " compiled";
  if (t.disk_hits) s += ", " + std::to_string(t.disk_hits) + " from the disk cache";
  if (t.memory_hits) s += ", " + std::to_string(t.memory_hits) + " shared with live copies";
  if (t.failed) s += ", " + std::to_string(t.failed) + " failed (interpreted)";
  const uint64_t hits = t.disk_hits + t.memory_hits;
  if (t.kernels != 0) {
    s += " (" + FormatNumber(100.0 * static_cast<double>(hits) / static_cast<double>(t.kernels), 0) +
         "% cache hits), " + FormatNumber(t.compile_ms, 0) + " ms getting code (" +
         FormatNumber(t.compile_ms / static_cast<double>(t.kernels), 1) + " per kernel)";
  }
  if (use.warmup_runs != 0) {
    s += "; timed after " + std::to_string(use.warmup_runs) + " untimed " +
         (use.warmup_runs == 1 ? "run" : "runs") + " (" + FormatNumber(use.warmup_seconds, 1) +
         " s) while code was being compiled";
  }
  return s;
}

nlohmann::ordered_json EngineUseJson(const EngineUse& use) {
  nlohmann::ordered_json j;
  j["engine"] = use.engine;
  if (!use.known) {
    j["jit"] = nullptr;
    return j;
  }
  const ptx::JitTotals& t = use.during;
  j["jit"] = {{"kernels", t.kernels},
              {"compiled", t.compiled},
              {"disk_hits", t.disk_hits},
              {"memory_hits", t.memory_hits},
              {"failed", t.failed},
              {"cache_hit_rate",
               t.kernels ? static_cast<double>(t.disk_hits + t.memory_hits) / t.kernels : 0.0},
              {"compile_ms", t.compile_ms},
              {"warmup_runs", use.warmup_runs},
              {"warmup_seconds", use.warmup_seconds}};
  return j;
}

}  // namespace pvgpu::tools::bench
