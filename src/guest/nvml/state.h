// libnvidia-ml's process-wide state: the init reference count and the devices, one per adapter
// of every host in PVGPU_HOST, in that order (as libcuda numbers them).
//
// CUDA_VISIBLE_DEVICES is deliberately ignored: real NVML ignores it too (it is a CUDA runtime
// and driver setting, and nvidia-smi and device plugins must see every GPU to manage them).
// What a container may see is enforced by the host per listener, never by the environment.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "guest/nvml/host_view.h"
#include "guest/nvml/nvml_api.h"

namespace pvgpu::guest {
class Client;
}

// The object behind an nvmlDevice_t. Records are never freed, so a handle stays valid (and the
// same) across nvmlShutdown and a later nvmlInit, as applications that cache handles expect.
struct nvmlDevice_st {
  pvgpu::guest::Client* client = nullptr;
  int remote_index = 0;                     // the adapter's index on its host
  unsigned index = 0;                       // NVML index across all hosts
  pvgpu::guest::nvml::AdapterView adapter;  // as of nvmlInit; dynamic values are re-read
};

namespace pvgpu::guest::nvml {

class State {
 public:
  static State& Get();

  // nvmlInit* semantics: the first successful call connects to the hosts and lists the
  // devices; later ones only count. NVML_ERROR_DRIVER_NOT_LOADED when no host answers (or none
  // has an adapter and NVML_INIT_FLAG_NO_GPUS is not given).
  nvmlReturn_t Init(unsigned flags) EXCLUDES(mutex_);
  // NVML_ERROR_UNINITIALIZED when not initialized; the last call forgets the devices.
  nvmlReturn_t Shutdown() EXCLUDES(mutex_);

  nvmlReturn_t CheckInit() EXCLUDES(mutex_);
  // The validated record behind a handle: UNINITIALIZED, or INVALID_ARGUMENT for a handle we
  // did not give out (or one from before a re-init that no longer exists).
  nvmlReturn_t Lookup(nvmlDevice_t handle, nvmlDevice_st** device) EXCLUDES(mutex_);
  std::vector<nvmlDevice_st*> Devices() EXCLUDES(mutex_);

  // The host's current view of `device`'s adapter and of the sessions that use it (memory and
  // utilization change, so these are asked for each time). GPU_IS_LOST when the host is gone.
  nvmlReturn_t Refresh(nvmlDevice_st* device, AdapterView* adapter,
                       std::vector<SessionView>* sessions, uint64_t* host_time_us = nullptr);

  // From the first host that answered at nvmlInit.
  std::string host_version() EXCLUDES(mutex_);
  int driver_version() EXCLUDES(mutex_);

 private:
  State() = default;
  nvmlDevice_st* RecordFor(Client* client, int remote_index) REQUIRES(mutex_);

  Mutex mutex_;
  int refcount_ GUARDED_BY(mutex_) = 0;
  std::vector<nvmlDevice_st*> devices_ GUARDED_BY(mutex_);
  std::vector<std::unique_ptr<nvmlDevice_st>> records_ GUARDED_BY(mutex_);
  std::string host_version_ GUARDED_BY(mutex_);
  int driver_version_ GUARDED_BY(mutex_) = 0;
};

// Maps a pvgpu error from talking to a host to the NVML code a caller should see.
nvmlReturn_t ToNvml(Code code);

// Copies `text` with its terminating NUL into buffer[length]: INVALID_ARGUMENT for a null
// buffer, INSUFFICIENT_SIZE when it does not fit (NVML's rule for every string query).
nvmlReturn_t CopyString(const std::string& text, char* buffer, unsigned length);

}  // namespace pvgpu::guest::nvml
