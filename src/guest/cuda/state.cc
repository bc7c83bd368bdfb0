#include "guest/cuda/state.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include "guest/cuda/host_func.h"

namespace pvgpu::guest {

DriverState& DriverState::Get() {
  static DriverState* state = new DriverState();  // never destroyed: atexit-safe
  return *state;
}

namespace {

std::string UuidString(const uint8_t* uuid) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[uuid[i] >> 4];
    out += kHex[uuid[i] & 15];
  }
  return out;
}

// Applies CUDA_VISIBLE_DEVICES: a comma-separated list of indices or UUIDs ("GPU-..." or a
// unique prefix of one), in the order given; the list ends at the first invalid entry, as
// with NVIDIA's driver.
std::vector<Device> ApplyVisibleDevices(std::vector<Device> all) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr) return all;
  std::vector<Device> out;
  std::stringstream list(visible);
  std::string item;
  std::vector<bool> used(all.size(), false);
  while (std::getline(list, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    int match = -1;
    if (!item.empty() && std::all_of(item.begin(), item.end(), ::isdigit)) {
      const unsigned long index = std::strtoul(item.c_str(), nullptr, 10);
      if (index < all.size()) match = static_cast<int>(index);
    } else if (!item.empty()) {
      std::string wanted = item.rfind("GPU-", 0) == 0 ? item : "GPU-" + item;
      for (size_t i = 0; i < all.size(); ++i) {
        if (UuidString(all[i].info.uuid).rfind(wanted, 0) == 0) {
          if (match != -1) {  // ambiguous prefix
            match = -1;
            break;
          }
          match = static_cast<int>(i);
        }
      }
    }
    if (match < 0 || used[match]) break;
    used[match] = true;
    out.push_back(all[match]);
  }
  return out;
}

}  // namespace

CUresult DriverState::Init(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(mutex_);
  if (initialized_.load()) return CUDA_SUCCESS;
  std::vector<Device> devices;
  CUresult first_error = CUDA_ERROR_NO_DEVICE;
  for (Client* client : Client::FromEnvironment()) {
    Status connected = client->Connect();
    if (!connected.ok()) {
      if (connected.code() != Code::kNoDevice && first_error == CUDA_ERROR_NO_DEVICE) {
        first_error = ToCu(connected.code());
      }
      continue;
    }
    for (uint32_t i = 0; i < client->hello().adapter_count; ++i) {
      Device device;
      device.client = client;
      device.remote_index = i;
      protocol::DeviceGetInfoRequest request;
      request.device = i;
      if (Code code = client->Call(request, {}, &device.info); code != Code::kOk) {
        init_error_.store(ToCu(code));
        return ToCu(code);
      }
      devices.push_back(device);
    }
  }
  devices = ApplyVisibleDevices(std::move(devices));
  if (devices.empty()) {
    init_error_.store(first_error);
    return first_error;
  }
  devices_ = std::move(devices);
  primaries_.assign(devices_.size(), {});
  initialized_.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

std::vector<CUctx_st*>& ContextStack() {
  thread_local std::vector<CUctx_st*> stack;
  return stack;
}

CUctx_st* CurrentContext() {
  auto& stack = ContextStack();
  return stack.empty() ? nullptr : stack.back();
}

bool LiveContext(CUctx_st* ctx) {
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  return ctx != nullptr && state.contexts.count(ctx) != 0;
}

CUresult CurrentLiveContext(CUctx_st** ctx) {
  if (CUresult init = DriverState::Get().CheckInit(); init != CUDA_SUCCESS) return init;
  CUctx_st* current = CurrentContext();
  if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (!LiveContext(current)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *ctx = current;
  return CUDA_SUCCESS;
}

CUresult ResolveStream(CUstream stream, CUctx_st** ctx, uint64_t* wire_handle,
                       bool after_host_funcs) {
  if (IsDefaultStream(stream)) {
    *wire_handle = 0;
    if (CUresult r = CurrentLiveContext(ctx); r != CUDA_SUCCESS) return r;
  } else {
    auto& state = DriverState::Get();
    std::lock_guard<std::mutex> lock(state.mutex());
    if (state.streams.count(stream) == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (state.contexts.count(stream->ctx) == 0) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *ctx = stream->ctx;
    *wire_handle = stream->handle;
  }
  return after_host_funcs ? WaitForHostFuncs(*ctx, stream) : CUDA_SUCCESS;
}

namespace {

// The calling thread's per-thread default stream, per context: the last work submitted on it.
std::unordered_map<CUctx_st*, uint64_t>& PerThreadSeqs() {
  thread_local std::unordered_map<CUctx_st*, uint64_t> seqs;
  return seqs;
}

}  // namespace

void WriteJitLog(const std::string& log, char* buffer, size_t size, void** size_slot) {
  if (buffer == nullptr || size == 0) return;
  const size_t n = std::min(log.size(), size - 1);
  std::memcpy(buffer, log.data(), n);
  buffer[n] = '\0';
  if (size_slot != nullptr) *size_slot = reinterpret_cast<void*>(uintptr_t{n + 1});
}

void NoteSubmitted(CUctx_st* ctx, CUstream stream, uint64_t seq) {
  if (stream == CU_STREAM_PER_THREAD) PerThreadSeqs()[ctx] = seq;
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  ctx->last_seq = seq;
  if (!IsDefaultStream(stream) && state.streams.count(stream) != 0) {
    stream->last_seq = seq;
  }
}

uint64_t PerThreadStreamSeq(CUctx_st* ctx) {
  auto& seqs = PerThreadSeqs();
  auto it = seqs.find(ctx);
  return it == seqs.end() ? 0 : it->second;
}

bool FindAllocation(CUdeviceptr dptr, size_t size, CUctx_st** owner) {
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  auto it = state.allocations.upper_bound(dptr);
  if (it == state.allocations.begin()) return false;
  --it;
  const size_t offset = dptr - it->first;
  if (offset >= it->second.first || size > it->second.first - offset) return false;
  if (owner != nullptr) *owner = it->second.second;
  return true;
}

}  // namespace pvgpu::guest
