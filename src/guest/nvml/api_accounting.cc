// NVML's per-process utilization and accounting, from what the host counts for each session
// (HostStatus "usage": busy time, kernels, bytes; docs/sharing.md). A process may have two
// sessions (libcuda's and this library's); its figures are their sum.
//
// Accounting is always on (the host counts every session) and covers running processes only:
// the host forgets a session when it ends, so a finished process has no record.
#include <algorithm>
#include <map>
#include <vector>

#include "common/mutex.h"
#include "guest/nvml/nvml_api.h"
#include "guest/nvml/nvml_api_autogen.h"
#include "guest/nvml/state.h"

namespace pvgpu::guest::nvml {
namespace {

struct ProcessUse {
  unsigned pid = 0;
  uint64_t busy_ns = 0;
  uint64_t memory = 0;
  uint64_t started_us = 0;  // the earliest of its sessions
};

nvmlReturn_t ProcessesOn(nvmlDevice_st* device, std::vector<ProcessUse>* out, uint64_t* now_us) {
  std::vector<SessionView> sessions;
  if (nvmlReturn_t r = State::Get().Refresh(device, nullptr, &sessions, now_us);
      r != NVML_SUCCESS) {
    return r;
  }
  out->clear();
  for (const SessionView& s : sessions) {
    auto it = std::find_if(out->begin(), out->end(),
                           [&](const ProcessUse& p) { return p.pid == s.pid; });
    if (it == out->end()) {
      out->push_back({s.pid, 0, 0, s.started_us});
      it = out->end() - 1;
    }
    if (const UsageView* u = s.UsageOn(device->remote_index)) it->busy_ns += u->busy_ns;
    it->memory += s.memory_used;
    if (s.started_us != 0 && (it->started_us == 0 || s.started_us < it->started_us)) {
      it->started_us = s.started_us;
    }
  }
  return NVML_SUCCESS;
}

unsigned Percent(uint64_t busy_ns, uint64_t period_us) {
  if (period_us == 0) return 0;
  const uint64_t percent = busy_ns / 10 / period_us;  // ns / (us * 1000) * 100
  return static_cast<unsigned>(std::min<uint64_t>(percent, 100));
}

// The previous sample of each process on each device, so that a later call reports the
// period between the two (NVML's sampling), the first one the process's lifetime.
struct Sample {
  uint64_t time_us = 0;
  uint64_t busy_ns = 0;
};
Mutex g_samples_mutex;
std::map<std::pair<const nvmlDevice_st*, unsigned>, Sample> g_samples
    GUARDED_BY(g_samples_mutex);

}  // namespace

namespace api {

nvmlReturn_t DeviceGetProcessUtilization(nvmlDevice_st* device,
                                         nvmlProcessUtilizationSample_t* utilization,
                                         unsigned int* processSamplesCount,
                                         unsigned long long lastSeenTimeStamp) {
  std::vector<ProcessUse> processes;
  uint64_t now_us = 0;
  if (nvmlReturn_t r = ProcessesOn(device, &processes, &now_us); r != NVML_SUCCESS) return r;
  if (processes.empty() || now_us <= lastSeenTimeStamp) {
    *processSamplesCount = 0;
    return NVML_ERROR_NOT_FOUND;
  }
  const unsigned capacity = utilization == nullptr ? 0 : *processSamplesCount;
  *processSamplesCount = static_cast<unsigned>(processes.size());
  if (processes.size() > capacity) return NVML_ERROR_INSUFFICIENT_SIZE;
  MutexLock lock(&g_samples_mutex);
  for (size_t i = 0; i < processes.size(); ++i) {
    const ProcessUse& p = processes[i];
    Sample& previous = g_samples[{device, p.pid}];
    unsigned sm = 0;
    if (previous.time_us != 0 && previous.time_us < now_us && previous.busy_ns <= p.busy_ns) {
      sm = Percent(p.busy_ns - previous.busy_ns, now_us - previous.time_us);
    } else if (p.started_us != 0 && p.started_us < now_us) {
      sm = Percent(p.busy_ns, now_us - p.started_us);
    }
    previous = {now_us, p.busy_ns};
    nvmlProcessUtilizationSample_t sample{};
    sample.pid = p.pid;
    sample.timeStamp = now_us;
    sample.smUtil = sm;
    sample.memUtil = 0;  // no adapter measures memory-controller activity
    sample.encUtil = 0;  // nor has video engines
    sample.decUtil = 0;
    utilization[i] = sample;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t DeviceGetAccountingMode(nvmlDevice_st* device, nvmlEnableState_t* mode) {
  *mode = NVML_FEATURE_ENABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t DeviceGetAccountingStats(nvmlDevice_st* device, unsigned int pid,
                                      nvmlAccountingStats_t* stats) {
  std::vector<ProcessUse> processes;
  uint64_t now_us = 0;
  if (nvmlReturn_t r = ProcessesOn(device, &processes, &now_us); r != NVML_SUCCESS) return r;
  auto it = std::find_if(processes.begin(), processes.end(),
                         [&](const ProcessUse& p) { return p.pid == pid; });
  if (it == processes.end()) return NVML_ERROR_NOT_FOUND;
  nvmlAccountingStats_t out{};
  out.gpuUtilization =
      it->started_us != 0 && it->started_us < now_us ? Percent(it->busy_ns, now_us - it->started_us)
                                                     : 0;
  out.memoryUtilization = 0;
  out.maxMemoryUsage = it->memory;  // what it holds now: the host keeps no peak
  out.time = 0;                     // NVML's value for a process still running
  out.startTime = it->started_us;
  out.isRunning = 1;
  *stats = out;
  return NVML_SUCCESS;
}

nvmlReturn_t DeviceGetAccountingPids(nvmlDevice_st* device, unsigned int* count,
                                     unsigned int* pids) {
  std::vector<ProcessUse> processes;
  uint64_t now_us = 0;
  if (nvmlReturn_t r = ProcessesOn(device, &processes, &now_us); r != NVML_SUCCESS) return r;
  const unsigned capacity = pids == nullptr ? 0 : *count;
  *count = static_cast<unsigned>(processes.size());
  if (processes.size() > capacity) {
    return processes.empty() ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (size_t i = 0; i < processes.size(); ++i) pids[i] = processes[i].pid;
  return NVML_SUCCESS;
}

// How many processes the accounting keeps: every running one; 4000 is NVIDIA's figure.
nvmlReturn_t DeviceGetAccountingBufferSize(nvmlDevice_st* device, unsigned int* bufferSize) {
  *bufferSize = 4000;
  return NVML_SUCCESS;
}

}  // namespace api
}  // namespace pvgpu::guest::nvml
