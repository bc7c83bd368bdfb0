// NVML queries about who uses a device (running processes, MIG) and the sensors a pvgpu
// adapter does not have (temperature, power).
#include <map>
#include <vector>

#include "guest/nvml/nvml_api.h"
#include "guest/nvml/nvml_api_autogen.h"
#include "guest/nvml/state.h"

namespace pvgpu::guest::nvml {

namespace {

struct Process {
  unsigned pid;
  unsigned long long used;
};

// The guest processes with a session on `device`, one entry per pid (a process using libcuda
// and this library has two sessions; only the one with contexts on the device counts).
nvmlReturn_t RunningProcesses(nvmlDevice_st* device, std::vector<Process>* out) {
  std::vector<SessionView> sessions;
  if (nvmlReturn_t r = State::Get().Refresh(device, nullptr, &sessions); r != NVML_SUCCESS) {
    return r;
  }
  std::map<unsigned, unsigned long long> by_pid;
  std::vector<unsigned> order;
  for (const SessionView& s : sessions) {
    if (by_pid.count(s.pid) == 0) order.push_back(s.pid);
    by_pid[s.pid] += s.memory_used;
  }
  out->clear();
  for (unsigned pid : order) out->push_back({pid, by_pid[pid]});
  return NVML_SUCCESS;
}

// NVML's buffer rule: *infoCount in is the capacity, out the number of processes. A capacity
// that is too small (including the 0 used to ask for the count) is INSUFFICIENT_SIZE unless
// there are no processes at all.
template <typename Info>
nvmlReturn_t GetComputeRunningProcesses(nvmlDevice_st* device, unsigned int* infoCount,
                                        Info* infos) {
  if (infos == nullptr && *infoCount != 0) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<Process> processes;
  if (nvmlReturn_t r = RunningProcesses(device, &processes); r != NVML_SUCCESS) return r;
  const unsigned capacity = *infoCount;
  *infoCount = static_cast<unsigned>(processes.size());
  if (processes.size() > capacity) return NVML_ERROR_INSUFFICIENT_SIZE;
  for (size_t i = 0; i < processes.size(); ++i) {
    Info info{};
    info.pid = processes[i].pid;
    info.usedGpuMemory = processes[i].used;
    if constexpr (sizeof(Info) == sizeof(nvmlProcessInfo_v2_t)) {
      info.gpuInstanceId = 0xFFFFFFFFu;  // no MIG
      info.computeInstanceId = 0xFFFFFFFFu;
    }
    infos[i] = info;
  }
  return NVML_SUCCESS;
}

}  // namespace

namespace api {

nvmlReturn_t DeviceGetComputeRunningProcesses_v3(nvmlDevice_st* device, unsigned int* infoCount,
                                                 nvmlProcessInfo_t* infos) {
  return GetComputeRunningProcesses(device, infoCount, infos);
}

nvmlReturn_t DeviceGetComputeRunningProcesses_v2(nvmlDevice_st* device, unsigned int* infoCount,
                                                 nvmlProcessInfo_v2_t* infos) {
  return GetComputeRunningProcesses(device, infoCount, infos);
}

nvmlReturn_t DeviceGetComputeRunningProcesses(nvmlDevice_st* device, unsigned int* infoCount,
                                              nvmlProcessInfo_v1_t* infos) {
  return GetComputeRunningProcesses(device, infoCount, infos);
}

// NOT_SUPPORTED, as NVML answers for GPUs that cannot be partitioned: no pvgpu adapter can.
nvmlReturn_t DeviceGetMigMode(nvmlDevice_st* device, unsigned int* currentMode,
                              unsigned int* pendingMode) {
  return NVML_ERROR_NOT_SUPPORTED;
}

// NOT_SUPPORTED: the host reports no sensor for its adapters (the cpu adapter's "device" is
// the host's processors, whose temperature is the host's business, not this GPU's).
nvmlReturn_t DeviceGetTemperature(nvmlDevice_st* device, nvmlTemperatureSensors_t sensorType,
                                  unsigned int* temp) {
  if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_ERROR_NOT_SUPPORTED;
}

// NOT_SUPPORTED: no adapter's power draw is measured (see nvmlDeviceGetTemperature).
nvmlReturn_t DeviceGetPowerUsage(nvmlDevice_st* device, unsigned int* power) {
  return NVML_ERROR_NOT_SUPPORTED;
}

}  // namespace api
}  // namespace pvgpu::guest::nvml
