#include "guest/cuda/state.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include "guest/cuda/host_func.h"
#include "guest/cuda/managed.h"
#include "guest/cuda/mem_pool.h"

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

Code DriverState::Init(unsigned int flags) {
  if (flags != 0) return Code::kInvalidValue;
  MutexLock lock(&init_mutex_);
  if (initialized_.load()) return Code::kOk;
  std::vector<Device> devices;
  Code first_error = Code::kNoDevice;
  for (Client* client : Client::FromEnvironment()) {
    Status connected = client->Connect();
    if (!connected.ok()) {
      if (connected.code() != Code::kNoDevice && first_error == Code::kNoDevice) {
        first_error = connected.code();
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
        init_error_.store(code);
        return code;
      }
      AdjustManagedAttributes(&device);
      AdjustMemoryAttributes(&device);
      devices.push_back(device);
    }
  }
  devices = ApplyVisibleDevices(std::move(devices));
  if (devices.empty()) {
    init_error_.store(first_error);
    return first_error;
  }
  for (size_t i = 0; i < devices.size(); ++i) devices[i].ordinal = static_cast<CUdevice>(i);
  devices_ = std::move(devices);
  {
    MutexLock primaries_lock(&primaries_mutex);
    primaries.assign(devices_.size(), {});
  }
  initialized_.store(true, std::memory_order_release);
  return Code::kOk;
}

std::vector<CUctx_st*>& ContextStack() {
  thread_local std::vector<CUctx_st*> stack;
  return stack;
}

CUctx_st* CurrentContext() {
  auto& stack = ContextStack();
  return stack.empty() ? nullptr : stack.back();
}

Code CurrentLiveContext(CUctx_st** ctx) {
  if (Code init = DriverState::Get().CheckInit(); init != Code::kOk) return init;
  CUctx_st* current = CurrentContext();
  if (current == nullptr) return Code::kInvalidContext;
  if (!LiveContext(current)) return Code::kContextIsDestroyed;
  *ctx = current;
  return Code::kOk;
}

Code ResolveStream(CUstream stream, StreamRef* out) {
  out->handle = stream;
  if (IsDefaultStream(stream)) {
    out->object = nullptr;
    return CurrentLiveContext(&out->ctx);
  }
  out->object = objects().streams.Find(stream);
  if (out->object == nullptr) return Code::kInvalidHandle;
  if (!LiveContext(out->object->ctx)) return Code::kContextIsDestroyed;
  out->ctx = out->object->ctx;
  return Code::kOk;
}

Code OrderAfterHostFuncs(const StreamRef& stream) {
  return WaitForHostFuncs(stream.ctx, stream.handle);
}

Code DefaultStream(StreamRef* out) {
  if (Code r = ResolveStream(nullptr, out); r != Code::kOk) return r;
  return OrderAfterHostFuncs(*out);
}

namespace {

// The calling thread's per-thread default stream, per context: the last work submitted on it.
std::unordered_map<CUctx_st*, uint64_t>& PerThreadSeqs() {
  thread_local std::unordered_map<CUctx_st*, uint64_t> seqs;
  return seqs;
}

// Raises `value` to `seq`: submissions from several threads may note theirs out of order.
void RaiseTo(std::atomic<uint64_t>& value, uint64_t seq) {
  uint64_t seen = value.load(std::memory_order_relaxed);
  while (seen < seq && !value.compare_exchange_weak(seen, seq, std::memory_order_relaxed)) {
  }
}

}  // namespace

void WriteJitLog(const std::string& log, char* buffer, size_t size, void** size_slot) {
  if (buffer == nullptr || size == 0) return;
  const size_t n = std::min(log.size(), size - 1);
  std::memcpy(buffer, log.data(), n);
  buffer[n] = '\0';
  if (size_slot != nullptr) *size_slot = reinterpret_cast<void*>(uintptr_t{n + 1});
}

void NoteSubmitted(const StreamRef& stream, uint64_t seq) {
  if (stream.handle == CU_STREAM_PER_THREAD) PerThreadSeqs()[stream.ctx] = seq;
  RaiseTo(stream.ctx->last_seq, seq);
  if (stream.object != nullptr) RaiseTo(stream.object->last_seq, seq);
}

void NoteSubmitted(CUctx_st* ctx, uint64_t seq) { RaiseTo(ctx->last_seq, seq); }

uint64_t NextObjectId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

uint64_t PerThreadStreamSeq(CUctx_st* ctx) {
  auto& seqs = PerThreadSeqs();
  auto it = seqs.find(ctx);
  return it == seqs.end() ? 0 : it->second;
}

}  // namespace pvgpu::guest
