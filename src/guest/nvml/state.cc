#include "guest/nvml/state.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "guest/client/client.h"

namespace pvgpu::guest::nvml {

State& State::Get() {
  static State* state = new State();  // never destroyed: atexit handlers may still call NVML
  return *state;
}

nvmlDevice_st* State::RecordFor(Client* client, int remote_index) {
  for (auto& record : records_) {
    if (record->client == client && record->remote_index == remote_index) return record.get();
  }
  records_.push_back(std::make_unique<nvmlDevice_st>());
  records_.back()->client = client;
  records_.back()->remote_index = remote_index;
  return records_.back().get();
}

nvmlReturn_t State::Init(unsigned flags) {
  MutexLock lock(&mutex_);
  if (refcount_ > 0) {
    ++refcount_;
    return NVML_SUCCESS;
  }
  std::vector<nvmlDevice_st*> devices;
  bool any_host = false;
  for (Client* client : Client::FromEnvironment()) {
    StatusOr<HostView> view = FetchHostStatus(*client);
    if (!view.ok()) {
      PVGPU_WARN("NVML: host " << client->address() << ": " << view.status().message());
      continue;
    }
    if (!any_host) {
      host_version_ = view->version;
      driver_version_ = view->driver_version;
      any_host = true;
    }
    for (const AdapterView& adapter : view->adapters) {
      nvmlDevice_st* device = RecordFor(client, adapter.index);
      device->index = static_cast<unsigned>(devices.size());
      device->adapter = adapter;
      devices.push_back(device);
    }
  }
  if (!any_host) {
    PVGPU_WARN("NVML: no pvgpu host could be reached (PVGPU_HOST)");
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  if (devices.empty() && (flags & NVML_INIT_FLAG_NO_GPUS) == 0) {
    PVGPU_WARN("NVML: the hosts offer no adapters");
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  devices_ = std::move(devices);
  refcount_ = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t State::Shutdown() {
  MutexLock lock(&mutex_);
  if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
  if (--refcount_ == 0) devices_.clear();
  return NVML_SUCCESS;
}

nvmlReturn_t State::CheckInit() {
  MutexLock lock(&mutex_);
  return refcount_ > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

nvmlReturn_t State::Lookup(nvmlDevice_t handle, nvmlDevice_st** device) {
  MutexLock lock(&mutex_);
  if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
  if (handle == nullptr || std::find(devices_.begin(), devices_.end(), handle) == devices_.end()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *device = handle;
  return NVML_SUCCESS;
}

std::vector<nvmlDevice_st*> State::Devices() {
  MutexLock lock(&mutex_);
  return devices_;
}

nvmlReturn_t State::Refresh(nvmlDevice_st* device, AdapterView* adapter,
                            std::vector<SessionView>* sessions, uint64_t* host_time_us) {
  StatusOr<HostView> view = FetchHostStatus(*device->client);
  if (!view.ok()) {
    PVGPU_WARN("NVML: host " << device->client->address() << ": " << view.status().message());
    return ToNvml(view.status().code());
  }
  auto it = std::find_if(view->adapters.begin(), view->adapters.end(),
                         [&](const AdapterView& a) { return a.index == device->remote_index; });
  if (it == view->adapters.end()) return NVML_ERROR_GPU_IS_LOST;
  if (adapter != nullptr) *adapter = *it;
  if (host_time_us != nullptr) *host_time_us = view->time_us;
  if (sessions != nullptr) {
    sessions->clear();
    for (const SessionView& s : view->sessions) {
      if (std::find(s.devices.begin(), s.devices.end(), device->remote_index) != s.devices.end()) {
        sessions->push_back(s);
      }
    }
  }
  return NVML_SUCCESS;
}

std::string State::host_version() {
  MutexLock lock(&mutex_);
  return host_version_;
}

int State::driver_version() {
  MutexLock lock(&mutex_);
  return driver_version_;
}

nvmlReturn_t ToNvml(Code code) {
  switch (code) {
    case Code::kOk:
      return NVML_SUCCESS;
    case Code::kNoDevice:
      return NVML_ERROR_DRIVER_NOT_LOADED;
    case Code::kDeviceUnavailable:
      return NVML_ERROR_GPU_IS_LOST;
    case Code::kNotSupported:
      return NVML_ERROR_NOT_SUPPORTED;
    case Code::kOutOfMemory:
      return NVML_ERROR_MEMORY;
    default:
      return NVML_ERROR_UNKNOWN;
  }
}

nvmlReturn_t CopyString(const std::string& text, char* buffer, unsigned length) {
  if (buffer == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buffer, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

}  // namespace pvgpu::guest::nvml
